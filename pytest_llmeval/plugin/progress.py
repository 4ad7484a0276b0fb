"""Progress of a long run on the controller's terminal, and how a budget ended it.

:class:`Progress` is registered where results arrive (the controller, or a run without xdist).
It counts finished tests, the agents in flight in each process (from the reports, see
:mod:`pytest_llmeval.plugin.budget`), the tokens and, with ``--llmeval-prices``, the cost of the
case results so far, and every ``--llmeval-progress`` seconds writes one line::

    llmeval: 120/500 done, 8 in flight, 45,678 tokens, $0.1234, ETA 3m12s

With ``-v`` the line comes after a test's line; otherwise only where pytest's row of dots has
just ended at the terminal's edge, so the rows and their ``[ NN%]`` stay whole. With ``-q``,
or a run shorter than the interval, there is none. At the end it adds the tokens (and cost) to
the terminal summary, and when a budget skipped cases it says so and makes the exit status 2.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pytest

from pytest_llmeval.config.pricing import Spend
from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.models import BudgetSkip, CaseResult
from pytest_llmeval.plugin import worker_wire as wire
from pytest_llmeval.plugin.case_records import CaseRecords
from pytest_llmeval.plugin.compat import terminal_at_line_start

__all__ = ["BUDGET_EXIT_STATUS", "Progress", "duration", "progress_line", "results_cost"]

BUDGET_EXIT_STATUS = pytest.ExitCode.INTERRUPTED
"""The exit status of a run a budget cut short: the run stopped before its end on purpose,
as ``pytest.exit()`` does; not 0 (the evaluation is incomplete) and not 1 (no case failed
for it)."""


def duration(seconds: float) -> str:
    """``45s``, ``3m12s``, ``2h05m``."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def results_cost(
    results: Sequence[CaseResult], runners: dict[str, dict[str, Any]], settings: Settings
) -> float:
    """What ``results`` cost by the settings' price table (``report.json`` ``totals.cost_usd``),
    the way progress lines count it."""
    spend = Spend(settings.prices, settings.model, settings.judge_model, settings.embedding_model)
    for result in results:
        data = {"usage": result.usage.model_dump(), "details": result.details}
        spend.add_case(data, runners.get(result.runner_fingerprint))
    return round(spend.cost_usd, 6)


def progress_line(
    done: int,
    total: int,
    in_flight: int,
    spend: Spend,
    elapsed: float,
) -> str:
    """One progress line; the ETA assumes the remaining tests take as long as the done ones."""
    parts = [f"{done}/{total} done", f"{in_flight} in flight", f"{spend.tokens:,} tokens"]
    if spend.prices is not None:
        parts.append(f"${spend.cost_usd:,.4f}")
    if 0 < done < total:
        parts.append(f"ETA {duration(elapsed / done * (total - done))}")
    return "llmeval: " + ", ".join(parts)


class Progress:
    """Counts what the controller hears of the cases; prints progress and the budget's end."""

    def __init__(self, config: pytest.Config, settings: Settings, records: CaseRecords) -> None:
        self.config = config
        self.records = records
        self.interval = settings.progress
        self.spend = Spend(
            settings.prices, settings.model, settings.judge_model, settings.embedding_model
        )
        self.done = 0
        self.in_flight: dict[str, int] = {}
        self.budget_reason: BudgetSkip | None = None
        self.budget_skipped = 0
        self._session: pytest.Session | None = None
        self._started: float | None = None
        self._last: float | None = None

    @property
    def total(self) -> int:
        return self._session.testscollected if self._session is not None else 0

    def line(self) -> str:
        elapsed = time.monotonic() - (self._started or time.monotonic())
        return progress_line(
            self.done, self.total, sum(self.in_flight.values()), self.spend, elapsed
        )

    # -- hooks -------------------------------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._session = session

    def pytest_runtest_logstart(self) -> None:
        if self._started is None:
            self._started = self._last = time.monotonic()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = self.records.of(report)
        if record is not None:
            self.spend.add_case(record.data, record.runner)
            skip = record.budget_skip
            if skip is not None:
                self.budget_skipped += 1
                self.budget_reason = self.budget_reason or skip
        if report.when == "teardown":
            self.done += 1
            in_flight = wire.facts(report).get("in_flight")
            if isinstance(in_flight, int):
                self.in_flight[_process(report)] = in_flight

    @pytest.hookimpl(trylast=True)  # after the terminal reporter's own output
    def pytest_runtest_logfinish(self) -> None:
        verbosity = self.config.get_verbosity()
        if self.interval <= 0 or verbosity < 0 or self._last is None or self.done >= self.total:
            return  # off, -q, not started, or done (the summary has the end)
        now = time.monotonic()
        if now - self._last < self.interval:
            return
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        if verbosity > 0:  # a line of its own, ended by whatever pytest writes next
            reporter.ensure_newline()
            reporter.write(self.line())
            reporter.currentfspath = -2
        elif terminal_at_line_start(reporter):
            reporter.write(self.line() + "\n")
        else:
            return  # in the middle of a row of dots: at the end of one
        self._last = now

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        judged = (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
        if self.budget_skipped and session.exitstatus in judged:
            session.exitstatus = BUDGET_EXIT_STATUS

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        spend = self.spend
        if spend.tokens and self.config.get_verbosity() >= 0:
            line = (
                f"llmeval: {spend.tokens:,} tokens ({spend.prompt_tokens:,} prompt, "
                f"{spend.completion_tokens:,} completion"
                + (f", {spend.unsplit_tokens:,} not split" if spend.unsplit_tokens else "")
                + ")"
            )
            if spend.prices is not None:
                line += f", ${spend.cost_usd:,.4f}"
            if spend.unpriced:
                line += f"; no price for {', '.join(sorted(spend.unpriced))}"
            terminalreporter.write_line(line)
        if self.budget_reason is not None:
            terminalreporter.write_line(
                f"llmeval: {self.budget_reason}; {self.budget_skipped} cases skipped, the "
                f"reports cover the rest; exit status {int(BUDGET_EXIT_STATUS)}",
                yellow=True,
            )


def _process(report: pytest.TestReport) -> str:
    """The xdist worker a report came from (``main`` without xdist)."""
    gateway = getattr(getattr(report, "node", None), "gateway", None)
    return str(getattr(gateway, "id", "main"))
