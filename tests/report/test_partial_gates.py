"""Gates judged on a subset of the cases (``-k``, ``-m``, ``--lf``) say ``partial``, never
``passed``: in the terminal, ``report.json``, junit and the HTML page."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from pytest_llmeval.report.gates import evaluate_gates, parse_gate, suite_gate_results
from pytest_llmeval.report.html.gate_rows import gates as gate_rows
from pytest_llmeval.rundir.models import GateResult, GatesSection
from tests.conftest import write_json

CASES = [
    {"id": "a", "category": "x", "input": "hello", "expected_output": "hello"},
    {"id": "b", "category": "x", "input": "world", "expected_output": "world"},
    {"id": "c", "category": "y", "input": "foo", "expected_output": "bar"},
]

GATES = ("--llmeval-gate", "golden.pass_rate>=0.9", "--llmeval-gate", "*.failed==0")


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        "-p", "no:randomly", "--llmeval-runner", "echo", "--llmeval-run-dir", "run",
        "--junitxml", "junit.xml", *GATES, *args,
    )  # fmt: skip


def _statuses(pytester: pytest.Pytester) -> dict[str, str]:
    body = json.loads((pytester.path / "run" / "report.json").read_text())
    return {r["gate"]["name"]: r["status"] for r in body["gates"]["results"]}


def _junit_gates(pytester: pytest.Pytester) -> dict[str, str]:
    root = ET.parse(pytester.path / "junit.xml").getroot()
    out = {}
    for case in root.iter("testcase"):
        if case.get("classname") == "llmeval-gates":
            kinds = [child.tag for child in case if child.tag in ("failure", "skipped", "error")]
            out[str(case.get("name"))] = kinds[0] if kinds else "passed"
    return out


@pytest.mark.parametrize(
    "selection",
    [("-k", "not c"), ("-m", "x")],
    ids=["-k", "-m"],
)
def test_a_gate_on_a_selection_is_partial(
    pytester: pytest.Pytester, selection: tuple[str, str]
) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    result = _run(pytester, *selection)
    # case c is left out: both gates hold on a and b, and neither may say passed
    result.stdout.fnmatch_lines(
        [
            "gate *.failed==0: partial (*.failed = 0 == 0; partial: 1 case(s) left out)",
            "gate golden.pass_rate>=0.9: partial (*)",
            "*2 passed, 2 skipped, 1 deselected*",
        ]
    )
    assert "gates: passed" not in result.stdout.str()
    assert result.ret == pytest.ExitCode.OK  # a partial gate does not fail the run
    assert _statuses(pytester) == {"*.failed==0": "partial", "golden.pass_rate>=0.9": "partial"}
    body = json.loads((pytester.path / "run" / "report.json").read_text())
    assert body["deselected"] == {"golden": 1} and body["gates"]["passed"] is False
    assert _junit_gates(pytester) == {"*.failed==0": "skipped", "golden.pass_rate>=0.9": "skipped"}
    page = (pytester.path / "run" / "report.html").read_text()
    assert '<p class="gate-summary partial">0/2 gates passed</p>' in page
    assert page.count('data-status="partial"') == 2


def test_a_gate_on_the_last_failed_is_partial_and_a_failing_one_still_fails(
    pytester: pytest.Pytester,
) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "first")
    result = _run(pytester, "--lf", "-p", "cacheprovider")
    # only c ran again, and it failed: the gates fail on the subset, and say it was one
    result.stdout.fnmatch_lines(
        ["gate *.failed==0: FAILED (*.failed = 1, needs == 0; partial: 2 case(s) left out)"]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert _statuses(pytester) == {"*.failed==0": "failed", "golden.pass_rate>=0.9": "failed"}
    assert _junit_gates(pytester) == {"*.failed==0": "failure", "golden.pass_rate>=0.9": "failure"}


def test_the_whole_run_still_passes(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES[:2])
    result = _run(pytester)
    result.stdout.fnmatch_lines(["gate golden.pass_rate>=0.9: passed (*)"])
    assert _statuses(pytester) == {"*.failed==0": "passed", "golden.pass_rate>=0.9": "passed"}
    assert "deselected" not in json.loads((pytester.path / "run" / "report.json").read_text())
    assert _junit_gates(pytester) == {"*.failed==0": "passed", "golden.pass_rate>=0.9": "passed"}


def test_the_status_is_worked_out_from_deselected_and_read_back() -> None:
    section = {"total": 2, "passed": 2, "failed": 0, "errors": 0, "skipped": 0, "pass_rate": 1.0}
    integration = {
        **section,
        "gates": {"zero": {"metric": "bad", "kind": "zero", "threshold": 0, "value": 0,
                           "status": "pass", "message": "bad = 0"}},
    }  # fmt: skip
    report = {
        "totals": section,
        "suites": {"golden": section, "integration": integration},
        "deselected": {"golden": 3},
    }
    gates = [parse_gate("golden.pass_rate>=0.9"), parse_gate("*.total>=1")]
    results = evaluate_gates(gates, report) + suite_gate_results(report)
    assert [(r.gate.name, r.status) for r in results] == [
        ("*.total>=1", "partial"),
        ("golden.pass_rate>=0.9", "partial"),
        ("integration.bad==0", "passed"),  # nothing of the integration suite was left out
    ]
    assert GatesSection.of(results).passed is False
    # a report written before the field existed reads passed/failed from ``passed``
    old = results[2].model_dump(mode="json")
    del old["status"]
    assert GateResult.model_validate(old).status == "passed"
    rows = gate_rows(GatesSection.of(results).model_dump(mode="json"))
    assert [row.status for row in rows.rows] == ["partial", "partial", "passed"]
    assert (rows.passed, rows.verdict) == (1, "partial")
