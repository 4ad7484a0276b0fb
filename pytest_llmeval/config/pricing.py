"""Token prices (``--llmeval-prices``) and what a run's tokens cost.

A price file is YAML or JSON: a mapping from model name to its prices in US dollars per
million tokens, ``input`` for prompt tokens and ``output`` for completion tokens::

    gpt-4o-mini: {input: 0.15, output: 0.60}
    my-local-model: {input: 0, output: 0}
    "*": {input: 1.0, output: 3.0}    # any model not listed

A case's model is the ``model`` of the runner that answered it (its fingerprint), else
``--llmeval-model``. Tokens of a model with no price (and no ``*`` entry) cost nothing and are
counted apart, so a run can say how many tokens it could not price (under ``--llmeval-max-cost``
such a model is an error instead: :mod:`pytest_llmeval.plugin.budget_measure`). A ``usage``
that gives only ``total_tokens`` is counted as that many tokens, priced at the higher of the
model's two prices, so a budget never counts less than was spent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from pytest_llmeval.core.errors import ConfigError
from pytest_llmeval.inputs import safe_yaml
from pytest_llmeval.inputs.safe_read import SupportFileError, read_json_or_yaml

__all__ = [
    "ANY_MODEL",
    "Price",
    "Spend",
    "load_prices",
    "price_of",
    "service_usage",
    "total_only",
    "usage_tokens",
]

ANY_MODEL = "*"
"""The price-table entry for every model not listed by name."""

PER_TOKENS = 1_000_000
"""Prices are per this many tokens."""


class Price(BaseModel):
    """One model's prices, in US dollars per million tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: float
    """Per million prompt tokens."""
    output: float
    """Per million completion tokens."""

    @field_validator("input", "output")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value) or value < 0:
            raise ValueError("a price is a number of dollars, 0 or more")
        return value

    def cost(self, prompt_tokens: int, completion_tokens: int, unsplit_tokens: int = 0) -> float:
        """What these tokens cost; ``unsplit_tokens`` (a total without its split) at the
        higher price."""
        top = max(self.input, self.output)
        return (
            prompt_tokens * self.input + completion_tokens * self.output + unsplit_tokens * top
        ) / PER_TOKENS


def load_prices(path: Path) -> dict[str, Price]:
    """The price table in ``path`` (``.json``: JSON, else YAML); ``ConfigError`` naming the
    file and the entry when it cannot be used."""
    try:
        data: Any = read_json_or_yaml(path, max_bytes=safe_yaml.MAX_BYTES).value
    except SupportFileError as exc:
        raise ConfigError(f"--llmeval-prices {exc}") from None
    if not isinstance(data, dict) or not data:
        raise ConfigError(
            f"--llmeval-prices {path}: expected a mapping of model name to "
            "{input: USD, output: USD} per million tokens"
        )
    table: dict[str, Price] = {}
    for model, entry in data.items():
        try:
            table[str(model)] = Price.model_validate(entry)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in (model, *error["loc"]))
            raise ConfigError(
                f"--llmeval-prices {path}: {where}: {error['msg']} "
                "(each model takes {input: USD, output: USD} per million tokens)"
            ) from None
    return dict(sorted(table.items()))


def price_of(table: Mapping[str, Price], model: str | None) -> Price | None:
    """The model's price: its own entry, else the ``*`` entry, else ``None``."""
    if model is not None and model in table:
        return table[model]
    return table.get(ANY_MODEL)


def service_usage(details: Any, service: str) -> Mapping[str, Any] | None:
    """A service's tokens on a case result (``details.judge.usage``,
    ``details.embedding.usage``), or ``None`` when the case did not use it."""
    entry = details.get(service) if isinstance(details, Mapping) else None
    usage = entry.get("usage") if isinstance(entry, Mapping) else None
    return usage if isinstance(usage, Mapping) else None


def usage_tokens(usage: Mapping[str, Any] | None) -> tuple[int, int]:
    """``(prompt, completion)`` tokens of a result's ``usage`` dump."""
    usage = usage or {}
    return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)


def total_only(usage: Mapping[str, Any] | None, prompt: int, completion: int) -> int:
    """The ``total_tokens`` of a ``usage`` dump that gives no split (``prompt`` and
    ``completion``, from :func:`usage_tokens`, are 0), else 0: tokens spent all the same."""
    if prompt or completion or not usage:
        return 0
    return int(usage.get("total_tokens") or 0)


@dataclass
class Spend:
    """Tokens and cost of the results seen so far (one process's, or the session's)."""

    prices: Mapping[str, Price] | None
    """The price table; ``None``: no cost is worked out."""
    default_model: str | None = None
    """The model of a result whose runner names none (``--llmeval-model``)."""
    judge_model: str | None = None
    """The model the judge's tokens are priced as (``--llmeval-judge-model``, else the
    default model)."""
    embedding_model: str | None = None
    """The model the embeddings endpoint's tokens are priced as (``--llmeval-embedding-model``)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    unsplit_tokens: int = 0
    """Tokens of results whose ``usage`` gave only a total (no prompt/completion split)."""
    cost_usd: float = 0.0
    unpriced: set[str] = field(default_factory=set)
    """Models that used tokens but have no price."""

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens + self.unsplit_tokens

    def add_case(self, data: Mapping[str, Any], runner: Mapping[str, Any] | None) -> None:
        """Count everything one case result (a dump of one) cost: the model's tokens over
        every run (``usage``) at its runner's model, the judge's over every verdict
        (``details.judge.usage``) at the judge's model, and the embeddings endpoint's
        (``details.embedding.usage``) at the embedding model."""
        self.add(data.get("usage"), runner)
        details = data.get("details")
        if type(details) is dict and "judge" not in details and "embedding" not in details:
            return  # the common case: no judge, no embeddings
        judged = service_usage(details, "judge")
        if judged is not None:
            self.add(judged, {"model": self.judge_model or self.default_model})
        embedded = service_usage(details, "embedding")
        if embedded is not None:
            self.add(embedded, {"model": self.embedding_model or self.default_model})

    def add(self, usage: Mapping[str, Any] | None, runner: Mapping[str, Any] | None) -> None:
        """Count one ``usage`` dump, priced as the model of ``runner`` (a fingerprint)."""
        prompt, completion = usage_tokens(usage)
        unsplit = total_only(usage, prompt, completion)
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.unsplit_tokens += unsplit
        if self.prices is None or not prompt + completion + unsplit:
            return
        model = (runner or {}).get("model") or self.default_model
        price = price_of(self.prices, model)
        if price is None:
            self.unpriced.add(str(model))
        else:
            self.cost_usd += price.cost(prompt, completion, unsplit)
