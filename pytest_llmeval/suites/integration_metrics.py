"""Tool-integration dataset metrics and gates (``report.json`` ``suites.integration``).

Every rate is ``null`` when its denominator is empty, never 1.0. From the items' details:

* ``eligible``; ``lax`` and ``strict``: ``macro_f1`` (mean of per-item F1), ``micro_f1``
  (pooled: ``P = Σg/Σn``, ``R = |g ≥ 1| / |eligible|``), ``macro_precision``,
  ``macro_recall``, and ``micro_fact_recall`` (found keyed facts over keyed facts);
* ``integration_coverage``, ``grounded_coverage``, ``strict_grounded_coverage``,
  ``multi_call_parity``, ``json_args_validity``, ``branching_recovery``;
* ``controls``, ``controls_with_integration``, ``control_contamination_rate``,
  ``negative_controls``, ``negative_control_ok_rate``, ``locale`` (rate per locale) and
  ``locale_f1_delta`` (the reference's proxy, ``|F1_lax - F1_strict|`` per locale);
* ``spans_exceeded_cap``, ``span_count_histogram``, ``per_tool_deltas``,
  ``fixture_hit_rate``, ``privacy_ok_rate``;
* ``gates``: the suite's own gates (:data:`GATES`), each with a ``status`` (``pass``,
  ``fail``, ``inconclusive``, ``warn``, ``n/a``) and the items that missed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.rundir.models import Number, SuiteSection
from pytest_llmeval.scoring.grounding import harmonic
from pytest_llmeval.suites.base import base_totals


@dataclass(frozen=True)
class GateSpec:
    """One built-in gate: the metric it reads, its default threshold and its kind."""

    metric: str
    threshold: float
    kind: str
    """``count`` (misses <= max(1, ceil(0.05 N)) or rate >= threshold; inconclusive below
    ``min_eligible_for_gates``), ``hard`` (rate >= threshold), ``zero`` (a count that must be
    0), or ``warn`` (reported, never fails)."""


GATES: dict[str, GateSpec] = {
    "integration_coverage": GateSpec("integration_coverage", 0.98, "count"),
    "grounded_coverage": GateSpec("grounded_coverage", 0.97, "count"),
    "multi_call_parity": GateSpec("multi_call_parity", 0.95, "count"),
    "controls_with_integration": GateSpec("controls_with_integration", 0.0, "zero"),
    "json_args_validity": GateSpec("json_args_validity", 0.98, "hard"),
    "negative_control_ok_rate": GateSpec("negative_control_ok_rate", 1.0, "hard"),
    "strict_macro_f1": GateSpec("strict.macro_f1", 0.75, "warn"),
}
"""The seed's gates and the reference's thresholds (a dataset header may change them)."""
MAX_LISTED = 20


def _rate(hits: Sequence[bool]) -> float | None:
    return sum(hits) / len(hits) if hits else None


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_round(v) for v in value]
    return value


@dataclass(frozen=True)
class Row:
    case_id: str
    d: Mapping[str, Any]


def _mode(rows: Sequence[Row], mode: str, compat: bool) -> dict[str, Any]:
    if not rows:
        keys = ("macro_f1", "micro_f1", "macro_precision", "macro_recall", "micro_fact_recall")
        return dict.fromkeys(keys)
    f1 = [r.d[mode]["f1"] for r in rows]
    spans = sum(len(r.d["spans"]) for r in rows)
    grounded = sum(r.d[f"{mode}_grounded"] for r in rows)
    precision = grounded / spans if spans else None
    recall = sum(1 for r in rows if r.d[f"{mode}_grounded"]) / len(rows)
    keyed = sum(r.d["keyed_facts"] for r in rows)
    macro_p = _mean([r.d[mode]["precision"] for r in rows])
    macro_r = _mean([r.d[mode]["recall"] for r in rows])
    out = {
        "macro_f1": _mean(f1),
        "micro_f1": harmonic(precision, recall) if precision is not None else 0.0,
        "macro_precision": macro_p,
        "macro_recall": macro_r,
        "micro_fact_recall": sum(r.d["keyed_facts_found"] for r in rows) / keyed if keyed else None,
    }
    if compat:  # the reference's two "micro" F1s: summarize's is the report's
        any_recall = 1.0 if any(r.d[mode]["recall"] for r in rows) else 0.0
        out["micro_f1"] = harmonic(macro_p, macro_r)
        out["micro_f1_verifier"] = harmonic(precision, any_recall) if precision is not None else 0.0
    return out


class IntegrationSection(SuiteSection):
    """``report.json`` ``suites.integration``: the headline coverages, the controls and the
    suite's own gates (``docs/integration.md`` defines each; per-tool, per-locale and span
    figures stay as extra fields)."""

    mode: str
    eligible: int
    controls: int
    negative_controls: int
    controls_with_integration: int
    spans_exceeded_cap: int
    integration_coverage: Number | None
    grounded_coverage: Number | None
    strict_grounded_coverage: Number | None
    multi_call_parity: Number | None
    json_args_validity: Number | None
    control_contamination_rate: Number | None
    negative_control_ok_rate: Number | None
    fixture_hit_rate: Number | None
    privacy_ok_rate: Number | None
    lax: dict[str, Number | None]
    strict: dict[str, Number | None]
    gates: dict[str, dict[str, Any]]
    gates_ok: bool


def aggregate(
    results: Sequence[CaseResult],
    thresholds: Mapping[str, float] | None = None,
    min_eligible: int = 15,
    optional: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """The suite's metrics and gates over ``results``; the gates named in ``optional`` are
    marked so (an ``n/a`` of theirs does not fail the run)."""
    rows = [
        Row(r.case_id, r.details)
        for r in results
        if r.outcome in ("passed", "failed") and "kind" in r.details
    ]
    eligible = [r for r in rows if r.d["eligible"]]
    compat = any(r.d.get("mode") == "compat" for r in rows)
    coverage = [r for r in rows if r.d["in_coverage"]]
    grounded = [r for r in rows if r.d["in_grounded"]]
    parity = [r for r in rows if r.d["parity_ok"] is not None]
    args = [r for r in rows if r.d["args_valid"] is not None]
    recovery = [r for r in rows if r.d["recovered"] is not None]
    controls = [r for r in rows if r.d["control"]]
    negatives = [r for r in rows if r.d["negative_control"]]
    probes = [r for r in rows if r.d["locale"]]
    locales = sorted({r.d["locale"] for r in probes})
    histogram: dict[str, int] = {}
    for r in rows:
        key = str(r.d["spans_total"])
        histogram[key] = histogram.get(key, 0) + 1
    hits = sum(r.fixture_hits for r in results)
    calls = hits + sum(r.fixture_misses for r in results)
    out: dict[str, Any] = {
        **base_totals(results),
        "mode": "compat" if compat else "precise",
        "eligible": len(eligible),
        "lax": _mode(eligible, "lax", compat),
        "strict": _mode(eligible, "strict", compat),
        "integration_coverage": _rate([bool(r.d["spans"]) for r in coverage]),
        "grounded_coverage": _rate([r.d["grounded_ok"] for r in grounded]),
        "strict_grounded_coverage": None
        if compat
        else _rate([r.d["strict_grounded_ok"] for r in grounded]),
        "multi_call_parity": _rate([r.d["parity_ok"] for r in parity]),
        "json_args_validity": _rate([r.d["args_valid"] for r in args]),
        "branching_recovery": _rate([r.d["recovered"] for r in recovery]),
        "branching_items": len(recovery),
        "controls": len(controls),
        "controls_with_integration": sum(1 for r in controls if r.d["contaminated"]),
        "control_contamination_rate": _rate([r.d["contaminated"] for r in controls]),
        "negative_controls": len(negatives),
        "negative_control_ok_rate": _rate([r.d["negative_ok"] for r in negatives]),
        "locale": {
            loc: _rate([r.d["locale_ok"] for r in probes if r.d["locale"] == loc])
            for loc in locales
            if not compat  # the reference reads locale_probe and does nothing with it
        },
        "locale_f1_delta": {
            loc: _mean(
                [
                    abs(r.d["lax"]["f1"] - r.d["strict"]["f1"])
                    for r in probes
                    if r.d["locale"] == loc and r.d["lax"]["f1"] is not None
                ]
            )
            for loc in locales
        },
        "spans_exceeded_cap": sum(1 for r in rows if r.d["spans_exceeded_cap"]),
        "span_count_histogram": dict(sorted(histogram.items(), key=lambda kv: int(kv[0]))),
        "per_tool_deltas": _per_tool(eligible),
        "fixture_hit_rate": hits / calls if calls else None,
        "privacy_ok_rate": _rate([r.d["privacy_ok"] for r in rows]),
    }
    out["gates"] = gates(out, rows, eligible, dict(thresholds or {}), min_eligible)
    for name in optional & set(out["gates"]):
        out["gates"][name]["optional"] = True
    out["gates_ok"] = all(g["status"] != "fail" for g in out["gates"].values())
    return _round(out)  # type: ignore[no-any-return]


def _per_tool(eligible: Sequence[Row]) -> dict[str, dict[str, Any]]:
    tools = sorted({t for r in eligible for t in r.d["tools_used"]})
    out = {}
    for tool in tools:
        rows = [r for r in eligible if tool in r.d["tools_used"]]
        lax = _mean([r.d["lax"]["f1"] for r in rows])
        strict = _mean([r.d["strict"]["f1"] for r in rows])
        assert lax is not None and strict is not None
        out[tool] = {"items": len(rows), "lax_f1": lax, "strict_f1": strict, "delta": lax - strict}
    return out


# ---------------------------------------------------------------------------- gates


_MISSES: dict[str, Callable[[Row], bool]] = {
    "integration_coverage": lambda r: r.d["in_coverage"] and not r.d["spans"],
    "grounded_coverage": lambda r: r.d["in_grounded"] and not r.d["grounded_ok"],
    "multi_call_parity": lambda r: r.d["parity_ok"] is False,
    "controls_with_integration": lambda r: bool(r.d["contaminated"]),
    "json_args_validity": lambda r: r.d["args_valid"] is False,
    "negative_control_ok_rate": lambda r: r.d["negative_ok"] is False,
    "strict_macro_f1": lambda r: False,
}
_DENOMINATOR: dict[str, Callable[[Row], bool]] = {
    "integration_coverage": lambda r: r.d["in_coverage"],
    "grounded_coverage": lambda r: r.d["in_grounded"],
    "multi_call_parity": lambda r: r.d["parity_ok"] is not None,
    "controls_with_integration": lambda r: r.d["control"],
    "json_args_validity": lambda r: r.d["args_valid"] is not None,
    "negative_control_ok_rate": lambda r: r.d["negative_control"],
    "strict_macro_f1": lambda r: r.d["eligible"],
}


def gates(
    metrics: Mapping[str, Any],
    rows: Sequence[Row],
    eligible: Sequence[Row],
    thresholds: Mapping[str, float],
    min_eligible: int,
) -> dict[str, dict[str, Any]]:
    """Each built-in gate's verdict, with the items that missed it."""
    out = {}
    for name, spec in GATES.items():
        threshold = float(thresholds.get(name, spec.threshold))
        value = _lookup(metrics, spec.metric)
        n = sum(1 for r in rows if _DENOMINATOR[name](r))
        missed = sorted(r.case_id for r in rows if _MISSES[name](r))
        entry: dict[str, Any] = {
            "metric": spec.metric,
            "kind": spec.kind,
            "value": value,
            "threshold": threshold,
            "n": n,
            "misses": len(missed),
            "items": missed[:MAX_LISTED],
        }
        if spec.kind == "zero":
            entry["status"] = "pass" if value == 0 else "fail"
        elif value is None:
            entry["status"] = "n/a"
        elif spec.kind == "count":
            allowed = max(1, math.ceil(0.05 * n))
            entry["allowed_misses"] = allowed
            if len(eligible) < min_eligible:
                entry["status"] = "inconclusive"
            else:
                ok = len(missed) <= allowed or value >= threshold - 1e-12
                entry["status"] = "pass" if ok else "fail"
        elif spec.kind == "warn":
            entry["status"] = "pass" if value >= threshold - 1e-12 else "warn"
        else:
            entry["status"] = "pass" if value >= threshold - 1e-12 else "fail"
        entry["message"] = gate_line(name, entry)
        out[name] = entry
    return out


def _lookup(metrics: Mapping[str, Any], path: str) -> float | None:
    value: Any = metrics
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return float(value) if isinstance(value, (int, float)) else None


def gate_line(name: str, gate: Mapping[str, Any]) -> str:
    """One line: the gate, its verdict, and the items behind a failure."""
    value = gate["value"]
    shown = "n/a" if value is None else f"{value:.4g}"
    status = gate["status"]
    text = f"{gate['metric']} = {shown}"
    if status not in ("pass", "fail"):
        text = f"{status}: {text}"
    if gate["kind"] == "zero":
        text += " (must be 0)"
    else:
        text += f" (threshold {gate['threshold']:g}"
        if "allowed_misses" in gate:
            text += f", {gate['misses']} misses of {gate['n']}, {gate['allowed_misses']} allowed"
        text += ")"
    if status == "inconclusive":
        text += "; too few eligible items to gate"
    if gate["items"] and status in ("fail", "warn", "inconclusive"):
        text += "; items: " + ", ".join(gate["items"])
    return text
