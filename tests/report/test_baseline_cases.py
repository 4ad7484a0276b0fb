"""A baseline across data edits, as a pull request meets it: cases added, edited and removed
are listed apart and the unchanged ones are compared; only another runner refuses the diff."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.conftest import write_json

BLESSED = [
    {"id": "a", "input": "alpha", "expected_output": "alpha"},
    {"id": "b", "input": "bravo", "expected_output": "bravo"},
    {"id": "c", "input": "charlie", "expected_output": "charlie"},
    {"id": "d", "input": "delta", "expected_output": "delta"},
    {"id": "x", "input": "xray", "expected_output": "not what echo says"},
]

EDITED = [
    BLESSED[0],  # a: unchanged, the model now gets it wrong (a regression)
    {"id": "b", "input": "bravo", "expected_output": "BRAVO"},  # b: expected output edited
    # c: removed
    BLESSED[3],  # d: unchanged, still passes
    BLESSED[4],  # x: unchanged, still fails
    {"id": "e", "input": "echo", "expected_output": "echo"},  # e: added
]

AGENT = """
import pytest

class Model:
    def run(self, case, broker):
        return "wrong" if case.user_message == "alpha" else case.user_message

    def fingerprint(self):
        return {FINGERPRINT}

@pytest.fixture(scope="session")
def llmeval_agent():
    return Model()
"""


def _agent(pytester: pytest.Pytester, fingerprint: dict[str, Any]) -> None:
    pytester.makeconftest(AGENT.replace("{FINGERPRINT}", repr(fingerprint)))


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--llmeval-runner", "echo", *args)


@pytest.fixture
def blessed(pytester: pytest.Pytester) -> pytest.Pytester:
    """A baseline of the five blessed cases (echo: four pass, x fails), then the data edited
    the way a pull request does."""
    write_json(pytester, "qa.golden.json", BLESSED)
    _run(pytester, "--llmeval-update-baseline", "baseline.json")
    write_json(pytester, "qa.golden.json", EDITED)
    return pytester


def test_edited_data_is_compared_case_by_case(blessed: pytest.Pytester) -> None:
    _agent(blessed, {"type": "echo"})  # the same runner fingerprint as the baseline's
    result = _run(blessed, "--llmeval-baseline", "baseline.json", "--llmeval-run-dir", "run")
    out = result.stdout.str()
    assert "not compared" not in out
    result.stdout.fnmatch_lines(
        [
            "baseline: REGRESSED: 1 pass->fail, 0 fail->pass, 1 new, 1 removed, 1 changed, "
            "0 skipped; exact McNemar p=1 (b=1, c=0)",
            "baseline: cases: 3 unchanged, 1 added, 1 removed, 1 changed (only unchanged *",
            "baseline: added: qa.golden.json::e",
            "baseline: removed: qa.golden.json::c",
            "baseline: changed: qa.golden.json::b",
            "baseline: pass rate on the 3 unchanged cases: 0.666667 -> 0.333333 (-0.333333)",
        ]
    )
    result.stdout.fnmatch_lines(["FAILED llmeval-baseline::no-regressions - 1 case(s) passed*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED

    run = blessed.path / "run"
    diff = json.loads((run / "report.json").read_text())["baseline"]
    assert diff["flips"]["pass->fail"] == ["qa.golden.json::a"]
    assert diff["fingerprint_mismatches"] == {}
    assert diff["compared"] == 3
    sets = diff["case_changes"]
    assert sets["counts"] == {"unchanged": 3, "added": 1, "removed": 1, "changed": 1}
    assert (sets["added"], sets["removed"], sets["changed"]) == (
        ["qa.golden.json::e"],
        ["qa.golden.json::c"],
        ["qa.golden.json::b"],
    )
    assert list(sets["data_changes"]) == ["dataset_sha256"]
    rate = diff["unchanged_metric_deltas"]["golden"]["pass_rate"]
    assert (rate["baseline"], rate["current"]) == (0.666667, 0.333333)
    # the whole reports are still compared as they are (b fails now, e passes, c is gone)
    assert diff["metric_deltas"]["golden"]["total"]["delta"] == 0

    summary = (run / "summary.md").read_text()
    assert "Cases: 3 unchanged, 1 added, 1 removed, 1 changed" in summary
    assert "### Metric changes on unchanged cases" in summary
    assert "> The data changed (dataset_sha256 " in summary
    page = (run / "report.html").read_text()
    section = page.split('<section id="baseline">')[1].split("</section>")[0]
    assert "<h3>Cases</h3>" in section
    assert '<a href="#q=qa.golden.json%3A%3Ae">qa.golden.json::e</a>' in section
    assert "McNemar: b = 1 (pass→fail), c = 0 (fail→pass)" in section

    # `summarize` judges the run again against the same baseline: the same comparison
    (run / "report.json").unlink()
    done = subprocess.run(
        [sys.executable, "-m", "pytest_llmeval", "summarize", str(run)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stderr  # a regression: red, as the session was
    assert json.loads((run / "report.json").read_text())["baseline"] == diff
    assert "baseline: cases: 3 unchanged, 1 added, 1 removed, 1 changed" in done.stdout


def test_the_regression_fails_the_gates_and_the_data_edits_do_not(
    blessed: pytest.Pytester,
) -> None:
    _agent(blessed, {"type": "echo"})
    result = _run(blessed, "--llmeval-baseline", "baseline.json", "--llmeval-exit-on", "gates")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the regression of a
    # without the regression, the same edits leave a passing baseline check
    blessed.makeconftest("")
    result = _run(blessed, "--llmeval-baseline", "baseline.json", "--llmeval-exit-on", "gates")
    result.stdout.fnmatch_lines(["baseline: no regressions: 0 pass->fail, *1 new, 1 removed*"])
    assert result.ret == pytest.ExitCode.OK


def test_another_runner_makes_the_run_incomparable(blessed: pytest.Pytester) -> None:
    _agent(blessed, {"type": "echo", "model": "v2"})  # other model settings
    result = _run(blessed, "--llmeval-baseline", "baseline.json", "--llmeval-exit-on", "gates")
    result.stdout.fnmatch_lines(
        [
            "baseline: not compared: baseline *baseline.json is not comparable with this run: "
            "runner_fingerprint * (baseline) vs * (this run)*",
        ]
    )
    result.stdout.fnmatch_lines(["FAILED llmeval-baseline::no-regressions - baseline not*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED

    result = _run(
        blessed,
        "--llmeval-baseline", "baseline.json", "--llmeval-baseline-allow-mismatch",
        "--llmeval-run-dir", "run",
    )  # fmt: skip
    result.stdout.fnmatch_lines(["baseline: REGRESSED: 1 pass->fail*"])
    diff = json.loads((blessed.path / "run/report.json").read_text())["baseline"]
    assert list(diff["fingerprint_mismatches"]) == ["runner_fingerprint"]
    assert diff["case_changes"]["counts"]["changed"] == 1
    assert (
        "Compared despite differing fingerprints: runner_fingerprint"
        in (blessed.path / "run/summary.md").read_text()
    )
