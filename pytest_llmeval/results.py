"""A case's :class:`CaseResult`, built in one place for every way a case ends.

:class:`ResultBuilder` turns an item's score (the case ran and was judged) or a failed phase
(a broken case, an infrastructure fault, a skip) into the result that travels on the test
report, is journaled, and reaches the controller's run dir. The result is redacted here, once.
"""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING, Any

import pytest

from pytest_llmeval.clip import clip
from pytest_llmeval.errors import EvalFailure
from pytest_llmeval.fingerprint import fingerprint
from pytest_llmeval.models import CaseResult, CaseScore, Outcome
from pytest_llmeval.redact import Redactor
from pytest_llmeval.rundir.journal import Journal
from pytest_llmeval.suites.base import SuiteRegistry

if TYPE_CHECKING:
    from pytest_llmeval.collect import EvalItem

__all__ = ["ResultBuilder", "agent_fingerprint", "runner_id"]

ERROR_CHARS = 4_000
"""Most characters of a result's ``error`` message kept (clipped with the full length)."""
TRACEBACK_CHARS = 50_000
"""Most characters of an error's traceback kept for ``errors.jsonl``."""


class ResultBuilder:
    """Builds, redacts, journals and attaches every case result of one process."""

    def __init__(self, suites: SuiteRegistry, redactor: Redactor, journal: Journal):
        self.suites = suites
        self.redactor = redactor
        self.journal = journal
        self._last_fingerprint: tuple[Any, dict[str, Any], str] | None = None

    def from_score(self, item: EvalItem, score: CaseScore) -> CaseResult:
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
            response=self.shown_response(case.suite, transcript.response),
            tool_calls=transcript.tool_calls,
            usage=transcript.usage,
            fixture_hits=transcript.fixture_hits,
            fixture_misses=transcript.fixture_misses,
            details=score.details,
            repeats=score.repeats,
            events=transcript.events,
        )

    def shown_response(self, suite_name: str, text: str) -> str:
        """A model's answer as reports and artifacts keep it: a suite may mask what it
        considers private (the integration suite: emails, phone numbers, keys)."""
        mask = getattr(self.suites.get(suite_name), "mask_output", None)
        return mask(text) if callable(mask) else text

    def for_phase(
        self, item: EvalItem, report: pytest.TestReport, excinfo: Any
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
        return CaseResult(
            **_identity(item),
            outcome=outcome,
            passed=False,
            error=message,
            phase=None if report.skipped else report.when,
            traceback=None if report.skipped else _traceback(excinfo),
            events=transcript.events if transcript else [],
            duration_ms=round(transcript.duration_ms, 3) if transcript else 0.0,
        )

    def attach(
        self, item: EvalItem, call: pytest.CallInfo[None], report: pytest.TestReport
    ) -> None:
        """Put the phase's result on ``report`` (it crosses xdist there), journal it, and give
        junit its small scalar properties."""
        result = self.for_phase(item, report, call.excinfo)
        if result is None:
            return
        if result.error is not None and len(result.error) > ERROR_CHARS:
            result = result.model_copy(update={"error": clip(result.error, ERROR_CHARS)})
        agent = item.funcargs.get("llmeval_agent") if hasattr(item, "funcargs") else None
        fp = None
        # redacted here, once: the journal, the other processes and the reports see no secret
        data = self.redactor.value(result.model_dump(mode="json"))
        if agent is not None:  # set on the dump: what model_copy(update=...) then dump would give
            fp, data["runner_fingerprint"] = self.fingerprint_of(agent)
            report.llmeval_runner = fp  # type: ignore[attr-defined]
        report.llmeval = data  # type: ignore[attr-defined]
        self.journal.append(data, fp)
        # junit writes the properties of the teardown report, which copies the item's
        item.user_properties.append(("llmeval.outcome", result.outcome))
        for name, value in sorted(result.scores.items()):
            item.user_properties.append((f"llmeval.score.{name}", value))
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


def _identity(item: EvalItem) -> dict[str, Any]:
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
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)
