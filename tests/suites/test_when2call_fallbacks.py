"""When2Call's opt-in fallbacks on loopback servers: each is off by default, audited for every
event, counted in ``suites.when2call.fallbacks`` and bounded by a gate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.testing.openai_server import (
    ChatAnswer,
    CompletionAnswer,
    OpenAIServer,
    Token,
    word_logprobs,
)
from tests.conftest import W2C_FILE, read_jsonl, write_jsonl

MANIFEST = "suite: when2call\ndata: data/rows.jsonl\n"


def _rows(start: int, stop: int) -> list[dict[str, Any]]:
    if not W2C_FILE.is_file():
        pytest.skip(f"the When2Call data file is not beside the project ({W2C_FILE})")
    lines = W2C_FILE.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[start:stop]]


def _run(pytester: pytest.Pytester) -> Path:
    return pytester.path / "run"


def _section(pytester: pytest.Pytester) -> dict[str, Any]:
    report = json.loads((_run(pytester) / "report.json").read_text())
    return report["suites"]["when2call"]  # type: ignore[no-any-return]


def _gates(pytester: pytest.Pytester) -> dict[str, Any]:
    return json.loads((_run(pytester) / "report.json").read_text())["gates"]  # type: ignore[no-any-return]


def _details(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    return {r["case_id"]: r["details"] for r in read_jsonl(_run(pytester) / "results.jsonl")}


@pytest.fixture
def w2c(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")
    return pytester


# ------------------------------------------------------------------ judge fallback


def _judge_run(
    pytester: pytest.Pytester, manifest: str, judge_base: str | None = None, cut: bool = False
) -> pytest.RunResult:
    """Four gold cannot_answer rows under protocol judge; the model declines, the judge never
    answers with JSON (or is cut off by its token limit, or sits at ``judge_base``)."""
    write_jsonl(pytester, "data/rows.jsonl", _rows(95, 99))
    (pytester.path / "j.llmeval.yaml").write_text(MANIFEST + manifest)

    def judge(body: dict[str, Any]) -> ChatAnswer:
        if cut:
            return ChatAnswer(content='{"classification": "cann', finish_reason="length")
        return ChatAnswer(content="I would say the assistant declined, politely.")

    with (
        OpenAIServer(lambda body: "Sorry, I cannot do that.") as model,
        OpenAIServer(judge) as judge_server,
    ):
        return pytester.runpytest(
            "--llmeval-runner", "openai", "--llmeval-base-url", model.base_url,
            "--llmeval-model", "test-model", "--llmeval-judge-runner", "openai",
            "--llmeval-judge-base-url", judge_base or judge_server.base_url,
            "--llmeval-deterministic", "yes", "--llmeval-run-dir", "run",
            "--llmeval-gate", "when2call.fallbacks.judge<=0", "-p", "no:cacheprovider",
        )  # fmt: skip


def test_without_judge_fallback_an_unreadable_judge_is_the_cases_error(
    w2c: pytest.Pytester,
) -> None:
    result = _judge_run(w2c, "protocol: judge\n")
    result.assert_outcomes(errors=4, passed=1)  # the gate holds: no fallback happened
    audit = read_jsonl(_run(w2c) / "audit.jsonl")
    assert [a["stage"] for a in audit] == ["judge_error"] * 4
    assert _section(w2c)["fallbacks"] == {"judge": 0, "mcq_string": 0}


def test_judge_fallback_labels_cannot_answer_audits_counts_and_fails_the_gate(
    w2c: pytest.Pytester,
) -> None:
    rows = _rows(95, 99)
    result = _judge_run(w2c, "protocol: judge\njudge_fallback: cannot_answer\n")
    result.assert_outcomes(passed=4, failed=2)  # four gold cannot_answer; both gates fail
    details = _details(w2c)
    assert {d["pred"] for d in details.values()} == {"cannot_answer"}
    assert {d["fallback"] for d in details.values()} == {"judge"}
    assert {d["judge"]["stage"] for d in details.values()} == {"fallback"}
    audit = read_jsonl(_run(w2c) / "audit.jsonl")
    assert sorted(a["sample_id"] for a in audit) == sorted(r["uuid"] for r in rows)
    for line in audit:
        assert line["stage"] == "fallback"
        assert line["verdict"] == {"classification": "cannot_answer"}
        assert len(line["replies"]) == 2  # the first reply and the repair turn's
        assert line["replies"][0].startswith("I would say")
    section = _section(w2c)
    assert section["fallbacks"] == {"judge": 4, "mcq_string": 0}
    gates = _gates(w2c)
    assert gates["passed"] is False
    assert "fallbacks: judge 4" in result.stdout.str()
    assert section["judge_unread_files"] == 1  # nothing readable at all: the suite's own gate
    own = next(r for r in gates["results"] if r["gate"]["name"].startswith("when2call.judge_un"))
    assert own["status"] == "failed" and "answered no case readably in 1 file(s)" in own["message"]


def test_a_judge_that_never_answered_readably_fails_the_run_without_any_gate(
    w2c: pytest.Pytester,
) -> None:
    """judge_fallback labelling every judged case of a file is no result: the suite's own gate
    fails the run even when the user set no gate."""
    write_jsonl(w2c, "data/rows.jsonl", _rows(95, 99))
    (w2c.path / "j.llmeval.yaml").write_text(
        MANIFEST + "protocol: judge\njudge_fallback: cannot_answer\n"
    )
    with (
        OpenAIServer(lambda body: "Sorry, I cannot do that.") as model,
        OpenAIServer(lambda body: "Error: upstream model unavailable") as judge,
    ):
        result = w2c.runpytest(
            "--llmeval-runner", "openai", "--llmeval-base-url", model.base_url,
            "--llmeval-model", "test-model", "--llmeval-judge-runner", "openai",
            "--llmeval-judge-base-url", judge.base_url, "--llmeval-deterministic", "yes",
            "--llmeval-run-dir", "run", "-p", "no:cacheprovider",
        )  # fmt: skip
    assert result.ret != 0
    result.assert_outcomes(passed=4, failed=1)
    out = result.stdout.str()
    assert "when2call.judge_unread_files" in out and "answered no case readably" in out


def test_a_judge_readable_once_keeps_the_suites_gate_green(w2c: pytest.Pytester) -> None:
    write_jsonl(w2c, "data/rows.jsonl", _rows(95, 99))
    (w2c.path / "j.llmeval.yaml").write_text(
        MANIFEST + "protocol: judge\njudge_fallback: cannot_answer\n"
    )
    seen: list[str] = []

    def judge(body: dict[str, Any]) -> ChatAnswer:
        seen.append("x")
        if len(seen) == 1:
            return ChatAnswer(content='{"classification": "cannot_answer"}')
        return ChatAnswer(content="Error: upstream model unavailable")

    with (
        OpenAIServer(lambda body: "Sorry, I cannot do that.") as model,
        OpenAIServer(judge) as judge_server,
    ):
        result = w2c.runpytest(
            "--llmeval-runner", "openai", "--llmeval-base-url", model.base_url,
            "--llmeval-model", "test-model", "--llmeval-judge-runner", "openai",
            "--llmeval-judge-base-url", judge_server.base_url, "--llmeval-deterministic", "yes",
            "--llmeval-run-dir", "run", "-p", "no:cacheprovider", "-p", "no:xdist",
        )  # fmt: skip
    result.assert_outcomes(passed=5)
    section = _section(w2c)
    assert section["fallbacks"]["judge"] == 3 and section["judge_unread_files"] == 0


def test_a_judge_that_is_down_is_never_a_fallback(w2c: pytest.Pytester) -> None:
    with OpenAIServer() as gone:
        down = gone.base_url  # closed when the block ends: connection refused
    result = _judge_run(w2c, "protocol: judge\njudge_fallback: cannot_answer\n", down)
    result.assert_outcomes(errors=4, passed=1)
    audit = read_jsonl(_run(w2c) / "audit.jsonl")
    assert {a["stage"] for a in audit} == {"judge_error"}
    assert all("backend failed" in a["problem"] for a in audit)
    assert _section(w2c)["fallbacks"]["judge"] == 0


def test_a_judge_reply_cut_off_is_never_a_fallback(w2c: pytest.Pytester) -> None:
    result = _judge_run(w2c, "protocol: judge\njudge_fallback: cannot_answer\n", cut=True)
    result.assert_outcomes(errors=4, passed=1)
    assert "the reply was cut off by the token limit" in result.stdout.str()
    audit = read_jsonl(_run(w2c) / "audit.jsonl")
    assert {a["stage"] for a in audit} == {"judge_error"}
    assert _section(w2c)["fallbacks"]["judge"] == 0


# ------------------------------------------------------------------ log-likelihood fallback

REPLIES = {0: "3", 1: "The answer is 1.", 2: "I cannot tell."}
"""The chat replies for the rows whose scores are -inf: right, wrong, unparsed."""


def _loglik_run(pytester: pytest.Pytester, manifest: str) -> tuple[pytest.RunResult, list[Any]]:
    """Six rows under mcq-loglik on the openai runner; rows 0-2 of them get a -inf token in
    every option, and the chat endpoint answers them with :data:`REPLIES`."""
    rows = _rows(95, 101)
    write_jsonl(pytester, "data/rows.jsonl", rows)
    (pytester.path / "l.llmeval.yaml").write_text(MANIFEST + manifest)
    chosen = {rows[i]["question"]: reply for i, reply in REPLIES.items()}

    def completions(body: dict[str, Any]) -> CompletionAnswer:
        answer = word_logprobs(body)
        if not any(q in body["prompt"] for q in chosen):
            return answer
        *head, last = answer.prompt_tokens
        return CompletionAnswer([*head, Token(last.text, float("-inf"))], answer.generated)

    def chat(body: dict[str, Any]) -> ChatAnswer:
        user = body["messages"][-1]["content"]
        for question, reply in chosen.items():
            if question in user:
                return ChatAnswer(content=reply)
        return ChatAnswer(content="?")

    with OpenAIServer(chat, completions) as server:
        result = pytester.runpytest(
            "--llmeval-runner", "openai", "--llmeval-base-url", server.base_url,
            "--llmeval-model", "test-model", "--llmeval-run-dir", "run",
            "--llmeval-gate", "when2call.fallbacks.mcq_string<=0", "-p", "no:cacheprovider",
        )  # fmt: skip
        bodies = server.chat_bodies()
    return result, bodies


def test_without_loglik_fallback_non_finite_scores_stay_errors(w2c: pytest.Pytester) -> None:
    result, chats = _loglik_run(w2c, "")
    outcomes = result.parseoutcomes()
    assert outcomes["errors"] == 3 and chats == []
    assert "non-finite log-likelihood" in result.stdout.str()
    assert read_jsonl(_run(w2c) / "audit.jsonl") == []
    assert _section(w2c)["fallbacks"]["mcq_string"] == 0
    assert _gates(w2c)["passed"] is True


def test_loglik_fallback_asks_in_chat_audits_counts_and_fails_the_gate(
    w2c: pytest.Pytester,
) -> None:
    rows = _rows(95, 101)
    result, chats = _loglik_run(w2c, "loglik_fallback: mcq-string\n")
    assert "errors" not in result.parseoutcomes()
    assert len(chats) == 3  # only the questions whose scores failed
    assert all(b["messages"][0]["role"] == "system" for b in chats)
    details = _details(w2c)
    expected = {0: "cannot_answer", 1: "tool_call", 2: None}
    for i, pred in expected.items():
        d = details[rows[i]["uuid"]]
        assert d["fallback"] == "mcq_string"
        rules = ("pred", "pred_acc", "pred_acc_norm", "pred_acc_bytes", "pred_acc_tokens")
        assert [d[k] for k in rules] == [pred] * 5  # the chat label, reused by every rule
        assert d["loglik"] == ["-inf"] * 4
    assert details[rows[2]["uuid"]]["unparsed"] is True
    assert all("fallback" not in details[r["uuid"]] for r in rows[3:])
    audit = read_jsonl(_run(w2c) / "audit.jsonl")
    by_case = {a["sample_id"]: a for a in audit}
    assert set(by_case) == {rows[i]["uuid"] for i in REPLIES}
    for i, reply in REPLIES.items():
        line = by_case[rows[i]["uuid"]]
        assert line["stage"] == "loglik_fallback"
        assert line["replies"] == [reply]
        assert line["scores"] == ["-inf"] * 4 and line["non_finite"] == [0, 1, 2, 3]
        assert line["picked"] == {0: 3, 1: 1, 2: None}[i]
    section = _section(w2c)
    assert section["fallbacks"] == {"judge": 0, "mcq_string": 3}
    assert section["unparsed"] == 1
    gates = _gates(w2c)
    assert gates["passed"] is False
    assert "fallbacks: mcq_string 3" in result.stdout.str()


NO_CHAT_CONFTEST = """
from pytest_llmeval.core.models import Loglik


