"""A run cut short is partial and says so; a crashed xdist worker loses no case.

Each entry drives a real fault through pytest: ``-x``, a real SIGINT or SIGTERM sent to a
running session from outside, a spent budget, a worker killed with SIGKILL under ``-n 2``. Each
asserts the exit status, which cases are in ``results.jsonl``, every gate's status in
``report.json`` (and junit), that every report was written, and the ``interrupted`` record.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.commands.summarize import summarize
from tests.conftest import read_jsonl, write_json

REPORTS = ("results.jsonl", "report.json", "summary.md", "report.html", "manifest.json")

IDS = [f"c{i:02d}" for i in range(30)]
MISSES = {"c03", "c05", "c07", "c09", "c11", "c13", "c15", "c17", "c19", "c21", "c23", "c25"}
"""12 of 30 miss: the whole run's pass rate is 0.60; the first four give 0.75."""
CASES = [{"id": i, "input": i, "expected_output": "other" if i in MISSES else i} for i in IDS]
HOLDS = "golden.pass_rate>=0.7"
"""Holds on the first four cases (0.75), fails on the whole run (0.60)."""
FAILS = "golden.pass_rate>=0.8"
"""Fails on the first four cases already."""

RUNNER = """
import asyncio, os, signal
from pathlib import Path

from pytest_llmeval.core.models import Usage
from pytest_llmeval.runners.base import Completion


class Faulty:
    name = "faulty"

    def fingerprint(self):
        return {"type": "faulty"}

    async def generate(self, request):
        text = request.messages[-1].content or ""
        if text == os.environ.get("LLMEVAL_TEST_BLOCK"):
            Path("started").write_text(str(os.getpid()))
            await asyncio.sleep(600)  # until the session is signalled
        usage = Usage(prompt_tokens=1, completion_tokens=1, total_tokens=2)
        return Completion(text=text, usage=usage)

    async def aclose(self):
        return None


def pytest_llmeval_register_runners(registry):
    registry.register("faulty", lambda settings: Faulty())


def pytest_runtest_setup(item):
    if item.name == os.environ.get("LLMEVAL_TEST_KILL"):  # xdist's current item: this case
        os.kill(os.getpid(), signal.SIGKILL)
"""

BASE = (
    "-p", "no:randomly", "-p", "no:cacheprovider", "--llmeval-runner", "faulty",
    "--llmeval-concurrency", "1", "--junitxml", "junit.xml",
)  # fmt: skip


def _project(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(RUNNER)
    write_json(pytester, "qa.golden.json", CASES)


def _report(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "report.json").read_text())  # type: ignore[no-any-return]


def _gates(run_dir: Path) -> dict[str, str]:
    return {r["gate"]["name"]: r["status"] for r in _report(run_dir)["gates"]["results"]}


def _junit_gates(path: Path) -> dict[str, str]:
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.get("classname") == "llmeval-gates":
            kinds = [child.tag for child in case if child.tag in ("failure", "skipped", "error")]
            out[str(case.get("name"))] = kinds[0] if kinds else "passed"
    return out


def _outcomes(run_dir: Path) -> dict[str, str]:
    return {r["case_id"]: r["outcome"] for r in read_jsonl(run_dir / "results.jsonl")}


def _interrupted(run_dir: Path) -> tuple[Any, Any]:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    return _report(run_dir).get("interrupted"), manifest.get("interrupted")


def _all_written(run_dir: Path) -> None:
    for name in REPORTS:
        assert (run_dir / name).is_file(), f"{name} was not written"
    json.loads((run_dir / "manifest.json").read_text())


# -- -x / --maxfail ------------------------------------------------------------------------


