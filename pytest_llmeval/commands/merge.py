"""Joining the run dirs of a sharded run (``--llmeval-shard I/N``) into one run dir.

``python -m pytest_llmeval merge OUT_DIR RUN_DIR...`` takes the run dir of every shard of one
run and writes ``OUT_DIR`` as the run dir of the unsharded run would be: the results of every
shard, sorted by node id, and ``report.json`` / ``summary.md`` / ``report.html`` /
``events.jsonl`` rebuilt through :class:`~pytest_llmeval.report.run.RunWriter` (timings aside,
the same files an unsharded run writes). The gates are judged once, on the merged report, and
the merge exits with the one status the unsharded session would have had.

The merge refuses (:class:`MergeError`, every problem listed) when the shards do not make one
run:

* a run dir is not a shard (no ``shard`` in its ``manifest.json``), or the shards disagree on
  ``N``;
* a shard index of ``0 .. N-1`` is missing or given twice;
* a case is in more than one run dir, or in the run dir of a shard it does not hash to;
* their settings differ in anything that decides results (everything but
  :data:`IGNORED_SETTINGS`, paths compared relative to each run's rootdir);
* their fingerprints differ: :data:`FINGERPRINT_KEYS` of ``report.json`` (the runner, tool
  registry, fixtures ...), or the sha256 of a dataset file two shards both hashed.

Where each value comes from:

* results: a run dir's journal when it has one (results with their events and runner
  fingerprints, as ``summarize`` reads them), else its ``results.jsonl``;
* fingerprints (``datasets``, ``dataset_sha256``, ``runners``, :data:`FINGERPRINT_KEYS`): the
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

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.errors import LLMEvalError, RunDirError
from pytest_llmeval.core.fingerprint import fingerprint
from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.core.redact import Redactor, find_leaks, secret_values
from pytest_llmeval.core.shards import in_shard
from pytest_llmeval.report import console, verdict
from pytest_llmeval.report.verdict import Fault
from pytest_llmeval.report.writer import RunWriter
from pytest_llmeval.rundir.claim import prepare_merge_dir
from pytest_llmeval.rundir.files import tag_run_dir
from pytest_llmeval.rundir.journal import Journal
from pytest_llmeval.rundir.models import Interrupted, MergedFrom, Report
from pytest_llmeval.rundir.read import RunRecord, read_run
from pytest_llmeval.suites.base import SuiteContext
from pytest_llmeval.suites.builtin import builtin_suites

__all__ = [
    "FINGERPRINT_KEYS",
    "IGNORED_SETTINGS",
    "MAX_LISTED",
    "MergeError",
    "Merged",
    "ShardCheck",
    "check_shards",
    "combine",
    "comparable_settings",
    "disagreements",
    "fingerprint_differences",
    "load_run",
    "merge",
    "merge_lines",
    "write_merged",
]

IGNORED_SETTINGS = frozenset(
    {
        "rootdir",
        "shard",
        "run_dir",
        "output_root",
        "resume",
        "update_baseline",
        "concurrency",
        "hash_scheduling",
        "batch_size",
        "max_connections",
        "rate_limit",
        "mlflow",
        "mlflow_experiment",
    }
)
"""Settings that may differ between shards: where a run writes and logs, how fast it goes.
Every other setting (runner, model, decoding, fixtures, tool registry, cassettes, gates,
``exit_on`` ...) must be the same in every shard."""

FINGERPRINT_KEYS = (
    "report_version",
    "plugin_version",
    "runner_fingerprint",
    "tool_registry_sha256",
    "fixtures_sha256",
    "tokenizer_fingerprint",
    "model_fingerprint",
    "prompt_wrapper_sha256",
)
"""``report.json`` header keys every shard must agree on (when a shard has them)."""

MAX_LISTED = 20
"""Duplicate or misplaced cases a refusal lists one by one before "... and N more"."""


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
# checking that the shards make one run


@dataclass
class ShardCheck:
    """What is wrong with a set of shard run dirs (nothing, when ``problems`` is empty)."""

    count: int | None = None
    """N, when the shards agree on it."""
    missing_shards: list[int] = field(default_factory=list)
    repeated_shards: list[int] = field(default_factory=list)
    duplicates: dict[str, list[str]] = field(default_factory=dict)
    """Node id -> the run dirs that hold it, for cases in more than one."""
    misplaced: list[str] = field(default_factory=list)
    """Cases in the run dir of a shard they do not hash to."""
    mismatches: list[str] = field(default_factory=list)
    """Settings and fingerprints the shards disagree on."""
    problems: list[str] = field(default_factory=list)
    """Every problem above (and more), as messages."""

    @property
    def coverage_ok(self) -> bool:
        return not (
            self.missing_shards or self.repeated_shards or self.duplicates or self.misplaced
        )


def check_shards(runs: Sequence[RunRecord], count: int | None = None) -> ShardCheck:
    """Check that ``runs`` are the shards ``0/N .. N-1/N`` of one run, each once.

    ``count`` (N) is taken from the shards unless given.
    """
    check = ShardCheck()
    if not runs:
        check.problems.append("no run dirs to merge")
        return check
    sharded = [run for run in runs if run.shard is not None]
    for run in runs:
        if run.shard is None:
            check.problems.append(
                f"{run.path}: not a shard run dir (its manifest.json has no shard; "
                "was it run with --llmeval-shard I/N?)"
            )
    counts = sorted({run.shard[1] for run in sharded if run.shard is not None})
    if count is None and len(counts) == 1:
        count = counts[0]
    if count is None or any(c != count for c in counts):
        if counts:
            shown = ", ".join(run.label for run in sharded)
            check.problems.append(f"the shards are not of one split into N: {shown}")
    else:
        check.count = count
        by_index: dict[int, list[RunRecord]] = {}
        for run in sharded:
            assert run.shard is not None
            by_index.setdefault(run.shard[0], []).append(run)
        check.missing_shards = [i for i in range(count) if i not in by_index]
        check.repeated_shards = sorted(i for i, group in by_index.items() if len(group) > 1)
        given = ", ".join(f"{i}/{count}" for i in sorted(by_index)) or "none"
        for index in check.missing_shards:
            check.problems.append(f"shard {index}/{count} is missing (given: {given})")
        for index in check.repeated_shards:
            dirs = ", ".join(str(run.path) for run in by_index[index])
            check.problems.append(f"shard {index}/{count} is given more than once: {dirs}")
    holders: dict[str, list[str]] = {}
    misplaced: list[str] = []
    for run in runs:
        for result in run.results:
            holders.setdefault(result.nodeid, []).append(run.label)
            shard = run.shard
            if shard is not None and not in_shard(result.nodeid, *shard):
                check.misplaced.append(result.nodeid)
                misplaced.append(
                    f"case {result.nodeid} is in the run dir of {run.label} "
                    "but does not hash to that shard"
                )
    check.duplicates = {k: v for k, v in sorted(holders.items()) if len(v) > 1}
    check.problems += _capped(misplaced, "misplaced case(s)")
    check.problems += _capped(
        [f"duplicate case {k}: in {' and '.join(v)}" for k, v in check.duplicates.items()],
        "duplicate case(s)",
    )
    check.mismatches = disagreements(runs)
    check.problems += check.mismatches
    return check


def _capped(lines: list[str], what: str) -> list[str]:
    if len(lines) <= MAX_LISTED:
        return lines
    return [*lines[:MAX_LISTED], f"... and {len(lines) - MAX_LISTED} more {what}"]


def disagreements(runs: Sequence[RunRecord]) -> list[str]:
    """Settings and fingerprints on which some run dir differs from the first one."""
    if len(runs) < 2:
        return []
    first = runs[0]
    out: list[str] = []
    base_settings = comparable_settings(first)
    for run in runs[1:]:
        theirs = comparable_settings(run)
        for key in sorted(set(base_settings) | set(theirs)):
            if base_settings.get(key) != theirs.get(key):
                out.append(
                    f"setting {key} differs: {_show(base_settings.get(key))} in {first.label}, "
                    f"{_show(theirs.get(key))} in {run.label}"
                )
        out += fingerprint_differences(first, run)
    return out


def comparable_settings(run: RunRecord) -> dict[str, Any]:
    """The settings that decide results; paths under the rootdir are made relative to it."""
    settings = run.manifest.settings
    rootdir = str(settings.get("rootdir") or "")
    return {
        key: _relative(value, rootdir)
        for key, value in settings.items()
        if key not in IGNORED_SETTINGS
    }


def _relative(value: Any, rootdir: str) -> Any:
    if isinstance(value, str) and rootdir:
        if value == rootdir:
            return "<rootdir>"
        if value.startswith(rootdir.rstrip("/") + "/"):
            return "<rootdir>/" + value[len(rootdir.rstrip("/")) + 1 :]
    if isinstance(value, list):
        return [_relative(v, rootdir) for v in value]
    if isinstance(value, dict):
        return {k: _relative(v, rootdir) for k, v in value.items()}
    return value


def fingerprint_differences(a: RunRecord, b: RunRecord) -> list[str]:
    """The fingerprints of two run dirs' reports that differ.

    The runner is compared when both runs used exactly one (a run with no cases has none);
    dataset files are compared where both runs hashed them (a shard only hashes the files its
    cases come from).
    """
    out: list[str] = []
    mine, yours = a.report_body, b.report_body
    keys = [k for k in FINGERPRINT_KEYS if k in mine or k in yours]
    for key in keys:
        if key == "runner_fingerprint" and None in (mine.get(key), yours.get(key)):
            continue  # no cases, or several runners (a conftest may pick one per file)
        if mine.get(key) != yours.get(key):
            out.append(
                f"{key} differs: {_show(mine.get(key))} in {a.label}, "
                f"{_show(yours.get(key))} in {b.label}"
            )
    theirs = yours.get("datasets") or {}
    for name, digest in sorted((mine.get("datasets") or {}).items()):
        if name in theirs and theirs[name] != digest:
            out.append(
                f"dataset {name} differs: sha256 {_show(digest)} in {a.label}, "
                f"{_show(theirs[name])} in {b.label}"
            )
    return out


def _show(value: Any) -> str:
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# --------------------------------------------------------------------------------------------
# combining


@dataclass
class Merged:
    """The merged run: results, report and its verdict."""

    settings: Settings
    writer: RunWriter
    results: list[CaseResult]
    runners: dict[str, dict[str, Any]]
    report: Report
    verdict: verdict.Verdict
    written: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0 or 1, as the unsharded session would exit (``--llmeval-exit-on`` included)."""
        return self.verdict.exit_code(self.results, self.settings.exit_on)


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
    report.deselected = _deselected(earlier)
    report.interrupted = _interrupted(earlier, results)
    gates, problems = verdict.gather_gates(settings, results, earlier)
    judged = verdict.judge(report, results, settings, gates, problems)
    return Merged(settings, writer, results, runners, report, judged)


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
        for name, digest in run.report_body.get("datasets", {}).items():
            datasets.setdefault(name, digest)
    names = {r.file for run in runs for r in run.results}
    datasets = {k: v for k, v in datasets.items() if k in names}
    if datasets or not report.datasets:
        report.datasets = dict(sorted(datasets.items()))
        report.dataset_sha256 = fingerprint(sorted(datasets.items()))
    for key in FINGERPRINT_KEYS:
        if key in ("report_version", "plugin_version", "runner_fingerprint"):
            continue  # the merged report is made by this plugin from the merged runners
        values = [run.report_body[key] for run in runs if key in run.report_body]
        if values:
            setattr(report, key, values[0])


