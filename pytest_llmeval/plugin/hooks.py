"""pytest hooks of pytest-llmeval. Each hook is a few lines and delegates."""

from __future__ import annotations

import contextlib
import fnmatch
import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeGuard

import pytest

from pytest_llmeval.config import settings
from pytest_llmeval.core.errors import ConfigError
from pytest_llmeval.engine.agent import default_agent
from pytest_llmeval.plugin import (
    case_reports,
    hookspecs,
    options,
    preflight,
    protocol_refusals,
    running_marks,
    session_files,
)
from pytest_llmeval.plugin import scheduling as sharding
from pytest_llmeval.plugin import (
    worker_wire as wire,
)
from pytest_llmeval.plugin.budget import Budget, keep_first_per_file, spent_before
from pytest_llmeval.plugin.budget_measure import BudgetMeasure
from pytest_llmeval.plugin.captured_output import CapturedOutputMask
from pytest_llmeval.plugin.collect import EvalFile, EvalItem, case_fingerprint
from pytest_llmeval.plugin.datasets import CollectedHashes
from pytest_llmeval.plugin.dry_sessions import runs_no_case
from pytest_llmeval.plugin.eval_roots import EvalRoots, eval_roots_key
from pytest_llmeval.plugin.interruption import Interruption, WorkerStop
from pytest_llmeval.plugin.json_report import JsonReportSection
from pytest_llmeval.plugin.late_exit import late_exit_key, note_error, settle
from pytest_llmeval.plugin.progress import Progress
from pytest_llmeval.plugin.resume import Resume, resume_key
from pytest_llmeval.plugin.runner_model import RUNNER_MODEL_KEY, workers_disagree
from pytest_llmeval.plugin.selection import Deselections, deselections_key
from pytest_llmeval.plugin.session import SessionReport, session_report_key
from pytest_llmeval.plugin.state import LLMEvalState, state_key
from pytest_llmeval.plugin.stop import Stop, stop_key
from pytest_llmeval.plugin.termination import SigtermHandler
from pytest_llmeval.report.baseline.file import BaselineError, check_replaceable
from pytest_llmeval.rundir.files import is_run_dir
from pytest_llmeval.suites.base import SuiteRegistry
from pytest_llmeval.suites.builtin import register_builtin_suites, register_entry_point_suites
from pytest_llmeval.tools.broker import ToolBroker

sigterm_key = pytest.StashKey[SigtermHandler]()
session_key = pytest.StashKey[pytest.Session]()
_frozen_key = pytest.StashKey[bool]()
"""Set once the collected objects were frozen out of the garbage collector's sight."""

# -- options -------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


@pytest.hookimpl(tryfirst=True)
def pytest_llmeval_register_suites(registry: SuiteRegistry) -> None:
    """The built-in suites (and installed packages' entry-point suites) come first."""
    register_builtin_suites(registry)
    register_entry_point_suites(registry)


# -- configuration -------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "llmeval: a pytest-llmeval eval case")
    suites = SuiteRegistry()
    config.hook.pytest_llmeval_register_suites(registry=suites)
    stop = config.stash[stop_key] = Stop()
    state = LLMEvalState(config, options.from_config(config), suites, stop)
    config.stash[state_key] = state
    resume = None
    if state.settings.resume is not None:  # the earlier attempts' results, and what to reuse
        resume = Resume(
            config,
            state.settings,
            state.run_dir,
            stop,
            state.runner_model,
            state.scoring,
            state.attempt,
            state.results.fingerprint_of,
        )
        config.stash[resume_key] = resume
        config.pluginmanager.register(resume, "llmeval-resume")
    config.pluginmanager.register(state.records, "llmeval-records")
    config.pluginmanager.register(CollectedHashes(config, state), "llmeval-datasets")
    config.stash[eval_roots_key] = EvalRoots(config, state.settings)
    config.pluginmanager.register(config.stash[eval_roots_key], "llmeval-eval-roots")
    config.pluginmanager.register(CapturedOutputMask(state.redactor), "llmeval-captured-output")
    if not wire.is_worker(config):
        _check_baseline_target(state.settings)
    named = state.settings.run_dir or state.settings.resume
    if named and state.run_dir.exists() and not runs_no_case(config):
        state.claim_run_dir()  # an existing run dir is this session's, or a usage error
    config.stash[deselections_key] = Deselections(state, resume)
    config.pluginmanager.register(config.stash[deselections_key], "llmeval-deselected")
    if not wire.is_worker(config):
        report = SessionReport(state, Interruption(state), resume)
        config.stash[session_report_key] = report
        config.stash[late_exit_key] = report  # kept past unconfigure: the last record
        config.pluginmanager.register(report, "llmeval-report")
        config.pluginmanager.register(report.interruption, "llmeval-interruption")
        config.pluginmanager.register(JsonReportSection(report), "llmeval-json-report")
    else:  # an xdist worker tells its controller why it stopped early
        config.pluginmanager.register(WorkerStop(config), "llmeval-worker-stop")
    config.stash[sigterm_key] = SigtermHandler()  # SIGTERM as Ctrl-C: the reports are written
    config.stash[sigterm_key].install()
    if config.pluginmanager.hasplugin("xdist"):
        hooks = XdistHooks(controller=not wire.is_worker(config), state=state)
        config.pluginmanager.register(hooks, "llmeval-xdist")
    _register_spending(config, state)
    if not wire.is_worker(config):  # the workers read what the controller checked
        state.check_support_files()


