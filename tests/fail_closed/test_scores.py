"""Fail closed on scores, repeats and judges: a case that could not really be judged is an error.

* **Scores are finite.** A NaN or an infinity from a judge, an embedder, a scorer or a repeat
  is that case's error (``score`` or ``judge`` kind), never compared with a threshold: NaN is
  below no minimum, so it would pass every one.
* **Repeats count their errors.** A repeat that errored (a cassette miss, a backend fault, a
  score that is not finite) makes the case an error, with the runs that were judged still in
  its record (``repeats.outcomes``).
* **Every judge failure is audited** (a line of ``audit.jsonl``), a judge backend that is down,
  refuses or times out included.

Each entry runs a small project through pytest against real faults (a scripted judge, a
loopback server, a closed port, recorded cassettes replayed past their end) and checks the
exit status, ``results.jsonl``, ``errors.jsonl``, ``audit.jsonl`` and every gate's status.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.testing.openai_server import ChatAnswer, OpenAIServer
from pytest_llmeval.testing.server import Reply, Request
from tests.conftest import read_jsonl, write_json

RUBRIC = {"correctness": 1.0}
GATES = ("--llmeval-gate", "golden.pass_rate>=0.5", "--llmeval-gate", "*.errors==0")
"""Two gates every entry checks: a rate a NaN would have passed, and no errors."""

# A judge that reads the case's answer from its prompt and replies with the verdict text the
# case names: "verdict-nan" -> {"correctness": NaN}, and so on; "verdict-good" -> 1.0.
JUDGE_CONFTEST = """
from pytest_llmeval.runners.base import Completion

VERDICTS = {
    "verdict-good": '{"scores": {"correctness": 1.0}, "reason": "right"}',
    "verdict-nan": '{"scores": {"correctness": NaN}, "reason": "?"}',
    "verdict-inf": '{"scores": {"correctness": Infinity}, "reason": "?"}',
    "verdict-minus-inf": '{"scores": {"correctness": -Infinity}, "reason": "?"}',
}

class Judge:
    name = "nan-judge"
    def fingerprint(self):
        return {"type": "nan-judge"}
    async def aclose(self):
        pass
    async def generate(self, request):
        prompt = request.messages[0].content
        return Completion(text=next(v for k, v in VERDICTS.items() if k in prompt))

def pytest_llmeval_register_runners(registry):
    registry.register("nan-judge", lambda settings: Judge())
