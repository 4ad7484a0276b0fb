"""The Gates section of report.html as plain data: each gate with its numbers and status.

Every gate result in ``report.json`` says passed or not; a suite's own gates (the integration
suite's count-based ones) also have a status the suite gave them (``inconclusive``, ``warn``,
``n/a``), which the page shows instead of a bare "passed".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_llmeval.report.html.formatting import metric, number

_STATUS_NAMES = {"pass": "passed", "fail": "failed"}
"""A suite's own gate statuses (``pass``, ``fail``, ``inconclusive``, ...) as the page says
them."""
_STATUS_CLASSES = {"passed": "passed", "failed": "failed", "warn": "error"}
"""The badge colour of a gate status; any other status is grey."""


@dataclass(frozen=True)
class GateRow:
    """One gate with its numbers and its status (``passed``, ``failed``, ``inconclusive``,
    ``warn``, ``n/a``)."""

    name: str
    metric: str
    op: str
    threshold: str
    value: str
    passed: bool
    status: str
    cls: str
    message: str


@dataclass(frozen=True)
class Gates:
    """The Gates section; no rows means the run had no gates."""

    rows: tuple[GateRow, ...] = ()
    passed: int = 0
    verdict: str = "passed"


def _suite_status(suites: Mapping[str, Any], gate: Mapping[str, Any], passed: Any) -> str | None:
    """The status a suite gave its own gate (``inconclusive``, ``warn``, ...), if it is one.

    ``report.json``'s gate results only say passed or not; a suite's own gates (the
    integration suite's) keep their status in ``suites.<suite>.gates``, as entries with the
    same metric and threshold (:func:`pytest_llmeval.report.gates.suite_gate_results`).
    """
    body = suites.get(str(gate.get("suite", "")))
    entries = body.get("gates") if isinstance(body, Mapping) else None
    if gate.get("source") != "header" or not isinstance(entries, Mapping):
        return None
    for entry in entries.values():
        if not isinstance(entry, Mapping) or entry.get("metric") != gate.get("metric"):
            continue
        op = "==" if entry.get("kind") == "zero" else ">="
        if op != gate.get("op") or number(entry.get("threshold")) != number(gate.get("threshold")):
            continue
        status = entry.get("status")
        if isinstance(status, str) and (status == "fail") == (passed is False):
            return status
    return None


def _gate_row(
    gate: Mapping[str, Any], where: str, result: Mapping[str, Any], status: Any
) -> GateRow:
    """A gate's row: ``gate`` names it, ``result`` holds its value, ``passed`` and message."""
    passed = result.get("passed") is True
    value = result["value"] if "value" in result else result.get("actual")
    if not isinstance(status, str) or not status:
        status = "passed" if passed else "failed"
    status = _STATUS_NAMES.get(status, status)
    message = result.get("message")
    return GateRow(
        name=str(gate.get("name") or ""),
        metric=where,
        op=str(gate.get("op") or ""),
        threshold=metric(gate.get("threshold")),
        value=metric(value),
        passed=passed,
        status=status,
        cls=_STATUS_CLASSES.get(status, "skipped"),
        message="" if message is None else str(message),
    )


def gates(report_gates: Any, suites: Mapping[str, Any]) -> Gates:
    """The Gates section from ``report.json``'s ``{"passed", "results": [gate results]}``.

    A gate result is ``{"gate": {name, suite, metric, op, threshold, source}, "value",
    "passed", "message"}`` (:func:`pytest_llmeval.report.gates.gates_section`), with an
    optional ``status``; without one, a suite's own gate takes the status the suite gave it,
    and any other gate is passed or failed. A plain list of ``{name, metric, op, threshold,
    value, passed}`` is read too.
    """
    rows = []
    if isinstance(report_gates, dict):
        for result in report_gates.get("results") or []:
            if not isinstance(result, dict):
                continue
            found = result.get("gate")
            gate: dict[str, Any] = found if isinstance(found, dict) else {}
            status = result.get("status") or _suite_status(suites, gate, result.get("passed"))
            where = f"{gate.get('suite', '')}.{gate.get('metric', '')}"
            rows.append(_gate_row(gate, where, result, status))
    elif isinstance(report_gates, list):
        for entry in report_gates:
            entry = entry if isinstance(entry, dict) else {}
            rows.append(_gate_row(entry, str(entry.get("metric", "")), entry, entry.get("status")))
    passed = sum(row.passed for row in rows)
    return Gates(tuple(rows), passed, "passed" if passed == len(rows) else "failed")
