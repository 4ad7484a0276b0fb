"""The baseline file format: reading a baseline (a run dir or a baseline file), writing one,
and :class:`BaselineCase`, the one case type the diff compares.

A baseline is either a run dir (``report.json`` + ``results.jsonl``, ``manifest.json`` for the
run id when present) or one baseline file written by :func:`write_baseline`::

    {
      "baseline_version": 1,
      "run_id": "20261121T220516Z_10f5c31c9cd1",          # or null
      "report": { ... the run's report.json ... },
      "results": [                                          # sorted by nodeid
        {"case_id", "suite", "file", "nodeid", "category", "outcome", "passed",
         "case_fingerprint", "runner_fingerprint", "scores"}
      ]
    }

A run's own results become baseline cases at the edge, with :meth:`BaselineCase.of`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pytest_llmeval.core.errors import ConfigError, FingerprintMismatch, RunDirError
from pytest_llmeval.core.models import CaseResult, Outcome
from pytest_llmeval.inputs import safe_read
from pytest_llmeval.rundir.claim import folder_lock
from pytest_llmeval.rundir.files import read_json, write_json
from pytest_llmeval.rundir.read import check_version

__all__ = [
    "ALLOW_MISMATCH_FLAG",
    "BASELINE_VERSION",
    "UPDATE_FLAG",
    "Baseline",
    "BaselineCase",
    "BaselineError",
    "check_replaceable",
    "load_baseline",
    "not_blessed",
    "read_baseline",
    "subset_of",
    "write_baseline",
]

BASELINE_VERSION = 1
"""The ``baseline_version`` this module writes and reads."""

ALLOW_MISMATCH_FLAG = "--llmeval-baseline-allow-mismatch"
UPDATE_FLAG = "--llmeval-update-baseline"


class BaselineError(ConfigError, ValueError):
    """A baseline path that cannot be read: missing, not JSON, or not a baseline."""


class BaselineCase(BaseModel):
    """One case of a baseline: what the diff needs from a ``results.jsonl`` row."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    case_id: str
    """The case id, unique within its file."""
    suite: str
    """The suite that ran the case."""
    file: str
    """The case file, relative to the rootdir."""
    nodeid: str
    """The pytest node id (``path::case_id``): the first alignment key."""
    category: str | None = None
    """The case's category, when it has one."""
    outcome: Outcome
    """``passed``, ``failed``, ``error`` or ``skipped``."""
    passed: bool
    """Whether the case passed."""
    case_fingerprint: str = ""
    """sha256 of the case's canonical JSON; a different one makes the pair ``changed``."""
    runner_fingerprint: str = ""
    """The runner that produced the transcript."""
    scores: dict[str, float] = Field(default_factory=dict)
    """The case's named metrics."""
    repeats: dict[str, Any] | None = None
    """With repeats: the runs' pass rate and its Wilson interval (``low``, ``high``)."""

    @classmethod
    def of(cls, result: CaseResult) -> BaselineCase:
        """What a baseline keeps of one of this run's results (its JSON values: the form a
        baseline file holds, so a case read back compares equal)."""
        return cls.model_validate(result.model_dump(mode="json", include=set(cls.model_fields)))


class Baseline(BaseModel):
    """A loaded baseline: a previous run's report and its cases."""

    model_config = ConfigDict(extra="forbid")

    source: str
    """The path it was read from (a run dir or a baseline file)."""
    run_id: str | None = None
    """The baseline run's id, when known."""
    report: dict[str, Any]
    """The baseline run's ``report.json`` body."""
    results: list[BaselineCase]
    """Its cases, sorted by node id."""
    subset: str | None = None
    """Why the baseline run judged only part of its cases (cut short, cases left out, a
    shard); such a baseline is compared only with ``--llmeval-baseline-allow-mismatch``."""


