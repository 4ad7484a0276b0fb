"""``--json-report``'s ``llmeval`` section: report.json's body and the run dir, redacted as the
run dir is, written by the controller only, scanned by the leak check; no json report plugin,
no harm."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import strip_timings, write_json

CASES = [
    {"id": "a", "category": "x", "input": "x", "expected_output": "x"},
    {"id": "b", "category": "y", "input": "y", "expected_output": "y"},
]
GATES = (
    "--llmeval-gate", "golden.pass_rate>=0.5",
    "--llmeval-gate", "golden.mean_scores.contains_keywords>=0.5 optional",
)  # fmt: skip
PLANTED = "PLANTED-cijob-3v8q1m"


def _section(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    pytest.importorskip("pytest_jsonreport")
    write_json(pytester, "qa.golden.json", CASES)
    result = pytester.runpytest(
        "--llmeval-runner", "echo", *GATES, "--llmeval-run-dir", "run",
        "--json-report", "--json-report-file", "r.json", *args,
    )  # fmt: skip
    return result, json.loads((pytester.path / "r.json").read_text())


def _report_json(pytester: pytest.Pytester) -> dict[str, Any]:
    return json.loads((pytester.path / "run" / "report.json").read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["n0", "n2"])
def test_the_section_is_report_json_with_the_run_dir(
    pytester: pytest.Pytester, workers: tuple[str, ...]
) -> None:
    if workers:
        pytest.importorskip("xdist")
    result, report = _section(pytester, *workers)
    assert result.ret == pytest.ExitCode.OK
    section = report["llmeval"]
    assert Path(section.pop("run_dir")) == pytester.path / "run"
    assert strip_timings(section) == strip_timings(_report_json(pytester))
    # what a reader looks for: fingerprints, each suite's section, the gates and statuses
    assert section["dataset_sha256"] and "runner_fingerprint" in section
    assert section["suites"]["golden"]["total"] == 2
    statuses = {g["gate"]["name"]: g["status"] for g in section["gates"]["results"]}
    assert statuses == {
        "golden.pass_rate>=0.5": "passed",
        "golden.mean_scores.contains_keywords>=0.5": "n/a",
    }
    # the gates are tests of the report too, under their ids as written
    tests = {t["nodeid"]: t["outcome"] for t in report["tests"]}
    assert tests["llmeval-gates::golden.pass_rate>=0.5"] == "passed"
    assert tests["llmeval-gates::golden.mean_scores.contains_keywords>=0.5"] == "skipped"


def test_the_section_is_redacted_as_report_json(pytester: pytest.Pytester) -> None:
    result, report = _section(pytester, "--llmeval-redact-pattern", "pass_rate")
    assert result.ret == pytest.ExitCode.OK
    section = report["llmeval"]
    del section["run_dir"]
    assert strip_timings(section) == strip_timings(_report_json(pytester))
    names = [g["gate"]["name"] for g in section["gates"]["results"]]
    assert names == ["golden.mean_scores.contains_keywords>=0.5", "golden.[REDACTED]>=0.5"]


def test_no_section_when_no_run_dir_was_written(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_jsonreport")
    write_json(pytester, "qa.golden.json", CASES)
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "-k", "nothing-matches", "--json-report",
        "--json-report-file", "r.json",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "llmeval" not in json.loads((pytester.path / "r.json").read_text())


def test_a_secret_planted_in_the_json_report_is_found_by_the_leak_check(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another plugin adds a secret to the json report: the leak check, which runs after
    pytest-json-report wrote its file, finds it there and fails the run."""
    monkeypatch.setenv("CI_JOB_TOKEN", PLANTED)
    pytester.makeconftest(
        f"""
import pytest

@pytest.hookimpl(optionalhook=True)
def pytest_json_modifyreport(json_report):
    json_report["careless"] = "{PLANTED}"
"""
    )
    result, report = _section(pytester)
    assert report["careless"] == PLANTED
    assert PLANTED not in json.dumps(report["llmeval"])
    result.stdout.fnmatch_lines(["llmeval: leak check: a configured secret's value is in *r.json"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_a_session_without_the_json_report_plugin_runs_as_before(
    pytester: pytest.Pytester,
) -> None:
    """pytest-json-report disabled (its entry point is ``pytest_jsonreport``), as if it were
    not installed: its hook is never called, and nothing complains about it."""
    write_json(pytester, "qa.golden.json", CASES)
    off = pytester.runpytest("-p", "no:pytest_jsonreport", "--json-report")
    assert off.ret == pytest.ExitCode.USAGE_ERROR  # the plugin is really off
    result = pytester.runpytest(
        "-p", "no:pytest_jsonreport", "--llmeval-runner", "echo", *GATES,
        "--llmeval-run-dir", "run",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["*3 passed, 1 skipped*"])
    assert _report_json(pytester)["gates"]["passed"] is True
