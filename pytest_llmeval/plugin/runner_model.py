"""The model the plugin's runner names, for a case built from the model's name.

When2Call's ``prompt_format: auto`` without ``--llmeval-model`` picks the prompt format from
the ``model`` of the runner's fingerprint. The plugin reads it from its own runner
(``--llmeval-runner``, with its ini and environment settings), built once per process for
the checks before any case (:mod:`~pytest_llmeval.plugin.preflight`; a resume builds it just
before it compares the earlier results with the cases), and hands it to the suites
(:attr:`~pytest_llmeval.suites.base.SuiteContext.runner_model`) before any case is built. So
every case gets the same answer, and every xdist worker, building the same runner from the
same settings, the one a session without xdist gets. The xdist controller, which builds no
case, never builds the runner.

A case that runs with a user's agent (a conftest's ``llmeval_runner`` or ``llmeval_agent``
fixture that does not take the plugin's ``llmeval_runner``) runs with a model the plugin
cannot know before the case runs: its manifest asking for ``auto`` without
``--llmeval-model`` is a usage error before any case (:func:`check_known`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pytest

from pytest_llmeval.core.errors import CaseFileError
from pytest_llmeval.plugin.compat import fixture_info

if TYPE_CHECKING:
    from pytest_llmeval.plugin.eval_item import EvalItem
    from pytest_llmeval.plugin.state import LLMEvalState

__all__ = ["MODEL_OPTIONS", "check_known", "model_named", "uses_own_runner"]

OWN_FIXTURES_MODULE = "pytest_llmeval.plugin.case_fixtures"
"""Where the plugin's own ``llmeval_runner`` fixture is defined."""

MODEL_OPTIONS = {("when2call", "prompt_format"): "auto"}
"""Manifest options (suite, key: value) whose cases are built from the model's name: the
runner's, when ``--llmeval-model`` names none."""


def model_named(fingerprint: Mapping[str, Any] | None) -> str | None:
    """The ``model`` a runner's fingerprint names, when it is a non-empty string."""
    model = (fingerprint or {}).get("model")
    return model if isinstance(model, str) and model.strip() else None


def uses_own_runner(items: Sequence[EvalItem]) -> bool:
    """Whether a case of ``items`` asks for the plugin's own ``llmeval_runner``."""
    seen: dict[int, bool] = {}
    return any(_own_runner(item, seen) for item in items)


def check_known(state: LLMEvalState, items: Sequence[EvalItem]) -> None:
    """A :class:`pytest.UsageError` when a case of ``items`` is built from the runner's model
    (its manifest's :data:`MODEL_OPTIONS`, no ``--llmeval-model``) and runs with a user's
    agent, whose model is known only once a case runs (read from the manifests and the
    fixture definitions: no case is built, no fixture set up)."""
    if state.settings.model is not None:
        return
    seen: dict[int, bool] = {}
    asking: dict[str, str | None] = {}  # manifest name -> its display when it asks, else None
    for item in items:
        name = item.eval_file.manifest_name
        if name is None:
            continue
        if name not in asking:
            asking[name] = _asks_model(state, item)
        display = asking[name]
        if display is not None and not _own_runner(item, seen):
            raise pytest.UsageError(
                f"{display}: prompt_format: auto picks the format from the model's name, and its "
                "cases run with a conftest's own llmeval_agent or llmeval_runner fixture, whose "
                "model is known only once a case runs: give --llmeval-model NAME, or name "
                f"prompt_format in the manifest {display}"
            )


def _asks_model(state: LLMEvalState, item: EvalItem) -> str | None:
    """The display name of ``item``'s manifest when it asks for the runner's model."""
    manifest = state.manifests.entry(item.eval_file.path)
    if isinstance(manifest, CaseFileError):
        return None
    suite = item.eval_file.suite_name
    for (owner, key), value in MODEL_OPTIONS.items():
        if owner == suite and manifest.options.get(key) == value:
            return manifest.display
    return None


def _own_runner(item: EvalItem, seen: dict[int, bool]) -> bool:
    """Whether ``item`` asks for the plugin's own ``llmeval_runner`` (the items of one file
    share a fixture closure: ``seen`` keeps each closure's answer)."""
    info = fixture_info(item)
    known = seen.get(id(info))
    if known is None:
        chain = info.name2fixturedefs.get("llmeval_runner") or ()
        module = getattr(chain[-1].func, "__module__", None) if chain else None
        known = seen[id(info)] = module == OWN_FIXTURES_MODULE
    return known
