"""Joining the run dirs of a sharded run (``--llmeval-shard I/N``) into one run dir.

``python -m pytest_llmeval merge OUT_DIR RUN_DIR...`` takes the run dir of every shard of one
run and writes ``OUT_DIR`` as the run dir of the unsharded run would be: the results of every
shard, sorted by node id, and ``report.json`` / ``summary.md`` / ``report.html`` /
``events.jsonl`` rebuilt through :class:`~pytest_llmeval.report.writer.RunWriter` (timings aside,
the same files an unsharded run writes). The gates are judged once, on the merged report, and
the merge exits with the one status the unsharded session would have had.

The merge refuses (:class:`MergeError`, every problem listed) when the shards do not make one
run (:func:`~pytest_llmeval.commands.shard_check.check_shards` says why).

Where each value comes from:

* results: a run dir's journal when it has one (results with their events and runner
  fingerprints, as ``summarize`` reads them), else its ``results.jsonl``;
* fingerprints (``datasets``, ``dataset_sha256``, ``runners``, the header fingerprints): the
  shards' own ``report.json``, so a merge on another machine than the runs still reports what
  the runs saw;
* gates: the shards' ``--llmeval-gate`` settings, the gates of the ``*.llmeval.yaml`` manifests
  whose cases ran (read again when the manifest is there, and taken from the shards' reports in
  any case), checked against the merged report; the baseline, when the settings name one, is
  compared again the same way the session does.

``OUT_DIR`` also gets a journal of the merged results, so ``summarize`` and ``--llmeval-resume``
work on it like on any run dir.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pytest_llmeval.commands.shard_check import FINGERPRINT_KEYS, check_shards, header_fingerprints
from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.errors import LLMEvalError, RunDirError
from pytest_llmeval.core.fingerprint import fingerprint
from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.core.redact import Redactor, find_leaks, secret_values
from pytest_llmeval.inputs.manifest import ManifestIndex
from pytest_llmeval.report import console, finish
from pytest_llmeval.report.baseline.file import read_baseline
from pytest_llmeval.report.finish import Finished, RunEnd
from pytest_llmeval.report.run_verdict import recorded_faults
from pytest_llmeval.report.verdict import Fault, Verdict
from pytest_llmeval.report.writer import RunWriter
from pytest_llmeval.rundir.claim import prepare_merge_dir
from pytest_llmeval.rundir.files import tag_run_dir
from pytest_llmeval.rundir.journal import Journal
from pytest_llmeval.rundir.layout import REPORT_FILES
from pytest_llmeval.rundir.models import Interrupted, MergedFrom, Report, RunVerdict
from pytest_llmeval.rundir.read import RunRecord, manifests_named, read_run
from pytest_llmeval.suites.base import SuiteContext
from pytest_llmeval.suites.builtin import builtin_suites

__all__ = [
    "MergeError",
    "Merged",
    "combine",
    "load_run",
    "merge",
    "merge_lines",
    "write_merged",
]


class MergeError(LLMEvalError):
    """The run dirs cannot be merged; ``problems`` says every reason."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


# --------------------------------------------------------------------------------------------
# reading run dirs


def load_run(path: Path) -> RunRecord:
    """Read ``path``'s manifest, report, results (journal first) and runner fingerprints."""
    try:
        return read_run(path, report_required=True)
    except RunDirError as exc:
        raise MergeError([str(exc)]) from None


# --------------------------------------------------------------------------------------------
# combining


@dataclass
class Merged:
    """The merged run: results, report and its verdict."""

    settings: Settings
    writer: RunWriter
    results: list[CaseResult]
    runners: dict[str, dict[str, Any]]
    end: RunEnd
    """What the merge is judged from."""
    finished: Finished
    written: list[str] = field(default_factory=list)

    @property
    def report(self) -> Report:
        return self.finished.report

    @property
    def verdict(self) -> Verdict:
        return self.finished.verdict

    @property
    def exit_code(self) -> int:
        """As the unsharded session would exit (``--llmeval-exit-on`` included): 0 or 1, and
        never 0 when a shard was cut short (a budget, a signal: 2)."""
        return finish.status(self.end, self.verdict)

    def record(self) -> RunVerdict:
        """The merge's verdict as ``manifest.json`` and report.html show it."""
        return finish.record(self.end, self.verdict, self.exit_code)


