"""The diff of this run against a baseline, with its statistics: cases aligned and sorted into
flips, the exact McNemar test on the flips, the metric and gate deltas, and the fingerprints
that make a run incomparable (see :mod:`pytest_llmeval.report.baseline`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from math import comb
from typing import Any

from pytest_llmeval.core.errors import FingerprintMismatch
from pytest_llmeval.core.models import Outcome
from pytest_llmeval.report.baseline.file import (
    ALLOW_MISMATCH_FLAG,
    UPDATE_FLAG,
    Baseline,
    BaselineCase,
    BaselineError,
)
from pytest_llmeval.report.gates import TOTALS, flatten_metrics, is_metric
from pytest_llmeval.rundir.baseline_diff import (
    FLIP_KINDS,
    BaselineDiff,
    CaseChange,
    CaseSetChanges,
    FingerprintChange,
    FlipKind,
    GateChange,
    MetricDelta,
)

__all__ = [
    "CASE_RUNNER_KEY",
    "CASE_SET_KINDS",
    "DATA_FINGERPRINT_KEYS",
    "DELTA_DIGITS",
    "FINGERPRINT_KEYS",
    "diff",
    "mcnemar_exact_p",
    "short_value",
]

FINGERPRINT_KEYS = ("runner_fingerprint", "plugin_version")
"""Report fingerprints that must match for a diff (unless mismatches are allowed): the runner,
and the plugin whose suites score every case."""

CASE_RUNNER_KEY = "case_runner_fingerprint"
"""The mismatch named when unchanged cases ran under another runner than in the baseline
(a run with several runners has no single ``runner_fingerprint``)."""

DATA_FINGERPRINT_KEYS = ("dataset_sha256", "tool_registry_sha256", "fixtures_sha256")
"""Report fingerprints of the data: a difference is listed, the diff goes on case by case."""

DELTA_DIGITS = 12
"""Float metric deltas are rounded to this many decimals (report values carry six)."""

CASE_SET_KINDS = ("unchanged", "added", "removed", "changed")
"""The keys of ``case_changes.counts``, in the order they are shown."""


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
    current_results: Iterable[BaselineCase],
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
    current = sorted(current_results, key=lambda c: c.nodeid)
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


def short_value(value: str | None) -> str:
    """A fingerprint as messages show it: its first 12 characters, or ``none``."""
    return "none" if value is None else value[:12]


def _mismatch_message(mismatches: Mapping[str, FingerprintChange], baseline: Baseline) -> str:
    parts = [
        f"{key} {short_value(ch.baseline)} (baseline) vs {short_value(ch.current)} (this run)"
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
