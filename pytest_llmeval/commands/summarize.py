"""``python -m pytest_llmeval summarize RUN_DIR``: rebuild a run dir's reports from its results.

Results come from the journal when there is one (so a crashed run can be summarized),
otherwise from ``results.jsonl``. The run is judged again as the session judged it
(:func:`pytest_llmeval.report.finish.finish`): its ``--llmeval-gate`` settings, its manifests'
gates (and those the old report recorded), the suites' own gates, and its baseline — compared
again, or, when the baseline file is gone, the old report's comparison is kept. What only the
session knew (a worker that crashed after its case was judged, a leak: the faults of the
verdict ``manifest.json`` records) stands, and the verdict judged again is recorded there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.redact import Redactor
from pytest_llmeval.inputs.manifest import ManifestIndex
from pytest_llmeval.report import verdict
from pytest_llmeval.report.baseline.file import read_baseline
from pytest_llmeval.report.finish import RunEnd, finish
from pytest_llmeval.report.run_verdict import recorded_faults
from pytest_llmeval.report.writer import RunWriter
from pytest_llmeval.rundir.claim import RunDirLock
from pytest_llmeval.rundir.files import is_run_dir, write_json
from pytest_llmeval.rundir.models import Report
from pytest_llmeval.rundir.read import RunRecord, manifests_named, read_run
from pytest_llmeval.suites.base import SuiteContext
from pytest_llmeval.suites.builtin import builtin_suites

__all__ = ["Summarized", "summarize"]


@dataclass
class Summarized:
    report: Report
    verdict: verdict.Verdict
    exit_code: int
    """What the session over these results exited with, as judged again: 0 green, 1 red (a
    case failed, a gate failed, a regression ...), 2 for a run that was cut short by Ctrl-C,
    SIGTERM or a budget (1 for ``-x``); CI can gate on ``summarize`` as on the session."""


def summarize(run_dir: Path) -> Summarized:
    """Rebuild ``report.json``, ``summary.md``, ``report.html`` and the results files; a run
    dir a session is still writing is refused (:class:`~pytest_llmeval.core.errors.RunDirError`)."""
    if not is_run_dir(run_dir):
        return _rebuild(run_dir, read_run(run_dir))  # says what is missing
    lock = RunDirLock(run_dir, "summarize")
    lock.acquire()
    try:
        return _rebuild(run_dir, read_run(run_dir))
    finally:
        lock.release()


def _rebuild(run_dir: Path, run: RunRecord) -> Summarized:
    settings = Settings.model_validate(run.manifest.settings)
    writer = RunWriter(
        run_dir,
        run.manifest.run_id or run_dir.name,
        SuiteContext.from_settings(settings),
        builtin_suites(),
        Redactor(settings.redact_pattern),
    )
    old = run.report  # the run's selection, and where it stopped, are not in its results
    end = RunEnd(
        report=writer.build(run.results, run.runners),
        results=run.results,
        settings=settings,
        earlier=[old] if old is not None else [],
        manifests=ManifestIndex(settings.rootdir).present(manifests_named(run.results)),
        baseline=read_baseline(settings.baseline),
        # what only the session knew (a crashed worker, a leak) is not in its files: it stands
        faults=recorded_faults(run.manifest.verdict),
        deselected=old.deselected if old is not None else None,
        interrupted=old.interrupted if old is not None else None,
        recorded_interruption=run.manifest.interrupted,
        kept_diff=old.baseline if old is not None else None,
    )
    done = finish(end)
    # the page's header, as the session wrote it, with the new verdict
    facts = done.facts(run.manifest.started, run.manifest.duration_s, settings)
    artifacts = writer.suite_artifacts(run.results)
    problems = done.verdict.gate_problems  # unreadable gates: failed rows of summary.md
    writer.write(
        run.results, done.report, artifacts, done.summary_extra, gate_problems=problems, facts=facts
    )
    # the manifest keeps what the session wrote; its verdict is the one judged now
    manifest = run.manifest.model_copy(update={"verdict": done.record})
    write_json(writer.layout.manifest, manifest.dump())
    return Summarized(done.report, done.verdict, done.exit_status)
