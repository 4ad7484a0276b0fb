"""The run's verdict beyond single cases: gates, the baseline diff, the exit status.

:func:`judge` is the one place a report becomes a verdict. The pytest session, ``merge``,
``summarize`` and ``validate-sharding`` call it; the terminal, ``summary.md``, the HTML page,
junit (each gate and the baseline comparison reported as a test: ``llmeval-gates::<gate>``,
``llmeval-baseline::no-regressions``) and MLflow read what it wrote into the report.

Gates come from ``--llmeval-gate``, from the ``gates`` of the ``*.llmeval.yaml`` manifests whose
cases were collected or ran (read by the caller's manifest index: the verdict reads no file and
no node id), from earlier reports of the same run (a merge's shards, the run ``summarize``
rebuilds) and from the suites themselves (their aggregate's ``gates``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.errors import CaseFileError, ConfigError, FingerprintMismatch
from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.inputs.manifest import Manifest
from pytest_llmeval.report.baseline.diff import diff
from pytest_llmeval.report.baseline.file import Baseline, BaselineCase
from pytest_llmeval.report.gates import (
    TOTALS,
    evaluate_gates,
    parse_gate,
    suite_gate_results,
)
from pytest_llmeval.report.manifest_gates import GateSpecError, manifest_gates
from pytest_llmeval.rundir.baseline_diff import BaselineDiff
from pytest_llmeval.rundir.models import Gate, GateResult, GatesSection, Report

__all__ = [
    "BASELINE_NODE",
    "GATES_NODE",
    "Fault",
    "FaultKind",
    "GateProblem",
    "Verdict",
    "cli_gates",
    "gather_gates",
    "is_broken",
    "nothing_judged",
    "skipped_under_gates",
    "weigh",
]

GATES_NODE = "llmeval-gates"
BASELINE_NODE = "llmeval-baseline::no-regressions"

FaultKind = Literal[
    "write", "mlflow", "leak", "crash", "unjudged", "baseline", "journal", "tests", "exit"
]


@dataclass(frozen=True)
class Fault:
    """A reason the run fails that is neither a gate nor the baseline."""

    kind: FaultKind
    """``write``: the run dir could not be written; ``mlflow``: logging failed; ``leak``: a
    configured secret's value is in a written file; ``crash``: an xdist worker died after its
    case was judged (xdist reports that case failed); ``unjudged``: every eval case that ran
    was skipped, so nothing was judged, or gates held only on the cases not skipped;
    ``baseline``: the baseline asked for was not written (the run judged a subset);
    ``journal``: cases ran that no journal holds (a full disk);
    ``tests``: a test of the session that is not an eval case failed or errored (red in every
    mode: ``--llmeval-exit-on gates`` lets eval cases through, nothing else); ``exit``: the
    session exited non-zero for a reason of its own (another plugin, ``pytest.exit()``, a
    signal held while the reports were written)."""
    message: str
    case: str | None = field(default=None, compare=False)
    """A ``crash``'s case: the node id whose result stands though its worker died."""


class GateProblem(str):
    """A gate that could not be read: its text (``<source>: <message>``, as every report
    shows it) with its :attr:`source` kept apart, which names its junit entry and its row of
    ``summary.md``."""

    source: str
    """Where the gate is written: ``--llmeval-gate``, ``<manifest>`` or ``<manifest>:<line>``."""

    def __new__(cls, text: str, source: str) -> GateProblem:
        problem = super().__new__(cls, text)
        problem.source = source
        return problem

    @classmethod
    def of(cls, exc: CaseFileError | GateSpecError) -> GateProblem:
        """The problem ``exc`` says: a manifest that cannot be read, or a gate in it."""
        if isinstance(exc, CaseFileError):
            return cls(str(exc), f"{exc.path}:{exc.line}" if exc.line else exc.path)
        return cls(str(exc), exc.source)


