"""pytest hooks of pytest-llmeval, the plugin's entry point (``pytest11``). Each hook is a few
lines and delegates; ``pytest_configure`` registers the feature plugins, each only where it
has a job. The fixtures and what a case's report carries are plugins of their own
(:data:`pytest_plugins`)."""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any, TypeGuard

import pytest

from pytest_llmeval.config import settings
from pytest_llmeval.core.errors import ConfigError
from pytest_llmeval.plugin import (
    frozen_objects,
    hookspecs,
    options,
    preflight,
    protocol_refusals,
    session_files,
)
from pytest_llmeval.plugin import scheduling as sharding
from pytest_llmeval.plugin import (
    worker_wire as wire,
)
from pytest_llmeval.plugin.budget import Budget, keep_first_per_file, spent_before
from pytest_llmeval.plugin.budget_measure import BudgetMeasure
from pytest_llmeval.plugin.captured_output import CapturedOutputMask
from pytest_llmeval.plugin.collect import EvalFile
from pytest_llmeval.plugin.datasets import CollectedHashes
from pytest_llmeval.plugin.dry_sessions import runs_no_case
from pytest_llmeval.plugin.eval_item import EvalItem, case_fingerprint
from pytest_llmeval.plugin.eval_roots import EvalRoots, eval_roots_key
from pytest_llmeval.plugin.frozen_objects import frozen_objects_key
from pytest_llmeval.plugin.interruption import Interruption, WorkerStop
from pytest_llmeval.plugin.json_report import JsonReportSection
from pytest_llmeval.plugin.late_exit import late_exit_key, note_error, settle
from pytest_llmeval.plugin.process_end import session_key, sigterm_key, unconfigure
from pytest_llmeval.plugin.progress import Progress
from pytest_llmeval.plugin.resume import Resume, resume_key
from pytest_llmeval.plugin.selection import Deselections, deselections_key
from pytest_llmeval.plugin.session_report import SessionReport, session_report_key
from pytest_llmeval.plugin.session_terminal import SessionTerminal
from pytest_llmeval.plugin.state import LLMEvalState, state_key
from pytest_llmeval.plugin.stop import Stop, stop_key
from pytest_llmeval.plugin.termination import SigtermHandler, Terminated
from pytest_llmeval.plugin.xdist_controller import XdistController
from pytest_llmeval.report.baseline.file import BaselineError, check_replaceable
from pytest_llmeval.rundir.files import is_run_dir
from pytest_llmeval.suites.base import SuiteRegistry
from pytest_llmeval.suites.builtin import register_builtin_suites, register_entry_point_suites

pytest_plugins = ["pytest_llmeval.plugin.case_fixtures", "pytest_llmeval.plugin.eval_reports"]

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
    frozen_objects.install(config)  # its clean-up first: it runs after pytest's own
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
        config.pluginmanager.register(SessionTerminal(report), "llmeval-session-terminal")
        config.pluginmanager.register(report.interruption, "llmeval-interruption")
        config.pluginmanager.register(JsonReportSection(report), "llmeval-json-report")
    else:  # an xdist worker tells its controller why it stopped early
        config.pluginmanager.register(WorkerStop(config), "llmeval-worker-stop")
    sigterm = config.stash[sigterm_key] = SigtermHandler()  # SIGTERM as Ctrl-C: reports written
    sigterm.install()
    config.pluginmanager.register(sigterm, "llmeval-sigterm")  # a lost signal, raised again
    if config.pluginmanager.hasplugin("xdist") and not wire.is_worker(config):
        config.pluginmanager.register(XdistController(state), "llmeval-xdist")
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
        unconfigure(config)


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
        if resume.finished and not preflight.runner_before_resume(session, items):
            return  # stopped (one usage error): a resume builds the cases it compares
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
    state.run_ahead.plan(session.items, _is_eval_item)
    if any(isinstance(item, EvalItem) for item in session.items):
        state.claim_run_dir()
        # the collected items live to the end of the session: the collector need not walk
        # them again at every full collection while the cases run (unfrozen at the end)
        frozen = session.config.stash[frozen_objects_key]
        frozen.start()
        session.config.pluginmanager.register(frozen, "llmeval-frozen-objects")


# -- fixtures ------------------------------------------------------------------------------


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
    """Once the test loop has ended, SIGTERM and Ctrl-C wait until the reports are written
    (the handlers in-process cases wrapped put back first, so each is put back in turn). A
    SIGTERM whose stop was lost stops the session now: after the last test, and in place of
    ``-x``'s stop or a Ctrl-C that came after it (the session was already signalled)."""
    handler = session.config.stash[sigterm_key]
    handler.looping = True
    try:
        result = yield
        handler.raise_unseen()
        return result
    except (KeyboardInterrupt, session.Failed) as exc:
        if not isinstance(exc, Terminated):
            handler.raise_unseen()
        handler.unseen = None  # pytest sees the stop
        raise
    finally:
        handler.looping = False
        session.config.stash[session_key] = session
        session.config.stash[state_key].dispatcher.put_back_signals()
        handler.defer()


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
