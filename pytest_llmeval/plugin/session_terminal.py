"""The session's ``llmeval`` section of the terminal summary: the totals, the gates and the
verdict, each error message once, what a resume reused, where the run dir is, and every
fault the session found; read from the :class:`~pytest_llmeval.plugin.session_report.SessionReport`
once it has written the run dir."""

from __future__ import annotations

import shlex
from typing import Any

from pytest_llmeval.plugin.session_report import SessionReport

__all__ = ["SessionTerminal"]


class SessionTerminal:
    """Registered beside the session report, on the controller."""

    def __init__(self, session: SessionReport) -> None:
        self.session = session

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from pytest_llmeval.report import console  # only the end of a session needs it

        session = self.session
        nothing = not session.results and not session.verdict.faults and session.report is None
        if nothing or session.state.stop.reason is not None:
            return
        terminalreporter.ensure_newline()  # a blank line before the heading, none after
        terminalreporter.section("llmeval")
        for line in session.resume.notes if session.resume is not None else ():
            terminalreporter.write_line(f"llmeval: {line}")
        if session.nothing_left:
            terminalreporter.write_line(
                "llmeval: nothing left to run: every case has a final result from an earlier "
                "attempt; the reports were rebuilt"
            )
        if session.report is not None:
            for line in console.summary_lines(session.report):
                terminalreporter.write_line(line)
            earlier = sum(1 for key in session.results if key in session.finished)
            note = console.tally_note(list(session.results.values()), earlier)
            if note is not None:
                terminalreporter.write_line(note)
            warning = console.rubric_warning(list(session.results.values()))
            if warning is not None:
                terminalreporter.write_line(warning, yellow=True)
            for line in console.verdict_lines(session.verdict):
                terminalreporter.write_line(line)
            for line in console.error_lines(list(session.results.values())):  # each message once
                terminalreporter.write_line(line)
            cut = session.report.interrupted
            if cut is not None:
                line = console.interrupted_line(cut, session.run_dir)
                terminalreporter.write_line(f"llmeval: {line}", yellow=True)
        for name, value in session.file_artifacts:
            suite = session.state.suites.get(name.split("/", 1)[0])
            if suite is not None:
                for line in suite.console_lines(value):
                    terminalreporter.write_line(line)
        unwritten = session.verdict.faults_of("write")
        for fault in unwritten:
            terminalreporter.write_line(f"llmeval: {fault}", red=True)
        if session.baseline_kept is not None:
            resume = console.resume_option(session.run_dir)
            terminalreporter.write_line(
                f"llmeval: baseline {session.baseline_kept} not updated: the run was cut short "
                f"(finish it with {resume} "
                f"--llmeval-update-baseline={shlex.quote(session.baseline_kept)})",
                yellow=True,
            )
        if session.run_dir is not None and not unwritten:
            terminalreporter.write_line(f"llmeval: run dir {session.run_dir}")
        if session.latest_warning is not None:
            terminalreporter.write_line(f"llmeval: warning: {session.latest_warning}", yellow=True)
        if session.state.placeholders:
            terminalreporter.write_line(console.placeholder_notice(session.state.placeholders))
        for fault in session.verdict.faults_of("baseline"):
            terminalreporter.write_line(f"llmeval: {fault}", red=True)
        for fault in session.verdict.faults_of("mlflow"):  # leaks were printed as they were found
            terminalreporter.write_line(f"llmeval: {fault}", red=True)
        if session.mlflow_run_id is not None:
            experiment = session.state.settings.mlflow_experiment
            terminalreporter.write_line(
                f"llmeval: MLflow run {session.mlflow_run_id} in experiment {experiment!r}"
            )