def read_baseline(path: Path | str | None) -> Baseline | str | None:
    """The baseline at ``path`` (``--llmeval-baseline``) for the verdict to compare with, or
    why it cannot be used (the comparison is then refused); ``None`` when no baseline is set."""
    if path is None:
        return None
    try:
        return load_baseline(path)
    except (FingerprintMismatch, ValueError) as exc:
        return str(exc)


def load_baseline(path: Path | str) -> Baseline:
    """Read a run dir or a baseline file; :class:`BaselineError` (a ``ValueError``) if unusable.

    A ``report.json`` without ``baseline_version`` next to a ``results.jsonl`` is read as its
    run dir.
    """
    path = Path(path)
    if path.is_dir():
        return _load_run_dir(path)
    if not path.is_file():
        raise BaselineError(
            f"baseline {path}: no such file or directory; expected a run dir (with report.json "
            f"and results.jsonl) or a baseline file written by {UPDATE_FLAG}"
        )
    body = _read_json(path)
    if not isinstance(body, dict):
        raise BaselineError(f"baseline {path}: expected a JSON object")
    if "baseline_version" not in body:
        if "suites" in body and (path.parent / "results.jsonl").is_file():
            return _load_run_dir(path.parent)
        raise BaselineError(
            f"baseline {path}: not a baseline file (no baseline_version) and no results.jsonl "
            f"beside it; expected a run dir or a file written by {UPDATE_FLAG}"
        )
    version = body["baseline_version"]
    if version != BASELINE_VERSION:
        raise BaselineError(
            f"baseline {path}: baseline_version {version!r} is not supported "
            f"(this plugin reads {BASELINE_VERSION}); re-create it with {UPDATE_FLAG}"
        )
    report = body.get("report")
    if not isinstance(report, dict):
        raise BaselineError(f"baseline {path}: report: expected a JSON object")
    rows = body.get("results")
    if not isinstance(rows, list):
        raise BaselineError(f"baseline {path}: results: expected a JSON array")
    cases = [_case(row, f"{path}: results[{i}]") for i, row in enumerate(rows)]
    run_id = body.get("run_id")
    return Baseline(
        source=str(path),
        run_id=run_id if isinstance(run_id, str) else None,
        report=report,
        results=sorted(cases, key=lambda c: c.nodeid),
        subset=subset_of(report),
    )


