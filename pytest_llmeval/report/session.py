"""The controller-side session reporter: collects every case result and writes the run dir.

Registered only where ``workerinput`` is absent (the controller, or a run without xdist):
results reach it on the test reports, from this process or from xdist workers alike.
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval import __version__
from pytest_llmeval.errors import LLMEvalError
from pytest_llmeval.models import CaseResult
from pytest_llmeval.report import console, verdict
from pytest_llmeval.report.artifacts import write_json
from pytest_llmeval.report.baseline import BaselineDiff, diff_markdown, write_baseline
from pytest_llmeval.report.gates import (
    GateResult,
    evaluate_gates,
    gates_section,
    suite_gate_results,
)
from pytest_llmeval.report.mlflow_log import MlflowLogError, log_run
from pytest_llmeval.report.provenance import filtered_environment, git_state
from pytest_llmeval.report.redact import find_leaks
from pytest_llmeval.report.run import RunWriter
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
        self.report: dict[str, Any] | None = None
        self.file_artifacts: list[tuple[str, dict[str, Any]]] = []
        self.write_error: str | None = None
        self.leaks: list[Path] = []
        self.cli_gates = verdict.cli_gates(state.settings)
        self.gate_results: list[GateResult] = []
        self.gate_problems: list[str] = []
        self.baseline_diff: BaselineDiff | None = None
        self.baseline_refusal: str | None = None
        self.mlflow_run_id: str | None = None
        self.mlflow_error: str | None = None
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
            except (OSError, LLMEvalError) as exc:
                self.write_error = f"could not write the run dir: {exc}"
            reports = verdict.gate_reports(self.gate_results) + verdict.baseline_reports(
                self.baseline_diff, self.baseline_refusal
            )
            # gates are reported as tests: count them, so progress and totals add up
            session.testscollected += len(reports) // 3
            for report in reports:
                session.config.hook.pytest_runtest_logreport(report=report)
        session.exitstatus = verdict.exit_status(
            session.exitstatus, settings.exit_on, self.verdict_failed
        )
        result = yield
        self._leak_check(session)
        session.exitstatus = verdict.exit_status(
            session.exitstatus, settings.exit_on, self.verdict_failed or bool(self.leaks)
        )
        return result

    @property
    def verdict_failed(self) -> bool:
        """A gate failed, the baseline regressed or was refused, or a manifest gate was bad."""
        return (
            any(not g.passed for g in self.gate_results)
            or bool(self.gate_problems)
            or self.baseline_refusal is not None
            or (self.baseline_diff is not None and self.baseline_diff.regressed)
            or self.write_error is not None
            or self.mlflow_error is not None
        )

    def _write(self) -> None:
        settings = self.state.settings
        self.run_dir = self.state.ensure_run_dir()
        writer = RunWriter(
            self.run_dir,
            self.state.run_id,
            self.state.context,
            self.state.suites,
            self.state.redactor,
        )
        results = [self.results[key] for key in sorted(self.results)]
        self.report = writer.build(results, self.runners)
        self._judge(results)
        self.file_artifacts = writer.suite_artifacts(results)
        extra = "\n" + diff_markdown(self.baseline_diff) if self.baseline_diff else ""
        written = writer.write(results, self.report, self.file_artifacts, extra)
        finished = datetime.now(timezone.utc)
        redact = self.state.redactor
        write_json(
            self.run_dir / "manifest.json",
            {
                "run_id": self.state.run_id,
                "plugin_version": __version__,
                "python": sys.version.split()[0],
                "pytest": pytest.__version__,
                "started": self.started.isoformat(),
                "finished": finished.isoformat(),
                "duration_s": round((finished - self.started).total_seconds(), 3),
                "settings": redact.value(settings.public_dict()),
                "invocation": redact.value(list(self.state.config.invocation_params.args)),
                "git": git_state(settings.rootdir),
                "environment": redact.value(filtered_environment()),
                "attempt": self.state.attempt,
                "shard": list(settings.shard) if settings.shard else None,
                "artifacts": written,
            },
        )
        if settings.mlflow:
            try:
                self.mlflow_run_id = log_run(
                    self.run_dir,
                    settings.mlflow,
                    settings.mlflow_experiment,
                    secrets=self.state.secrets,
                )
            except MlflowLogError as exc:  # the run dir is complete; report and fail
                self.mlflow_error = str(exc)

    def _judge(self, results: list[CaseResult]) -> None:
        """Gates and the baseline diff, into the report; bless the run when asked."""
        assert self.report is not None
        settings = self.state.settings
        gates, self.gate_problems = verdict.manifest_gates(results, settings.rootdir)
        gates = self.cli_gates + gates
        self.gate_results = evaluate_gates(gates, self.report) + suite_gate_results(self.report)
        if self.gate_results:
            self.report["gates"] = gates_section(self.gate_results)
        self.baseline_diff, self.baseline_refusal = verdict.compare_with_baseline(
            settings, self.report, results
        )
        if self.baseline_diff is not None:
            self.report["baseline"] = self.baseline_diff.model_dump(mode="json")
        if settings.update_baseline is not None:
            blessed = {k: v for k, v in self.report.items() if k != "baseline"}
            write_baseline(
                settings.update_baseline,
                self.state.redactor.value(blessed),
                results,
                run_id=self.state.run_id,
            )

    # -- leak check --------------------------------------------------------------------------

    def _leak_check(self, session: pytest.Session) -> None:
        self.leaks = find_leaks(self._written_paths(), self.state.secrets)
        if self.leaks:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
            reporter = session.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                for path in self.leaks:
                    reporter.write_line(
                        f"llmeval: leak check: a configured secret's value is in {path}", red=True
                    )

    def _written_paths(self) -> list[Path]:
        config = self.state.config
        paths = [self.run_dir] if self.run_dir is not None else []
        for option in ("xmlpath", "json_report_file"):
            value = getattr(config.option, option, None)
            if value and Path(value).is_file():
                paths.append(Path(value))
        cassettes = self.state.settings.cassettes
        if self.state.settings.record is not None and cassettes.is_dir():
            paths.append(cassettes)
        return paths

    # -- terminal ----------------------------------------------------------------------------

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.results and self.write_error is None:
            return
        terminalreporter.section("llmeval")
        if self.report is not None:
            for line in console.summary_lines(self.report):
                terminalreporter.write_line(line)
            for line in console.verdict_lines(
                self.gate_results, self.gate_problems, self.baseline_diff, self.baseline_refusal
            ):
                terminalreporter.write_line(line)
        for name, value in self.file_artifacts:
            suite = self.state.suites.get(name.split("/", 1)[0])
            if suite is not None:
                for line in suite.console_lines(value):
                    terminalreporter.write_line(line)
        if self.write_error is not None:
            terminalreporter.write_line(f"llmeval: {self.write_error}", red=True)
        elif self.run_dir is not None:
            terminalreporter.write_line(f"llmeval: run dir {self.run_dir}")
        if self.mlflow_error is not None:
            terminalreporter.write_line(f"llmeval: {self.mlflow_error}", red=True)
        elif self.mlflow_run_id is not None:
            experiment = self.state.settings.mlflow_experiment
            terminalreporter.write_line(
                f"llmeval: MLflow run {self.mlflow_run_id} in experiment {experiment!r}"
            )
