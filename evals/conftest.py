"""The example suites' own model: how a user plugs a model or agent into pytest-llmeval.

``pytest evals/`` replays the cassettes in ``fixtures/cassettes``. Those cassettes are real
recordings of the model below, made by running the suites against it::

    rm -rf fixtures/cassettes
    pytest evals/ --llmeval-runner example-router --llmeval-record new

``ExampleRouter`` is a deliberately tiny, deterministic tool-calling "model": it routes a
request to a tool by reading the message, then writes its answer from the tool's result. When
the system prompt asks for a ``FINAL ANSWER:`` line (the GAIA suite's does), the answer ends
with ``FINAL ANSWER: <value>`` (the calculator's value, the temperature, ...). A message with
an ``Attached file: <path>`` line makes it read that file with the ``read_file`` tool. It also
scores text (``loglikelihood``, for When2Call's multiple choice) as a copy model: a word of the
continuation that appears in the context is likely, any other word is not. Swap
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

from pytest_llmeval import (
    Completion,
    GenerateRequest,
    Loglik,
    LoglikRequest,
    RunnerRegistry,
    ToolCall,
    Usage,
)

Route = tuple[str, "re.Pattern[str]", Callable[["re.Match[str]"], dict[str, Any]]]

CITY = r"([A-Z][a-z]+(?: [A-Z][a-z]+)*)"
ROUTES: list[Route] = [
    (
        "read_file",
        re.compile(r"^Attached file: (\S+)$", re.MULTILINE),
        lambda m: {"path": m[1]},
    ),
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
WORD = re.compile(r"\w+|[^\w\s]")
SEEN, UNSEEN = -0.5, -4.0
"""Log-probabilities of the copy model: a word (or punctuation mark) seen in the context,
and one that is not."""
FINAL_ANSWER = "FINAL ANSWER:"
INTEGRATION = "Integration:"


class ExampleRouter:
    """A Runner: ``generate(request) -> Completion``; the plugin's agent loop does the rest."""

    name = "example-router"

    def fingerprint(self) -> dict[str, Any]:
        return {"type": "example-router", "version": "1"}

    async def aclose(self) -> None:
        """Nothing to release."""

    async def loglikelihood(self, requests: list[LoglikRequest]) -> list[Loglik]:
        """Score each continuation, word by word, against the words of its context."""
        out = []
        for request in requests:
            seen = {w.lower() for w in WORD.findall(request.context)}
            words = [w.lower() for w in WORD.findall(request.continuation)]
            total = sum(SEEN if w in seen else UNSEEN for w in words)
            out.append(
                Loglik(
                    logprob_sum=total,
                    token_count=len(words),
                    is_greedy=all(w in seen for w in words),
                    char_length=len(request.continuation),
                    byte_length=len(request.continuation.encode("utf-8")),
                )
            )
        return out

    async def generate(self, request: GenerateRequest) -> Completion:
        user = next(m.content or "" for m in reversed(request.messages) if m.role == "user")
        prompt_tokens = len(user.split())
        usage = Usage(
            prompt_tokens=prompt_tokens, completion_tokens=1, total_tokens=prompt_tokens + 1
        )
        if _wants_integration(request):
            return _integrate(user, request, usage)
        if request.messages[-1].role == "tool":
            text = _answer(user, request)
            value = _final_value(request)
            if value is not None and _wants_final_answer(request):
                text += f"\n{FINAL_ANSWER} {value}"
            return Completion(text=text, finish_reason="stop", usage=usage)
        offered = {tool.name for tool in request.tools}
        for tool, pattern, arguments in ROUTES:
            match = pattern.search(user)
            if tool in offered and match:
                call = ToolCall(id="call_0", name=tool, arguments=arguments(match))
                return Completion(tool_calls=[call], finish_reason="tool_calls", usage=usage)
        return Completion(text=FALLBACK, finish_reason="stop", usage=usage)


def _wants_integration(request: GenerateRequest) -> bool:
    return any(m.role == "system" and INTEGRATION in (m.content or "") for m in request.messages)


