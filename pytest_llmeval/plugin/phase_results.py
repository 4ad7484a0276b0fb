"""A case's :class:`CaseResult` for each pytest phase, built in one place for every way it ends.

:class:`ResultBuilder` turns an item's score (the case ran and was judged) or a failed phase
(a broken case, an infrastructure fault, a skip; read from pytest's report and exception)
into the result that travels on the test report, is journaled, and reaches the controller's
run dir. The result is redacted here, once. What a result shows of its case (input,
expectation, conversation, answer, spend) is shaped by :class:`~pytest_llmeval.report.
case_view.CaseView`, with no pytest.
"""

from __future__ import annotations

import copy
import traceback
from typing import Any, Protocol

import pytest

from pytest_llmeval.core.clip import clip
from pytest_llmeval.core.errors import EvalFailure
from pytest_llmeval.core.fingerprint import fingerprint
from pytest_llmeval.core.held_once import HeldOnce
from pytest_llmeval.core.models import CaseResult, CaseScore, EvalCase, Outcome, Transcript, Usage
from pytest_llmeval.core.redact import Redactor
from pytest_llmeval.plugin.case_records import CaseRecord, CaseRecords
from pytest_llmeval.report.case_view import (
    CaseView,
    every_run_errored,
    service_spend,
    spent_usage,
)
from pytest_llmeval.rundir.journal import Journal, encode
from pytest_llmeval.suites.base import SuiteRegistry

__all__ = ["CaseItem", "ResultBuilder", "agent_fingerprint", "runner_id"]

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
        self.redactor = redactor
        self.view = CaseView(suites, redactor)
        """What a result shows of its case (pure shaping)."""
        self.journal = journal
        self.records = records
        """Where each result goes for the hooks that read it (budget, progress, reports)."""
        self._last_fingerprint: tuple[Any, dict[str, Any], str] | None = None

    def from_score(self, item: CaseItem, score: CaseScore) -> CaseResult:
        """The result of a case that ran and was scored."""
        case, transcript = item.case, item.transcript
        assert case is not None and transcript is not None
        return self.view.scored(_identity(item), case, transcript, score)

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
            **(self.view.shown_case(case, transcript) if case else {}),
            phase=None if report.skipped else report.when,
            traceback=None if report.skipped else _traceback(excinfo),
            events=transcript.events if transcript else [],
            duration_ms=round(transcript.duration_ms, 3) if transcript else 0.0,
            repeats=every_run_errored(transcript),
            usage=spent_usage(transcript) if transcript else Usage(),
            details=service_spend(transcript) if transcript else {},
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
        fp = runner = None
        if agent is not None:
            try:
                fp, runner = self.fingerprint_of(agent)
            except Exception:  # a user's fingerprint() that fails: its case's setup error
                fp = None
        # redacted here, once: the journal, the other processes and the reports see no secret.
        # The dump's JSON is scanned first: one the redactor would leave as it is is not walked
        data = result.model_dump(mode="json")
        if runner is not None:  # set on the dump: what model_copy(update=...) then dump gives
            data["runner_fingerprint"] = runner
        encoded = encode(data)
        model: CaseResult | None = result
        if self.redactor.may_change(encoded):
            model = None  # the dump may differ from the model now: the record validates it
            data = self.redactor.value(data)
            if runner is not None:  # the agent's hash, set after the redaction as it was
                data["runner_fingerprint"] = runner
            encoded = encode(data)
        line = self.journal.encoded_line(encoded, data, fp)  # journaled, and sent under xdist
        self.journal.write(line)
        self.records.put(report, CaseRecord(data, fp, line, model))
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


_PROPERTIES: HeldOnce[tuple[str, type, Any], tuple[str, Any]] = HeldOnce()
"""junit properties made before: pytest keeps every item's to the end, and most are alike."""


def _property(name: str, value: Any) -> tuple[str, Any]:
    """The junit property ``("llmeval.<name>", value)``, shared with equal ones."""
    return _PROPERTIES.made((name, type(value), value), lambda: (f"llmeval.{name}", value))


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
    """The agent's own fingerprint, or its class name for a user agent without one. Its own
    is a copy, made once (:meth:`ResultBuilder.fingerprint_of`): an agent that changes what
    it returned (its settings, a list of what it saw) changes neither the hash nor the
    fingerprint its results and journal lines carry."""
    method = getattr(agent, "fingerprint", None)
    if callable(method):
        return copy.deepcopy(dict(method()))
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