def write_baseline(
    path: Path | str,
    report: Mapping[str, Any],
    results: Iterable[BaselineCase],
    *,
    run_id: str | None = None,
) -> None:
    """Write a baseline file atomically (temp file + ``os.replace``), keys sorted."""
    path = Path(path)
    if path.is_dir():
        raise BaselineError(
            f"baseline {path}: is a directory; give a file name such as baseline.json"
        )
    cases = sorted(results, key=lambda c: c.nodeid)
    body = {
        "baseline_version": BASELINE_VERSION,
        "run_id": run_id,
        "report": dict(report),
        "results": [case.model_dump(mode="json") for case in cases],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with folder_lock(path.parent):  # sessions blessing one file take turns; each file whole
        check_replaceable(path)
        write_json(path, body)


def check_replaceable(path: Path) -> None:
    """A file already at ``path`` is replaced only when it is a baseline file (checked when
    the session starts, and again under the lock when it writes)."""
    if path.is_dir():
        raise BaselineError(
            f"baseline {path}: is a directory; give a file name such as baseline.json"
        )
    if not path.exists():
        return
    if safe_read.not_regular(path):
        raise BaselineError(f"baseline {path}: {safe_read.NOT_REGULAR}")
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError as exc:
        raise BaselineError(f"baseline {path}: cannot be read: {exc.strerror}") from None
    if b'"baseline_version"' not in head:  # keys are sorted: it comes first
        raise BaselineError(
            f"baseline {path}: exists and is not a baseline file; not writing over it "
            f"(give {UPDATE_FLAG} a new file name)"
        )


def _load_run_dir(path: Path) -> Baseline:
    report_path, results_path = path / "report.json", path / "results.jsonl"
    for needed in (report_path, results_path):
        if not needed.is_file():
            raise BaselineError(
                f"baseline {path}: no {needed.name}; expected a run dir (with report.json and "
                f"results.jsonl) or a baseline file written by {UPDATE_FLAG}"
            )
    report = _read_json(report_path)
    if not isinstance(report, dict):
        raise BaselineError(f"baseline {report_path}: expected a JSON object")
    try:  # a report of another major version is refused clearly, not misread
        check_version(report, report_path)
    except RunDirError as exc:
        raise BaselineError(f"baseline {exc}") from None
    cases = []
    try:
        text = safe_read.read_bytes(results_path).decode("utf-8")
    except safe_read.SupportFileError as exc:
        raise BaselineError(f"baseline {results_path}: cannot read: {exc.message}") from None
    except UnicodeDecodeError as exc:
        raise BaselineError(f"baseline {results_path}: cannot read: {exc}") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = safe_read.parse_json(line, str(results_path), first_line=number)
        except safe_read.SupportFileError as exc:
            raise BaselineError(f"baseline {exc.where}: not JSON: {exc.message}") from None
        cases.append(_case(row, f"{results_path}:{number}"))
    run_id, shard = None, None
    manifest_path = path / "manifest.json"
    if manifest_path.is_file():
        manifest = _read_json(manifest_path)
        if isinstance(manifest, dict) and isinstance(manifest.get("run_id"), str):
            run_id = manifest["run_id"]
        if isinstance(manifest, dict) and isinstance(manifest.get("shard"), list):
            shard = manifest["shard"]
    return Baseline(
        source=str(path),
        run_id=run_id,
        report=report,
        results=sorted(cases, key=lambda c: c.nodeid),
        subset=subset_of(report, shard),
    )


def subset_of(report: Mapping[str, Any], shard: Sequence[Any] | None = None) -> str | None:
    """Why a run's ``report.json`` body judged only part of its cases (``None`` when it judged
    them all): cut short (``interrupted``), cases left out (``deselected``: ``-k``, ``-m``,
    ``--lf``, ``--llmeval-limit``, a spent budget, a skip), or one shard of several. Such a run
    is no baseline: the cases it left out would later read as added, never as regressions."""
    interrupted = report.get("interrupted")
    if isinstance(interrupted, Mapping):
        return (
            f"it was cut short ({interrupted.get('reason')}: {interrupted.get('cases_run')} of "
            f"{interrupted.get('cases_total')} cases)"
        )
    deselected = report.get("deselected")
    if isinstance(deselected, Mapping) and deselected:
        left = sum(n for n in deselected.values() if isinstance(n, int))
        return (
            f"it left {left} case(s) out (-k, -m, --lf, --llmeval-limit, a budget, or skipped: "
            "a fixture's pytest.skip, a skip mark, xfail(run=False))"
        )
    if shard is not None and len(shard) == 2:
        return f"it is shard {shard[0]}/{shard[1]} (merge the shards, then bless the merge)"
    return None


def not_blessed(path: Path, subset: str) -> str:
    """The one line of a ``--llmeval-update-baseline`` that was not written: the run judged a
    subset (the file is left as it was)."""
    return (
        f"baseline {path} not updated: {subset.replace('it ', 'this run ', 1)}; a baseline "
        "is blessed from a run of every case (drop -k/-m/--lf/--llmeval-limit/--llmeval-shard "
        "and let no case skip)"
    )


def _read_json(path: Path) -> Any:
    try:
        return read_json(path)
    except RunDirError as exc:
        raise BaselineError(f"baseline {exc}") from None


def _case(row: object, where: str) -> BaselineCase:
    if not isinstance(row, dict):
        raise BaselineError(f"baseline {where}: expected a JSON object")
    try:
        return BaselineCase.model_validate(row)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(row)'}: {err['msg']}"
            for err in exc.errors()
        )
        raise BaselineError(f"baseline {where}: {problems}") from None
