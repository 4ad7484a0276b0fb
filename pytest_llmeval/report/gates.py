"""Dataset-level gates: thresholds on the aggregate metrics of ``report.json``.

A gate reads ``SUITE.METRIC OP VALUE``: ``golden.pass_rate>=0.9``, ``toolforge.failed==0``,
``gaia.levels.level1.accuracy > 0.3``, ``*.pass_rate>=0.95``. ``SUITE`` is a suite name, or
``*`` for the run's totals; ``METRIC`` is a dotted path into that suite's aggregate in
``report.json`` (``report["suites"][SUITE]``, or ``report["totals"]`` for ``*``).

Lookup rules (:func:`lookup_metric`):

* at each level the longest run of dotted segments that is a key wins, so a category named
  ``v1.2`` is still reachable as ``categories.v1.2.pass_rate``;
* only ``int`` and ``float`` leaves are metrics; ``bool``, ``null``, strings, lists and NaN
  are not, and a gate on them fails with a message that lists the metrics that do exist
  (shallow paths first, at most :data:`MAX_LISTED_METRICS`);
* a suite with no results in the run fails its gates with a message naming the suites there,
  unless the run deselected its cases (``-k``, ``-m``, ``--lf``, ``--llmeval-limit``): then the
  gate is ``partial``.

Nothing to judge: a metric that is ``null`` (``n/a``: no case that ran was eligible, all
errored, or the data has none) or absent because no case produced it fails its gate, unless
the gate is declared optional (:data:`OPTIONAL`: ``golden.mean_scores.rubric>=0.8 optional``);
an optional gate is then ``n/a``. A suite's own gates follow the same rule: their ``n/a`` fails.
On a run that left cases of the suite out, such a gate is ``partial``.

Comparisons: ``==`` holds when ``|value - threshold| <= 1e-12`` (:data:`EQ_TOLERANCE`);
``>=`` and ``<=`` are "``>`` or ``==``" and "``<`` or ``==``" with that same tolerance, and
``>`` / ``<`` are strict (a value within the tolerance of the threshold is equal, not greater).
Report values are rounded to six decimals, so the tolerance only absorbs float noise.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeGuard, get_args

from pytest_llmeval.rundir.models import (
    Gate,
    GateOp,
    GateResult,
    GateSource,
    GatesSection,
    GateStatus,
)

__all__ = [
    "EQ_TOLERANCE",
    "GATE_FORM",
    "MAX_LISTED_METRICS",
    "OPTIONAL",
    "TOTALS",
    "compare",
    "evaluate_gates",
    "flatten_metrics",
    "format_number",
    "gates_section",
    "is_metric",
    "lookup_metric",
    "make_gate",
    "nothing_to_judge",
    "parse_gate",
    "parse_gate_spec",
    "partial_status",
    "suite_gate_results",
]

EQ_TOLERANCE = 1e-12
"""Absolute tolerance of ``==`` (and of the equal half of ``>=`` / ``<=``)."""

TOTALS = "*"
"""The suite name that addresses ``report["totals"]``."""

OPTIONAL = "optional"
"""The word after a gate's value that declares it optional: with nothing to judge it is
``n/a``, not ``failed`` (``gaia.levels.level3.accuracy>=0.2 optional``)."""

GATE_FORM = (
    "SUITE.METRIC OP VALUE [optional], e.g. golden.pass_rate>=0.9 or toolforge.failed==0 "
    "(SUITE is a suite name or * for the totals, METRIC a dotted path into that suite's "
    "report, OP one of >=, <=, >, <, ==, VALUE a number; optional: n/a, not failed, when "
    "there is nothing to judge)"
)
"""The accepted form, quoted by every parse error."""

MAX_LISTED_METRICS = 60
"""How many available metric names a "no such metric" message lists."""

_OPS: tuple[GateOp, ...] = get_args(GateOp)
_SOURCE_ORDER: dict[str, int] = {name: i for i, name in enumerate(get_args(GateSource))}
_GATE_RE = re.compile(
    r"^\s*(?P<path>[^<>=!]+?)\s*(?P<op>>=|<=|==|>|<)\s*(?P<value>\S+?)"
    rf"(?:\s+(?P<optional>{OPTIONAL}))?\s*$"
)
_OP_VALUE_RE = re.compile(
    rf"^\s*(?P<op>>=|<=|==|>|<)\s*(?P<value>\S+?)(?:\s+(?P<optional>{OPTIONAL}))?\s*$"
)
_RATE = re.compile(r"(?:^|_)(?:rate|accuracy|acc|f1|precision|recall|coverage)(?:_|$)")
"""Metric names (the last segment) whose values are rates in [0, 1]: ``pass_rate``,
``accuracy``, ``macro_f1``, ``acc_norm``, ``tool_hallucination_rate_all`` ..."""


# -- parsing ---------------------------------------------------------------------------------


def parse_gate(text: str, source: GateSource = "cli") -> Gate:
    """Parse ``SUITE.METRIC OP VALUE`` (spaces allowed around ``OP``), optionally followed by
    the word ``optional`` (:data:`OPTIONAL`).

    Raises ``ValueError`` naming the accepted form (:data:`GATE_FORM`) on anything else.
    """
    if not isinstance(text, str):
        raise ValueError(f"bad gate {text!r}: expected {GATE_FORM}")
    match = _GATE_RE.match(text)
    if match is None:
        raise ValueError(f"bad gate {text!r}: expected {GATE_FORM}")
    suite, metric = _split_path(match["path"], text)
    gate = make_gate(
        suite, metric, match["op"], _number(match["value"], text), source, bool(match["optional"])
    )
    return _in_range(gate, text)


def make_gate(
    suite: str,
    metric: str,
    op: str,
    threshold: float,
    source: GateSource = "cli",
    optional: bool = False,
) -> Gate:
    """A :class:`Gate` with its canonical name; ``ValueError`` on an unknown ``op``."""
    if op not in _OPS:
        raise ValueError(f"bad gate operator {op!r}: expected one of {', '.join(_OPS)}")
    if not suite or not metric or any(not part for part in metric.split(".")):
        raise ValueError(f"bad gate metric {suite + '.' + metric!r}: expected {GATE_FORM}")
    if not math.isfinite(threshold):
        raise ValueError(f"bad gate threshold {threshold!r}: expected a finite number")
    name = f"{suite}.{metric}{op}{format_number(threshold)}"
    return Gate(
        name=name,
        suite=suite,
        metric=metric,
        op=op,
        threshold=threshold,
        source=source,
        optional=optional,
    )


def parse_gate_spec(
    obj: object, source: GateSource = "manifest", *, default_suite: str | None = None
) -> list[Gate]:
    """Gates declared in a manifest (``gates:``) or a dataset header, in the order given.

    Accepted forms, alone or in a list:

    * a string, as on the command line: ``"golden.pass_rate>=0.9"``;
    * a mapping ``{"metric": "golden.pass_rate", "op": ">=", "value": 0.9}`` (exactly these
      keys, and ``optional: true`` if wanted; ``value`` a number, never a string);
    * a mapping of metric to ``"OP VALUE"``: ``{"golden.pass_rate": ">= 0.9",
      "toolforge.failed": "==0"}`` (seed-000 header style).

    A string gate, or an ``"OP VALUE"``, may end in the word ``optional`` (:data:`OPTIONAL`).

    With ``default_suite`` (a manifest's or a header's own suite), a metric path may leave the
    suite out: ``controls_with_integration`` means ``<default_suite>.controls_with_integration``.
    A path whose first segment is ``default_suite`` or ``*`` is taken as already qualified.
    Raises ``ValueError`` naming the accepted forms.
    """
    if isinstance(obj, str):
        return [_spec_string(obj, source, default_suite)]
    if isinstance(obj, list | tuple):
        return [
            gate
            for item in obj
            for gate in parse_gate_spec(item, source, default_suite=default_suite)
        ]
    if isinstance(obj, Mapping):
        if "metric" in obj:
            return [_spec_structured(obj, source, default_suite)]
        gates = []
        for path, expr in obj.items():
            if not isinstance(path, str) or not isinstance(expr, str):
                raise ValueError(
                    f'bad gate {path!r}: {expr!r}: expected METRIC: "OP VALUE" '
                    f'(e.g. pass_rate: ">= 0.9")'
                )
            match = _OP_VALUE_RE.match(expr)
            if match is None:
                raise ValueError(
                    f'bad gate {path}: {expr!r}: expected "OP VALUE" with OP one of '
                    f'{", ".join(_OPS)} (e.g. ">= 0.9")'
                )
            suite, metric = _qualify(path, default_suite, f"{path}: {expr}")
            value = _number(match["value"], f"{path}: {expr}")
            gate = make_gate(suite, metric, match["op"], value, source, bool(match["optional"]))
            gates.append(_in_range(gate, f"{path}: {expr}"))
        return gates
    raise ValueError(
        f"bad gate spec {obj!r}: expected a string ({GATE_FORM}), a mapping "
        '{metric, op, value}, a mapping of METRIC to "OP VALUE", or a list of these'
    )


def _spec_string(text: str, source: GateSource, default_suite: str | None) -> Gate:
    match = _GATE_RE.match(text)
    if match is None:
        raise ValueError(f"bad gate {text!r}: expected {GATE_FORM}")
    suite, metric = _qualify(match["path"], default_suite, text)
    value = _number(match["value"], text)
    gate = make_gate(suite, metric, match["op"], value, source, bool(match["optional"]))
    return _in_range(gate, text)


def _spec_structured(obj: Mapping[Any, Any], source: GateSource, default_suite: str | None) -> Gate:
    if not {"metric", "op", "value"} <= set(obj) <= {"metric", "op", "value", OPTIONAL}:
        raise ValueError(
            f"bad gate {dict(obj)!r}: expected exactly the keys metric, op, value, and "
            "optionally optional (e.g. {metric: golden.pass_rate, op: '>=', value: 0.9})"
        )
    path, op, value = obj["metric"], obj["op"], obj["value"]
    optional = obj.get(OPTIONAL, False)
    if not isinstance(optional, bool):
        raise ValueError(f"bad gate {dict(obj)!r}: optional must be true or false")
    if not isinstance(path, str):
        raise ValueError(f"bad gate metric {path!r}: expected a dotted path such as pass_rate")
    if not isinstance(op, str) or op.strip() not in _OPS:
        raise ValueError(f"bad gate operator {op!r}: expected one of {', '.join(_OPS)}")
    if isinstance(value, bool) or not isinstance(value, int | float):
        # a quoted "0.9" is refused as true is: the structured form is typed, so a string
        # there is a slip (a template left unfilled, a YAML quoting mistake), never a number
        raise ValueError(f"bad gate value {value!r}: expected a number, unquoted (value: 0.9)")
    try:
        number = float(value)  # make_gate refuses NaN and the infinities
    except OverflowError:
        raise ValueError(f"bad gate value {value!r}: expected a finite number") from None
    suite, metric = _qualify(path, default_suite, str(dict(obj)))
    gate = make_gate(suite, metric, op.strip(), number, source, optional)
    return _in_range(gate, str(dict(obj)))


def _qualify(path: str, default_suite: str | None, text: str) -> tuple[str, str]:
    path = path.strip()
    if default_suite is None:
        return _split_path(path, text)
    head = path.split(".", 1)[0]
    if head in (default_suite, TOTALS) and "." in path:
        return _split_path(path, text)
    if not path or any(not part for part in path.split(".")):
        raise ValueError(f"bad gate {text!r}: expected {GATE_FORM}")
    return default_suite, path


def _split_path(path: str, text: str) -> tuple[str, str]:
    path = path.strip()
    suite, dot, metric = path.partition(".")
    if not dot or not suite or not metric or any(not p for p in metric.split(".")):
        raise ValueError(f"bad gate {text!r}: expected {GATE_FORM}")
    return suite, metric


def _number(text: str, whole: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(
            f"bad gate {whole!r}: {text!r} is not a number; expected {GATE_FORM}"
        ) from None
    if not math.isfinite(value):
        raise ValueError(f"bad gate {whole!r}: the threshold must be a finite number")
    return value


def _in_range(gate: Gate, whole: str) -> Gate:
    """``gate``, unless its metric is a rate (in [0, 1]) and its threshold is not: such a gate
    can never be met, or always is, so it is surely a typo (``pass_rate >= 90``)."""
    leaf = gate.metric.rsplit(".", 1)[-1]
    if _RATE.search(leaf) and not 0 <= gate.threshold <= 1:
        raise ValueError(
            f"bad gate {whole!r}: {leaf} is a rate in [0, 1], so the threshold "
            f"{format_number(gate.threshold)} is out of its range"
        )
    return gate


def format_number(value: float) -> str:
    """``0.9`` → ``0.9``, ``0.0`` → ``0``, ``3.0`` → ``3``: short and round-trippable."""
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


# -- metrics ---------------------------------------------------------------------------------


def is_metric(value: object) -> TypeGuard[int | float]:
    """An ``int`` or finite ``float`` that is not a ``bool``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value)


