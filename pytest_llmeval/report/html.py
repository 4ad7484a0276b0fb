"""``report.html``: one self-contained page (inline CSS, inline SVG, vanilla JS, no network).

:func:`render_html` is pure: the same report and results give the same bytes. The summary
sections (suites, gates, pass rates, confusion matrix, GAIA levels, latency, baseline flips) are
rendered here, every value through :func:`html.escape`. The cases are embedded once as JSON in a
``<script type="application/json">`` block, with ``<``, ``>`` and ``&`` written as ``\\u003c``
escapes so no data can close the block; the page's script pages through them (100 rows a page),
filters by outcome, suite and search text, and builds a case's transcript only when its row is
opened, always with ``textContent``. A Content-Security-Policy allows only that one script (by
its hash) and inline styles, and no fetches of any kind.

The page reads and writes its filter state in the URL fragment, so a link can point at a view:
``report.html#q=timeout&outcome=failed&suite=golden&page=2&open=<nodeid>``.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import quote

from pytest_llmeval.models import CaseResult, ToolCallRecord
from pytest_llmeval.suites.base import base_totals

__all__ = ["DATA_ELEMENT_ID", "MAX_CHARS", "latency_buckets", "render_html"]

DATA_ELEMENT_ID = "llmeval-data"
"""The id of the ``<script type="application/json">`` element holding the cases."""
MAX_CHARS = 2000
"""Longer texts (responses, errors, tool arguments and results, details) are cut to this."""
MAX_TOOL_CALLS = 100
"""Tool calls embedded per case; the rest are counted in a marker."""
MAX_LISTED_IDS = 500
"""Case ids listed per baseline flip kind."""

OUTCOMES = ("passed", "failed", "error", "skipped")
FLIP_KINDS = ("pass->fail", "fail->pass", "new", "removed")


# -- the embedded case data --------------------------------------------------------------------


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [truncated: {len(text) - limit} more characters]"


def _json_text(value: Any, limit: int) -> str:
    """A value as compact JSON text (a string stays as it is), cut to ``limit``."""
    if isinstance(value, str):
        return _cut(value, limit)
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except TypeError:  # keys of mixed types cannot be sorted
        text = json.dumps(value, ensure_ascii=False, default=str)
    return _cut(text, limit)


def _ms_value(value: float) -> float:
    return round(value, 1) if math.isfinite(value) else 0.0


def _score(value: float) -> float | str:
    """A score as JSON allows it: NaN and infinities become strings."""
    return value if math.isfinite(value) else str(value)


def _tool_call(call: ToolCallRecord, limit: int) -> dict[str, Any]:
    row: dict[str, Any] = {
        "name": call.name,
        "ok": call.success,
        "source": call.source,
        "ms": _ms_value(call.duration_ms),
        "args": _json_text(call.params, limit),
    }
    if call.result is not None:
        row["result"] = _json_text(call.result, limit)
    if call.arguments_error is not None:
        row["args_error"] = _cut(call.arguments_error, limit)
    return row


def _case(result: CaseResult, limit: int) -> dict[str, Any]:
    """One case for the page; empty and default fields are left out to keep the file small."""
    row: dict[str, Any] = {
        "id": result.case_id,
        "nodeid": result.nodeid,
        "suite": result.suite,
        "outcome": result.outcome,
        "ms": _ms_value(result.duration_ms),
        "line": result.line,
    }
    if result.nodeid.split("::", 1)[0] != result.file:  # the page reads it off the node id
        row["file"] = result.file
    if result.category is not None:
        row["cat"] = result.category
    if result.error:
        row["error"] = _cut(result.error, limit)
    if result.response:
        row["response"] = _cut(result.response, limit)
    if result.tool_calls:
        calls = [_tool_call(c, limit) for c in result.tool_calls[:MAX_TOOL_CALLS]]
        row["tools"] = calls
        if len(result.tool_calls) > MAX_TOOL_CALLS:
            row["tools_more"] = len(result.tool_calls) - MAX_TOOL_CALLS
    if result.scores:
        row["scores"] = {key: _score(value) for key, value in sorted(result.scores.items())}
    usage = result.usage
    if usage.total_tokens or usage.prompt_tokens or usage.completion_tokens:
        row["usage"] = [usage.prompt_tokens, usage.completion_tokens, usage.total_tokens]
    if result.fixture_hits or result.fixture_misses:
        row["fixtures"] = [result.fixture_hits, result.fixture_misses]
    if result.details:
        row["details"] = _json_text(result.details, limit)
    return row


_SURROGATE = re.compile("[\ud800-\udfff]")


def _script_json(value: Any) -> str:
    """JSON that is safe inside ``<script>``: no ``<`` (so no ``</script>`` nor ``<!--``)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


# -- small formatting helpers -----------------------------------------------------------------


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _pct(value: Any) -> str:
    number = _num(value)
    return "n/a" if number is None else f"{number * 100:.1f}%"


def _int(value: Any) -> int:
    number = _num(value)
    return int(number) if number is not None else 0


def _fmt(value: Any) -> str:
    """A metric value for a table cell."""
    if value is None:
        return "–"
    number = _num(value)
    if number is None:
        return str(value)
    if number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    return f"{number:.4g}"


def _ms(value: float) -> str:
    if value >= 10_000:
        return f"{value / 1000:.0f} s"
    if value >= 1000:
        return f"{value / 1000:.1f} s".replace(".0 s", " s")
    if value >= 10 or value == 0:
        return f"{value:.0f} ms"
    return f"{value:.1f} ms"


