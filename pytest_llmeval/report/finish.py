"""The end of a run, once: results and what is known about them become the verdict, the record
and the exit status.

The pytest session, ``summarize`` and ``merge`` each build a :class:`RunEnd` and call
:func:`finish`; what they write with the :class:`Finished` it returns (the reports, the
manifest, a baseline) is theirs, as is reading what it needs (the report built from the data
files, the manifests, the baseline). :func:`finish` itself reads and writes no file and imports
no pytest, so a run dir judged again ends exactly as its session did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.errors import CaseFileError
from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.inputs.manifest import Manifest
from pytest_llmeval.report import run_verdict
from pytest_llmeval.report.baseline.file import Baseline, not_blessed, subset_of
from pytest_llmeval.report.baseline.render import diff_markdown
from pytest_llmeval.report.exit_status import ExitFacts, cases_failed, exit_status, replayed_status
from pytest_llmeval.report.html.header import RunFacts
from pytest_llmeval.report.verdict import Fault, Verdict, gather_gates, weigh
from pytest_llmeval.rundir.baseline_diff import BaselineDiff
from pytest_llmeval.rundir.models import Interrupted, Report, RunVerdict

__all__ = ["Finished", "RunEnd", "finish", "record", "status"]


@dataclass(frozen=True)
class RunEnd:
    """What the end of a run is decided from."""

    report: Report
    """The report built from the results (the writer's, which hashes the data files), with
    what only the caller knows added (a price, a merge's shard fingerprints)."""
    results: Sequence[CaseResult]
    """Every case's result, sorted by node id."""
    settings: Settings
    earlier: Sequence[Report] = ()
    """Earlier reports of the same run whose manifest gates count (a merge's shards, the
    report ``summarize`` rebuilds)."""
    manifests: Sequence[Manifest | CaseFileError] = ()
    """The manifests of the cases, as the caller's manifest index read them."""
    baseline: Baseline | str | None = None
    """The settings' baseline as read, or why it cannot be (``read_baseline``)."""
    faults: Sequence[Fault] = ()
    """What the files do not say: a session's crashed workers and failed plain tests, an
    earlier record's faults."""
    deselected: Mapping[str, int] | None = None
    """The cases left out, by suite (``report.json`` ``deselected``)."""
    interrupted: Interrupted | None = None
    """Where the run was cut short (``report.json`` ``interrupted``)."""
    recorded_interruption: Interrupted | None = None
    """``manifest.json``'s ``interrupted``, for a run dir whose report lost it (``summarize``)."""
    kept_diff: BaselineDiff | None = None
    """The session's baseline comparison, kept when it is not compared again (``summarize``,
    the baseline file gone)."""
    update_baseline: Path | None = None
    """``--llmeval-update-baseline`` (a session's)."""
    pytest_status: int | None = None
    """The status pytest ended the session with; ``None`` off pytest (``summarize``,
    ``merge``: the session's is replayed from the cases)."""
    resumed: bool = False
    """A session that reused an earlier attempt's results."""
    plain_failed: bool = False
    """A test of the session that is not an eval case failed."""
    unjournaled: bool = False
    """A session whose journal stopped."""

    @property
    def stopped(self) -> Interrupted | None:
        """Where the run was cut short, if it was."""
        return self.interrupted or self.recorded_interruption


@dataclass
class Finished:
    """What :func:`finish` decided."""

    report: Report
    """The report with its gates, its baseline diff and where the run stopped."""
    verdict: Verdict
    exit_status: int
    record: RunVerdict
    """The verdict as ``manifest.json`` and report.html show it."""
    summary_extra: str = ""
    """The baseline diff's markdown, for ``summary.md``."""
    blessed: dict[str, Any] | None = None
    """The baseline to write (``--llmeval-update-baseline`` on a run of every case)."""
    baseline_kept: bool = False
    """``--llmeval-update-baseline`` left as it was: the run was cut short."""

    def facts(self, started: str | None, duration_s: float | None, settings: Settings) -> RunFacts:
        """report.html's header with this verdict."""
        return RunFacts(
            started=started,
            duration_s=duration_s,
            runner=settings.runner,
            model=settings.model,
            verdict=self.record,
        )


def finish(end: RunEnd) -> Finished:
    """Gates, baseline diff, verdict, exit status and record of the run ``end`` describes."""
    settings, results = end.settings, end.results
    report = end.report.model_copy()
    report.deselected = dict(end.deselected) if end.deselected is not None else None
    report.interrupted = end.interrupted
    gates, problems = gather_gates(settings, results, end.earlier, end.manifests)
    verdict = weigh(report, results, settings, gates, problems, end.faults, end.baseline)
    if report.baseline is None and end.kept_diff is not None:
        # not compared again (the baseline file is gone): the session's comparison stands
        report.baseline = end.kept_diff
        verdict.baseline_diff, verdict.baseline_refusal = end.kept_diff, None
    diff = verdict.baseline_diff
    extra = "\n" + diff_markdown(diff) if diff is not None else ""
    blessed, kept = _bless(end, report, verdict)
    code = status(end, verdict)
    return Finished(report, verdict, code, record(end, verdict, code), extra, blessed, kept)


def status(end: RunEnd, verdict: Verdict) -> int:
    """The exit status of ``end`` with ``verdict`` (judged again when a fault came later)."""
    stopped = end.stopped
    failed = cases_failed(end.results)
    pytest_status = end.pytest_status
    if pytest_status is None:
        pytest_status = replayed_status(failed, stopped.reason if stopped else None)
    return exit_status(
        ExitFacts(
            status=pytest_status,
            exit_on=end.settings.exit_on,
            cases_failed=failed,
            verdict_failed=verdict.failed,
            plain_failed=end.plain_failed,
            interrupted=stopped is not None,
            resumed=end.resumed,
            unjournaled=end.unjournaled,
        )
    )


def record(end: RunEnd, verdict: Verdict, exit_status: int) -> RunVerdict:
    """``verdict`` as the run's record, the run exiting with ``exit_status``."""
    return run_verdict.record(
        verdict,
        end.results,
        exit_on=end.settings.exit_on,
        interrupted=end.stopped,
        exit_status=exit_status,
    )


def _bless(end: RunEnd, report: Report, verdict: Verdict) -> tuple[dict[str, Any] | None, bool]:
    """The baseline ``--llmeval-update-baseline`` writes, and whether it is kept as it was
    (a run cut short); a run that judged a subset is refused as a fault."""
    path = end.update_baseline
    if path is None:
        return None, False
    if end.interrupted is not None:
        return None, True
    body = report.without_baseline().dump()
    subset = subset_of(body, end.settings.shard)
    if subset is not None:
        verdict.faults.append(Fault("baseline", not_blessed(path, subset)))
        return None, False
    return body, False
