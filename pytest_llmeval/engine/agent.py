"""Agents: what turns a case into a transcript.

* :class:`LoopAgent` drives a model :class:`Runner`: model call, then the tool calls served by the
  broker, then the next model call, until the model answers without calling a tool or the
  case's ``max_turns`` is reached. In routing-only mode the tool calls are recorded, never
  executed, and the loop ends after the first model call.
* :class:`EndpointAgent` hands the user message to an :class:`AgentEndpoint` that runs its own
  tools and reports them.
* A case with :attr:`~pytest_llmeval.core.models.EvalCase.choices` (multiple choice by
  log-likelihood) is not generated at all: :func:`score_choices` asks the runner's
  ``loglikelihood`` for every option, in one call, so a runner can share the context's work.
* :func:`run_agent` runs any agent a user plugs in (sync or async, a ``run`` method or a plain
  callable) and turns what it returns into a :class:`Transcript`.
"""

from __future__ import annotations

import inspect
import json
import math
import time
from typing import Any, Literal, NoReturn, Protocol

from pytest_llmeval.core.case_context import emit
from pytest_llmeval.core.clip import clip
from pytest_llmeval.core.errors import RunnerError
from pytest_llmeval.core.models import (
    EvalCase,
    Loglik,
    LoglikRequest,
    Message,
    ToolCallRecord,
    Transcript,
    Usage,
)
from pytest_llmeval.engine.agent_threads import AgentThreads
from pytest_llmeval.engine.bfcl_agent import run_bfcl
from pytest_llmeval.engine.judge_model import AUDIT_REPLY_CHARS
from pytest_llmeval.inputs.loading import a_json_type
from pytest_llmeval.runners.base import (
    AgentEndpoint,
    AgentResponse,
    GenerateRequest,
    NoLoglikelihood,
    Runner,
)
from pytest_llmeval.scoring.classification import choice_digit
from pytest_llmeval.tools.broker import ToolBroker


class Agent(Protocol):
    """Anything that runs a case; ``run`` may be sync or async."""

    def run(self, case: EvalCase, broker: ToolBroker) -> Any: ...


class LoopAgent:
    """The model <-> broker loop: call the model, serve its tool calls through the broker, repeat
    until it answers without one."""

    def __init__(self, runner: Runner):
        self.runner = runner

    def fingerprint(self) -> dict[str, Any]:
        return self.runner.fingerprint()

    @property
    def in_process(self) -> bool:
        """Whether its runner says it answers in this process, with no I/O a background loop
        could overlap (``in_process = True``): its cases then run on pytest's thread
        (:class:`~pytest_llmeval.engine.dispatch.Dispatcher`)."""
        return getattr(self.runner, "in_process", False) is True

    async def run(self, case: EvalCase, broker: ToolBroker) -> Transcript:
        if case.choices is not None:
            return await score_choices(self.runner, case)
        if case.bfcl is not None:  # the official BFCL conversation, not this loop
            return await run_bfcl(self.runner, case)
        start = time.perf_counter()
        messages = list(case.messages)
        records: list[ToolCallRecord] = []
        usage = Usage()
        turns = 0
        response = ""
        stop: Literal["final", "max_turns", "routing"] = "final"
        while True:
            completion = await self.runner.generate(
                GenerateRequest(messages=messages, tools=case.tools)
            )
            turns += 1
            usage = usage + completion.usage
            response = completion.text
            emit(
                "model_call",
                turn=turns,
                finish_reason=completion.finish_reason,
                tool_calls=[call.name for call in completion.tool_calls],
                usage=completion.usage.model_dump(),
            )
            messages.append(
                Message(
                    role="assistant",
                    content=completion.text or None,
                    tool_calls=completion.tool_calls,
                )
            )
            if not completion.tool_calls:
                stop = "final"
                break
            for call in completion.tool_calls:
                if call.arguments_error is not None and case.tool_mode != "routing":
                    record = ToolCallRecord(
                        name=call.name,
                        success=False,
                        source="miss",
                        arguments_error=call.arguments_error,
                        result={"error": "invalid_arguments", "raw": call.arguments_error},
                    )
                else:
                    record = broker.call(call.name, call.arguments, case.stubs, case.tool_mode)
                    if call.arguments_error is not None:
                        record = record.model_copy(update={"arguments_error": call.arguments_error})
                records.append(record)
                emit(
                    "tool_call",
                    name=record.name,
                    params=record.params,
                    source=record.source,
                    success=record.success,
                )
                if case.tool_mode != "routing":
                    messages.append(
                        Message(
                            role="tool",
                            tool_call_id=call.id or None,
                            name=call.name,
                            content=json.dumps(record.result, ensure_ascii=False, sort_keys=True),
                        )
                    )
            if case.tool_mode == "routing":
                stop = "routing"
                break
            if turns >= case.max_turns:
                stop = "max_turns"
                break
        return Transcript(
            messages=messages,
            tool_calls=records,
            response=response,
            turns=turns,
            stop_reason=stop,
            usage=usage,
            duration_ms=(time.perf_counter() - start) * 1000,
            fixture_hits=sum(1 for r in records if r.source in ("stub", "fixture")),
            fixture_misses=sum(1 for r in records if r.source == "miss"),
        )


