"""The controller-side session reporter: collects every case result and writes the run dir.

Registered only where ``workerinput`` is absent (the controller, or a run without xdist):
results reach it on the test reports, from this process or from xdist workers alike.
"""

from __future__ import annotations

import contextlib
import shlex
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_llmeval.core.errors import ConfigError, LLMEvalError
from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.core.redact import find_leaks
from pytest_llmeval.plugin import worker_wire as wire
from pytest_llmeval.plugin.dry_sessions import runs_no_case
from pytest_llmeval.plugin.gate_reports import gate_test_reports, log_gate_reports
from pytest_llmeval.plugin.interruption import Interruption, crashed_result, merged_counts
from pytest_llmeval.plugin.progress import results_cost
from pytest_llmeval.plugin.records import CaseRecord
from pytest_llmeval.plugin.resume import Resume
from pytest_llmeval.plugin.selection import deselections_key
from pytest_llmeval.plugin.session_files import written_files
from pytest_llmeval.plugin.state import LLMEvalState
from pytest_llmeval.report import run_verdict, verdict
from pytest_llmeval.report.baseline.file import BaselineCase, not_blessed, subset_of, write_baseline
from pytest_llmeval.report.baseline.render import diff_markdown
from pytest_llmeval.report.verdict import Fault
from pytest_llmeval.rundir.claim import unwritable
from pytest_llmeval.rundir.latest import point_latest
from pytest_llmeval.rundir.models import Report, RunManifest, RunVerdict

if TYPE_CHECKING:  # imported where a session ends: every session starts faster
    from pytest_llmeval.report.html.header import RunFacts
    from pytest_llmeval.report.writer import RunWriter
from pytest_llmeval.rundir.read import manifests_named, recorded_verdict

session_report_key = pytest.StashKey["SessionReport"]()


