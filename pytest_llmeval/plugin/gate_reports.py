"""The verdict's gates and baseline comparison as pytest test reports (junit, terminal).

Each gate is reported as a test ``llmeval-gates::<gate>`` and the baseline comparison as
``llmeval-baseline::no-regressions``, so junit and ``--json-report`` show them beside the cases.
"""

from __future__ import annotations

from typing import Literal

import pytest

from pytest_llmeval.report.verdict import BASELINE_NODE, GATES_NODE, Verdict
from pytest_llmeval.rundir.models import GateStatus

__all__ = ["gate_test_reports"]


def gate_test_reports(verdict: Verdict) -> list[pytest.TestReport]:
    """Each gate, and the baseline comparison, as a test's setup/call/teardown reports."""
    reports: list[pytest.TestReport] = []
    for result in verdict.gate_results:
        nodeid = f"{GATES_NODE}::{result.gate.name}"
        reports += _test_reports(nodeid, result.status, result.message)
    seen: set[str] = set()
    for problem in verdict.gate_problems:  # unreadable gates fail the run: a failed entry
        source = problem.split(": ", 1)[0]
        nodeid = f"{GATES_NODE}::{source}"
        while nodeid in seen:
            nodeid += "+"
        seen.add(nodeid)
        reports += _test_reports(nodeid, "failed", problem)
    if verdict.baseline_refusal is not None:
        message = f"baseline not compared: {verdict.baseline_refusal}"
        reports += _test_reports(BASELINE_NODE, "failed", message)
    elif verdict.baseline_diff is not None:
        failed = verdict.regressions
        message = (
            f"{len(failed)} case(s) passed in the baseline and fail now: {', '.join(failed[:20])}"
            if failed
            else "a gate that passed in the baseline fails now"
        )
        status: GateStatus = "failed" if verdict.baseline_diff.regressed else "passed"
        reports += _test_reports(BASELINE_NODE, status, message)
    return reports


def _test_reports(nodeid: str, status: GateStatus, message: str) -> list[pytest.TestReport]:
    """A gate as a test, its status as itself: ``failed`` fails; ``passed`` and ``warn`` (judged,
    only a warning) pass; ``partial``, ``inconclusive`` and ``n/a`` judged nothing conclusive,
    so they are skipped with ``STATUS: message`` as the reason (junit ``<skipped>``). Every
    gate's teardown carries the property ``llmeval.gate.status`` (junit ``<property>``)."""
    path, _, name = nodeid.partition("::")
    location = (path, None, name)
    keywords: dict[str, Literal[1]] = {"llmeval": 1}
    call: pytest.TestReport
    if status == "failed":
        call = pytest.TestReport(nodeid, location, keywords, "failed", message, "call")
    elif status in ("partial", "inconclusive", "n/a"):
        reason = (path, 0, f"Skipped: {status}: {message}")
        call = pytest.TestReport(nodeid, location, keywords, "skipped", reason, "call")
    else:
        call = pytest.TestReport(nodeid, location, keywords, "passed", None, "call")
    properties = [("llmeval.gate.status", status)]
    return [
        pytest.TestReport(nodeid, location, keywords, "passed", None, "setup"),
        call,
        pytest.TestReport(
            nodeid, location, keywords, "passed", None, "teardown", user_properties=properties
        ),
    ]
