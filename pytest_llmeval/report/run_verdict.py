"""The run's verdict as one record: ``passed``, ``failed`` or ``partial``, why, and the exit
status.

The session writes it into ``manifest.json`` as it ends (and writes it again when what came
after the reports were written changes it: a leaked secret, an MLflow failure, another
plugin, a signal); ``merge`` and
``summarize`` write theirs. ``runs``, ``compare`` and report.html read it back: judging a run's
files again cannot see what only its session knew (a worker that crashed after its case was
judged, a leak, a baseline it refused to bless). Run dirs written before the verdict was
recorded are judged from their files with the same rule (:func:`decide`).
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable, Sequence
from typing import cast, get_args

from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.report.exit_status import NO_TESTS_COLLECTED
from pytest_llmeval.report.verdict import Fault, FaultKind, Verdict
from pytest_llmeval.rundir.models import Interrupted, RecordedFault, RunVerdict

__all__ = [
    "REJUDGED",
    "crash_after_judged",
    "decide",
    "plain_tests_failed",
    "record",
    "recorded_faults",
    "standing_crashes",
    "teardown_failed",
]

REJUDGED: tuple[FaultKind, ...] = ("write", "unjudged")
"""Fault kinds that judging a run dir's files again finds (or, a write, does again)."""


def record(
    verdict: Verdict,
    results: Iterable[CaseResult],
    *,
    exit_on: str,
    interrupted: Interrupted | None,
    exit_status: int | None,
) -> RunVerdict:
    """``verdict`` (of a session, a merge or ``summarize``) as the run's record."""
    reasons = [f"gate {g.gate.name} failed" for g in verdict.failed_gates]
    reasons += [f"gate problem: {problem}" for problem in verdict.gate_problems]
    if verdict.baseline_refusal is not None:
        reasons.append(f"baseline not compared: {verdict.baseline_refusal}")
    diff = verdict.baseline_diff
    if diff is not None and diff.regressed:
        reasons.append(f"{diff.pass_to_fail} regression(s) against the baseline")
    if verdict.broken:
        reasons.append(f"{len(verdict.broken)} input(s) could not be read")
    if verdict.errored:
        reasons.append(f"{len(verdict.errored)} case(s) errored")
    reasons += [fault.message for fault in verdict.faults]
    if exit_on == "all":
        missed = sum(1 for r in results if r.outcome == "failed" and not r.xfailed)
        if missed:
            reasons.append(f"{missed} case(s) failed")
    return decide(
        reasons,
        interrupted=interrupted,
        partial_gates=len(verdict.partial_gates),
        exit_status=exit_status,
        faults=[RecordedFault(kind=f.kind, message=f.message) for f in verdict.faults],
    )


def decide(
    reasons: Sequence[str],
    *,
    interrupted: Interrupted | None,
    partial_gates: int,
    exit_status: int | None,
    faults: Sequence[RecordedFault] = (),
) -> RunVerdict:
    """``failed`` for any reason, or for a non-zero exit of a run that was not cut short (a
    plain test of the same session failed, an internal error); ``partial`` when the run was
    cut short or a gate judged a subset of its cases; ``passed`` otherwise."""
    status = exit_status
    quiet = (None, 0, NO_TESTS_COLLECTED)  # 5: an empty shard, nothing of it to judge
    if not reasons and interrupted is None and status not in quiet:
        unexplained = RecordedFault(kind="exit", message=f"pytest exited with status {status}")
        reasons = [unexplained.message]
        # a fault of its own: summarize and merge, which cannot see why, keep it
        faults = [*faults, unexplained]
    if reasons:
        return RunVerdict(
            status="failed", exit_status=status, reasons=list(reasons), faults=list(faults)
        )
    if interrupted is not None:
        cut = [f"cut short ({interrupted.reason})"]
        return RunVerdict(status="partial", exit_status=status, reasons=cut)
    if partial_gates:
        subset = [f"{partial_gates} gate(s) judged a subset of their cases"]
        return RunVerdict(status="partial", exit_status=status, reasons=subset)
    return RunVerdict(status="passed", exit_status=status, reasons=[])


def recorded_faults(recorded: RunVerdict | None) -> list[Fault]:
    """The faults of an earlier record that judging the run dir again cannot find: every
    kind but those it finds again; a kind this version does not know is kept too (as
    ``exit``, naming it), so an edited or newer record never reads greener here."""
    if recorded is None:
        return []
    known = get_args(FaultKind)
    return [
        _fault(cast(FaultKind, f.kind), f.message)
        if f.kind in known
        else Fault("exit", f"{f.kind}: {f.message}")
        for f in recorded.faults
        if f.kind not in REJUDGED
    ]


def crash_after_judged(worker: str, case: str) -> Fault:
    """The fault of an xdist ``worker`` that died after ``case`` was judged (in teardown)."""
    message = (
        f"worker crashed: xdist worker {worker} died after {case} was judged "
        "(its result stands); the run fails"
    )
    return Fault("crash", message, case=case)


_JUDGED_CASE = re.compile(r" died after (.+?) was judged")
"""The case in :func:`crash_after_judged`'s message: ``manifest.json`` records a fault's kind
and message only, so a recorded crash is read back into its case here, once."""


def _fault(kind: FaultKind, message: str) -> Fault:
    """A recorded fault as this version makes it (a crash with its case)."""
    case = _JUDGED_CASE.search(message) if kind == "crash" else None
    return Fault(kind, message, case=case.group(1) if case is not None else None)


def standing_crashes(recorded: RunVerdict | None, reused: Container[str]) -> list[Fault]:
    """An earlier attempt's workers that died after their case was judged, for a resume of
    it: the case's result stands and the resume reuses it, so the crash stands too (a resume
    with nothing left to run exits as the finished run did). A crash whose case runs again is
    the new result's to judge."""
    return [
        fault
        for fault in recorded_faults(recorded)
        if fault.kind == "crash" and fault.case is not None and fault.case in reused
    ]


def teardown_failed(report: object) -> str | None:
    """The node id of an eval case whose teardown errored (a fixture's, a plugin's); ``None``
    for any other report. Its result stands, but an error is never green: pytest's own
    status says 1, and ``--llmeval-exit-on gates`` must not make it 0."""
    failed = getattr(report, "when", None) == "teardown" and getattr(report, "failed", False)
    return str(getattr(report, "nodeid", "?")) if failed else None


def plain_tests_failed(plain: Sequence[str], torn: Sequence[str] = ()) -> list[Fault]:
    """The fault of ``plain`` tests (not eval cases) that failed, errored or were not
    collected, and of eval cases whose teardown errored (``torn``); none when there are none:
    red in every mode, ``--llmeval-exit-on gates`` included."""
    faults = []
    if plain:
        more = f" and {len(plain) - 1} more" if len(plain) > 1 else ""
        faults.append(Fault("tests", f"a test that is not an eval case failed: {plain[0]}{more}"))
    if torn:
        more = f" and {len(torn) - 1} more" if len(torn) > 1 else ""
        message = f"an eval case's teardown errored (its result stands): {torn[0]}{more}"
        faults.append(Fault("tests", message))
    return faults
