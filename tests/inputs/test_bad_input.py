"""Bad input: every broken case is one clear error naming path:line and the field; the rest runs."""

from __future__ import annotations

import json
import os
import tracemalloc
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_llmeval.core.errors import CaseFileError
from pytest_llmeval.inputs.manifest import read_manifest
from pytest_llmeval.report.gates import parse_gate, parse_gate_spec
from pytest_llmeval.testing.openai_server import ChatAnswer, OpenAIServer
from tests.conftest import answering_runner, read_jsonl, write_json

GOOD = {"id": "good", "input": "same", "expected_output": "same"}


def _errors(result: pytest.RunResult) -> str:
    return result.stdout.str()


def test_bad_input_corpus(scripted: pytest.Pytester) -> None:
    lines = [
        '{"id": "ok-1", "input": "hi", "expected_output": "hi"}',
        '{"id": "broken", "input": "hi", ',  # malformed JSON
        '{"id": "wrong-type", "input": "hi", "expected_output": 42}',
        '{"id": "missing", "expected_output": "x"}',  # no input
        '{"id": "ok-1", "input": "again", "expected_output": "again"}',  # duplicate id
        '{"id": "typo", "input": "x", "expected_outptu": "x"}',  # unknown field
        '{"id": "scorer", "input": "x", "min_scores": {"correctness": 0.9}}',  # unknown scorer
        "",
        '{"id": "ok-2", "input": "yo", "expected_output": "yo"}',
    ]
    data = "\n".join(lines).encode() + b'\n{"id": "bad-utf8", "input": "\xff\xfe"}\n'
    (scripted.path / "cases.eval.jsonl").write_bytes(data)
    write_json(scripted, "fine.golden.json", [GOOD])
    result = scripted.runpytest("--llmeval-runner", "echo", "-q", "-rE")
    out = _errors(result)
    for expected in (
        "cases.eval.jsonl:2: invalid JSON:",
        "cases.eval.jsonl:3: expected_output: expected a string, got a number",
        "cases.eval.jsonl:4: input: expected a string or a non-empty array",
        "cases.eval.jsonl:5: id: duplicate case id 'ok-1' (first defined at line 1)",
        "cases.eval.jsonl:6: expected_outptu: unknown field; expected one of id, category,",
        "cases.eval.jsonl:7: min_scores.correctness: no scorer named 'correctness'",
        "cases.eval.jsonl:10: invalid UTF-8 at byte",
    ):
        assert expected in out, expected
    # the good cases in the same file and in another file still ran
    result.assert_outcomes(passed=3, errors=7)
    run_dir = next((scripted.path / ".llmeval" / "runs").iterdir())
    rows = {r["nodeid"]: r for r in read_jsonl(run_dir / "results.jsonl")}
    assert rows["cases.eval.jsonl::line2"]["outcome"] == "error"
    # a row that parses is named by its id, and its problem is that case's error
    assert rows["cases.eval.jsonl::wrong-type"]["error"].startswith(
        "cases.eval.jsonl:3: expected_output: expected a string"
    )
    assert rows["cases.eval.jsonl::wrong-type"]["line"] == 3
    assert rows["cases.eval.jsonl::ok-1@line5"]["error"].startswith("cases.eval.jsonl:5: id:")
    assert rows["cases.eval.jsonl::ok-2"]["outcome"] == "passed"
    errors = read_jsonl(run_dir / "errors.jsonl")
    assert len(errors) == 7


def test_empty_file_is_not_an_error(scripted: pytest.Pytester) -> None:
    (scripted.path / "empty.eval.jsonl").write_text("")
    (scripted.path / "blank.golden.json").write_text("  \n")
    write_json(scripted, "fine.golden.json", [GOOD])
    result = scripted.runpytest("--llmeval-runner", "echo", "-q")
    result.assert_outcomes(passed=1)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads unreadable files")
def test_unreadable_file_is_one_error(scripted: pytest.Pytester) -> None:
    path = write_json(scripted, "locked.golden.json", [GOOD])
    path.chmod(0)
    write_json(scripted, "fine.golden.json", [GOOD])
    result = scripted.runpytest("--llmeval-runner", "echo", "-q")
    result.assert_outcomes(passed=1, errors=1)