def _totals(body: Any) -> dict[str, Any]:
    body = body if isinstance(body, dict) else {}
    counts = {key: _int(body.get(key)) for key in ("passed", "failed", "errors", "skipped")}
    total = _int(body.get("total")) if "total" in body else sum(counts.values())
    return {**counts, "total": total, "pass_rate": _num(body.get("pass_rate"))}


def _table(head: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "") -> str:
    """A table; ``head`` is plain text, ``rows`` hold already escaped HTML."""
    out = [f'<table class="{cls}">' if cls else "<table>", "<thead><tr>"]
    out += [f"<th>{_e(h)}</th>" for h in head]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _section(sid: str, heading: str, body: str) -> str:
    return f'<section id="{sid}"><h2>{_e(heading)}</h2>{body}</section>'


# -- summary sections --------------------------------------------------------------------------


def _count_cells(totals: dict[str, Any]) -> list[str]:
    return [
        str(totals["total"]),
        str(totals["passed"]),
        str(totals["failed"]),
        str(totals["errors"]),
        str(totals["skipped"]),
        _pct(totals["pass_rate"]),
    ]


def _overview(suites: dict[str, Any], totals: dict[str, Any]) -> str:
    head = ["suite", "cases", "passed", "failed", "errors", "skipped", "pass rate"]
    rows = [[_e(name), *_count_cells(_totals(body))] for name, body in suites.items()]
    rows.append(["<strong>all</strong>", *_count_cells(totals)])
    cards = "".join(
        f'<div class="card {cls}"><div class="big">{value}</div><div>{label}</div></div>'
        for cls, value, label in (
            ("", totals["total"], "cases"),
            ("passed", totals["passed"], "passed"),
            ("failed", totals["failed"], "failed"),
            ("error", totals["errors"], "errors"),
            ("skipped", totals["skipped"], "skipped"),
            ("", _pct(totals["pass_rate"]), "pass rate"),
        )
    )
    table = _table(head, rows, "num suites-table")
    return _section("overview", "Overview", f'<div class="cards">{cards}</div>{table}')


def _gate_rows(gates: Any) -> list[Any]:
    """The gates of a report: ``report.json``'s ``{"passed", "results": [gate results]}``
    (each ``{"gate": {name, suite, metric, op, threshold}, "value", "passed"}``), or a plain
    list of ``{name, metric, op, threshold, value, passed}``."""
    if isinstance(gates, dict):
        rows = []
        for result in gates.get("results") or []:
            if not isinstance(result, dict):
                continue
            found = result.get("gate")
            gate: dict[str, Any] = found if isinstance(found, dict) else {}
            rows.append(
                {
                    "name": gate.get("name", ""),
                    "metric": f"{gate.get('suite', '')}.{gate.get('metric', '')}",
                    "op": gate.get("op", ""),
                    "threshold": gate.get("threshold"),
                    "value": result.get("value"),
                    "passed": result.get("passed"),
                }
            )
        return rows
    return gates if isinstance(gates, list) else []


def _gates(report_gates: Any) -> str:
    gates = _gate_rows(report_gates)
    if not gates:
        return _section("gates", "Gates", '<p class="muted" id="no-gates">no gates</p>')
    rows = []
    passed = 0
    for gate in gates:
        gate = gate if isinstance(gate, dict) else {}
        ok = gate.get("passed") is True
        passed += ok
        badge = (
            '<span class="badge passed">pass</span>'
            if ok
            else '<span class="badge failed">fail</span>'
        )
        rows.append(
            [
                _e(gate.get("name", "")),
                _e(gate.get("metric", "")),
                _e(gate.get("op", "")),
                _e(_fmt(gate.get("threshold"))),
                _e(_fmt(gate.get("value"))),
                badge,
            ]
        )
    verdict = "passed" if passed == len(rows) else "failed"
    summary = f'<p class="gate-summary {verdict}">{passed}/{len(rows)} gates passed</p>'
    head = ["gate", "metric", "op", "threshold", "value", "result"]
    return _section("gates", "Gates", summary + _table(head, rows, "gates-table"))


def _stacked_bar(totals: dict[str, Any]) -> str:
    total = totals["total"]
    if not total:
        return '<div class="bar"></div>'
    segments = []
    for outcome, key in zip(OUTCOMES, ("passed", "failed", "errors", "skipped"), strict=True):
        count = totals[key]
        if count:
            width = count / total * 100
            segments.append(
                f'<span class="seg {outcome}" style="width:{width:.3f}%" '
                f'title="{count} {_e(outcome)}"></span>'
            )
    return f'<div class="bar">{"".join(segments)}</div>'


def _bar_row(label: str, totals: dict[str, Any]) -> str:
    rate = _pct(totals["pass_rate"])
    judged = totals["passed"] + totals["failed"] + totals["errors"]
    return (
        f'<div class="bar-row"><span class="bar-label" title="{_e(label)}">{_e(label)}</span>'
        f"{_stacked_bar(totals)}"
        f'<span class="bar-value">{rate} <span class="muted">({totals["passed"]}/{judged})'
        "</span></span></div>"
    )


