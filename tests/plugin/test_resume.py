"""Crash-safe resume: kill -9 a real pytest run, resume it, get the uninterrupted reports."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import read_jsonl, run_outputs, write_json

SLOW_CONFTEST = """
from pytest_llmeval.testing.scripted import ScriptedModel

def pytest_llmeval_register_runners(registry):
    registry.register("slow", lambda s: ScriptedModel(delay_s=0.15, fail_with="boom"))
"""
CASES = [
    {"id": f"c{i:02d}", "input": "boom" if i == 3 else f"m{i}",
     "expected_output": f"m{i}" if i % 4 else "nope"}
    for i in range(14)
]  # fmt: skip


def _journaled(run_dir: Path) -> list[dict[str, Any]]:
    """Complete journal lines so far (a line being written may be cut short)."""
    rows = []
    for path in (run_dir / "journal").rglob("*.jsonl"):
        for line in path.read_text().splitlines():
            with contextlib.suppress(ValueError):
                rows.append(json.loads(line)["result"])
    return rows


def test_resume_after_kill_9_gives_the_uninterrupted_reports(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(SLOW_CONFTEST)
    write_json(pytester, "qa.golden.json", CASES)
    base = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--llmeval-runner", "slow",
            "--llmeval-concurrency", "1"]  # fmt: skip
    run_dir = pytester.path / "run"
    proc = subprocess.Popen(
        [*base, "--llmeval-run-dir", str(run_dir)],
        cwd=pytester.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while len(_journaled(run_dir)) < 5:
        assert proc.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline, "no journal lines appeared"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    journaled = _journaled(run_dir)
    assert 5 <= len(journaled) < len(CASES)
    assert not (run_dir / "report.json").exists()
    final = {r["nodeid"] for r in journaled if r["outcome"] != "error"}

    resumed = pytester.runpytest_subprocess(
        "--llmeval-runner", "slow", "--llmeval-concurrency", "1", "--llmeval-resume", str(run_dir)
    )
    # cases with a final result were not run again; the error (c03) was, being not final
    assert resumed.parseoutcomes()["deselected"] == len(final)
    assert "qa.golden.json::c03" not in final
    full = pytester.runpytest_subprocess(
        "--llmeval-runner", "slow", "--llmeval-concurrency", "1",
        "--llmeval-run-dir", str(pytester.path / "full"),
    )  # fmt: skip
    assert full.ret == resumed.ret == pytest.ExitCode.TESTS_FAILED
    assert run_outputs(run_dir) == run_outputs(pytester.path / "full")
    assert len(read_jsonl(run_dir / "results.jsonl")) == len(CASES)


def test_resume_says_what_its_tallies_count(pytester: pytest.Pytester) -> None:
    """llmeval's tallies cover the whole run, pytest's line this session; the
    terminal says so, and names expected misses that pytest calls xfailed."""
    write_json(pytester, "qa.golden.json", CASES[4:10])
    pytester.makefile(".yaml", w2c="suite: golden\ndata: qa.golden.json\nmisses: xfail\n").rename(
        pytester.path / "w2c.llmeval.yaml"
    )
    first = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run", "-k", "c05")
    first.assert_outcomes(passed=1, deselected=5)
    resumed = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-resume", "run")
    resumed.assert_outcomes(passed=3, xfailed=2, deselected=1)
    resumed.stdout.fnmatch_lines(
        [
            "all: 4/6 passed (66.7%), 2 failed, 0 errors, 0 skipped",
            "llmeval: the tallies cover the whole run: 1 case(s) from earlier attempts, 5 run "
            "in this session (pytest's line counts this session); 2 of the failed are expected "
            "misses (pytest's xfailed)",
        ]
    )


def test_a_resume_judges_the_gates_of_the_manifests_it_reuses(pytester: pytest.Pytester) -> None:
    """Resuming with fewer paths still reports every result of the run dir, so the gates of a
    manifest whose results are only reused (not collected again) are judged too."""
    rows = [{"id": "a", "input": "x", "expected_output": "x"}]
    write_json(pytester, "a/rows.json", rows)
    write_json(pytester, "b/rows.json", rows)
    for name, gate in (("a", "pass_rate >= 0.5"), ("b", "passed >= 1")):
        pytester.path.joinpath(f"{name}/m.llmeval.yaml").write_text(
            f"suite: golden\ndata: rows.json\ngates: [{gate}]\n"
        )
    first = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    assert first.ret == pytest.ExitCode.OK
    resumed = pytester.runpytest("a", "--llmeval-runner", "echo", "--llmeval-resume", "run")
    report = json.loads((pytester.path / "run/report.json").read_text())
    names = {g["gate"]["name"]: g["status"] for g in report["gates"]["results"]}
    assert names == {"golden.pass_rate>=0.5": "passed", "golden.passed>=1": "passed"}
    assert resumed.ret == pytest.ExitCode.OK