def test_unreadable_path_is_one_error(scripted: pytest.Pytester) -> None:
    # a directory named like an eval file cannot be read as a file (works as root too)
    (scripted.path / "dir.eval.jsonl").mkdir()
    (scripted.path / "dir.eval.jsonl" / "x.txt").write_text("")
    write_json(scripted, "fine.golden.json", [GOOD])
    result = scripted.runpytest("--llmeval-runner", "echo", "-q")
    result.assert_outcomes(passed=1)


def test_file_no_suite_claims(scripted: pytest.Pytester) -> None:
    write_json(scripted, "mystery.eval.json", [{"question": "?", "answer": "!"}])
    write_json(scripted, "fine.golden.json", [GOOD])
    result = scripted.runpytest("--llmeval-runner", "echo", "-q")
    result.stdout.fnmatch_lines(["mystery.eval.json:1: no suite recognises this file*"])
    result.assert_outcomes(passed=1, errors=1)


def test_json_array_syntax_error_keeps_earlier_cases(scripted: pytest.Pytester) -> None:
    text = '[\n  {"id": "a", "input": "a", "expected_output": "a"},\n  {"id": "b", "input": \n]\n'
    (scripted.path / "half.golden.json").write_text(text)
    result = scripted.runpytest("--llmeval-runner", "echo", "-q")
    result.stdout.fnmatch_lines(["half.golden.json:4: invalid JSON*"])
    result.assert_outcomes(passed=1, errors=1)


def _laughs(levels: int = 9) -> str:
    """A "billion laughs" gates list: each anchor repeats the one before nine times."""
    text = 'l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n'
    for i in range(1, levels):
        text += f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n"
    return text + f"gates: *l{levels - 1}\n"


BAD_MANIFESTS = {
    "typo": "suite: golden\ndata: data.json\ntreshold:\n  kw: {regex: 1.0}\n",
    "w2c-typo": "suite: when2call\ndata: data.json\nthresholds: {kw: {regex: 1.0}}\n",
    "repeats": "suite: golden\ndata: data.json\nrepeats: many\n",
    "zero": "# five runs\nsuite: golden\ndata: data.json\nrepeats: 0\n",
    "misses": "suite: golden\ndata: data.json\nmisses: sometimes\n",
    "nested": "suite: golden\ndata: data.json\nthresholds:\n  kw:\n    regex: high\n",
    "scalar": "suite: golden\ndata: data.json\nthresholds: 5\n",
    "no-suite": "data: data.json\n",
    "empty-data": "suite: golden\ndata: ''\n",
    "nul": 'suite: golden\ndata: "da\\0ta.json"\n',
    "long": "suite: golden\ndata: " + "x" * 5000 + "\n",
    "bomb": "suite: golden\ndata: data.json\n" + _laughs(),
    "cycle": "suite: golden\ndata: data.json\ngates: &g [*g]\n",
}