def pytest_plugin_registered(plugin: object, plugin_name: str) -> None:
    if plugin_name == "logging-plugin":  # an agent's logging reaches pytest's files masked
        session_files.mask_logging(plugin)


def _check_baseline_target(settings: settings.Settings) -> None:
    """``--llmeval-update-baseline`` never writes over a file that is not a baseline: a
    usage error before any case runs."""
    if settings.update_baseline is not None:
        try:
            check_replaceable(settings.update_baseline)
        except BaselineError as exc:
            raise pytest.UsageError(str(exc)) from None


def _register_spending(config: pytest.Config, state: LLMEvalState) -> None:
    """A budget in every process that runs cases, when one is set; progress where the results
    arrive."""
    settings = state.settings
    if settings.max_tokens_total is not None or settings.max_cost is not None:
        workers = wire.worker_count(config)
        ledger = state.limits.remote_ledger  # with -n: the session's spend, on the controller
        earlier = spent_before(settings, state.run_dir, state.attempt)  # a resume's
        budget = Budget(
            settings, state.dispatcher, state.records, _is_eval_item, workers, ledger, earlier
        )
        config.pluginmanager.register(budget, "llmeval-budget")
        # a budget that cannot be measured is an error, not off
        config.pluginmanager.register(BudgetMeasure(settings, budget), "llmeval-budget-measure")
    if not wire.is_worker(config):
        progress = Progress(config, state.settings, state.records)
        config.pluginmanager.register(progress, "llmeval-progress")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> Any:
    """The run dir's record follows the status the process ends with, also when an error
    leaves pytest after the session (a ``pytest_terminal_summary`` that raised)."""
    try:
        status = yield
    except BaseException as exc:
        note_error(config, exc)
        raise
    settle(config, status)
    return status


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_unconfigure(config: pytest.Config) -> Any:
    """This plugin's clean-up and the run's last record, after every other implementation
    and also when one of them raised (pluggy skips the rest; the process exits 1)."""
    try:
        return (yield)
    except BaseException as exc:
        note_error(config, exc)
        raise
    finally:
        _unconfigure(config)


def _unconfigure(config: pytest.Config) -> None:
    if config.stash.get(_frozen_key, False):  # a process that goes on collects them again
        gc.unfreeze()
    state = config.stash.get(state_key, None)
    if state is not None:
        preflight.close_unused_runner(config, state.dispatcher.call)
        state.dispatcher.close_services()
        state.dispatcher.close()
        state.limits.close()
        state.journal.close()
    running_marks.remove(config)
    handler = config.stash.get(sigterm_key, None)
    if handler is not None and handler.restore() is not None:
        _held_signal(config, handler.deferred)
    settle(config)  # what another plugin or a held signal changed: recorded as pytest ends
    if state is not None:
        state.release_run_dir()
    report = config.stash.get(session_report_key, None)
    if report is not None:
        config.pluginmanager.unregister(report)
        del config.stash[session_report_key]
    names = (
        "llmeval-budget",
        "llmeval-budget-measure",
        "llmeval-progress",
        "llmeval-interruption",
        "llmeval-records",
        "llmeval-json-report",
        "llmeval-datasets",
        "llmeval-eval-roots",
        "llmeval-resume",
    )
    for name in names:
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)


