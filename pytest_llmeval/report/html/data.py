"""The summary sections of report.html as plain data: every cell already written as text.

Each function reads one part of a ``report.json`` body, which may be partial or odd (it comes
from older runs and from hand-written files too), and returns frozen dataclasses the template
lays out. Nothing here writes markup; the template escapes every value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from pytest_llmeval.report.html.formatting import count, metric, number, pct

OUTCOMES = ("passed", "failed", "error", "skipped")
"""The case outcomes, in the order bars and legends show them."""
FLIP_KINDS = ("pass->fail", "fail->pass", "new", "removed")
"""The baseline flip kinds, in the order the Baseline section shows them."""
CASE_SET_KINDS = ("unchanged", "added", "removed", "changed")
"""The case set's counts (``case_changes.counts``), in the order the section shows them."""
_SET_FLIPS = ("new", "removed", "changed")
"""Flip kinds that the case set lists instead, when the report has one."""
MAX_LISTED_IDS = 500
"""Case ids listed per baseline flip kind."""


@dataclass(frozen=True)
class Card:
    """A big number with a label under it."""

    value: str
    label: str
    cls: str = ""


@dataclass(frozen=True)
class CountRow:
    """A row of the suites table: cases, passed, failed, errors, skipped, pass rate."""

    name: str
    cells: tuple[str, ...]
    total: bool = False


@dataclass(frozen=True)
class Overview:
    """The cards over the run's totals and one row per suite plus ``all``."""

    cards: tuple[Card, ...]
    rows: tuple[CountRow, ...]


@dataclass(frozen=True)
class Segment:
    """One outcome's share of a stacked bar; ``width`` is a percentage."""

    outcome: str
    count: int
    width: str


@dataclass(frozen=True)
class BarRow:
    """A labelled stacked bar with its pass rate and ``passed/judged`` beside it."""

    label: str
    segments: tuple[Segment, ...]
    rate: str
    passed: int
    judged: int


@dataclass(frozen=True)
class BarGroup:
    """Bars under a heading: by suite, or by one suite's categories."""

    heading: str
    rows: tuple[BarRow, ...]


@dataclass(frozen=True)
class Cell:
    """A confusion-matrix cell: its count, its shade and a tooltip."""

    text: str
    alpha: str
    dark: bool
    diagonal: bool
    title: str


@dataclass(frozen=True)
class MatrixRow:
    """A true label's row: its cells, its total and its recall."""

    label: str
    cells: tuple[Cell, ...]
    total: str
    recall: str


@dataclass(frozen=True)
class Matrix:
    """One suite's confusion matrix (``matrix[true][predicted]``), or a note that it is
    malformed."""

    suite: str
    labels: tuple[str, ...] = ()
    rows: tuple[MatrixRow, ...] = ()
    malformed: bool = False


@dataclass(frozen=True)
class LevelRow:
    """A GAIA level: questions, correct answers, accuracy and its bar's width."""

    level: str
    questions: str
    correct: str
    accuracy: str
    width: str


@dataclass(frozen=True)
class LevelTable:
    """One suite's accuracy by level."""

    suite: str
    rows: tuple[LevelRow, ...]


@dataclass(frozen=True)
class FlipList:
    """The case ids of one flip kind, each with the link that filters the cases to it."""

    kind: str
    size: int
    links: tuple[tuple[str, str], ...]
    more: int


@dataclass(frozen=True)
class Baseline:
    """The Baseline section: McNemar's test, a card per flip kind, the flipped ids, and the
    case set (unchanged, added, removed, changed) with notes on what changed."""

    mcnemar: str | None
    cards: tuple[Card, ...]
    lists: tuple[FlipList, ...]
    case_cards: tuple[Card, ...] = ()
    """Unchanged, added, removed and changed counts (reports that list the case set)."""
    notes: tuple[str, ...] = ()
    """One sentence each: fingerprints compared despite differing, data that changed, the
    pass rate on the unchanged cases."""


# -- totals ------------------------------------------------------------------------------------


def totals(body: Any) -> dict[str, Any]:
    """A suite's (or the run's) counts and pass rate, with zeros for what is missing."""
    body = body if isinstance(body, dict) else {}
    counts = {key: count(body.get(key)) for key in ("passed", "failed", "errors", "skipped")}
    total = count(body.get("total")) if "total" in body else sum(counts.values())
    return {**counts, "total": total, "pass_rate": number(body.get("pass_rate"))}


def _count_cells(sums: dict[str, Any]) -> tuple[str, ...]:
    keys = ("total", "passed", "failed", "errors", "skipped")
    return (*(str(sums[key]) for key in keys), pct(sums["pass_rate"]))


