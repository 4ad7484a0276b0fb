"""python -m pytest_llmeval summarize: rebuild a run dir's reports offline."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write_json

CASES = [
    {"id": "a", "category": "x", "input": "hello", "expected_output": "hello"},
    {"id": "b", "category": "y", "input": "foo", "expected_output": "bar"},
]


def _summarize(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest_llmeval", "summarize", *args]
    return subprocess.run(command, capture_output=True, text=True)


def test_summarize_rebuilds_the_same_reports(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run",
                       "--llmeval-gate", "golden.pass_rate>=0.5")  # fmt: skip
    run = pytester.path / "run"
    before = json.loads((run / "report.json").read_text())
    for name in ("report.json", "summary.md", "report.html", "results.jsonl"):
        (run / name).unlink()
    done = _summarize(str(run))
    assert done.returncode == 1, done.stderr  # a case failed: red, as the session was
    assert "golden: 1/2 passed (50.0%)" in done.stdout
    assert json.loads((run / "report.json").read_text()) == before
    assert (run / "summary.md").is_file() and (run / "report.html").is_file()
    assert before["gates"]["passed"] is True


def test_summarize_refuses_what_is_not_a_run_dir(tmp_path: pytest.TempPathFactory) -> None:
    done = _summarize(str(tmp_path))
    assert done.returncode == 2
    assert "no manifest.json with settings; is this a run dir?" in done.stderr


def test_summarize_keeps_the_baseline_and_the_suites_own_gates(pytester: pytest.Pytester) -> None:
    root = Path(__file__).resolve().parents[2]
    write_json(pytester, "qa.golden.json", CASES)
    pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "base",
                       "--llmeval-update-baseline", "baseline.json")  # fmt: skip
    shutil.copy(root / "evals" / "tool_integration.integration.jsonl", pytester.path)
    (pytester.path / "fixtures").mkdir(exist_ok=True)
    shutil.copytree(root / "fixtures" / "tools", pytester.path / "fixtures" / "tools")
    shutil.copy(root / "evals" / "tools.json", pytester.path)
    shutil.copy(root / "evals" / "conftest.py", pytester.path)
    session = pytester.runpytest("--llmeval-runner", "example-router", "--llmeval-run-dir", "run",
                       "--llmeval-tool-registry", "tools.json",
                       "--llmeval-baseline", "baseline.json",
                       "--llmeval-baseline-allow-mismatch")  # fmt: skip
    run = pytester.path / "run"
    before = json.loads((run / "report.json").read_text())
    assert "baseline" in before
    assert any(g["gate"]["source"] == "header" for g in before["gates"]["results"])
    (run / "report.json").unlink()
    done = _summarize(str(run))
    assert done.returncode == session.ret == 1, done.stderr  # exits as the session did
    assert json.loads((run / "report.json").read_text()) == before


def test_summary_md_is_inert_for_hostile_case_text() -> None:
    from pytest_llmeval.core.models import CaseResult
    from pytest_llmeval.report.console import summary_markdown
    from pytest_llmeval.rundir.models import Report

    totals = {"total": 1, "passed": 0, "failed": 1, "errors": 0, "skipped": 0, "pass_rate": 0.0}
    hostile = "x|y\n# Owned\n![i](http://e/i.png) [link](http://e) <img src=x onerror=alert(1)> `c`"
    report = Report.model_validate(
        {
            "plugin_version": "x",
            "suites": {"golden": {**totals, "categories": {"a|b<script>": totals}}},
            "totals": totals,
            "runner_fingerprint": "r`r",
            "dataset_sha256": "d",
            "datasets": {},
            "runners": {},
        }
    )
    result = CaseResult(case_id="c", suite="golden", file="f.json", line=1,
                        nodeid="f.json::c|`</td>[x](y)", outcome="failed", passed=False,
                        error=hostile)  # fmt: skip
    text = summary_markdown(report, [result])
    # every hostile text is a code span (inert, and as it is in a CI log): nothing outside one
    rendered = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "<code>", text)
    for live in ("<img", "<script>", "\n# Owned", "![", "[link]", "</td>"):
        assert live not in rendered, live
    assert "&lt;" not in text and "\\(" not in text  # no entities, no backslash escapes
    assert "| golden | `a\\|b<script>` | 1 |" in text  # one cell, not two
    failing = [line for line in text.splitlines() if line.startswith("- ")]
    assert failing == [
        "- ``f.json::c|`</td>[x](y)`` (failed): `` x|y # Owned ![i](http://e/i.png) "
        "[link](http://e) <img src=x onerror=alert(1)> `c` ``"
    ]
    assert "runner: ``r`r``" in text


def test_summarize_finds_the_manifests_gates(pytester: pytest.Pytester) -> None:
    """Without a session, the manifests are those the results were collected through: read
    where they are, or, when they are not there (a run made elsewhere), taken from the old
    report."""
    write_json(pytester, "data/rows.json", CASES)
    pytester.path.joinpath("qa.llmeval.yaml").write_text(
        "suite: golden\ndata: data/rows.json\ngates: [pass_rate >= 0.5]\n"
    )
    pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    run = pytester.path / "run"
    before = json.loads((run / "report.json").read_text())
    assert [g["gate"]["name"] for g in before["gates"]["results"]] == ["golden.pass_rate>=0.5"]
    (run / "report.json").unlink()  # no old report: the gate is the manifest's, read again
    done = _summarize(str(run))
    assert done.returncode == 1, done.stderr  # case b failed
    assert json.loads((run / "report.json").read_text())["gates"] == before["gates"]
    pytester.path.joinpath("qa.llmeval.yaml").unlink()  # elsewhere: the old report's gate
    done = _summarize(str(run))
    assert json.loads((run / "report.json").read_text())["gates"] == before["gates"]