def combine(runs: Sequence[RunRecord], out_dir: Path) -> Merged:
    """The merged run of ``runs``, in memory (nothing is written).

    A case in several run dirs is taken from the first; :func:`check_shards` is where that is
    refused.
    """
    if not runs:
        raise MergeError(["no run dirs to merge"])
    ordered = sorted(runs, key=lambda r: (r.shard or (0, 0), str(r.path)))
    settings_json = {
        **ordered[0].manifest.settings,
        "shard": None,
        "run_dir": str(out_dir.resolve()),
    }
    try:
        settings = Settings.model_validate(settings_json)
    except ValidationError as exc:
        raise MergeError([f"{ordered[0].path}: settings this plugin cannot read: {exc}"]) from None
    by_node: dict[str, CaseResult] = {}
    runners: dict[str, dict[str, Any]] = {}
    for run in ordered:
        for result in run.results:
            by_node.setdefault(result.nodeid, result)
        for key, value in run.runners.items():
            runners.setdefault(key, value)
    results = [by_node[key] for key in sorted(by_node)]
    used = {r.runner_fingerprint for r in results if r.runner_fingerprint}
    runners = {k: v for k, v in runners.items() if k in used or not used}
    secrets = secret_values(settings.secret_env)
    writer = RunWriter(
        out_dir,
        out_dir.name,
        SuiteContext.from_settings(settings),
        builtin_suites(),
        Redactor(settings.redact_pattern, secrets),
    )
    report = writer.build(results, runners)
    _shard_fingerprints(report, ordered)
    earlier = [run.report for run in ordered if run.report is not None]
    # what only a shard's session knew (a crashed worker, a leak) fails the merge too; a
    # shard refusing to bless its subset as the baseline is what a shard does (bless the merge)
    faults = [
        Fault(fault.kind, f"{run.path.name}: {fault.message}", case=fault.case)
        for run in ordered
        for fault in recorded_faults(run.manifest.verdict)
        if fault.kind != "baseline"
    ]
    end = RunEnd(
        report=report,
        results=results,
        settings=settings,
        earlier=earlier,
        manifests=ManifestIndex(settings.rootdir).present(manifests_named(results)),
        baseline=read_baseline(settings.baseline),
        faults=faults,
        deselected=_deselected(earlier),
        interrupted=_interrupted(earlier, results),
    )
    return Merged(settings, writer, results, runners, end, finish.finish(end))


def _deselected(reports: Sequence[Report]) -> dict[str, int] | None:
    """The cases the shards left out beyond each other's (``-k``, ``-m`` ...), by suite."""
    out: dict[str, int] = {}
    for report in reports:
        for suite, count in (report.deselected or {}).items():
            out[suite] = out.get(suite, 0) + count
    return dict(sorted(out.items())) or None


def _interrupted(reports: Sequence[Report], results: Sequence[CaseResult]) -> Interrupted | None:
    """A merge of shards of which one was cut short is cut short: the cases the shards did not
    reach are added to the merged cases that ran."""
    cut = [report.interrupted for report in reports if report.interrupted is not None]
    if not cut:
        return None
    reasons = sorted({c.reason for c in cut})
    ran = sum(1 for r in results if r.budget_skip is None)
    missing = sum(max(0, c.cases_total - c.cases_run) for c in cut)
    return Interrupted(reason="+".join(reasons), cases_run=ran, cases_total=ran + missing)


def _shard_fingerprints(report: Report, runs: Sequence[RunRecord]) -> None:
    """Take the dataset hashes and header fingerprints the shards recorded (they agree)."""
    datasets: dict[str, str] = {}
    for run in runs:
        for name, digest in (run.report.datasets if run.report is not None else {}).items():
            datasets.setdefault(name, digest)
    names = {r.file for run in runs for r in run.results}
    datasets = {k: v for k, v in datasets.items() if k in names}
    if datasets or not report.datasets:
        report.datasets = dict(sorted(datasets.items()))
        report.dataset_sha256 = fingerprint(sorted(datasets.items()))
    recorded = [header_fingerprints(run.report) for run in runs]
    for key in FINGERPRINT_KEYS:
        if key in ("report_version", "plugin_version", "runner_fingerprint"):
            continue  # the merged report is made by this plugin from the merged runners
        values = [prints[key] for prints in recorded if key in prints]
        if values:
            setattr(report, key, values[0])


