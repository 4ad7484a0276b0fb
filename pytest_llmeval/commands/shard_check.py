"""Checking that shard run dirs make one run, before ``merge`` joins them.

The shards of one run (``--llmeval-shard I/N``) are refused (every problem listed) when:

* a run dir is not a shard (no ``shard`` in its ``manifest.json``), or the shards disagree on
  ``N``;
* a shard index of ``0 .. N-1`` is missing or given twice;
* a case is in more than one run dir, or in the run dir of a shard it does not hash to;
* their settings differ in anything that decides results (everything but
  :data:`IGNORED_SETTINGS`, paths compared relative to each run's rootdir);
* their fingerprints differ: :data:`FINGERPRINT_KEYS` of ``report.json`` (the runner, tool
  registry, fixtures ...), or the sha256 of a dataset file two shards both hashed.

``validate-sharding`` checks the same way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_llmeval.core.clip import clip
from pytest_llmeval.core.shards import in_shard
from pytest_llmeval.rundir.models import Report
from pytest_llmeval.rundir.read import RunRecord

__all__ = [
    "FINGERPRINT_KEYS",
    "IGNORED_SETTINGS",
    "MAX_LISTED",
    "ShardCheck",
    "check_shards",
    "comparable_settings",
    "disagreements",
    "fingerprint_differences",
    "header_fingerprints",
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
    mine, yours = header_fingerprints(a.report), header_fingerprints(b.report)
    for key in FINGERPRINT_KEYS:
        if key == "runner_fingerprint" and None in (mine.get(key), yours.get(key)):
            continue  # no cases, or several runners (a conftest may pick one per file)
        if mine.get(key) != yours.get(key):
            out.append(
                f"{key} differs: {_show(mine.get(key))} in {a.label}, "
                f"{_show(yours.get(key))} in {b.label}"
            )
    theirs = b.report.datasets if b.report is not None else {}
    for name, digest in sorted((a.report.datasets if a.report is not None else {}).items()):
        if name in theirs and theirs[name] != digest:
            out.append(
                f"dataset {name} differs: sha256 {_show(digest)} in {a.label}, "
                f"{_show(theirs[name])} in {b.label}"
            )
    return out


def header_fingerprints(report: Report | None) -> dict[str, Any]:
    """The :data:`FINGERPRINT_KEYS` a report has: its typed header fields, and those another
    writer added (kept as the report's extra fields); none without a report."""
    if report is None:
        return {}
    extra = report.model_extra or {}
    return {
        key: getattr(report, key) if key in Report.model_fields else extra[key]
        for key in FINGERPRINT_KEYS
        if key in Report.model_fields or key in extra
    }


def _show(value: Any) -> str:
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else repr(value)
    return clip(text, 80)
