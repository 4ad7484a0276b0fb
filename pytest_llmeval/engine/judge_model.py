"""A judge: a model behind any runner, asked for a verdict, robustly.

The ladder, for every judged answer:

1. ask in the strictest form the endpoint takes: a runner that says it supports
   ``response_format`` (the ``openai`` runner) gets a strict JSON Schema; any other gets the
   plain instructions of the prompt, which always carry the expected form;
2. read the reply tolerantly (:func:`pytest_llmeval.scoring.judge_verdict.extract_verdict`) and
   validate it against the verdict's schema (``jsonschema``);
3. on a problem, one repair turn: the judge's own reply, the problem, "answer with valid JSON
   only";
4. if that fails too, the case is an **error** (``judge`` kind), never a silent verdict, unless
   the task has a fallback verdict (a manifest's ``judge_fallback``): it is then applied, and
   audited with the verdict it applied.

A reply that is no answer is an error at once, never a fallback: one cut off by the token limit
(``finish_reason == "length"``), withheld by a content filter (``content_filter``) or ended by
any other reason that is not a finished reply (:data:`ANSWERED`). An empty reply gets the
repair turn, but a judge whose last reply is still empty is an error too, and so is a judge
that cannot be reached. A fallback labels only a reply that was there but unreadable.

Every repair, fallback and error is an ``audit`` event of the case (``audit.jsonl`` in the
run dir): the stage, the replies, the problem. That includes a judge whose backend is down,
refuses or times out (``judge_error``, the problem naming the error), whatever the verdict's
stage.
"""

from __future__ import annotations

import json
from typing import Any

from pytest_llmeval.core.case_context import emit
from pytest_llmeval.core.clip import clip
from pytest_llmeval.core.errors import RunnerError
from pytest_llmeval.core.fingerprint import fingerprint
from pytest_llmeval.core.models import Judgement, JudgeTask, Message, Transcript, Usage
from pytest_llmeval.runners.base import GenerateRequest
from pytest_llmeval.scoring import judge_verdict as rules

AUDIT_REPLY_CHARS = 4000

ANSWERED = frozenset({"stop", "tool_calls", "function_call", "end_turn", "stop_sequence", "eos"})
"""The finish reasons of a reply the judge finished (``None``: the runner does not say). Any
other (``length``, ``content_filter``, a provider's own) means the judge gave no answer."""


class JudgeError(RunnerError):
    """The judge gave no usable verdict."""

    def __init__(self, message: str, usage: Usage | None = None):
        super().__init__(message, kind="judge", retryable=False)
        self.usage = usage or Usage()
        """The judge's tokens spent on the replies that gave no verdict (budgets count them)."""


class Judge:
    """Asks ``runner`` (any model runner) for verdicts."""

    def __init__(self, runner: Any):
        self.runner = runner
        self.strict_form = bool(getattr(runner, "supports_response_format", False))
        self._fingerprint = fingerprint(
            {"runner": dict(runner.fingerprint()), "template": rules.template_sha256()}
        )

    def fingerprint(self) -> str:
        return self._fingerprint

    async def judge(self, task: JudgeTask, transcript: Transcript) -> Judgement:
        """The verdict on ``transcript``'s answer; a :class:`JudgeError` when there is none."""
        verdict_schema = rules.schema(task)
        params: dict[str, Any] = {}
        if self.strict_form:
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "verdict", "strict": True, "schema": verdict_schema},
            }
        answer = rules.answer_of(task, transcript)
        messages = [Message(role="user", content=rules.prompt(task, answer))]
        usage = Usage()
        replies: list[str] = []
        problems: list[str] = []
        unanswered = False
        for attempt in range(2):
            completion = await self._ask(GenerateRequest(messages=messages, params=params), replies)
            usage = usage + completion.usage
            reply = completion.text or _tool_arguments(completion)
            replies.append(reply)
            no_answer = _no_answer(completion.finish_reason)
            if no_answer is not None:
                problems.append(no_answer)
                unanswered = True
                break
            unanswered = not reply.strip()
            if unanswered:
                problems.append("the judge's reply was empty")
                messages = [
                    *messages,
                    Message(role="assistant", content=reply),
                    Message(role="user", content=rules.REPAIR.format(problem=problems[-1])),
                ]
                continue
            value = rules.extract_verdict(reply)
            problem = rules.validate(value, verdict_schema)
            if problem is None:
                assert isinstance(value, dict)
                if attempt:
                    audit("repair", replies, problems[0])
                return Judgement(
                    verdict=value,
                    stage="repaired" if attempt else "ok",
                    usage=usage,
                    fingerprint=self._fingerprint,
                )
            problems.append(problem)
            messages = [
                *messages,
                Message(role="assistant", content=reply),
                Message(role="user", content=rules.REPAIR.format(problem=problem)),
            ]
        problem = problems[-1]
        if task.fallback is not None and not unanswered:
            audit("fallback", replies, problem, verdict=dict(task.fallback))
            return Judgement(
                verdict=dict(task.fallback),
                stage="fallback",
                usage=usage,
                fingerprint=self._fingerprint,
            )
        audit("judge_error", replies, problem)
        raise JudgeError(
            f"{problem} (after {len(replies)} judge replies; see audit.jsonl)", usage=usage
        )

    async def _ask(self, request: GenerateRequest, replies: list[str]) -> Any:
        """The judge runner's completion of ``request``. A runner that fails (a backend down,
        refusing or timing out after its retries, or a bug) is audited, then raised: a
        :class:`RunnerError` as it is, anything else as a :class:`JudgeError`."""
        try:
            return await self.runner.generate(request)
        except RunnerError as exc:
            audit("judge_error", replies, f"the judge's backend failed: {exc.kind} error: {exc}")
            raise
        except Exception as exc:
            problem = f"the judge's runner raised {type(exc).__name__}: {exc}"
            audit("judge_error", replies, problem)
            raise JudgeError(problem) from exc


def audit(stage: str, replies: list[str], problem: str, **more: Any) -> None:
    """Add an ``audit`` event (a line of ``audit.jsonl``) to the running case's stream;
    ``more``: what else the stage records (the verdict a fallback applied)."""
    shown = [clip(r, AUDIT_REPLY_CHARS) for r in replies]
    emit("audit", stage=stage, replies=shown, problem=problem, **more)


def _no_answer(finish_reason: str | None) -> str | None:
    """The problem of a reply ended by ``finish_reason`` when that means no answer, else
    ``None``."""
    if finish_reason is None or finish_reason in ANSWERED:
        return None
    if finish_reason == "length":
        return (
            "the reply was cut off by the token limit (finish_reason length); raise "
            "--llmeval-judge-max-tokens"
        )
    if finish_reason == "content_filter":
        return "the reply was withheld by the judge's content filter (finish_reason content_filter)"
    return f"the judge gave no answer (finish_reason {clip(finish_reason, 80)})"


def _tool_arguments(completion: Any) -> str:
    """A judge that answered with a tool call: its arguments are the verdict."""
    for call in completion.tool_calls:
        return json.dumps(call.arguments)
    return ""
