"""Gates and baselines through pytest: terminal, junit, json-report, report.json, exit codes."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_json

CASES = [
    {"id": "a", "category": "x", "input": "hello", "expected_output": "hello"},
    {"id": "b", "category": "x", "input": "world", "expected_output": "world"},
    {"id": "c", "category": "y", "input": "foo", "expected_output": "bar"},
]


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--llmeval-runner", "echo", *args)


def test_a_failing_gate_is_its_own_testcase_and_fails_the_session(
    pytester: pytest.Pytester,
) -> None:
    pytest.importorskip("pytest_jsonreport")
    write_json(pytester, "qa.golden.json", CASES)
    result = _run(
        pytester,
        "--llmeval-gate", "golden.pass_rate>=0.9",
        "--llmeval-gate", "golden.categories.x.pass_rate == 1",
        "--llmeval-run-dir", "run", "--junitxml", "junit.xml",
        "--json-report", "--json-report-file", "r.json",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "gate golden.categories.x.pass_rate==1: passed*",
            "gate golden.pass_rate>=0.9: FAILED*0.666667*",
            "FAILED llmeval-gates::golden.pass_rate>=0.9*",
        ]
    )
    cases = {
        c.get("name"): c for c in ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")
    }
    assert cases["golden.pass_rate>=0.9"].get("classname") == "llmeval-gates"
    assert cases["golden.pass_rate>=0.9"].find("failure") is not None
    assert cases["golden.categories.x.pass_rate==1"].find("failure") is None
    tests = {
        t["nodeid"]: t["outcome"]
        for t in json.loads((pytester.path / "r.json").read_text())["tests"]
    }
    assert tests["llmeval-gates::golden.pass_rate>=0.9"] == "failed"
    gates = json.loads((pytester.path / "run/report.json").read_text())["gates"]
    assert gates["passed"] is False
    assert [g["gate"]["name"] for g in gates["results"]] == [
        "golden.categories.x.pass_rate==1",
        "golden.pass_rate>=0.9",
    ]


def test_exit_on_gates_lets_failed_cases_through(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    result = _run(pytester, "--llmeval-exit-on", "gates", "--llmeval-gate", "golden.passed>=2")
    # 2 cases + the gate passed; case c failed its check, an expected failure under gates
    result.assert_outcomes(passed=3, xfailed=1)
    assert result.ret == pytest.ExitCode.OK
    result = _run(pytester, "--llmeval-exit-on", "gates", "--llmeval-gate", "golden.passed>=3")
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_manifest_gates(pytester: pytest.Pytester) -> None:
    write_json(pytester, "data.json", CASES)
    pytester.path.joinpath("qa.llmeval.yaml").write_text(
        "suite: golden\ndata: data.json\n"
        "gates:\n  - pass_rate >= 0.5\n  - {metric: failed, op: '==', value: 0}\n"
    )
    result = _run(pytester, "--llmeval-exit-on", "gates")
    result.stdout.fnmatch_lines_random(
        ["gate golden.failed==0: FAILED*", "gate golden.pass_rate>=0.5: passed*"]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_bad_gate_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "--llmeval-gate", "pass rate is high")
    result.stderr.fnmatch_lines(["*--llmeval-gate: bad gate 'pass rate is high'*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def _bless(pytester: pytest.Pytester, cases: list[dict[str, Any]]) -> Path:
    write_json(pytester, "qa.golden.json", cases)
    _run(pytester, "--llmeval-update-baseline", "baseline.json")
    return pytester.path / "baseline.json"


def test_a_regression_fails_the_session_and_an_improvement_does_not(
    pytester: pytest.Pytester,
) -> None:
    baseline = _bless(pytester, CASES)
    assert json.loads(baseline.read_text())["baseline_version"] == 1
    # improvement: c now passes (same input, fixed expectation -> the case fingerprint changes,
    # so the flip is "changed"); use a conftest agent change instead to keep fingerprints
    pytester.makeconftest(
        """
import pytest
from pytest_llmeval.engine.agent import default_agent
from pytest_llmeval.runners.echo import EchoRunner

class Fixed:
    def run(self, case, broker):
        return {"foo": "bar", "hello": "HELLO"}.get(case.user_message, case.user_message)

    def fingerprint(self):
        return {"type": "echo"}  # same runner fingerprint as the baseline's

@pytest.fixture(scope="session")
def llmeval_agent():
    return Fixed()
"""
    )
    result = _run(pytester, "--llmeval-baseline", "baseline.json", "--llmeval-run-dir", "run")
    result.stdout.fnmatch_lines(
        ["baseline: REGRESSED: 1 pass->fail, 1 fail->pass,*McNemar p=1 (b=1, c=1)"]
    )
    result.stdout.fnmatch_lines(
        ["*no-regressions*", "1 case(s) passed in the baseline and fail now: qa.golden.json::a"]
    )
    result.stdout.fnmatch_lines(["FAILED llmeval-baseline::no-regressions - 1 case(s) passed*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    diff = json.loads((pytester.path / "run/report.json").read_text())["baseline"]
    assert diff["flips"]["pass->fail"] == ["qa.golden.json::a"]
    assert diff["flips"]["fail->pass"] == ["qa.golden.json::c"]
    assert "pass->fail" in (pytester.path / "run/summary.md").read_text()

    # an improvement only: bless the fixed agent's run with c failing, then fix c
    pytester.makeconftest(
        """
import pytest

class Better:
    def run(self, case, broker):
        return "bar" if case.user_message == "foo" else case.user_message

    def fingerprint(self):
        return {"type": "echo"}

@pytest.fixture(scope="session")
def llmeval_agent():
    return Better()
"""
    )
    result = _run(pytester, "--llmeval-baseline", "baseline.json", "--llmeval-exit-on", "gates")
    result.stdout.fnmatch_lines(["baseline: no regressions: 0 pass->fail, 1 fail->pass*"])
    assert result.ret == pytest.ExitCode.OK


def test_fingerprint_mismatch_is_refused_unless_allowed(pytester: pytest.Pytester) -> None:
    _bless(pytester, CASES)
    pytester.makeconftest(
        """
from pytest_llmeval.testing.scripted import ScriptedModel

def pytest_llmeval_register_runners(registry):
    registry.register("other", lambda s: ScriptedModel())
"""
    )
    result = pytester.runpytest(
        "--llmeval-runner",
        "other",
        "--llmeval-baseline",
        "baseline.json",
        "--llmeval-exit-on",
        "gates",
    )
    result.stdout.fnmatch_lines(["baseline: not compared: *runner_fingerprint*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result = pytester.runpytest(
        "--llmeval-runner", "other", "--llmeval-baseline", "baseline.json",
        "--llmeval-baseline-allow-mismatch", "--llmeval-exit-on", "gates",
    )  # fmt: skip
    result.stdout.fnmatch_lines(["baseline: no regressions*"])
    assert result.ret == pytest.ExitCode.OK