def flatten_metrics(body: object, prefix: str = "") -> dict[str, float]:
    """Every numeric leaf of ``body`` as ``{"dotted.path": value}``, sorted by path."""
    out: dict[str, float] = {}

    def walk(value: object, path: str) -> None:
        if isinstance(value, Mapping):
            for key in sorted(value, key=str):
                walk(value[key], f"{path}.{key}" if path else str(key))
        elif is_metric(value) and path:
            out[path] = value

    walk(body, prefix)
    return dict(sorted(out.items()))


_MISSING = object()


def lookup_metric(body: object, metric: str) -> object:
    """The value at dotted ``metric`` inside ``body``, or :data:`None` when it is absent.

    At each level the longest run of segments that is a key of the mapping wins (so keys
    holding dots are reachable). A present ``null`` and an absent path both give ``None``.
    """
    value = _lookup(body, metric.split("."))
    return None if value is _MISSING else value


def _lookup(body: object, parts: list[str]) -> object:
    if not parts:
        return body
    if not isinstance(body, Mapping):
        return _MISSING
    for end in range(len(parts), 0, -1):
        key = ".".join(parts[:end])
        if key in body:
            found = _lookup(body[key], parts[end:])
            if found is not _MISSING:
                return found
    return _MISSING


# -- evaluating ------------------------------------------------------------------------------


