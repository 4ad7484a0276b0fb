"""``python -m pytest_llmeval summarize RUN_DIR``: rebuild a run dir's reports from its results.

Results come from the journal when there is one (so a crashed run can be summarized),
otherwise from ``results.jsonl``. The run is judged again as the session judged it
(:func:`pytest_llmeval.report.verdict.judge`): its ``--llmeval-gate`` settings, its manifests'
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
from pytest_llmeval.report import run_verdict, verdict
from pytest_llmeval.report.baseline.render import diff_markdown
from pytest_llmeval.report.html.header import RunFacts
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
    report = writer.build(run.results, run.runners)
    if run.report is not None:  # the run's selection, and where it stopped, are not in its results
        report.deselected = run.report.deselected
        report.interrupted = run.report.interrupted
    earlier = [run.report] if run.report is not None else []
    manifests = ManifestIndex(settings.rootdir).present(manifests_named(run.results))
    gates, problems = verdict.gather_gates(settings, run.results, earlier, manifests)
    # what only the session knew (a crashed worker, a leak) is not in its files: it stands
    faults = recorded_faults(run.manifest.verdict)
    judged = verdict.judge(report, run.results, settings, gates, problems, faults)
    if report.baseline is None and run.report is not None and run.report.baseline is not None:
        # not compared again (the baseline file is gone): the session's comparison stands
        report.baseline = run.report.baseline
        judged.baseline_diff, judged.baseline_refusal = run.report.baseline, None
    diff = report.baseline
    extra = "\n" + diff_markdown(diff) if diff is not None else ""
    code = _exit_code(judged, run, settings)
    ending = run_verdict.record(
        judged,
        run.results,
        exit_on=settings.exit_on,
        interrupted=report.interrupted or run.manifest.interrupted,
        exit_status=code,
    )
    facts = RunFacts(  # the page's header, as the session wrote it, with the new verdict
        started=run.manifest.started,
        duration_s=run.manifest.duration_s,
        runner=settings.runner,
        model=settings.model,
        verdict=ending,
    )
    artifacts = writer.suite_artifacts(run.results)
    problems = judged.gate_problems  # unreadable gates: failed rows of summary.md
    writer.write(run.results, report, artifacts, extra, gate_problems=problems, facts=facts)
    # the manifest keeps what the session wrote; its verdict is the one judged now
    manifest = run.manifest.model_copy(update={"verdict": ending})
    write_json(writer.layout.manifest, manifest.dump())
    return Summarized(report, judged, code)


def _exit_code(judged: verdict.Verdict, run: RunRecord, settings: Settings) -> int:
    """The rebuilt verdict's exit status: a cut-short run is never 0."""
    code = judged.exit_code(run.results, settings.exit_on)
    interrupted = run.report.interrupted if run.report is not None else None
    if interrupted is None and run.manifest.interrupted is not None:
        interrupted = run.manifest.interrupted
    return run_verdict.cut_short_status(code, interrupted)
