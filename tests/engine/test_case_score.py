"""Scoring a case without pytest: a case and its transcript become a CaseScore, or a typed error.

What ``EvalItem.runtest`` used to do inside the pytest layer (the transcript's fault, the
suite's score, the non-finite check, the repeat rule) is the engine's; the item only raises
what these return. The same case through pytest is pinned by ``tests/fail_closed``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.errors import RunnerError
from pytest_llmeval.core.models import CaseScore, EvalCase, Message, Transcript
from pytest_llmeval.engine.case_score import score_case, score_fault, transcript_fault
from pytest_llmeval.suites.base import SuiteContext
from pytest_llmeval.suites.builtin import builtin_suites


def _case(expected: str = "4") -> EvalCase:
    return EvalCase(
        case_id="c",
        suite="golden",
        file="qa.jsonl",
        line=1,
        messages=[Message(role="user", content="2+2?")],
        expect={
            "expected_output": expected,
            "metrics": ["exact_match"],
            "thresholds": {"exact_match": 1.0},
        },
    )


def _context(tmp_path: Path) -> SuiteContext:
    return SuiteContext(settings=Settings.model_construct(rootdir=tmp_path))


def _answer(text: str, **fields: Any) -> Transcript:
    return Transcript(response=text, messages=[Message(role="assistant", content=text)], **fields)


def test_a_golden_case_is_scored_without_pytest(tmp_path: Path) -> None:
    golden = builtin_suites().get("golden")
    assert golden is not None
    hit = score_case(_case(), _answer("4"), golden, _context(tmp_path), "majority")
    miss = score_case(_case(), _answer("5"), golden, _context(tmp_path), "majority")
    assert hit.passed and hit.scores["exact_match"] == 1.0 and score_fault(hit) is None
    assert not miss.passed and miss.scores["exact_match"] == 0.0


class _NaNSuite:
    """A suite whose score is not a number."""

    name = "nan"

    def score(self, case: EvalCase, transcript: Transcript, ctx: SuiteContext) -> CaseScore:
        return CaseScore(passed=True, scores={"quality": math.nan})


def test_a_score_that_is_not_finite_is_a_score_error(tmp_path: Path) -> None:
    with pytest.raises(RunnerError) as raised:
        score_case(_case(), _answer("4"), _NaNSuite(), _context(tmp_path), "majority")  # type: ignore[arg-type]
    assert raised.value.kind == "score"
    assert "the nan suite" in str(raised.value) and "quality" in str(raised.value)


def test_repeats_are_reduced_by_the_rule_and_an_errored_one_makes_an_error(
    tmp_path: Path,
) -> None:
    golden = builtin_suites().get("golden")
    assert golden is not None
    runs = [_answer("4"), _answer("5"), _answer("4")]
    majority = score_case(
        _case(), _answer("4", repeats=runs), golden, _context(tmp_path), "majority"
    )
    every = score_case(_case(), _answer("4", repeats=runs), golden, _context(tmp_path), "all")
    assert majority.passed and not every.passed
    failed = Transcript(stop_reason="error", error="boom", error_kind="timeout")
    errored = score_case(
        _case(), _answer("4", repeats=[runs[0], failed]), golden, _context(tmp_path), "majority"
    )
    fault = score_fault(errored)
    assert fault is not None and fault.kind == "timeout" and "boom" in str(fault)


def test_a_transcript_that_cannot_be_scored_says_why() -> None:
    failed = Transcript(stop_reason="error", error="refused", error_kind="agent")
    assert transcript_fault(_answer("4")) is None
    one = transcript_fault(failed)
    assert one is not None and (one.kind, str(one)) == ("agent", "refused")
    every = transcript_fault(failed.model_copy(update={"repeats": [failed, failed]}))
    assert every is not None and str(every) == "2 of 2 repeats errored; repeat 1: refused"
    surrogate = transcript_fault(_answer("bad \ud800"))
    assert surrogate is not None and surrogate.kind == "protocol"
    assert str(surrogate).startswith("the model's response is")
