"""The gates as tests in pytest's terminal and junit: ids as written, progress never backwards.

The gates are reported at session end, after pytest wrote its ``[100%]``; these runs read
pytest's own output lines, with and without ``-v`` and xdist.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from tests.conftest import write_json

CASES = [
    {"id": "a", "input": "x", "expected_output": "x"},
    {"id": "b", "input": "y", "expected_output": "z"},
    {"id": "c", "input": "y", "expected_output": "y"},
]
GATES = (
    "--llmeval-gate", "golden.pass_rate>=0.5",
    "--llmeval-gate", "golden.pass_rate>=0.9",
    "--llmeval-gate", "golden.mean_scores.contains_keywords>=0.5 optional",
)  # fmt: skip
PASSING, FAILING, NA = (
    "llmeval-gates::golden.pass_rate>=0.5",
    "llmeval-gates::golden.pass_rate>=0.9",
    "llmeval-gates::golden.mean_scores.contains_keywords>=0.5",
)
_PERCENT = re.compile(r"\[\s*(\d+)%\]")


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    write_json(pytester, "qa.golden.json", CASES)
    result = pytester.runpytest(
        "--llmeval-runner", "echo", *GATES, "--llmeval-run-dir", "run", *args
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # case b and the 0.9 gate
    return result


def _percents(result: pytest.RunResult) -> list[int]:
    return [int(m) for line in result.stdout.lines for m in _PERCENT.findall(line)]


@pytest.mark.parametrize("args", [(), ("-v",), ("-q",)], ids=["plain", "verbose", "quiet"])
def test_the_progress_counter_never_goes_backwards(
    pytester: pytest.Pytester, args: tuple[str, ...]
) -> None:
    result = _run(pytester, *args)
    percents = _percents(result)
    assert percents == sorted(percents), result.stdout.str()
    assert percents[-1] == 100
    if "-v" not in args:  # the gates have a row of their own, ended by pytest's [100%]
        rows = [line for line in result.stdout.lines if line.endswith("[100%]")]
        assert len(rows) == 2, result.stdout.str()
        assert re.fullmatch(r"(llmeval-gates )?[.Fs]{3} +\[100%\]", rows[1]), rows


@pytest.mark.parametrize("args", [("-n", "2"), ("-n", "2", "-v")], ids=["plain", "verbose"])
def test_the_progress_counter_never_goes_backwards_under_xdist(
    pytester: pytest.Pytester, args: tuple[str, ...]
) -> None:
    pytest.importorskip("xdist")
    result = _run(pytester, *args)
    percents = _percents(result)
    assert percents == sorted(percents), result.stdout.str()
    assert percents[-1] == 100
    if "-v" not in args:  # pytest's row of the cases, then the gates' row of their own
        rows = [line for line in result.stdout.lines if line.endswith("[100%]")]
        assert [re.sub(r" +", " ", row) for row in rows] == [".F. [100%]", "s.F [100%]"]


def test_gate_ids_read_as_written_in_every_line(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "-v", "-rA", "--junitxml", "junit.xml")
    lines = result.stdout.lines
    # -v: the id as written, never "golden::pass_rate>=0::9"
    assert not [line for line in lines if "golden::" in line or "0::" in line]
    result.stdout.fnmatch_lines([f"{NA} SKIPPED*", f"{PASSING} PASSED*", f"{FAILING} FAILED*"])
    # the failure's heading, and the short summary (-rA)
    result.stdout.fnmatch_lines(["_* gate golden.pass_rate>=0.9 _*"])
    result.stdout.fnmatch_lines([f"PASSED {PASSING}"])
    result.stdout.fnmatch_lines([f"SKIPPED [[]1[]] {NA}: n/a: *"])
    result.stdout.fnmatch_lines([f"FAILED {FAILING} - golden.pass_rate = 0.666667*"])
    junit = ET.parse(pytester.path / "junit.xml").getroot()
    names = sorted(
        case.get("name", "")
        for case in junit.iter("testcase")
        if case.get("classname") == "llmeval-gates"
    )
    assert names == [gate.split("::", 1)[1] for gate in sorted((NA, PASSING, FAILING))]
    (skipped,) = [s for s in junit.iter("skipped") if "n/a" in s.get("message", "")]
    assert skipped.get("message", "").startswith("n/a: golden.mean_scores.contains_keywords")


def test_a_run_without_gates_keeps_pytest_s_single_row(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES[:1])
    result = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.OK
    assert _percents(result) == [100], result.stdout.str()
    assert "llmeval-gates" not in result.stdout.str()
