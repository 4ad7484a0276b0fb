"""--llmeval-limit N runs the first N cases of each file (issue 15 #19), deselecting the rest
the pytest way."""

from __future__ import annotations

import pytest
from conftest import read_jsonl, write_json
from test_progress import ECHO, cases


def test_limit_runs_the_first_cases_of_each_file(pytester: pytest.Pytester) -> None:
    write_json(pytester, "a.golden.json", cases(6))
    write_json(pytester, "b.golden.json", cases(3))
    result = pytester.runpytest(*ECHO, "--llmeval-limit", "2", "--llmeval-run-dir", "run")
    result.assert_outcomes(passed=4, deselected=5)
    result.stdout.fnmatch_lines(["collected 9 items / 5 deselected / 4 selected"])
    rows = read_jsonl(pytester.path / "run" / "results.jsonl")
    assert [row["nodeid"] for row in rows] == [
        "a.golden.json::c000", "a.golden.json::c001",
        "b.golden.json::c000", "b.golden.json::c001",
    ]  # fmt: skip


def test_limit_goes_through_pytest_deselected(pytester: pytest.Pytester) -> None:
    """Other plugins (the partial-gates check, pytest's terminal) hear of the subset."""
    write_json(pytester, "a.golden.json", cases(3))
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    reprec = pytester.inline_run(*ECHO, "--llmeval-limit", "1")
    deselected = [
        item.nodeid for call in reprec.getcalls("pytest_deselected") for item in call.items
    ]
    assert deselected == ["a.golden.json::c001", "a.golden.json::c002"]
    reprec.assertoutcome(passed=2)  # the first case and the plain test


def test_limit_must_be_positive(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*ECHO, "--llmeval-limit", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--llmeval-limit must be 1 or more*"])
