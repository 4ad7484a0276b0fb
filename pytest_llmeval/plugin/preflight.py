"""Configuration errors are fatal at the start: one usage error (exit 4) before any case runs.

Once collection is done, in the process that will run the cases (a worker under xdist), the
session checks what every case would otherwise fail on one by one:

* the runner of ``--llmeval-runner``, built now when a selected case uses the plugin's own
  ``llmeval_runner`` fixture (an overridden ``llmeval_runner`` or ``llmeval_agent`` that does not
  ask for it makes the option irrelevant): an unknown name, a runner that cannot be built (a
  missing model path or extra), replay without a cassette folder. The model its fingerprint
  names is handed to the suites then (:mod:`~pytest_llmeval.plugin.runner_model`), before
  any case is built; a resume, which builds the cases to compare them, builds it just before.
  A case built from that model (``prompt_format: auto``) that runs with a user's agent
  instead needs ``--llmeval-model``;
* a manifest that asks for the runner's chat endpoint as a fallback (When2Call's
  ``loglik_fallback``) when the runner has none (it cannot generate, or it is an ``hf`` base
  model without a chat template);
* an endpoint that gives no prompt log-probabilities when a selected case is scored by them
  (:mod:`~pytest_llmeval.plugin.loglik_probe`: one probe request);
* the judge runner (``--llmeval-judge-runner``) and an embedder named explicitly;
* every gate (``--llmeval-gate``, and the ``gates:`` of the manifests whose cases were selected)
  parses (a manifest's is named by its ``path:line`` and entry), and names a collected suite
  (or ``*``) and a metric that suite can produce
  (:mod:`~pytest_llmeval.report.metric_paths`): a category some collected case of the suite
  has, a score name the suite can produce; with a did-you-mean.

Without xdist the error is raised as :class:`pytest.UsageError`. A worker cannot stop the
session that way (the controller would see a crashed worker), so it hands the message on a
failed collect report (its :class:`~pytest_llmeval.plugin.worker_wire.ReportFacts`) and keeps
no item; the controller raises the usage error when the first such report arrives, before
anything is scheduled: one line, exit 4, with ``-n 2`` as without.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeGuard

import pytest

from pytest_llmeval.config.settings import Settings, judge_settings
from pytest_llmeval.core.errors import CaseFileError, ConfigError, SetupProblem
from pytest_llmeval.engine.case_services import check_embedder
from pytest_llmeval.plugin import protocol_refusals, runner_model
from pytest_llmeval.plugin import worker_wire as wire
from pytest_llmeval.plugin.budget import Budget
from pytest_llmeval.plugin.budget_measure import unpriced_at_start
from pytest_llmeval.plugin.dry_sessions import runs_no_case
from pytest_llmeval.plugin.eval_item import EvalItem
from pytest_llmeval.plugin.gate_checks import check_gates, check_something_decides
from pytest_llmeval.plugin.loglik_probe import check_loglik_endpoint
from pytest_llmeval.plugin.phase_results import agent_fingerprint
from pytest_llmeval.plugin.state import LLMEvalState, state_key

__all__ = [
    "build_runner",
    "check",
    "close_unused_runner",
    "raise_worker_usage_error",
    "replay_header",
    "runner_before_resume",
    "take_runner",
]

_runner_key = pytest.StashKey[Any]()


def check(
    session: pytest.Session, is_eval_item: Callable[[pytest.Item], TypeGuard[EvalItem]]
) -> None:
    """Check the configuration the selected cases need; on a problem, stop the session with
    one usage error (handed to the controller from an xdist worker)."""
    config = session.config
    items = [item for item in session.items if is_eval_item(item) and item.runnable]
    if not items and config.pluginmanager.has_plugin("dsession"):
        return  # the xdist controller collects nothing: its workers check
    state = config.stash[state_key]
    try:
        _check_setup(session.items)  # a file no case can run from until a package is installed
        check_gates(config, state, items)  # with no case selected too: never dropped
        if not items:
            return
        protocol_refusals.check(config, items)  # --dist each, reruns: judged more than once
        if not runs_no_case(config):
            _check_budget(config)  # a resume whose earlier attempts spent it: nothing to build
            fingerprint = None
            runner = _own_runner(config, state, items)  # and the model it names, for the suites
            if runner is not None:
                fingerprint = _fingerprint(state, runner)
                _check_chat_fallback(state, items, runner)
                check_loglik_endpoint(config, state, items, runner, state.dispatcher.call)
            why = unpriced_at_start(state.settings, fingerprint)  # a cost budget it cannot price
            if why is not None:
                raise pytest.UsageError(why)
            state.services.start_judge()
            try:
                check_embedder(state.settings)
            except ConfigError as exc:
                raise pytest.UsageError(_named(str(exc), "--llmeval-embedding-model")) from None
        check_something_decides(config, state, items)
    except pytest.UsageError as exc:
        _stop(session, str(exc))


def _check_setup(items: Sequence[pytest.Item]) -> None:
    """The first :class:`SetupProblem` a collected eval file holds, as the usage error."""
    for item in items:
        problem = getattr(item, "problem", None)
        if isinstance(problem, SetupProblem):
            raise pytest.UsageError(str(problem))


def runner_before_resume(session: pytest.Session, items: Sequence[pytest.Item]) -> bool:
    """Before a resume compares the earlier results with the cases (which builds them): the
    plugin's own runner built now, when the cases use it, and the model it names handed to
    the suites (a case may be built from it: ``prompt_format: auto``); the checks after
    collection reuse it. ``False`` when it cannot be built, or a case built from the model
    runs with a user's agent: the session is stopped (one usage error)."""
    config = session.config
    own = [item for item in items if isinstance(item, EvalItem) and item.runnable]
    if runs_no_case(config) or not own:
        return True
    try:
        _own_runner(config, config.stash[state_key], own)
    except pytest.UsageError as exc:
        _stop(session, str(exc))
        return False
    return True


