"""Before any case: does the endpoint give the prompt log-probabilities ``mcq-loglik`` needs?

When a selected case is scored by log-likelihoods (When2Call's ``protocol: mcq-loglik``, its
default) and the runner that will score it sends them to a live endpoint (the ``openai``
runner, or one recording through it), one probe request asks ``/completions`` for a short
prompt's log-probabilities with ``echo`` and ``logprobs`` (:meth:`OpenAIRunner.probe_loglikelihood
<pytest_llmeval.runners.openai_http.OpenAIRunner.probe_loglikelihood>`). Many servers cannot
(``transformers serve`` answers ``max_tokens: 0`` with HTTP 500 and ignores ``echo``): without
the probe every case would fail alone, each after retries.

* the endpoint gives them: nothing happens;
* it gives none, and some selected mcq-loglik file has no ``loglik_fallback``: one usage error
  (exit 4) saying so and naming the fixes
  (:data:`~pytest_llmeval.runners.endpoint_hints.LOGLIK_FIXES`);
* it gives none, and every such file asks ``loglik_fallback: mcq-string``: the runner is told,
  so no case sends a scoring request, and one terminal line says the cases are asked in chat.

A probe that cannot reach the endpoint decides nothing: the cases meet that fault themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from pytest_llmeval.core.errors import CaseFileError
from pytest_llmeval.plugin.eval_item import EvalItem
from pytest_llmeval.plugin.state import LLMEvalState
from pytest_llmeval.runners.endpoint_hints import LOGLIK_FIXES

__all__ = ["check_loglik_endpoint"]

LOGLIK_SUITES = {"when2call": ("protocol", "mcq-loglik")}
"""Suites whose cases may be scored by log-likelihoods: the manifest key that says so, and the
value (also the default) that means it."""


def check_loglik_endpoint(
    config: pytest.Config,
    state: LLMEvalState,
    items: Sequence[EvalItem],
    runner: Any,
    call: Callable[[Any], Any],
) -> None:
    """Probe the endpoint once when a selected case needs its log-probabilities (see the
    module docs); ``call`` runs a coroutine on the dispatcher's loop."""
    live = _live_scorer(runner)
    if live is None:
        return
    files = _loglik_files(state, items)
    if not files:
        return
    reason = call(live.probe_loglikelihood())
    if reason is None:
        return
    where = getattr(live, "scoring_endpoint", "the endpoint")
    what = (
        f"{where}: the endpoint gives no prompt log-probabilities "
        "(/v1/completions with echo and logprobs)"
    )
    without = sorted(name for name, fallback in files.items() if not fallback)
    if without:
        raise pytest.UsageError(
            f"{what}, which protocol mcq-loglik needs ({', '.join(without)}): {LOGLIK_FIXES}; "
            f"the probe: {reason}"
        )
    live.no_loglik = f"{what} (the probe at the start: {reason})"
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(
            f"llmeval: {what}; loglik_fallback: mcq-string asks every mcq-loglik case in chat"
        )


def _live_scorer(runner: Any) -> Any | None:
    """The runner that will send scoring requests to a live endpoint and can be probed, or
    ``None`` (replay, a local model, recording turned off)."""
    if getattr(runner, "mode", None) == "none" and hasattr(runner, "inner"):
        return None  # replay only: nothing is sent
    live = getattr(runner, "inner", runner)
    if not callable(getattr(live, "probe_loglikelihood", None)):
        return None
    return live


def _loglik_files(state: LLMEvalState, items: Sequence[EvalItem]) -> dict[str, bool]:
    """The selected files scored by log-likelihoods, each with whether its manifest asks
    ``loglik_fallback``."""
    files: dict[str, bool] = {}
    for item in items:
        eval_file = item.eval_file
        name = eval_file.manifest_name or eval_file.data_display
        if name in files or eval_file.suite_name not in LOGLIK_SUITES:
            continue
        key, value = LOGLIK_SUITES[eval_file.suite_name]
        manifest = state.manifests.entry(eval_file.path) if eval_file.manifest_name else None
        options = (
            {} if manifest is None or isinstance(manifest, CaseFileError) else manifest.options
        )
        if options.get(key, value) == value:
            files[name] = options.get("loglik_fallback") is not None
    return files