@pytest.mark.parametrize("stop", [("-x",), ("--maxfail", "1")], ids=["-x", "--maxfail"])
def test_a_run_stopped_by_maxfail_is_partial(
    pytester: pytest.Pytester, stop: tuple[str, ...]
) -> None:
    _project(pytester)
    result = pytester.runpytest(
        *BASE, *stop, "--llmeval-run-dir", "run", "--llmeval-gate", HOLDS,
        "--llmeval-gate", FAILS,
    )  # fmt: skip
    run = pytester.path / "run"
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _all_written(run)
    assert _outcomes(run) == {"c00": "passed", "c01": "passed", "c02": "passed", "c03": "failed"}
    # 0.75 holds on the four that ran, but 30 were to run: not a pass; 0.75 < 0.8 still fails
    assert _gates(run) == {HOLDS: "partial", FAILS: "failed"}
    assert _report(run)["gates"]["passed"] is False
    expected = {"reason": "maxfail", "cases_run": 4, "cases_total": 30}
    assert _interrupted(run) == (expected, expected)
    assert _junit_gates(pytester.path / "junit.xml") == {HOLDS: "skipped", FAILS: "failure"}
    result.stdout.fnmatch_lines(["*interrupted (maxfail): 4 of 30 cases ran*"])
    assert "gates: passed" not in result.stdout.str()
    summary = (run / "summary.md").read_text()  # Markdown that reads as plain text
    assert "**interrupted (maxfail): 4 of 30 cases ran; " in summary
    page = (run / "report.html").read_text()
    assert '<p class="gate-summary partial" id="interrupted">interrupted (maxfail)' in page
    # rebuilt offline, the run is still cut short
    rebuilt = summarize(run)
    assert rebuilt.report.interrupted is not None
    assert rebuilt.report.interrupted.model_dump() == expected
    assert _gates(run) == {HOLDS: "partial", FAILS: "failed"}


def test_maxfail_under_exit_on_gates_never_ends_green(pytester: pytest.Pytester) -> None:
    """Under ``--llmeval-exit-on gates`` a case's miss is no failure, but a stopped run's exit
    status is still not made 0: here a plain test fails between two eval files."""
    pytester.makeconftest(RUNNER)
    write_json(pytester, "a.golden.json", CASES[:4])  # c03 misses: an expected failure
    pytester.makepyfile(b_test="def test_broken():\n    assert False\n")
    write_json(pytester, "c.golden.json", CASES[4:])
    result = pytester.runpytest(
        *BASE, "-x", "--llmeval-run-dir", "run", "--llmeval-gate", "golden.pass_rate>=0.5",
        "--llmeval-exit-on", "gates",
    )  # fmt: skip
    run = pytester.path / "run"
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert _outcomes(run) == {"c00": "passed", "c01": "passed", "c02": "passed", "c03": "failed"}
    assert _gates(run) == {"golden.pass_rate>=0.5": "partial"}
    expected = {"reason": "maxfail", "cases_run": 4, "cases_total": 30}
    assert _interrupted(run) == (expected, expected)


def test_an_uninterrupted_run_has_no_interrupted_key(pytester: pytest.Pytester) -> None:
    _project(pytester)
    result = pytester.runpytest(
        *BASE, "--llmeval-run-dir", "run", "--llmeval-gate", "golden.pass_rate>=0.6"
    )
    run = pytester.path / "run"
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # 12 misses
    assert _interrupted(run) == (None, None)
    assert _gates(run) == {"golden.pass_rate>=0.6": "passed"}
    assert "interrupted" not in (run / "summary.md").read_text()
    assert 'id="interrupted"' not in (run / "report.html").read_text()


# -- Ctrl-C and SIGTERM ----------------------------------------------------------------------


def _wait_for_journal_lines(
    root: Path, count: int, proc: subprocess.Popen[str], deadline: float
) -> None:
    """Until the journals under ``root`` hold ``count`` results: the run-ahead agent of the
    next case starts while pytest still reports the one before, and a signal in between
    would rightly leave that one unjudged (resume runs it), which is not what these tests
    pin."""

    def judged() -> int:
        lines = 0
        for journal in root.glob("**/journal/*/*.jsonl"):
            with contextlib.suppress(OSError):
                lines += journal.read_bytes().count(b"\n")
        return lines

    while judged() < count and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)


