"""One case's result as this process's hooks share it: a :class:`CaseRecord`, in one place.

A record is made once per report that carries a case result, and only read afterwards:

* where the case ran, by :meth:`ResultBuilder.attach
  <pytest_llmeval.plugin.phase_results.ResultBuilder.attach>` while pytest makes the report (or
  by the session reporter for the case an xdist worker died under);
* on the xdist controller, as the worker's report is logged: the worker sends the record's
  journal line beside the serialized report (``pytest_report_to_serializable``), the controller
  takes it off as xdist rebuilds the report (``pytest_report_from_serializable``) and makes the
  record in a wrapper of ``pytest_runtest_logreport``, before any hook that reads it. The
  report object itself never carries the result.

Everyone that reads results (the budget, progress lines, the session report) asks
:meth:`CaseRecords.of` for the record of the report being logged; the order of their hooks
does not matter. Only the current report's record is held: the session report keeps what it
needs of it, and the terminal reporter, which keeps every report to the end, keeps no copy.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_llmeval.core.models import BudgetSkip, CaseResult
from pytest_llmeval.rundir.journal import read_line

__all__ = ["WIRE_KEY", "CaseRecord", "CaseRecords"]

WIRE_KEY = "llmeval_result"
"""The key of a case's journal line in an xdist worker's serialized report."""


class CaseRecord:
    """One case's result: its redacted dump, its runner's fingerprint, its journal line."""

    __slots__ = ("_kept", "_model", "data", "line", "runner")

    def __init__(
        self,
        data: dict[str, Any],
        runner: dict[str, Any] | None,
        line: bytes | None = None,
        model: CaseResult | None = None,
    ) -> None:
        self.data = data
        """The result, redacted, as JSON values (``CaseResult.model_dump(mode="json")``)."""
        self.runner = runner
        """The fingerprint of the runner or agent that produced it (``None`` for a result
        made without one: a crash, a refusal)."""
        self.line = line
        """Its journal line, where this process journaled it (sent on to the controller
        under xdist); ``None`` where it arrived from a worker."""
        self._kept: CaseResult | None = None
        self._model = model
        """The result ``data`` is the dump of (its ``runner_fingerprint`` aside), where the
        redaction left the dump as it was: kept by copying it, not by validating ``data``."""

    @property
    def nodeid(self) -> str:
        return str(self.data["nodeid"])

    @property
    def outcome(self) -> str:
        return str(self.data["outcome"])

    @property
    def budget_skip(self) -> BudgetSkip | None:
        """Why a spent budget skipped the case, or ``None``."""
        return BudgetSkip.of(self.data.get("outcome"), self.data.get("error"))

    @property
    def result(self) -> CaseResult:
        """The result as the session holds it to the end (:meth:`CaseResult.kept`), made on
        first use: only the process that writes the reports needs it."""
        if self._kept is None:
            model, self._model = self._model, None
            data = self.data
            self._kept = CaseResult.kept(data) if model is None else CaseResult.kept_as(model, data)
        return self._kept


class CaseRecords:
    """The record of the report being made and logged now, in this process; also the xdist
    hooks that carry a worker's record to the controller."""

    def __init__(self) -> None:
        self._current: tuple[pytest.TestReport, CaseRecord] | None = None
        self._arrived: dict[int, str] = {}
        """Journal lines of workers' reports rebuilt and not yet logged, by report."""

    def put(self, report: pytest.TestReport, record: CaseRecord) -> None:
        """``record`` is the case result ``report`` carries."""
        self._current = (report, record)

    def of(self, report: pytest.TestReport) -> CaseRecord | None:
        """The case result ``report`` carries, or ``None`` (a phase that ended no case, a test
        that is no eval case)."""
        current = self._current
        return current[1] if current is not None and current[0] is report else None

    # -- xdist -------------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_report_to_serializable(self, report: Any) -> Any:
        data = yield
        record = self.of(report) if isinstance(report, pytest.TestReport) else None
        if record is not None and record.line is not None and isinstance(data, dict):
            data[WIRE_KEY] = record.line.decode("ascii")
        return data

    @pytest.hookimpl(wrapper=True)
    def pytest_report_from_serializable(self, data: dict[str, Any]) -> Any:
        """The controller: keep a worker's line until its report is logged (xdist rebuilds
        reports in its receiving thread and logs them later, in the main thread)."""
        line = data.pop(WIRE_KEY, None)
        report = yield
        if line is not None and report is not None:
            self._arrived[id(report)] = line  # the report is alive until it is logged
        return report

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Any:
        """The controller: the record of a worker's report, made before any hook reads it."""
        line = self._arrived.pop(id(report), None)
        if line is not None:
            result, runner = read_line(line)
            self.put(report, CaseRecord(result, runner))
        return (yield)
