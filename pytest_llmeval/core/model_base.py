"""The base of the shared models (:mod:`pytest_llmeval.core.models`): the strict model, the
model that leaves a suite's own fields out of its dumps at their default, and token counts."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
)

__all__ = ["MAX_TOKENS", "Tokens", "Usage"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Quiet(_Model):
    """A model whose fields named in ``_QUIET`` are left out of its dumps while they hold
    their default: fields added for one suite (BFCL's verbatim messages) change no dump,
    fingerprint or recording of the others."""

    _QUIET: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _without_quiet_defaults(self, handler: SerializerFunctionWrapHandler) -> Any:
        body = handler(self)
        if isinstance(body, dict):
            for name in self._QUIET:
                if name in body and not body[name]:
                    del body[name]
        return body


MAX_TOKENS = 10**15
"""The most tokens one count may hold: a thousand times a year of a large provider's
traffic, far beyond any call, case or run, and small enough that a cost in dollars stays a
finite number (``10**400`` tokens cannot be priced: an ``OverflowError`` in the ledger)."""
Tokens = Annotated[int, Field(ge=0, le=MAX_TOKENS, strict=True)]
"""A count of tokens: a whole number, 0 or more, at most :data:`MAX_TOKENS`. A negative one
would lower what budgets count, and an absurd one could not be priced, so either is refused
where it is made (the runner's or the agent's error)."""


class Usage(_Model):
    """Token counts reported by a model."""

    prompt_tokens: Tokens = 0
    """Tokens of the request."""
    completion_tokens: Tokens = 0
    """Tokens of the answer."""
    total_tokens: Tokens = 0
    """Both, as the backend says (or their sum)."""

    @property
    def counted(self) -> int:
        """The tokens a budget counts: prompt and completion, else the total when the backend
        gives only that (a count without its split is still spent)."""
        return self.prompt_tokens + self.completion_tokens or self.total_tokens

    def __add__(self, other: Usage) -> Usage:
        # a sum of counts is a count, even past MAX_TOKENS (several absurd calls): no check
        return Usage.model_construct(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
        )