def _pass_rates(suites: dict[str, Any]) -> str:
    legend = "".join(f'<span><span class="swatch {o}"></span>{o}</span>' for o in OUTCOMES)
    parts = [f'<div class="legend">{legend}</div>', "<h3>By suite</h3>", '<div class="bars">']
    parts += [_bar_row(name, _totals(body)) for name, body in suites.items()]
    parts.append("</div>")
    for name, body in suites.items():
        categories = body.get("categories") if isinstance(body, dict) else None
        if not isinstance(categories, dict) or not categories:
            continue
        parts.append(f"<h3>By category: {_e(name)}</h3>")
        parts.append('<div class="bars">')
        parts += [_bar_row(str(cat), _totals(totals)) for cat, totals in categories.items()]
        parts.append("</div>")
    return _section("pass-rates", "Pass rates", "".join(parts))


def _confusion(suites: dict[str, Any]) -> str:
    parts = []
    for name, body in suites.items():
        matrix_body = body.get("confusion_matrix") if isinstance(body, dict) else None
        if matrix_body is None:
            continue
        parts.append(f"<h3>{_e(name)}</h3>")
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
            parts.append('<p class="muted">malformed confusion matrix (labels × labels)</p>')
            continue
        values = [[_num(v) or 0.0 for v in row] for row in matrix]
        peak = max((v for row in values for v in row), default=0.0) or 1.0
        out = ['<table class="heatmap"><thead><tr><th class="corner">true ↓ / predicted →</th>']
        out += [f"<th>{_e(label)}</th>" for label in labels]
        out.append("<th>total</th><th>recall</th></tr></thead><tbody>")
        for i, (label, row) in enumerate(zip(labels, values, strict=True)):
            row_total = sum(row)
            out.append(f"<tr><th>{_e(label)}</th>")
            for j, value in enumerate(row):
                alpha = max(0.0, min(1.0, value / peak))
                share = f"{value / row_total * 100:.1f}% of row" if row_total else "empty row"
                cls = "cell diag" if i == j else "cell"
                ink = ' data-dark="1"' if alpha > 0.55 else ""
                out.append(
                    f'<td class="{cls}"{ink} style="background:rgba(25,118,210,{alpha:.3f})" '
                    f'title="true {_e(label)}, predicted {_e(labels[j])}: {_fmt(value)} '
                    f'({share})">{_fmt(value)}</td>'
                )
            recall = _pct(row[i] / row_total) if row_total else "n/a"
            out.append(f"<td>{_fmt(row_total)}</td><td>{recall}</td></tr>")
        out.append("</tbody></table>")
        parts.append("".join(out))
    if not parts:
        return ""
    return _section("confusion-matrix", "Confusion matrix", "".join(parts))


def _level_key(name: str) -> tuple[int, str]:
    digits = "".join(ch for ch in name if ch.isdigit())
    return (int(digits) if digits else 1 << 30, name)


def _levels(suites: dict[str, Any]) -> str:
    parts = []
    for name, body in suites.items():
        levels = body.get("levels") if isinstance(body, dict) else None
        if not isinstance(levels, dict) or not levels:
            continue
        rows = []
        for level in sorted(levels, key=lambda k: _level_key(str(k))):
            entry = levels[level] if isinstance(levels[level], dict) else {}
            accuracy = _num(entry.get("accuracy"))
            width = 0.0 if accuracy is None else max(0.0, min(1.0, accuracy)) * 100
            bar = (
                f'<div class="bar small"><span class="seg passed" style="width:{width:.3f}%">'
                "</span></div>"
            )
            rows.append(
                [
                    _e(level),
                    _e(_fmt(entry.get("questions"))),
                    _e(_fmt(entry.get("correct"))),
                    _pct(accuracy),
                    bar,
                ]
            )
        head = ["level", "questions", "correct", "accuracy", ""]
        parts.append(f"<h3>{_e(name)}</h3>" + _table(head, rows, "num levels-table"))
    if not parts:
        return ""
    return _section("levels", "Accuracy by level", "".join(parts))


def _nice_step(raw: float) -> float:
    """The smallest of 1, 2, 2.5, 5 × 10^k that is at least ``raw``."""
    exponent = math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0):
        step = factor * 10.0**exponent
        if step >= raw * (1 - 1e-12):
            return step
    return 10.0 ** (exponent + 1)  # pragma: no cover - the loop always returns