# --------------------------------------------------------------------------------------------
# writing


def write_merged(merged: Merged, runs: Sequence[RunRecord], invocation: Sequence[str]) -> list[str]:
    """Write the merged run dir: reports, a journal of the results, the manifest."""
    writer = merged.writer
    out_dir = writer.run_dir
    artifacts = writer.suite_artifacts(merged.results)
    writes = {*REPORT_FILES, writer.layout.manifest.name, *(name for name, _ in artifacts)}
    try:
        prepare_merge_dir(out_dir, [run.path for run in runs], writes)
    except RunDirError as exc:
        raise MergeError([str(exc)]) from None
    tag_run_dir(out_dir)
    journal = Journal(out_dir, 1, "merge")
    try:
        for result in merged.results:
            row = writer.redactor.value(result.model_dump(mode="json"))
            journal.append(row, merged.runners.get(result.runner_fingerprint))
    finally:
        journal.close()
    if journal.error is not None:  # a journal short of cases must not stand for the merge
        raise journal.error
    ordered = sorted(runs, key=lambda r: (r.shard or (0, 0), str(r.path)))
    first = ordered[0].manifest
    started = sorted(r.manifest.started for r in ordered if r.manifest.started)
    finished = sorted(r.manifest.finished for r in ordered if r.manifest.finished)
    ending = merged.finished.record
    # the page's header: the first shard's start, the shards' time summed
    duration_s = round(sum(float(r.manifest.duration_s or 0) for r in runs), 3)
    facts = merged.finished.facts(started[0] if started else None, duration_s, merged.settings)
    problems = merged.verdict.gate_problems  # unreadable gates: failed rows of summary.md
    written = writer.write(
        merged.results, merged.report, artifacts, gate_problems=problems, facts=facts
    )
    manifest = writer.write_manifest(
        settings=merged.settings,
        invocation=invocation,
        started=started[0] if started else None,
        finished=finished[-1] if finished else None,
        duration_s=duration_s,
        git=first.git,
        environment=first.environment,
        attempt=1,
        artifacts=written,
        interrupted=merged.report.interrupted,
        merged_from=[
            MergedFrom(
                run_dir=str(run.path),
                run_id=run.manifest.run_id,
                shard=list(run.shard) if run.shard else None,
                cases=len(run.results),
                duration_s=run.manifest.duration_s,
            )
            for run in ordered
        ],
        verdict=ending,
    )
    merged.written = written
    leaks = find_leaks([out_dir], writer.redactor.secrets)
    merged.verdict.faults += [
        Fault("leak", f"leak check: a configured secret's value is in {p}") for p in leaks
    ]
    if leaks:  # the merged run dir must not read greener than the merge ends
        ending = merged.record()
        facts = facts.model_copy(update={"verdict": ending})
        writer.rewrite_verdict(manifest, ending, merged.results, merged.report, facts)
    return written


# --------------------------------------------------------------------------------------------
# the command


def merge(out_dir: Path, run_dirs: Sequence[Path], invocation: Sequence[str] = ()) -> Merged:
    """Check, combine and write; raises :class:`MergeError` listing every problem."""
    if not run_dirs:
        raise MergeError(["no run dirs to merge"])
    runs: list[RunRecord] = []
    problems: list[str] = []
    for path in run_dirs:
        try:
            runs.append(load_run(path))
        except MergeError as exc:
            problems += exc.problems
    if problems:
        raise MergeError(problems)
    check = check_shards(runs)
    if check.problems:
        raise MergeError(check.problems)
    merged = combine(runs, out_dir)
    write_merged(merged, runs, invocation or ["merge", str(out_dir), *map(str, run_dirs)])
    return merged


def merge_lines(merged: Merged, shards: int) -> list[str]:
    """What the command prints: the summary, each gate, the decision and the exit status."""
    lines = console.summary_lines(merged.report)
    lines += console.verdict_lines(merged.verdict)
    lines += merged.verdict.faults_of("leak")
    out = merged.writer.run_dir
    lines.append(
        f"llmeval merge: {shards} shard(s), {len(merged.results)} case(s) -> {out}; "
        f"{merged.verdict.gate_decision()}; exit {merged.exit_code}"
    )
    return lines