@dataclass
class Verdict:
    """What a run's gates and baseline comparison decided."""

    gate_results: list[GateResult] = field(default_factory=list)
    gate_problems: list[GateProblem] = field(default_factory=list)
    """Gates that could not be read (a bad manifest or ``--llmeval-gate``)."""
    baseline_diff: BaselineDiff | None = None
    baseline_refusal: str | None = None
    """Why the baseline was not compared (fingerprints differ, unreadable ...)."""
    faults: list[Fault] = field(default_factory=list)
    """Other reasons the run fails: the run dir could not be written, MLflow, a leak."""
    broken: list[str] = field(default_factory=list)
    """Node ids of broken input (a record, data file or manifest that could not be read: an
    error with no case). Not a case's miss: it fails the run under ``--llmeval-exit-on gates``
    too, and its error item is its one report (a broken manifest is no gate problem too)."""
    errored: list[str] = field(default_factory=list)
    """Node ids of cases that errored (runner, backend, cassette, judge, protocol, agent): never
    judged, so never an expected miss; they fail the run under ``--llmeval-exit-on gates``
    too."""

    def faults_of(self, kind: FaultKind) -> list[str]:
        return [f.message for f in self.faults if f.kind == kind]

    @property
    def failed_gates(self) -> list[GateResult]:
        return [g for g in self.gate_results if g.failed]

    @property
    def partial_gates(self) -> list[GateResult]:
        """Gates that held on a run that left some of their cases out: not a pass."""
        return [g for g in self.gate_results if g.status == "partial"]

    @property
    def regressions(self) -> list[str]:
        """Cases that passed in the baseline and fail now."""
        return list(self.baseline_diff.flips["pass->fail"]) if self.baseline_diff else []

    @property
    def failed(self) -> bool:
        """A gate failed or could not be read, the baseline regressed or was refused, a fault,
        broken input or a case that errored."""
        return (
            bool(self.failed_gates)
            or bool(self.gate_problems)
            or self.baseline_refusal is not None
            or (self.baseline_diff is not None and self.baseline_diff.regressed)
            or bool(self.faults)
            or bool(self.broken)
            or bool(self.errored)
        )

    @property
    def gates_passed(self) -> bool | None:
        """Whether every gate passed (a ``partial`` gate did not, though it does not fail the
        run); ``None`` when the run has no gates."""
        if not self.gate_results and not self.gate_problems:
            return None
        return not self.failed_gates and not self.gate_problems and not self.partial_gates

    def gate_decision(self) -> str:
        passed = self.gates_passed
        if passed is None:
            return "gates: none"
        count = len(self.gate_results)
        failed = len(self.failed_gates) + len(self.gate_problems)
        if failed:
            return f"gates: FAILED ({failed} of {count} gate(s))"
        if self.partial_gates:
            return (
                f"gates: partial ({len(self.partial_gates)} of {count} gate(s) judged a "
                "subset of their cases)"
            )
        return "gates: passed"


def weigh(
    report: Report,
    results: Sequence[CaseResult],
    settings: Settings,
    gates: Sequence[Gate],
    gate_problems: Sequence[GateProblem] = (),
    faults: Sequence[Fault] = (),
    baseline: Baseline | str | None = None,
) -> Verdict:
    """Check ``gates`` and the suites' own gates against ``report`` and compare it with
    ``baseline`` (the settings' baseline as :func:`~.baseline.file.read_baseline` read it, or
    why it could not be read); both are written into ``report`` (``gates``, ``baseline``).
    ``faults`` are the caller's own (a crashed worker, a journal that stopped). It reads no
    file."""
    body = report.without_baseline().dump()
    verdict = Verdict(
        gate_results=evaluate_gates(gates, body) + suite_gate_results(body),
        gate_problems=list(gate_problems),
        broken=[r.nodeid for r in results if is_broken(r)],
        errored=[r.nodeid for r in results if r.outcome == "error" and not is_broken(r)],
        faults=list(faults),
    )
    report.gates = GatesSection.of(verdict.gate_results) if verdict.gate_results else None
    unjudged = nothing_judged(results)
    if unjudged is not None and report.interrupted is None:  # a budget stop says so itself
        verdict.faults.append(Fault("unjudged", unjudged))
    partly = skipped_under_gates(verdict.partial_gates, results) if unjudged is None else None
    if partly is not None:
        verdict.faults.append(Fault("unjudged", partly))
    if baseline is not None:
        if report.gates is not None:  # the diff compares gates too: the body gets them
            body["gates"] = report.gates.model_dump(mode="json")
        else:
            body.pop("gates", None)
        try:
            if isinstance(baseline, str):  # it could not be read
                raise ValueError(baseline)
            cases = [BaselineCase.of(result) for result in results]
            verdict.baseline_diff = diff(
                body, cases, baseline, allow_mismatch=settings.baseline_allow_mismatch
            )
        except (FingerprintMismatch, ValueError) as exc:
            verdict.baseline_refusal = str(exc)
        compared = skipped_under_baseline(verdict.baseline_diff, results)
        if compared is not None and unjudged is None and partly is None:
            verdict.faults.append(Fault("unjudged", compared))
    report.baseline = verdict.baseline_diff
    return verdict


def nothing_judged(results: Sequence[CaseResult]) -> str | None:
    """Why a run whose every eval case was skipped (a conftest fixture's ``pytest.skip("KEY
    not set")``, an agent's ``pytest.skip`` or ``pytest.xfail``) judged nothing, or ``None``
    when some case was judged (or errored, which fails the run already). A run with no case
    at all (all deselected) is not this: pytest says "no tests ran"."""
    if not results or any(r.outcome != "skipped" for r in results):
        return None
    reason = next((r.error for r in results if r.error), None)
    return (
        f"nothing was judged: all {len(results)} eval case(s) were skipped"
        + (f" (first reason: {reason})" if reason else "")
        + ", so the run fails"
    )