"""


def _judged(*names: str) -> list[dict[str, Any]]:
    """Golden cases whose answer (the echo runner's) names the verdict the judge gives."""
    return [
        {"id": name, "input": f"verdict-{name}", "rubric": RUBRIC,
         "min_scores": {"rubric.correctness": 0.9}}
        for name in names
    ]  # fmt: skip


def _rows(run: Path) -> dict[str, dict[str, Any]]:
    return {r["case_id"]: r for r in read_jsonl(run / "results.jsonl")}


def _errors(run: Path) -> dict[str, dict[str, Any]]:
    return {r["case_id"]: r for r in read_jsonl(run / "errors.jsonl")}


def _audit(run: Path) -> list[tuple[str, str, str]]:
    """(case, stage, problem) of each ``audit.jsonl`` line, sorted."""
    lines = read_jsonl(run / "audit.jsonl")
    return sorted((a["sample_id"], a["stage"], a["problem"]) for a in lines)


def _report(run: Path) -> dict[str, Any]:
    return json.loads((run / "report.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _gates(run: Path) -> dict[str, str]:
    return {g["gate"]["name"]: g["status"] for g in _report(run)["gates"]["results"]}


# -- scores are finite ----------------------------------------------------------------------


def test_a_judge_verdict_that_is_not_finite_is_the_cases_error(pytester: pytest.Pytester) -> None:
    """NaN passed the 0.9 threshold (NaN < 0.9 is false); the infinities were caught by the
    schema's maximum and minimum only. Each is now the judge's error, after the repair turn,
    and audited."""
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(JUDGE_CONFTEST)
    write_json(pytester, "j.golden.json", _judged("good", "nan", "inf", "minus-inf"))
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-judge-runner", "nan-judge",
        "--llmeval-run-dir", "run", *GATES,
    )  # fmt: skip
    assert result.ret == 1
    result.assert_outcomes(passed=1, errors=3, failed=2)  # failed: the two gates
    out = result.stdout.str()
    assert "j.golden.json:12: judge error: scores/correctness: nan is not a finite number" in out
    run = pytester.path / "run"
    rows = _rows(run)
    assert {k: r["outcome"] for k, r in rows.items()} == {
        "good": "passed", "nan": "error", "inf": "error", "minus-inf": "error",
    }  # fmt: skip
    assert rows["nan"]["scores"] == {}  # no score was kept to be compared or averaged
    assert sorted(_errors(run)) == ["inf", "minus-inf", "nan"]
    audit = _audit(run)
    assert [(case, stage) for case, stage, _ in audit] == [
        ("inf", "judge_error"), ("minus-inf", "judge_error"), ("nan", "judge_error"),
    ]  # fmt: skip
    assert "scores/correctness: nan is not a finite number" in audit[2][2]
    assert "scores/correctness: -inf is not a finite number" in audit[1][2]
    assert _gates(run) == {"golden.pass_rate>=0.5": "failed", "*.errors==0": "failed"}
    body = _report(run)["suites"]["golden"]
    assert (body["passed"], body["errors"]) == (1, 3)


def test_a_nan_verdict_over_the_wire_is_repaired_once_then_an_error(
    pytester: pytest.Pytester,
) -> None:
    """The openai runner on loopback: the server's JSON carries ``NaN`` as text, the judge asks
    once more (the repair turn), and the case is an error, never a pass."""
    pytester.makeini("[pytest]\n")
    write_json(pytester, "j.golden.json", _judged("nan"))
    nan_verdict = '{"scores": {"correctness": NaN}, "reason": "fine"}'
    with OpenAIServer(lambda body: ChatAnswer(content=nan_verdict)) as server:
        result = pytester.runpytest(
            "--llmeval-runner", "echo", "--llmeval-judge-runner", "openai",
            "--llmeval-judge-model", "test-model", "--llmeval-judge-base-url", server.base_url,
            "--llmeval-run-dir", "run", *GATES,
        )  # fmt: skip
        asked = len(server.chat_bodies())
    assert result.ret == 1
    result.assert_outcomes(errors=1, failed=2)
    assert asked == 2  # the verdict, then the repair turn
    run = pytester.path / "run"
    assert _rows(run)["nan"]["outcome"] == "error"
    assert [(c, s) for c, s, _ in _audit(run)] == [("nan", "judge_error")]
    assert _gates(run) == {"golden.pass_rate>=0.5": "failed", "*.errors==0": "failed"}


NAN_SCORER_CONFTEST = """
from pytest_llmeval.suites.golden import SCORERS

# a user's scorer: NaN for the answer "nan", infinity for "inf", else 1
SCORERS["odd"] = lambda response, expect: {"nan": float("nan"), "inf": float("inf")}.get(
    response, 1.0
)
"""


def test_a_scorer_that_gives_nan_makes_the_case_an_error(pytester: pytest.Pytester) -> None:
    """Any suite's score (here a user's golden scorer) is checked where the case's scores are
    finalised: NaN and an infinity are the case's ``score`` error, naming the score."""
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(NAN_SCORER_CONFTEST)
    words = ("ok", "nan", "inf")
    cases = [{"id": word, "input": word, "min_scores": {"odd": 0.9}} for word in words]
    write_json(pytester, "s.golden.json", cases)
    result = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run", *GATES)
    assert result.ret == 1
    result.assert_outcomes(passed=1, errors=2, failed=2)
    out = result.stdout.str()
    assert (
        "s.golden.json:9: score error: the golden suite gave a score that is not a finite number "
        "(odd = nan)" in out
    )
    assert "(odd = inf)" in out
    run = pytester.path / "run"
    rows = _rows(run)
    assert {k: r["outcome"] for k, r in rows.items()} == {
        "ok": "passed", "nan": "error", "inf": "error",
    }  # fmt: skip
    assert rows["nan"]["scores"] == {} and rows["ok"]["scores"] == {"odd": 1.0}
    errors = _errors(run)
    assert sorted(errors) == ["inf", "nan"] and errors["nan"]["phase"] == "call"
    assert "odd = nan" in errors["nan"]["message"]
    assert _gates(run) == {"golden.pass_rate>=0.5": "failed", "*.errors==0": "failed"}


def _embedding_server(vectors: dict[str, list[float]]) -> OpenAIServer:
    """An embeddings endpoint on loopback answering each text with ``vectors[text]``."""
    server = OpenAIServer()

    def embeddings(request: Request) -> Reply:
        data = [{"index": i, "embedding": vectors[t]} for i, t in enumerate(request.json["input"])]
        return Reply(json={"object": "list", "data": data})  # json.dumps writes NaN as is

    server.route("POST", "/v1/embeddings", embeddings)
    return server


def test_an_embedding_that_is_not_finite_is_the_cases_error(pytester: pytest.Pytester) -> None:
    """A NaN in a vector the endpoint sends is named at its source; finite vectors whose
    cosine overflows (1e308 squared: infinity over infinity) give a NaN similarity, caught
    where it is measured."""
    pytester.makeini("[pytest]\n")
    cases = [
        {"id": word, "input": word, "expected_output": word,
         "min_scores": {"semantic_similarity": 0.5}}
        for word in ("same", "nan", "huge")
    ]  # fmt: skip
    write_json(pytester, "s.golden.json", cases)
    vectors = {"same": [1.0, 0.0], "nan": [float("nan"), 1.0], "huge": [1e308, 1e308]}
    with _embedding_server(vectors) as server:
        result = pytester.runpytest(
            "--llmeval-runner", "echo", "--llmeval-embedding-base-url", server.base_url,
            "--llmeval-embedding-model", "emb", "--llmeval-run-dir", "run", *GATES,
        )  # fmt: skip
    assert result.ret == 1
    result.assert_outcomes(passed=1, errors=2, failed=2)
    out = result.stdout.str()
    assert "the vectors hold nan (vector/index 0/0), not a finite number" in out
    assert "semantic_similarity: the embedder (endpoint) gave a similarity of nan" in out
    run = pytester.path / "run"
    assert {k: r["outcome"] for k, r in _rows(run).items()} == {
        "same": "passed", "nan": "error", "huge": "error",
    }  # fmt: skip
    assert sorted(_errors(run)) == ["huge", "nan"]
    assert _gates(run) == {"golden.pass_rate>=0.5": "failed", "*.errors==0": "failed"}
    # nothing that is not finite was cached for a later session to reuse
    cached = [p.read_text() for p in (pytester.path / ".llmeval" / "embeddings").rglob("*.json")]
    assert cached and not any("NaN" in text or "Infinity" in text for text in cached)


def test_a_manifest_threshold_that_is_not_finite_is_refused(pytester: pytest.Pytester) -> None:
    """No score is below a NaN minimum, so a ``.nan`` threshold would pass every case: the
    manifest reader refuses it (it already did; pinned here with its siblings)."""
    pytester.makeini("[pytest]\n")
    write_json(pytester, "data/cases.json", [{"id": "a", "input": "a", "category": "c",
                                              "keywords": ["zzz"]}])  # fmt: skip
    pytester.makefile(
        ".llmeval.yaml",
        nan="suite: golden\ndata: data/cases.json\nthresholds:\n  c: {contains_keywords: .nan}\n",
    )
    result = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    assert result.ret == 1
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    message = "thresholds.c.contains_keywords: expected a finite number, got nan"
    assert f"nan.llmeval.yaml:4: {message}" in out
    assert [r["outcome"] for r in read_jsonl(pytester.path / "run" / "results.jsonl")] == ["error"]


LATENCY_CONFTEST = """
import pytest

class Timed:
    # reports its own latency: the case's input says which (a number, "nan", "inf")
    def run(self, case, broker):
        word = case.user_message
        calls = [{"name": "t", "durationMs": float("nan")}] if word == "tool-nan" else []
        duration = float(word) if word in ("nan", "inf", "-inf") else 5.0
        return {"response": word, "toolCalls": calls, "durationMs": duration}

@pytest.fixture(scope="session")
def llmeval_agent():
    return Timed()
"""


def test_an_agent_reporting_a_latency_that_is_not_finite_is_the_cases_error(
    pytester: pytest.Pytester,
) -> None:
    """An agent's own ``durationMs`` (or a tool call's) reaches tool-forge's ``maxLatencyMs``
    and every report: NaN or an infinity passed and was written as ``NaN``/``Infinity``,
    which is not JSON. It is now the agent's error, naming the field."""
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(LATENCY_CONFTEST)
    words = ("ok", "nan", "inf", "-inf", "tool-nan")
    write_json(pytester, "t.golden.json", [{"id": w, "input": w, "expected_output": w}
                                           for w in words])  # fmt: skip
    result = pytester.runpytest("--llmeval-run-dir", "run", *GATES)
    assert result.ret == 1
    result.assert_outcomes(passed=1, errors=4, failed=2)
    out = result.stdout.str()
    assert "agent error: the agent reported durationMs = nan; expected a finite number" in out
    assert "agent error: the agent reported toolCalls/0/durationMs = nan" in out
    run = pytester.path / "run"
    text = (run / "results.jsonl").read_text(encoding="utf-8")
    assert "NaN" not in text and "Infinity" not in text
    assert {k: r["outcome"] for k, r in _rows(run).items()} == {
        "ok": "passed", "nan": "error", "inf": "error", "-inf": "error", "tool-nan": "error",
    }  # fmt: skip
    assert _rows(run)["ok"]["duration_ms"] == 5.0
    assert _gates(run) == {"golden.pass_rate>=0.5": "failed", "*.errors==0": "failed"}


# -- repeats count their errors -------------------------------------------------------------

ECHO_CONFTEST = """
import os

from pytest_llmeval.core.case_context import repeat_index
from pytest_llmeval.core.errors import RunnerError
from pytest_llmeval.runners.base import Completion

class Flaky:
    name = "flaky"
    def fingerprint(self):
        return {"type": "flaky"}
    async def aclose(self):
        pass
    async def generate(self, request):
        word = request.messages[-1].content
        down = os.environ.get("LLMEVAL_TEST_UP") is None  # "down" fails unless told it is up
        if word == "dead":
            raise RunnerError("backend dead: connection refused", kind="connection")
        if word == "down" and repeat_index() == 1 and down:
            raise RunnerError("backend down: connection refused", kind="connection")
        if word == "nan":  # a score that is not finite in its third run only
            return Completion(text="nan" if repeat_index() == 2 else "fine")
        return Completion(text=word)

def pytest_llmeval_register_runners(registry):
    registry.register("flaky", lambda settings: Flaky())
"""


@pytest.fixture
def repeated(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(ECHO_CONFTEST + NAN_SCORER_CONFTEST)
    cases = [{"id": w, "input": w, "min_scores": {"odd": 0.5}} for w in ("alpha", "beta", "gamma")]
    write_json(pytester, "r.golden.json", cases)
    return pytester


def test_replaying_more_repeats_than_were_recorded_is_an_error(repeated: pytest.Pytester) -> None:
    """Recorded with 5 repeats, replayed with 6: each case's 6th run is a cassette miss, so
    every case is an error (it said PASSED), with its 5 judged runs still listed."""
    live = repeated.runpytest(
        "--llmeval-runner", "flaky", "--llmeval-repeats", "5", "--llmeval-record", "new",
        "--llmeval-run-dir", "live",
    )  # fmt: skip
    live.assert_outcomes(passed=3)
    repeated.makeconftest(NAN_SCORER_CONFTEST)  # the model is gone; its recordings answer
    result = repeated.runpytest(
        "--llmeval-runner", "replay", "--llmeval-repeats", "6", "--llmeval-run-dir", "run",
        *GATES,
    )  # fmt: skip
    assert result.ret == 1
    result.assert_outcomes(errors=3, failed=2)
    out = result.stdout.str()
    assert "r.golden.json:2: cassette error: 1 of 6 repeats errored; repeat 6: " in out
    assert "all: 0/3 passed (0.0%), 0 failed, 3 errors, 0 skipped" in out
    run = repeated.path / "run"
    rows = _rows(run)
    for row in rows.values():
        assert row["outcome"] == "error" and row["passed"] is False
        assert row["repeats"]["outcomes"] == ["passed"] * 5 + ["error"]
        assert (row["repeats"]["n"], row["repeats"]["passed"], row["repeats"]["errors"]) == (
            6, 5, 1,
        )  # fmt: skip
        assert row["repeats"]["pass_rate"] == 1.0  # over the judged runs
        assert row["error"].startswith("1 of 6 repeats errored; repeat 6: ")
    errors = _errors(run)
    assert sorted(errors) == ["alpha", "beta", "gamma"]
    assert {e["phase"] for e in errors.values()} == {"call"}
    body = _report(run)["suites"]["golden"]
    assert (body["passed"], body["failed"], body["errors"], body["total"]) == (0, 0, 3, 3)
    assert _gates(run) == {"golden.pass_rate>=0.5": "failed", "*.errors==0": "failed"}


def test_an_errored_repeat_is_an_error_under_xdist_too(repeated: pytest.Pytester) -> None:
    """The error crosses from the worker with its record: the same outcomes, status and
    counts with ``-n 2`` as in one process."""
    pytest.importorskip("xdist")
    write_json(repeated, "r.golden.json", [{"id": w, "input": w, "min_scores": {"odd": 0.5}}
                                           for w in ("ok", "down", "nan")])  # fmt: skip
    result = repeated.runpytest(
        "--llmeval-runner", "flaky", "--llmeval-repeats", "3", "-n", "2",
        "--llmeval-run-dir", "run", *GATES,
    )  # fmt: skip
    assert result.ret == 1
    result.assert_outcomes(passed=1, errors=2, failed=2)
    run = repeated.path / "run"
    rows = _rows(run)
    assert {k: r["outcome"] for k, r in rows.items()} == {
        "ok": "passed", "down": "error", "nan": "error",
    }  # fmt: skip
    assert rows["down"]["repeats"]["outcomes"] == ["passed", "error", "passed"]
    assert sorted(_errors(run)) == ["down", "nan"]
    assert _gates(run) == {"golden.pass_rate>=0.5": "failed", "*.errors==0": "failed"}


def test_one_errored_or_unjudgeable_repeat_makes_the_case_an_error(
    pytester: pytest.Pytester,
) -> None:
    """A backend fault in one run of three, or a NaN score in one: each case is an error
    under every repeat rule (``any`` would have passed it), the other runs listed. A case
    whose every run errored says how many did and lists them too."""
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(ECHO_CONFTEST + NAN_SCORER_CONFTEST)
    words = ("ok", "down", "nan", "dead")
    write_json(pytester, "r.golden.json", [{"id": w, "input": w, "min_scores": {"odd": 0.5}}
                                           for w in words])  # fmt: skip
    result = pytester.runpytest(
        "--llmeval-runner", "flaky", "--llmeval-repeats", "3", "--llmeval-repeat-rule", "any",
        "--llmeval-run-dir", "run", *GATES,
    )  # fmt: skip
    assert result.ret == 1
    result.assert_outcomes(passed=1, errors=3, failed=2)
    out = result.stdout.str()
    assert "connection error: 1 of 3 repeats errored; repeat 2: backend down" in out
    assert "score error: 1 of 3 repeats errored; repeat 3: the golden suite gave a score" in out
    assert "connection error: 3 of 3 repeats errored; repeat 1: backend dead" in out
    run = pytester.path / "run"
    rows = _rows(run)
    assert {k: r["outcome"] for k, r in rows.items()} == {
        "ok": "passed", "down": "error", "nan": "error", "dead": "error",
    }  # fmt: skip
    assert rows["down"]["repeats"]["outcomes"] == ["passed", "error", "passed"]
    assert rows["nan"]["repeats"]["outcomes"] == ["passed", "passed", "error"]
    assert rows["nan"]["scores"] == {"odd": 1.0}  # the judged runs' mean, never NaN
    assert rows["dead"]["repeats"]["outcomes"] == ["error"] * 3
    assert (rows["dead"]["repeats"]["n"], rows["dead"]["repeats"]["errors"]) == (3, 3)
    assert sorted(_errors(run)) == ["dead", "down", "nan"]
    assert _gates(run) == {"golden.pass_rate>=0.5": "failed", "*.errors==0": "failed"}


# -- every judge failure is audited --------------------------------------------------------


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _judge_run(pytester: pytest.Pytester, base_url: str, *args: str) -> Any:
    pytester.makeini("[pytest]\n")
    write_json(pytester, "j.golden.json", _judged("one", "two"))
    return pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-judge-runner", "openai",
        "--llmeval-judge-model", "test-model", "--llmeval-judge-base-url", base_url,
        "--llmeval-run-dir", "run", *GATES, *args,
    )  # fmt: skip


def _assert_judge_failed(pytester: pytest.Pytester, result: Any, problem: str) -> None:
    """Both cases are judge errors, each audited with ``problem`` in its line."""
    assert result.ret == 1
    result.assert_outcomes(errors=2, failed=2)
    run = pytester.path / "run"
    assert {k: r["outcome"] for k, r in _rows(run).items()} == {"one": "error", "two": "error"}
    assert sorted(_errors(run)) == ["one", "two"]
    audit = _audit(run)
    assert [(case, stage) for case, stage, _ in audit] == [
        ("one", "judge_error"), ("two", "judge_error"),
    ]  # fmt: skip
    for _, _, text in audit:
        assert problem in text, text
    assert _gates(run) == {"golden.pass_rate>=0.5": "failed", "*.errors==0": "failed"}


def test_a_judge_backend_that_is_down_is_audited(pytester: pytest.Pytester) -> None:
    base_url = f"http://127.0.0.1:{_closed_port()}/v1"
    result = _judge_run(pytester, base_url)
    _assert_judge_failed(pytester, result, "the judge's backend failed: connection error")


@pytest.mark.parametrize(
    ("status", "kind"), [(500, "http error"), (401, "auth error"), (400, "http error")]
)
def test_a_judge_backend_that_refuses_is_audited(
    pytester: pytest.Pytester, status: int, kind: str
) -> None:
    """A 5xx after its retries (``Retry-After: 0`` keeps them instant), a 401, a 400."""
    refusal = Reply(status=status, json={"error": {"message": "no", "type": "x"}},
                    headers={"Retry-After": "0"})  # fmt: skip
    with OpenAIServer(lambda body: refusal) as server:
        result = _judge_run(pytester, server.base_url)
        asked = len(server.chat_bodies())
    _assert_judge_failed(pytester, result, f"the judge's backend failed: {kind}")
    assert asked > 2 if status == 500 else asked == 2  # a 5xx is retried, a 4xx is not


def test_a_judge_that_times_out_is_audited(pytester: pytest.Pytester) -> None:
    """The case's time runs out while the judge is thinking."""
    slow = Reply(json={"choices": []}, delay_s=30)
    with OpenAIServer(lambda body: slow) as server:
        result = _judge_run(pytester, server.base_url, "--llmeval-timeout", "0.5")
    _assert_judge_failed(pytester, result, "the judge timed out after 0.5s")


def test_a_case_that_errors_under_repeats_is_a_baseline_regression(
    repeated: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under repeats a baseline compares Wilson intervals; an errored case is compared by its
    outcome, as without repeats: 3/3 passed, then 2 passed and 1 errored, is pass->fail (the
    intervals overlap, so it said no regression)."""
    write_json(repeated, "r.golden.json", [{"id": w, "input": w, "min_scores": {"odd": 0.5}}
                                           for w in ("ok", "down")])  # fmt: skip
    monkeypatch.setenv("LLMEVAL_TEST_UP", "1")
    base = repeated.runpytest(
        "--llmeval-runner", "flaky", "--llmeval-repeats", "3", "--llmeval-run-dir", "base",
        "--llmeval-update-baseline", "baseline.json",
    )  # fmt: skip
    base.assert_outcomes(passed=2)
    monkeypatch.delenv("LLMEVAL_TEST_UP")
    result = repeated.runpytest(
        "--llmeval-runner", "flaky", "--llmeval-repeats", "3", "--llmeval-run-dir", "run",
        "--llmeval-baseline", "baseline.json",
    )  # fmt: skip
    assert result.ret == 1
    run = repeated.path / "run"
    assert _rows(run)["down"]["repeats"]["outcomes"] == ["passed", "error", "passed"]
    diff = _report(run)["baseline"]
    assert diff["flips"]["pass->fail"] == ["r.golden.json::down"]
    assert "baseline: no regressions" not in result.stdout.str()


def test_a_judge_reply_nested_too_deeply_is_an_audited_judge_error(
    pytester: pytest.Pytester,
) -> None:
    """A reply nested past Python's recursion limit is no verdict: the judge's error, after
    the repair turn, and audited (it was a RecursionError, an unaudited agent error)."""
    deep = (
        '    "verdict-deep": \'{"scores": \' + "[" * 5000 + "]" * 5000 + "}",\n'
        '    "verdict-nested": \'{"a": \' * 5000 + "1" + "}" * 5000,\n'
    )
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(JUDGE_CONFTEST.replace("VERDICTS = {\n", "VERDICTS = {\n" + deep))
    write_json(pytester, "j.golden.json", _judged("good", "deep", "nested"))
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-judge-runner", "nan-judge",
        "--llmeval-run-dir", "run", *GATES,
    )  # fmt: skip
    assert result.ret == 1
    result.assert_outcomes(passed=1, errors=2, failed=2)  # failed: the two gates
    result.stdout.fnmatch_lines(["j.golden.json:*: judge error: *see audit.jsonl*"])
    run = pytester.path / "run"
    rows = _rows(run)
    assert {k: r["outcome"] for k, r in rows.items()} == {
        "good": "passed", "deep": "error", "nested": "error",
    }  # fmt: skip
    assert sorted(_errors(run)) == ["deep", "nested"]
    audit = _audit(run)
    assert [(case, stage) for case, stage, _ in audit] == [
        ("deep", "judge_error"), ("nested", "judge_error"),
    ]  # fmt: skip
    assert "nested too deeply to be a verdict" in audit[1][2]
    assert _gates(run) == {"golden.pass_rate>=0.5": "failed", "*.errors==0": "failed"}


# -- an impossible log-likelihood is the case's error ----------------------------------------

LOGLIK_CONFTEST = """
from pytest_llmeval.core.models import Loglik

class Scorer:
    name = "signed"
    def fingerprint(self):
        return {"type": "signed"}
    async def aclose(self):
        pass
    async def generate(self, request):
        raise AssertionError("mcq-loglik never generates")
    async def loglikelihood(self, requests):
        # the right option (cannot_answer, index 3) most likely; a context holding FLIP-ME gets
        # a positive "log-likelihood" for option 0, NEG-ME a negative token count
        out = []
        for i, r in enumerate(requests):
            value, tokens = (-1.0 if i == 3 else -5.0), 3
            if "FLIP-ME" in r.context and i == 0:
                value = 2.0
            if "NEG-ME" in r.context and i == 1:
                tokens = -4
            out.append(Loglik(logprob_sum=value, token_count=tokens,
                              char_length=len(r.continuation),
                              byte_length=len(r.continuation.encode())))
        return out

def pytest_llmeval_register_runners(registry):
    registry.register("signed", lambda settings: Scorer())
"""


def _w2c_row(uuid: str, question: str) -> dict[str, Any]:
    tool = {"name": "get_weather", "description": "Weather of a city.",
            "parameters": {"type": "dict", "required": ["city"],
                           "properties": {"city": {"type": "string"}}}}  # fmt: skip
    return {
        "uuid": uuid, "source": "test", "source_id": uuid, "question": question,
        "correct_answer": "cannot_answer", "target_tool": None, "tools": [json.dumps(tool)],
        "answers": {
            "direct": "It is sunny.",
            "tool_call": json.dumps({"name": "get_weather", "arguments": {"city": "Oslo"}}),
            "request_for_info": "Which city?",
            "cannot_answer": "I cannot tell.",
        },
    }  # fmt: skip


def test_a_positive_log_likelihood_is_the_cases_error_never_a_pick(
    pytester: pytest.Pytester,
) -> None:
    """A log-probability sum is at most 0: a runner that answers +2.0 has a sign slip, and
    picking by it would score a guess. That case is a protocol error; the others are judged."""
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(LOGLIK_CONFTEST)
    rows = [_w2c_row("ok", "Can you read my mind?"), _w2c_row("flip", "FLIP-ME please"),
            _w2c_row("neg", "NEG-ME please")]  # fmt: skip
    path = pytester.path / "when2call_rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = pytester.runpytest(
        "--llmeval-runner", "signed", "--llmeval-run-dir", "run",
        "--llmeval-gate", "when2call.acc>=0.5", "--llmeval-exit-on", "gates",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    rows_out = {r["case_id"]: r for r in read_jsonl(pytester.path / "run" / "results.jsonl")}
    assert {k: r["outcome"] for k, r in rows_out.items()} == {
        "ok": "passed", "flip": "error", "neg": "error",
    }  # fmt: skip
    assert "option 0: logprob_sum 2.0" in rows_out["flip"]["error"]
    assert "option 1: token_count -4" in rows_out["neg"]["error"]
    body = json.loads((pytester.path / "run" / "report.json").read_text())
    assert body["suites"]["when2call"]["errors"] == 2


# -- a user's agent that breaks the reply contract is the case's agent error -----------------

REPLY_CONFTEST = """
import pytest

REPLIES = {
    "no-response": {"foo": 1},
    "null-response": {"response": None},
    "string-success": {"response": "ok", "toolCalls": [{"name": "t", "success": "false"}]},
    "calls-not-a-list": {"response": "ok", "toolCalls": "t"},
    "nameless-call": {"response": "ok", "toolCalls": [{"success": True}]},
    "string-duration": {"response": "ok", "durationMs": "5"},
    "params-a-list": {"response": "ok", "toolCalls": [{"name": "t", "params": [1]}]},
    "good": {"response": "good", "toolCalls": [{"name": "t", "success": True}]},
}

class Replier:
    def run(self, case, broker):
        return REPLIES[case.user_message]

@pytest.fixture(scope="session")
def llmeval_agent():
    return Replier()
"""

BAD_REPLIES = {
    "no-response": "field 'response': expected a string, got nothing (missing)",
    "null-response": "field 'response': expected a string, got null",
    "string-success": "field 'toolCalls[0].success': expected a boolean, got a string",
    "calls-not-a-list": "field 'toolCalls': expected an array, got a string",
    "nameless-call": "field 'toolCalls[0].name': expected a non-empty string, got null",
    "string-duration": "field 'durationMs': expected a number, got a string",
    "params-a-list": "field 'toolCalls[0].params': expected an object, got an array",
}


def test_an_agent_reply_that_breaks_the_contract_is_the_cases_error(
    pytester: pytest.Pytester,
) -> None:
    """``{"foo": 1}`` is no empty answer, ``{"response": null}`` no "None" and
    ``"success": "false"`` no success: each is that case's agent error, red under
    ``--llmeval-exit-on gates`` too, never an expected miss."""
    pytester.makeconftest(REPLY_CONFTEST)
    rows = [{"id": k, "input": k, "expected_output": "never"} for k in BAD_REPLIES]
    rows.append({"id": "good", "input": "good", "expected_output": "good"})
    write_json(pytester, "qa.golden.json", rows)
    result = pytester.runpytest(
        "--llmeval-run-dir", "run", "--llmeval-exit-on", "gates",
        "--llmeval-gate", "golden.pass_rate>=0.0",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2, errors=len(BAD_REPLIES))  # good and the gate pass
    out = {r["case_id"]: r for r in read_jsonl(pytester.path / "run" / "results.jsonl")}
    assert out["good"]["outcome"] == "passed"
    for case_id, message in BAD_REPLIES.items():
        assert out[case_id]["outcome"] == "error", case_id
        assert out[case_id]["xfailed"] is False, case_id
        assert message in out[case_id]["error"], (case_id, out[case_id]["error"])
