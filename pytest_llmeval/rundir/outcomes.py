"""A finished run dir read slim: its manifest, its report and each case's outcome and scores,
without the transcripts.

``runs`` and ``compare`` look at many runs at once and need only what decided each case; a
``results.jsonl`` row is mostly transcript. Reading rows into :class:`CaseOutcome` (pydantic
skips the fields it does not name) is about ten times faster than reading whole
:class:`~pytest_llmeval.core.models.CaseResult` s, so listing runs of 20,000 cases stays quick.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pytest_llmeval.core.errors import RunDirError
from pytest_llmeval.core.models import Outcome
from pytest_llmeval.inputs.regular import NOT_REGULAR, not_regular
from pytest_llmeval.rundir.layout import RunLayout
from pytest_llmeval.rundir.models import Report, RunManifest
from pytest_llmeval.rundir.read import manifest_shard, read_manifest, read_report, read_run

__all__ = ["CaseOutcome", "RunOutcomes", "read_outcomes"]


class CaseOutcome(BaseModel):
    """One case of a run: a ``results.jsonl`` row without its transcript."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    nodeid: str
    """The pytest node id (``path::case_id``)."""
    case_id: str
    suite: str
    file: str
    category: str | None = None
    outcome: Outcome
    """``passed``, ``failed``, ``error`` or ``skipped``."""
    passed: bool
    xfailed: bool = False
    """A miss the case's manifest expects (``misses: xfail``)."""
    scores: dict[str, float] = Field(default_factory=dict)
    error: str | None = None
    """Why it failed, errored or was skipped (the row's ``error``); ``compare`` shows it."""
    case_fingerprint: str = ""
    """sha256 of the case's row; empty for broken input's error item."""
    runner_fingerprint: str = ""
    repeats: dict[str, Any] | None = None


@dataclass
class RunOutcomes:
    """A finished run dir, read slim."""

    path: Path
    manifest: RunManifest
    report: Report
    outcomes: list[CaseOutcome]
    """Sorted by node id."""
    runners: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Runner fingerprint id -> fingerprint (from the report)."""

    @property
    def shard(self) -> tuple[int, int] | None:
        return manifest_shard(self.manifest, self.path)


def read_outcomes(path: Path) -> RunOutcomes:
    """Read the finished run dir at ``path``: :class:`RunDirError` says what is missing or
    wrong (no manifest, no report, a row that is not a result). Without a ``results.jsonl``
    the journal is read (as :func:`~pytest_llmeval.rundir.read.read_run` does)."""
    manifest = read_manifest(path)
    layout = RunLayout(path)
    report = read_report(layout.report)
    if report is None:
        raise RunDirError(
            f"{path}: no report.json (rebuild it: python -m pytest_llmeval summarize {path})"
        )
    if not_regular(layout.results):
        raise RunDirError(f"{layout.results}: {NOT_REGULAR}")
    if layout.results.is_file():
        outcomes = _read_rows(layout.results)
    else:
        record = read_run(path, report_required=True)
        fields = set(CaseOutcome.model_fields)
        outcomes = [
            CaseOutcome.model_validate(r.model_dump(mode="json", include=fields))
            for r in record.results
        ]
    return RunOutcomes(path, manifest, report, outcomes, dict(report.runners))


def _read_rows(results: Path) -> list[CaseOutcome]:
    rows = []
    try:
        with results.open("rb") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    rows.append(CaseOutcome.model_validate_json(line))
                except ValidationError as exc:
                    error = exc.errors()[0]
                    where = ".".join(str(part) for part in error["loc"]) or "(row)"
                    raise RunDirError(
                        f"{results}:{number}: not a result: {where}: {error['msg']}"
                    ) from None
    except OSError as exc:
        raise RunDirError(f"{results}: cannot be read: {exc.strerror or exc}") from None
    return sorted(rows, key=lambda row: row.nodeid)
