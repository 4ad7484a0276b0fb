"""A budget that cannot be measured is an error, never a budget that is silently off.

``--llmeval-max-cost`` needs a price for every model whose tokens it counts, and
``--llmeval-max-tokens-total`` needs a token count from every model call:

* at the start (the checks before any case, :func:`unpriced_at_start`): a cost budget whose
  prices file does not price the model the runner's fingerprint or ``--llmeval-model`` names,
  or the judge's model, is a usage error (exit 4);
* on each case (:class:`BudgetMeasure`, registered only under a budget): a case whose cost
  cannot be priced (a model first named by its agent) or whose model calls reported no tokens
  at all is an error, and the dispatcher's look-ahead stops with the cases after it skipped
  for the budget: they would spend what the budget cannot count.

A ``usage`` that gives only ``total_tokens`` is counted (:attr:`Usage.counted`), so only a
call with no count at all is refused. Log-likelihood scoring (When2Call's multiple choice)
makes no chat call and is not refused.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

import pytest

from pytest_llmeval.config.pricing import price_of
from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.errors import ConfigError
from pytest_llmeval.core.models import BudgetSkip, Transcript
from pytest_llmeval.plugin.budget import Budget
from pytest_llmeval.plugin.eval_item import EvalItem
from pytest_llmeval.plugin.runner_model import model_named

__all__ = ["BudgetMeasure", "no_price", "unpriced_at_start"]


def no_price(settings: Settings, model: str | None, who: str) -> str | None:
    """Why ``--llmeval-max-cost`` cannot count ``who``'s tokens at ``model``: the prices file
    (or its absence) gives no price for it; ``None`` when it does, or without a cost budget."""
    if settings.max_cost is None or settings.prices is None:  # the latter: a usage error
        return None
    if price_of(settings.prices, model) is not None:
        return None
    name = repr(model) if model else "(it names none)"
    return (
        f"--llmeval-max-cost cannot be measured: the --llmeval-prices file has no price for "
        f"{who}'s model {name} (nor a '*' entry); add one to the file"
    )


def unpriced_at_start(
    settings: Settings, runner_fingerprint: Mapping[str, Any] | None
) -> str | None:
    """The usage error for a cost budget that cannot price the models known at the start:
    the runner's (its fingerprint's ``model``, else ``--llmeval-model``) and the judge's."""
    if settings.max_cost is None:
        return None
    model = model_named(runner_fingerprint) or settings.model
    if model is not None:  # else not known yet: the first case that cannot be priced errs
        why = no_price(settings, model, "the runner")
        if why is not None:
            return why
    if settings.judge_runner is not None:
        return no_price(settings, settings.judge_model or settings.model, "the judge")
    return None


def unmeasured(
    settings: Settings, transcript: Transcript, fingerprint: Mapping[str, Any] | None
) -> str | None:
    """Why a budget cannot count what this case spent, or ``None``."""
    runs = transcript.repeats or [transcript]
    if settings.max_tokens_total is not None:
        for run in runs:
            if run.turns and not run.logliks and not run.usage.counted:
                return (
                    "--llmeval-max-tokens-total cannot be kept: the runner reported no token "
                    "usage for this case's model calls, so the budget cannot be measured; use "
                    "a runner that reports usage, or drop the option"
                )
    if settings.max_cost is None:
        return None
    if any(run.usage.counted for run in runs):
        why = no_price(settings, model_named(fingerprint) or settings.model, "the runner")
        if why is not None:
            return why
    if any(run.judgement is not None and run.judgement.usage.counted for run in runs):
        why = no_price(settings, settings.judge_model or settings.model, "the judge")
        if why is not None:
            return why
    if any(run.embedding_usage.counted for run in runs):
        model = settings.embedding_model or settings.model
        return no_price(settings, model, "the embeddings endpoint")
    return None


class BudgetMeasure:
    """Under a budget: each case's spend must be measurable (see the module)."""

    def __init__(self, settings: Settings, budget: Budget) -> None:
        self.settings = settings
        self.budget = budget

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        yield  # the item's setup: its transcript is there now
        if not isinstance(item, EvalItem) or item.transcript is None:
            return
        agent = item.funcargs.get("llmeval_agent")
        fingerprint = item.state.results.fingerprint_of(agent)[0] if agent is not None else None
        why = unmeasured(self.settings, item.transcript, fingerprint)
        if why is None:
            return
        budget = self.budget
        if budget.reason is None:  # the cases after it would spend what cannot be counted
            option = why.split(" ", 1)[0]
            budget.reason = BudgetSkip("a spend that cannot be measured", option)
            budget.dispatcher.stop_ahead()
        raise ConfigError(why)