def overview(suites: dict[str, Any], run: dict[str, Any]) -> Overview:
    """The Overview section: the run's totals as cards, then a row per suite and ``all``."""
    cards = (
        Card(str(run["total"]), "cases"),
        Card(str(run["passed"]), "passed", "passed"),
        Card(str(run["failed"]), "failed", "failed"),
        Card(str(run["errors"]), "errors", "error"),
        Card(str(run["skipped"]), "skipped", "skipped"),
        Card(pct(run["pass_rate"]), "pass rate"),
    )
    rows = [CountRow(str(name), _count_cells(totals(body))) for name, body in suites.items()]
    rows.append(CountRow("all", _count_cells(run), total=True))
    return Overview(cards, tuple(rows))


# -- pass rates ------------------------------------------------------------------------------


def _bar_row(label: str, sums: dict[str, Any]) -> BarRow:
    total = sums["total"]
    segments = []
    if total:
        for outcome, key in zip(OUTCOMES, ("passed", "failed", "errors", "skipped"), strict=True):
            if sums[key]:
                segments.append(Segment(outcome, sums[key], f"{sums[key] / total * 100:.3f}"))
    judged = sums["passed"] + sums["failed"] + sums["errors"]
    return BarRow(label, tuple(segments), pct(sums["pass_rate"]), sums["passed"], judged)


def pass_rates(suites: dict[str, Any]) -> tuple[BarGroup, ...]:
    """A bar per suite, then a group of bars per suite that reports categories."""
    groups = [BarGroup("By suite", tuple(_bar_row(str(n), totals(b)) for n, b in suites.items()))]
    for name, body in suites.items():
        categories = body.get("categories") if isinstance(body, dict) else None
        if not isinstance(categories, dict) or not categories:
            continue
        rows = tuple(_bar_row(str(cat), totals(sums)) for cat, sums in categories.items())
        groups.append(BarGroup(f"By category: {name}", rows))
    return tuple(groups)


# -- confusion matrices ----------------------------------------------------------------------


def _matrix(name: str, body: dict[str, Any], matrix_body: Any) -> Matrix:
    labels: Any
    matrix: Any
    if isinstance(matrix_body, list):  # a suite's own shape (When2Call): labels beside it
        labels, matrix = body.get("labels"), matrix_body
    else:
        labels = matrix_body.get("labels") if isinstance(matrix_body, dict) else None
        matrix = matrix_body.get("matrix") if isinstance(matrix_body, dict) else None
    if (
        not isinstance(labels, list)
        or not isinstance(matrix, list)
        or len(matrix) != len(labels)
        or any(not isinstance(row, list) or len(row) != len(labels) for row in matrix)
    ):
        return Matrix(name, malformed=True)
    names = tuple(str(label) for label in labels)
    values = [[number(v) or 0.0 for v in row] for row in matrix]
    peak = max((v for row in values for v in row), default=0.0) or 1.0
    rows = []
    for i, (label, row) in enumerate(zip(names, values, strict=True)):
        row_total = sum(row)
        cells = []
        for j, value in enumerate(row):
            alpha = max(0.0, min(1.0, value / peak))
            share = f"{value / row_total * 100:.1f}% of row" if row_total else "empty row"
            title = f"true {label}, predicted {names[j]}: {metric(value)} ({share})"
            cells.append(Cell(metric(value), f"{alpha:.3f}", alpha > 0.55, i == j, title))
        recall = pct(row[i] / row_total) if row_total else "n/a"
        rows.append(MatrixRow(label, tuple(cells), metric(row_total), recall))
    return Matrix(name, names, tuple(rows))


def confusion(suites: dict[str, Any]) -> tuple[Matrix, ...]:
    """Each suite's confusion matrix: ``{labels, matrix}``, or a list beside ``labels``."""
    out = []
    for name, body in suites.items():
        matrix_body = body.get("confusion_matrix") if isinstance(body, dict) else None
        if matrix_body is not None:
            out.append(_matrix(str(name), body, matrix_body))
    return tuple(out)


# -- GAIA levels -----------------------------------------------------------------------------


def _level_key(name: str) -> tuple[int, str]:
    digits = "".join(ch for ch in name if ch.isdigit())
    return (int(digits) if digits else 1 << 30, name)


def levels(suites: dict[str, Any]) -> tuple[LevelTable, ...]:
    """Accuracy by level for each suite that reports ``levels``, in level order."""
    out = []
    for name, body in suites.items():
        found = body.get("levels") if isinstance(body, dict) else None
        if not isinstance(found, dict) or not found:
            continue
        rows = []
        for level in sorted(found, key=lambda k: _level_key(str(k))):
            entry = found[level] if isinstance(found[level], dict) else {}
            accuracy = number(entry.get("accuracy"))
            width = 0.0 if accuracy is None else max(0.0, min(1.0, accuracy)) * 100
            rows.append(
                LevelRow(
                    level=str(level),
                    questions=metric(entry.get("questions")),
                    correct=metric(entry.get("correct")),
                    accuracy=pct(accuracy),
                    width=f"{width:.3f}",
                )
            )
        out.append(LevelTable(str(name), tuple(rows)))
    return tuple(out)


