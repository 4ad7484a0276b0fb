"""The controller-side session reporter: collects every case result and writes the run dir.

Registered only where ``workerinput`` is absent (the controller, or a run without xdist):
results reach it on the test reports, from this process or from xdist workers alike.
"""

from __future__ import annotations

import contextlib
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_llmeval.core.errors import ConfigError, LLMEvalError
from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.core.redact import find_leaks
from pytest_llmeval.plugin import worker_wire as wire
from pytest_llmeval.plugin.case_records import CaseRecord
from pytest_llmeval.plugin.dry_sessions import runs_no_case
from pytest_llmeval.plugin.gate_reports import gate_test_reports, log_gate_reports
from pytest_llmeval.plugin.interruption import Interruption, crashed_result
from pytest_llmeval.plugin.resume import Resume
from pytest_llmeval.plugin.run_writing import Written, write_run
from pytest_llmeval.plugin.selection import deselections_key
from pytest_llmeval.plugin.session_files import written_files
from pytest_llmeval.plugin.state import LLMEvalState
from pytest_llmeval.report import run_verdict, verdict
from pytest_llmeval.report.exit_status import (
    ExitFacts,
    cases_failed,
    escalate,
    exit_status,
    on_error,
)
from pytest_llmeval.report.verdict import Fault
from pytest_llmeval.rundir.claim import unwritable
from pytest_llmeval.rundir.models import Report, RunVerdict

if TYPE_CHECKING:  # imported where a session ends: every session starts faster
    from pytest_llmeval.report.finish import RunEnd
from pytest_llmeval.rundir.read import recorded_verdict

session_report_key = pytest.StashKey["SessionReport"]()


