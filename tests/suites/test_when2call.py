"""The When2Call suite through pytest: manifests, claiming by content, errors, both protocols."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.suites.when2call_metrics import LABELS
from pytest_llmeval.suites.when2call_prompts import build_prompt, tool_call_option
from pytest_llmeval.testing.openai_server import ChatAnswer, OpenAIServer, tool_call
from tests.conftest import W2C_FILE, read_jsonl, write_jsonl

# A model that scores text: LL = -sqrt(len(continuation)), so `acc` picks the shortest option
# and `acc_norm` (LL per character, -1/sqrt(len)) the longest. A context holding NAN-ME gets
# a NaN for its first option. It remembers what it was asked, for the tests to read.
SCORER_CONFTEST = """
import json, math, os

class Scorer:
    name = "scorer"

    def fingerprint(self):
        return {"type": "scorer"}

    async def aclose(self):
        pass

    async def generate(self, request):
        raise AssertionError("mcq-loglik never generates")

    async def loglikelihood(self, requests):
        out = []
        log = os.environ.get("SCORER_LOG")
        for i, r in enumerate(requests):
            value = -math.sqrt(len(r.continuation))
            if "NAN-ME" in r.context and i == 0:
                value = float("nan")
            out.append({"logprob_sum": value, "token_count": max(1, len(r.continuation) // 4),
                        "char_length": len(r.continuation),
                        "byte_length": len(r.continuation.encode())})
            if log:
                asked = {"context": r.context, "continuation": r.continuation}
                with open(log, "a") as f:
                    f.write(json.dumps(asked) + "\\n")
        from pytest_llmeval.core.models import Loglik
        return [Loglik(**x) for x in out]


def pytest_llmeval_register_runners(registry):
    registry.register("scorer", lambda settings: Scorer())
"""


def _rows(n: int | None = None) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in W2C_FILE.read_text(encoding="utf-8").splitlines()]
    return rows if n is None else rows[:n]


def _run_dir(pytester: pytest.Pytester) -> Path:
    (run,) = [p for p in (pytester.path / ".llmeval" / "runs").iterdir() if p.name != "latest"]
    return run


def _report(pytester: pytest.Pytester) -> dict[str, Any]:
    return json.loads((_run_dir(pytester) / "report.json").read_text())  # type: ignore[no-any-return]


def _expected_pick(row: dict[str, Any], rule: str, fmt: Any = "default", delim: str = "") -> str:
    answers = dict(row["answers"])
    call = answers["tool_call"]
    answers["tool_call"] = tool_call_option(fmt, call, json.loads(call))
    conts = [delim + answers[label] for label in LABELS]
    if rule == "acc":
        scores = [-math.sqrt(len(c)) for c in conts]
    else:
        scores = [-math.sqrt(len(c)) / len(c) for c in conts]
    best = max(range(4), key=lambda i: (scores[i], -i))
    return LABELS[best]


@pytest.fixture
def w2c(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(SCORER_CONFTEST)
    return pytester


def test_the_300_rows_run_and_report_the_official_metrics(w2c: pytest.Pytester) -> None:
    rows = _rows()
    shutil.copy(W2C_FILE, w2c.path / "when2call_test_llm_judge.jsonl")
    (w2c.path / "w2c.llmeval.yaml").write_text(
        "suite: when2call\ndata: when2call_test_llm_judge.jsonl\n"
        "gates:\n  - acc_norm >= 0.0\n  - tool_hallucination_n == 17\n",
        encoding="utf-8",
    )
    result = w2c.runpytest("--llmeval-runner", "scorer", "-p", "no:cacheprovider")
    expected = {r["uuid"]: _expected_pick(r, "acc_norm") for r in rows}
    passed = sum(expected[r["uuid"]] == r["correct_answer"] for r in rows)
    result.assert_outcomes(passed=passed + 2, failed=300 - passed)  # + the two gates
    results = {r["case_id"]: r for r in read_jsonl(_run_dir(w2c) / "results.jsonl")}
    assert len(results) == 300
    first = rows[0]
    details = results[first["uuid"]]["details"]
    answers = [first["answers"][label] for label in LABELS]
    assert details["loglik"] == [-math.sqrt(len(a)) for a in answers]
    assert details["gold"] == first["correct_answer"]
    assert details["pred"] == details["pred_acc_norm"] == expected[first["uuid"]]
    assert details["pred_acc"] == _expected_pick(first, "acc")
    assert {"pred_acc_bytes", "pred_acc_tokens", "truncated", "tokens"} <= details.keys()
    assert results[first["uuid"]]["category"] == first["correct_answer"]

    body = _report(w2c)["suites"]["when2call"]
    acc = sum(_expected_pick(r, "acc") == r["correct_answer"] for r in rows) / 300
    assert body["acc"] == pytest.approx(acc, abs=1e-6)
    assert body["acc_norm"] == pytest.approx(passed / 300, abs=1e-6)
    for key in ("acc_stderr", "acc_norm_stderr", "acc_bytes", "acc_tokens", "macro_f1_3"):
        assert isinstance(body[key], float)
    assert (body["n"], body["protocol"], body["primary"]) == (300, "mcq-loglik", "acc_norm")
    assert body["labels"] == list(LABELS)
    matrix = body["confusion_matrix"]
    assert [sum(row) for row in matrix] == [0, 100, 100, 100]
    zero_tool = [r for r in rows if r["correct_answer"] == "cannot_answer" and not r["tools"]]
    halluc = sum(expected[r["uuid"]] == "tool_call" for r in zero_tool)
    assert body["tool_hallucination_n"] == 17
    assert body["tool_hallucination_rate"] == pytest.approx(halluc / 17, abs=1e-6)
    assert set(body["per_class"]) == set(LABELS)
    gates = _report(w2c)["gates"]
    assert gates["passed"] is True and len(gates["results"]) == 2
    out = result.stdout.str()
    assert re.search(r"when2call when2call_test_llm_judge.jsonl: mcq-loglik, n=300, acc_norm", out)
    assert "gold \\ predicted" in out
    summary = (_run_dir(w2c) / "summary.md").read_text()
    assert (
        "| gold \\ predicted | direct | tool_call | request_for_info | cannot_answer |" in summary
    )


def test_markers_select_a_gold_category(w2c: pytest.Pytester) -> None:
    write_jsonl(w2c, "when2call_rows.jsonl", _rows()[95:105])  # 5 cannot_answer, 5 rfi
    result = w2c.runpytest("--llmeval-runner", "scorer", "-m", "cannot_answer", "-q")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 5
    assert outcomes["deselected"] == 5


def test_a_file_named_on_the_command_line_is_claimed_by_content(w2c: pytest.Pytester) -> None:
    write_jsonl(w2c, "some_rows.jsonl", _rows(3))
    result = w2c.runpytest("some_rows.jsonl", "--llmeval-runner", "scorer", "--co", "-q")
    result.stdout.fnmatch_lines(["some_rows.jsonl::276e4475-*", "3 tests collected*"])
    quiet = w2c.runpytest("--llmeval-runner", "scorer", "--co", "-q")
    assert "some_rows.jsonl" not in quiet.stdout.str()  # not a default glob: asked for only


def test_prompt_format_and_delimiter_reach_the_runner_and_the_fingerprint(
    w2c: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    row = _rows()[4]
    write_jsonl(w2c, "data/rows.jsonl", [row])
    (w2c.path / "a.llmeval.yaml").write_text("suite: when2call\ndata: data/rows.jsonl\n")
    (w2c.path / "b.llmeval.yaml").write_text(
        "suite: when2call\ndata: data/rows.jsonl\nprompt_format: hermes\ntarget_delimiter: ' '\n"
        "score: acc\n"
    )
    log = w2c.path / "asked.jsonl"
    monkeypatch.setenv("SCORER_LOG", str(log))
    w2c.runpytest("--llmeval-runner", "scorer").assert_outcomes(
        passed=int(_expected_pick(row, "acc_norm") == row["correct_answer"])
        + int(_expected_pick(row, "acc", "hermes", " ") == row["correct_answer"]),
        failed=2
        - int(_expected_pick(row, "acc_norm") == row["correct_answer"])
        - int(_expected_pick(row, "acc", "hermes", " ") == row["correct_answer"]),
    )
    asked = read_jsonl(log)
    contexts = {a["context"] for a in asked}
    assert contexts == {
        build_prompt("default", row["question"], [], []),
        build_prompt("hermes", row["question"], [], []),
    }
    hermes = [a["continuation"] for a in asked if a["context"].startswith("<|im_start|>")]
    call = row["answers"]["tool_call"]
    assert hermes == [
        " " + row["answers"]["direct"],
        " <tool_call>" + call + "\n</tool_call>",
        " " + row["answers"]["request_for_info"],
        " " + row["answers"]["cannot_answer"],
    ]
    results = read_jsonl(_run_dir(w2c) / "results.jsonl")
    assert len({r["case_fingerprint"] for r in results}) == 2
    assert {r["details"]["primary"] for r in results} == {"acc", "acc_norm"}


def test_broken_rows_are_their_own_errors(w2c: pytest.Pytester) -> None:
    good = _rows(2)
    bad_tools = {**good[0], "uuid": "bad-tools", "tools": ["{not json"]}
    no_cannot = {
        **good[0],
        "uuid": "no-cannot",
        "answers": {k: v for k, v in good[0]["answers"].items() if k != "cannot_answer"},
    }
    bad_label = {**good[0], "uuid": "bad-label", "correct_answer": "maybe"}
    bad_call = {
        **good[0],
        "uuid": "bad-call",
        "answers": {**good[0]["answers"], "tool_call": "[1, 2]"},
    }
    path = write_jsonl(w2c, "when2call_broken.jsonl", [good[0], bad_tools, no_cannot])
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"uuid": "cut", "question": \n')
        handle.write(json.dumps(bad_label) + "\n" + json.dumps(bad_call) + "\n")
        handle.write(json.dumps(good[1]) + "\n")
    result = w2c.runpytest("--llmeval-runner", "scorer", "-p", "no:cacheprovider")
    right = sum(_expected_pick(r, "acc_norm") == r["correct_answer"] for r in good)
    result.assert_outcomes(errors=5, passed=right, failed=2 - right)
    out = result.stdout.str()
    assert "when2call_broken.jsonl:2: tools[0]: not valid JSON" in out
    assert "when2call_broken.jsonl:3: answers.cannot_answer: missing" in out
    assert "when2call_broken.jsonl:4:" in out
    assert "when2call_broken.jsonl:5: correct_answer: expected one of direct, tool_call" in out
    assert "when2call_broken.jsonl:6: answers.tool_call: expected a JSON object" in out
    body = _report(w2c)["suites"]["when2call"]
    assert (body["n"], body["errors"]) == (2, 5)


def test_a_file_whose_first_row_is_broken_is_still_claimed(w2c: pytest.Pytester) -> None:
    """The file is When2Call by the shape of its rows, not of its first row; the
    broken first row is that row's error."""
    good = _rows(2)
    first = {k: v for k, v in good[0].items() if k != "tools"} | {"uuid": "no-tools"}
    write_jsonl(w2c, "when2call_first.jsonl", [first, *good])
    result = w2c.runpytest("--llmeval-runner", "scorer", "-p", "no:cacheprovider")
    right = sum(_expected_pick(r, "acc_norm") == r["correct_answer"] for r in good)
    result.assert_outcomes(errors=1, passed=right, failed=2 - right)
    result.stdout.fnmatch_lines(["when2call_first.jsonl:1: tools: *"])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("protocol: judge", "LLM-as-judge protocol needs a judge model: give --llmeval-judge"),
        ("prompt_format: chatml", "expected one of default, hermes, qwen2_5, llama3_2, xlam"),
        ("score: f1", "expected one of acc_norm, acc, acc_bytes, acc_tokens, got 'f1'"),
        ("treshold: 3", "treshold: unknown option; when2call options are"),
        ("protocol: mcq-string\nscore: acc_norm", "mcq-string picks one label per case"),
    ],
)
def test_bad_manifest_options_are_one_clear_error(
    w2c: pytest.Pytester, line: str, message: str
) -> None:
    write_jsonl(w2c, "data/rows.jsonl", _rows(2))
    (w2c.path / "w.llmeval.yaml").write_text(f"suite: when2call\ndata: data/rows.jsonl\n{line}\n")
    result = w2c.runpytest("--llmeval-runner", "scorer")
    result.assert_outcomes(errors=1)
    assert message in result.stdout.str()


