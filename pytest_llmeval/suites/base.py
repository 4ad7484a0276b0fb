"""What a suite is, the context it works in, and the registry that finds suites by name.

A suite knows one kind of eval file: it says whether a file is its own (``claims``), turns the
file into cases (``load``), judges one transcript (``score``) and sums results up
(``aggregate``, ``file_artifacts``). Suites never talk to a model and never import pytest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.errors import CaseFileError
from pytest_llmeval.core.fingerprint import canonical_json, sha256_hex
from pytest_llmeval.core.models import CaseResult, CaseScore, EvalCase, Transcript
from pytest_llmeval.inputs.safe_read import read_json
from pytest_llmeval.suites.fields import check_counts
from pytest_llmeval.tools.registry import ToolRegistry

__all__ = [
    "CaseSource",
    "LoadItem",
    "PendingCase",
    "Suite",
    "SuiteContext",
    "SuiteRegistry",
    "base_totals",
    "fallback_case_id",
    "row_fingerprint",
]


@dataclass
class SuiteContext:
    """Session-wide inputs a suite may need; built once per process."""

    settings: Settings
    registry: ToolRegistry = field(default_factory=ToolRegistry)
    seed: Any = None
    """Parsed seed manifest, or ``None`` when the file does not exist."""
    snapshot: Any = None
    """Parsed snapshot, or ``None`` when none is configured."""

    @classmethod
    def from_settings(cls, settings: Settings) -> SuiteContext:
        return cls(
            settings=settings,
            registry=ToolRegistry.load(settings.tool_registry),
            seed=_read_json(settings.seed_manifest, required=False),
            snapshot=_read_json(settings.snapshot, required=True),
        )


def _read_json(path: Path | None, *, required: bool) -> Any:
    """The seed manifest or the snapshot, through the support-file reader (its caps; a
    ConfigError naming ``path:line``); ``None`` when not configured, or optional and absent."""
    if path is None:
        return None
    if not path.exists() and not required:
        return None
    return read_json(path)


@dataclass
class CaseSource:
    """One eval file as a suite sees it."""

    path: Path
    """The data file."""
    display: str
    """The data file relative to the rootdir (``/`` separators), for messages and results."""
    options: dict[str, Any] = field(default_factory=dict)
    """Options from a ``*.llmeval.yaml`` manifest (empty for a file collected on its own)."""


class PendingCase:
    """A parsed row whose id and category are known; its :class:`EvalCase` is built on use.

    Collecting a large file then costs one parse and one id per row. The row's full
    validation runs when the case is first needed (its setup, or the dispatcher's look-ahead),
    and a problem found there is that case's error, with the same ``path:line`` and field.
    Memory is the row itself until then: a few objects per case instead of a built model.
    """

    __slots__ = ("case_id", "category", "line", "make", "marks", "row")

    def __init__(
        self,
        case_id: str,
        line: int,
        category: str | None,
        row: dict[str, Any],
        make: Callable[[int, dict[str, Any]], EvalCase],
        marks: tuple[str, ...] = (),
    ):
        self.case_id = case_id
        self.line = line
        self.category = category
        self.row = row
        self.marks = marks
        """Markers beyond the suite and the category (an integration item's complexity)."""
        self.make = make
        """Shared by the rows of a file: ``make(line, row)`` builds the case or raises
        CaseFileError."""

    def build(self) -> EvalCase:
        case = self.make(self.line, self.row)
        assert case.case_id == self.case_id, "a suite's identify() and its case builder differ"
        check_counts(case)
        return case


LoadItem = EvalCase | PendingCase | CaseFileError
"""What ``Suite.load`` yields per record: a case, a case to build later, or the record's error."""


class Suite(Protocol):
    """A kind of eval file and its rules."""

    name: str

    def claims(self, path: Path, head: bytes) -> bool:
        """Whether a file (of which ``head`` is the first bytes) belongs to this suite."""
        ...

    def load(self, source: CaseSource, ctx: SuiteContext) -> Iterator[LoadItem]:
        """Cases of the file, each knowing its line; a broken record yields its error.

        A suite may yield :class:`PendingCase` for rows whose id it can read cheaply; the
        item builds the case when it is first needed."""
        ...

    def score(self, case: EvalCase, transcript: Transcript, ctx: SuiteContext) -> CaseScore:
        """Judge one transcript. Pure: same inputs, same score."""
        ...

    def aggregate(self, results: Sequence[CaseResult]) -> dict[str, Any]:
        """Dataset metrics of this suite's results (already sorted by node id)."""
        ...

    def file_artifacts(
        self, source: CaseSource, results: Sequence[CaseResult], ctx: SuiteContext, run_id: str
    ) -> dict[str, Any]:
        """Extra per-file artifacts, by file name relative to the run dir (JSON values)."""
        ...

    def console_lines(self, artifacts: dict[str, Any]) -> list[str]:
        """Lines for the terminal summary from this suite's ``file_artifacts``."""
        ...

    # Optional: ``markdown_lines(artifacts) -> list[str]``, a section of ``summary.md`` for
    # one of this suite's ``file_artifacts`` (When2Call's headline and confusion matrix);
    # ``mask_output(text) -> str``, the model's answer as results, junit and reports keep it
    # (the integration suite masks emails, phone numbers and keys); ``shown_expect(case) ->
    # dict``, what results show as the case's expectation when not its whole ``expect``
    # (the integration suite leaves out its scoring config); ``manifest_options``, a
    # mapping of the manifest keys the suite reads beyond the common ones
    # (``pytest_llmeval.inputs.manifest.COMMON_OPTIONS``) to the JSON Schema of each value (``{}``
    # when the suite checks the value itself): a manifest key that neither names is an error.
    # A suite without it is handed whatever keys its manifests hold.


class SuiteRegistry:
    """Suites by name, in the order they are asked to claim files."""

    def __init__(self) -> None:
        self._suites: dict[str, Suite] = {}

    def register(self, suite: Suite) -> None:
        self._suites[suite.name] = suite

    def names(self) -> list[str]:
        return list(self._suites)

    def get(self, name: str) -> Suite | None:
        return self._suites.get(name)

    def claim(self, path: Path, head: bytes) -> Suite | None:
        for suite in self._suites.values():
            if suite.claims(path, head):
                return suite
        return None


def row_fingerprint(suite: str, row: Any) -> str:
    """sha256 of a case row's canonical JSON, salted with the suite name."""
    return sha256_hex(suite + "\n" + canonical_json(row))


def fallback_case_id(row: Any) -> str:
    """A stable id for a row without one: ``h`` + 12 hex digits of its canonical JSON."""
    return "h" + sha256_hex(canonical_json(row))[:12]


def base_totals(results: Sequence[CaseResult]) -> dict[str, Any]:
    """passed / failed / errors / skipped / total / pass_rate (over judged cases)."""
    counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    for result in results:
        counts[result.outcome] += 1
    judged = counts["passed"] + counts["failed"] + counts["error"]
    return {
        "total": len(results),
        "passed": counts["passed"],
        "failed": counts["failed"],
        "errors": counts["error"],
        "skipped": counts["skipped"],
        "pass_rate": round(counts["passed"] / judged, 6) if judged else None,
    }
