"""The Gates section of report.html as plain data: each gate with its numbers and status.

Every gate result in ``report.json`` carries its ``status`` (``passed``, ``failed``,
``partial``, ``inconclusive``, ``warn``, ``n/a``: :data:`pytest_llmeval.rundir.models.GateStatus`);
the page shows it as it is. A result written before the field existed says passed or failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_llmeval.report.html.formatting import metric

_STATUS_NAMES = {"pass": "passed", "fail": "failed"}
"""Short statuses (a plain list of gates may use a suite's ``pass`` / ``fail``) as the page
says them."""
_STATUS_CLASSES = {"passed": "passed", "failed": "failed", "warn": "error"}
"""The badge colour of a gate status; any other status (``partial``, ``inconclusive``, ...) is
grey."""
_NOT_PASSED = ("failed", "partial")
"""Statuses that decide the page's verdict, worst first (``partial`` judged a subset)."""


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


def _gate_row(
    gate: Mapping[str, Any], where: str, result: Mapping[str, Any], status: Any
) -> GateRow:
    """A gate's row: ``gate`` names it, ``result`` holds its value, status and message."""
    value = result["value"] if "value" in result else result.get("actual")
    if not isinstance(status, str) or not status:
        status = "passed" if result.get("passed") is True else "failed"
    status = _STATUS_NAMES.get(status, status)
    passed = status == "passed"  # n/a, warn, inconclusive and partial are not a pass
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


def gates(report_gates: Any) -> Gates:
    """The Gates section from ``report.json``'s ``{"passed", "results": [gate results]}``.

    A gate result is ``{"gate": {name, suite, metric, op, threshold, source}, "value",
    "passed", "status", "message"}`` (:func:`pytest_llmeval.report.gates.gates_section`); a
    result without ``status`` (an older report) is passed or failed. A plain list of ``{name,
    metric, op, threshold, value, passed}`` is read too. The verdict is ``failed`` when a gate
    failed, else ``partial`` when one judged a subset, else ``passed``.
    """
    rows = []
    if isinstance(report_gates, dict):
        for result in report_gates.get("results") or []:
            if not isinstance(result, dict):
                continue
            found = result.get("gate")
            gate: dict[str, Any] = found if isinstance(found, dict) else {}
            status = result.get("status")
            where = f"{gate.get('suite', '')}.{gate.get('metric', '')}"
            rows.append(_gate_row(gate, where, result, status))
    elif isinstance(report_gates, list):
        for entry in report_gates:
            entry = entry if isinstance(entry, dict) else {}
            rows.append(_gate_row(entry, str(entry.get("metric", "")), entry, entry.get("status")))
    passed = sum(row.passed for row in rows)
    statuses = {row.status for row in rows}
    verdict = next((s for s in _NOT_PASSED if s in statuses), "passed")
    return Gates(tuple(rows), passed, verdict)
