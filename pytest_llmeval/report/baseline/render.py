"""The baseline diff as text: the terminal lines under the verdict and the Markdown section of
``summary.md`` (a pull-request comment). Every id and name from the run is escaped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import get_args

from pytest_llmeval.core.markdown import md_cell, md_code, md_text, one_line
from pytest_llmeval.report.baseline.diff import CASE_SET_KINDS, short_value
from pytest_llmeval.report.gates import TOTALS, format_number
from pytest_llmeval.rundir.baseline_diff import (
    FLIP_KINDS,
    BaselineDiff,
    CaseChange,
    CaseSetChanges,
    MetricDelta,
)
from pytest_llmeval.rundir.models import GateStatus

__all__ = [
    "MAX_LISTED",
    "MAX_TERMINAL_IDS",
    "baseline_case_lines",
    "case_set_text",
    "diff_markdown",
]

MAX_LISTED = 50
"""Cases (and metric rows) a markdown list shows before "... and N more"."""

MAX_TERMINAL_IDS = 10
"""Case ids the terminal lists per kind (added, removed, changed) before "... and N more"."""

_FLIP_TITLES: dict[str, str] = {
    "pass->fail": "pass → fail",
    "fail->pass": "fail → pass",
    "new": "new cases",
    "removed": "removed cases",
    "changed": "changed cases (case fingerprint differs; outcome not compared)",
    "skipped": "skipped in one run only",
}


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
            f"{key} {md_code(short_value(ch.baseline))} → {md_code(short_value(ch.current))}"
            for key, ch in diff.fingerprint_mismatches.items()
        ]
        out += ["", f"> Compared despite differing fingerprints: {'; '.join(parts)}."]
    sets = diff.case_changes
    if sets is not None:
        out += ["", f"Cases: {case_set_text(sets)}; only unchanged cases are compared."]
        if sets.data_changes:
            parts = [
                f"{key} {md_code(short_value(ch.baseline))} → {md_code(short_value(ch.current))}"
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
