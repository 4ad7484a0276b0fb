"""The run dir's record follows the status the process really exits with, to pytest's last hook.

The session writes its verdict as its own ``pytest_sessionfinish`` ends, and writes it again
when something after that changes the exit status (:meth:`SessionReport.record_late
<pytest_llmeval.plugin.session_report.SessionReport.record_late>`). pytest can still end the process
differently after that point, in ways no hook of the session is told about:

* a ``pytest_terminal_summary`` that raises: pytest's terminal reporter calls that hook in
  its own ``pytest_sessionfinish``, after this plugin's; the error leaves ``pytest.main()``
  and the process exits 1, with the session's status untouched;
* a ``pytest_unconfigure`` that raises: pluggy skips every implementation after it (this
  plugin's included), and the process exits 1;
* a ``pytest_cmdline_main`` wrapper of another plugin that changes the status pytest returns.

Two wrappers see them: :func:`unconfigure`, the outermost ``pytest_unconfigure`` of this
plugin (its clean-up and the last record run whatever another implementation raised), and
:func:`cmdline_main`, around all of pytest's own ``pytest_cmdline_main`` (the session,
configure and unconfigure included). An error that leaves either is recorded as a fault
(``the session ended on an error after the run dir was written``) with the status the process
exits with; a status returned that differs from the record is written too. What ends the
process after ``pytest.main()`` returned (``os._exit()`` in an ``atexit`` handler, a kill) is
beyond any hook: the record then says how pytest ended.
"""

from __future__ import annotations

import pytest

from pytest_llmeval.plugin.session_report import SessionReport

__all__ = ["late_exit_key", "note_error", "settle"]

late_exit_key = pytest.StashKey[SessionReport]()
"""The controller's session report, kept past ``pytest_unconfigure`` for the last record."""


def note_error(config: pytest.Config, exc: BaseException) -> None:
    """``exc`` leaves pytest and ends the process: the record says so (once), red."""
    report = config.stash.get(late_exit_key, None)
    session = report.session if report is not None else None
    if report is None or session is None:
        return
    report.ended_on(session, exc)
    report.record_late(session)


def settle(config: pytest.Config, status: int | pytest.ExitCode | None = None) -> None:
    """Record the status the session ends with (``status``: the one pytest returns, when it
    is known and differs), if it differs from the record."""
    report = config.stash.get(late_exit_key, None)
    session = report.session if report is not None else None
    if report is None or session is None:
        return
    if status is not None and int(status) != int(session.exitstatus):
        session.exitstatus = status
    else:
        session.exitstatus = report.escalated(session.exitstatus)
    report.record_late(session)
