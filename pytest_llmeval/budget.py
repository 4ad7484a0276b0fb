"""Budgets (``--llmeval-max-tokens-total``, ``--llmeval-max-cost``) and ``--llmeval-limit``,
in every process that runs cases.

:class:`Budget` counts the tokens (and with a price table the cost) of this process's case
results as their reports are made. Once a limit is reached it stops the dispatcher's
look-ahead (what was queued or running ahead is cancelled) and every eval item still to run is
skipped in setup with the reason, so it gets a result, the reports are written as usual and
the controller can tell the run stopped early (:data:`BUDGET_REASON`). It also puts the
number of agents in flight on each report, for the controller's progress lines.

Under xdist each worker holds its own :class:`Budget` with a share of each limit (the limit
divided by the number of workers): the session's total then stays within the limit (plus what
the cases in flight when a share ran out used), at the price of a worker stopping while
another still has room.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import pytest

from pytest_llmeval.compat import skip_at_item
from pytest_llmeval.dispatch import Dispatcher
from pytest_llmeval.pricing import BUDGET_REASON, Spend
from pytest_llmeval.settings import Settings

__all__ = ["BUDGET_REASON", "IN_FLIGHT_ATTR", "Budget", "keep_first_per_file"]

IN_FLIGHT_ATTR = "llmeval_in_flight"
"""The report attribute carrying the agents in flight in the process that made it."""


class Budget:
    """This process's spend, its limits, and the skipping of the cases after them."""

    def __init__(
        self,
        settings: Settings,
        dispatcher: Dispatcher,
        is_eval: Callable[[pytest.Item], bool],
        workers: int = 1,
    ) -> None:
        self.dispatcher = dispatcher
        self.is_eval = is_eval
        self.spend = Spend(settings.prices, settings.model)
        self.workers = max(1, workers)
        self.max_tokens = settings.max_tokens_total
        self.max_cost = settings.max_cost
        self.reason: str | None = None
        """Why the remaining cases are skipped; ``None`` while within the limits."""

    @property
    def limited(self) -> bool:
        """Whether there is a budget to keep (without one, only the in-flight count is kept)."""
        return self.max_tokens is not None or self.max_cost is not None

    def _share(self, limit: float) -> float:
        return limit / self.workers

    def add(self, data: dict[str, Any], runner: dict[str, Any] | None) -> None:
        """Count one case result (a result dump and its runner's fingerprint)."""
        self.spend.add(data.get("usage"), runner)
        if self.reason is None:
            self.reason = self._reached()
            if self.reason is not None:
                self.dispatcher.stop_ahead()

    def _reached(self) -> str | None:
        of = "" if self.workers == 1 else f"this worker's 1/{self.workers} share of "
        if self.max_tokens is not None and self.spend.tokens >= self._share(self.max_tokens):
            return (
                f"{BUDGET_REASON}{self.spend.tokens:,} tokens of "
                f"{of}--llmeval-max-tokens-total={self.max_tokens}"
            )
        if self.max_cost is not None and self.spend.cost_usd >= self._share(self.max_cost):
            return (
                f"{BUDGET_REASON}${self.spend.cost_usd:,.4f} of "
                f"{of}--llmeval-max-cost={self.max_cost:g}"
            )
        return None

    # -- hooks -------------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if self.reason is not None and self.is_eval(item):
            skip_at_item(self.reason)

    @pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: after the result is attached
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        data = getattr(report, "llmeval", None)
        if self.limited and isinstance(data, dict):  # no budget: nothing to count here
            self.add(data, getattr(report, "llmeval_runner", None))
        if report.when == "teardown":
            setattr(report, IN_FLIGHT_ATTR, self.dispatcher.in_flight)
        return report


def keep_first_per_file(
    items: list[pytest.Item], limit: int, is_eval: Callable[[pytest.Item], bool]
) -> tuple[list[pytest.Item], list[pytest.Item]]:
    """``(keep, drop)``: the first ``limit`` eval items of each file, in collection order, and
    every other test; the eval items after them."""
    seen: dict[object, int] = {}
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        if not is_eval(item):
            keep.append(item)
            continue
        parent = item.parent
        seen[parent] = seen.get(parent, 0) + 1
        (keep if seen[parent] <= limit else drop).append(item)
    return keep, drop
