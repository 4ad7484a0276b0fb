"""The example suites' own model: how a user plugs a model or agent into pytest-llmeval.

``pytest evals/`` replays the cassettes in ``fixtures/cassettes``. Those cassettes are real
recordings of the model below, made by running the suites against it::

    rm -rf fixtures/cassettes
    pytest evals/ --llmeval-runner example-router --llmeval-record new

``ExampleRouter`` is a deliberately tiny, deterministic tool-calling "model": it routes a
request to a tool by reading the message, then writes its answer from the tool's result. Swap
in a real one with ``--llmeval-runner openai`` (see the README), register your own runner the
way this file does, or override the ``llmeval_agent`` fixture to evaluate a whole agent::

    @pytest.fixture(scope="session")
    def llmeval_agent():
        return MyAgent()        # .run(case, broker) -> Transcript | AgentResponse | dict | str
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pytest_llmeval.models import ToolCall, Usage
from pytest_llmeval.runners.base import Completion, GenerateRequest

Route = tuple[str, "re.Pattern[str]", Callable[["re.Match[str]"], dict[str, Any]]]

CITY = r"([A-Z][a-z]+(?: [A-Z][a-z]+)*)"
ROUTES: list[Route] = [
    (
        "get_forecast",
        re.compile(rf"\bforecast\b.*?\bfor {CITY}(?:.*?(\d+) days?)?"),
        lambda m: {"city": m[1], "days": int(m[2] or 3)},
    ),
    (
        "get_weather",
        re.compile(rf"\b(?i:weather|temperature)\b.*?\b(?:in|for) {CITY}"),
        lambda m: {"city": m[1]},
    ),
    (
        "web.search",
        re.compile(r"\b(?:search|look up)\b(?: the web)?(?: for)? (.+?)[?.!]*$", re.IGNORECASE),
        lambda m: {"q": m[1]},
    ),
    (
        "calculator",
        re.compile(r"(-?\d+(?:\.\d+)?\s*[-+*/]\s*-?\d+(?:\.\d+)?)"),
        lambda m: {"expression": m[1]},
    ),
]
FALLBACK = "I can only help with weather, forecasts, web search and arithmetic."


class ExampleRouter:
    """A Runner: ``generate(request) -> Completion``; the plugin's agent loop does the rest."""

    name = "example-router"

    def fingerprint(self) -> dict[str, Any]:
        return {"type": "example-router", "version": "1"}

    async def aclose(self) -> None:
        """Nothing to release."""

    async def generate(self, request: GenerateRequest) -> Completion:
        user = next(m.content or "" for m in reversed(request.messages) if m.role == "user")
        usage = Usage(prompt_tokens=len(user.split()), completion_tokens=1, total_tokens=1)
        if request.messages[-1].role == "tool":
            text = _answer(user, request)
            return Completion(text=text, finish_reason="stop", usage=usage)
        offered = {tool.name for tool in request.tools}
        for tool, pattern, arguments in ROUTES:
            match = pattern.search(user)
            if tool in offered and match:
                call = ToolCall(id="call_0", name=tool, arguments=arguments(match))
                return Completion(tool_calls=[call], finish_reason="tool_calls", usage=usage)
        return Completion(text=FALLBACK, finish_reason="stop", usage=usage)


def _answer(user: str, request: GenerateRequest) -> str:
    call = next(m.tool_calls[-1] for m in reversed(request.messages) if m.tool_calls)
    result = json.loads(request.messages[-1].content or "null")
    args = call.arguments
    if not isinstance(result, dict) or "error" in result:
        return f"Sorry, I could not get an answer from {call.name} for {_subject(args)}."
    if "as json" in user.lower():
        return json.dumps({**args, **result}, sort_keys=True)
    if call.name == "get_weather":
        return f"It is {result['temp_c']}°C and {result['conditions']} in {args['city']}."
    if call.name == "get_forecast":
        days = ", ".join(
            f"{d['day']} {d['high_c']}/{d['low_c']}°C {d['conditions']}" for d in result["days"]
        )
        return f"Forecast for {args['city']}: {days}."
    if call.name == "web.search":
        top = result["hits"][0]
        return f"Top result: {top['title']} ({top['url']})"
    return f"{args['expression']} = {result['value']}"


def _subject(args: dict[str, Any]) -> str:
    return str(args.get("city") or args.get("q") or args.get("expression") or "that")


def pytest_llmeval_register_runners(registry: Any) -> None:
    registry.register("example-router", lambda settings: ExampleRouter())