def _own_runner(config: pytest.Config, state: LLMEvalState, items: Sequence[EvalItem]) -> Any:
    """The plugin's runner when a case of ``items`` uses it, built once (``None`` when every
    case runs with a user's agent), the model its fingerprint names handed to the suites
    before any case is built; a usage error when a case built from that model runs with a
    user's agent (:func:`~pytest_llmeval.plugin.runner_model.check_known`)."""
    runner_model.check_known(state, items)
    if not runner_model.uses_own_runner(items):
        return None
    runner = config.stash.get(_runner_key, None)  # built already by a resume
    if runner is None:
        config.stash[_runner_key] = runner = build_runner(config, state)
        state.context.runner_model = runner_model.model_named(_fingerprint(state, runner))
    return runner


def _fingerprint(state: LLMEvalState, runner: Any) -> dict[str, Any]:
    """The runner's fingerprint; one usage error naming it when its ``fingerprint()`` raises
    or returns no mapping (every case would fail on it: nothing can be recorded or resumed)."""
    try:
        return agent_fingerprint(runner)
    except Exception as exc:
        why = state.redactor.text(f"{type(exc).__name__}: {exc}")
        raise pytest.UsageError(
            f"--llmeval-runner {state.settings.runner}: its fingerprint() failed ({why}); it "
            "must return a dict of what decides its answers, e.g. {'type': ..., 'model': ...}"
        ) from None


def build_runner(config: pytest.Config, state: LLMEvalState) -> Any:
    """The runner ``--llmeval-runner`` names, from the registry (conftest hooks and entry
    points included); a :class:`pytest.UsageError` naming the option when it cannot be."""
    from pytest_llmeval.runners.registry import RunnerRegistry

    registry = RunnerRegistry(limiter=state.limits.limiter)
    config.hook.pytest_llmeval_register_runners(registry=registry)
    try:
        return registry.create(state.settings, redact=state.redactor.value)
    except ConfigError as exc:
        raise pytest.UsageError(_named(str(exc), "--llmeval-runner")) from None