def _signalled(
    pytester: pytest.Pytester,
    sig: signal.Signals,
    *args: str,
    at: str = "c10",
    group: bool = False,
    runner: bool = False,
) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run pytest in a subprocess, send ``sig`` once case ``at`` is running (to the whole
    process group with ``group``, as a CI cancel does; to the process running the case with
    ``runner``, an xdist worker), wait for the end."""
    env = {**os.environ, "LLMEVAL_TEST_BLOCK": at}
    command = [sys.executable, "-m", "pytest", *args]
    proc = subprocess.Popen(
        command, cwd=pytester.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True,
    )  # fmt: skip
    marker = pytester.path / "started"
    deadline = time.monotonic() + 120  # a guard against a hang, not a timing assertion
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), f"case {at} never started"
    if "-n" not in args:  # one process: the case before ``at`` is judged, not still reporting
        _wait_for_journal_lines(pytester.path, int(at[1:]), proc, deadline)
    if group:
        os.killpg(proc.pid, sig)
    elif runner:
        os.kill(int(marker.read_text()), sig)
    else:
        proc.send_signal(sig)
    try:
        out, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        raise AssertionError(f"pytest did not end after {sig.name}:\n{out}") from None
    return subprocess.CompletedProcess(command, proc.returncode, out), int(marker.read_text())


@pytest.mark.parametrize(
    ("sig", "reason"),
    [(signal.SIGTERM, "sigterm"), (signal.SIGINT, "keyboard_interrupt")],
    ids=["SIGTERM", "SIGINT"],
)
def test_a_signalled_run_writes_every_report_and_resume_finishes_the_rest(
    pytester: pytest.Pytester, sig: signal.Signals, reason: str
) -> None:
    _project(pytester)
    done, _ = _signalled(
        pytester, sig, *BASE, "--llmeval-run-dir", "run", "--llmeval-gate", "golden.pass_rate>=0.6"
    )
    run = pytester.path / "run"
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout
    _all_written(run)
    assert sorted(_outcomes(run)) == IDS[:10]  # c10 was running: no result, run again later
    assert _gates(run) == {"golden.pass_rate>=0.6": "partial"}
    expected = {"reason": reason, "cases_run": 10, "cases_total": 30}
    assert _interrupted(run) == (expected, expected)
    assert _junit_gates(pytester.path / "junit.xml") == {"golden.pass_rate>=0.6": "skipped"}
    assert "interrupted" in (run / "summary.md").read_text()

    resumed = pytester.runpytest(
        *BASE, "--llmeval-resume", str(run), "--llmeval-gate", "golden.pass_rate>=0.6"
    )
    assert resumed.ret == pytest.ExitCode.TESTS_FAILED  # the 12 misses
    second = read_jsonl(next((run / "journal" / "002").glob("*.jsonl")))
    assert sorted(r["result"]["case_id"] for r in second) == IDS[10:]  # exactly the rest
    assert sorted(_outcomes(run)) == IDS
    assert _gates(run) == {"golden.pass_rate>=0.6": "passed"}
    assert _interrupted(run) == (None, None)


def test_sigterm_before_any_result_still_writes_every_report(pytester: pytest.Pytester) -> None:
    _project(pytester)
    done, _ = _signalled(
        pytester, signal.SIGTERM, *BASE, "--llmeval-run-dir", "run",
        "--llmeval-gate", "golden.pass_rate>=0.6", at="c00",
    )  # fmt: skip
    run = pytester.path / "run"
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout
    _all_written(run)
    assert _outcomes(run) == {}
    # nothing judged: never passed; every case of its suite was left out, so partial
    assert _gates(run) == {"golden.pass_rate>=0.6": "partial"}
    expected = {"reason": "sigterm", "cases_run": 0, "cases_total": 30}
    assert _interrupted(run) == (expected, expected)
    assert _junit_gates(pytester.path / "junit.xml") == {"golden.pass_rate>=0.6": "skipped"}
    assert "interrupted (sigterm): 0 of 30 cases ran" in done.stdout


@pytest.mark.parametrize("group", [False, True], ids=["controller", "process-group"])
def test_sigterm_under_xdist_writes_the_reports(pytester: pytest.Pytester, group: bool) -> None:
    """The controller alone is signalled (``timeout`` does that), or every process (a CI
    cancel): the controller still writes every report, and resume finishes the rest."""
    pytest.importorskip("xdist")
    _project(pytester)
    done, _ = _signalled(
        pytester, signal.SIGTERM, *BASE, "-n", "2", "--llmeval-run-dir", "run",
        "--llmeval-gate", "golden.skipped==0", group=group,
    )  # fmt: skip
    run = pytester.path / "run"
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout
    assert (run / "manifest.json").is_file(), done.stdout
    _all_written(run)
    ran = _outcomes(run)
    assert "c10" not in ran and len(ran) < 30
    assert _gates(run) == {"golden.skipped==0": "partial"}  # holds on any subset
    interrupted, in_manifest = _interrupted(run)
    assert interrupted == in_manifest == {
        "reason": "sigterm", "cases_run": len(ran), "cases_total": 30,
    }  # fmt: skip

    resumed = pytester.runpytest(*BASE, "--llmeval-resume", str(run))
    assert resumed.ret == pytest.ExitCode.TESTS_FAILED
    assert sorted(_outcomes(run)) == IDS
    assert _interrupted(run) == (None, None)


def test_a_sigterm_that_reaches_a_worker_first_is_recorded_as_sigterm(
    pytester: pytest.Pytester,
) -> None:
    """A CI cancel signals every process; a worker may stop before the controller sees its
    own signal, and xdist then stops the controller as for a Ctrl-C. The worker says why: the
    run records ``sigterm`` whichever process the signal reached first (here only a worker)."""
    pytest.importorskip("xdist")
    _project(pytester)
    done, worker = _signalled(
        pytester, signal.SIGTERM, *BASE, "-n", "2", "--llmeval-run-dir", "run", runner=True
    )
    assert worker != done.args and done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout
    interrupted, in_manifest = _interrupted(pytester.path / "run")
    assert interrupted is not None and interrupted == in_manifest
    assert interrupted["reason"] == "sigterm"


# -- a budget stop ---------------------------------------------------------------------------


def test_a_budget_stop_is_interrupted(pytester: pytest.Pytester) -> None:
    _project(pytester)
    result = pytester.runpytest(
        *BASE, "--llmeval-run-dir", "run", "--llmeval-gate", "golden.pass_rate>=0.6",
        "--llmeval-max-tokens-total", "8",
    )  # fmt: skip
    run = pytester.path / "run"
    assert result.ret == pytest.ExitCode.INTERRUPTED
    _all_written(run)
    outcomes = _outcomes(run)
    ran = [i for i, outcome in outcomes.items() if outcome != "skipped"]
    assert sorted(outcomes) == IDS and len(ran) < 30
    assert _gates(run) == {"golden.pass_rate>=0.6": "partial"}
    expected = {"reason": "budget", "cases_run": len(ran), "cases_total": 30}
    assert _interrupted(run) == (expected, expected)
    assert _junit_gates(pytester.path / "junit.xml") == {"golden.pass_rate>=0.6": "skipped"}


# -- a crashed xdist worker ------------------------------------------------------------------


def test_a_killed_worker_case_is_an_error_and_resume_runs_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xdist")
    pytester.makeconftest(RUNNER)
    write_json(
        pytester, "qa.golden.json", [{"id": i, "input": i, "expected_output": i} for i in IDS]
    )
    monkeypatch.setenv("LLMEVAL_TEST_KILL", "c07")  # the workers' runner kills itself there
    result = pytester.runpytest(
        *BASE, "-n", "2", "--llmeval-run-dir", "run", "--llmeval-gate", "golden.pass_rate>=1",
    )  # fmt: skip
    monkeypatch.delenv("LLMEVAL_TEST_KILL")
    run = pytester.path / "run"
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _all_written(run)
    outcomes = _outcomes(run)
    assert sorted(outcomes) == IDS  # no case lost
    assert {i for i, o in outcomes.items() if o != "passed"} == {"c07"}
    crashed = next(r for r in read_jsonl(run / "results.jsonl") if r["case_id"] == "c07")
    assert crashed["outcome"] == "error" and "worker crashed" in crashed["error"]
    assert crashed["suite"] == "golden" and crashed["nodeid"] == "qa.golden.json::c07"
    body = _report(run)
    assert body["totals"]["errors"] == 1 and body["suites"]["golden"]["errors"] == 1
    assert _gates(run) == {"golden.pass_rate>=1": "failed"}
    assert "29/29" not in result.stdout.str()
    assert "worker crashed" in (run / "summary.md").read_text()

    resumed = pytester.runpytest(
        *BASE, "--llmeval-resume", str(run), "--llmeval-gate", "golden.pass_rate>=1"
    )
    assert resumed.ret == pytest.ExitCode.OK
    second = read_jsonl(next((run / "journal" / "002").glob("*.jsonl")))
    assert [r["result"]["case_id"] for r in second] == ["c07"]
    assert set(_outcomes(run).values()) == {"passed"}
    assert _gates(run) == {"golden.pass_rate>=1": "passed"}


def test_a_worker_killed_after_its_case_was_judged_makes_the_run_red(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker SIGKILLed in the teardown of a case it already judged: the result stands (no
    case lost, none run twice), but xdist reports that case failed in the terminal and junit,
    and a crashed worker is an infrastructure fault: the run is red under ``--llmeval-exit-on
    gates`` too, so CI red and the exit status agree."""
    pytest.importorskip("xdist")
    pytester.makeconftest(
        RUNNER + "\n\ndef pytest_runtest_teardown(item):\n"
        "    if item.name == os.environ.get('LLMEVAL_TEST_KILL_AFTER'):\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    write_json(
        pytester, "qa.golden.json", [{"id": i, "input": i, "expected_output": i} for i in IDS]
    )
    monkeypatch.setenv("LLMEVAL_TEST_KILL_AFTER", "c07")
    result = pytester.runpytest(
        *BASE, "-n", "2", "--llmeval-run-dir", "run", "--llmeval-gate", "golden.pass_rate>=1",
        "--llmeval-exit-on", "gates",
    )  # fmt: skip
    monkeypatch.delenv("LLMEVAL_TEST_KILL_AFTER")
    run = pytester.path / "run"
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _all_written(run)
    outcomes = _outcomes(run)
    assert sorted(outcomes) == IDS and set(outcomes.values()) == {"passed"}
    assert _gates(run) == {"golden.pass_rate>=1": "passed"}
    result.stdout.fnmatch_lines(
        ["worker crashed: xdist worker gw* died after qa.golden.json::c07 was judged*"]
    )