def skipped_under_gates(partial: Sequence[GateResult], results: Sequence[CaseResult]) -> str | None:
    """Why gates that held on the rest fail the run when cases of their suite were skipped (a
    fixture's ``pytest.skip("KEY not set")``, a ``skip``/``skipif`` mark, ``xfail(run=False)``,
    an agent's ``pytest.skip``), or ``None``. Such a gate is ``partial``, as after a
    deselection; but a skip is no choice of the user's (``-k``, ``-m`` and ``--deselect`` are,
    and stay ``partial`` without failing the run), so a key missing in CI cannot ship a green
    gate judged on part of the data. A budget's skips are not counted here: a budget stop cuts
    the run short, which says so itself."""
    skipped = [r for r in results if r.outcome == "skipped" and r.budget_skip is None]
    if not skipped:
        return None
    suites = {r.suite for r in skipped}
    held = [g.gate.name for g in partial if g.gate.suite == TOTALS or g.gate.suite in suites]
    if not held:
        return None
    return _skipped_line(skipped, "", f"gate(s) {', '.join(held)}")


def skipped_under_baseline(diff: BaselineDiff | None, results: Sequence[CaseResult]) -> str | None:
    """Why a baseline comparison fails the run when cases the baseline judged were skipped
    now (a fixture's ``pytest.skip("KEY not set")``, a mark, an agent's skip), or ``None``. A
    skipped case cannot regress, so under ``--llmeval-exit-on gates`` with only a baseline a
    key missing in CI would compare one case in four and read green; as for a gate
    (:func:`skipped_under_gates`), a skip is no choice of the user's, a deselection is."""
    if diff is None:
        return None
    now = set(diff.flips.get("skipped", ()))
    skipped = [r for r in results if r.nodeid in now and r.outcome == "skipped"]
    skipped = [r for r in skipped if r.budget_skip is None]  # a budget's stop says so itself
    if not skipped:
        return None
    return _skipped_line(skipped, " the baseline judged", "the baseline comparison")


def _skipped_line(skipped: Sequence[CaseResult], which: str, judged: str) -> str:
    """The one line that says skipped cases fail the run, naming the first and its reason."""
    first = skipped[0]
    why = f": {first.error}" if first.error else ""
    return (
        f"{len(skipped)} eval case(s){which} were skipped (first: {first.nodeid}{why}), so "
        f"{judged} judged only the rest and the run fails; let them run, or leave them out "
        "on purpose with -k, -m or --deselect"
    )


def cli_gates(settings: Settings) -> list[Gate]:
    """Gates from ``--llmeval-gate`` / ini ``llmeval_gate``; a bad one is a
    :class:`~pytest_llmeval.core.errors.ConfigError` (a usage error, up front)."""
    gates = []
    for text in settings.gate:
        try:
            gates.append(parse_gate(text, "cli"))
        except ValueError as exc:
            raise ConfigError(f"--llmeval-gate: {exc}") from None
    return gates


def gather_gates(
    settings: Settings,
    results: Iterable[CaseResult],
    earlier: Iterable[Report] = (),
    manifests: Iterable[Manifest | CaseFileError] = (),
) -> tuple[list[Gate], list[GateProblem]]:
    """Every gate of a run, and the problems met reading them.

    The settings' ``--llmeval-gate`` gates; the gates of ``manifests``, those whose cases were
    collected or ran (every case deselected maybe: their gates are then ``partial``, never
    dropped), as the caller's :class:`~pytest_llmeval.inputs.manifest.ManifestIndex` read
    them; the manifest gates of ``earlier`` reports of the same run (a merge's shards, the
    report ``summarize`` rebuilds), for manifests that are not at hand. A suite's own gates
    are never taken from a report: :func:`judge` asks the suite again.
    """
    gates: list[Gate] = []
    problems: list[GateProblem] = []
    for text in settings.gate:
        try:
            gates.append(parse_gate(text, "cli"))
        except ValueError as exc:
            problems.append(GateProblem(f"--llmeval-gate: {exc}", "--llmeval-gate"))
    found, bad = _manifest_gates(manifests, results)
    gates += found
    problems += bad
    for report in earlier:
        if report.gates is not None:
            gates += [r.gate for r in report.gates.results if r.gate.source == "manifest"]
    return gates, problems


def is_broken(result: CaseResult) -> bool:
    """Whether ``result`` is broken input's error item: an error with no case behind it."""
    return result.outcome == "error" and not result.case_fingerprint


def _manifest_gates(
    manifests: Iterable[Manifest | CaseFileError], results: Iterable[CaseResult]
) -> tuple[list[Gate], list[GateProblem]]:
    """The gates of ``manifests``; a manifest that cannot be read is a problem, unless its own
    error item is among ``results`` (that error says it, and fails the run as broken input)."""
    gates: list[Gate] = []
    problems: list[GateProblem] = []
    reported = {r.file for r in results if is_broken(r)}
    for manifest in manifests:
        if isinstance(manifest, CaseFileError):
            if manifest.path not in reported:
                problems.append(GateProblem.of(manifest))
            continue
        try:
            gates += manifest_gates(manifest)
        except GateSpecError as exc:  # stopped before any case in a session; a run dir read
            problems.append(GateProblem.of(exc))  # afresh (merge, summarize) may still hold one
    return gates, problems