def _histogram(
    durations: Sequence[float], bins: int
) -> tuple[list[tuple[float, float, int]], bool]:
    values = sorted(max(0.0, float(v)) for v in durations if math.isfinite(v))
    if not values:
        return [], False
    top = values[-1]
    if top <= 0:
        return [(0.0, 0.0, len(values))], False
    span = _quantile(values, 0.99) or top
    width = _nice_step(span / bins)
    count = math.floor(span / width) + 1  # the last bucket holds ``span`` itself
    edge = count * width
    counts = [0] * count
    overflow = 0
    for value in values:
        if value >= edge:
            overflow += 1
        else:
            counts[min(count - 1, int(value // width))] += 1
    buckets = [(i * width, (i + 1) * width, n) for i, n in enumerate(counts)]
    if overflow:
        buckets.append((edge, top, overflow))
    return buckets, overflow > 0


def latency_buckets(durations: Sequence[float], bins: int = 20) -> list[tuple[float, float, int]]:
    """A histogram of ``durations`` as ``(low, high, count)`` buckets.

    Equal buckets of a round width (1, 2, 2.5 or 5 × 10^k; about ``bins`` of them) cover 0 to
    the 99th percentile, ``[low, high)`` each; when slower outliers exist, a last bucket
    ``(edge, max, count)`` gathers them.
    """
    return _histogram(durations, bins)[0]


def _quantile(values: Sequence[float], q: float) -> float:
    return values[min(len(values) - 1, max(0, math.ceil(q * len(values)) - 1))]


def _latency(results: Sequence[CaseResult]) -> str:
    durations = sorted(
        max(0.0, r.duration_ms)
        for r in results
        if r.outcome != "skipped" and math.isfinite(r.duration_ms)
    )
    buckets, has_overflow = _histogram(durations, 20)
    if not buckets:
        return _section("latency", "Latency", '<p class="muted">no timed cases</p>')
    stats = " · ".join(
        f"{label} {_ms(value)}"
        for label, value in (
            ("p50", _quantile(durations, 0.5)),
            ("p90", _quantile(durations, 0.9)),
            ("p99", _quantile(durations, 0.99)),
            ("max", durations[-1]),
            ("mean", sum(durations) / len(durations)),
        )
    )
    width, height, left, bottom, top = 760.0, 240.0, 48.0, 36.0, 12.0
    plot_w, plot_h = width - left - 8, height - bottom - top
    peak = max(n for _, _, n in buckets) or 1
    slot = plot_w / len(buckets)
    svg = [
        f'<svg class="histogram" viewBox="0 0 {width:.0f} {height:.0f}" role="img" '
        f'aria-label="latency histogram of {len(durations)} cases">'
    ]
    for frac in (0.0, 0.5, 1.0):
        y = top + plot_h * (1 - frac)
        svg.append(
            f'<line class="grid" x1="{left}" x2="{width - 8}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="axis" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{round(peak * frac)}</text>"
        )
    label_every = max(1, math.ceil(len(buckets) / 8))
    last = len(buckets) - 1
    for i, (low, high, n) in enumerate(buckets):
        bar_h = plot_h * n / peak
        x = left + i * slot
        overflow = has_overflow and i == last
        span = f"≥ {_ms(low)}" if overflow else f"{_ms(low)}–{_ms(high)}"
        cls = "bin overflow" if overflow else "bin"
        svg.append(
            f'<rect class="{cls}" x="{x + 1:.1f}" y="{top + plot_h - bar_h:.1f}" '
            f'width="{max(1.0, slot - 2):.1f}" height="{bar_h:.1f}">'
            f"<title>{_e(span)}: {n} cases</title></rect>"
        )
        if i % label_every == 0 or overflow:
            text = f"≥{_ms(low)}" if overflow else _ms(low)
            svg.append(
                f'<text class="axis" x="{x + 1:.1f}" y="{height - bottom + 16:.1f}">'
                f"{_e(text)}</text>"
            )
    svg.append(
        f'<line class="axis-line" x1="{left}" x2="{width - 8}" y1="{top + plot_h:.1f}" '
        f'y2="{top + plot_h:.1f}"/></svg>'
    )
    body = f'<p class="muted">{len(durations)} cases · {stats}</p>' + "".join(svg)
    return _section("latency", "Latency", body)


def _baseline(baseline: Any) -> str:
    if not isinstance(baseline, dict):
        return ""
    parts = []
    mcnemar = baseline.get("mcnemar")
    if isinstance(mcnemar, dict):
        b, c, p = mcnemar.get("b"), mcnemar.get("c"), mcnemar.get("p_value")
        p_num = _num(p)
        verdict = ""
        if p_num is not None:
            verdict = " (significant at 0.05)" if p_num < 0.05 else " (not significant at 0.05)"
        parts.append(
            f'<p class="mcnemar">McNemar: b = {_e(_fmt(b))} (pass→fail), '
            f"c = {_e(_fmt(c))} (fail→pass), p = {_e(_fmt(p))}{verdict}</p>"
        )
    flips = baseline.get("flips")
    flips = flips if isinstance(flips, dict) else {}
    kinds = [k for k in FLIP_KINDS if k in flips] + sorted(k for k in flips if k not in FLIP_KINDS)
    cards = []
    lists = []
    for kind in kinds:
        ids = flips[kind] if isinstance(flips[kind], list) else []
        cls = {"pass->fail": "failed", "fail->pass": "passed"}.get(kind, "")
        cards.append(
            f'<div class="card {cls}"><div class="big">{len(ids)}</div><div>{_e(kind)}</div></div>'
        )
        if not ids:
            continue
        items = "".join(
            f'<li><a href="#q={_e(quote(str(case), safe=""))}">{_e(case)}</a></li>'
            for case in ids[:MAX_LISTED_IDS]
        )
        more = (
            f'<li class="muted">… and {len(ids) - MAX_LISTED_IDS} more</li>'
            if len(ids) > MAX_LISTED_IDS
            else ""
        )
        lists.append(
            f'<details class="flips"><summary>{_e(kind)} ({len(ids)})</summary>'
            f'<ul class="ids">{items}{more}</ul></details>'
        )
    if cards:
        parts.append(f'<div class="cards">{"".join(cards)}</div>')
    parts += lists
    if not parts:
        parts.append('<p class="muted">baseline given, no flips recorded</p>')
    return _section("baseline", "Baseline", "".join(parts))


def _header(report: dict[str, Any], title: str, sections: Sequence[str], n_cases: int) -> str:
    facts = [
        ("plugin", report.get("plugin_version")),
        ("report", report.get("report_version")),
        ("runner", report.get("runner_fingerprint")),
        ("dataset", report.get("dataset_sha256")),
    ]
    meta = " · ".join(
        f"{_e(label)} <code>{_e(str(value)[:16])}</code>"
        for label, value in facts
        if value is not None
    )
    nav = "".join(
        f'<a href="#{sid}">{label}</a>'
        for sid, label in (
            ("overview", "overview"),
            ("gates", "gates"),
            ("pass-rates", "pass rates"),
            ("confusion-matrix", "confusion matrix"),
            ("levels", "levels"),
            ("latency", "latency"),
            ("baseline", "baseline"),
            ("cases", f"cases ({n_cases})"),
        )
        if any(section.startswith(f'<section id="{sid}">') for section in sections)
    )
    return f'<header><h1>{_e(title)}</h1><p class="muted">{meta}</p><nav>{nav}</nav></header>'


def _cases_section() -> str:
    options = "".join(
        f'<option value="{value}">{label}</option>'
        for value, label in (
            ("", "all outcomes"),
            ("passed", "passed"),
            ("failed", "failed"),
            ("error", "error"),
            ("skipped", "skipped"),
            ("problems", "failed or error"),
        )
    )
    columns = "".join(
        f'<th data-sort="{key}" class="sortable">{label}</th>' if key else f"<th>{label}</th>"
        for key, label in (
            ("", ""),
            ("id", "case"),
            ("suite", "suite"),
            ("cat", "category"),
            ("outcome", "outcome"),
            ("ms", "duration"),
            ("", "error / response"),
        )
    )
    pager = (
        '<div class="pager"><button type="button" id="page-first">«</button>'
        '<button type="button" id="page-prev">‹ prev</button>'
        '<span id="pager-info" aria-live="polite"></span>'
        '<button type="button" id="page-next">next ›</button>'
        '<button type="button" id="page-last">»</button></div>'
    )
    body = (
        '<div class="controls">'
        '<input type="search" id="case-search" placeholder="search id, response, error" '
        'aria-label="search cases" autocomplete="off">'
        f'<select id="case-outcome" aria-label="outcome">{options}</select>'
        '<select id="case-suite" aria-label="suite"><option value="">all suites</option>'
        "</select></div>"
        f"{pager}"
        f'<table class="cases"><thead><tr>{columns}</tr></thead>'
        '<tbody id="case-rows"></tbody></table>'
        "<noscript><p>The case table needs JavaScript.</p></noscript>"
    )
    return _section("cases", "Cases", body)


# -- the page ----------------------------------------------------------------------------------


def render_html(
    report: dict[str, Any],
    results: Sequence[CaseResult],
    *,
    title: str = "pytest-llmeval report",
    max_chars: int = MAX_CHARS,
) -> str:
    """The whole ``report.html`` for a ``report.json`` body and its case results.

    Optional report keys add sections: ``gates`` (``report.json``'s ``{passed, results}``, or a
    list of ``{name, metric, op, threshold, value, passed}``; "no gates" otherwise),
    ``suites.<name>.confusion_matrix``
    (``{labels, matrix}``, ``matrix[true][predicted]``), ``suites.<name>.levels``
    (``{level1: {accuracy, correct, questions}, ...}``) and ``baseline`` (``{flips: {kind:
    [ids]}, mcnemar: {b, c, p_value}}``). Texts longer than ``max_chars`` are cut with a
    ``… [truncated: N more characters]`` marker.
    """
    suites = report.get("suites")
    suites = suites if isinstance(suites, dict) else {}
    totals = _totals(report["totals"]) if isinstance(report.get("totals"), dict) else None
    totals = totals or base_totals(results)
    # the cases' JSON first: their row dicts are freed before the page is joined
    data = _script_json(
        {"version": 1, "max_chars": max_chars, "cases": [_case(r, max_chars) for r in results]}
    )
    sections = [
        _overview(suites, totals),
        _gates(report.get("gates")),
        _pass_rates(suites),
        _confusion(suites),
        _levels(suites),
        _latency(results),
        _baseline(report.get("baseline")),
        _cases_section(),
    ]
    page = "".join(
        [
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
            '<meta name="referrer" content="no-referrer">',
            f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n<body>",
            _header(report, title, sections, len(results)),
            "<main>",
            *sections,
            "</main>\n",
            f'<script type="application/json" id="{DATA_ELEMENT_ID}">',
            data,
            "</script>\n",
            f"<script>{_JS}</script>\n</body></html>\n",
        ]
    )
    # Lone surrogates (possible in JSON-sourced strings) cannot be written as UTF-8. Replacing
    # them copies the page twice (tens of MB at 100,000 cases), so only when there is one.
    if _SURROGATE.search(page) is not None:
        page = page.encode("utf-8", "replace").decode("utf-8")
    return page


# -- static assets -----------------------------------------------------------------------------

_CSS = """
:root{--fg:#1f2328;--muted:#636c76;--bg:#fff;--panel:#f6f8fa;--line:#d0d7de;
--passed:#2e7d32;--failed:#c62828;--error:#ef6c00;--skipped:#9e9e9e;--accent:#1976d2}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--bg:#0d1117;
--panel:#161b22;--line:#30363d}}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
color:var(--fg);background:var(--bg)}
header{padding:16px 24px 8px;border-bottom:1px solid var(--line);background:var(--panel)}
header h1{margin:0 0 4px;font-size:22px}
nav a{margin-right:14px;color:var(--accent);text-decoration:none}
main{padding:8px 24px 40px;max-width:1400px}
section{margin:18px 0 26px}
h2{font-size:18px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:14px 0 6px}
.muted{color:var(--muted)}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
table{border-collapse:collapse;margin:6px 0}
th,td{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
th{background:var(--panel)}
table.num td:not(:first-child){text-align:right}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:8px 0 12px}
.card{border:1px solid var(--line);border-radius:6px;padding:8px 14px;min-width:96px;
background:var(--panel)}
.card .big{font-size:22px;font-weight:600}
.card.passed .big{color:var(--passed)}.card.failed .big{color:var(--failed)}
.card.error .big{color:var(--error)}.card.skipped .big{color:var(--skipped)}
.badge{display:inline-block;padding:0 7px;border-radius:9px;color:#fff;font-size:12px;
font-weight:600}
.badge.passed{background:var(--passed)}.badge.failed{background:var(--failed)}
.badge.error{background:var(--error)}.badge.skipped{background:var(--skipped)}
.gate-summary{font-weight:600}.gate-summary.passed{color:var(--passed)}
.gate-summary.failed{color:var(--failed)}
.bars{display:grid;gap:4px;max-width:980px}
.bar-row{display:grid;grid-template-columns:220px 1fr 150px;gap:10px;align-items:center}
.bar-label{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.bar{display:flex;height:16px;background:var(--panel);border:1px solid var(--line);
border-radius:3px;overflow:hidden}
.bar.small{width:200px}
.seg{display:block;height:100%}
.seg.passed,.swatch.passed{background:var(--passed)}
.seg.failed,.swatch.failed{background:var(--failed)}
.seg.error,.swatch.error{background:var(--error)}
.seg.skipped,.swatch.skipped{background:var(--skipped)}
.legend{display:flex;gap:14px}
.swatch{display:inline-block;width:11px;height:11px;margin-right:4px;border-radius:2px}
.heatmap td.cell{text-align:right;min-width:56px}
.heatmap td.cell[data-dark]{color:#fff}
.heatmap td.diag{outline:2px solid var(--fg);outline-offset:-2px}
.heatmap th.corner{font-weight:400;color:var(--muted)}
svg.histogram{width:100%;max-width:760px;height:auto;display:block}
svg .bin{fill:var(--accent)}svg .bin.overflow{fill:var(--error)}
svg .grid{stroke:var(--line);stroke-dasharray:3 3}svg .axis-line{stroke:var(--muted)}
svg .axis{fill:var(--muted);font-size:11px}
details.flips summary{cursor:pointer;margin:4px 0}
ul.ids{columns:4 220px;font-family:ui-monospace,monospace;font-size:12.5px}
.controls{display:flex;gap:8px;flex-wrap:wrap;margin:8px 0}
.controls input{flex:1 1 320px;padding:5px 8px}
.controls input,.controls select,.pager button{font:inherit;color:var(--fg);
background:var(--bg);border:1px solid var(--line);border-radius:4px}
.controls select{padding:4px}
.pager{display:flex;gap:6px;align-items:center;margin:6px 0}
.pager button{padding:2px 10px;cursor:pointer}.pager button:disabled{opacity:.4;cursor:default}
#pager-info{min-width:230px;text-align:center}
table.cases{width:100%;table-layout:fixed}
table.cases th.sortable{cursor:pointer}
table.cases th[aria-sort=ascending]::after{content:" ▲"}
table.cases th[aria-sort=descending]::after{content:" ▼"}
table.cases th:nth-child(1){width:28px}
table.cases th:nth-child(2){width:22%}table.cases th:nth-child(3){width:9%}
table.cases th:nth-child(4){width:11%}table.cases th:nth-child(5){width:80px}
table.cases th:nth-child(6){width:84px}
tr.case-row{cursor:pointer}tr.case-row:hover,tr.case-row:focus{background:var(--panel)}
tr.case-row td{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
tr.case-row td.ms{text-align:right}
tr.case-detail>td{background:var(--panel);white-space:normal}
.transcript h4{margin:10px 0 4px;font-size:13px}
.transcript pre{white-space:pre-wrap;word-break:break-word;margin:2px 0 6px;padding:6px 8px;
background:var(--bg);border:1px solid var(--line);border-radius:4px;max-height:420px;
overflow:auto}
.transcript ol{padding-left:22px;margin:4px 0}
.transcript .tool-head{font-weight:600}
.transcript .tool-head .muted{font-weight:400}
"""

_JS = r"""
(() => {
  "use strict";
  const PAGE_SIZE = 100;
  const $ = (id) => document.getElementById(id);
  const payload = JSON.parse($("llmeval-data").textContent);
  const cases = payload.cases;
  const searchBox = $("case-search");
  const outcomeSel = $("case-outcome");
  const suiteSel = $("case-suite");
  const tbody = $("case-rows");
  const info = $("pager-info");
  const state = {q: "", outcome: "", suite: "", page: 0, sort: "", desc: false, open: new Set()};
  let view = [];
  const hay = new Array(cases.length);

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function ms(v) {
    if (v >= 10000) return (v / 1000).toFixed(0) + " s";
    if (v >= 1000) return (v / 1000).toFixed(1) + " s";
    if (v >= 10 || v === 0) return v.toFixed(0) + " ms";
    return v.toFixed(1) + " ms";
  }
  function pretty(text) {
    try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return text; }
  }
  function haystack(i) {
    if (hay[i] === undefined) {
      const c = cases[i];
      hay[i] = [c.id, c.nodeid, c.response || "", c.error || ""].join("\n").toLowerCase();
    }
    return hay[i];
  }

  for (const name of Array.from(new Set(cases.map((c) => c.suite))).sort()) {
    const option = el("option", null, name);
    option.value = name;
    suiteSel.appendChild(option);
  }

  /* "#q=x&outcome=failed" is a view of the cases; "#latency" is just an anchor */
  const viewHash = () => location.hash.includes("=");
  function readHash() {
    const params = new URLSearchParams(viewHash() ? location.hash.slice(1) : "");
    state.q = params.get("q") || "";
    state.outcome = params.get("outcome") || "";
    state.suite = params.get("suite") || "";
    state.sort = params.get("sort") || "";
    state.desc = params.get("desc") === "1";
    state.page = Math.max(0, (parseInt(params.get("page") || "1", 10) || 1) - 1);
    state.open = new Set();
    const wanted = new Set(params.getAll("open"));
    if (wanted.size) {
      cases.forEach((c, i) => { if (wanted.has(c.nodeid) || wanted.has(c.id)) state.open.add(i); });
    }
    searchBox.value = state.q;
    outcomeSel.value = state.outcome;
    suiteSel.value = state.suite;
    return params.has("page");
  }
  function writeHash() {
    const params = new URLSearchParams();
    if (state.q) params.set("q", state.q);
    if (state.outcome) params.set("outcome", state.outcome);
    if (state.suite) params.set("suite", state.suite);
    if (state.sort) params.set("sort", state.sort);
    if (state.sort && state.desc) params.set("desc", "1");
    if (state.page) params.set("page", String(state.page + 1));
    for (const i of state.open) params.append("open", cases[i].nodeid);
    const text = params.toString();
    if (!text && !viewHash()) return;  /* keep a section anchor */
    try {
      history.replaceState(null, "", text ? "#" + text : location.pathname + location.search);
    } catch (e) { /* file:// in some browsers */ }
  }

  function compute() {
    const terms = state.q.toLowerCase().split(/\s+/).filter(Boolean);
    const out = [];
    for (let i = 0; i < cases.length; i++) {
      const c = cases[i];
      if (state.outcome === "problems") {
        if (c.outcome !== "failed" && c.outcome !== "error") continue;
      } else if (state.outcome && c.outcome !== state.outcome) continue;
      if (state.suite && c.suite !== state.suite) continue;
      if (terms.length) {
        const h = haystack(i);
        if (!terms.every((t) => h.includes(t))) continue;
      }
      out.push(i);
    }
    if (state.sort) {
      const key = state.sort;
      const sign = state.desc ? -1 : 1;
      out.sort((a, b) => {
        const x = cases[a][key], y = cases[b][key];
        if (x === y) return a - b;
        if (x === undefined || x === null) return 1;
        if (y === undefined || y === null) return -1;
        return (x < y ? -1 : 1) * sign;
      });
    }
    view = out;
    for (const th of document.querySelectorAll("th[data-sort]")) {
      if (th.dataset.sort !== state.sort) th.removeAttribute("aria-sort");
      else th.setAttribute("aria-sort", state.desc ? "descending" : "ascending");
    }
  }

  function caseRow(i) {
    const c = cases[i];
    const tr = el("tr", "case-row");
    tr.dataset.index = String(i);
    tr.tabIndex = 0;
    tr.setAttribute("aria-expanded", state.open.has(i) ? "true" : "false");
    tr.appendChild(el("td", "toggle", state.open.has(i) ? "▾" : "▸"));
    const id = el("td", "case-id", c.id);
    id.title = c.nodeid;
    tr.appendChild(id);
    tr.appendChild(el("td", null, c.suite));
    tr.appendChild(el("td", null, c.cat === undefined ? "" : c.cat));
    const outcome = el("td");
    outcome.appendChild(el("span", "badge " + c.outcome, c.outcome));
    tr.appendChild(outcome);
    tr.appendChild(el("td", "ms", ms(c.ms)));
    const snippet = (c.error || c.response || "").slice(0, 240);
    const last = el("td", c.error ? "snippet err" : "snippet", snippet);
    tr.appendChild(last);
    return tr;
  }

  function block(parent, heading, text) {
    parent.appendChild(el("h4", null, heading));
    parent.appendChild(el("pre", null, text));
  }

  function detailRow(i) {
    const c = cases[i];
    const tr = el("tr", "case-detail");
    const td = el("td");
    td.colSpan = 7;
    const box = el("div", "transcript");
    const file = c.file !== undefined ? c.file : c.nodeid.split("::")[0];
    box.appendChild(el("div", "muted", c.nodeid + "  ·  " + file + ":" + c.line));
    if (c.error) block(box, "Error", c.error);
    const tools = c.tools || [];
    box.appendChild(el("h4", null, "Tool calls (" + (tools.length + (c.tools_more || 0)) + ")"));
    if (tools.length) {
      const list = el("ol");
      for (const call of tools) {
        const item = el("li", "tool-call");
        const head = el("div", "tool-head", call.name + " ");
        head.appendChild(el("span", "muted",
          "[" + call.source + ", " + (call.ok ? "ok" : "failed") + ", " + ms(call.ms) + "]"));
        item.appendChild(head);
        item.appendChild(el("div", "muted", "arguments"));
        item.appendChild(el("pre", "tool-args", pretty(call.args)));
        if (call.args_error !== undefined) {
          item.appendChild(el("div", "muted", "unparsed arguments"));
          item.appendChild(el("pre", null, call.args_error));
        }
        if (call.result !== undefined) {
          item.appendChild(el("div", "muted", "result"));
          item.appendChild(el("pre", "tool-result", pretty(call.result)));
        }
        list.appendChild(item);
      }
      if (c.tools_more) {
        list.appendChild(el("li", "muted", "… " + c.tools_more + " more tool calls"));
      }
      box.appendChild(list);
    } else {
      box.appendChild(el("div", "muted", "none"));
    }
    block(box, "Final response", c.response || "");
    if (c.scores) {
      const parts = Object.keys(c.scores).map((k) => k + " = " + c.scores[k]);
      block(box, "Scores", parts.join("\n"));
    }
    const facts = [];
    if (c.usage) {
      const [prompt, completion, total] = c.usage;
      facts.push(`tokens: prompt ${prompt}, completion ${completion}, total ${total}`);
    }
    if (c.fixtures) facts.push(`fixtures: ${c.fixtures[0]} hits, ${c.fixtures[1]} misses`);
    if (facts.length) box.appendChild(el("p", "muted", facts.join("  ·  ")));
    if (c.details) block(box, "Details", pretty(c.details));
    td.appendChild(box);
    tr.appendChild(td);
    return tr;
  }

  function render() {
    const pages = Math.max(1, Math.ceil(view.length / PAGE_SIZE));
    state.page = Math.min(Math.max(0, state.page), pages - 1);
    const start = state.page * PAGE_SIZE;
    const end = Math.min(view.length, start + PAGE_SIZE);
    const frag = document.createDocumentFragment();
    for (let k = start; k < end; k++) {
      const i = view[k];
      frag.appendChild(caseRow(i));
      if (state.open.has(i)) frag.appendChild(detailRow(i));
    }
    if (!view.length) {
      const tr = el("tr", "empty");
      const td = el("td", "muted", "No case matches.");
      td.colSpan = 7;
      tr.appendChild(td);
      frag.appendChild(tr);
    }
    tbody.replaceChildren(frag);
    let text = view.length ? (start + 1) + "–" + end + " of " + view.length : "0 of 0";
    if (view.length !== cases.length) text += " (filtered from " + cases.length + ")";
    info.textContent = text;
    $("page-first").disabled = $("page-prev").disabled = state.page === 0;
    $("page-next").disabled = $("page-last").disabled = state.page >= pages - 1;
    writeHash();
  }

  function toggle(tr) {
    const i = Number(tr.dataset.index);
    if (state.open.has(i)) {
      state.open.delete(i);
      const next = tr.nextElementSibling;
      if (next && next.classList.contains("case-detail")) next.remove();
    } else {
      state.open.add(i);
      tr.after(detailRow(i));
    }
    const open = state.open.has(i);
    tr.setAttribute("aria-expanded", open ? "true" : "false");
    tr.firstChild.textContent = open ? "▾" : "▸";
    writeHash();
  }

  function refilter() { state.page = 0; compute(); render(); }
  let timer = 0;
  searchBox.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => { state.q = searchBox.value; refilter(); }, 150);
  });
  outcomeSel.addEventListener("change", () => { state.outcome = outcomeSel.value; refilter(); });
  suiteSel.addEventListener("change", () => { state.suite = suiteSel.value; refilter(); });
  const go = (page) => () => { state.page = page(); render(); $("cases").scrollIntoView(); };
  $("page-first").addEventListener("click", go(() => 0));
  $("page-prev").addEventListener("click", go(() => state.page - 1));
  $("page-next").addEventListener("click", go(() => state.page + 1));
  $("page-last").addEventListener("click", go(() => Infinity));
  for (const th of document.querySelectorAll("th[data-sort]")) {
    th.addEventListener("click", () => {
      const key = th.dataset.sort;
      if (state.sort === key && !state.desc) state.desc = true;
      else if (state.sort === key) { state.sort = ""; state.desc = false; }
      else { state.sort = key; state.desc = false; }
      refilter();
    });
  }
  tbody.addEventListener("click", (event) => {
    if (event.target.closest("pre")) return;  /* let people select transcript text */
    const tr = event.target.closest("tr.case-row");
    if (tr) toggle(tr);
  });
  tbody.addEventListener("keydown", (event) => {
    const tr = event.target.closest("tr.case-row");
    if (tr && (event.key === "Enter" || event.key === " ")) { event.preventDefault(); toggle(tr); }
  });

  function load() {
    const pinned = readHash();
    compute();
    if (!pinned && state.open.size) {
      const first = view.findIndex((i) => state.open.has(i));
      if (first >= 0) state.page = Math.floor(first / PAGE_SIZE);
    }
    render();
  }
  /* a link inside the page (a baseline flip) filters the cases and shows them */
  window.addEventListener("hashchange", () => {
    if (!viewHash()) return;
    load();
    $("cases").scrollIntoView();
  });
  load();
  document.body.dataset.ready = "1";
})();
"""

_SCRIPT_HASH = base64.b64encode(hashlib.sha256(_JS.encode("utf-8")).digest()).decode("ascii")
_CSP = (
    "default-src 'none'; "
    "style-src 'unsafe-inline'; "
    f"script-src 'sha256-{_SCRIPT_HASH}'; "
    "base-uri 'none'; form-action 'none'"
)
