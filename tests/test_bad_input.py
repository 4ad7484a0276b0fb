"""Bad input: every broken case is one clear error naming path:line and the field; the rest runs."""

from __future__ import annotations

import os

import pytest
from conftest import read_jsonl, write_json

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