# --------------------------------------------------------------------------------------------
# writing


def write_merged(merged: Merged, runs: Sequence[RunRecord], invocation: Sequence[str]) -> list[str]:
    """Write the merged run dir: reports, a journal of the results, the manifest."""
    writer = merged.writer
    out_dir = writer.run_dir
    try:
        prepare_merge_dir(out_dir, [run.path for run in runs])
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
    written = writer.write(merged.results, merged.report, writer.suite_artifacts(merged.results))
    ordered = sorted(runs, key=lambda r: (r.shard or (0, 0), str(r.path)))
    first = ordered[0].manifest
    started = sorted(r.manifest.started for r in ordered if r.manifest.started)
    finished = sorted(r.manifest.finished for r in ordered if r.manifest.finished)
    writer.write_manifest(
        settings=merged.settings,
        invocation=invocation,
        started=started[0] if started else None,
        finished=finished[-1] if finished else None,
        duration_s=round(sum(float(r.manifest.duration_s or 0) for r in runs), 3),
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
    )
    merged.written = written
    leaks = find_leaks([out_dir], writer.redactor.secrets)
    merged.verdict.faults += [
        Fault("leak", f"leak check: a configured secret's value is in {p}") for p in leaks
    ]
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
    lines = console.summary_lines(merged.report.dump())
    lines += console.verdict_lines(merged.verdict)
    lines += merged.verdict.faults_of("leak")
    out = merged.writer.run_dir
    lines.append(
        f"llmeval merge: {shards} shard(s), {len(merged.results)} case(s) -> {out}; "
        f"{merged.verdict.gate_decision()}; exit {merged.exit_code}"
    )
    return lines