class EndpointAgent:
    """Sends the case's user message to an agent endpoint (``http-agent``)."""

    def __init__(self, endpoint: AgentEndpoint):
        self.endpoint = endpoint

    def fingerprint(self) -> dict[str, Any]:
        return self.endpoint.fingerprint()

    async def run(self, case: EvalCase, broker: ToolBroker) -> Transcript:
        if case.choices is not None:
            return await score_choices(self.endpoint, case)
        if case.bfcl is not None:
            raise RunnerError(
                f"runner {self.endpoint.name!r} is a whole agent behind one message; a BFCL "
                "item needs a model runner (openai, hf, replay of one) that takes the "
                "official messages and tools",
                kind="agent",
            )
        start = time.perf_counter()
        reply = await self.endpoint.send(case.user_message)
        wall_ms = (time.perf_counter() - start) * 1000
        return to_transcript(reply, case, wall_ms)


_LENGTHS = ("token_count", "char_length", "byte_length")
"""The lengths a log-likelihood is normalised by: none may be negative."""


async def score_choices(runner: Any, case: EvalCase) -> Transcript:
    """Score a multiple-choice case: the log-likelihood of each option given the context."""
    assert case.choices is not None
    score = getattr(runner, "loglikelihood", None)
    if not callable(score):
        raise RunnerError(
            f"runner {getattr(runner, 'name', type(runner).__name__)!r} cannot score "
            "log-likelihoods, which this case needs (When2Call protocol mcq-loglik); use a "
            "runner that can (hf, openai with a /completions endpoint, replay of one) or "
            "protocol: mcq-string",
            kind="agent",
        )
    start = time.perf_counter()
    task = case.choices
    requests = [LoglikRequest(context=task.context, continuation=c) for c in task.continuations]
    try:
        logliks = await score(requests)
    except NoLoglikelihood as exc:  # known at the start: no scores, the fallback asks in chat
        if task.fallback is None:
            raise
        logliks = [_no_score(r.continuation) for r in requests]
        return await _ask_fallback(
            runner, case, logliks, list(range(len(logliks))), start, str(exc)
        )
    if len(logliks) != len(requests):
        raise RunnerError(
            f"loglikelihood answered {len(logliks)} scores for {len(requests)} options",
            kind="protocol",
        )
    bad = [i for i, x in enumerate(logliks) if not math.isfinite(x.logprob_sum)]
    if bad and task.fallback is not None:  # the user's choice: asked in chat, audited
        return await _ask_fallback(runner, case, list(logliks), bad, start)
    if bad:  # an error for the case, never a silent pick among the rest
        values = ", ".join(f"option {i}: {logliks[i].logprob_sum}" for i in bad)
        raise RunnerError(f"non-finite log-likelihood ({values})", kind="protocol")
    # a probability is at most 1, so a log-likelihood is at most 0: above is no score at all
    # (a sign slip in the runner), and a negative token count no length to normalise by
    impossible = [f"option {i}: logprob_sum {x.logprob_sum}" for i, x in enumerate(logliks)
                  if x.logprob_sum > 0]  # fmt: skip
    impossible += [f"option {i}: {name} {getattr(x, name)}" for i, x in enumerate(logliks)
                   for name in _LENGTHS if getattr(x, name) < 0]  # fmt: skip
    if impossible:
        raise RunnerError(
            f"impossible log-likelihood ({', '.join(impossible)}): a log-probability sum is "
            "at most 0 and a length 0 or more",
            kind="protocol",
        )
    emit("loglikelihood", options=len(requests))
    return Transcript(
        messages=list(case.messages),
        logliks=list(logliks),
        turns=1,
        stop_reason="final",
        duration_ms=(time.perf_counter() - start) * 1000,
    )


