"""Every run dir records how its session ended, and every reader shows that record.

A run can exit 1 for a reason its files cannot show: an xdist worker that died after its case
was judged, a secret found by the leak check after the reports were written, a plain test of
the same session that failed. Judging the files again would read such a run as ``passed``.
The session writes its verdict (status, exit status, reasons) into ``manifest.json`` and
report.html's header; ``runs``, ``compare``, ``summarize`` and ``merge`` read it back. Each
entry drives a real fault through pytest and checks every reader.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_json
from tests.fail_closed.test_interrupt import BASE, IDS, RUNNER

PLANTED = "ci-job-token-1f3b9a7c5e2d4b6a8c0e"
"""A secret value the leak check looks for (set as ``CI_JOB_TOKEN``)."""


def _manifest_verdict(run: Path) -> dict[str, Any]:
    manifest = json.loads((run / "manifest.json").read_text())
    verdict = manifest["verdict"]
    assert isinstance(verdict, dict)
    return verdict


def _page_verdict(run: Path) -> str:
    page = (run / "report.html").read_text(encoding="utf-8")
    (shown,) = re.findall(r'data-fact="verdict"><dt>verdict</dt><dd class="verdict (\w+)">', page)
    return str(shown)


def _command(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_llmeval", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200"},
        timeout=120,
    )


def _runs_line(cwd: Path, run: Path) -> str:
    done = _command(cwd, "runs", str(run.parent))
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    (line,) = [line for line in done.stdout.splitlines() if f"  {run.name}  " in line]
    return line


def _golden(pytester: pytest.Pytester, ids: list[str] = IDS) -> None:
    write_json(
        pytester, "qa.golden.json", [{"id": i, "input": i, "expected_output": i} for i in ids]
    )


def test_a_worker_crash_after_judging_reads_failed_everywhere(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every case passed and the gate held, but a worker died in a teardown: the session
    exits 1, and the manifest, the page, ``runs``, ``compare`` and ``summarize`` say failed
    and why; a merge of it fails too."""
    pytest.importorskip("xdist")
    pytester.makeconftest(
        RUNNER + "\n\ndef pytest_runtest_teardown(item):\n"
        "    if item.name == os.environ.get('LLMEVAL_TEST_KILL_AFTER'):\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    _golden(pytester)
    gated = ("--llmeval-gate", "golden.pass_rate>=1", "--llmeval-exit-on", "gates")
    monkeypatch.setenv("LLMEVAL_TEST_KILL_AFTER", "c07")
    result = pytester.runpytest(*BASE, "-n", "2", "--llmeval-run-dir=out/crashed", *gated)
    monkeypatch.delenv("LLMEVAL_TEST_KILL_AFTER")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    crashed = pytester.path / "out/crashed"
    recorded = _manifest_verdict(crashed)
    assert recorded["status"] == "failed" and recorded["exit_status"] == 1
    (reason,) = recorded["reasons"]
    assert reason.startswith("worker crashed: xdist worker gw") and "c07 was judged" in reason
    assert recorded["faults"] == [{"kind": "crash", "message": reason}]
    assert _page_verdict(crashed) == "failed"
    assert "  failed  (worker crashed: xdist worker gw" in _runs_line(pytester.path, crashed)

    clean = pytester.runpytest(*BASE, "--llmeval-run-dir=out/clean", *gated)
    assert clean.ret == pytest.ExitCode.OK
    assert _manifest_verdict(pytester.path / "out/clean") == {
        "status": "passed", "exit_status": 0, "reasons": [], "faults": []
    }  # fmt: skip
    done = _command(pytester.path, "compare", "out/clean", "out/crashed", "--out", "cmp")
    assert done.returncode == 0, done.stderr
    runs = [
        line.strip("| ").split(" | ") for line in done.stdout.split("## Suites")[0].splitlines()
    ]
    verdicts = {cells[1].strip("`"): cells[5] for cells in runs if len(cells) == 6}
    assert verdicts == {"run dir": "verdict", "clean": "passed", "crashed": "failed"}, runs

    # summarize judges the files again, and keeps what only the session knew
    done = _command(pytester.path, "summarize", "out/crashed")
    assert done.returncode == 1, done.stdout + done.stderr
    assert _manifest_verdict(crashed)["reasons"] == [reason]
    assert _page_verdict(crashed) == "failed"


def test_a_leak_found_after_the_reports_reads_failed_everywhere(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The leak check runs after every writer, the run dir's own too: the verdict it changes
    is written again, so the manifest and the page do not read greener than the exit status."""
    pytest.importorskip("pytest_jsonreport")
    monkeypatch.setenv("CI_JOB_TOKEN", PLANTED)
    pytester.makeconftest(
        "import pytest\n\n@pytest.hookimpl(optionalhook=True)\n"
        f"def pytest_json_modifyreport(json_report):\n    json_report['careless'] = '{PLANTED}'\n"
    )
    _golden(pytester, IDS[:3])
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-run-dir=out/leaky", "--json-report",
        "--json-report-file=r.json",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    leaky = pytester.path / "out/leaky"
    recorded = _manifest_verdict(leaky)
    assert recorded["status"] == "failed" and recorded["exit_status"] == 1
    assert [f["kind"] for f in recorded["faults"]] == ["leak"]
    assert recorded["reasons"][0].startswith("leak check: a configured secret's value is in ")
    assert recorded["reasons"][0].endswith("r.json")
    assert _page_verdict(leaky) == "failed"
    assert "  failed  (leak check: " in _runs_line(pytester.path, leaky)
    for path in leaky.iterdir():  # the verdict written again holds no secret either
        if path.is_file():
            assert PLANTED not in path.read_text(encoding="utf-8", errors="replace")


def test_a_plain_test_failing_beside_the_evals_fails_the_run(pytester: pytest.Pytester) -> None:
    """Every eval case passed, a plain test of the same session failed: the run exited 1, and
    its record says so rather than ``passed``."""
    _golden(pytester, IDS[:3])
    pytester.makepyfile(test_plain="def test_plain():\n    assert False\n")
    result = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir=out/mixed")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    mixed = pytester.path / "out/mixed"
    assert _manifest_verdict(mixed) == {
        "status": "failed", "exit_status": 1, "reasons": ["pytest exited with status 1"],
        "faults": [],
    }  # fmt: skip
    assert _page_verdict(mixed) == "failed"
    assert "  failed  (pytest exited with status 1)" in _runs_line(pytester.path, mixed)


def test_a_cut_short_run_records_partial_with_its_exit_status(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(RUNNER)  # two tokens a case
    _golden(pytester, IDS[:6])
    result = pytester.runpytest(
        *BASE, "--llmeval-run-dir=out/cut", "--llmeval-gate", "golden.pass_rate>=0.5",
        "--llmeval-max-tokens-total=3",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.INTERRUPTED
    recorded = _manifest_verdict(pytester.path / "out/cut")
    assert recorded["status"] == "partial" and recorded["exit_status"] == int(result.ret)
    assert recorded["reasons"] == ["cut short (budget)"]
    assert _page_verdict(pytester.path / "out/cut") == "partial"


def test_a_run_dir_without_a_recorded_verdict_is_judged_from_its_files(
    pytester: pytest.Pytester,
) -> None:
    """Run dirs written before the verdict was recorded still list with the verdict their
    files show."""
    write_json(
        pytester,
        "qa.golden.json",
        [{"id": "a", "input": "a", "expected_output": "a"},
         {"id": "b", "input": "b", "expected_output": "not b"}],
    )  # fmt: skip
    assert pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir=out/old").ret == 1
    old = pytester.path / "out/old"
    manifest = json.loads((old / "manifest.json").read_text())
    assert manifest.pop("verdict")["reasons"] == ["1 case(s) failed"]
    (old / "manifest.json").write_text(json.dumps(manifest))
    assert "  failed  (1 case(s) failed)" in _runs_line(pytester.path, old)


def test_a_merge_keeps_what_only_a_shards_session_knew(pytester: pytest.Pytester) -> None:
    """A shard whose session recorded a crash: the merged run fails, naming the shard."""
    _golden(pytester, IDS[:6])
    for index in range(2):
        result = pytester.runpytest(
            "--llmeval-runner", "echo", f"--llmeval-shard={index}/2",
            f"--llmeval-run-dir=s{index}",
        )  # fmt: skip
        assert result.ret == pytest.ExitCode.OK
    manifest_path = pytester.path / "s1/manifest.json"
    manifest = json.loads(manifest_path.read_text())
    crash = "worker crashed: xdist worker gw1 died after qa.golden.json::c01 was judged"
    manifest["verdict"] = {
        "status": "failed", "exit_status": 1, "reasons": [crash],
        "faults": [{"kind": "crash", "message": crash}],
    }  # fmt: skip
    manifest_path.write_text(json.dumps(manifest))
    done = _command(pytester.path, "merge", "merged", "s0", "s1")
    assert done.returncode == 1, done.stdout + done.stderr
    recorded = _manifest_verdict(pytester.path / "merged")
    assert recorded["status"] == "failed" and recorded["reasons"] == [f"s1: {crash}"]
    assert _page_verdict(pytester.path / "merged") == "failed"
