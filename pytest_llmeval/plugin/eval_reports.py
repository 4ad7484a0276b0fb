"""What an eval case's test report carries, made once per phase: its result (built,
journaled and put on the record), the facts for the xdist controller
(:class:`~pytest_llmeval.plugin.worker_wire.ReportFacts`: a refusal, a stopped journal, the
agents in flight), and pytest's own status of a
case that errored while it was scored."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_llmeval.plugin import case_reports
from pytest_llmeval.plugin import worker_wire as wire
from pytest_llmeval.plugin.dry_sessions import runs_no_case
from pytest_llmeval.plugin.eval_item import EvalItem
from pytest_llmeval.plugin.state import state_key

__all__ = ["pytest_report_teststatus", "pytest_runtest_makereport"]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    if not isinstance(item, EvalItem):
        return _with_in_flight((yield), item.config)
    return _with_in_flight(_eval_report((yield), item, call), item.config)


def _with_in_flight(report: pytest.TestReport, config: pytest.Config) -> pytest.TestReport:
    """A teardown report says how many agents are in flight here (the controller's progress
    lines add up every process's)."""
    if report.when == "teardown":
        in_flight = config.stash[state_key].dispatcher.in_flight
        wire.add_facts(report, {"in_flight": in_flight})
    return report


def _eval_report(report: Any, item: EvalItem, call: pytest.CallInfo[None]) -> Any:
    state = item.state
    case_reports.unhide_error(report, call.excinfo)  # a user's xfail never hides an error
    if state.stop.reason is not None:
        wire.add_facts(report, {"refusal": state.stop.reason})
    elif runs_no_case(item.config):  # --setup-only, --setup-plan: no result, no journal
        pass
    else:  # a refused resume journals nothing
        state.results.attach(item, item.agent, call, report)
        if call.when == "call":
            state.run_ahead.judged(item.nodeid)
        record = state.records.of(report)
        case_reports.adjust(item, report, item.transcript, call.excinfo, record)  # time; xfail
        stopped = state.journal.stopped()
        if stopped is not None:  # every case after this one would be lost: stop, fail
            wire.add_facts(report, {"unjournaled": stopped})
            item.session.shouldstop = item.session.shouldstop or stopped
    return report


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    return case_reports.teststatus(report)
