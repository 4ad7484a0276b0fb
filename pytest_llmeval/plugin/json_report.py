"""The ``llmeval`` section of pytest-json-report's ``--json-report``.

pytest-json-report lists each case and gate as a test; this section adds what only the run as a
whole has: the run dir, the fingerprints, each suite's section and the gates with their
statuses. It is ``report.json``'s body (the typed :class:`~pytest_llmeval.rundir.models.Report`,
dumped and redacted as the run dir's writer does) with the run dir beside it, so a reader of
either file finds the same numbers under the same keys.

pytest-json-report is optional: its hook is declared ``optionalhook``, so a session without it
(not installed, or ``-p no:json-report``) never calls it. Only the controller registers this
plugin (under xdist the workers write no report). The json report is written in pytest-json-
report's ``pytest_sessionfinish``, inside the session report's wrapper, so the leak check that
follows scans it with everything else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_llmeval.plugin.session_report import SessionReport

__all__ = ["JsonReportSection", "llmeval_section"]


class JsonReportSection:
    """Adds ``llmeval`` to the json report of the session ``session_report`` writes."""

    def __init__(self, session_report: SessionReport):
        self.session_report = session_report

    @pytest.hookimpl(optionalhook=True)
    def pytest_json_modifyreport(self, json_report: dict[str, Any]) -> None:
        section = llmeval_section(self.session_report)
        if section is not None:
            json_report["llmeval"] = section


def llmeval_section(session_report: SessionReport) -> dict[str, Any] | None:
    """``{"run_dir": ..., **report.json}``, redacted as the run dir is; ``None`` when the
    session wrote no run dir (nothing ran, or the run was refused)."""
    report, run_dir = session_report.report, session_report.run_dir
    if report is None or run_dir is None:
        return None
    redactor = session_report.state.redactor
    return {"run_dir": redactor.text(str(run_dir)), **redactor.value(report.dump())}
