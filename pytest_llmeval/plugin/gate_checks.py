"""The gates checked before any case: every gate (``--llmeval-gate``, and the ``gates:`` of the
manifests whose cases were selected) parses (a manifest's is named by its ``path:line`` and
entry), names a collected suite (or ``*``) and a metric that suite can produce
(:mod:`~pytest_llmeval.report.metric_paths`), with a did-you-mean; and under
``--llmeval-exit-on gates`` something decides the run. Each problem is one usage error."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

import pytest

from pytest_llmeval.core.errors import CaseFileError, ConfigError
from pytest_llmeval.inputs.manifest import Manifest
from pytest_llmeval.plugin.eval_item import EvalItem
from pytest_llmeval.plugin.selection import deselections_key
from pytest_llmeval.plugin.state import LLMEvalState
from pytest_llmeval.report.gates import TOTALS, parse_gate
from pytest_llmeval.report.manifest_gates import located_gates, manifest_gates
from pytest_llmeval.report.metric_paths import (
    absent_metric,
    shape_of,
    unknown_key,
    unknown_metric,
)
from pytest_llmeval.rundir.models import Gate

__all__ = ["NO_GATE", "check_gates", "check_something_decides"]


def check_gates(config: pytest.Config, state: LLMEvalState, items: Sequence[EvalItem]) -> None:
    gates: list[tuple[str, Gate]] = []
    for text in state.settings.gate:
        try:
            gates.append((f"--llmeval-gate {text!r}", parse_gate(text, "cli")))
        except ValueError as exc:
            raise pytest.UsageError(f"--llmeval-gate: {exc}") from None
    deselected = config.stash[deselections_key].manifests  # gates judged partial: checked too
    unusable: dict[str, CaseFileError] = {}
    gates += _manifest_gates(state, items, deselected, unusable)
    collected = config.stash[deselections_key].suites
    categories = config.stash[deselections_key].categories
    every_file = not config.getoption("lf", False)  # --lf leaves whole files uncollected
    if gates and not collected and every_file:
        source, gate = gates[0]
        raise pytest.UsageError(
            f"{source}: no eval case was collected, so no gate can be judged (check the "
            "paths given to pytest and the llmeval_files globs)"
        )
    for source, gate in gates:
        elsewhere = not every_file and state.suites.get(gate.suite) is not None
        if gate.suite != TOTALS and gate.suite not in collected and not elsewhere:
            if source in unusable:  # why the suite was not collected: its data file
                raise pytest.UsageError(str(unusable[source]))
            raise pytest.UsageError(f"{source}: {_no_suite(gate.suite, collected)}")
        shape = shape_of(gate.suite, state.suites.get(gate.suite))
        why = unknown_metric(gate, shape) if shape is not None else None
        if why is None and gate.suite != TOTALS:
            known = categories.get(gate.suite) if every_file else None
            why = unknown_key(gate, state.suites.get(gate.suite), known)
        if why is None and gate.source == "cli":
            why = _absent_everywhere(state, items, gate)
        if why is not None:
            raise pytest.UsageError(f"{source}: {why}")


def _absent_everywhere(state: LLMEvalState, items: Sequence[EvalItem], gate: Gate) -> str | None:
    """Why a command-line ``gate`` can never be judged: every selected file of its suite has a
    manifest whose options leave its metric out (When2Call's ``acc_norm`` under ``protocol:
    mcq-string``); else ``None``."""
    suite = state.suites.get(gate.suite)
    files = {item.eval_file for item in items if item.suite_name == gate.suite}
    if suite is None or not files or any(not f.manifest_name for f in files):
        return None  # a file without a manifest has the suite's defaults
    reasons = []
    for path in sorted({f.path for f in files}):
        manifest = state.manifests.entry(path)
        if isinstance(manifest, CaseFileError):
            return None
        why = absent_metric(gate, suite, suite.absent_metrics(manifest.options), manifest.display)
        if why is None:
            return None
        reasons.append(why)
    return reasons[0]


def _absent_in_manifest(state: LLMEvalState, manifest: Manifest, gate: Gate) -> str | None:
    """Why a manifest's ``gate`` names a metric that manifest's own options leave out."""
    suite = state.suites.get(gate.suite)
    if suite is None or gate.suite != manifest.suite:
        return None
    return absent_metric(gate, suite, suite.absent_metrics(manifest.options), manifest.display)


NO_GATE = "--llmeval-exit-on gates needs at least one gate (--llmeval-gate or a manifest's gates)"
"""Under ``--llmeval-exit-on gates`` a missed case does not fail the run, so a run without a
single gate would be green whatever its cases said."""


def check_something_decides(
    config: pytest.Config, state: LLMEvalState, items: Sequence[EvalItem]
) -> None:
    """Under ``--llmeval-exit-on gates`` a missed case does not fail the run: something must
    decide it, a gate (the command line's, a manifest's or a suite's own) or a baseline."""
    if state.settings.exit_on != "gates" or state.settings.baseline is not None:
        return
    collected = config.stash[deselections_key].suites
    deselected = config.stash[deselections_key].manifests
    if state.settings.gate or _declares_gates(state, items, deselected):
        return
    if not _own_gates(state, collected):
        raise pytest.UsageError(NO_GATE)


def _declares_gates(
    state: LLMEvalState, items: Sequence[EvalItem], collected: Iterable[str]
) -> bool:
    """Whether a manifest of the selected (or all deselected) cases declares a gate, or cannot
    be read (its error item then fails the run)."""
    index = state.manifests
    paths = {index.rootdir / name for name in collected}
    paths |= {item.eval_file.path for item in items if item.eval_file.manifest_name}
    for path in paths:
        manifest = index.entry(path)
        if isinstance(manifest, CaseFileError):
            return True
        try:
            if manifest_gates(manifest):  # ``gates: []`` decides nothing
                return True
        except ConfigError:
            return True  # refused by the gate check before this one
    return False


def _own_gates(state: LLMEvalState, collected: Iterable[str]) -> bool:
    """Whether a collected suite judges gates of its own (the integration suite's)."""
    return any(getattr(state.suites.get(name), "own_gates", False) for name in collected)


def _manifest_gates(
    state: LLMEvalState,
    items: Sequence[EvalItem],
    collected: Iterable[str] = (),
    unusable: dict[str, CaseFileError] | None = None,
) -> list[tuple[str, Gate]]:
    """The gates of the manifests whose cases were selected, or collected (``collected``:
    their names) and all deselected; a gate that does not parse is a usage error, as a bad
    ``--llmeval-gate`` is (a manifest that cannot be read at all is broken input instead: its
    error item fails the run). ``unusable`` receives, by gate
    source, the error of a manifest whose data file cannot be used (missing, a FIFO): that,
    not "no suite collected", is what its gate's user needs to read."""
    index = state.manifests
    paths = {index.rootdir / name for name in collected}
    paths |= {item.eval_file.path for item in items if item.eval_file.manifest_name}
    out: list[tuple[str, Gate]] = []
    for path in sorted(paths):
        manifest = index.entry(path)
        if isinstance(manifest, CaseFileError):
            continue  # broken input: its error item fails the run, its gates unknown
        try:
            found = located_gates(manifest)
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from None
        sources = [(f"{where}: {gate.name}", gate) for where, gate in found]
        for source, gate in sources:  # a metric the manifest's own options leave out
            why = _absent_in_manifest(state, manifest, gate)
            if why is not None:
                raise pytest.UsageError(f"{source}: {why}")
        if unusable is not None:
            try:
                manifest.data_path()
            except CaseFileError as exc:
                unusable.update((source, exc) for source, _ in sources)
        out += sources
    return out


def _no_suite(suite: str, collected: set[str]) -> str:
    known = sorted(collected)
    close = difflib.get_close_matches(suite, known, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else ""
    return (
        f"no collected suite is named {suite!r}{hint} "
        f"(collected: {', '.join(known) or 'none'}; * for the totals)"
    )
