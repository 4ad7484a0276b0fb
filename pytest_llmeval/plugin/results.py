"""A case's :class:`CaseResult`, built in one place for every way a case ends.

:class:`ResultBuilder` turns an item's score (the case ran and was judged) or a failed phase
(a broken case, an infrastructure fault, a skip) into the result that travels on the test
report, is journaled, and reaches the controller's run dir. The result is redacted here, once.

A scored case's result also shows what a reader needs to understand it from the reports
alone: the case's input, what it expected and the conversation (``CaseResult.input``,
``expected``, ``transcript``), with long texts clipped and long conversations cut to their
first and last messages, so that 100,000 results still fit in the controller's memory.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import pytest

from pytest_llmeval.core.clip import clip
from pytest_llmeval.core.errors import EvalFailure
from pytest_llmeval.core.fingerprint import fingerprint
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
from pytest_llmeval.core.redact import Redactor
from pytest_llmeval.core.repeats import summary
from pytest_llmeval.plugin.case_records import CaseRecord, CaseRecords
from pytest_llmeval.rundir.journal import Journal
from pytest_llmeval.suites.base import SuiteRegistry

__all__ = [
    "MAX_MESSAGES",
    "RESPONSE_CHARS",
    "TEXT_LIMIT",
    "CaseItem",
    "ResultBuilder",
    "agent_fingerprint",
    "runner_id",
]

TEXT_LIMIT = 4000
"""Longest text a result keeps of a case's input, expectation or transcript; a longer one is
clipped with a marker giving its full length."""
MAX_MESSAGES = 40
"""Messages a result keeps of a case's input or transcript: the first and the last halves."""

RESPONSE_CHARS = 100_000
"""Longest model answer a result keeps whole (scoring saw all of it); a longer one is clipped
with a marker giving its full length."""
ERROR_CHARS = 4_000
"""Most characters of a result's ``error`` message kept (clipped with the full length)."""
TRACEBACK_CHARS = 50_000
"""Most characters of an error's traceback kept for ``errors.jsonl``."""