def _integrate(user: str, request: GenerateRequest, usage: Usage) -> Completion:
    """The tool-integration example's behaviour: call every tool the message asks for, in
    route order, one per turn; retry a file that moved; then state each result's summary on
    an ``Integration:`` line (or say that nothing was found)."""
    done = [
        (call, json.loads(m.content or "null"))
        for i, m in enumerate(request.messages)
        if m.role == "tool"
        for call in [_call_before(request, i)]
    ]
    last = done[-1] if done else None
    if last is not None and isinstance(last[1], dict) and last[1].get("moved_to"):
        moved = {"path": last[1]["moved_to"]}
        call = ToolCall(id=f"call_{len(done)}", name=last[0].name, arguments=moved)
        return Completion(tool_calls=[call], finish_reason="tool_calls", usage=usage)
    offered = {tool.name for tool in request.tools}
    called = {call.name for call, _ in done}
    for tool, pattern, arguments in ROUTES:
        match = pattern.search(user)
        if tool in offered and tool not in called and match:
            call = ToolCall(id=f"call_{len(done)}", name=tool, arguments=arguments(match))
            return Completion(tool_calls=[call], finish_reason="tool_calls", usage=usage)
    if not done:
        return Completion(text=FALLBACK, finish_reason="stop", usage=usage)
    lines = []
    for call, result in done:
        if isinstance(result, dict) and result.get("ok") is not False and "error" not in result:
            lines.append(f"{INTEGRATION} {result.get('summary', _topic(call.arguments))}.")
    if not lines:
        return Completion(
            text=f"I couldn't find any results for {_topic(done[0][0].arguments)}.",
            finish_reason="stop",
            usage=usage,
        )
    return Completion(text="Here is what I found.\n" + "\n".join(lines), usage=usage)


def _call_before(request: GenerateRequest, index: int) -> ToolCall:
    """The call a tool message at ``index`` answers."""
    message = request.messages[index]
    for m in reversed(request.messages[:index]):
        for call in m.tool_calls:
            if call.id == message.tool_call_id or not message.tool_call_id:
                return call
    raise LookupError("a tool message without its call")


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
    if call.name == "read_file":
        return f"The file {args['path']} reads: {result['content'].strip()}"
    return f"{args['expression']} = {result['value']}"


def _wants_final_answer(request: GenerateRequest) -> bool:
    return any(m.role == "system" and FINAL_ANSWER in (m.content or "") for m in request.messages)


def _final_value(request: GenerateRequest) -> str | None:
    """The bare answer for a ``FINAL ANSWER:`` line, or None when the tool gave no result."""
    call = next(m.tool_calls[-1] for m in reversed(request.messages) if m.tool_calls)
    result = json.loads(request.messages[-1].content or "null")
    if not isinstance(result, dict) or "error" in result:
        return None
    if call.name == "get_weather":
        return str(result["temp_c"])
    if call.name == "get_forecast":
        return ", ".join(str(day["high_c"]) for day in result["days"])
    if call.name == "web.search":
        return str(result["hits"][0]["title"])
    if call.name == "read_file":
        return str(result["content"]).strip()
    return str(result["value"])


def _subject(args: dict[str, Any]) -> str:
    return str(args.get("city") or args.get("q") or args.get("expression") or "that")


def _topic(args: dict[str, Any]) -> str:
    return _subject(args) if _subject(args) != "that" else str(args.get("path") or "that")


class ExampleJudge:
    """A judge for the examples' rubrics, deterministic and offline: ``correctness`` is the
    share of the reference answer's words the answer has, any other criterion is met by an
    answer that is not the router's fallback. ``pytest evals/ --llmeval-judge-runner
    example-judge`` scores the rubrics with it; a real judge is any runner
    (``--llmeval-judge-runner openai --llmeval-judge-model ...``)."""

    name = "example-judge"

    def fingerprint(self) -> dict[str, Any]:
        return {"type": "example-judge", "version": "1"}

    async def aclose(self) -> None:
        """Nothing to release."""

    async def generate(self, request: GenerateRequest) -> Completion:
        prompt = request.messages[0].content or ""
        criteria = re.findall(r"^- (\S+) \(weight", prompt, re.MULTILINE)
        answer = _between(prompt, "<answer>", "</answer>")
        reference = _between(prompt, "<reference>", "</reference>")
        wanted = {w.lower() for w in WORD.findall(reference) if w.isalnum()}
        got = {w.lower() for w in WORD.findall(answer)}
        overlap = round(len(wanted & got) / len(wanted), 2) if wanted else 1.0
        useful = 0.2 if not answer or answer == FALLBACK else 1.0
        scores = {c: overlap if c == "correctness" else useful for c in criteria}
        reason = f"{int(overlap * 100)}% of the reference's words" if wanted else "no reference"
        return Completion(text=json.dumps({"scores": scores, "reason": reason}))


def _between(text: str, start: str, end: str) -> str:
    _, _, rest = text.partition(start)
    return rest.partition(end)[0].strip() if rest else ""


def pytest_llmeval_register_runners(registry: RunnerRegistry) -> None:
    registry.register("example-router", lambda settings: ExampleRouter())
    registry.register("example-judge", lambda settings: ExampleJudge())
