"""What a suite is, the context it works in, and the registry that finds suites by name.

A suite knows one kind of eval file: it says whether a file is its own (``claims``), turns the
file into cases (``load``), judges one transcript (``score``) and sums results up
(``aggregate``). Suites never talk to a model and never import pytest.

Those four and a ``name`` are the :class:`Suite` protocol. Everything else a suite may offer
(its typed report section, manifest options, per-file artifacts and their terminal and
``summary.md`` lines, output masking, the expectation results show, its score names, the
metrics a manifest's options leave out) is
declared with its default on :class:`SuiteBase`, which the built-in suites subclass. A suite
that implements only the protocol is wrapped in a :class:`ProtocolSuite` when it is
registered, so every suite the registry hands out has every member.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.errors import CaseFileError
from pytest_llmeval.core.fingerprint import canonical_json, sha256_hex
from pytest_llmeval.core.models import CaseResult, CaseScore, EvalCase, Transcript
from pytest_llmeval.inputs.safe_read import read_json
from pytest_llmeval.rundir.models import SuiteSection
from pytest_llmeval.suites.fields import check_counts
from pytest_llmeval.tools.registry import ToolRegistry

__all__ = [
    "AbsentMetrics",
    "CaseSource",
    "CollectedData",
    "LoadItem",
    "PendingCase",
    "ProtocolSuite",
    "Suite",
    "SuiteBase",
    "SuiteContext",
    "SuiteRegistry",
    "artifact_name",
    "base_totals",
    "display_stem",
    "fallback_case_id",
    "path_tag",
    "row_fingerprint",
]


@dataclass(frozen=True)
class AbsentMetrics:
    """The metrics a suite leaves ``null`` for every case of a file under its manifest's
    options (When2Call's ``acc_norm`` under ``protocol: mcq-string``): a gate on one of them
    could never be judged, so it is a usage error before any case."""

    setting: str
    """The option that decides it, as the manifest writes it (``protocol: mcq-string``)."""
    metrics: frozenset[str]
    """The metric paths left ``null``."""
    fix: str
    """What to change instead, in a few words (``gate on acc, or use protocol: mcq-loglik``)."""


@dataclass
class CollectedData:
    """What the session read of each data file at collection, by its path relative to the
    rootdir: report.json's ``datasets`` records these hashes, of the bytes the cases were
    judged on, not of the file as it is when the run ends."""

    hashes: dict[str, str] = field(default_factory=dict)
    """sha256 of the bytes collected."""
    changed: dict[str, str] = field(default_factory=dict)
    """Data files whose bytes changed while the run used them -> what happened."""

    def add(self, name: str, digest: str) -> None:
        """One process's hash of ``name`` as it collected it (xdist workers each send theirs)."""
        if self.hashes.setdefault(name, digest) != digest:
            self.changed.setdefault(
                name,
                "changed between the xdist workers' collections: its cases were judged "
                "on different contents",
            )


@dataclass
class SuiteContext:
    """Session-wide inputs a suite may need; built once per process."""

    settings: Settings
    registry: ToolRegistry = field(default_factory=ToolRegistry)
    seed: Any = None
    """Parsed seed manifest, or ``None`` when the file does not exist."""
    snapshot: Any = None
    """Parsed snapshot, or ``None`` when none is configured."""
    runner_model: str | None = None
    """The ``model`` named by the fingerprint of the plugin's runner (``--llmeval-runner``),
    for a case built from the model's name (When2Call's ``prompt_format: auto`` without
    ``--llmeval-model``); ``None`` when it names none, or when no case runs with the plugin's
    runner (a user's agent fixture, whose model is known only once a case runs: the plugin
    refuses ``auto`` there at the start). The plugin sets it once per process, before any
    case is built, so every case of the process gets the same answer."""
    collected: CollectedData = field(default_factory=CollectedData)
    """The data files' hashes as this session collected them (filled by the plugin)."""

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
    tag: str | None = None
    """A short hash of ``display`` (:func:`path_tag`), set when this file's per-file artifact
    would take another file's name in the same run: :func:`artifact_name` adds it."""


def path_tag(display: str, length: int = 8) -> str:
    """A short, stable hash of a data file's path relative to the rootdir: the same on every
    machine and under any number of xdist workers."""
    return sha256_hex(display.encode("utf-8"))[:length]


def display_stem(source: CaseSource) -> str:
    """``source``'s path relative to the rootdir, without its extension, every character but
    letters, digits, ``.``, ``-`` and ``_`` made ``_`` (``evals/a b.jsonl`` -> ``evals_a_b``):
    readable, but not unique on its own (``a/x.jsonl`` and ``a_x.jsonl`` meet); the run
    writer gives such files a :attr:`CaseSource.tag`."""
    return re.sub(r"[^\w.-]+", "_", source.display.rsplit(".", 1)[0])


def artifact_name(folder: str, stem: str, source: CaseSource) -> str:
    """A per-file artifact's name in the run dir: ``<folder>/<stem>.json``, or
    ``<folder>/<stem>.<tag>.json`` when another file of the run would take that name."""
    return f"{folder}/{stem}.{source.tag}.json" if source.tag else f"{folder}/{stem}.json"


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
    """What a suite must have: a name, and the four members that claim, load, score and sum up
    its files. Its optional members, with their defaults, are :class:`SuiteBase`'s."""

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


class SuiteBase(ABC):
    """A suite with every optional member declared, at its default.

    Every built-in suite subclasses it, and so may a third party's. A suite that implements
    only the :class:`Suite` protocol is wrapped by :meth:`SuiteRegistry.register` in a
    :class:`ProtocolSuite`, which takes the optional members it defines and these defaults
    for the rest; so what the registry hands out always has every member, and its readers
    call them directly.
    """

    name: str

    section_model: ClassVar[type[SuiteSection]] = SuiteSection
    """The model of this suite's ``report.json`` section: its ``aggregate`` is validated
    into it, and gates are checked against its fields."""
    manifest_options: ClassVar[Mapping[str, Mapping[str, Any]] | None] = None
    """The manifest keys the suite reads beyond the common ones
    (``pytest_llmeval.inputs.manifest.COMMON_OPTIONS``), each to the JSON Schema of its value
    (``{}`` when the suite checks the value itself): a manifest key that neither names is an
    error. ``None``: the suite is handed whatever keys its manifests hold."""

    data_folder: ClassVar[bool] = False
    """Whether a manifest's ``data`` names a data *folder* the suite reads (BFCL's official
    layout) and may be left out (the suite's default data); otherwise it names one file."""

    own_gates: ClassVar[bool] = False
    """Whether the suite judges gates of its own (its aggregate's ``gates``), so that
    ``--llmeval-exit-on gates`` has something to decide by without a gate being given."""

    @abstractmethod
    def claims(self, path: Path, head: bytes) -> bool:
        """Whether a file (of which ``head`` is the first bytes) belongs to this suite."""

    @abstractmethod
    def load(self, source: CaseSource, ctx: SuiteContext) -> Iterator[LoadItem]:
        """Cases of the file, each knowing its line (see :meth:`Suite.load`)."""

    @abstractmethod
    def score(self, case: EvalCase, transcript: Transcript, ctx: SuiteContext) -> CaseScore:
        """Judge one transcript. Pure: same inputs, same score."""

    @abstractmethod
    def aggregate(self, results: Sequence[CaseResult]) -> dict[str, Any]:
        """Dataset metrics of this suite's results (already sorted by node id)."""

    def file_artifacts(
        self, source: CaseSource, results: Sequence[CaseResult], ctx: SuiteContext, run_id: str
    ) -> dict[str, Any]:
        """Extra per-file artifacts, by file name relative to the run dir (JSON values); by
        default none."""
        return {}

    def console_lines(self, artifacts: dict[str, Any]) -> list[str]:
        """Lines for the terminal summary from one of this suite's ``file_artifacts``; by
        default none."""
        return []

    def markdown_lines(self, artifacts: dict[str, Any]) -> list[str] | None:
        """A section of ``summary.md`` for one of this suite's ``file_artifacts`` (When2Call's
        headline and confusion matrix); ``None`` (the default) for no section."""
        return None

    def mask_output(self, text: str) -> str:
        """The model's answer as results, junit and reports keep it (the integration suite
        masks emails, phone numbers and keys); by default the answer as it is."""
        return text

    def shown_expect(self, case: EvalCase) -> dict[str, Any]:
        """What results show as the case's expectation (the integration suite leaves out its
        scoring config); by default the case's whole ``expect``."""
        return case.expect

    def score_names(self) -> tuple[frozenset[str], tuple[str, ...]] | None:
        """The names the suite's ``mean_scores`` can hold and the prefixes of the rest, so a
        gate on another name is told to be a typo; ``None`` (the default) when they are not
        known in advance."""
        return None

    def absent_metrics(self, options: Mapping[str, Any]) -> AbsentMetrics | None:
        """The metrics this suite cannot produce for a file whose manifest has ``options``
        (its own keys, as written), so a gate on one is refused at the start; ``None`` (the
        default) when the options decide no such thing."""
        return None


class ProtocolSuite(SuiteBase):
    """A suite that implements only the :class:`Suite` protocol, as a :class:`SuiteBase`: the
    four members it must have are forwarded, and each optional member is the suite's own when
    it defines one (found once, here, when it is registered), else the default."""

    def __init__(self, suite: Suite):
        self.suite = suite
        """The suite as it was registered."""
        self.name = suite.name
        # the one place a suite's optional members are looked up by name: a protocol-only
        # suite declares none of them; per wrapped suite, so set on the instance
        self.section_model = getattr(suite, "section_model", SuiteSection)  # type: ignore[misc]
        self.manifest_options = getattr(suite, "manifest_options", None)  # type: ignore[misc]
        self.own_gates = getattr(suite, "own_gates", False) is True  # type: ignore[misc]
        self.data_folder = getattr(suite, "data_folder", False) is True  # type: ignore[misc]
        self._own: dict[str, Callable[..., Any]] = {
            name: member
            for name in _OPTIONAL_METHODS
            if callable(member := getattr(suite, name, None))
        }

    def claims(self, path: Path, head: bytes) -> bool:
        return self.suite.claims(path, head)

    def load(self, source: CaseSource, ctx: SuiteContext) -> Iterator[LoadItem]:
        return self.suite.load(source, ctx)

    def score(self, case: EvalCase, transcript: Transcript, ctx: SuiteContext) -> CaseScore:
        return self.suite.score(case, transcript, ctx)

    def aggregate(self, results: Sequence[CaseResult]) -> dict[str, Any]:
        return self.suite.aggregate(results)

    def file_artifacts(
        self, source: CaseSource, results: Sequence[CaseResult], ctx: SuiteContext, run_id: str
    ) -> dict[str, Any]:
        own = self._own.get("file_artifacts")
        if own is None:
            return super().file_artifacts(source, results, ctx, run_id)
        return dict(own(source, results, ctx, run_id))

    def console_lines(self, artifacts: dict[str, Any]) -> list[str]:
        own = self._own.get("console_lines")
        return list(own(artifacts)) if own is not None else super().console_lines(artifacts)

    def markdown_lines(self, artifacts: dict[str, Any]) -> list[str] | None:
        own = self._own.get("markdown_lines")
        return list(own(artifacts)) if own is not None else super().markdown_lines(artifacts)

    def mask_output(self, text: str) -> str:
        own = self._own.get("mask_output")
        return str(own(text)) if own is not None else super().mask_output(text)

    def shown_expect(self, case: EvalCase) -> dict[str, Any]:
        own = self._own.get("shown_expect")
        return dict(own(case)) if own is not None else super().shown_expect(case)

    def score_names(self) -> tuple[frozenset[str], tuple[str, ...]] | None:
        own = self._own.get("score_names")
        return own() if own is not None else super().score_names()

    def absent_metrics(self, options: Mapping[str, Any]) -> AbsentMetrics | None:
        own = self._own.get("absent_metrics")
        return own(options) if own is not None else super().absent_metrics(options)


_OPTIONAL_METHODS = (
    "file_artifacts",
    "console_lines",
    "markdown_lines",
    "mask_output",
    "shown_expect",
    "score_names",
    "absent_metrics",
)
"""The optional members of :class:`SuiteBase` that are methods."""


class SuiteRegistry:
    """Suites by name, in the order they are asked to claim files."""

    def __init__(self) -> None:
        self._suites: dict[str, SuiteBase] = {}

    def register(self, suite: Suite | SuiteBase) -> None:
        """Add ``suite``; one that only implements the :class:`Suite` protocol is wrapped in a
        :class:`ProtocolSuite`."""
        held = suite if isinstance(suite, SuiteBase) else ProtocolSuite(suite)
        self._suites[held.name] = held

    def names(self) -> list[str]:
        return list(self._suites)

    def get(self, name: str) -> SuiteBase | None:
        return self._suites.get(name)

    def claim(self, path: Path, head: bytes) -> SuiteBase | None:
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
