"""A case that cannot run is one line per case in the terminal, its traceback in errors.jsonl."""

from __future__ import annotations

import pytest

from tests.conftest import down_runner, read_jsonl, write_json

CASES = [{"id": "a", "input": "x", "expected_output": "x"},
         {"id": "b", "input": "y", "expected_output": "y"}]  # fmt: skip


def _one_line_each(result: pytest.RunResult, text: str) -> None:
    result.assert_outcomes(errors=2)
    stdout = result.stdout.str()
    assert "Traceback" not in stdout and "def llmeval_runner" not in stdout
    # each case's error section is that one line
    assert sum(line.startswith("qa.golden.json:") and text in line
               for line in stdout.splitlines()) == 2  # fmt: skip


DOWN = down_runner("http")
"""A runner whose backend refuses every call: each case errors when it runs."""


def test_a_dead_backend_is_one_line_per_case(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    pytester.makeconftest(DOWN)
    result = pytester.runpytest("--llmeval-runner", "down", "--llmeval-run-dir", "run")
    _one_line_each(result, "connection refused")
    result.stdout.fnmatch_lines(
        ["qa.golden.json:*: http error: POST http://127.0.0.1:9/v1: connection refused"]
    )
    rows = read_jsonl(pytester.path / "run/errors.jsonl")
    assert [(r["nodeid"], r["case_id"], r["phase"]) for r in rows] == [
        ("qa.golden.json::a", "a", "setup"),
        ("qa.golden.json::b", "b", "setup"),
    ]
    assert rows[0]["message"].startswith("POST http://127.0.0.1:9/v1: connection refused")
    assert rows[0]["traceback"].startswith("Traceback (most recent call last):")
    assert "RunnerError: POST http://127.0.0.1:9/v1: connection refused" in rows[0]["traceback"]
    # results.jsonl keeps its shape: no phase or traceback there
    assert "traceback" not in read_jsonl(pytester.path / "run/results.jsonl")[0]


@pytest.mark.parametrize(
    ("args", "cassettes", "line"),
    [
        (["--llmeval-runner", "nope"], False, "*unknown runner 'nope'; known runners: echo, *"),
        ([], False, "*no cassette folder at *; point --llmeval-cassettes *record them with: *"),
        ([], True, "*no recorded runner under *; point --llmeval-cassettes *record them with: *"),
    ],
    ids=["unknown-runner", "no-cassette-folder", "empty-cassette-folder"],
)
def test_a_runner_that_cannot_be_built_is_one_usage_error(
    pytester: pytest.Pytester, args: list[str], cassettes: bool, line: str
) -> None:
    """Not one error per case: one line before any case runs, exit 4, nothing written."""
    write_json(pytester, "qa.golden.json", CASES)
    if cassettes:
        (pytester.path / "fixtures/cassettes").mkdir(parents=True)
    result = pytester.runpytest(*args, "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --llmeval-runner: {line}"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert not (pytester.path / "run").exists()


def test_workers_errors_reach_the_controllers_errors_jsonl(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    write_json(pytester, "qa.golden.json", CASES)
    pytester.makeconftest(DOWN)
    result = pytester.runpytest_subprocess(
        "-n", "2", "--llmeval-runner", "down", "--llmeval-run-dir", "run", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(errors=2)
    rows = read_jsonl(pytester.path / "run/errors.jsonl")
    assert sorted(r["case_id"] for r in rows) == ["a", "b"]
    assert all("RunnerError: POST http" in r["traceback"] for r in rows)
