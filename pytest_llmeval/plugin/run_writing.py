"""The session's run dir, written once the test loop is over: the report built from every
result, the end of the run decided (:func:`pytest_llmeval.report.finish.finish`), the
baseline blessed, the reports and ``manifest.json`` written, ``latest`` pointed at it and the
run logged to MLflow. What only the end of a session needs is imported here, as it runs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.plugin.interruption import Interruption, merged_counts
from pytest_llmeval.plugin.progress import results_cost
from pytest_llmeval.plugin.selection import deselections_key
from pytest_llmeval.plugin.state import LLMEvalState
from pytest_llmeval.report import verdict
from pytest_llmeval.report.baseline.file import BaselineCase, read_baseline, write_baseline
from pytest_llmeval.report.verdict import Fault
from pytest_llmeval.rundir.latest import point_latest
from pytest_llmeval.rundir.models import Report, RunManifest
from pytest_llmeval.rundir.read import manifests_named

if TYPE_CHECKING:
    from pytest_llmeval.report.finish import RunEnd
    from pytest_llmeval.report.html.header import RunFacts
    from pytest_llmeval.report.writer import RunWriter

__all__ = ["SessionOutcome", "Written", "write_run"]


@dataclass(frozen=True)
class Written:
    """What the session wrote its verdict with: to write it again if it changes."""

    writer: RunWriter
    manifest: RunManifest
    facts: RunFacts


class SessionOutcome(Protocol):
    """The session report as the writing sees it: what it collected, and where the writing
    keeps what it did (:class:`~pytest_llmeval.plugin.session_report.SessionReport`)."""

    state: LLMEvalState
    interruption: Interruption
    results: dict[str, CaseResult]
    runners: dict[str, dict[str, Any]]
    finished: dict[str, Any]
    started: datetime
    plain_failed: list[str]
    torn: list[str]
    unjournaled: bool
    run_dir: Path | None
    report: Report | None
    end: RunEnd | None
    verdict: verdict.Verdict
    baseline_kept: str | None
    file_artifacts: list[tuple[str, dict[str, Any]]]
    written: Written | None
    latest_warning: str | None
    mlflow_run_id: str | None

    def faults(self) -> list[Fault]: ...


def write_run(out: SessionOutcome, session: pytest.Session) -> None:
    """Build, judge and write the run dir of the session ``out`` collected, keeping on it
    what was written as it goes (so a write that fails midway leaves what was done)."""
    # what only the end of a session needs is imported here: every session starts faster
    from pytest_llmeval.report.finish import RunEnd, finish
    from pytest_llmeval.report.mlflow_log import MlflowLogError, log_run
    from pytest_llmeval.report.provenance import filtered_environment, git_state
    from pytest_llmeval.report.writer import RunWriter

    state, settings = out.state, out.state.settings
    out.run_dir = state.ensure_run_dir()
    writer = RunWriter(out.run_dir, state.run_id, state.context, state.suites, state.redactor)
    results = [out.results[key] for key in sorted(out.results)]
    out.report = report = writer.build(results, out.runners)
    if settings.prices is not None:
        report.totals.cost_usd = results_cost(results, out.runners, settings)
    interrupted, unrun = out.interruption.tally(session, results)
    selection = state.config.stash[deselections_key]
    deselected = selection.counts(results) or {}
    # the manifests of the cases collected, and of the earlier results a resume reused
    reused = manifests_named(result for result, _ in out.finished.values())
    out.end = RunEnd(
        report=report,
        results=results,
        settings=settings,
        manifests=state.manifests.present(selection.manifests | reused),
        baseline=read_baseline(settings.baseline),
        faults=out.faults(),
        deselected=merged_counts(deselected.items(), unrun.items()),
        interrupted=interrupted,
        update_baseline=settings.update_baseline,
        pytest_status=int(session.exitstatus),
        resumed=bool(out.finished),
        plain_failed=bool(out.plain_failed or out.torn),
        unjournaled=out.unjournaled,
    )
    done = finish(out.end)
    out.report = report = done.report
    out.verdict = done.verdict
    if done.baseline_kept:  # a subset is no baseline
        out.baseline_kept = str(settings.update_baseline)
    if done.blessed is not None and settings.update_baseline is not None:
        write_baseline(
            settings.update_baseline,
            state.redactor.value(done.blessed),
            [BaselineCase.of(result) for result in results],
            run_id=state.run_id,
        )
    out.file_artifacts = writer.suite_artifacts(results)
    earlier = out.finished
    # under xdist every result came from a worker (redacted there): a second pass
    distributed = session.config.pluginmanager.has_plugin("dsession")

    def own(result: CaseResult) -> bool:
        """Made and redacted here, by this very redactor (not an earlier attempt's)."""
        return not distributed and result.nodeid not in earlier

    problems = out.verdict.gate_problems  # unreadable gates: failed rows of summary.md
    ending = done.record  # as the session will exit
    duration_s = round((datetime.now(timezone.utc) - out.started).total_seconds(), 3)
    facts = done.facts(out.started.isoformat(), duration_s, settings)
    # an earlier session's record goes first: if this one cannot finish its files, the run
    # dir reads unfinished, never as the last session ended
    writer.layout.manifest.unlink(missing_ok=True)
    writer.layout.html.unlink(missing_ok=True)
    extra = done.summary_extra
    written = writer.write(
        results, report, out.file_artifacts, extra, own, gate_problems=problems, facts=facts
    )
    finished = datetime.now(timezone.utc)
    manifest = writer.write_manifest(
        settings=settings,
        # URL credentials and secret-named options masked (the writer's pass sees no names)
        invocation=state.redactor.argv(state.config.invocation_params.args),
        started=out.started.isoformat(),
        finished=finished.isoformat(),
        duration_s=round((finished - out.started).total_seconds(), 3),
        git=git_state(settings.rootdir),
        environment=filtered_environment(),
        attempt=state.attempt,
        artifacts=written,
        interrupted=interrupted,
        verdict=ending,
    )
    out.written = Written(writer, manifest, facts)
    out.latest_warning = point_latest(settings.output_root, out.run_dir)
    if settings.mlflow:
        try:
            out.mlflow_run_id = log_run(
                out.run_dir,
                settings.mlflow,
                settings.mlflow_experiment,
                secrets=state.secrets,
            )
        except MlflowLogError as exc:  # the run dir is complete; report and fail
            out.verdict.faults.append(Fault("mlflow", str(exc)))
