"""Baselines: a previous run's report and per-case outcomes, and the diff of this run against it.

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

Cases are aligned by node id, else by ``(file, case_id)`` when exactly one unmatched case on
each side has that pair (a renamed manifest keeps its cases). The comparison is case by case:

* an aligned pair with the same case fingerprint is *unchanged* and compared. Outcomes are
  *pass* (``passed``) or *not pass* (``failed`` or ``error``: an error is not a pass, so
  ``passed -> error`` is a regression and ``error -> passed`` an improvement). A case
  ``skipped`` in exactly one of the two runs is listed under ``skipped`` and is no flip;
  skipped in both, it is not listed. Only the flips enter the McNemar test and the
  ``regressed`` verdict;
* an aligned pair whose case fingerprints differ (both known) is ``changed``: the case itself
  was edited, so its outcome is not compared; a case on one side only is ``new`` (added) or
  ``removed``. These are listed apart (``case_changes``), never counted as regressions, and
  never make the run incomparable: adding or editing a case needs no new baseline.

Only what judges every case makes the whole run incomparable (:data:`FINGERPRINT_KEYS`): the
runner (the report's ``runner_fingerprint``, and each unchanged case's own), and the scorers,
which ship with the plugin (``plugin_version``). Then the diff is refused unless
``--llmeval-baseline-allow-mismatch``. A changed data file (``dataset_sha256``), tool registry
or fixtures is listed under ``case_changes.data_changes``.

Dataset-level metrics: ``metric_deltas`` compares the two reports whole, as they are (added and
edited cases count there); ``unchanged_metric_deltas`` recomputes the pass rate and mean scores
over the unchanged cases judged in both runs, so a changed data set still compares like with
like.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from math import comb
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pytest_llmeval.core.errors import ConfigError, FingerprintMismatch, RunDirError
from pytest_llmeval.core.markdown import md_cell, md_code, md_text, one_line
from pytest_llmeval.core.models import CaseResult, Outcome
from pytest_llmeval.inputs import safe_read
from pytest_llmeval.report.gates import TOTALS, flatten_metrics, format_number, is_metric
from pytest_llmeval.rundir.claim import folder_lock
from pytest_llmeval.rundir.comparison import (
    FLIP_KINDS,
    BaselineDiff,
    CaseChange,
    CaseSetChanges,
    FingerprintChange,
    FlipKind,
    GateChange,
    MetricDelta,
)
from pytest_llmeval.rundir.files import read_json, write_json
from pytest_llmeval.rundir.models import GateStatus
from pytest_llmeval.rundir.read import check_version

__all__ = [
    "ALLOW_MISMATCH_FLAG",
    "BASELINE_VERSION",
    "CASE_SET_KINDS",
    "DATA_FINGERPRINT_KEYS",
    "DELTA_DIGITS",
    "FINGERPRINT_KEYS",
    "MAX_LISTED",
    "MAX_TERMINAL_IDS",
    "UPDATE_FLAG",
    "Baseline",
    "BaselineCase",
    "BaselineError",
    "baseline_case_lines",
    "case_set_text",
    "diff",
    "diff_markdown",
    "load_baseline",
    "mcnemar_exact_p",
    "write_baseline",
]

BASELINE_VERSION = 1
"""The ``baseline_version`` this module writes and reads."""

FINGERPRINT_KEYS = ("runner_fingerprint", "plugin_version")
"""Report fingerprints that must match for a diff (unless mismatches are allowed): the runner,
and the plugin whose suites score every case."""

CASE_RUNNER_KEY = "case_runner_fingerprint"
"""The mismatch named when unchanged cases ran under another runner than in the baseline
(a run with several runners has no single ``runner_fingerprint``)."""

DATA_FINGERPRINT_KEYS = ("dataset_sha256", "tool_registry_sha256", "fixtures_sha256")
"""Report fingerprints of the data: a difference is listed, the diff goes on case by case."""

ALLOW_MISMATCH_FLAG = "--llmeval-baseline-allow-mismatch"
UPDATE_FLAG = "--llmeval-update-baseline"

MAX_LISTED = 50
"""Cases (and metric rows) a markdown list shows before "... and N more"."""

MAX_TERMINAL_IDS = 10
"""Case ids the terminal lists per kind (added, removed, changed) before "... and N more"."""

DELTA_DIGITS = 12
"""Float metric deltas are rounded to this many decimals (report values carry six)."""

CASE_SET_KINDS = ("unchanged", "added", "removed", "changed")
"""The keys of ``case_changes.counts``, in the order they are shown."""

_FLIP_TITLES: dict[str, str] = {
    "pass->fail": "pass → fail",
    "fail->pass": "fail → pass",
    "new": "new cases",
    "removed": "removed cases",
    "changed": "changed cases (case fingerprint differs; outcome not compared)",
    "skipped": "skipped in one run only",
}


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


# -- reading and writing ---------------------------------------------------------------------


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
    results: Iterable[CaseResult | BaselineCase | Mapping[str, Any]],
    *,
    run_id: str | None = None,
) -> None:
    """Write a baseline file atomically (temp file + ``os.replace``), keys sorted."""
    path = Path(path)
    if path.is_dir():
        raise BaselineError(
            f"baseline {path}: is a directory; give a file name such as baseline.json"
        )
    cases = sorted((_slim(row) for row in results), key=lambda c: c.nodeid)
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
    ``--lf``, ``--llmeval-limit``, a spent budget), or one shard of several. Such a run is no
    baseline: the cases it left out would later read as added, never as regressions."""
    interrupted = report.get("interrupted")
    if isinstance(interrupted, Mapping):
        return (
            f"it was cut short ({interrupted.get('reason')}: {interrupted.get('cases_run')} of "
            f"{interrupted.get('cases_total')} cases)"
        )
    deselected = report.get("deselected")
    if isinstance(deselected, Mapping) and deselected:
        left = sum(n for n in deselected.values() if isinstance(n, int))
        return f"it left {left} case(s) out (-k, -m, --lf, --llmeval-limit or a budget)"
    if shard is not None and len(shard) == 2:
        return f"it is shard {shard[0]}/{shard[1]} (merge the shards, then bless the merge)"
    return None


