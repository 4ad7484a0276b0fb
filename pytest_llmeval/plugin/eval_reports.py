"""What an eval case's test report carries, made once per phase: its result (built,
journaled and put on the record), the facts for the xdist controller
(:class:`~pytest_llmeval.plugin.worker_wire.ReportFacts`: a refusal, a stopped journal, the
model a worker's cases were built for, the agents in flight), and pytest's own status of a
case that errored while it was scored."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from pytest_llmeval.plugin import case_reports
from pytest_llmeval.plugin import worker_wire as wire
from pytest_llmeval.plugin.dry_sessions import runs_no_case
from pytest_llmeval.plugin.eval_item import EvalItem
from pytest_llmeval.plugin.runner_model import RUNNER_MODEL_KEY
from pytest_llmeval.plugin.state import state_key

__all__ = ["pytest_report_teststatus", "pytest_runtest_makereport"]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    if not isinstance(item, EvalItem):
        return _with_in_flight((yield), item.config)
    named = item.state.runner_model
    # a case reported before the model is known (pytest skipped it by a mark, its fixtures
    # failed) is read without settling it: the next case's agent may still name it
    with contextlib.nullcontext() if named.settled else named.probe():
        report = _eval_report((yield), item, call)
    return _with_in_flight(report, item.config)


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
        case = item.built_case  # under xdist, the model the cases that ran were built for
        named = state.runner_model  # (once per worker: every case of it was built for one)
        if call.when == "call" and not named.told and case and RUNNER_MODEL_KEY in case.metadata:
            worker = wire.worker_id(item.config)
            if worker is not None:
                named.told = True
                said = (worker, case.metadata[RUNNER_MODEL_KEY])
                wire.add_facts(report, {"runner_model": said})
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
