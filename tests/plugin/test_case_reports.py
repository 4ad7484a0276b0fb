"""What junit says about cases: each case's own time under run-ahead, and under
``--llmeval-exit-on gates`` only the gates (and broken input) turn CI red;
a broken manifest is reported once; an xfailed miss does not fail ``merge``."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from pytest_llmeval.plugin.gate_reports import gate_test_reports
from pytest_llmeval.report.verdict import GateProblem, Verdict
from tests.conftest import read_jsonl, write_json

CASES = [
    {"id": "a", "category": "x", "input": "hello", "expected_output": "hello"},
    {"id": "b", "category": "x", "input": "world", "expected_output": "world"},
    {"id": "c", "category": "y", "input": "foo", "expected_output": "bar"},
]

SLEEPY_AGENT = """
import asyncio
import json
import pytest

SLEEP = {"fast": 0.05, "slow1": 0.3, "slow2": 0.3, "slow3": 0.3}
REPORTED = []

class Sleepy:
    async def run(self, case, broker):
        await asyncio.sleep(SLEEP[case.user_message])
        return case.user_message

    def fingerprint(self):
        return {"type": "sleepy"}

@pytest.fixture(scope="session")
def llmeval_agent():
    return Sleepy()

def pytest_runtest_logreport(report):
    if report.when in ("setup", "call"):
        REPORTED.append([report.nodeid, report.when, report.duration])

def pytest_sessionfinish(session):
    with open("durations.json", "w") as handle:
        json.dump(REPORTED, handle)
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
        "-p", "no:randomly", "--llmeval-concurrency", "8", "--junitxml", "junit.xml",
        "--llmeval-run-dir", "run",
    )  # fmt: skip
    result.assert_outcomes(passed=4)
    # the durations pytest reported (and junit, --durations and the terminal add up): all four
    # ran at once, so waiting in order "fast" would wait for its own work, "slow1" for the
    # rest of its and the others for nothing; instead the setup wait counts 0 and each call is
    # exactly the case's own duration, the one results.jsonl records
    reported = json.loads((pytester.path / "durations.json").read_text())
    own = {
        row["nodeid"]: row["duration_ms"] / 1000
        for row in read_jsonl(pytester.path / "run/results.jsonl")
    }
    assert sorted(own) == [f"qa.golden.json::{name}" for name in names]
    setups = {nodeid: duration for nodeid, when, duration in reported if when == "setup"}
    calls = {nodeid: duration for nodeid, when, duration in reported if when == "call"}
    assert setups == dict.fromkeys(own, 0.0)
    assert calls.keys() == own.keys()
    for nodeid, duration in calls.items():  # results.jsonl keeps milliseconds to 3 decimals
        assert duration == pytest.approx(own[nodeid], abs=5e-7), nodeid
    junit = {f"qa.golden.json::{n}": float(str(c.get("time"))) for n, c in _junit(pytester).items()}
    assert junit.keys() == own.keys()


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


def test_unreadable_gates_have_a_failing_junit_entry() -> None:
    """A gate that could not be read (a session stops on one before any case; ``merge`` and
    ``summarize`` may still meet one) is a failed entry named by where it is written."""
    problem = "qa.llmeval.yaml:3: gates[0]: bad gate 'pass rate is high': expected ..."
    reports = gate_test_reports(Verdict(gate_problems=[GateProblem(problem, "qa.llmeval.yaml:3")]))
    (call,) = [r for r in reports if r.when == "call"]
    assert call.nodeid == "llmeval-gates::qa.llmeval.yaml:3"
    assert call.outcome == "failed"
    assert problem in str(call.longrepr)


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
