"""The judge has its own settings: its max tokens (default enough for its JSON), its own extra
body, never the model's prompt wrapper or top_p; its replay is chosen by
--llmeval-judge-model (issue 32, item 4)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_llmeval.testing.openai_server import ChatAnswer, OpenAIServer
from tests.conftest import read_jsonl, write_json

VERDICT = {"scores": {"correctness": 1.0}, "reason": "fine"}
CASES = [{"id": "a", "input": "hi", "expected_output": "hi", "rubric": {"correctness": 1.0}}]


def _judge_brain(body: dict[str, Any]) -> ChatAnswer:
    return ChatAnswer(content=json.dumps(VERDICT))


def _judged(pytester: pytest.Pytester, server: OpenAIServer, *args: str) -> Any:
    pytester.makeini("[pytest]\n")
    write_json(pytester, "j.golden.json", CASES)
    (pytester.path / "wrap.tmpl").write_text("WRAPPED $user", encoding="utf-8")
    return pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-max-tokens", "16", "--llmeval-top-p", "0.5",
        "--llmeval-extra-body", '{"candidate_only": 1}', "--llmeval-prompt-wrapper", "wrap.tmpl",
        "--llmeval-judge-runner", "openai", "--llmeval-judge-model", "test-model",
        "--llmeval-judge-base-url", server.base_url, "--llmeval-run-dir", "run", *args,
    )  # fmt: skip


def test_the_judge_never_takes_the_models_max_tokens_extra_body_wrapper_or_top_p(
    pytester: pytest.Pytester,
) -> None:
    with OpenAIServer(_judge_brain) as server:
        result = _judged(pytester, server, "--llmeval-judge-extra-body", '{"judge_only": 2}')
        bodies = server.chat_bodies()
    result.assert_outcomes(passed=1)
    (body,) = bodies
    assert body["max_tokens"] == 1024
    assert body["judge_only"] == 2
    assert "candidate_only" not in body and "top_p" not in body
    assert "WRAPPED" not in json.dumps(body["messages"])


def test_judge_max_tokens_is_its_own_option(pytester: pytest.Pytester) -> None:
    with OpenAIServer(_judge_brain) as server:
        result = _judged(pytester, server, "--llmeval-judge-max-tokens", "64")
        bodies = server.chat_bodies()
    result.assert_outcomes(passed=1)
    assert [b["max_tokens"] for b in bodies] == [64]


def test_a_judge_reply_cut_off_names_judge_max_tokens(pytester: pytest.Pytester) -> None:
    def cut(body: dict[str, Any]) -> ChatAnswer:
        return ChatAnswer(content='{"scores": {"corr', finish_reason="length")

    with OpenAIServer(cut) as server:
        result = _judged(pytester, server, "--llmeval-judge-max-tokens", "4")
    result.assert_outcomes(errors=1)
    (row,) = read_jsonl(pytester.path / "run" / "results.jsonl")
    assert "the reply was cut off by the token limit" in row["error"]
    assert "raise --llmeval-judge-max-tokens" in row["error"]


def test_a_bad_judge_max_tokens_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest("--llmeval-judge-max-tokens", "0")
    assert result.ret == 4
    assert "--llmeval-judge-max-tokens must be 1 or more" in result.stderr.str()
    result = pytester.runpytest("--llmeval-judge-extra-body", "[1]")
    assert result.ret == 4
    assert "--llmeval-judge-extra-body takes a JSON object" in result.stderr.str()


def test_an_ambiguous_judge_replay_names_judge_model(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    write_json(pytester, "j.golden.json", CASES)
    for folder in ("judge-a-0001", "judge-b-0002"):
        write_json(pytester, f"fixtures/cassettes/{folder}/runner.json", {"type": "openai"})
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-judge-runner", "replay", "--llmeval-run-dir", "run"
    )
    assert result.ret == 4
    err = result.stderr.str()
    assert "choose one with `--llmeval-judge-model <folder>`" in err
    assert "--llmeval-replay-from" not in err
