"""What a case's result shows: its input, expectation, conversation, answer and spend.

A scored case's result shows what a reader needs to understand it from the reports alone:
the case's input, what it expected and the conversation (``CaseResult.input``, ``expected``,
``transcript``), with long texts clipped and long conversations cut to their first and last
messages, so that 100,000 results still fit in the controller's memory. :class:`CaseView`
shapes those parts and :meth:`CaseView.scored` builds the whole result of a scored case;
the functions below it say what a case spent. Pure: no pytest, no files.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from pytest_llmeval.core.clip import clip
from pytest_llmeval.core.models import (
    CaseResult,
    CaseScore,
    EvalCase,
    Message,
    Outcome,
    ToolCall,
    Transcript,
    Usage,
)
from pytest_llmeval.core.redact import Redactor, mask_named
from pytest_llmeval.core.repeats import summary
from pytest_llmeval.suites.base import SuiteRegistry

__all__ = [
    "MAX_MESSAGES",
    "RESPONSE_CHARS",
    "TEXT_LIMIT",
    "CaseView",
    "every_run_errored",
    "failure_details",
    "service_spend",
    "spent_usage",
]

TEXT_LIMIT = 4000
"""Longest text a result keeps of a case's input, expectation or transcript; a longer one is
clipped with a marker giving its full length."""
MAX_MESSAGES = 40
"""Messages a result keeps of a case's input or transcript: the first and the last halves."""

RESPONSE_CHARS = 100_000
"""Longest model answer a result keeps whole (scoring saw all of it); a longer one is clipped
with a marker giving its full length."""


class CaseView:
    """Shapes what the results of one process show, with the suites' masks and the
    process's redactor (a long text is redacted before it is clipped)."""

    def __init__(self, suites: SuiteRegistry, redactor: Redactor):
        self.suites = suites
        self.redactor = redactor

    def scored(
        self, identity: dict[str, Any], case: EvalCase, transcript: Transcript, score: CaseScore
    ) -> CaseResult:
        """The result of a case that ran and was scored; ``identity`` says which case it is
        (``case_id``, ``suite``, ``file``, ``line``, ``nodeid``, ``category``,
        ``case_fingerprint``)."""
        outcome: Outcome = "skipped" if score.skipped else ("passed" if score.passed else "failed")
        return CaseResult(
            **identity,
            outcome=outcome,
            passed=score.passed and not score.skipped,
            error=score.skipped or score.failure,
            scores=score.scores,
            duration_ms=round(transcript.duration_ms, 3),
            **self.shown_case(case, transcript),
            response=self.shown_response(case.suite, transcript.response),
            tool_calls=transcript.tool_calls,
            usage=spent_usage(transcript),
            fixture_hits=transcript.fixture_hits,
            fixture_misses=transcript.fixture_misses,
            details=_with_services(score.details, transcript),
            repeats=score.repeats,
            events=transcript.events,
        )

    def shown_response(self, suite_name: str, text: str) -> str:
        """A model's answer as reports and artifacts keep it: a suite may mask what it
        considers private (the integration suite: emails, phone numbers, keys), and a long
        one is clipped to :data:`RESPONSE_CHARS` (redacted before the cut, as :meth:`_text`)."""
        mask = self._mask(suite_name)
        shown = mask(text) if mask is not None else text
        if len(shown) <= RESPONSE_CHARS:
            return shown
        return clip(self.redactor.text(shown), RESPONSE_CHARS)

    def shown_case(self, case: EvalCase, transcript: Transcript | None) -> dict[str, Any]:
        """``input``, ``expected`` and (when it ran) ``transcript`` of a result."""
        return {
            "input": self.shown_input(case),
            "expected": self.shown_expected(case),
            "transcript": self.shown_transcript(case, transcript) if transcript else None,
        }

    def shown_input(self, case: EvalCase) -> list[dict[str, Any]] | None:
        """The case's input as results keep it (see ``CaseResult.input``)."""
        shown = self._messages(case.messages)
        if case.choices is not None:
            shown.append({"role": "context", "content": self._text(case.choices.context)})
            shown += [{"role": "option", "content": self._text(text)}
                      for text in case.choices.continuations]  # fmt: skip
        return shown or None

    def shown_expected(self, case: EvalCase) -> dict[str, Any] | None:
        """What the suite checks, as results keep it (see ``CaseResult.expected``): the case's
        ``expect``, or what a suite's optional ``shown_expect(case)`` picks of it."""
        suite = self.suites.get(case.suite)
        expect = suite.shown_expect(case) if suite is not None else case.expect
        shown = {key: self._value(value) for key, value in expect.items() if not _empty(value)}
        if case.judge is not None and case.judge.criteria and "rubric" not in shown:
            shown["rubric"] = self._value(dict(case.judge.criteria))
        return shown or None

    def shown_transcript(
        self, case: EvalCase, transcript: Transcript
    ) -> list[dict[str, Any]] | None:
        """The conversation after the input, as results keep it (see
        ``CaseResult.transcript``)."""
        messages = transcript.messages
        start = len(case.messages)
        if start and messages[:start] == case.messages:
            messages = messages[start:]
        return self._messages(messages, self._mask(case.suite)) or None

    def _mask(self, suite_name: str) -> Callable[[str], str] | None:
        suite = self.suites.get(suite_name)
        return suite.mask_output if suite is not None else None

    def _messages(
        self, messages: Sequence[Message], mask: Callable[[str], str] | None = None
    ) -> list[dict[str, Any]]:
        """Shown messages, at most :data:`MAX_MESSAGES`: the first and last halves around a
        ``{"omitted": N}`` marker. ``mask`` is the suite's ``mask_output``, applied to what
        the model said as it is to ``response``."""
        if len(messages) <= MAX_MESSAGES:
            return [self._message(m, mask) for m in messages]
        head = MAX_MESSAGES // 2
        tail = MAX_MESSAGES - head
        return [
            *(self._message(m, mask) for m in messages[:head]),
            {"omitted": len(messages) - MAX_MESSAGES},
            *(self._message(m, mask) for m in messages[-tail:]),
        ]

    def _message(self, message: Message, mask: Callable[[str], str] | None) -> dict[str, Any]:
        shown: dict[str, Any] = {"role": message.role}
        if message.content is not None:
            content = message.content
            if mask is not None and message.role == "assistant":
                content = mask(content)
            shown["content"] = self._text(content)
        if message.tool_calls:
            shown["tool_calls"] = [self._call(call) for call in message.tool_calls]
        if message.tool_call_id:
            shown["tool_call_id"] = message.tool_call_id
        if message.name:
            shown["name"] = message.name
        return shown

    def _call(self, call: ToolCall) -> dict[str, Any]:
        shown: dict[str, Any] = {"name": call.name, "arguments": self._value(call.arguments)}
        if call.id:
            shown["id"] = call.id
        if call.arguments_error is not None:
            shown["arguments_error"] = self._text(call.arguments_error)
        return shown

    def _text(self, text: str) -> str:
        """``text`` clipped to :data:`TEXT_LIMIT`; a long one is redacted before the cut, so
        the cut cannot leave half a secret that the redactor no longer recognises."""
        if len(text) <= TEXT_LIMIT:
            return text  # redacted with the whole result, when it is recorded
        return clip(self.redactor.text(text), TEXT_LIMIT)

    def _value(self, value: Any) -> Any:
        """A JSON value as it is, or, when its JSON is longer than :data:`TEXT_LIMIT`, that
        JSON text (redacted first: secret-named keys are masked before they become text)
        clipped."""
        if isinstance(value, str):
            return self._text(value)
        if value is None or isinstance(value, (bool, int, float)):
            return value
        text = _json(value)
        if len(text) <= TEXT_LIMIT:
            return value
        return clip(_json(self.redactor.value(value)), TEXT_LIMIT)