def compare(value: float, op: GateOp, threshold: float) -> bool:
    """``value OP threshold`` with the ``==`` tolerance :data:`EQ_TOLERANCE`."""
    equal = abs(value - threshold) <= EQ_TOLERANCE
    if op == "==":
        return equal
    if op == ">=":
        return equal or value > threshold
    if op == "<=":
        return equal or value < threshold
    if op == ">":
        return not equal and value > threshold
    return not equal and value < threshold


def evaluate_gates(gates: Iterable[Gate], report: Mapping[str, Any]) -> list[GateResult]:
    """Check every gate against ``report`` (a ``report.json`` body), sorted by gate name.

    Gates with the same name check the same thing: only the first by source (cli, manifest,
    header) is kept. A gate that holds on a run that left some of its cases out (the report's
    ``deselected``) is ``partial``, not ``passed`` (:func:`partial_status`).
    """
    unique: dict[str, Gate] = {}
    for gate in sorted(gates, key=lambda g: (g.name, _SOURCE_ORDER[g.source])):
        unique.setdefault(gate.name, gate)
    return [partial_status(_evaluate(gate, report), report) for gate in unique.values()]


def _left_out(suite: str, report: Mapping[str, Any]) -> int:
    """How many cases of ``suite`` (of any suite for ``*``) the run left out."""
    deselected = report.get("deselected")
    if not isinstance(deselected, Mapping):
        return 0
    if suite == TOTALS:
        return sum(int(v) for v in deselected.values())
    return int(deselected.get(suite, 0))