def _no_score(continuation: str) -> Loglik:
    """The score of an option the endpoint cannot score (NaN: no score, the fallback's cue)."""
    return Loglik(
        logprob_sum=math.nan,
        token_count=0,
        is_greedy=None,
        char_length=len(continuation),
        byte_length=len(continuation.encode("utf-8")),
    )


async def _ask_fallback(
    runner: Any,
    case: EvalCase,
    logliks: list[Any],
    bad: list[int],
    start: float,
    why: str | None = None,
) -> Transcript:
    """The options asked for by number through the runner's chat endpoint (a manifest's
    ``loglik_fallback``), for scores that are not all finite; an ``audit`` event records the
    scores, the reply and the option it picked (``None``: no digit, unparsed)."""
    assert case.choices is not None and case.choices.fallback is not None
    messages = list(case.choices.fallback)
    generate = getattr(runner, "generate", None)
    if not callable(generate):
        raise RunnerError(
            f"runner {getattr(runner, 'name', type(runner).__name__)!r} has no chat endpoint "
            "for the log-likelihood fallback",
            kind="agent",
        )
    completion = await generate(GenerateRequest(messages=messages))
    emit(
        "model_call",
        turn=1,
        finish_reason=completion.finish_reason,
        tool_calls=[call.name for call in completion.tool_calls],
        usage=completion.usage.model_dump(),
    )
    picked = choice_digit(completion.text, len(case.choices.continuations))
    emit(
        "audit",
        stage="loglik_fallback",
        scores=[_shown_score(x.logprob_sum) for x in logliks],
        non_finite=bad,
        replies=[clip(completion.text, AUDIT_REPLY_CHARS)],
        picked=picked,
        problem=(why or f"non-finite log-likelihood for option(s) {', '.join(map(str, bad))}")
        + "; asked in chat instead (loglik_fallback)",
    )
    return Transcript(
        messages=[*messages, Message(role="assistant", content=completion.text)],
        logliks=logliks,
        response=completion.text,
        turns=1,
        stop_reason="final",
        usage=completion.usage,
        duration_ms=(time.perf_counter() - start) * 1000,
    )


def _shown_score(value: float) -> float | str:
    """A log-likelihood as JSON can hold it (``"-inf"``, ``"nan"`` for the others)."""
    return value if math.isfinite(value) else str(value)


def default_agent(runner: Runner | AgentEndpoint) -> LoopAgent | EndpointAgent:
    """The agent for a runner: the loop for a model, pass-through for an agent endpoint."""
    if isinstance(runner, Runner):
        return LoopAgent(runner)
    return EndpointAgent(runner)


async def run_agent(
    agent: Any,
    case: EvalCase,
    broker: ToolBroker,
    threads: AgentThreads | None = None,
    label: str | None = None,
) -> Transcript:
    """Run a user's or built-in agent on one case; faults are raised, not swallowed. A
    synchronous agent runs on one of ``threads`` (daemon threads, named by the case), so one
    blocked past its timeout never keeps the process alive (``label``, the case's node id by
    default its id, names it)."""
    call = getattr(agent, "run", agent)
    if not callable(call):
        raise TypeError(
            f"llmeval_agent must have a run(case, broker) method or be callable, got {agent!r}"
        )
    start = time.perf_counter()
    if inspect.iscoroutinefunction(call):
        result = await call(case, broker)
    else:
        pool = threads if threads is not None else AgentThreads()
        result = await pool.run(label or case.case_id, call, case, broker)
        if inspect.isawaitable(result):
            result = await result
    return to_transcript(result, case, (time.perf_counter() - start) * 1000)