class BaseModelRunner:
    name = "base-model"
    has_chat_template = False  # as the hf runner says of a base model

    def fingerprint(self):
        return {"type": "base-model"}

    async def aclose(self):
        pass

    async def generate(self, request):
        raise AssertionError("never asked")

    async def loglikelihood(self, requests):
        return [Loglik(logprob_sum=-1.0, token_count=1, char_length=1, byte_length=1)
                for _ in requests]


def pytest_llmeval_register_runners(registry):
    registry.register("base-model", lambda settings: BaseModelRunner())
"""


def test_loglik_fallback_without_a_chat_endpoint_is_a_usage_error(
    w2c: pytest.Pytester,
) -> None:
    write_jsonl(w2c, "data/rows.jsonl", _rows(95, 97))
    (w2c.path / "l.llmeval.yaml").write_text(MANIFEST + "loglik_fallback: mcq-string\n")
    w2c.makeconftest(NO_CHAT_CONFTEST)
    result = w2c.runpytest("--llmeval-runner", "base-model")
    assert result.ret == 4
    errors = [line for line in result.stderr.lines if line.startswith("ERROR")]
    assert len(errors) == 1
    assert (
        "l.llmeval.yaml: loglik_fallback: mcq-string asks the runner's chat endpoint" in (errors[0])
    )
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    (w2c.path / "l.llmeval.yaml").write_text(MANIFEST)  # without the key it runs
    assert w2c.runpytest("--llmeval-runner", "base-model").ret in (0, 1)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("judge_fallback: cannot_answer", "judge_fallback: applies to protocol: judge only"),
        ("loglik_fallback: mcq-string\nprotocol: mcq-string", "applies to protocol: mcq-loglik"),
        ("loglik_fallback: judge", "expected one of mcq-string, got 'judge'"),
        ("protocol: judge\njudge_fallback: direct", "expected one of cannot_answer"),
    ],
)
def test_misplaced_fallback_keys_are_one_clear_error(
    w2c: pytest.Pytester, line: str, message: str
) -> None:
    write_jsonl(w2c, "data/rows.jsonl", _rows(95, 97))
    (w2c.path / "x.llmeval.yaml").write_text(MANIFEST + line + "\n")
    result = w2c.runpytest(
        "--llmeval-runner", "echo", "--llmeval-judge-runner", "echo", "-p", "no:cacheprovider"
    )
    assert message in result.stdout.str()
    assert result.ret != 0


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (ChatAnswer(content="", finish_reason="content_filter"), "content filter"),
        (ChatAnswer(content=""), "the judge's reply was empty"),
    ],
    ids=["content filter", "empty"],
)
def test_a_judge_that_gave_no_answer_over_http_is_never_a_fallback(
    w2c: pytest.Pytester, answer: ChatAnswer, problem: str
) -> None:
    write_jsonl(w2c, "data/rows.jsonl", _rows(95, 99))
    (w2c.path / "j.llmeval.yaml").write_text(
        MANIFEST + "protocol: judge\njudge_fallback: cannot_answer\n"
    )
    with (
        OpenAIServer(lambda body: "Sorry, I cannot do that.") as model,
        OpenAIServer(lambda body: answer) as judge,
    ):
        result = w2c.runpytest(
            "--llmeval-runner", "openai", "--llmeval-base-url", model.base_url,
            "--llmeval-model", "test-model", "--llmeval-judge-runner", "openai",
            "--llmeval-judge-base-url", judge.base_url, "--llmeval-deterministic", "yes",
            "--llmeval-run-dir", "run", "-p", "no:cacheprovider",
        )  # fmt: skip
    assert result.ret != 0
    result.assert_outcomes(errors=4)
    assert problem in result.stdout.str()
    assert {a["stage"] for a in read_jsonl(_run(w2c) / "audit.jsonl")} == {"judge_error"}