def test_workers_given_up_on_leave_an_incomplete_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """xdist stops replacing crashed workers (``--max-worker-restart 0``): the cases the dead
    worker never reached have no result, so the run is cut short, not green."""
    pytest.importorskip("xdist")
    pytester.makeconftest(RUNNER)
    rows = [{"id": i, "input": i, "expected_output": i} for i in IDS]
    write_json(pytester, "qa.golden.json", rows)
    monkeypatch.setenv("LLMEVAL_TEST_KILL", "c07")
    result = pytester.runpytest(
        *BASE, "-n", "2", "--max-worker-restart", "0", "--llmeval-run-dir", "run",
        "--llmeval-gate", "golden.failed==0", "--llmeval-exit-on", "gates",
    )  # fmt: skip
    run = pytester.path / "run"
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _all_written(run)
    outcomes = _outcomes(run)
    assert outcomes["c07"] == "error"
    assert {i for i, o in outcomes.items() if o != "passed"} == {"c07"}
    assert len(outcomes) < 30  # the dead worker's other cases never ran
    assert _gates(run) == {"golden.failed==0": "partial"}  # holds on what ran: not a pass
    expected = {"reason": "incomplete", "cases_run": len(outcomes), "cases_total": 30}
    assert _interrupted(run) == (expected, expected)