class SessionReport:
    """Collects :class:`CaseResult` s as reports arrive; writes artifacts at session end."""

    def __init__(
        self, state: LLMEvalState, interruption: Interruption, resume: Resume | None = None
    ):
        self.state = state
        self.interruption = interruption
        self.resume = resume
        self.finished = resume.finished if resume is not None else {}
        """A resume's earlier final results that it reuses (those of cases that changed since
        are dropped at collection)."""
        self.results: dict[str, CaseResult] = {}
        self.runners: dict[str, dict[str, Any]] = {}
        self.started = datetime.now(timezone.utc)
        self.run_dir: Path | None = None
        self.report: Report | None = None
        self.file_artifacts: list[tuple[str, dict[str, Any]]] = []
        self.verdict = verdict.Verdict()
        self.mlflow_run_id: str | None = None
        self.baseline_kept: str | None = None
        """The ``--llmeval-update-baseline`` file left as it was: the run was cut short."""
        self.nothing_left = False
        """A resume found every case finished: it only rebuilt the reports."""
        self.unjournaled = False
        """A process's journal stopped: the run is red, resume finishes it."""
        self.crashes: list[Fault] = []
        """xdist workers that died after their case was judged (a teardown): red."""
        self.latest_warning: str | None = None
        """Why ``<output root>/latest`` was not pointed at this run (a file of the user's)."""
        self.written: Written | None = None
        """The manifest and page facts as written, to write the verdict again if it changes."""
        self.plain_failed: list[str] = []
        """Tests of this session that are not eval cases and failed or errored: red in every
        mode (``--llmeval-exit-on gates`` lets failed eval cases through, nothing else)."""
        self.torn: list[str] = []
        """Eval cases whose teardown errored: their result stands, the run is red."""
        self.end: RunEnd | None = None
        """What the end of the run was decided from, once the run dir was written."""
        self.session: pytest.Session | None = None
        """The session, to record how it really ended once every plugin has had its say."""
        self.earlier = recorded_verdict(state.run_dir) if state.settings.resume else None
        """The record of the run resumed, read before this session writes its own."""
        try:  # a bad --llmeval-gate is a usage error, up front
            verdict.cli_gates(state.settings)
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from None

    def _add_earlier(self) -> None:
        """A resumed run's earlier results that were reused (those of cases that changed
        since were dropped at collection and ran again)."""
        for nodeid, (result, runner) in self.finished.items():
            self.results.setdefault(nodeid, result)
            if runner and result.runner_fingerprint:
                self.runners.setdefault(result.runner_fingerprint, runner)

    # -- collecting --------------------------------------------------------------------------

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        facts = wire.facts(report)
        if "refusal" in facts:  # an xdist worker refused the resume: the session stops
            self.state.stop.refuse(str(facts["refusal"]))
        if "unjournaled" in facts:
            self.unjournaled = True  # a process's journal stopped (a full disk)
        self._plain(report)
        record = self.state.records.of(report)
        if record is None:
            return
        result = record.result
        self.results[result.nodeid] = result
        if record.runner and result.runner_fingerprint:
            self.runners.setdefault(result.runner_fingerprint, record.runner)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        self._plain(report)  # a test file not collected (--continue-on-collection-errors)

    def _plain(self, report: pytest.TestReport | pytest.CollectReport) -> None:
        """Note a test that is not an eval case and failed, errored or could not be collected."""
        # a data file that failed to collect has no result for the verdict to judge
        collect = isinstance(report, pytest.CollectReport)
        if report.failed and (collect or not self._is_case(report.nodeid)):
            _note(self.plain_failed, report.nodeid)
        else:  # an eval case's teardown that errored (a fixture's): its result stands, red
            _note(self.torn, run_verdict.teardown_failed(report))

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport) -> None:
        """xdist: the case a worker died under becomes an error result, the one xdist's
        report of it carries (read as any other in :meth:`pytest_runtest_logreport`), and is
        journaled, so ``summarize`` sees it and resume runs it again (an error is not final)."""
        if not self.interruption.is_eval(crashitem):
            return
        earlier = self.results.get(crashitem)
        worker = getattr(getattr(getattr(report, "node", None), "gateway", None), "id", "?")
        if earlier is not None and crashitem not in self.finished:
            # judged before the worker died (in teardown): that result stands, but xdist
            # reports the case failed and a crash is an infrastructure fault: the run is red
            self.crashes.append(run_verdict.crash_after_judged(str(worker), crashitem))
            return
        suite, file = self.interruption.suite_of(crashitem)
        category = self.interruption.category_of(crashitem)
        result = crashed_result(crashitem, str(worker), suite, file, category)
        data = self.state.redactor.value(result.model_dump(mode="json"))
        self.state.journal.append(data, None)
        self.state.records.put(report, CaseRecord(data, None))

    # -- writing -----------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Any:
        """Write the run dir first; scan for leaked secrets after every other writer
        (junitxml and pytest-json-report write in their own sessionfinish)."""
        settings = self.state.settings
        self.session = session
        if session.exitstatus == pytest.ExitCode.INTERRUPTED:
            # a signal in an earlier pytest_collection_finish skipped theirs: what was planned
            # and left out is settled from the session's items, before it is read below (a
            # usage error there stops the session before any case, and leaves no run dir)
            self.interruption.settle(session)
            session.config.stash[deselections_key].settle(session)
        self._add_earlier()
        ran = not runs_no_case(session.config)  # --collect-only, --setup-only/-plan
        empty_shard = settings.shard is not None and ran  # writes its run dir too
        cut_short = bool(self.interruption.planned) and ran  # before any result arrived
        refused = self.state.stop.reason is not None  # stopped before running: touch nothing
        # a usage error (the preflight's: a runner that cannot be built) stopped it before any
        # case as well: a resumed run dir stays as it was, its record unchanged
        refused = refused or session.exitstatus == pytest.ExitCode.USAGE_ERROR
        # gates on cases that were all deselected are judged (partial), never dropped
        selection = session.config.stash[deselections_key]
        gated = bool(settings.gate or selection.manifests) and bool(selection.by_suite)
        if self.finished and not refused:
            self.nothing_left = session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
        if (self.results or empty_shard or cut_short or (gated and ran)) and not refused:
            try:
                write_run(self, session)
            except OSError as exc:
                where = Path(exc.filename) if exc.filename else self.state.run_dir
                message = unwritable(where, exc, "could not write the run dir:")
                self.verdict.faults.append(Fault("write", message))
            except (UnicodeError, LLMEvalError) as exc:
                self.verdict.faults.append(Fault("write", f"could not write the run dir: {exc}"))
            # the session's own faults, also when the run dir could not be written
            self.verdict.faults += [f for f in self.faults() if f not in self.verdict.faults]
            log_gate_reports(session, gate_test_reports(self.verdict))
        told = refused and session.exitstatus != pytest.ExitCode.USAGE_ERROR  # by a worker
        session.exitstatus = self._status(session)
        if told:
            _say(session, f"ERROR: {self.state.stop.reason}")
        try:  # also when another plugin's sessionfinish raised (pytest.exit() and the rest)
            return (yield)
        except pytest.exit.Exception:  # pytest sets the status it asks for: recorded later
            raise
        except BaseException as exc:
            self.ended_on(session, exc)
            raise
        finally:
            self._leak_check(session)
            session.exitstatus = self.escalated(session.exitstatus)
            self.record_late(session)

    def ended_on(self, session: pytest.Session, exc: BaseException) -> None:
        """The process ends on ``exc`` (exit 1, or ``sys.exit()``'s status), raised after the
        run dir was written: the run dir must not read green (:mod:`.late_exit`)."""
        message = f"the session ended on an error after the run dir was written: {exc!r}"
        if Fault("exit", message) not in self.verdict.faults:
            self.verdict.faults.append(Fault("exit", message))
        usage = isinstance(exc, pytest.UsageError)  # pytest.main() then returns 4
        code = int(pytest.ExitCode.USAGE_ERROR) if usage else getattr(exc, "code", None)
        session.exitstatus = self.escalated(on_error(code))

    def _is_case(self, nodeid: str) -> bool:
        """An eval case, a gate's or the baseline's item (the verdict judges their failures)."""
        gate = nodeid.startswith(f"{verdict.GATES_NODE}::") or nodeid == verdict.BASELINE_NODE
        return gate or self.interruption.is_eval(nodeid)

    def escalated(self, status: int | pytest.ExitCode) -> int | pytest.ExitCode:
        """``status`` made red when what this session knows fails the run; never made
        greener (another plugin's non-zero status stands, ``--llmeval-exit-on gates`` too)."""
        failed = self.verdict.failed or bool(self.plain_failed or self.torn)
        return _as_code(escalate(int(status), failed))

    def faults(self) -> list[Fault]:
        """What only this session knows fails the run: workers that died after their case
        was judged (in this attempt, or in an earlier one whose result a resume reuses), tests
        that are not eval cases and failed, a journal that stopped."""
        faults = list(self.crashes)
        faults += run_verdict.standing_crashes(self.earlier, self.finished)
        faults += run_verdict.plain_tests_failed(self.plain_failed, self.torn)
        if self.unjournaled:
            stopped = "a journal stopped: cases ran that no journal holds (resume runs them again)"
            faults.append(Fault("journal", stopped))
        return faults

    def _status(self, session: pytest.Session) -> int | pytest.ExitCode:
        """The session's exit status once the verdict is known (the run dir's record of it is
        written with this status, before the session's last writers and the leak check)."""
        interrupted = self.report is not None and self.report.interrupted is not None
        facts = ExitFacts(
            status=int(session.exitstatus),
            exit_on=self.state.settings.exit_on,
            cases_failed=cases_failed(self.results.values()),
            verdict_failed=self.verdict.failed,
            plain_failed=bool(self.plain_failed or self.torn),
            interrupted=interrupted,
            resumed=bool(self.finished),
            unjournaled=self.unjournaled,
            refused=self.state.stop.reason is not None,
        )
        return _as_code(exit_status(facts))

    def _record(self, status: int) -> RunVerdict | None:
        """The run's verdict as ``manifest.json`` and report.html show it."""
        from pytest_llmeval.report.finish import record

        return record(self.end, self.verdict, int(status)) if self.end is not None else None

    def record_late(self, session: pytest.Session) -> None:
        """Write the verdict again when what came after the run dir was written (a leak, an
        MLflow failure, another plugin) changed it: the run dir never reads greener than
        the session ended."""
        written = self.written
        if written is None or written.manifest.verdict is None or self.report is None:
            return
        final = self._record(session.exitstatus)
        if final is None or final == written.manifest.verdict:
            return
        facts = written.facts.model_copy(update={"verdict": final})
        results = [self.results[key] for key in sorted(self.results)]
        try:
            manifest = written.writer.rewrite_verdict(
                written.manifest, final, results, self.report, facts
            )
        except (OSError, UnicodeError, LLMEvalError) as exc:
            message = f"could not write the run's verdict into {self.run_dir}: {exc}"
            _say(session, f"llmeval: {message}")
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
            # the manifest this session wrote must not stand greener: the run dir then reads
            # unfinished (resume or summarize make it whole)
            with contextlib.suppress(OSError):
                written.writer.layout.manifest.unlink()
            return
        self.written = Written(written.writer, manifest, facts)

    # -- leak check --------------------------------------------------------------------------

    def _leak_check(self, session: pytest.Session) -> None:
        written = written_files(self.state.config, self.state.settings, self.run_dir)
        leaks = find_leaks(written, self.state.secrets)
        if leaks:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
            reporter = session.config.pluginmanager.get_plugin("terminalreporter")
            for path in leaks:
                message = f"leak check: a configured secret's value is in {path}"
                self.verdict.faults.append(Fault("leak", message))
                if reporter is not None:
                    reporter.write_line(f"llmeval: {message}", red=True)


def _say(session: pytest.Session, line: str) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(line, red=True)


def _note(nodeids: list[str], nodeid: str | None) -> None:
    if nodeid is not None and nodeid not in nodeids:
        nodeids.append(nodeid)


def _as_code(status: int) -> int | pytest.ExitCode:
    """``status`` as pytest's :class:`~pytest.ExitCode` where it is one of pytest's own."""
    try:
        return pytest.ExitCode(status)
    except ValueError:
        return status