def failure_details(transcript: Transcript, response: str) -> str:
    """A missed case's lines under its failure: the tool calls it made (a secret-named
    argument masked, as results show it: the text is redacted, not walked) and its answer
    (``response``, as results show it), clipped."""
    calls = ", ".join(
        f"{c.name}({', '.join(f'{k}={v!r}' for k, v in mask_named(c.params).items())})"
        for c in transcript.tool_calls
    )
    response = clip(response, 500)
    return f"  tool calls: {calls or '(none)'}\n  response:   {response!r}"


def every_run_errored(transcript: Transcript | None) -> dict[str, Any] | None:
    """The ``repeats`` of a repeated case none of whose runs could be scored (every one
    errored), else ``None``."""
    runs = transcript.repeats if transcript is not None else []
    if len(runs) > 1 and all(run.error is not None for run in runs):
        return summary(["error"] * len(runs))
    return None


def spent_usage(transcript: Transcript) -> Usage:
    """The model's tokens over every run of a case (every repeat), what budgets count."""
    if not transcript.repeats:
        return transcript.usage
    return sum((run.usage for run in transcript.repeats), Usage())


def _with_services(details: dict[str, Any], transcript: Transcript) -> dict[str, Any]:
    """``details`` with what the case's services cost over every run: ``judge.usage`` counts
    the judge's tokens of every repeat (a suite reads one run's verdict; each run was judged),
    ``embedding.usage`` the embeddings endpoint's (when it used any)."""
    runs = transcript.repeats or [transcript]
    judge = details.get("judge")
    if transcript.repeats and isinstance(judge, dict):
        total = sum((r.judgement.usage for r in runs if r.judgement), Usage())
        details = {**details, "judge": {**judge, "usage": total.model_dump()}}
    for run in runs:
        if run.embedding_usage.counted:
            break
    else:
        return details  # no run used the embeddings endpoint: nothing to sum
    embedded = sum((r.embedding_usage for r in runs), Usage())
    if embedded.counted:
        details = {**details, "embedding": {"usage": embedded.model_dump()}}
    return details


def service_spend(transcript: Transcript) -> dict[str, Any]:
    """An errored case's ``details``: what its judge and embedding calls cost before the
    fault (``judge.stage`` and ``judge.usage``, ``embedding.usage``), when they cost anything."""
    judged = next((r.judgement for r in transcript.repeats or [transcript] if r.judgement), None)
    details: dict[str, Any] = {}
    if judged is not None:
        details["judge"] = {"stage": judged.stage, "usage": judged.usage.model_dump()}
    return _with_services(details, transcript)


def _empty(value: Any) -> bool:
    """Whether an ``expect`` value says nothing (unset, or an empty text or collection)."""
    return value is None or (isinstance(value, (str, list, tuple, dict)) and not value)


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)
"""One encoder for every case (``json.dumps`` with options builds a new one per call)."""


def _json(value: Any) -> str:
    return _ENCODER.encode(value)