def test_a_merge_of_a_cut_short_shard_is_cut_short(pytester: pytest.Pytester) -> None:
    _project(pytester)
    gate = ("--llmeval-gate", "golden.skipped==0")
    first = pytester.runpytest(
        *BASE, *gate, "-x", "--llmeval-shard", "0/2", "--llmeval-run-dir", "s0"
    )
    assert first.ret == pytest.ExitCode.TESTS_FAILED
    stopped, _ = _interrupted(pytester.path / "s0")
    assert stopped is not None and stopped["reason"] == "maxfail"
    second = pytester.runpytest(*BASE, *gate, "--llmeval-shard", "1/2", "--llmeval-run-dir", "s1")
    assert _interrupted(pytester.path / "s1") == (None, None)
    command = [sys.executable, "-m", "pytest_llmeval", "merge", "merged", "s0", "s1"]
    done = subprocess.run(command, cwd=pytester.path, capture_output=True, text=True)
    assert done.returncode == second.ret == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
    merged = pytester.path / "merged"
    ran = len(_outcomes(merged))
    expected = {"reason": "maxfail", "cases_run": ran, "cases_total": 30}
    assert _interrupted(merged) == (expected, expected) and ran < 30
    assert _gates(merged) == {"golden.skipped==0": "partial"}