def test_bad_manifests_are_one_error_each(scripted: pytest.Pytester) -> None:
    write_json(scripted, "data.json", [GOOD])
    for name, text in BAD_MANIFESTS.items():
        (scripted.path / f"{name}.llmeval.yaml").write_text(text)
    (scripted.path / "big.llmeval.yaml").write_text(
        "suite: golden\ndata: data.json\ndescription: " + "x" * (1 << 20) + "\n"
    )
    write_json(scripted, "fine.golden.json", [GOOD])
    result = scripted.runpytest("--llmeval-runner", "echo", "-q", "-rE")
    out = _errors(result)
    for expected in (
        "typo.llmeval.yaml:3: treshold: unknown option; did you mean 'thresholds'? golden "
        "options are description, gates, judge_fallback, misses, repeats, thresholds",
        "w2c-typo.llmeval.yaml:3: thresholds: unknown option; when2call options are ",
        "repeats.llmeval.yaml:3: repeats: expected a whole number, got a string",
        "zero.llmeval.yaml:4: repeats: expected a whole number >= 1, got 0",
        "misses.llmeval.yaml:3: misses: expected one of fail, xfail, got 'sometimes'",
        "nested.llmeval.yaml:5: thresholds.kw.regex: expected a number, got a string",
        "scalar.llmeval.yaml:3: thresholds: expected an object or null, got a number",
        "no-suite.llmeval.yaml: suite: missing required field (a string)",
        "empty-data.llmeval.yaml:2: data: expected a non-empty string",
        "nul.llmeval.yaml:2: data: 'da\\x00ta.json' cannot be used as a path: embedded null byte",
        "long.llmeval.yaml:2: data: '"
        + "x" * 200
        + "… [clipped: 5000 characters in all]' cannot be used as a path: File name",
        "bomb.llmeval.yaml:8: the document expands to more than 100,000 values (YAML aliases",
        "cycle.llmeval.yaml:3: a YAML alias refers to the value that contains it",
        "big.llmeval.yaml: the file is larger than 1 MiB; at most 1 MiB is read",
    ):
        assert expected in out, expected
    # every bad manifest is one error item; the good file still ran
    result.assert_outcomes(passed=1, errors=len(BAD_MANIFESTS) + 1)


def test_an_alias_bomb_is_refused_before_any_value_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "bomb.llmeval.yaml"
    path.write_text("suite: golden\ndata: data.json\n" + _laughs(levels=12))  # 9**12 values

    def construct(self: object, node: object) -> object:
        raise AssertionError("values were built from a document over the limits")

    monkeypatch.setattr(yaml.SafeLoader, "construct_document", construct)
    tracemalloc.start()
    try:
        with pytest.raises(CaseFileError, match="expands to more than 100,000 values"):
            read_manifest(path, "bomb.llmeval.yaml")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 1024 * 1024


# ------------------------------------------------------------------ text that is not Unicode

SURROGATE_CONFTEST = answering_runner(
    "surrogates", '"surrogate" in text', '"broken \\ud800 answer"'
)

SURROGATE_CASES = [GOOD, {"id": "odd", "input": "a surrogate please", "expected_output": "x"}]


def _assert_reports_written(run_dir: Path, junit: Path | None = None) -> dict[str, dict[str, Any]]:
    """Every report of the run exists, is valid UTF-8 and parses; the results by case id."""
    for name in ("summary.md", "report.html", "errors.jsonl", "manifest.json"):
        (run_dir / name).read_text(encoding="utf-8")
    json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
    if junit is not None:
        ET.fromstring(junit.read_text(encoding="utf-8"))
    return {r["case_id"]: r for r in read_jsonl(run_dir / "results.jsonl")}


def test_lone_surrogates_in_data_files_are_that_rows_error(scripted: pytest.Pytester) -> None:
    rows = [
        '{"id": "a", "input": "a\\ud800b", "expected_output": "ab"}',
        '{"id": "b\\udfff", "input": "b", "expected_output": "b"}',
        '{"id": "ok", "input": "ok", "expected_output": "ok"}',
    ]
    data = "\n".join(rows).encode() + b'\n{"id": "cesu", "input": "\xed\xa0\x80"}\n'
    (scripted.path / "odd.eval.jsonl").write_bytes(data)
    (scripted.path / "odd.golden.json").write_text(
        '[\n {"id": "fine", "input": "f", "expected_output": "f"},\n'
        ' {"id": "x", "input": [{"role": "user", "content": "\\udc80"}],\n'
        '  "expected_output": "x"}\n]\n'
    )
    write_json(scripted, "fine.golden.json", [GOOD])
    result = scripted.runpytest(
        "--llmeval-runner", "echo", "-rE", "--llmeval-run-dir", "run", "--junitxml", "junit.xml"
    )
    out = result.stdout.str()
    for expected in (
        "odd.eval.jsonl:1: input: not valid Unicode: a lone surrogate \\ud800 at character 2",
        "odd.eval.jsonl:2: id: not valid Unicode: a lone surrogate \\udfff at character 2",
        "odd.eval.jsonl:4: invalid UTF-8 at byte",
        "odd.golden.json:3: input[0].content: not valid Unicode: a lone surrogate \\udc80",
    ):
        assert expected in out, expected
    result.assert_outcomes(passed=3, errors=4)
    results = _assert_reports_written(scripted.path / "run", scripted.path / "junit.xml")
    assert results["ok"]["outcome"] == results["fine"]["outcome"] == "passed"


