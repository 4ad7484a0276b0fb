"""A scripted model: a deterministic test double of a tool-calling LLM.

Each :class:`Rule` says: when the user's message contains ``keyword`` (case-insensitive), call
``tool`` with ``arguments`` (or answer ``answer`` straight away). After a tool result comes
back the model answers with ``answer`` formatted with ``result`` (the tool's result) and
``args`` (the arguments it sent). Without a matching rule it echoes the user's message.

It also counts calls and the peak number of calls in flight, for concurrency tests::

    def pytest_llmeval_register_runners(registry):
        registry.register("scripted", lambda settings: ScriptedModel([
            Rule("weather", tool="get_weather", arguments={"city": "Paris"},
                 answer="It is {result[temp_c]}C in {args[city]}."),
        ]))
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from pytest_llmeval.core.errors import RunnerError
from pytest_llmeval.core.fingerprint import fingerprint
from pytest_llmeval.core.models import ToolCall, Usage
from pytest_llmeval.runners.base import Completion, GenerateRequest

__all__ = [
    "Rule",
    "ScriptedModel",
]


@dataclass(frozen=True)
class Rule:
    """What the scripted model does for a message containing ``keyword``."""

    keyword: str
    tool: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    answer: str = ""
    """Final text; after a tool call, formatted with ``result`` and ``args``."""
    raw_arguments: str | None = None
    """Send these (invalid) argument text instead of ``arguments``."""


class ScriptedModel:
    """A :class:`~pytest_llmeval.runners.base.Runner` that follows :class:`Rule` s."""

    name = "scripted"

    def __init__(
        self,
        rules: list[Rule] | None = None,
        *,
        delay_s: float = 0.0,
        fail_with: str | None = None,
        label: str = "scripted",
    ):
        self.rules = list(rules or [])
        self.delay_s = delay_s
        self.fail_with = fail_with
        self.label = label
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()

    def fingerprint(self) -> dict[str, Any]:
        rules = [[r.keyword, r.tool, r.arguments, r.answer, r.raw_arguments] for r in self.rules]
        return {"type": "scripted", "label": self.label, "rules": fingerprint(rules)}

    async def aclose(self) -> None:
        """Nothing to release."""

    async def generate(self, request: GenerateRequest) -> Completion:
        with self._lock:
            self.calls += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            return self._answer(request)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _answer(self, request: GenerateRequest) -> Completion:
        user = next((m.content or "" for m in reversed(request.messages) if m.role == "user"), "")
        if self.fail_with and self.fail_with in user:
            raise RunnerError(f"scripted failure for {user!r}", kind="http", retryable=True)
        rule = next((r for r in self.rules if r.keyword.lower() in user.lower()), None)
        last = request.messages[-1]
        prompt_tokens = len(user.split())
        usage = Usage(
            prompt_tokens=prompt_tokens, completion_tokens=1, total_tokens=prompt_tokens + 1
        )
        if rule is None:
            return Completion(text=user, finish_reason="stop", usage=usage)
        if last.role == "tool" or rule.tool is None:
            result = _last_tool_result(request)
            args = _last_tool_args(request)
            text = _format(rule, result, args)
            return Completion(text=text, finish_reason="stop", usage=usage)
        call = ToolCall(
            id=f"call_{sum(1 for m in request.messages if m.role == 'assistant')}",
            name=rule.tool,
            arguments={} if rule.raw_arguments is not None else dict(rule.arguments),
            arguments_error=rule.raw_arguments,
        )
        return Completion(tool_calls=[call], finish_reason="tool_calls", usage=usage)


def _last_tool_result(request: GenerateRequest) -> Any:
    for message in reversed(request.messages):
        if message.role == "tool":
            try:
                return json.loads(message.content or "null")
            except ValueError:
                return message.content
    return None


def _last_tool_args(request: GenerateRequest) -> dict[str, Any]:
    for message in reversed(request.messages):
        if message.role == "assistant" and message.tool_calls:
            return message.tool_calls[-1].arguments
    return {}


def _format(rule: Rule, result: Any, args: dict[str, Any]) -> str:
    if rule.tool is None:
        return rule.answer
    try:
        return rule.answer.format(result=result, args=args)
    except (KeyError, IndexError, TypeError):
        return f"The tool failed: {json.dumps(result, sort_keys=True)}"