class CaseItem(Protocol):
    """An eval item as its result is built from it (collection's item, seen from below)."""

    @property
    def nodeid(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def line(self) -> int:
        """The case's 1-based line in its data file."""

    @property
    def suite_name(self) -> str: ...

    @property
    def data_display(self) -> str:
        """The data file, relative to the rootdir."""

    @property
    def category(self) -> str | None: ...

    @property
    def case(self) -> EvalCase | None:
        """The case; ``None`` for a broken record."""

    @property
    def transcript(self) -> Transcript | None:
        """What the agent did, once it ran."""

    @property
    def result(self) -> CaseResult | None:
        """The scored result, once the call phase scored it."""

    @property
    def user_properties(self) -> list[tuple[str, object]]:
        """junit's properties of the item."""


class ResultBuilder:
    """Builds, redacts, journals and attaches every case result of one process."""

    def __init__(
        self, suites: SuiteRegistry, redactor: Redactor, journal: Journal, records: CaseRecords
    ):
        self.suites = suites
        self.redactor = redactor
        self.journal = journal
        self.records = records
        """Where each result goes for the hooks that read it (budget, progress, reports)."""
        self._last_fingerprint: tuple[Any, dict[str, Any], str] | None = None

    def from_score(self, item: CaseItem, score: CaseScore) -> CaseResult:
        """The result of a case that ran and was scored."""
        case, transcript = item.case, item.transcript
        assert case is not None and transcript is not None
        outcome: Outcome = "skipped" if score.skipped else ("passed" if score.passed else "failed")
        return CaseResult(
            **_identity(item),
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
            return text  # redacted with the whole result, in attach()
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

    def for_phase(
        self, item: CaseItem, report: pytest.TestReport, excinfo: Any
    ) -> CaseResult | None:
        """The result to attach to this phase's report, or ``None`` if the case goes on."""
        if report.when == "call" and item.result is not None:
            if report.failed and not isinstance(getattr(excinfo, "value", None), EvalFailure):
                return _with(item.result, "error", _message(excinfo), "call", _traceback(excinfo))
            if hasattr(report, "wasxfail"):  # a manifest's misses: xfail
                return item.result.model_copy(update={"xfailed": True})
            return item.result
        if report.when == "teardown" or (report.when == "setup" and report.passed):
            return None
        outcome: Outcome = "skipped" if report.skipped else "error"
        message = _skip_reason(report) if report.skipped else _message(excinfo)
        transcript = item.transcript
        case = item.case if outcome == "error" else None  # an error is read with its case
        return CaseResult(
            **_identity(item),
            outcome=outcome,
            passed=False,
            error=message,
            **(self.shown_case(case, transcript) if case else {}),
            phase=None if report.skipped else report.when,
            traceback=None if report.skipped else _traceback(excinfo),
            events=transcript.events if transcript else [],
            duration_ms=round(transcript.duration_ms, 3) if transcript else 0.0,
            repeats=_every_run_errored(transcript),
            usage=spent_usage(transcript) if transcript else Usage(),
            details=_service_spend(transcript) if transcript else {},
        )

    def attach(
        self, item: CaseItem, agent: Any, call: pytest.CallInfo[None], report: pytest.TestReport
    ) -> None:
        """Record the phase's result as the one ``report`` carries (:class:`CaseRecords`;
        it crosses xdist with the report), journal it, and give junit its small scalar
        properties; ``agent`` is the one the case ran with (``None`` before its setup did),
        whose fingerprint the result carries."""
        result = self.for_phase(item, report, call.excinfo)
        if result is None:
            return
        if result.error is not None and len(result.error) > ERROR_CHARS:
            result = result.model_copy(update={"error": clip(result.error, ERROR_CHARS)})
        fp = None
        # redacted here, once: the journal, the other processes and the reports see no secret
        data = self.redactor.value(result.model_dump(mode="json"))
        if agent is not None:  # set on the dump: what model_copy(update=...) then dump would give
            try:
                fp, data["runner_fingerprint"] = self.fingerprint_of(agent)
            except Exception:  # a user's fingerprint() that fails: its case's setup error
                fp = None
        line = self.journal.line(data, fp)  # encoded once: journaled, and sent on under xdist
        self.journal.write(line)
        self.records.put(report, CaseRecord(data, fp, line))
        # junit writes the properties of the teardown report, which copies the item's
        item.user_properties.append(_property("outcome", result.outcome))
        for name, value in sorted(result.scores.items()):
            item.user_properties.append(_property(f"score.{name}", value))
        if isinstance(report.longrepr, str):
            report.longrepr = self.redactor.text(report.longrepr)

    def fingerprint_of(self, agent: Any) -> tuple[dict[str, Any], str]:
        """The agent's fingerprint and its hash, worked out once per agent object (the
        session's agent answers every case; a per-case agent is hashed per case)."""
        last = self._last_fingerprint
        if last is None or last[0] is not agent:
            fp = agent_fingerprint(agent)
            last = self._last_fingerprint = (agent, fp, runner_id(fp))
        return last[1], last[2]


_PROPERTIES: dict[tuple[str, type, Any], tuple[str, Any]] = {}
"""junit properties made before: pytest keeps every item's to the end, and most are alike."""


def _property(name: str, value: Any) -> tuple[str, Any]:
    """The junit property ``("llmeval.<name>", value)``, shared with equal ones."""
    key = (name, type(value), value)
    found = _PROPERTIES.get(key)
    if found is None:
        if len(_PROPERTIES) >= 4096:
            _PROPERTIES.clear()
        found = _PROPERTIES[key] = (f"llmeval.{name}", value)
    return found


def _every_run_errored(transcript: Transcript | None) -> dict[str, Any] | None:
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


def _service_spend(transcript: Transcript) -> dict[str, Any]:
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


def _identity(item: CaseItem) -> dict[str, Any]:
    """The fields that say which case a result is about (a broken record has no case)."""
    case = item.case
    return {
        "case_id": case.case_id if case else item.name,
        "suite": case.suite if case else item.suite_name,
        "file": case.file if case else item.data_display,
        "line": item.line,
        "nodeid": item.nodeid,
        "category": case.category if case else item.category,
        "case_fingerprint": case.fingerprint if case else "",
    }


def agent_fingerprint(agent: Any) -> dict[str, Any]:
    """The agent's own fingerprint, or its class name for a user agent without one."""
    method = getattr(agent, "fingerprint", None)
    if callable(method):
        return dict(method())
    kind = type(agent)
    return {"type": "agent", "class": f"{kind.__module__}.{kind.__qualname__}"}


def runner_id(fp: dict[str, Any]) -> str:
    return fingerprint(fp)


def _with(
    result: CaseResult, outcome: str, error: str, phase: str, trace: str | None
) -> CaseResult:
    update = {"outcome": outcome, "passed": False, "error": error}
    return result.model_copy(update={**update, "phase": phase, "traceback": trace})


def _traceback(excinfo: Any) -> str | None:
    """The error's traceback as Python prints it (clipped), for ``errors.jsonl``."""
    exc = getattr(excinfo, "value", None)
    if exc is None:
        return None
    return clip("".join(traceback.format_exception(exc)), TRACEBACK_CHARS)


def _message(excinfo: Any) -> str:
    exc = getattr(excinfo, "value", None)
    if exc is None:
        return "error"
    if isinstance(exc, EvalFailure):
        return exc.message
    text = str(exc)
    return text if text else type(exc).__name__


def _skip_reason(report: pytest.TestReport) -> str:
    wasxfail = getattr(report, "wasxfail", None)
    if wasxfail is not None:  # pytest.xfail(): its longrepr is the whole traceback
        return str(wasxfail) or "xfail"
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)