def not_blessed(path: Path, subset: str) -> str:
    """The one line of a ``--llmeval-update-baseline`` that was not written: the run judged a
    subset (the file is left as it was)."""
    return (
        f"baseline {path} not updated: {subset.replace('it ', 'this run ', 1)}; a baseline "
        "is blessed from a run of every case (drop -k/-m/--lf/--llmeval-limit/--llmeval-shard)"
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


def _slim(row: CaseResult | BaselineCase | Mapping[str, Any]) -> BaselineCase:
    if isinstance(row, BaselineCase):
        return row
    if isinstance(row, CaseResult):
        return BaselineCase.model_validate(
            row.model_dump(mode="json", include=set(BaselineCase.model_fields))
        )
    return BaselineCase.model_validate(dict(row))


# -- diffing ---------------------------------------------------------------------------------


def mcnemar_exact_p(b: int, c: int) -> Fraction:
    """Exact two-sided McNemar p-value on discordant counts ``b`` and ``c``.

    ``min(1, 2 * sum_{k <= min(b, c)} C(b + c, k) / 2 ** (b + c))``, computed exactly; 1 when
    ``b + c == 0``.
    """
    if b < 0 or c < 0:
        raise ValueError("discordant counts must be non-negative")
    n = b + c
    if n == 0:
        return Fraction(1)
    tail = sum(comb(n, k) for k in range(min(b, c) + 1))
    return min(Fraction(1), Fraction(2 * tail, 2**n))


def diff(
    current_report: Mapping[str, Any],
    current_results: Iterable[CaseResult | BaselineCase | Mapping[str, Any]],
    baseline: Baseline,
    *,
    allow_mismatch: bool = False,
) -> BaselineDiff:
    """This run against ``baseline``, case by case.

    Raises :class:`~pytest_llmeval.core.errors.FingerprintMismatch` when the runner or the scorers
    (plugin version) differ, unless ``allow_mismatch``; added, removed and edited cases never
    do.
    """
    if baseline.subset is not None and not allow_mismatch:
        raise BaselineError(
            f"baseline {baseline.source} judged only part of its cases: {baseline.subset}; "
            f"re-create it from a run of every case ({UPDATE_FLAG}), or pass "
            f"{ALLOW_MISMATCH_FLAG} to compare anyway"
        )
    current = sorted((_slim(row) for row in current_results), key=lambda c: c.nodeid)
    aligned = _align(current, baseline.results)
    mismatches = _fingerprint_mismatches(baseline.report, current_report)
    if aligned.runner_change is not None and "runner_fingerprint" not in mismatches:
        mismatches[CASE_RUNNER_KEY] = aligned.runner_change
    if mismatches and not allow_mismatch:
        raise FingerprintMismatch(
            _mismatch_message(mismatches, baseline),
            {key: (change.baseline, change.current) for key, change in mismatches.items()},
        )
    changes = aligned.changes
    flips: dict[FlipKind, list[str]] = {kind: [] for kind in FLIP_KINDS}
    for change in changes:
        flips[change.kind].append(change.nodeid)
    b, c = len(flips["pass->fail"]), len(flips["fail->pass"])
    gate_changes = _gate_changes(baseline.report, current_report)
    regressed = b > 0 or any(g.baseline_passed and not g.current_passed for g in gate_changes)
    case_changes = CaseSetChanges(
        counts={
            "unchanged": aligned.unchanged,
            "added": len(flips["new"]),
            "removed": len(flips["removed"]),
            "changed": len(flips["changed"]),
        },
        added=flips["new"],
        removed=flips["removed"],
        changed=flips["changed"],
        data_changes=_changes(baseline.report, current_report, DATA_FINGERPRINT_KEYS),
    )
    return BaselineDiff(
        baseline=baseline.source,
        baseline_run_id=baseline.run_id,
        compared=aligned.compared,
        flips=flips,
        cases=changes,
        pass_to_fail=b,
        fail_to_pass=c,
        mcnemar_p=float(mcnemar_exact_p(b, c)),
        metric_deltas=_metric_deltas(baseline.report, current_report),
        gate_changes=gate_changes,
        fingerprint_mismatches=mismatches,
        regressed=regressed,
        case_changes=case_changes,
        unchanged_metric_deltas=_paired_metric_deltas(aligned.paired),
    )


def _changes(
    old: Mapping[str, Any], new: Mapping[str, Any], keys: Iterable[str]
) -> dict[str, FingerprintChange]:
    out = {}
    for key in keys:
        before, after = old.get(key), new.get(key)
        if before != after:
            out[key] = FingerprintChange(
                baseline=None if before is None else str(before),
                current=None if after is None else str(after),
            )
    return out


def _fingerprint_mismatches(
    old: Mapping[str, Any], new: Mapping[str, Any]
) -> dict[str, FingerprintChange]:
    return _changes(old, new, FINGERPRINT_KEYS)


def _short(value: str | None) -> str:
    return "none" if value is None else value[:12]


def _mismatch_message(mismatches: Mapping[str, FingerprintChange], baseline: Baseline) -> str:
    parts = [
        f"{key} {_short(ch.baseline)} (baseline) vs {_short(ch.current)} (this run)"
        for key, ch in mismatches.items()
    ]
    return (
        f"baseline {baseline.source} is not comparable with this run: {'; '.join(parts)}. "
        f"The runner or the scorers changed, which judges every case: re-create the baseline "
        f"from a run with the same runner and plugin version ({UPDATE_FLAG}), or pass "
        f"{ALLOW_MISMATCH_FLAG} to compare anyway (added, removed or edited cases need "
        f"neither)"
    )


def _is_pass(outcome: Outcome) -> bool:
    return outcome == "passed"


@dataclass
class _Alignment:
    """What :func:`_align` found: the listed cases and the pairs that were compared."""

    changes: list[CaseChange] = field(default_factory=list)
    compared: int = 0
    """Unchanged pairs judged (not skipped) in both runs."""
    unchanged: int = 0
    """Pairs with the same case fingerprint, skipped ones included."""
    paired: list[tuple[BaselineCase, BaselineCase]] = field(default_factory=list)
    """The compared pairs, ``(baseline, current)``."""
    runner_change: FingerprintChange | None = None
    """The first unchanged pair whose runner fingerprints differ (both known)."""


def _align(current: list[BaselineCase], base: list[BaselineCase]) -> _Alignment:
    base_by_node = {case.nodeid: case for case in base}
    pairs: list[tuple[BaselineCase, BaselineCase]] = []
    unmatched_now: list[BaselineCase] = []
    matched: set[str] = set()
    for case in current:
        old = base_by_node.get(case.nodeid)
        if old is not None and old.nodeid not in matched:
            pairs.append((old, case))
            matched.add(old.nodeid)
        else:
            unmatched_now.append(case)
    # Fallback: (file, case_id), only when it is unambiguous on both sides.
    left_now: dict[tuple[str, str], list[BaselineCase]] = {}
    for case in unmatched_now:
        left_now.setdefault((case.file, case.case_id), []).append(case)
    left_base: dict[tuple[str, str], list[BaselineCase]] = {}
    for case in base:
        if case.nodeid not in matched:
            left_base.setdefault((case.file, case.case_id), []).append(case)
    new: list[BaselineCase] = []
    for key, now_cases in left_now.items():
        old_cases = left_base.get(key, [])
        if len(now_cases) == 1 and len(old_cases) == 1:
            pairs.append((old_cases[0], now_cases[0]))
            matched.add(old_cases[0].nodeid)
        else:
            new.extend(now_cases)
    removed = [case for case in base if case.nodeid not in matched]

    found = _Alignment()
    found.changes = [
        CaseChange(kind="new", nodeid=c.nodeid, suite=c.suite, before=None, after=c.outcome)
        for c in new
    ]
    found.changes += [
        CaseChange(kind="removed", nodeid=c.nodeid, suite=c.suite, before=c.outcome, after=None)
        for c in removed
    ]
    for old, now in pairs:
        kind: FlipKind | None
        if (
            old.case_fingerprint
            and now.case_fingerprint
            and old.case_fingerprint != now.case_fingerprint
        ):
            kind = "changed"
        else:
            found.unchanged += 1
            if (
                found.runner_change is None
                and old.runner_fingerprint
                and now.runner_fingerprint
                and old.runner_fingerprint != now.runner_fingerprint
            ):
                found.runner_change = FingerprintChange(
                    baseline=old.runner_fingerprint, current=now.runner_fingerprint
                )
            if old.outcome == "skipped" or now.outcome == "skipped":
                kind = "skipped" if old.outcome != now.outcome else None
            else:
                found.compared += 1
                found.paired.append((old, now))
                kind = _flip(old, now)
        if kind is not None:
            found.changes.append(
                CaseChange(
                    kind=kind,
                    nodeid=now.nodeid,
                    suite=now.suite,
                    before=old.outcome,
                    after=now.outcome,
                )
            )
    order = {kind: i for i, kind in enumerate(FLIP_KINDS)}
    found.changes.sort(key=lambda ch: (order[ch.kind], ch.nodeid))
    return found


def _flip(old: BaselineCase, now: BaselineCase) -> FlipKind | None:
    """How ``old`` -> ``now`` flipped: by their intervals when both ran repeatedly and were
    judged, else by their outcomes (a case that errored is no pass, whatever its runs gave)."""
    judged = "error" not in (old.outcome, now.outcome)
    if old.repeats and now.repeats and judged:
        return _flip_by_rates(old, now)
    was, now_pass = _is_pass(old.outcome), _is_pass(now.outcome)
    if was and not now_pass:
        return "pass->fail"
    if now_pass and not was:
        return "fail->pass"
    return None


def _flip_by_rates(old: BaselineCase, now: BaselineCase) -> FlipKind | None:
    """Under repeats a case flips only when its runs say so with confidence: ``pass->fail``
    when the current Wilson interval lies wholly below the baseline's, ``fail->pass`` when
    wholly above; overlapping intervals (a re-run straddling a threshold) are no flip."""
    assert old.repeats is not None and now.repeats is not None
    raw = [old.repeats.get("low"), old.repeats.get("high")]
    raw += [now.repeats.get("low"), now.repeats.get("high")]
    bounds = [float(b) for b in raw if isinstance(b, (int, float))]
    if len(bounds) != 4:
        return None
    old_low, old_high, low, high = bounds
    if high < old_low:
        return "pass->fail"
    if low > old_high:
        return "fail->pass"
    return None


def _suite_bodies(report: Mapping[str, Any]) -> dict[str, Any]:
    suites = report.get("suites")
    out = dict(suites) if isinstance(suites, Mapping) else {}
    if isinstance(report.get("totals"), Mapping):
        out[TOTALS] = report["totals"]
    return out


def _metric_deltas(
    old: Mapping[str, Any], new: Mapping[str, Any]
) -> dict[str, dict[str, MetricDelta]]:
    before, after = _suite_bodies(old), _suite_bodies(new)
    out: dict[str, dict[str, MetricDelta]] = {}
    for suite in sorted(set(before) & set(after)):
        was, now = flatten_metrics(before[suite]), flatten_metrics(after[suite])
        rows = {
            path: MetricDelta(
                baseline=was[path], current=now[path], delta=_delta(was[path], now[path])
            )
            for path in sorted(set(was) & set(now))
        }
        if rows:
            out[suite] = rows
    return out


def _paired_metric_deltas(
    pairs: list[tuple[BaselineCase, BaselineCase]],
) -> dict[str, dict[str, MetricDelta]]:
    """Pass rate, passed count and mean scores over the same cases on both sides, per suite
    (this run's suite of the case) and over all (``*``); rates, means and their differences
    to six decimals, as the report writes them."""
    by_suite: dict[str, list[tuple[BaselineCase, BaselineCase]]] = {}
    for old, now in pairs:
        by_suite.setdefault(now.suite, []).append((old, now))
    if pairs:
        by_suite[TOTALS] = pairs
    out: dict[str, dict[str, MetricDelta]] = {}
    for suite in sorted(by_suite):
        rows = by_suite[suite]
        passed_then = sum(_is_pass(old.outcome) for old, _ in rows)
        passed_now = sum(_is_pass(new.outcome) for _, new in rows)
        metrics = {
            "pass_rate": _mean_delta(
                [(float(_is_pass(o.outcome)), float(_is_pass(n.outcome))) for o, n in rows]
            ),
            "passed": MetricDelta(
                baseline=passed_then, current=passed_now, delta=passed_now - passed_then
            ),
        }
        names = sorted({name for old, new in rows for name in set(old.scores) & set(new.scores)})
        for name in names:
            metrics[f"mean_scores.{name}"] = _mean_delta(
                [
                    (o.scores[name], n.scores[name])
                    for o, n in rows
                    if name in o.scores and name in n.scores
                ]
            )
        out[suite] = metrics
    return out


def _mean_delta(values: list[tuple[float, float]]) -> MetricDelta:
    before = sum(a for a, _ in values) / len(values)
    after = sum(b for _, b in values) / len(values)
    return MetricDelta(
        baseline=round(before, 6), current=round(after, 6), delta=round(after - before, 6)
    )


def _delta(old: float, new: float) -> int | float:
    if isinstance(old, int) and isinstance(new, int):
        return new - old
    return round(new - old, DELTA_DIGITS)


def _gate_entries(
    report: Mapping[str, Any],
) -> dict[str, tuple[bool, float | None, str]] | None:
    section = report.get("gates")
    if isinstance(section, Mapping):
        section = section.get("results")
    if not isinstance(section, list):
        return None
    out: dict[str, tuple[bool, float | None, str]] = {}
    for entry in section:
        if not isinstance(entry, Mapping):
            continue
        gate = entry.get("gate")
        name = gate.get("name") if isinstance(gate, Mapping) else entry.get("name")
        if not isinstance(name, str):
            continue
        value = entry.get("value")
        passed = entry.get("passed") is True
        status = entry.get("status")
        if not isinstance(status, str) or not status:  # a report from before statuses
            status = "passed" if passed else "failed"
        out.setdefault(name, (passed, float(value) if is_metric(value) else None, status))
    return out


def _gate_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[GateChange]:
    before, after = _gate_entries(old), _gate_entries(new)
    if before is None or after is None:
        return []
    out = []
    for name in sorted(set(before) & set(after)):
        (was_ok, was, was_status), (now_ok, now, now_status) = before[name], after[name]
        delta = round(now - was, DELTA_DIGITS) if was is not None and now is not None else None
        out.append(
            GateChange(
                name=name,
                baseline_passed=was_ok,
                current_passed=now_ok,
                baseline_status=was_status,
                current_status=now_status,
                baseline_value=was,
                current_value=now,
                delta=delta,
            )
        )
    return out


# -- markdown --------------------------------------------------------------------------------


def diff_markdown(diff: BaselineDiff) -> str:
    """A pull-request comment section: summary line, the case set, metric and gate tables,
    listed cases. Every id and name from the run is escaped (code spans, table cells)."""
    against = (
        f"baseline run {md_code(diff.baseline_run_id)}"
        if diff.baseline_run_id
        else f"baseline {md_code(diff.baseline)}"
    )
    verdict = "**Regressed**" if diff.regressed else "**No regressions**"
    counts = ", ".join(f"{len(diff.flips[kind])} {kind}" for kind in FLIP_KINDS)
    out = [
        "## Baseline comparison",
        "",
        f"{verdict} against {against}: {counts}; {diff.compared} cases compared. "
        f"Exact McNemar p = {_p(diff.mcnemar_p)} "
        f"(b = {diff.pass_to_fail} pass->fail, c = {diff.fail_to_pass} fail->pass).",
    ]
    if diff.fingerprint_mismatches:
        parts = [
            f"{key} {md_code(_short(ch.baseline))} → {md_code(_short(ch.current))}"
            for key, ch in diff.fingerprint_mismatches.items()
        ]
        out += ["", f"> Compared despite differing fingerprints: {'; '.join(parts)}."]
    sets = diff.case_changes
    if sets is not None:
        out += ["", f"Cases: {case_set_text(sets)}; only unchanged cases are compared."]
        if sets.data_changes:
            parts = [
                f"{key} {md_code(_short(ch.baseline))} → {md_code(_short(ch.current))}"
                for key, ch in sets.data_changes.items()
            ]
            out += [
                "",
                f"> The data changed ({'; '.join(parts)}): the metric changes below compare "
                "the whole runs; those on unchanged cases compare like with like.",
            ]

    out += ["", "### Metric changes", ""]
    out += _metric_table(diff.metric_deltas, "No metric changed.")
    if sets is not None and _set_differs(sets) and diff.unchanged_metric_deltas:
        out += ["", "### Metric changes on unchanged cases", ""]
        out += _metric_table(diff.unchanged_metric_deltas, "No metric changed on them.")

    if diff.gate_changes:
        out += ["", "### Gates", "", "| gate | baseline | current |", "|---|---|---|"]
        for gate in diff.gate_changes:
            out.append(
                f"| {md_cell(md_code(gate.name))} | "
                f"{_gate_cell(gate.baseline_status, gate.baseline_passed, gate.baseline_value)} | "
                f"{_gate_cell(gate.current_status, gate.current_passed, gate.current_value)} |"
            )

    by_kind: dict[str, list[CaseChange]] = {}
    for change in diff.cases:
        by_kind.setdefault(change.kind, []).append(change)
    for kind in FLIP_KINDS:
        listed = by_kind.get(kind, [])
        if not listed:
            continue
        out += ["", f"### {_FLIP_TITLES[kind]} ({len(listed)})", ""]
        for change in listed[:MAX_LISTED]:
            out.append(
                f"- {md_code(change.nodeid)} ({change.before or '-'} → {change.after or '-'})"
            )
        if len(listed) > MAX_LISTED:
            out.append(f"- ... and {len(listed) - MAX_LISTED} more")
    out.append("")
    return "\n".join(out)


def case_set_text(sets: CaseSetChanges) -> str:
    """``5 unchanged, 1 added, 1 removed, 1 changed``: the case set in one phrase."""
    return ", ".join(f"{sets.counts.get(k, 0)} {k}" for k in CASE_SET_KINDS)


def baseline_case_lines(diff: BaselineDiff) -> list[str]:
    """Terminal lines under the baseline verdict: the case set, the ids added, removed and
    changed (the first :data:`MAX_TERMINAL_IDS` of each), and a changed data set's pass rate
    on the unchanged cases."""
    sets = diff.case_changes
    if sets is None:
        return []
    lines = [f"baseline: cases: {case_set_text(sets)} (only unchanged cases are compared)"]
    for kind, ids in (("added", sets.added), ("removed", sets.removed), ("changed", sets.changed)):
        if ids:
            shown = ", ".join(one_line(i) for i in ids[:MAX_TERMINAL_IDS])
            more = len(ids) - MAX_TERMINAL_IDS
            tail = f" ... and {more} more" if more > 0 else ""
            lines.append(f"baseline: {kind}: {shown}{tail}")
    rate = diff.unchanged_metric_deltas.get(TOTALS, {}).get("pass_rate")
    if _set_differs(sets) and rate is not None:
        lines.append(
            f"baseline: pass rate on the {diff.compared} unchanged cases: "
            f"{format_number(rate.baseline)} -> {format_number(rate.current)} "
            f"({_signed(rate.delta)})"
        )
    return lines


def _set_differs(sets: CaseSetChanges) -> bool:
    return any(sets.counts.get(k, 0) for k in CASE_SET_KINDS[1:])


def _metric_table(deltas: Mapping[str, Mapping[str, MetricDelta]], quiet: str) -> list[str]:
    rows = [
        (suite, path, delta)
        for suite, metrics in deltas.items()
        for path, delta in metrics.items()
        if delta.delta != 0
    ]
    if not rows:
        return [quiet]
    out = ["| suite | metric | baseline | current | Δ |", "|---|---|---:|---:|---:|"]
    for suite, path, delta in rows[:MAX_LISTED]:
        out.append(
            f"| {md_cell(suite)} | {md_cell(path)} | {format_number(delta.baseline)} | "
            f"{format_number(delta.current)} | {_signed(delta.delta)} |"
        )
    if len(rows) > MAX_LISTED:
        out.append(f"| ... and {len(rows) - MAX_LISTED} more | | | | |")
    return out


def _p(value: float) -> str:
    return f"{value:.4g}"


def _signed(value: float) -> str:
    text = format_number(value)
    return text if text.startswith("-") else f"+{text}"


def _gate_cell(status: str | None, passed: bool, value: float | None) -> str:
    """A gate's status as itself (``passed``, ``**failed**``, ``partial``, ``n/a`` ...)."""
    shown = status or ("passed" if passed else "failed")
    if shown == "failed":
        shown = "**failed**"
    elif shown not in get_args(GateStatus):  # a hand-edited baseline: inert text
        shown = md_text(shown)
    return f"{shown} ({format_number(value)})" if value is not None else shown
