"""Judges: the verdict ladder (strict form, tolerant reading, one repair, errors, audit) and
golden rubric scores, with a scripted judge as a registered runner and on a loopback server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_llmeval.core.models import JudgeTask
from pytest_llmeval.scoring.judge_verdict import extract_verdict, rubric_scores, schema, validate
from pytest_llmeval.testing.openai_server import ChatAnswer, OpenAIServer
from tests.conftest import read_jsonl, write_json

TASK = JudgeTask(kind="rubric", question="q", criteria={"correctness": 2.0, "tone": 1.0})
GOOD = {"scores": {"correctness": 1.0, "tone": 0.4}, "reason": "right, but curt"}


def test_reading_a_verdict() -> None:
    reply = '<think>maybe {"scores": {}}</think>Sure.\n```json\n' + json.dumps(GOOD) + "\n```\n"
    assert extract_verdict(reply) == GOOD
    assert extract_verdict('{"a": 1} then {"b": 2}') == {"b": 2}
    assert extract_verdict("no json here") is None
    assert validate(GOOD, schema(TASK)) is None
    assert "tone" in (validate({"scores": {"correctness": 1}, "reason": ""}, schema(TASK)) or "")
    assert "maximum" in (
        validate({"scores": {"correctness": 2, "tone": 0}, "reason": ""}, schema(TASK)) or ""
    )
    assert rubric_scores(TASK, GOOD) == {
        "rubric.correctness": 1.0,
        "rubric.tone": 0.4,
        "rubric": pytest.approx((2 * 1.0 + 0.4) / 3),
    }


# The judge: replies by the answer it is shown (the echo model answers with the input).
JUDGE_CONFTEST = """
import json
from pytest_llmeval.core.errors import RunnerError
from pytest_llmeval.runners.base import Completion
from pytest_llmeval.core.models import Usage

GOOD = json.dumps({"scores": {"correctness": 1.0, "tone": 0.5}, "reason": "fine"})
LOW = json.dumps({"scores": {"correctness": 0.1, "tone": 0.2}, "reason": "it ignores the question"})

class Judge:
    name = "scripted-judge"
    def fingerprint(self):
        return {"type": "scripted-judge"}
    async def aclose(self):
        pass
    async def generate(self, request):
        prompt = request.messages[0].content
        turn = len(request.messages) // 2
        usage = Usage(prompt_tokens=10, completion_tokens=5, total_tokens=15)
        if "answer-good" in prompt:
            return Completion(text=GOOD, usage=usage)
        if "answer-low" in prompt:
            return Completion(text=LOW, usage=usage)
        if "answer-think" in prompt:
            return Completion(text="<think>{oops</think>```json\\n" + GOOD + "\\n```", usage=usage)
        if "answer-repair" in prompt:
            return Completion(text="Sure! scores: high" if turn == 0 else GOOD, usage=usage)
        if "answer-twice" in prompt:
            return Completion(text='{"scores": {"correctness": 7}}', usage=usage)
        if "answer-cut" in prompt:
            return Completion(text='{"scores": {"correct', finish_reason="length", usage=usage)
        if "answer-filtered" in prompt:
            return Completion(text="", finish_reason="content_filter", usage=usage)
        if "answer-recited" in prompt:
            return Completion(text="Error: blocked", finish_reason="recitation", usage=usage)
        if "answer-empty" in prompt:
            return Completion(text="  ", finish_reason="stop", usage=usage)
        raise RunnerError("judge down: connection refused", kind="connection")

def pytest_llmeval_register_runners(registry):
    registry.register("scripted-judge", lambda settings: Judge())