# -- baseline --------------------------------------------------------------------------------


def baseline(body: Any) -> Baseline | None:
    """The Baseline section, or ``None`` when the run was not compared with one."""
    if not isinstance(body, dict):
        return None
    flips = body.get("flips")
    flips = flips if isinstance(flips, dict) else {}
    sets = body.get("case_changes")
    sets = sets if isinstance(sets, dict) else None
    kinds = [k for k in FLIP_KINDS if k in flips] + sorted(k for k in flips if k not in FLIP_KINDS)
    if sets is not None:  # added, removed and changed cases are shown as the case set
        kinds = [k for k in kinds if k not in _SET_FLIPS]
    cards = []
    lists = []
    for kind in kinds:
        ids = flips[kind] if isinstance(flips[kind], list) else []
        cls = {"pass->fail": "failed", "fail->pass": "passed"}.get(kind, "")
        cards.append(Card(str(len(ids)), str(kind), cls))
        if ids:
            lists.append(_flip_list(str(kind), ids))
    case_cards = []
    if sets is not None:
        counts = sets.get("counts")
        counts = counts if isinstance(counts, dict) else {}
        case_cards = [Card(metric(counts.get(k, 0)), k) for k in CASE_SET_KINDS]
        for kind in CASE_SET_KINDS[1:]:
            ids = sets.get(kind)
            if isinstance(ids, list) and ids:
                lists.append(_flip_list(kind, ids))
    return Baseline(
        _mcnemar(body), tuple(cards), tuple(lists), tuple(case_cards), _baseline_notes(body)
    )


def _flip_list(kind: str, ids: list[Any]) -> FlipList:
    links = tuple((f"#q={quote(str(case), safe='')}", str(case)) for case in ids[:MAX_LISTED_IDS])
    return FlipList(kind, len(ids), links, max(0, len(ids) - MAX_LISTED_IDS))


def _mcnemar(body: dict[str, Any]) -> str | None:
    """McNemar's line from ``mcnemar: {b, c, p_value}`` or the report's own keys
    (``pass_to_fail``, ``fail_to_pass``, ``mcnemar_p``)."""
    found = body.get("mcnemar")
    if isinstance(found, dict):
        b, c, p = found.get("b"), found.get("c"), found.get("p_value")
    elif "mcnemar_p" in body:
        b, c, p = body.get("pass_to_fail"), body.get("fail_to_pass"), body.get("mcnemar_p")
    else:
        return None
    p_num = number(p)
    verdict = ""
    if p_num is not None:
        verdict = " (significant at 0.05)" if p_num < 0.05 else " (not significant at 0.05)"
    return (
        f"McNemar: b = {metric(b)} (pass→fail), c = {metric(c)} (fail→pass), "
        f"p = {metric(p)}{verdict}"
    )


def _changes_text(found: Any) -> str:
    if not isinstance(found, dict):
        return ""
    parts = []
    for key, change in found.items():
        change = change if isinstance(change, dict) else {}
        was, now = change.get("baseline"), change.get("current")
        parts.append(
            f"{key} {str(was)[:12] if was else 'none'} → {str(now)[:12] if now else 'none'}"
        )
    return "; ".join(parts)


def _baseline_notes(body: dict[str, Any]) -> tuple[str, ...]:
    notes = []
    mismatched = _changes_text(body.get("fingerprint_mismatches"))
    if mismatched:
        notes.append(f"Compared despite differing runner or scorer fingerprints: {mismatched}.")
    sets = body.get("case_changes")
    data_changed = _changes_text(sets.get("data_changes")) if isinstance(sets, dict) else ""
    if data_changed:
        notes.append(
            f"The data changed ({data_changed}): only unchanged cases are compared; "
            "added, removed and changed cases are listed apart."
        )
    unchanged = body.get("unchanged_metric_deltas")
    overall = unchanged.get("*") if isinstance(unchanged, dict) else None
    rate = overall.get("pass_rate") if isinstance(overall, dict) else None
    if data_changed and isinstance(rate, dict):
        notes.append(
            f"Pass rate on the unchanged cases: {pct(number(rate.get('baseline')))} → "
            f"{pct(number(rate.get('current')))}."
        )
    return tuple(notes)


# -- header ----------------------------------------------------------------------------------


def facts(report: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The run's identity under the title: versions and fingerprints, 16 characters each."""
    found = (
        ("plugin", report.get("plugin_version")),
        ("report", report.get("report_version")),
        ("runner", report.get("runner_fingerprint")),
        ("dataset", report.get("dataset_sha256")),
    )
    return tuple((label, str(value)[:16]) for label, value in found if value is not None)
