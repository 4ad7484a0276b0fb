"""What a test printed, masked before any report shows it.

pytest keeps a test's captured ``stdout``/``stderr`` (and captured logs) as sections of its
report, and writes them to the terminal (``-rA``, a failure's "Captured stdout call"), to junit
(``-o junit_logging=all``: ``<system-out>``, ``<system-err>``), to pytest-json-report's file and
to pytest-reportlog's. An agent that prints its backend's answer, or a plain test beside the
evals that prints a key, would put the key in each. :class:`CapturedOutputMask` rewrites each
section (the item's, which pytest-json-report reads, and the report's) through the session's
redactor as the report is made, in the process that ran the test (an xdist worker's report
travels masked), so every reader sees it masked. The leak check still reads every file the
session writes.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from pytest_llmeval.core.redact import Redactor
from pytest_llmeval.plugin.compat import mask_report_sections

__all__ = ["CapturedOutputMask"]


class CapturedOutputMask:
    """Masks the captured output of every test's reports (eval cases and plain tests)."""

    def __init__(self, redactor: Redactor):
        self.redactor = redactor

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        text = self.redactor.text
        # the item's sections first: the report is made from them, and pytest-json-report
        # reads them from the item
        mask_report_sections(item, text)
        report = yield
        if report.sections:  # and what another plugin added to the report itself
            report.sections = [(title, text(content)) for title, content in report.sections]
        return report