def test_a_cut_short_run_does_not_update_the_baseline(pytester: pytest.Pytester) -> None:
    """A subset of the cases blessed as the baseline would hide every later regression in the
    cases left out: the file is left as it was."""
    _project(pytester)
    kept = '{"baseline_version": "1", "kept": true}\n'  # a baseline file: replaceable
    (pytester.path / "baseline.json").write_text(kept)
    result = pytester.runpytest(
        *BASE, "-x", "--llmeval-run-dir", "run", "--llmeval-update-baseline", "baseline.json"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert (pytester.path / "baseline.json").read_text() == kept
    result.stdout.fnmatch_lines(["llmeval: baseline *baseline.json not updated: the run was cut*"])
    _all_written(pytester.path / "run")


# -- an agent that raises SystemExit or KeyboardInterrupt ------------------------------------

RAISING_AGENT = """
import asyncio
import pytest


async def _exits():
    raise SystemExit(3)


class Agent:
    def run(self, case, broker):  # sync: in a thread
        if case.case_id == "sync-exit":
            raise SystemExit("bye")
        if case.case_id == "sync-interrupt":
            raise KeyboardInterrupt
        return case.case_id


class AsyncAgent:
    async def run(self, case, broker):  # on the dispatcher's loop
        if case.case_id == "async-exit":
            raise SystemExit(2)
        if case.case_id == "async-interrupt":
            raise KeyboardInterrupt("from the agent")
        if case.case_id == "task-exit":  # in a task of the agent's own
            await asyncio.ensure_future(_exits())
        return case.case_id


@pytest.fixture(scope="session")
def llmeval_agent():
    return AGENT()
"""


@pytest.mark.parametrize(
    ("agent", "raising"),
    [
        ("Agent", {"sync-exit": "SystemExit('bye')", "sync-interrupt": "KeyboardInterrupt()"}),
        (
            "AsyncAgent",
            {
                "async-exit": "SystemExit(2)",
                "async-interrupt": "KeyboardInterrupt('from the agent')",
                "task-exit": "SystemExit(3)",
            },
        ),
    ],
    ids=["sync", "async"],
)
def test_an_agent_raising_systemexit_or_keyboardinterrupt_is_its_cases_error(
    pytester: pytest.Pytester, agent: str, raising: dict[str, str]
) -> None:
    """Neither may escape into the dispatcher's event loop: that stopped the loop and the
    session waited for the case forever. Each is the case's agent error, and the rest run."""
    pytester.makeconftest(RAISING_AGENT.replace("AGENT", agent))
    ids = [*raising, "fine-1", "fine-2"]
    rows = [{"id": i, "input": i, "expected_output": i} for i in ids]
    write_json(pytester, "qa.golden.json", rows)
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:cacheprovider", "--llmeval-concurrency", "2",
        "--llmeval-timeout", "30", "--llmeval-run-dir", "run",
        "--llmeval-gate", "golden.pass_rate>=0.1", timeout=120,
    )  # fmt: skip
    run = pytester.path / "run"
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    _all_written(run)
    rows = {r["case_id"]: r for r in read_jsonl(run / "results.jsonl")}
    assert {i: r["outcome"] for i, r in rows.items()} == {
        **dict.fromkeys(raising, "error"), "fine-1": "passed", "fine-2": "passed",
    }  # fmt: skip
    for case_id, raised in raising.items():
        assert rows[case_id]["error"] == f"the agent raised {raised}"
    assert _gates(run) == {"golden.pass_rate>=0.1": "passed"}
    assert _interrupted(run) == (None, None)