def test_a_lone_surrogate_in_a_models_answer_is_that_cases_error(
    scripted: pytest.Pytester,
) -> None:
    scripted.makeconftest(SURROGATE_CONFTEST)
    write_json(scripted, "qa.golden.json", SURROGATE_CASES)
    message = "qa.golden.json:7: protocol error: the model's response is not valid Unicode: "
    message += "a lone surrogate \\ud800 at character 8"
    # live, recording the answer into a cassette
    args = ("-rE", "--junitxml", "junit.xml", "--llmeval-record", "new")
    result = scripted.runpytest("--llmeval-runner", "surrogates", "--llmeval-run-dir", "rec", *args)
    result.assert_outcomes(passed=1, errors=1)
    assert message in result.stdout.str()
    results = _assert_reports_written(scripted.path / "rec", scripted.path / "junit.xml")
    assert results["odd"]["outcome"] == "error"
    assert results["odd"]["error"] == message.split("protocol error: ", 1)[1]
    recorded = [
        p.read_text(encoding="utf-8") for p in scripted.path.rglob("fixtures/cassettes/*/*/*.json")
    ]
    assert any("broken \\ud800 answer" in text for text in recorded)  # stored escaped
    # replayed from that cassette, without the live runner
    scripted.makeconftest("")
    result = scripted.runpytest("--llmeval-run-dir", "rep", "-rE", "--junitxml", "junit.xml")
    result.assert_outcomes(passed=1, errors=1)
    assert message in result.stdout.str()
    _assert_reports_written(scripted.path / "rep", scripted.path / "junit.xml")


def test_a_lone_surrogate_from_an_openai_server_is_that_cases_error(
    pytester: pytest.Pytester,
) -> None:
    write_json(pytester, "qa.golden.json", SURROGATE_CASES)

    def brain(body: dict[str, Any]) -> Any:
        text = body["messages"][-1]["content"]
        return ChatAnswer("x \udfff" if "surrogate" in text else text)

    with OpenAIServer(brain) as server:
        result = pytester.runpytest_subprocess(
            "--llmeval-runner", "openai", "--llmeval-base-url", server.base_url,
            "--llmeval-model", "test-model", "--llmeval-run-dir", "run", "-rE",
            "--junitxml", "junit.xml", "-p", "no:cacheprovider",
        )  # fmt: skip
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*qa.golden.json:7: protocol error: the model's response is not valid Unicode: *\\udfff*"]
    )
    _assert_reports_written(pytester.path / "run", pytester.path / "junit.xml")


# ------------------------------------------------------------------ thresholds


@pytest.mark.parametrize(
    "spec",
    [
        "golden.pass_rate>=90",
        "*.pass_rate >= -0.1",
        {"metric": "golden.categories.math.accuracy", "op": ">", "value": 1.2},
        {"macro_f1": ">= 2"},
        ["golden.failed==0", "golden.tool_hallucination_rate_all<=1.01"],
    ],
)
def test_a_gate_on_a_rate_outside_0_1_is_an_error(spec: object) -> None:
    with pytest.raises(ValueError, match=r"is a rate in \[0, 1\], so the threshold .* is out"):
        parse_gate_spec(spec, default_suite="golden")


def test_gates_in_range_and_on_counts_are_fine() -> None:
    gates = parse_gate_spec(
        ["golden.pass_rate>=0", "golden.pass_rate<=1", "golden.failed<=30", "*.errors==0"]
    )
    assert [g.threshold for g in gates] == [0, 1, 30, 0]
    assert parse_gate("golden.mean_scores.exact_match>=0.5").threshold == 0.5
