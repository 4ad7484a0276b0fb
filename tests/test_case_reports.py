"""What junit says about cases: each case's own time under run-ahead, and under
``--llmeval-exit-on gates`` only the gates (and broken input) turn CI red (issue 15 #14);
a broken manifest is reported once; an xfailed miss does not fail ``merge``."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from conftest import write_json

CASES = [
    {"id": "a", "category": "x", "input": "hello", "expected_output": "hello"},
    {"id": "b", "category": "x", "input": "world", "expected_output": "world"},
    {"id": "c", "category": "y", "input": "foo", "expected_output": "bar"},
]

SLEEPY_AGENT = """
import asyncio
import pytest

SLEEP = {"fast": 0.05, "slow1": 0.3, "slow2": 0.3, "slow3": 0.3}

class Sleepy:
    async def run(self, case, broker):
        await asyncio.sleep(SLEEP[case.user_message])
        return case.user_message

    def fingerprint(self):
        return {"type": "sleepy"}

@pytest.fixture(scope="session")
def llmeval_agent():
    return Sleepy()
"""


def _junit(pytester: pytest.Pytester) -> dict[str, ET.Element]:
    root = ET.parse(pytester.path / "junit.xml").getroot()
    return {str(c.get("name")): c for c in root.iter("testcase")}


def _kind(case: ET.Element) -> str:
    kinds = [c.tag for c in case if c.tag in ("failure", "error", "skipped")]
    return kinds[0] if kinds else "passed"


def test_each_case_gets_its_own_time_under_run_ahead(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(SLEEPY_AGENT)
    names = ["fast", "slow1", "slow2", "slow3"]
    write_json(pytester, "qa.golden.json", [
        {"id": name, "input": name, "expected_output": name} for name in names
    ])  # fmt: skip
    result = pytester.runpytest(
        "-p", "no:randomly", "--llmeval-concurrency", "8", "--junitxml", "junit.xml"
    )
    result.assert_outcomes(passed=4)
    times = {name: float(str(case.get("time"))) for name, case in _junit(pytester).items()}
    # all four run at once: waiting in order, "fast" would take ~0.05 s, "slow1" the rest of
    # its 0.3 s and the others nothing; each is its own duration instead
    assert all(times[name] >= 0.25 for name in ("slow1", "slow2", "slow3")), times
    assert times["fast"] < min(times["slow1"], times["slow2"], times["slow3"]), times
    assert times["fast"] < times["slow1"] + times["slow2"] + times["slow3"]


def test_under_exit_on_gates_the_gates_decide_junit(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    args = ("--llmeval-runner", "echo", "--junitxml", "junit.xml", "--llmeval-exit-on", "gates")
    result = pytester.runpytest(*args, "--llmeval-gate", "golden.passed>=2", "-rx")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=3, xfailed=1)
    result.stdout.fnmatch_lines(["XFAIL qa.golden.json::c - the case failed its own check*"])
    cases = _junit(pytester)
    assert [_kind(c) for c in cases.values()].count("failure") == 0
    skipped = cases["c"].find("skipped")
    assert skipped is not None and skipped.get("type") == "pytest.xfail"
    assert 'expected "bar", got "foo"' in str(skipped.get("message"))
    assert _kind(cases["golden.passed>=2"]) == "passed"
    # a failing gate is the one red entry, and the exit says so
    result = pytester.runpytest(*args, "--llmeval-gate", "golden.passed>=3")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    kinds = {name: _kind(c) for name, c in _junit(pytester).items()}
    assert kinds == {"a": "passed", "b": "passed", "c": "skipped", "golden.passed>=3": "failure"}


def test_broken_input_stays_an_error_under_exit_on_gates(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    pytester.path.joinpath("data.json").write_text(json.dumps(CASES[:1]))
    pytester.path.joinpath("bad.llmeval.yaml").write_text(
        "suite: golden\ndata: data.json\ngates: [pass_rate >= 0.5]\nrepeats: 0\n"
    )
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--junitxml", "junit.xml", "--llmeval-exit-on", "gates"
    )
    out = result.stdout.str()
    # reported once: as its error item, not again as a gate problem (pytest's short summary
    # repeats every error's message, in full when CI is set)
    said = [line for line in out.splitlines() if "repeats: expected a whole number >= 1" in line]
    assert len([line for line in said if not line.startswith("ERROR ")]) == 1
    assert "gate problem" not in out
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # its gates were never read
    assert _kind(_junit(pytester)["line4"]) == "error"


def test_unreadable_gates_have_a_failing_junit_entry(pytester: pytest.Pytester) -> None:
    pytester.path.joinpath("data.json").write_text(json.dumps(CASES[:1]))
    pytester.path.joinpath("qa.llmeval.yaml").write_text(
        "suite: golden\ndata: data.json\ngates: [pass rate is high]\n"
    )
    result = pytester.runpytest("--llmeval-runner", "echo", "--junitxml", "junit.xml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAILED llmeval-gates::qa.llmeval.yaml - qa.llmeval.yaml: gates*"])
    assert _kind(_junit(pytester)["qa.llmeval.yaml"]) == "failure"


def test_merge_exits_as_the_session_with_xfailed_misses(pytester: pytest.Pytester) -> None:
    pytester.path.joinpath("data.json").write_text(json.dumps(CASES))
    pytester.path.joinpath("qa.llmeval.yaml").write_text(
        "suite: golden\ndata: data.json\nmisses: xfail\ngates: [passed >= 2]\n"
    )
    full = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "full")
    full.assert_outcomes(passed=3, xfailed=1)
    assert full.ret == pytest.ExitCode.OK
    lines = (pytester.path / "full/results.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    assert [(r["case_id"], r["outcome"], r["xfailed"]) for r in rows] == [
        ("a", "passed", False),
        ("b", "passed", False),
        ("c", "failed", True),
    ]
    for i in (0, 1):
        pytester.runpytest("--llmeval-runner", "echo", "--llmeval-shard", f"{i}/2",
                           "--llmeval-run-dir", f"s{i}")  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "pytest_llmeval", "merge", "merged", "s0", "s1"],
        capture_output=True, text=True, cwd=pytester.path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gates: passed; exit 0" in done.stdout