@dataclass(frozen=True)
class _Written:
    """What the session wrote its verdict with: to write it again if it changes."""

    writer: RunWriter
    manifest: RunManifest
    facts: RunFacts


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
        self.crashes: list[str] = []
        """xdist workers that died after their case was judged (a teardown): red."""
        self.latest_warning: str | None = None
        """Why ``<output root>/latest`` was not pointed at this run (a file of the user's)."""
        self.written: _Written | None = None
        """The manifest and page facts as written, to write the verdict again if it changes."""
        self.plain_failed: list[str] = []
        """Tests of this session that are not eval cases and failed or errored: red in every
        mode (``--llmeval-exit-on gates`` lets failed eval cases through, nothing else)."""
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
        plain = report.failed and (collect or not self._is_case(report.nodeid))
        # an eval case's teardown that errored (a fixture's): its result stands, the run is red
        nodeid = report.nodeid if plain else run_verdict.teardown_failed(report)
        if nodeid is not None and nodeid not in self.plain_failed:
            self.plain_failed.append(nodeid)

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
            self.crashes.append(
                f"worker crashed: xdist worker {worker} died after {crashitem} was judged "
                "(its result stands); the run fails"
            )
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
        self._add_earlier()
        ran = not runs_no_case(session.config)  # --collect-only, --setup-only/-plan
        empty_shard = settings.shard is not None and ran  # writes its run dir too
        cut_short = bool(self.interruption.planned) and ran  # before any result arrived
        refused = self.state.stop.reason is not None  # stopped before running: touch nothing
        # gates on cases that were all deselected are judged (partial), never dropped
        selection = session.config.stash[deselections_key]
        gated = bool(settings.gate or selection.manifests) and bool(selection.by_suite)
        if self.finished and not refused:
            self.nothing_left = session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
        if (self.results or empty_shard or cut_short or (gated and ran)) and not refused:
            try:
                self._write(session)
            except OSError as exc:
                where = Path(exc.filename) if exc.filename else self.state.run_dir
                message = unwritable(where, exc, "could not write the run dir:")
                self.verdict.faults.append(Fault("write", message))
            except (UnicodeError, LLMEvalError) as exc:
                self.verdict.faults.append(Fault("write", f"could not write the run dir: {exc}"))
            # the session's own faults, also when the run dir could not be written
            self.verdict.faults += [f for f in self._faults() if f not in self.verdict.faults]
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
        code = exc.code if isinstance(exc, SystemExit) else None
        status = code if isinstance(code, int) and code else pytest.ExitCode.TESTS_FAILED
        session.exitstatus = self.escalated(status)

    def _is_case(self, nodeid: str) -> bool:
        """An eval case, a gate's or the baseline's item (the verdict judges their failures)."""
        gate = nodeid.startswith(f"{verdict.GATES_NODE}::") or nodeid == verdict.BASELINE_NODE
        return gate or self.interruption.is_eval(nodeid)

    def escalated(self, status: int | pytest.ExitCode) -> int | pytest.ExitCode:
        """``status`` made red when what this session knows fails the run; never made
        greener (another plugin's non-zero status stands, ``--llmeval-exit-on gates`` too)."""
        failed = self.verdict.failed or bool(self.plain_failed)
        return pytest.ExitCode.TESTS_FAILED if failed and status == pytest.ExitCode.OK else status

    def _faults(self) -> list[Fault]:
        """What only this session knows fails the run: workers that died after their case
        was judged (in this attempt, or in an earlier one whose result a resume reuses), tests
        that are not eval cases and failed, a journal that stopped."""
        faults = [Fault("crash", message) for message in self.crashes]
        faults += run_verdict.standing_crashes(self.earlier, self.finished)
        faults += run_verdict.plain_tests_failed(self.plain_failed)
        if self.unjournaled:
            stopped = "a journal stopped: cases ran that no journal holds (resume runs them again)"
            faults.append(Fault("journal", stopped))
        return faults

    def _status(self, session: pytest.Session) -> int | pytest.ExitCode:
        """The session's exit status once the verdict is known (the run dir's record of it is
        written with this status, before the session's last writers and the leak check)."""
        status = session.exitstatus
        refused = self.state.stop.reason is not None
        if self.finished and not refused:
            status = _resumed_status(status, self.state.settings.exit_on, self.results)
        status = self.escalated(self._exit_status(status))
        if self.unjournaled:  # cases were run that no journal holds
            status = pytest.ExitCode.TESTS_FAILED
        if refused:  # told by a worker
            status = pytest.ExitCode.USAGE_ERROR
        return status

    def _exit_status(self, current: int | pytest.ExitCode) -> int | pytest.ExitCode:
        """The verdict's exit status; a run cut short never exits 0 (pytest's own status
        stands: 1 after ``-x``, 2 after Ctrl-C or SIGTERM)."""
        settings = self.state.settings
        status = _exit_code(verdict.exit_status(current, settings.exit_on, self.verdict.failed))
        if status == pytest.ExitCode.OK and self.report is not None and self.report.interrupted:
            return current if current != pytest.ExitCode.OK else pytest.ExitCode.INTERRUPTED
        return status

    def _record(self, status: int) -> RunVerdict:
        """The run's verdict as ``manifest.json`` and report.html show it."""
        interrupted = self.report.interrupted if self.report is not None else None
        return run_verdict.record(
            self.verdict,
            self.results.values(),
            exit_on=self.state.settings.exit_on,
            interrupted=interrupted,
            exit_status=int(status),
        )

    def record_late(self, session: pytest.Session) -> None:
        """Write the verdict again when what came after the run dir was written (a leak, an
        MLflow failure, another plugin) changed it: the run dir never reads greener than
        the session ended."""
        written = self.written
        if written is None or written.manifest.verdict is None or self.report is None:
            return
        final = self._record(session.exitstatus)
        if final == written.manifest.verdict:
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
        self.written = _Written(written.writer, manifest, facts)

    def _write(self, session: pytest.Session) -> None:
        # what only the end of a session needs is imported here: every session starts faster
        from pytest_llmeval.report.html.header import RunFacts
        from pytest_llmeval.report.mlflow_log import MlflowLogError, log_run
        from pytest_llmeval.report.provenance import filtered_environment, git_state
        from pytest_llmeval.report.writer import RunWriter

        state, settings = self.state, self.state.settings
        self.run_dir = state.ensure_run_dir()
        writer = RunWriter(self.run_dir, state.run_id, state.context, state.suites, state.redactor)
        results = [self.results[key] for key in sorted(self.results)]
        self.report = report = writer.build(results, self.runners)
        if settings.prices is not None:
            report.totals.cost_usd = results_cost(results, self.runners, settings)
        interrupted, unrun = self.interruption.judge(session, results)
        deselected = state.config.stash[deselections_key].counts(results) or {}
        report.deselected = merged_counts(deselected.items(), unrun.items())
        report.interrupted = interrupted
        # the manifests of the cases collected, and of the earlier results a resume reused
        named = state.config.stash[deselections_key].manifests
        reused = manifests_named(result for result, _ in self.finished.values())
        manifests = state.manifests.present(named | reused)
        gates, problems = verdict.gather_gates(settings, results, manifests=manifests)
        self.verdict = verdict.judge(report, results, settings, gates, problems, self._faults())
        blessed = report.without_baseline().dump() if settings.update_baseline else {}
        subset = subset_of(blessed, settings.shard) if settings.update_baseline else None
        if settings.update_baseline is not None and interrupted is not None:
            self.baseline_kept = str(settings.update_baseline)  # a subset is no baseline
        elif settings.update_baseline is not None and subset is not None:
            self.verdict.faults.append(
                Fault("baseline", not_blessed(settings.update_baseline, subset))
            )
        elif settings.update_baseline is not None:
            write_baseline(
                settings.update_baseline,
                state.redactor.value(blessed),
                [BaselineCase.of(result) for result in results],
                run_id=state.run_id,
            )
        self.file_artifacts = writer.suite_artifacts(results)
        diff = self.verdict.baseline_diff
        extra = "\n" + diff_markdown(diff) if diff else ""
        earlier = self.finished
        # under xdist every result came from a worker (redacted there): a second pass
        distributed = session.config.pluginmanager.has_plugin("dsession")

        def own(result: CaseResult) -> bool:
            """Made and redacted here, by this very redactor (not an earlier attempt's)."""
            return not distributed and result.nodeid not in earlier

        problems = self.verdict.gate_problems  # unreadable gates: failed rows of summary.md
        ending = self._record(self._status(session))  # as the session will exit
        facts = RunFacts(  # the page's header: manifest.json is written after it
            started=self.started.isoformat(),
            duration_s=round((datetime.now(timezone.utc) - self.started).total_seconds(), 3),
            runner=settings.runner,
            model=settings.model,
            verdict=ending,
        )
        # an earlier session's record goes first: if this one cannot finish its files, the run
        # dir reads unfinished, never as the last session ended
        writer.layout.manifest.unlink(missing_ok=True)
        writer.layout.html.unlink(missing_ok=True)
        written = writer.write(
            results, report, self.file_artifacts, extra, own, gate_problems=problems, facts=facts
        )
        finished = datetime.now(timezone.utc)
        manifest = writer.write_manifest(
            settings=settings,
            # URL credentials and secret-named options masked (the writer's pass sees no names)
            invocation=state.redactor.argv(state.config.invocation_params.args),
            started=self.started.isoformat(),
            finished=finished.isoformat(),
            duration_s=round((finished - self.started).total_seconds(), 3),
            git=git_state(settings.rootdir),
            environment=filtered_environment(),
            attempt=state.attempt,
            artifacts=written,
            interrupted=interrupted,
            verdict=ending,
        )
        self.written = _Written(writer, manifest, facts)
        self.latest_warning = point_latest(settings.output_root, self.run_dir)
        if settings.mlflow:
            try:
                self.mlflow_run_id = log_run(
                    self.run_dir,
                    settings.mlflow,
                    settings.mlflow_experiment,
                    secrets=state.secrets,
                )
            except MlflowLogError as exc:  # the run dir is complete; report and fail
                self.verdict.faults.append(Fault("mlflow", str(exc)))

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

    # -- terminal ----------------------------------------------------------------------------

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from pytest_llmeval.report import console

        nothing = not self.results and not self.verdict.faults and self.report is None
        if nothing or self.state.stop.reason is not None:
            return
        terminalreporter.ensure_newline()  # a blank line before the heading, none after
        terminalreporter.section("llmeval")
        for line in self.resume.notes if self.resume is not None else ():
            terminalreporter.write_line(f"llmeval: {line}")
        if self.nothing_left:
            terminalreporter.write_line(
                "llmeval: nothing left to run: every case has a final result from an earlier "
                "attempt; the reports were rebuilt"
            )
        if self.report is not None:
            for line in console.summary_lines(self.report):
                terminalreporter.write_line(line)
            earlier = sum(1 for key in self.results if key in self.finished)
            note = console.tally_note(list(self.results.values()), earlier)
            if note is not None:
                terminalreporter.write_line(note)
            warning = console.rubric_warning(list(self.results.values()))
            if warning is not None:
                terminalreporter.write_line(warning, yellow=True)
            for line in console.verdict_lines(self.verdict):
                terminalreporter.write_line(line)
            for line in console.error_lines(list(self.results.values())):  # each message once
                terminalreporter.write_line(line)
            if self.report.interrupted is not None:
                terminalreporter.write_line(
                    f"llmeval: {console.interrupted_line(self.report.interrupted, self.run_dir)}",
                    yellow=True,
                )
        for name, value in self.file_artifacts:
            suite = self.state.suites.get(name.split("/", 1)[0])
            if suite is not None:
                for line in suite.console_lines(value):
                    terminalreporter.write_line(line)
        unwritten = self.verdict.faults_of("write")
        for fault in unwritten:
            terminalreporter.write_line(f"llmeval: {fault}", red=True)
        if self.baseline_kept is not None:
            resume = console.resume_option(self.run_dir)
            terminalreporter.write_line(
                f"llmeval: baseline {self.baseline_kept} not updated: the run was cut short "
                f"(finish it with {resume} "
                f"--llmeval-update-baseline={shlex.quote(self.baseline_kept)})",
                yellow=True,
            )
        if self.run_dir is not None and not unwritten:
            terminalreporter.write_line(f"llmeval: run dir {self.run_dir}")
        if self.latest_warning is not None:
            terminalreporter.write_line(f"llmeval: warning: {self.latest_warning}", yellow=True)
        if self.state.placeholders:
            terminalreporter.write_line(console.placeholder_notice(self.state.placeholders))
        for fault in self.verdict.faults_of("baseline"):
            terminalreporter.write_line(f"llmeval: {fault}", red=True)
        for fault in self.verdict.faults_of("mlflow"):  # leaks were printed as they were found
            terminalreporter.write_line(f"llmeval: {fault}", red=True)
        if self.mlflow_run_id is not None:
            experiment = self.state.settings.mlflow_experiment
            terminalreporter.write_line(
                f"llmeval: MLflow run {self.mlflow_run_id} in experiment {experiment!r}"
            )


def _resumed_status(
    status: int | pytest.ExitCode, exit_on: str, results: dict[str, CaseResult]
) -> int | pytest.ExitCode:
    """A resumed session's status counts the earlier attempts' cases too: a failure found
    before the interruption still fails the run, and a resume with nothing left to run exits
    as the finished run did (never "no tests collected")."""
    if status not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        return status
    missed = any(r.outcome in ("failed", "error") and not r.xfailed for r in results.values())
    if exit_on == "all" and missed:
        return pytest.ExitCode.TESTS_FAILED
    return pytest.ExitCode.OK


def _say(session: pytest.Session, line: str) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(line, red=True)


def _exit_code(status: int) -> int | pytest.ExitCode:
    """``status`` as pytest's :class:`~pytest.ExitCode` where it is one of pytest's own."""
    try:
        return pytest.ExitCode(status)
    except ValueError:
        return status
