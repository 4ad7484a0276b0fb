"""What a runner is: the small interface between the agent loop and a model.

Two kinds of backend exist:

* a :class:`Runner` is a *model*: it takes messages and tools and answers with text and tool
  calls. The agent loop drives it and serves its tool calls through the broker.
* an :class:`AgentEndpoint` is a whole *agent* (tool-forge's ``AgentEndpoint``): it takes one
  message and answers with its response and the tool calls it made itself.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import Field

from pytest_llmeval.core.errors import RunnerError
from pytest_llmeval.core.model_base import _Model, _Quiet
from pytest_llmeval.core.models import (
    Loglik,
    LoglikRequest,
    Message,
    ToolCall,
    ToolCallRecord,
    ToolSpec,
    Usage,
)


class NoLoglikelihood(RunnerError):
    """The runner knows (a probe at the start asked) that its endpoint gives no prompt
    log-probabilities, so it did not send: a case with a log-likelihood fallback asks its
    question in chat instead; any other case is a ``protocol`` error with this message."""

    def __init__(self, message: str):
        super().__init__(message, kind="protocol", retryable=False)


__all__ = [
    "AgentEndpoint",
    "AgentResponse",
    "Completion",
    "GenerateRequest",
    "Loglik",
    "LoglikRequest",
    "NoLoglikelihood",
    "Runner",
    "SupportsLoglikelihood",
]


class GenerateRequest(_Quiet):
    """One model call."""

    _QUIET = ("keep_message",)

    messages: list[Message]
    """The conversation so far."""
    tools: list[ToolSpec] = Field(default_factory=list)
    """Tools the model may call."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Per-request decoding overrides (``max_tokens``, ``tool_choice`` ...)."""
    keep_message: bool = False
    """Return the server's reply message verbatim in :attr:`Completion.message` (BFCL sends
    it back as it came and reads each call's raw argument text)."""


class Completion(_Quiet):
    """A model's answer to one :class:`GenerateRequest`."""

    _QUIET = ("message",)

    text: str = ""
    """The text the model produced (may be empty when it only calls tools)."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Tool calls, in the order the model made them."""
    finish_reason: str | None = None
    """``stop``, ``tool_calls``, ``length`` ... as the backend says."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens of this call."""
    latency_ms: float = 0.0
    """Wall time of the call."""
    message: dict[str, Any] | None = None
    """The reply message exactly as the server sent it, when the request asked for it
    (:attr:`GenerateRequest.keep_message`) and the runner has one."""


class AgentResponse(_Model):
    """What an agent endpoint answers (tool-forge ``AgentResponse``)."""

    response: str
    """The agent's text response."""
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    """Tools the agent called, in call order."""
    duration_ms: float | None = None
    """The endpoint's own wall-clock figure, when it gives one."""


@runtime_checkable
class Runner(Protocol):
    """A model backend. Implementations: ``echo``, ``replay``, ``openai``, later ``hf``."""

    name: str

    def fingerprint(self) -> dict[str, Any]:
        """What decides this runner's answers: type, model, decoding params; never a secret."""
        ...

    async def generate(self, request: GenerateRequest) -> Completion:
        """Answer one request. Infrastructure faults raise :class:`RunnerError`."""
        ...

    async def aclose(self) -> None:
        """Release connections and other resources."""
        ...

    # Optional, not part of the protocol check: a runner that can score text also has
    #
    #     async def loglikelihood(self, requests: list[LoglikRequest]) -> list[Loglik]
    #
    # (one answer per request, in order; faults raise RunnerError). See SupportsLoglikelihood.


@runtime_checkable
class SupportsLoglikelihood(Protocol):
    """A runner that can score continuations (``openai`` via ``/completions``, ``hf``)."""

    async def loglikelihood(self, requests: list[LoglikRequest]) -> list[Loglik]:
        """One :class:`Loglik` per request, in order; faults raise :class:`RunnerError`."""
        ...


@runtime_checkable
class AgentEndpoint(Protocol):
    """A whole agent behind one call: the ``http-agent`` runner, or a user's SDK agent."""

    name: str

    def fingerprint(self) -> dict[str, Any]: ...

    async def send(self, message: str) -> AgentResponse:
        """Send one user message; faults raise :class:`RunnerError`."""
        ...

    async def aclose(self) -> None: ...