def _not_run(body: Any, gate: Gate) -> str:
    """What a ``null`` metric's object says did not run (a BFCL group's ``missing``
    categories), as ``" (x, y did not run)"``; ``""`` when it says nothing."""
    parent = _lookup(body, gate.metric.split(".")[:-1])
    missing = parent.get("missing") if isinstance(parent, Mapping) else None
    if not isinstance(missing, list) or not missing:
        return ""
    return f" ({', '.join(map(str, missing))} did not run)"


def nothing_to_judge(
    gate: Gate, report: Mapping[str, Any], message: str, value: float | None = None
) -> GateResult:
    """The result of ``gate`` when its metric is ``n/a``: ``partial`` on a run that left cases
    of its suite out (they might have been eligible), ``n/a`` for an optional gate, else
    ``failed`` (a gate with nothing to judge is not passed)."""
    left_out = _left_out(gate.suite, report)
    status: GateStatus
    if left_out:
        status = "partial"
        message = f"{message}; partial: {left_out} case(s) left out"
    elif gate.optional:
        status = "n/a"
        message = f"{message} (optional)"
    else:
        status = "failed"
        message = f"{message}: nothing to judge"
        if gate.source != "header":
            message += f" (add {OPTIONAL!r} after the value if that is expected)"
        else:
            message += " (name it in the header's optional_gates if that is expected)"
    return GateResult(gate=gate, value=value, passed=False, status=status, message=message)