def _held_signal(config: pytest.Config, name: str | None) -> None:
    """A signal held back while the reports were written: they are whole, the run is not
    green."""
    session = config.stash.get(session_key, None)
    if session is not None and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.INTERRUPTED
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(
            f"llmeval: {name} arrived while the reports were written: they were finished "
            "first; the run is not green",
            yellow=True,
        )


class XdistHooks:
    """xdist hooks, registered only when xdist is present (their specs come from xdist)."""

    def __init__(self, *, controller: bool, state: LLMEvalState):
        self.controller = controller
        self.state = state
        self.models: dict[str, str | None] = {}
        """The controller's: the model each worker built its cases for (``prompt_format:
        auto`` from the runner's fingerprint), as its reports say."""

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """The controller: workers that built their cases for different models fail the run
        (one usage error, as a worker's refusal), rather than mix prompt formats."""
        said = wire.facts(report).get("runner_model")
        if not self.controller or not isinstance(said, (list, tuple)) or len(said) != 2:
            return
        self.models.setdefault(str(said[0]), said[1])
        disagree = workers_disagree(self.models)
        if disagree is not None:
            self.state.stop.refuse(disagree)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if self.controller:  # a worker's configuration error: one usage error, exit 4
            preflight.raise_worker_usage_error(report)

    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        enabled = config.stash[state_key].settings.hash_scheduling
        return sharding.make_scheduler(config, log, enabled=enabled)

    def pytest_configure_node(self, node: Any) -> None:
        state = node.config.stash[state_key]
        given = state.worker_input(node.config)
        given.running_marks = running_marks.folder(node.config)
        given.hand_to(node.workerinput)
        state.limits.hand_to_worker(node.workerinput)
        sharding.configure_node(node, enabled=state.settings.hash_scheduling)


@pytest.hookimpl(tryfirst=True)  # before xdist starts its workers (its hook is trylast)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Under xdist the controller collects no case: it claims (creates, tags, locks) the run
    dir before its workers start, so a second session, a read-only folder or a killed
    controller is caught at once. A run dir it created stays only if the session used it."""
    config = session.config
    distributing = config.pluginmanager.has_plugin("dsession")
    if distributing and not wire.is_worker(config) and not runs_no_case(config):
        config.stash[state_key].claim_run_dir()


# -- collection ----------------------------------------------------------------------------


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    return True if is_run_dir(collection_path) else None


EXPLICIT_SUFFIXES = (".json", ".jsonl")
"""A data file named on the command line is looked at whatever its name (as pytest collects a
test module given by path); a suite then claims it by content."""


def pytest_collect_file(parent: pytest.Collector, file_path: Path) -> EvalFile | None:
    state = parent.config.stash[state_key]
    named = file_path.suffix in EXPLICIT_SUFFIXES and parent.session.isinitpath(file_path)
    if not named and not any(fnmatch.fnmatch(file_path.name, g) for g in state.settings.file_globs):
        return None
    if state.is_support_file(file_path):
        return None  # tool fixtures and cassettes are inputs, not cases
    if state.manifests.is_target(file_path):
        return None  # a manifest beside it (or in a folder above) collects this data file
    if parent.config.stash[eval_roots_key].leaves_out(file_path):
        return None  # a folder with its own pytest.ini: `pytest FOLDER` runs it (one line)
    return EvalFile.from_parent(parent, path=file_path, state=state)


def _is_eval_item(item: pytest.Item) -> TypeGuard[EvalItem]:
    return isinstance(item, EvalItem)


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    state = config.stash[state_key]
    limit = state.settings.limit
    if limit is not None:  # deselected the pytest way: "N deselected", a subset for gates
        items[:], dropped = keep_first_per_file(items, limit, _is_eval_item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
    collected = config.stash[deselections_key].collected_nodeids()
    resume = config.stash.get(resume_key, None)
    if resume is not None:
        if resume.finished and not preflight.settle_runner_model(session, items):
            return  # the runner cannot be built: stopped (a resume builds the cases it compares)
        resume.skip_finished(items, case_fingerprint, collected)
    if state.settings.shard is not None:  # --llmeval-shard I/N: the other shards' cases go
        keep, drop = sharding.split_shard(items, *state.settings.shard, _is_eval_item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep


@pytest.hookimpl(tryfirst=True)  # before xdist's worker sends the collected ids
def pytest_collection_finish(session: pytest.Session) -> None:
    preflight.check(session, _is_eval_item)  # runner, judge, embedder, gates: exit 4 at once
    state = session.config.stash[state_key]
    if runs_no_case(session.config):
        return  # --collect-only, --setup-only, --setup-plan: no case runs, nothing is claimed
    state.runahead.plan(session.items, _is_eval_item)
    if any(isinstance(item, EvalItem) for item in session.items):
        state.claim_run_dir()
        # the collected items live to the end of the session: the collector need not walk
        # them again at every full collection while the cases run (unfrozen at the end).
        # A collection first frees what a conftest or plugin dropped before this point, so
        # their finalizers run now rather than only at the end of the session
        gc.collect()
        gc.freeze()
        session.config.stash[_frozen_key] = True


# -- fixtures ------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def llmeval_settings(pytestconfig: pytest.Config) -> settings.Settings:
    """The session's frozen pytest-llmeval settings."""
    return pytestconfig.stash[state_key].settings


