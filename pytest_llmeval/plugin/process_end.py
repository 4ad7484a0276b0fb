"""The end of the plugin in one process, at ``pytest_unconfigure``: the runner, the
dispatcher, the limits and the journal closed, a signal held while the reports were written
made red, the run's last record settled, the run dir released and every plugin object
unregistered (a process that goes on, pytester's in-process runs, starts clean)."""

from __future__ import annotations

import pytest

from pytest_llmeval.plugin import preflight, running_marks
from pytest_llmeval.plugin.late_exit import settle
from pytest_llmeval.plugin.session_report import session_report_key
from pytest_llmeval.plugin.state import state_key
from pytest_llmeval.plugin.termination import SigtermHandler

__all__ = ["session_key", "sigterm_key", "unconfigure"]

sigterm_key = pytest.StashKey[SigtermHandler]()
session_key = pytest.StashKey[pytest.Session]()


def unconfigure(config: pytest.Config) -> None:
    """Close and unregister what this process of the plugin made."""
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
        "llmeval-frozen-objects",
        "llmeval-resume",
        "llmeval-session-terminal",
        "llmeval-sigterm",
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