"""

RUBRIC = {"correctness": 2.0, "tone": 1.0}


def _cases(*names: str, **extra: Any) -> list[dict[str, Any]]:
    return [
        {"id": name, "input": f"answer-{name}", "expected_output": f"answer-{name}",
         "rubric": RUBRIC, **extra}
        for name in names
    ]  # fmt: skip


def test_the_verdict_ladder_through_pytest(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(JUDGE_CONFTEST)
    names = ("good", "think", "repair", "twice", "cut", "down")
    write_json(pytester, "j.golden.json", _cases(*names))
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-judge-runner", "scripted-judge",
        "--llmeval-run-dir", "run",
    )  # fmt: skip
    result.assert_outcomes(passed=3, errors=3)
    out = result.stdout.str()
    assert "j.golden.json:29: judge error: 'reason' is a required property" in out
    assert "the reply was cut off by the token limit (finish_reason length); raise " in out
    assert "--llmeval-judge-max-tokens" in out
    assert "connection error: judge: judge down: connection refused" in out
    rows = {r["case_id"]: r for r in read_jsonl(pytester.path / "run" / "results.jsonl")}
    good = rows["good"]
    assert good["scores"]["rubric.correctness"] == 1.0
    assert good["scores"]["rubric"] == pytest.approx((2 * 1.0 + 0.5) / 3)
    assert good["details"]["judge"]["stage"] == "ok"
    assert good["details"]["judge"]["usage"]["total_tokens"] == 15
    assert rows["think"]["details"]["judge"]["stage"] == "ok"  # no repair needed
    assert rows["repair"]["details"]["judge"]["stage"] == "repaired"
    assert rows["repair"]["details"]["judge"]["usage"]["total_tokens"] == 30
    assert {rows[n]["outcome"] for n in ("twice", "cut", "down")} == {"error"}
    audit = read_jsonl(pytester.path / "run" / "audit.jsonl")
    stages = sorted((a["sample_id"], a["stage"]) for a in audit)
    assert stages == [
        ("cut", "judge_error"), ("down", "judge_error"), ("repair", "repair"),
        ("twice", "judge_error"),
    ]  # fmt: skip
    down = next(a for a in audit if a["sample_id"] == "down")
    assert down["problem"] == (
        "the judge's backend failed: connection error: judge down: connection refused"
    )
    twice = next(a for a in audit if a["sample_id"] == "twice")
    assert len(twice["replies"]) == 2 and "'reason' is a required property" in twice["problem"]


def test_rubric_thresholds_fail_with_the_judges_reason(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(JUDGE_CONFTEST)
    write_json(pytester, "j.golden.json", _cases("low", min_scores={"rubric": 0.5}))
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-judge-runner", "scripted-judge"
    )
    result.assert_outcomes(failed=1)
    assert "rubric: 0.13 < 0.50" in result.stdout.str()
    assert "(judge: it ignores the question)" in result.stdout.str()


def test_a_rubric_threshold_without_a_judge_is_a_clear_error(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    write_json(pytester, "j.golden.json", _cases("good", min_scores={"rubric.tone": 0.5}))
    result = pytester.runpytest("--llmeval-runner", "echo")
    result.assert_outcomes(errors=1)
    assert "min_scores.rubric.tone: a rubric score needs the case's rubric and a judge" in (
        result.stdout.str()
    )
    # without a threshold on it, a rubric is simply not scored (as before judges existed)
    write_json(pytester, "j.golden.json", _cases("good"))
    pytester.runpytest("--llmeval-runner", "echo").assert_outcomes(passed=1)


def test_an_openai_judge_on_loopback_gets_a_strict_schema(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    verdict = {"scores": {"correctness": 0.9, "tone": 1.0}, "reason": "good"}

    def brain(body: dict[str, Any]) -> ChatAnswer:
        return ChatAnswer(content="```\n" + json.dumps(verdict) + "\n```")

    write_json(pytester, "j.golden.json", _cases("good", min_scores={"rubric.correctness": 0.8}))
    with OpenAIServer(brain) as server:
        result = pytester.runpytest(
            "--llmeval-runner", "echo", "--llmeval-judge-runner", "openai",
            "--llmeval-judge-model", "test-model", "--llmeval-judge-base-url", server.base_url,
        )  # fmt: skip
        bodies = server.chat_bodies()
    result.assert_outcomes(passed=1)
    (body,) = bodies
    form = body["response_format"]
    assert form["type"] == "json_schema" and form["json_schema"]["strict"] is True
    assert form["json_schema"]["schema"]["properties"]["scores"]["required"] == [
        "correctness",
        "tone",
    ]
    assert body["temperature"] == 0
    assert "answer-good" in body["messages"][0]["content"]


def test_a_configured_fallback_verdict_is_applied_and_audited(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(JUDGE_CONFTEST)
    write_json(pytester, "data/cases.json", _cases("twice", "good"))
    fallback = {"scores": {"correctness": 0.0, "tone": 0.0}, "reason": "no verdict: fallback"}
    (pytester.path / "j.llmeval.yaml").write_text(
        "suite: golden\ndata: data/cases.json\njudge_fallback: " + json.dumps(fallback) + "\n"
    )
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-judge-runner", "scripted-judge",
        "--llmeval-run-dir", "run",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    rows = {r["case_id"]: r for r in read_jsonl(pytester.path / "run" / "results.jsonl")}
    assert rows["twice"]["details"]["judge"]["stage"] == "fallback"
    assert rows["twice"]["scores"]["rubric"] == 0.0
    (audit,) = read_jsonl(pytester.path / "run" / "audit.jsonl")
    assert (audit["sample_id"], audit["stage"]) == ("twice", "fallback")


def test_a_judge_that_gave_no_answer_is_never_a_fallback(pytester: pytest.Pytester) -> None:
    """A reply cut off, withheld by a content filter, ended for any other unfinished reason or
    empty (after the repair turn too) stays the case's judge error under ``judge_fallback``:
    the fallback labels an unreadable reply, not a judge that never answered."""
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(JUDGE_CONFTEST)
    names = ("twice", "cut", "filtered", "recited", "empty")
    write_json(pytester, "data/cases.json", _cases(*names))
    fallback = {"scores": {"correctness": 0.0, "tone": 0.0}, "reason": "no verdict: fallback"}
    (pytester.path / "j.llmeval.yaml").write_text(
        "suite: golden\ndata: data/cases.json\njudge_fallback: " + json.dumps(fallback) + "\n"
    )
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-judge-runner", "scripted-judge",
        "--llmeval-run-dir", "run",
    )  # fmt: skip
    result.assert_outcomes(passed=1, errors=4)
    out = result.stdout.str()
    assert "withheld by the judge's content filter (finish_reason content_filter)" in out
    assert "the judge gave no answer (finish_reason recitation)" in out
    assert "the judge's reply was empty (after 2 judge replies" in out
    audit = {a["sample_id"]: a for a in read_jsonl(pytester.path / "run" / "audit.jsonl")}
    assert {n: a["stage"] for n, a in audit.items()} == {
        "twice": "fallback", "cut": "judge_error", "filtered": "judge_error",
        "recited": "judge_error", "empty": "judge_error",
    }  # fmt: skip
    assert len(audit["filtered"]["replies"]) == 1  # no repair turn for a withheld reply


def test_judge_calls_record_and_replay_under_their_own_fingerprint(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(JUDGE_CONFTEST)
    write_json(pytester, "j.golden.json", _cases("good", "repair"))
    live = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-judge-runner", "scripted-judge",
        "--llmeval-record", "new", "--llmeval-run-dir", "live",
    )  # fmt: skip
    live.assert_outcomes(passed=2)
    folders = sorted(
        p.name.rsplit("-", 1)[0] for p in (pytester.path / "fixtures" / "cassettes").iterdir()
    )
    assert folders == ["echo", "scripted-judge"]
    pytester.makeconftest("")  # the judge is gone: only its recordings answer now
    replayed = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-judge-runner", "replay",
        "--llmeval-judge-model", "scripted-judge", "--llmeval-run-dir", "replayed",
    )  # fmt: skip
    replayed.assert_outcomes(passed=2)
    before = {
        r["case_id"]: r["scores"] for r in read_jsonl(pytester.path / "live" / "results.jsonl")
    }
    after = {
        r["case_id"]: r["scores"] for r in read_jsonl(pytester.path / "replayed" / "results.jsonl")
    }
    assert before == after


WOBBLY_JUDGE = """
import json
from pytest_llmeval.runners.base import Completion