def replay_header(settings: Settings) -> list[str]:
    """The terminal header's lines naming the model replay plays back (the runner's, the
    judge's), so a replayed run says which model it judges; nothing when replay is not used
    or cannot choose (the checks before any case then say why)."""
    from pytest_llmeval.runners.replay import CassetteStore, replayed

    lines = []
    for who, chosen in (("", settings), ("judge: ", None)):
        if chosen is None:
            if settings.judge_runner != "replay":
                continue
            chosen = judge_settings(settings)
        elif chosen.runner != "replay":
            continue
        try:
            shown = replayed(CassetteStore(chosen.cassettes), chosen.replay_from, chosen.model)
        except ConfigError:
            continue
        lines.append(f"llmeval: {who}{shown}")
    return lines


def _check_budget(config: pytest.Config) -> None:
    """A usage error when a resume's earlier attempts spent a whole budget."""
    budget = config.pluginmanager.get_plugin("llmeval-budget")
    why = budget.spent_out() if isinstance(budget, Budget) else None
    if why is not None:
        raise pytest.UsageError(why)


def _named(message: str, option: str) -> str:
    """``message`` led by the option it is about, unless it already names one."""
    return message if message.startswith("--") else f"{option}: {message}"


def take_runner(config: pytest.Config) -> Any | None:
    """The runner built at the start, handed over once (to the ``llmeval_runner`` fixture)."""
    runner = config.stash.get(_runner_key, None)
    if runner is not None:
        del config.stash[_runner_key]
    return runner


def close_unused_runner(config: pytest.Config, call: Callable[[Any], Any]) -> None:
    """Close a runner built at the start that no case took (every case skipped)."""
    runner = take_runner(config)
    aclose = getattr(runner, "aclose", None)
    if aclose is not None:
        call(aclose())


def raise_worker_usage_error(report: pytest.CollectReport) -> None:
    """Controller: raise the usage error a worker handed on ``report``, if it carries one."""
    message = wire.facts(report).get("usage_error")
    if isinstance(message, str):
        raise pytest.UsageError(message)


def _stop(session: pytest.Session, message: str) -> None:
    if not wire.is_worker(session.config):
        raise pytest.UsageError(message)
    report = pytest.CollectReport("", "failed", message, [])
    wire.add_facts(report, {"usage_error": message})
    session.config.hook.pytest_collectreport(report=report)  # xdist sends it to the controller
    session.items[:] = []  # and no case runs here


CHAT_FALLBACK_OPTIONS = ("loglik_fallback",)
"""Manifest keys that send a question to the runner's chat endpoint when its scores fail."""


def _check_chat_fallback(state: LLMEvalState, items: Sequence[EvalItem], runner: Any) -> None:
    """A usage error when a selected case's manifest asks for a chat fallback the runner
    cannot give (read from the manifests: no case is built for this)."""
    if _has_chat(runner):
        return
    index = state.manifests
    seen: set[str] = set()
    for item in items:
        name = item.eval_file.manifest_name
        if name is None or name in seen:
            continue
        seen.add(name)
        manifest = index.entry(item.eval_file.path)
        if isinstance(manifest, CaseFileError):
            continue
        for key in CHAT_FALLBACK_OPTIONS:
            if manifest.options.get(key) is not None:
                who = getattr(runner, "name", type(runner).__name__)
                raise pytest.UsageError(
                    f"{manifest.display}: {key}: {manifest.options[key]} asks the runner's chat "
                    f"endpoint, and runner {who!r} has none (no chat template or no generate); "
                    f"use a chat model or drop {key}"
                )


def _has_chat(runner: Any) -> bool:
    """Whether ``runner`` can answer chat messages: it generates, and (a local model) has a
    chat template to render them with."""
    if not callable(getattr(runner, "generate", None)):
        return False
    return getattr(runner, "has_chat_template", True) is not False
