"""The lines of ``events.jsonl`` and ``audit.jsonl``: every event of the cases, the same
whether a result is kept (packed events) or not, each case's events read back once."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.core.redact import Redactor
from pytest_llmeval.report import writer
from pytest_llmeval.rundir.files import _LINE
from tests.report.test_html import make_results, rich_results


def _results() -> list[CaseResult]:
    """Agent and plain cases, kept or not; events with audits, and texts that say "audit"."""
    results = [*rich_results(20), *make_results(30)]
    odd = CaseResult(
        case_id="odd", suite="golden", file="evals/x.jsonl", line=1, nodeid="evals/x.jsonl::odd",
        outcome="failed", passed=False, error="NaN is no number",
        expected={"x": float("nan"), "y": float("-inf"), "z": (1, 2), "w": "Infinity"},
        input=[{"role": "user", "content": "say NaN"}],
        transcript=[{"role": "assistant", "content": "Infinity", "n": float("inf")}],
        events=[{"type": "audit", "stage": "judge"}, {"type": "model_call", "x": "audit"}],
    )  # fmt: skip
    quoted = odd.model_copy(update={"case_id": "q", "events": [{"type": "x", "t": '"audit"'}]})
    results += [odd, quoted]
    results += [CaseResult.kept(r.model_dump(mode="json")) for r in results]
    results.append(CaseResult.kept(odd.model_dump()))  # NaN kept as such (packed, not null)
    return results


def test_events_and_audits_are_every_event_of_the_cases() -> None:
    results = _results()
    everything = list(writer.events(results))
    assert any(event["type"] == "audit" for event in everything)
    audits = [event for event in everything if event.get("type") == "audit"]
    assert list(writer._audit_events(results)) == audits
    redactor = Redactor()
    for own in (True, False):
        lines = writer._redacted_events(results, redactor, lambda result, own=own: own)
        assert [_LINE.encode(e) for e in lines] == [_LINE.encode(e) for e in everything]


def test_a_kept_results_events_are_read_back_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``events.jsonl`` reads each case's events; ``audit.jsonl`` reads only the cases whose
    events hold an audit."""
    results = [CaseResult.kept(r.model_dump(mode="json")) for r in _results()]
    read: list[int] = []
    unpack = writer.unpack

    def counted(value: Any) -> Any:
        if any(value is result.events for result in results):
            read.append(id(value))
        return unpack(value)

    monkeypatch.setattr(writer, "unpack", counted)
    list(writer._redacted_events(results, Redactor(), lambda result: True))
    assert len(read) == len(results)
    read.clear()
    list(writer._audit_events(results))
    with_audits = [r for r in results if any(e.get("type") == "audit" for e in unpack(r.events))]
    assert len(read) == len(with_audits) > 0  # not the one whose text says '"audit"'