CALLS = {}

class Wobbly:
    name = "wobbly"
    def fingerprint(self):
        return {"type": "wobbly"}
    async def aclose(self):
        pass
    async def generate(self, request):
        prompt = request.messages[0].content
        n = CALLS[prompt] = CALLS.get(prompt, 0) + 1
        correctness = 1.0 if n % 2 else 0.5  # 1, 0.5, 1, ...: the judge disagrees with itself
        return Completion(text=json.dumps(
            {"scores": {"correctness": correctness, "tone": 0.5}, "reason": "r"}))

def pytest_llmeval_register_runners(registry):
    registry.register("wobbly", lambda settings: Wobbly())
"""


def test_judge_repeats_report_the_judges_agreement(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(WOBBLY_JUDGE)
    write_json(pytester, "j.golden.json", _cases("one", "two"))
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-judge-runner", "wobbly",
        "--llmeval-judge-repeats", "3", "--llmeval-run-dir", "run",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    rows = read_jsonl(pytester.path / "run" / "results.jsonl")
    high, low = (2 * 1.0 + 0.5) / 3, (2 * 0.5 + 0.5) / 3
    for row in rows:
        judge = row["details"]["judge"]
        assert judge["samples"] == 3
        assert judge["agreement"] == pytest.approx(1 - (high - low))
        assert row["scores"]["rubric"] == pytest.approx(high)  # the first verdict scores
    report = json.loads((pytester.path / "run" / "report.json").read_text())
    stats = report["suites"]["golden"]["judge"]
    assert stats["agreement"] == pytest.approx(1 - (high - low), abs=1e-6)
    assert (stats["cases"], stats["stages"]) == (2, {"ok": 2})