def partial_status(result: GateResult, report: Mapping[str, Any]) -> GateResult:
    """``result`` judged on a run that left out cases of its suite (any suite for ``*``; the
    report's ``deselected``), or on a run cut short (the report's ``interrupted``: every
    gate): a gate that held is ``partial``, since a subset meeting the threshold says nothing
    about the whole; one that failed stays ``failed``. Either way its message says how many
    cases were left out."""
    if result.status not in ("passed", "failed"):
        return result
    deselected = report.get("deselected")
    left_out = 0
    if isinstance(deselected, Mapping):
        suite = result.gate.suite
        left_out = sum(deselected.values()) if suite == TOTALS else deselected.get(suite, 0)
    notes = []
    interrupted = report.get("interrupted")
    if isinstance(interrupted, Mapping):
        notes.append(
            f"run interrupted ({interrupted.get('reason')}) after "
            f"{interrupted.get('cases_run')} of {interrupted.get('cases_total')} cases"
        )
    if left_out:
        notes.append(f"{left_out} case(s) left out")
    if not notes:
        return result
    status: GateStatus = "partial" if result.status == "passed" else "failed"
    message = f"{result.message}; partial: {'; '.join(notes)}"
    return result.model_copy(update={"status": status, "message": message})


def _evaluate(gate: Gate, report: Mapping[str, Any]) -> GateResult:
    label = f"{gate.suite}.{gate.metric}"
    want = f"{gate.op} {format_number(gate.threshold)}"
    if gate.suite == TOTALS:
        body = report.get("totals")
    else:
        suites = report.get("suites")
        suites = suites if isinstance(suites, Mapping) else {}
        body = suites.get(gate.suite)
        if body is None and _left_out(gate.suite, report):
            message = f"{label} {want}: no case of suite {gate.suite!r} ran"
            return nothing_to_judge(gate, report, message)
        if body is None:
            known = ", ".join(sorted(str(s) for s in suites)) or "none"
            return GateResult(
                gate=gate,
                value=None,
                passed=False,
                status="failed",
                message=(
                    f"{label} {want}: suite {gate.suite!r} has no results in this run "
                    f"(suites: {known}; * for the totals)"
                ),
            )
    value = _lookup(body, gate.metric.split("."))
    if value is None:
        return nothing_to_judge(gate, report, f"{label} {want}: n/a{_not_run(body, gate)}")
    if value is _MISSING and (gate.optional or _left_out(gate.suite, report)):
        message = f"{label} {want}: n/a (no case that ran produced it)"
        return nothing_to_judge(gate, report, message)
    if value is _MISSING or not is_metric(value):
        available = sorted(flatten_metrics(body), key=lambda p: (p.count("."), p))
        shown = ", ".join(available[:MAX_LISTED_METRICS]) or "none"
        if len(available) > MAX_LISTED_METRICS:
            shown += f", ... and {len(available) - MAX_LISTED_METRICS} more"
        why = "no such metric" if value is _MISSING else f"not a number ({_describe(value)})"
        return GateResult(
            gate=gate,
            value=None,
            passed=False,
            status="failed",
            message=f"{label} {want}: {why}; metrics of {gate.suite!r}: {shown}",
        )
    number = float(value)
    passed = compare(number, gate.op, gate.threshold)
    shown_value = format_number(number)
    message = (
        f"{label} = {shown_value} {want}" if passed else f"{label} = {shown_value}, needs {want}"
    )
    status: GateStatus = "passed" if passed else "failed"
    return GateResult(gate=gate, value=number, passed=passed, status=status, message=message)


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return str(value)
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__