def test_non_finite_scores_are_an_error_never_a_pick(w2c: pytest.Pytester) -> None:
    rows = _rows(2)
    rows[0] = {**rows[0], "question": rows[0]["question"] + " NAN-ME"}
    write_jsonl(w2c, "when2call_nan.jsonl", rows)
    result = w2c.runpytest("--llmeval-runner", "scorer")
    right = int(_expected_pick(rows[1], "acc_norm") == rows[1]["correct_answer"])
    result.assert_outcomes(errors=1, passed=right, failed=1 - right)
    assert "protocol error: non-finite log-likelihood (option 0: nan)" in result.stdout.str()


def test_a_runner_that_cannot_score_is_a_clear_error(w2c: pytest.Pytester) -> None:
    write_jsonl(w2c, "when2call_rows.jsonl", _rows(2))
    result = w2c.runpytest("--llmeval-runner", "echo")
    result.assert_outcomes(errors=2)
    assert "runner 'echo' cannot score log-likelihoods" in result.stdout.str()


def test_mcq_string_on_a_loopback_server(w2c: pytest.Pytester) -> None:
    rows = _rows()[95:101]  # cannot_answer x5, request_for_info x1
    write_jsonl(w2c, "data/rows.jsonl", rows)
    (w2c.path / "s.llmeval.yaml").write_text(
        "suite: when2call\ndata: data/rows.jsonl\nprotocol: mcq-string\n"
    )
    replies = {
        rows[0]["question"]: "3",  # right
        rows[1]["question"]: "The best response is 1.",  # tool_call, wrong
        rows[2]["question"]: "I cannot tell.",  # unparsed
        rows[3]["question"]: "Option 3, surely",  # right
        rows[4]["question"]: "9 then 2",  # first digit 0-3 is 2: request_for_info, wrong
        rows[5]["question"]: "2",  # right (request_for_info)
    }

    def brain(body: dict[str, Any]) -> ChatAnswer:
        user = body["messages"][-1]["content"]
        assert body["messages"][0]["role"] == "system" and "tools" not in body
        for question, reply in replies.items():
            if question in user:
                return ChatAnswer(content=reply)
        return ChatAnswer(content="?")

    with OpenAIServer(brain) as server:
        result = w2c.runpytest(
            "--llmeval-runner", "openai", "--llmeval-base-url", server.base_url,
            "--llmeval-model", "test-model",
        )  # fmt: skip
        bodies = server.chat_bodies()
    result.assert_outcomes(passed=3, failed=3)
    (user,) = [
        b["messages"][-1]["content"]
        for b in bodies
        if rows[0]["question"] in b["messages"][-1]["content"]
    ]
    for i, label in enumerate(LABELS):
        shown = rows[0]["answers"][label]
        assert f"{i}. {shown}" in user
    results = {r["case_id"]: r["details"] for r in read_jsonl(_run_dir(w2c) / "results.jsonl")}
    unparsed = results[rows[2]["uuid"]]
    assert (unparsed["unparsed"], unparsed["pred"], unparsed["reply"]) == (
        True,
        None,
        "I cannot tell.",
    )
    assert results[rows[4]["uuid"]]["parsed_index"] == 2
    body = _report(w2c)["suites"]["when2call"]
    assert (body["protocol"], body["primary"], body["unparsed"], body["n"]) == (
        "mcq-string",
        "acc",
        1,
        6,
    )
    assert body["acc"] == pytest.approx(0.5)
    assert body["acc_norm"] is None
    assert body["confusion_matrix"][3] == [0, 1, 1, 2]  # the unparsed reply is in no column
    assert body["per_class"]["cannot_answer"]["recall"] == pytest.approx(0.4)


