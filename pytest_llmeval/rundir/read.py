"""Reading a run dir back: its manifest, report, results and runner fingerprints.

``summarize``, ``merge``, ``validate-sharding``, baselines and MLflow all read through
:func:`read_run`. Results come from the journal when there is one (so a crashed run can be
read), otherwise from ``results.jsonl``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pytest_llmeval.core.errors import RunDirError, RunDirVersionError
from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.inputs.manifest import SUFFIX
from pytest_llmeval.inputs.regular import NOT_REGULAR, not_regular
from pytest_llmeval.rundir.files import read_json
from pytest_llmeval.rundir.journal import read_results
from pytest_llmeval.rundir.layout import RunLayout
from pytest_llmeval.rundir.models import REPORT_VERSION, Report, RunManifest, RunVerdict

__all__ = [
    "RunRecord",
    "manifest_shard",
    "manifests_named",
    "read_manifest",
    "read_report",
    "read_results_file",
    "read_run",
    "recorded_verdict",
]


@dataclass
class RunRecord:
    """What a run dir holds, read back."""

    path: Path
    manifest: RunManifest
    report: Report | None
    """``None`` when the run dir has no ``report.json`` (a crashed run)."""
    results: list[CaseResult]
    """Sorted by node id."""
    runners: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Runner fingerprint id -> fingerprint, from the journal and the report."""

    @functools.cached_property
    def report_body(self) -> dict[str, Any]:
        """The report as ``report.json`` holds it (``{}`` without one), dumped once."""
        return self.report.dump() if self.report is not None else {}

    @property
    def layout(self) -> RunLayout:
        return RunLayout(self.path)

    @property
    def shard(self) -> tuple[int, int] | None:
        return manifest_shard(self.manifest, self.path)

    @property
    def label(self) -> str:
        shard = self.shard
        return f"shard {shard[0]}/{shard[1]} ({self.path})" if shard else str(self.path)


def read_run(path: Path, *, report_required: bool = False) -> RunRecord:
    """Read the run dir at ``path``; :class:`RunDirError` says what is missing or wrong."""
    layout = RunLayout(path)
    manifest = read_manifest(path)
    report = read_report(layout.report)
    if report is None and report_required:
        raise RunDirError(
            f"{path}: no report.json (rebuild it: python -m pytest_llmeval summarize {path})"
        )
    runners: dict[str, dict[str, Any]] = dict(report.runners) if report is not None else {}
    journaled = read_results(path)
    if journaled:
        results = [journaled[key][0] for key in sorted(journaled)]
        for result, runner in journaled.values():
            if runner and result.runner_fingerprint:
                runners.setdefault(result.runner_fingerprint, runner)
    else:
        results = read_results_file(layout.results)
    return RunRecord(path, manifest, report, results, runners)


def manifests_named(results: Iterable[CaseResult]) -> set[str]:
    """The ``*.llmeval.yaml`` manifests (rootdir-relative) that results read back from a run
    dir were collected through.

    A result records its data file, not its manifest; its node id (``path::case id``, pytest's
    form) starts with the file it was collected from, so that is where a result read back
    says which manifest's gates judge it. A session knows its own cases' manifests."""
    names = set()
    for result in results:
        name = result.nodeid.split("::", 1)[0]
        if name.endswith(SUFFIX):
            names.add(name)
    return names


def read_manifest(path: Path) -> RunManifest:
    """The run dir's ``manifest.json``."""
    value = read_json(RunLayout(path).manifest)
    if not isinstance(value, dict) or "settings" not in value:
        raise RunDirError(f"{path}: no manifest.json with settings; is this a run dir?")
    try:
        manifest = RunManifest.model_validate(value)
    except ValidationError as exc:
        raise RunDirError(f"{path}/manifest.json: {_first_error(exc)}") from None
    manifest_shard(manifest, path)  # a shard of the wrong shape is this run dir's one error
    return manifest


def recorded_verdict(path: Path) -> RunVerdict | None:
    """The verdict the run dir's ``manifest.json`` records (a resume reads the run it
    resumes); ``None`` when it has none or cannot be read (an attempt that never finished)."""
    try:
        value = read_json(RunLayout(path).manifest)
        recorded = value.get("verdict") if isinstance(value, dict) else None
        return RunVerdict.model_validate(recorded) if recorded is not None else None
    except (RunDirError, ValidationError):
        return None


def manifest_shard(manifest: RunManifest, path: Path) -> tuple[int, int] | None:
    """The run's ``(k, n)`` shard from its manifest (``shard`` or ``settings.shard``), or
    ``None``; :class:`RunDirError` naming the field when it is not two whole numbers
    ``0 <= k < n`` (``settings`` is free-form, so nothing else checks it)."""
    for name, value in (
        ("shard", manifest.shard),
        ("settings.shard", manifest.settings.get("shard")),
    ):
        if value is None or value == []:
            continue
        if (
            isinstance(value, list)
            and len(value) == 2
            and all(isinstance(part, int) and not isinstance(part, bool) for part in value)
            and 0 <= value[0] < value[1]
        ):
            return value[0], value[1]
        raise RunDirError(
            f"{path}/manifest.json: {name}: expected [K, N] with 0 <= K < N, got {value!r:.60}"
        )
    return None


def read_report(path: Path) -> Report | None:
    """A ``report.json``; ``None`` when there is none. Another major version is an error."""
    value = read_json(path)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise RunDirError(f"{path}: expected a JSON object")
    check_version(value, path)
    try:
        return Report.model_validate(value)
    except ValidationError as exc:
        raise RunDirError(f"{path}: {_first_error(exc)}") from None


def check_version(body: dict[str, Any], path: Path) -> None:
    """Refuse a report of another major ``report_version`` (one without it is read as ours)."""
    version = body.get("report_version", REPORT_VERSION)
    if not isinstance(version, str) or version.split(".")[0] != REPORT_VERSION.split(".")[0]:
        raise RunDirVersionError(
            f"{path}: report_version {version!r} cannot be read by this plugin (it reads "
            f"{REPORT_VERSION.split('.')[0]}.x); rebuild the run dir with the plugin version "
            "that wrote it, or run it again"
        )


def read_results_file(path: Path) -> list[CaseResult]:
    """The results of a ``results.jsonl``, sorted by node id (none when it is missing)."""
    if not_regular(path):
        raise RunDirError(f"{path}: {NOT_REGULAR}")
    try:
        rows = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise RunDirError(f"{path}: cannot be read: {exc}") from None
    results = []
    for number, row in enumerate(rows, 1):
        if not row.strip():
            continue
        try:
            results.append(CaseResult.model_validate_json(row))
        except ValueError as exc:
            raise RunDirError(f"{path}:{number}: {exc}") from None
    return sorted(results, key=lambda r: r.nodeid)


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "(top)"
    return f"{where}: {error['msg']}"
