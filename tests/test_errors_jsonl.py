"""A case that cannot run is one line per case in the terminal, its traceback in errors.jsonl
(issue 15 #12)."""

from __future__ import annotations

import pytest
from conftest import read_jsonl, write_json

CASES = [{"id": "a", "input": "x", "expected_output": "x"},
         {"id": "b", "input": "y", "expected_output": "y"}]  # fmt: skip


def _one_line_each(result: pytest.RunResult, text: str) -> None:
    result.assert_outcomes(errors=2)
    stdout = result.stdout.str()
    assert "Traceback" not in stdout and "def llmeval_runner" not in stdout
    # each case's error section is that one line
    assert sum(line.startswith("qa.golden.json:") and text in line
               for line in stdout.splitlines()) == 2  # fmt: skip


def test_an_unknown_runner_is_one_line_per_case(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    result = pytester.runpytest("--llmeval-runner", "nope", "--llmeval-run-dir", "run")
    _one_line_each(result, "unknown runner 'nope'")
    result.stdout.fnmatch_lines(
        ["qa.golden.json:*: ConfigError: unknown runner 'nope' (--llmeval-runner); "
         "known runners: echo, hf, http-agent, openai, replay"]
    )  # fmt: skip
    rows = read_jsonl(pytester.path / "run/errors.jsonl")
    assert [(r["nodeid"], r["case_id"], r["phase"]) for r in rows] == [
        ("qa.golden.json::a", "a", "setup"),
        ("qa.golden.json::b", "b", "setup"),
    ]
    assert rows[0]["message"].startswith("unknown runner 'nope'")
    assert rows[0]["traceback"].startswith("Traceback (most recent call last):")
    assert "ConfigError: unknown runner 'nope'" in rows[0]["traceback"]
    # results.jsonl keeps its shape: no phase or traceback there
    assert "traceback" not in read_jsonl(pytester.path / "run/results.jsonl")[0]


def test_a_missing_cassette_folder_is_one_line_per_case(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    result = pytester.runpytest("--llmeval-run-dir", "run")
    _one_line_each(result, "no cassette folder at")
    result.stdout.fnmatch_lines(["*no cassette folder at *; record it *--llmeval-record new*"])
    assert len(read_jsonl(pytester.path / "run/errors.jsonl")) == 2


def test_an_empty_cassette_folder_is_one_line_per_case(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    (pytester.path / "fixtures/cassettes").mkdir(parents=True)
    result = pytester.runpytest("--llmeval-run-dir", "run")
    _one_line_each(result, "no recorded runner under")
    [row, _] = read_jsonl(pytester.path / "run/errors.jsonl")
    assert "ConfigError" in row["traceback"] and row["phase"] == "setup"


def test_workers_errors_reach_the_controllers_errors_jsonl(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    write_json(pytester, "qa.golden.json", CASES)
    result = pytester.runpytest_subprocess(
        "-n", "2", "--llmeval-runner", "nope", "--llmeval-run-dir", "run", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(errors=2)
    rows = read_jsonl(pytester.path / "run/errors.jsonl")
    assert sorted(r["case_id"] for r in rows) == ["a", "b"]
    assert all("ConfigError: unknown runner" in r["traceback"] for r in rows)
