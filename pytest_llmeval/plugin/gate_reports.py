"""The verdict's gates and baseline comparison as pytest test reports (junit, terminal).

Each gate is reported as a test ``llmeval-gates::<gate>`` and the baseline comparison as
``llmeval-baseline::no-regressions``, so junit and ``--json-report`` show them beside the cases.
The id reads as written everywhere: the terminal's ``-v`` lines, ``-rA`` and the short summary
show ``llmeval-gates::golden.pass_rate>=0.9``, junit a testcase ``golden.pass_rate>=0.9`` of
classname ``llmeval-gates`` (junit splits the id on ``::`` only).
"""

from __future__ import annotations

from typing import Any, Literal

import pytest

from pytest_llmeval.plugin import compat
from pytest_llmeval.report.verdict import BASELINE_NODE, GATES_NODE, Verdict
from pytest_llmeval.rundir.models import GateStatus

__all__ = ["gate_test_reports", "log_gate_reports"]


def log_gate_reports(session: pytest.Session, reports: list[pytest.TestReport]) -> None:
    """Report the gates as tests at session end, after pytest wrote its ``[100%]``: counted
    in ``session.testscollected`` so totals add up, on a row of their own, with no progress
    suffix per gate (one would count backwards) and, without ``-v``, pytest's own ``[100%]``
    at the row's end."""
    if not reports:
        return
    session.testscollected += len(reports) // 3
    hook = session.config.hook
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    with compat.progress_held(reporter):
        for start in range(0, len(reports), 3):
            nodeid, location = reports[start].nodeid, reports[start].location
            hook.pytest_runtest_logstart(nodeid=nodeid, location=location)
            for report in reports[start : start + 3]:
                hook.pytest_runtest_logreport(report=report)
            hook.pytest_runtest_logfinish(nodeid=nodeid, location=location)


def gate_test_reports(verdict: Verdict) -> list[pytest.TestReport]:
    """Each gate, and the baseline comparison, as a test's setup/call/teardown reports."""
    reports: list[pytest.TestReport] = []
    for result in verdict.gate_results:
        nodeid = f"{GATES_NODE}::{result.gate.name}"
        reports += _test_reports(nodeid, result.status, result.message)
    seen: set[str] = set()
    for problem in verdict.gate_problems:  # unreadable gates fail the run: a failed entry
        nodeid = f"{GATES_NODE}::{problem.source}"
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
    # the domain is no suffix of the id, so pytest's -v line shows the id as it is (it turns
    # the dots of a domain that ends the id into "::") and a failure's heading reads "gate X"
    kind = "baseline" if nodeid == BASELINE_NODE else "gate"
    location = (path, None, f"{kind} {name}")
    keywords: dict[str, Literal[1]] = {"llmeval": 1}
    call: pytest.TestReport
    if status == "failed":
        call = pytest.TestReport(nodeid, location, keywords, "failed", message, "call")
    elif status in ("partial", "inconclusive", "n/a"):
        # no line: the short summary shows "SKIPPED [1] <id>: n/a: ...", the id as written
        # (pytest's own skips of a whole file carry no line either; the hint says int)
        reason: tuple[str, Any, str] = (nodeid, None, f"Skipped: {status}: {message}")
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