def suite_gate_results(report: Mapping[str, Any]) -> list[GateResult]:
    """The gates a suite evaluates itself (its aggregate's ``gates``: the integration suite's
    count-based and hard gates), as gate results named ``SUITE.METRIC OP THRESHOLD``.

    A suite's gate entry has ``metric``, ``kind``, ``threshold``, ``value``, ``status`` and a
    ``message``. The result's ``status`` is the suite's (``pass`` and ``fail`` read ``passed``
    and ``failed``; ``inconclusive`` and ``warn`` do not fail), and ``partial`` when a passing
    gate's suite lost cases to a deselection. ``n/a`` (nothing to judge) fails, or is
    ``partial`` on a run that left cases of the suite out (:func:`nothing_to_judge`).
    """
    out = []
    for suite, body in (report.get("suites") or {}).items():
        entries = body.get("gates") if isinstance(body, Mapping) else None
        if not isinstance(entries, Mapping):
            continue
        for entry in entries.values():
            if not isinstance(entry, Mapping) or "status" not in entry:
                continue
            op = "==" if entry.get("kind") == "zero" else ">="
            optional = entry.get("optional") is True  # the header's optional_gates
            threshold = float(entry["threshold"])
            gate = make_gate(suite, entry["metric"], op, threshold, "header", optional)
            value = entry.get("value")
            status = _SUITE_STATUSES.get(str(entry["status"]), "n/a")
            if status == "n/a":
                message = str(entry.get("message") or entry["status"])
                out.append(nothing_to_judge(gate, report, message))
                continue
            result = GateResult(
                gate=gate,
                value=float(value) if isinstance(value, (int, float)) else None,
                passed=status != "failed",
                status=status,
                message=str(entry.get("message") or entry["status"]),
            )
            out.append(partial_status(result, report))
    return out


_SUITE_STATUSES: dict[str, GateStatus] = {
    "pass": "passed",
    "fail": "failed",
    "inconclusive": "inconclusive",
    "warn": "warn",
    "n/a": "n/a",
}
"""A suite's own gate status as a :data:`GateStatus` (an unknown one reads ``n/a``)."""


def gates_section(results: Iterable[GateResult]) -> dict[str, Any]:
    """The ``report.json`` ``gates`` entry: ``{"passed": all passed, "results": [...]}``."""
    return GatesSection.of(list(results)).model_dump(mode="json")