@pytest.fixture(scope="session")
def llmeval_runner(
    pytestconfig: pytest.Config, llmeval_settings: settings.Settings
) -> Iterator[Any]:
    """The model runner (or agent endpoint) named by ``--llmeval-runner``."""
    state = pytestconfig.stash[state_key]
    runner = preflight.take_runner(pytestconfig)  # built once collection was done
    if runner is None:  # asked for outside the eval cases: built here, a usage error if bad
        runner = preflight.build_runner(pytestconfig, state)
    yield runner
    aclose = getattr(runner, "aclose", None)
    if aclose is not None:
        state.dispatcher.call(aclose())


@pytest.fixture(scope="session")
def llmeval_broker(llmeval_settings: settings.Settings) -> ToolBroker:
    """The tool broker serving fixtures from ``--llmeval-fixtures``."""
    return ToolBroker.from_dir(llmeval_settings.fixtures)


@pytest.fixture(scope="session")
def llmeval_agent(llmeval_runner: Any) -> Any:
    """The agent each case runs through; override it in a conftest to evaluate your own."""
    return default_agent(llmeval_runner)


# -- reporting -----------------------------------------------------------------------------


def pytest_report_header(config: pytest.Config) -> list[str]:
    state = config.stash.get(state_key, None)
    return preflight.replay_header(state.settings) if state is not None else []


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash.get(state_key, None)
    line = state.limits.summary() if state is not None else None
    if line is not None:
        terminalreporter.write_line(line)
    if state is not None:  # a synchronous agent blocked past its timeout: abandoned at exit
        line = state.dispatcher.agent_threads.blocked_line(state.settings.timeout)
        if line is not None:
            terminalreporter.write_line(line, yellow=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Any:
    """Once the test loop has ended, SIGTERM and Ctrl-C wait until the reports are written."""
    try:
        return (yield)
    finally:
        session.config.stash[session_key] = session
        session.config.stash[sigterm_key].defer()


@pytest.hookimpl(tryfirst=True)  # as pytest's skip marks: before the case's agent is waited on
def pytest_runtest_setup(item: pytest.Item) -> None:
    if isinstance(item, EvalItem):
        refused = protocol_refusals.mark_refusal(item)
        if refused is not None:  # a flaky mark: its reruns would keep only the last attempt
            raise ConfigError(refused)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    try:
        return (yield)
    finally:
        if isinstance(item, EvalItem):
            item.release()  # 100,000 finished items must not hold 100,000 transcripts


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
            state.runahead.judged(item.nodeid)
        record = state.records.of(report)
        case_reports.adjust(item, report, item.transcript, call.excinfo, record)  # time; xfail
        stopped = state.journal.stopped()
        if stopped is not None:  # every case after this one would be lost: stop, fail
            wire.add_facts(report, {"unjournaled": stopped})
            item.session.shouldstop = item.session.shouldstop or stopped
    return report


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    return case_reports.teststatus(report)
