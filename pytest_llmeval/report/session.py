"""The controller-side session reporter: collects every case result and writes the run dir.

Registered only where ``workerinput`` is absent (the controller, or a run without xdist):
results reach it on the test reports, from this process or from xdist workers alike.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.errors import LLMEvalError
from pytest_llmeval.models import CaseResult
from pytest_llmeval.redact import find_leaks
from pytest_llmeval.report import console, verdict
from pytest_llmeval.report.baseline import diff_markdown, write_baseline
from pytest_llmeval.report.mlflow_log import MlflowLogError, log_run
from pytest_llmeval.report.progress import results_cost
from pytest_llmeval.report.provenance import filtered_environment, git_state
from pytest_llmeval.report.selection import deselections_key
from pytest_llmeval.report.verdict import Fault
from pytest_llmeval.report.writer import RunWriter
from pytest_llmeval.rundir.models import Report
from pytest_llmeval.state import LLMEvalState

session_report_key = pytest.StashKey["SessionReport"]()


class SessionReport:
    """Collects :class:`CaseResult` s as reports arrive; writes artifacts at session end."""

    def __init__(self, state: LLMEvalState):
        self.state = state
        self.results: dict[str, CaseResult] = {}
        self.runners: dict[str, dict[str, Any]] = {}
        self.started = datetime.now(timezone.utc)
        self.run_dir: Path | None = None
        self.report: Report | None = None
        self.file_artifacts: list[tuple[str, dict[str, Any]]] = []
        self.verdict = verdict.Verdict()
        self.mlflow_run_id: str | None = None
        verdict.cli_gates(state.settings)  # a bad --llmeval-gate is a usage error, up front
        for nodeid, (result, runner) in state.finished.items():  # a resumed run's earlier cases
            self.results[nodeid] = result
            if runner and result.runner_fingerprint:
                self.runners.setdefault(result.runner_fingerprint, runner)

    # -- collecting --------------------------------------------------------------------------

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "llmeval", None)
        if data is None:
            return
        result = CaseResult.kept(data)
        self.results[result.nodeid] = result
        runner = getattr(report, "llmeval_runner", None)
        if runner and result.runner_fingerprint:
            self.runners.setdefault(result.runner_fingerprint, runner)
        # taken: the terminal reporter keeps every report to the end, so keep no second copy
        del report.llmeval
        if runner is not None:
            del report.llmeval_runner

    # -- writing -----------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Any:
        """Write the run dir first; scan for leaked secrets after every other writer
        (junitxml and pytest-json-report write in their own sessionfinish)."""
        settings = self.state.settings
        empty_shard = settings.shard is not None and not session.config.option.collectonly
        if self.results or empty_shard:  # an empty shard still writes its run dir
            try:
                self._write()
            except (OSError, UnicodeError, LLMEvalError) as exc:
                self.verdict.faults.append(Fault("write", f"could not write the run dir: {exc}"))
            reports = self.verdict.test_reports()
            # gates are reported as tests: count them, so progress and totals add up
            session.testscollected += len(reports) // 3
            for report in reports:
                session.config.hook.pytest_runtest_logreport(report=report)
        session.exitstatus = verdict.exit_status(
            session.exitstatus, settings.exit_on, self.verdict.failed
        )
        result = yield
        self._leak_check(session)
        session.exitstatus = verdict.exit_status(
            session.exitstatus, settings.exit_on, self.verdict.failed
        )
        return result

    def _write(self) -> None:
        state, settings = self.state, self.state.settings
        self.run_dir = state.ensure_run_dir()
        writer = RunWriter(self.run_dir, state.run_id, state.context, state.suites, state.redactor)
        results = [self.results[key] for key in sorted(self.results)]
        self.report = report = writer.build(results, self.runners)
        if settings.prices is not None:
            report.totals.cost_usd = results_cost(results, self.runners, settings)
        report.deselected = state.config.stash[deselections_key].counts(results)
        gates, problems = verdict.gather_gates(settings, results)
        self.verdict = verdict.judge(report, results, settings, gates, problems)
        if settings.update_baseline is not None:
            blessed = report.without_baseline().dump()
            write_baseline(
                settings.update_baseline,
                state.redactor.value(blessed),
                results,
                run_id=state.run_id,
            )
        self.file_artifacts = writer.suite_artifacts(results)
        diff = self.verdict.baseline_diff
        extra = "\n" + diff_markdown(diff) if diff else ""
        written = writer.write(results, report, self.file_artifacts, extra)
        finished = datetime.now(timezone.utc)
        writer.write_manifest(
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
        )
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
        leaks = find_leaks(self._written_paths(), self.state.secrets)
        if leaks:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
            reporter = session.config.pluginmanager.get_plugin("terminalreporter")
            for path in leaks:
                message = f"leak check: a configured secret's value is in {path}"
                self.verdict.faults.append(Fault("leak", message))
                if reporter is not None:
                    reporter.write_line(f"llmeval: {message}", red=True)

    def _written_paths(self) -> list[Path]:
        config = self.state.config
        paths = [self.run_dir] if self.run_dir is not None else []
        # junit, pytest-json-report, pytest-html, and the baseline this run wrote
        for option in ("xmlpath", "json_report_file", "htmlpath"):
            value = getattr(config.option, option, None)
            if value and Path(value).is_file():
                paths.append(Path(value))
        settings = self.state.settings
        if settings.update_baseline is not None and settings.update_baseline.exists():
            paths.append(settings.update_baseline)
        if settings.record is not None and settings.cassettes.is_dir():
            paths.append(settings.cassettes)
        return paths

    # -- terminal ----------------------------------------------------------------------------

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.results and not self.verdict.faults:
            return
        terminalreporter.section("llmeval")
        if self.report is not None:
            for line in console.summary_lines(self.report.dump()):
                terminalreporter.write_line(line)
            earlier = sum(1 for key in self.results if key in self.state.finished)
            note = console.tally_note(list(self.results.values()), earlier)
            if note is not None:
                terminalreporter.write_line(note)
            warning = console.rubric_warning(list(self.results.values()))
            if warning is not None:
                terminalreporter.write_line(warning, yellow=True)
            for line in console.verdict_lines(self.verdict):
                terminalreporter.write_line(line)
        for name, value in self.file_artifacts:
            suite = self.state.suites.get(name.split("/", 1)[0])
            if suite is not None:
                for line in suite.console_lines(value):
                    terminalreporter.write_line(line)
        unwritten = self.verdict.faults_of("write")
        for fault in unwritten:
            terminalreporter.write_line(f"llmeval: {fault}", red=True)
        if self.run_dir is not None and not unwritten:
            terminalreporter.write_line(f"llmeval: run dir {self.run_dir}")
        for fault in self.verdict.faults_of("mlflow"):  # leaks were printed as they were found
            terminalreporter.write_line(f"llmeval: {fault}", red=True)
        if self.mlflow_run_id is not None:
            experiment = self.state.settings.mlflow_experiment
            terminalreporter.write_line(
                f"llmeval: MLflow run {self.mlflow_run_id} in experiment {experiment!r}"
            )