# -- a signal while the reports are written ---------------------------------------------------

WRITING = """
import os, time
from pathlib import Path

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):  # the reports are being written: signalled here
    Path("started").write_text(str(os.getpid()))
    while not Path("go").exists():
        time.sleep(0.02)
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_while_the_reports_are_written_waits_for_them(
    pytester: pytest.Pytester, sig: signal.Signals
) -> None:
    """A CI cancel or a second Ctrl-C once the test loop has ended no longer tears the reports
    apart (a traceback, no summary): it is held until they are written; the run exits 2."""
    pytester.makeconftest(WRITING)
    write_json(
        pytester, "qa.golden.json", [{"id": i, "input": i, "expected_output": i} for i in IDS[:3]]
    )
    command = [
        sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
        "--llmeval-runner", "echo", "--llmeval-run-dir", "run", "--junitxml", "junit.xml",
        "--llmeval-gate", "golden.pass_rate>=1",
    ]  # fmt: skip
    proc = subprocess.Popen(
        command, cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    marker = pytester.path / "started"
    deadline = time.monotonic() + 120  # a guard against a hang, not a timing assertion
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), proc.communicate()[0]
    proc.send_signal(sig)
    (pytester.path / "go").write_text("")
    try:
        out, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError(proc.communicate()[0]) from None
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out
    out_lines = out.splitlines()
    assert (
        f"llmeval: {sig.name} arrived while the reports were written: they were finished "
        "first; the run is not green" in out_lines
    ), out
    run = pytester.path / "run"
    _all_written(run)
    assert sorted(_outcomes(run)) == IDS[:3]
    assert _gates(run) == {"golden.pass_rate>=1": "passed"}  # every case ran and passed
    assert _junit_gates(pytester.path / "junit.xml") == {"golden.pass_rate>=1": "passed"}
    assert "3 passed" in out


# -- why a run was cut short, and how many cases it had ---------------------------------------


def test_maxfail_under_xdist_is_maxfail_and_exits_1(pytester: pytest.Pytester) -> None:
    """xdist's controller stops with its own ``Interrupted``: it was recorded as a Ctrl-C and
    exited 2; it is ``maxfail`` and exits 1, as without ``-n``."""
    pytest.importorskip("xdist")
    _project(pytester)
    result = pytester.runpytest(
        *BASE, "-n", "2", "-x", "--llmeval-run-dir", "run", "--llmeval-gate", FAILS
    )
    run = pytester.path / "run"
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _all_written(run)
    ran = _outcomes(run)
    assert "failed" in ran.values() and len(ran) < 30
    assert _gates(run) == {FAILS: "failed"}
    interrupted, in_manifest = _interrupted(run)
    assert interrupted == in_manifest == {"reason": "maxfail", "cases_run": len(ran),
                                          "cases_total": 30}  # fmt: skip
    result.stdout.fnmatch_lines([f"*interrupted (maxfail): {len(ran)} of 30 cases ran*"])


@pytest.mark.parametrize(
    "select",
    [("-k", "not c00 and not c01"), ("--sw",)],
    ids=["-k", "stepwise"],
)
def test_cases_total_and_the_cases_left_out_add_up(
    pytester: pytest.Pytester, select: tuple[str, ...]
) -> None:
    """A cut-short run that also deselected cases (``-k``, ``--sw`` skipping those that passed
    before): ``cases_total`` is every case, so the cases that ran and the cases left out
    (``deselected``, the gate's count) add up to it."""
    _project(pytester)
    args = ("-p", "no:randomly", "--llmeval-runner", "faulty", "--llmeval-concurrency", "1")
    if select == ("--sw",):  # the first run stops at c03; the second skips c00..c02
        pytester.runpytest(*args, "--sw", "--llmeval-run-dir", "first")
    result = pytester.runpytest(
        *args, *select, "-x", "--llmeval-run-dir", "run", "--llmeval-gate", "golden.skipped==0"
    )
    run = pytester.path / "run"
    assert result.ret != pytest.ExitCode.OK
    ran = _outcomes(run)
    report = _report(run)
    assert report["interrupted"]["cases_total"] == 30
    assert report["interrupted"]["cases_run"] == len(ran)
    assert len(ran) + report["deselected"]["golden"] == 30
    assert ran == ({"c02": "passed", "c03": "failed"} if "-k" in select else {"c03": "failed"})
    assert _gates(run) == {"golden.skipped==0": "partial"}  # holds on any subset
    left_out = 30 - len(ran)
    gate = f"gate golden.skipped==0: partial (*{len(ran)} of 30 cases; {left_out} case(s) left out)"
    result.stdout.fnmatch_lines([gate, f"llmeval: interrupted (*): {len(ran)} of 30 cases ran*"])


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_a_full_disk_is_recorded_as_the_journal_stopping(
    pytester: pytest.Pytester, xdist: tuple[str, ...]
) -> None:
    """The journal stopped on a full disk: ``interrupted`` says ``journal`` (it said
    ``stopped``, and ``keyboard_interrupt`` under xdist), and the run exits 1."""
    if xdist:
        pytest.importorskip("xdist")
    from tests.fail_closed.test_state import _mounted

    long = "w" * 6000  # each journal line is about 20 KB: the disk fills after a few cases
    rows = [{"id": f"c{i:02d}", "input": f"{long}{i}", "expected_output": f"{long}{i}"}
            for i in range(40)]  # fmt: skip
    write_json(pytester, "qa.golden.json", rows)
    target = pytester.path / "small"
    with _mounted(target, "size=160k"):
        full = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", "--llmeval-runner", "echo",
            "--llmeval-run-dir", str(target / "run"), *xdist,
        )  # fmt: skip
        assert full.ret == pytest.ExitCode.TESTS_FAILED
        full.stdout.fnmatch_lines(["*could not write the journal *: No space left on device; *"])
    # the reports may not fit the full disk: the terminal says why the run stopped
    full.stdout.fnmatch_lines(["llmeval: interrupted (journal): * of 40 cases ran*"])


def test_the_resume_hint_names_the_real_run_dir_with_equals(pytester: pytest.Pytester) -> None:
    """A spaced ``--llmeval-resume PATH`` moves pytest's rootdir: every hint a cut-short run
    prints is the ``=`` form, with the run dir's real path, ready to paste."""
    _project(pytester)
    kept = '{"baseline_version": "1", "kept": true}\n'
    (pytester.path / "baseline.json").write_text(kept)
    result = pytester.runpytest(
        *BASE, "-x", "--llmeval-run-dir", "run", "--llmeval-update-baseline", "baseline.json"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    run = pytester.path / "run"
    out = result.stdout.str()
    assert "--llmeval-resume RUN_DIR" not in out
    assert f"--llmeval-resume={run} runs the rest" in out
    assert (
        f"finish it with --llmeval-resume={run} "
        f"--llmeval-update-baseline={pytester.path / 'baseline.json'})" in out
    )
    assert "`--llmeval-resume=RUN_DIR` runs the rest" in (run / "summary.md").read_text()