def test_the_llm_as_judge_protocol_on_the_300_rows(w2c: pytest.Pytester) -> None:
    rows = _rows()
    shutil.copy(W2C_FILE, w2c.path / "when2call_test_llm_judge.jsonl")
    (w2c.path / "w2c.llmeval.yaml").write_text(
        "suite: when2call\ndata: when2call_test_llm_judge.jsonl\nprotocol: judge\n"
    )
    # the target: calls the first tool offered for "tool_call" questions of rows it has tools
    # for, asks back when the question mentions a number, else declines
    asked_tools: list[Any] = []

    def target(body: dict[str, Any]) -> ChatAnswer:
        assert len(body["messages"]) == 1 and body["messages"][0]["role"] == "user"
        tools = body.get("tools") or []
        asked_tools.append(tools)
        question = body["messages"][0]["content"]
        if tools and len(question) % 2 == 0:
            name = tools[0]["function"]["name"]
            return ChatAnswer(tool_calls=[tool_call(name, {"q": question[:20]}, id="c1")])
        if any(ch.isdigit() for ch in question):
            return ChatAnswer(content="Which account do you mean?")
        return ChatAnswer(content="Sorry, I cannot do that.")

    def judge(body: dict[str, Any]) -> ChatAnswer:
        prompt = body["messages"][0]["content"]
        response = prompt.split("<AI_MODEL_RESPONSE>")[1]
        assert body["response_format"]["json_schema"]["schema"]["required"] == ["classification"]
        if '"name"' in response:
            label = "tool_call"
        elif "?" in response:
            label = "request_for_info"
        else:
            label = "cannot_answer"
        return ChatAnswer(content=json.dumps({"classification": label}))

    with OpenAIServer(target) as model, OpenAIServer(judge) as judge_server:
        result = w2c.runpytest(
            "--llmeval-runner", "openai", "--llmeval-base-url", model.base_url,
            "--llmeval-model", "test-model", "--llmeval-judge-runner", "openai",
            "--llmeval-judge-base-url", judge_server.base_url, "--llmeval-run-dir", "run",
            "-p", "no:cacheprovider",
        )  # fmt: skip
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 300, result.stdout.str()[-3000:]
    names = {t["function"]["name"] for tools in asked_tools for t in tools}
    assert names and not any("." in n for n in names)  # dots became underscores
    for tools in asked_tools:
        for tool in tools:
            props = tool["function"]["parameters"].get("properties", {})
            assert all(p.get("type") == "string" for p in props.values())
    assert sum(1 for tools in asked_tools if not tools) == 17  # no tools: none sent
    results = {r["case_id"]: r["details"] for r in read_jsonl(w2c.path / "run" / "results.jsonl")}
    expected = {}
    for row in rows:
        q = row["question"]
        if row["tools"] and len(q) % 2 == 0:
            expected[row["uuid"]] = "tool_call"
        elif any(ch.isdigit() for ch in q):
            expected[row["uuid"]] = "request_for_info"
        else:
            expected[row["uuid"]] = "cannot_answer"
    assert {u: d["pred"] for u, d in results.items()} == expected
    body = json.loads((w2c.path / "run" / "report.json").read_text())["suites"]["when2call"]
    assert body["protocol"] == "judge" and body["n"] == 300
    for label in ("tool_call", "request_for_info", "cannot_answer"):
        gold = [r for r in rows if r["correct_answer"] == label]
        hits = sum(expected[r["uuid"]] == label for r in gold)
        assert body["per_gold_accuracy"][label] == pytest.approx(hits / len(gold), abs=1e-6)
        assert sum(body["label_counts"][label].values()) == len(gold)
    cannot = [r for r in rows if r["correct_answer"] == "cannot_answer"]
    all_rate = sum(expected[r["uuid"]] == "tool_call" for r in cannot) / len(cannot)
    assert body["tool_hallucination_rate_all"] == pytest.approx(all_rate, abs=1e-6)
    assert (body["tool_hallucination_n"], body["tool_hallucination_all_n"]) == (17, 100)


def test_repeats_report_the_stability_metrics(w2c: pytest.Pytester) -> None:
    rows = _rows()[95:105]
    write_jsonl(w2c, "when2call_rows.jsonl", rows)
    w2c.runpytest(
        "--llmeval-runner", "scorer", "--llmeval-repeats", "3", "--llmeval-run-dir", "run"
    )
    body = json.loads((w2c.path / "run" / "report.json").read_text())["suites"]["when2call"]
    right = sum(_expected_pick(r, "acc_norm") == r["correct_answer"] for r in rows) / len(rows)
    stable = body["stability"]  # a deterministic scorer: every run picks the same label
    assert (stable["stability_at_k"], stable["flip_rate"], stable["normalized_entropy"]) == (
        1,
        0,
        0,
    )
    assert stable["mean_acc_across_runs"] == pytest.approx(right, abs=1e-6)
    assert stable["mode_correct_rate"] == pytest.approx(right, abs=1e-6)
    assert body["pass_at_k"]["3"] == pytest.approx(right, abs=1e-6)
    details = read_jsonl(w2c.path / "run" / "results.jsonl")[0]["details"]
    assert len(details["repeat_labels"]) == 3