def to_transcript(result: Any, case: EvalCase, wall_ms: float) -> Transcript:
    """Accept a Transcript, an AgentResponse, a tool-forge style dict, or a plain string;
    a reported duration that is not a finite number is the agent's error."""
    transcript = _as_transcript(result, case, wall_ms)
    if not transcript.tool_calls and math.isfinite(transcript.duration_ms):
        return transcript  # the common case, checked without building the list below
    timings = [("durationMs", transcript.duration_ms)]
    timings += [(f"toolCalls/{k}/durationMs", c.duration_ms)
                for k, c in enumerate(transcript.tool_calls)]  # fmt: skip
    for where, value in timings:
        if not math.isfinite(value):  # a latency budget is no check against NaN
            raise RunnerError(
                f"the agent reported {where} = {value!r}; expected a finite number of ms",
                kind="agent",
            )
    return transcript


def _as_transcript(result: Any, case: EvalCase, wall_ms: float) -> Transcript:
    if isinstance(result, Transcript):
        if not result.duration_ms:
            return result.model_copy(update={"duration_ms": wall_ms})
        return result
    if isinstance(result, str):
        result = AgentResponse(response=result)
    elif isinstance(result, dict):
        result = _response_from_dict(result)
    if not isinstance(result, AgentResponse):
        raise RunnerError(
            "the agent returned "
            f"{type(result).__name__}; expected a Transcript, an AgentResponse, a dict "
            "{response, toolCalls, durationMs} or a string",
            kind="agent",
        )
    messages = [*case.messages, Message(role="assistant", content=result.response)]
    return Transcript(
        messages=messages,
        tool_calls=result.tool_calls,
        response=result.response,
        turns=1,
        stop_reason="endpoint",
        duration_ms=result.duration_ms if result.duration_ms is not None else wall_ms,
    )


def _response_from_dict(data: dict[str, Any]) -> AgentResponse:
    """A tool-forge style reply (``{response, toolCalls, durationMs}``, or the snake-case
    keys), held to the endpoint contract: a reply that breaks it is the agent's error, never a
    scored miss (``{"foo": 1}`` is no empty answer, ``null`` no "None", ``"false"`` no
    success)."""
    text = data.get("response")
    if not isinstance(text, str):
        got = "nothing (missing)" if "response" not in data else a_json_type(text)
        _bad_reply(f"field 'response': expected a string, got {got}")
    key = "toolCalls" if "toolCalls" in data else "tool_calls"
    calls = data.get(key)
    if calls is None:
        calls = []
    if not isinstance(calls, list):
        _bad_reply(f"field {key!r}: expected an array, got {a_json_type(calls)}")
    records = [_tool_call(f"{key}[{i}]", raw) for i, raw in enumerate(calls)]
    duration = data.get("durationMs", data.get("duration_ms"))
    return AgentResponse(
        response=text,
        tool_calls=records,
        duration_ms=None if duration is None else _number(duration, "durationMs"),
    )


def _tool_call(where: str, raw: Any) -> ToolCallRecord:
    """One reported tool call: a non-empty string ``name``, a boolean ``success`` (true when
    missing), an object of ``params`` (or ``arguments``), a number ``durationMs``."""
    if not isinstance(raw, dict):
        _bad_reply(f"field '{where}': expected an object, got {a_json_type(raw)}")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        shown = repr(name) if isinstance(name, str) else a_json_type(name)
        _bad_reply(f"field '{where}.name': expected a non-empty string, got {shown}")
    success = raw.get("success", True)
    if success is None:
        success = True
    if not isinstance(success, bool):
        _bad_reply(f"field '{where}.success': expected a boolean, got {a_json_type(success)}")
    params = raw.get("params", raw.get("arguments"))
    if params is None:
        params = {}
    if not isinstance(params, dict):
        _bad_reply(f"field '{where}.params': expected an object, got {a_json_type(params)}")
    duration = raw.get("durationMs", raw.get("duration_ms"))
    return ToolCallRecord(
        name=name,
        params=params,
        success=success,
        duration_ms=0.0 if duration is None else _number(duration, f"{where}.durationMs"),
        source="endpoint",
    )


def _number(value: Any, where: str) -> float:
    """A reported number (its finiteness is checked with every timing, in
    :func:`to_transcript`)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        _bad_reply(f"field '{where}': expected a number, got {a_json_type(value)}")
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _bad_reply(what: str) -> NoReturn:
    raise RunnerError(
        f"the agent returned a dict that breaks the reply contract: {what}", kind="agent"
    )
