"""Budgets (``--llmeval-max-tokens-total``, ``--llmeval-max-cost``) and ``--llmeval-limit``,
in every process that runs cases.

:class:`Budget` counts what each case result of this process cost as its report is made:
the model's tokens over every run of the case (every repeat) and the judge's over every
verdict (every repeat, every judge repeat), priced by ``--llmeval-prices``. Once a limit is
reached it stops the dispatcher's look-ahead (what was queued or running ahead is cancelled)
and every eval item still to run is skipped in setup with the reason, so it gets a result,
the reports are written as usual and the controller can tell the run stopped early
(the skip reason is a :class:`~pytest_llmeval.core.models.BudgetSkip`). It is registered
only when a budget is set.

Under xdist the limits are the session's: each worker adds every case's spend to the
controller's ledger (:mod:`pytest_llmeval.limits.ledger`) and compares the session's totals
with the whole limit, before each case and after it; so the session stops within the limit
plus what the cases in flight when it was reached used. A worker that cannot reach the ledger
counts alone and stops at its share of the limit (the limit divided by the workers).

A resume (``--llmeval-resume``) counts what the run's earlier attempts spent (every result in
its journal, each attempt's): the limit holds for the whole run, not per attempt. When the
earlier attempts spent it all, the session stops before any case (:meth:`Budget.spent_out`,
raised by the checks before any case); a larger limit runs the rest within what is left.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_llmeval.config.pricing import Spend
from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.models import BudgetSkip
from pytest_llmeval.engine.dispatch import Dispatcher
from pytest_llmeval.limits import RemoteLedger
from pytest_llmeval.limits.ledger import Totals
from pytest_llmeval.plugin.case_records import CaseRecord, CaseRecords
from pytest_llmeval.plugin.compat import skip_at_item
from pytest_llmeval.rundir.journal import every_result

__all__ = ["Budget", "keep_first_per_file", "spent_before"]


class Budget:
    """This process's spend, the session's limits, and the skipping of the cases after them."""

    def __init__(
        self,
        settings: Settings,
        dispatcher: Dispatcher,
        records: CaseRecords,
        is_eval: Callable[[pytest.Item], bool],
        workers: int = 1,
        ledger: RemoteLedger | None = None,
        earlier: Totals | None = None,
    ) -> None:
        self.dispatcher = dispatcher
        self.records = records
        self.is_eval = is_eval
        self.spend = Spend(
            settings.prices, settings.model, settings.judge_model, settings.embedding_model
        )
        """What this process's cases cost."""
        self.workers = max(1, workers)
        self.ledger = ledger
        """The session's spend on the controller (xdist workers), or ``None``: this process's
        spend is the session's."""
        self.max_tokens = settings.max_tokens_total
        self.max_cost = settings.max_cost
        self.earlier = earlier or Totals()
        """What the run's earlier attempts spent (a resume's); counted against the limits."""
        self.reason: BudgetSkip | None = None
        """Why the remaining cases are skipped; ``None`` while within the limits."""

    @property
    def limited(self) -> bool:
        """Whether there is a budget to keep (without one, only the in-flight count is kept)."""
        return self.max_tokens is not None or self.max_cost is not None

    def spent_out(self) -> str | None:
        """Why a resume cannot run a case: the run's earlier attempts spent a whole limit (one
        line naming the option to raise); ``None`` when something is left."""
        spent = self.earlier
        for option, used, limit in (
            ("--llmeval-max-tokens-total", f"{spent.tokens:,} tokens", self.max_tokens),
            ("--llmeval-max-cost", f"${spent.cost_usd:,.4f}", self.max_cost),
        ):
            value = spent.tokens if option.endswith("total") else spent.cost_usd
            if limit is not None and value >= limit:
                return (
                    f"{option}: spent {used} of {limit:g} in earlier attempts of this run; "
                    f"raise {option} to run the rest"
                )
        return None

    def add(self, record: CaseRecord) -> None:
        """Count what one case result cost."""
        spend = self.spend
        before = (spend.prompt_tokens, spend.completion_tokens + spend.unsplit_tokens)
        cost = spend.cost_usd
        spend.add_case(record.data, record.runner)
        self._check(  # a total without its split counts as completion tokens on the ledger
            spend.prompt_tokens - before[0],
            spend.completion_tokens + spend.unsplit_tokens - before[1],
            spend.cost_usd - cost,
        )

    def _check(self, prompt: int = 0, completion: int = 0, cost: float = 0.0) -> None:
        """Compare the session's spend (after adding this much) with the limits."""
        if self.reason is not None:
            return
        totals = self.ledger.add(prompt, completion, max(0.0, cost)) if self.ledger else None
        if totals is not None:
            self.reason = self._reached(totals.tokens, totals.cost_usd, 1)
        else:  # this process is the session, or the ledger is out of reach: its share alone
            share = self.workers if self.ledger is not None else 1
            self.reason = self._reached(self.spend.tokens, self.spend.cost_usd, share)
        if self.reason is not None:
            self.dispatcher.stop_ahead()

    def _reached(self, tokens: int, cost: float, share: int) -> BudgetSkip | None:
        """Whether this session's spend (``tokens``, ``cost``: the session's, or this worker's
        alone with ``share`` > 1) and the earlier attempts' reach a limit."""
        of = "" if share == 1 else f"this worker's 1/{share} share of "
        earlier = self.earlier
        one = share == 1  # the session's spend: the earlier attempts' is added to it
        if self.max_tokens is not None and tokens >= (self.max_tokens - earlier.tokens) / share:
            spent = f"{tokens + earlier.tokens if one else tokens:,} tokens"
            if earlier.tokens:
                spent += f" ({earlier.tokens:,} in earlier attempts)"
            return BudgetSkip(spent, f"{of}--llmeval-max-tokens-total={self.max_tokens}")
        if self.max_cost is not None and cost >= (self.max_cost - earlier.cost_usd) / share:
            spent = f"${cost + earlier.cost_usd if one else cost:,.4f}"
            if earlier.cost_usd:
                spent += f" (${earlier.cost_usd:,.4f} in earlier attempts)"
            return BudgetSkip(spent, f"{of}--llmeval-max-cost={self.max_cost:g}")
        return None

    # -- hooks -------------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)  # before the item's own setup starts its case
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if self.ledger is not None and self.limited and self.is_eval(item):
            self._check()  # another worker may have spent the rest
        if self.reason is not None and self.is_eval(item):
            skip_at_item(str(self.reason))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Count the case result the report carries (made with the report, logged after)."""
        record = self.records.of(report)
        if record is not None:
            self.add(record)


def spent_before(settings: Settings, run_dir: Path, attempt: int) -> Totals | None:
    """What the run's attempts before ``attempt`` spent, when this session resumes it under a
    budget (read once, from the journal; ``None`` otherwise): every journaled result, each
    attempt's, priced as the budget prices this session's."""
    if not settings.resume or (settings.max_tokens_total is None and settings.max_cost is None):
        return None
    spend = Spend(settings.prices, settings.model, settings.judge_model, settings.embedding_model)
    for result, runner in every_result(run_dir, attempt):
        spend.add_case(result, runner)
    unsplit = spend.unsplit_tokens  # counted with the completion tokens, as on the ledger
    return Totals(spend.prompt_tokens, spend.completion_tokens + unsplit, spend.cost_usd)


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
