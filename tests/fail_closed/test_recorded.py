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
import shutil
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
    message = "a test that is not an eval case failed: test_plain.py::test_plain"
    assert _manifest_verdict(mixed) == {
        "status": "failed", "exit_status": 1, "reasons": [message],
        "faults": [{"kind": "tests", "message": message}],
    }  # fmt: skip
    assert _page_verdict(mixed) == "failed"
    assert f"  failed  ({message})" in _runs_line(pytester.path, mixed)


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


LATE = {
    "pytest.exit() in another plugin's sessionfinish": (
        "def pytest_sessionfinish(session):\n"
        "    pytest.exit('a conftest stops the session', returncode=3)\n",
        3,
    ),
    "an outer sessionfinish wrapper": (
        "@pytest.hookimpl(wrapper=True, tryfirst=True)\n"
        "def pytest_sessionfinish(session):\n"
        "    result = yield\n"
        "    session.exitstatus = 1\n"
        "    return result\n",
        1,
    ),
    "a last sessionfinish": (
        "@pytest.hookimpl(trylast=True)\n"
        "def pytest_sessionfinish(session):\n"
        "    session.exitstatus = 1\n",
        1,
    ),
    "another plugin's unconfigure": (
        "SEEN = []\n\n"
        "def pytest_sessionstart(session):\n"
        "    SEEN.append(session)\n\n"
        "def pytest_unconfigure(config):\n"
        "    SEEN[0].exitstatus = 1\n",
        1,
    ),
    "SIGTERM while the reports are written": (
        "import os, signal\n\n"
        "@pytest.hookimpl(trylast=True)\n"
        "def pytest_sessionfinish(session):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n",
        2,
    ),
}


@pytest.mark.parametrize("late", LATE, ids=list(LATE))
def test_a_status_changed_after_the_record_is_recorded_as_pytest_exits(
    pytester: pytest.Pytester, late: str
) -> None:
    """Every case passed and the gate held, then something after this plugin's sessionfinish
    changed the exit status: the record says what the process really exits with, under
    ``--llmeval-exit-on gates`` too (another plugin's red status is never made green)."""
    hook, status = LATE[late]
    pytester.makeconftest("import pytest\n\n" + hook)
    _golden(pytester, IDS[:3])
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "--llmeval-runner", "echo", "--llmeval-run-dir=out/late",
        "--llmeval-exit-on", "gates", "--llmeval-gate", "golden.pass_rate>=0.5",
    )  # fmt: skip
    assert result.ret == status, result.stdout.str()
    late_dir = pytester.path / "out/late"
    recorded = _manifest_verdict(late_dir)
    assert recorded["status"] == "failed" and recorded["exit_status"] == status
    assert recorded["faults"] == [
        {"kind": "exit", "message": f"pytest exited with status {status}"}
    ]
    assert _page_verdict(late_dir) == "failed"
    assert f"  failed  (pytest exited with status {status})" in _runs_line(pytester.path, late_dir)
    # summarize cannot see why the session exited so: it keeps it, every time
    for _ in range(2):
        assert _command(pytester.path, "summarize", "out/late").returncode == 1
        assert _manifest_verdict(late_dir)["status"] == "failed"


@pytest.mark.parametrize("phase", ["collect", "setup", "call", "teardown"])
def test_a_plain_test_failing_under_exit_on_gates_is_red(
    pytester: pytest.Pytester, phase: str
) -> None:
    """``--llmeval-exit-on gates`` lets failed eval cases through, not a failing test of the
    project's own (in a fixture's setup or teardown too): the session exits 1, its record
    names the test, and summarize and merge keep it."""
    body = {
        "collect": "    yield\n",
        "setup": "    raise RuntimeError('setup')\n",
        "call": "    yield\n",
        "teardown": "    yield\n    raise RuntimeError('teardown')\n",
    }[phase]
    check = {"call": "assert False", "collect": "pass  ("}.get(phase, "pass")
    pytester.makepyfile(
        test_plain=f"import pytest\n\n@pytest.fixture\ndef db():\n{body}\n\n"
        f"def test_plain(db):\n    {check}\n"
    )
    _golden(pytester, IDS[:4])
    gated = ("--llmeval-exit-on", "gates", "--llmeval-gate", "golden.pass_rate>=0.5")
    gated += ("--continue-on-collection-errors",)
    for index in range(2):
        result = pytester.runpytest(
            "-p", "no:randomly", "--llmeval-runner", "echo", f"--llmeval-shard={index}/2",
            f"--llmeval-run-dir=s{index}", *gated, "qa.golden.json", "test_plain.py",
        )  # fmt: skip
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        recorded = _manifest_verdict(pytester.path / f"s{index}")
        plain = "test_plain.py" if phase == "collect" else "test_plain.py::test_plain"
        message = f"a test that is not an eval case failed: {plain}"
        assert recorded == {
            "status": "failed", "exit_status": 1, "reasons": [message],
            "faults": [{"kind": "tests", "message": message}],
        }  # fmt: skip
    for _ in range(2):
        done = _command(pytester.path, "summarize", "s0")
        assert done.returncode == 1, done.stdout + done.stderr
        assert _manifest_verdict(pytester.path / "s0")["reasons"] == [message]
    done = _command(pytester.path, "merge", "merged", "s0", "s1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert _manifest_verdict(pytester.path / "merged")["reasons"] == [
        f"s0: {message}",
        f"s1: {message}",
    ]
    # a session of plain tests alone, with the ini's exit-on gates, is red too
    (pytester.path / "qa.golden.json").unlink()
    plain_only = pytester.runpytest("--llmeval-exit-on", "gates", *gated[-1:], "test_plain.py")
    assert plain_only.ret == 1


FORGED: dict[str, tuple[str, Any]] = {
    "passed with exit status 1": ("exit_status", 1),
    "passed with exit status true": ("exit_status", True),
    "passed with exit status '0'": ("exit_status", "0"),
    "passed with a reason": ("reasons", ["gate golden.pass_rate>=1 failed"]),
    "passed with a fault": ("faults", [{"kind": "crash", "message": "gw0 died"}]),
    "an unknown status": ("status", "green"),
    "an unknown field": ("judged_by", "me"),
}


def test_a_forged_verdict_never_reads_green_and_says_so_in_one_line(
    pytester: pytest.Pytester,
) -> None:
    """A hand-edited record that contradicts itself is refused by every reader in one line
    (never a traceback, never green); a huge or many-line reason is listed short, on one
    line; a fault of a kind this version does not know still fails summarize and merge."""
    _golden(pytester, IDS[:4])
    for index in range(2):
        result = pytester.runpytest(
            "--llmeval-runner", "echo", f"--llmeval-shard={index}/2", f"--llmeval-run-dir=s{index}"
        )
        assert result.ret == pytest.ExitCode.OK
    good = json.loads((pytester.path / "s0/manifest.json").read_text())
    root = pytester.path / "forged"
    for number, (field, value) in enumerate(FORGED.values()):
        manifest = json.loads(json.dumps(good))
        manifest["verdict"][field] = value
        run = root / f"f{number}"
        shutil.copytree(pytester.path / "s0", run)
        (run / "manifest.json").write_text(json.dumps(manifest))
    listed = _command(pytester.path, "runs", "forged")
    assert "Traceback" not in listed.stdout + listed.stderr
    lines = listed.stdout.splitlines()
    for number in range(len(FORGED)):
        (line,) = [line for line in lines if line.startswith(f"f{number}  ")]
        assert "  broken: manifest.json: verdict" in line, line
    for command in (("summarize", "forged/f0"), ("compare", "s0", "forged/f0")):
        done = _command(pytester.path, *command)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        (line,) = done.stderr.splitlines()
        assert "verdict" in line and "contradicts itself" in line

    huge = json.loads((pytester.path / "s1/manifest.json").read_text())
    huge["verdict"] = {
        "status": "failed", "exit_status": 1, "faults": [{"kind": "cosmic-ray", "message": "x"}],
        "reasons": ["x" * 50_000_000, "two\nlines\x1b[31m red", *(f"r{i}" for i in range(9999))],
    }  # fmt: skip
    (pytester.path / "s1/manifest.json").write_text(json.dumps(huge))
    line = _runs_line(pytester.path, pytester.path / "s1")
    assert len(line) < 1000 and "  failed  shard 1/2  (xxx" in line
    assert "...; two lines [31m red; r0; +9998 more)" in line  # no new line, no escape
    done = _command(pytester.path, "merge", "merged", "s0", "s1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert _manifest_verdict(pytester.path / "merged")["reasons"] == ["s1: cosmic-ray: x"]
    done = _command(pytester.path, "summarize", "s1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert _manifest_verdict(pytester.path / "s1")["reasons"] == ["cosmic-ray: x"]


def test_a_late_verdict_is_written_when_the_folder_takes_no_new_file(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The leak check turns the run red after the run dir's folder stopped taking new files
    (read-only, or no room for a second copy): manifest.json and the page are written over in
    place, so they do not stay green."""
    pytest.importorskip("pytest_jsonreport")
    monkeypatch.setenv("CI_JOB_TOKEN", PLANTED)
    pytester.makeconftest(
        "import errno, os, pytest\n"
        "from pytest_llmeval.core import atomic\n\n"
        "REAL = atomic._open_temp\n\n"
        "def refuse(path, mode):\n"
        "    if os.path.basename(os.path.dirname(str(path))) == 'ro':\n"
        "        raise PermissionError(errno.EACCES, 'read-only folder', str(path))\n"
        "    return REAL(path, mode)\n\n"
        "@pytest.hookimpl(trylast=True)\n"
        "def pytest_sessionfinish(session):\n"
        "    manifest = os.path.join('out', 'ro', 'manifest.json')\n"
        "    with open('inode.txt', 'w') as out:  # to tell a rewrite in place from a new file\n"
        "        out.write(str(os.stat(manifest).st_ino))\n"
        "    atomic._open_temp = refuse  # the run dir is written: its folder turns read-only\n\n"
        "@pytest.hookimpl(optionalhook=True)\n"
        "def pytest_json_modifyreport(json_report):\n"
        "    json_report['careless'] = os.environ['CI_JOB_TOKEN']\n"
    )
    _golden(pytester, IDS[:3])
    result = pytester.runpytest_subprocess(
        "--llmeval-runner", "echo", "--llmeval-run-dir=out/ro", "--json-report",
        "--json-report-file=r.json",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    ro = pytester.path / "out/ro"
    recorded = _manifest_verdict(ro)
    assert recorded["status"] == "failed" and recorded["exit_status"] == 1
    assert [f["kind"] for f in recorded["faults"]] == ["leak"]
    assert _page_verdict(ro) == "failed"
    assert "could not write the run's verdict" not in result.stdout.str()
    # written over in place: the folder took no new file, so no atomic replace happened
    inode = int((pytester.path / "inode.txt").read_text())
    assert (ro / "manifest.json").stat().st_ino == inode


def test_a_writer_that_raises_after_the_run_dir_leaves_it_red(pytester: pytest.Pytester) -> None:
    """junit's path cannot be made (its folder is a file): junitxml raises in its own
    sessionfinish, after the run dir was written, and the process ends on that error (exit 1):
    the record says failed and why, not the ``passed`` it was written with."""
    _golden(pytester, IDS[:3])
    result = pytester.runpytest_subprocess(
        "--llmeval-runner", "echo", "--llmeval-run-dir=out/r", "--junitxml=qa.golden.json/j.xml"
    )
    assert result.ret == 1
    recorded = _manifest_verdict(pytester.path / "out/r")
    assert recorded["status"] == "failed" and recorded["exit_status"] == 1
    (fault,) = recorded["faults"]
    assert fault["kind"] == "exit" and "FileExistsError" in fault["message"]
    assert _page_verdict(pytester.path / "out/r") == "failed"

    # another plugin's sys.exit() there: the process exits with its code, and so does the record
    pytester.makeconftest(
        "import sys, pytest\n\n@pytest.hookimpl(trylast=True)\n"
        "def pytest_sessionfinish(session):\n    sys.exit(4)\n"
    )
    result = pytester.runpytest_subprocess("--llmeval-runner", "echo", "--llmeval-run-dir=out/r")
    assert result.ret == 4
    recorded = _manifest_verdict(pytester.path / "out/r")
    assert recorded["status"] == "failed" and recorded["exit_status"] == 4


def test_a_merge_of_a_shard_cut_short_never_exits_0(pytester: pytest.Pytester) -> None:
    """A budget stopped a shard (its session exited 2): the merge of it is cut short too, and
    exits 2 as summarize and the unsharded session would, its record ``partial`` with that
    status; an empty shard's own exit (5) does not fail the merge."""
    pytester.makeconftest(RUNNER)  # two tokens a case
    _golden(pytester, IDS[:6])
    codes = []
    for index in range(2):
        result = pytester.runpytest(
            *BASE, f"--llmeval-shard={index}/2", f"--llmeval-run-dir=s{index}",
            "--llmeval-max-tokens-total=3",
        )  # fmt: skip
        codes.append(result.ret)
    assert pytest.ExitCode.INTERRUPTED in codes and pytest.ExitCode.OK not in codes
    done = _command(pytester.path, "merge", "merged", "s0", "s1")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "; exit 2" in done.stdout
    recorded = _manifest_verdict(pytester.path / "merged")
    assert recorded == {
        "status": "partial", "exit_status": 2, "reasons": ["cut short (budget)"], "faults": []
    }  # fmt: skip
    assert _command(pytester.path, "summarize", "merged").returncode == 2


def test_a_resume_keeps_a_crash_whose_judged_case_it_reuses(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker died after its case was judged: the run exited 1 and its record says so.
    Resuming the finished run reuses that result, so it exits as the finished run did, and
    says why, every time; summarize agrees."""
    pytest.importorskip("xdist")
    pytester.makeconftest(
        RUNNER + "\n\ndef pytest_runtest_teardown(item):\n"
        "    if item.name == os.environ.get('LLMEVAL_TEST_KILL_AFTER'):\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    _golden(pytester, IDS[:6])
    monkeypatch.setenv("LLMEVAL_TEST_KILL_AFTER", "c03")
    result = pytester.runpytest(*BASE, "-n", "2", "--llmeval-run-dir=out/crashed")
    monkeypatch.delenv("LLMEVAL_TEST_KILL_AFTER")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    crashed = pytester.path / "out/crashed"
    (reason,) = _manifest_verdict(crashed)["reasons"]
    assert "c03 was judged" in reason
    for _ in range(2):
        resumed = pytester.runpytest(*BASE, "--llmeval-resume=out/crashed")
        assert resumed.ret == pytest.ExitCode.TESTS_FAILED
        assert _manifest_verdict(crashed) == {
            "status": "failed", "exit_status": 1, "reasons": [reason],
            "faults": [{"kind": "crash", "message": reason}],
        }  # fmt: skip
        assert _page_verdict(crashed) == "failed"
    assert _command(pytester.path, "summarize", "out/crashed").returncode == 1


def test_a_forged_passed_record_never_shows_a_red_run_green(pytester: pytest.Pytester) -> None:
    """A case failed (exit 1), then the record was edited to a consistent ``passed``: runs
    and compare read the files too and show the redder of the two."""
    write_json(
        pytester,
        "qa.golden.json",
        [{"id": "a", "input": "a", "expected_output": "a"},
         {"id": "b", "input": "b", "expected_output": "not b"}],
    )  # fmt: skip
    assert pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir=out/red").ret == 1
    red = pytester.path / "out/red"
    manifest = json.loads((red / "manifest.json").read_text())
    manifest["verdict"] = {"status": "passed", "exit_status": 0, "reasons": [], "faults": []}
    (red / "manifest.json").write_text(json.dumps(manifest))
    assert "  failed  (1 case(s) failed)" in _runs_line(pytester.path, red)
    done = _command(pytester.path, "compare", "out/red", "out/red", "--out", "cmp")
    assert done.returncode == 0, done.stderr
    assert "| A | `red` |" in done.stdout and "| 2 | failed |" in done.stdout
    assert "| passed |" not in done.stdout


def test_a_session_that_cannot_finish_its_files_leaves_no_earlier_record(
    pytester: pytest.Pytester,
) -> None:
    """A green session wrote the run dir; a second session in it cannot write its page (a
    folder is in the way) and exits 1: the run dir reads unfinished, not as the first one
    ended."""
    _golden(pytester, IDS[:3])
    run = ("--llmeval-runner", "echo", "--llmeval-run-dir=out/r")
    assert pytester.runpytest(*run).ret == pytest.ExitCode.OK
    used = pytester.path / "out/r"
    (used / "report.html").unlink()
    (used / "report.html").mkdir()
    assert pytester.runpytest(*run).ret == pytest.ExitCode.TESTS_FAILED
    assert not (used / "manifest.json").exists()
    listed = _command(pytester.path, "runs", "out")
    assert "r  unfinished: no manifest.json" in listed.stdout, listed.stdout
    assert "passed" not in listed.stdout


def test_an_empty_shard_and_a_shards_unblessed_baseline_do_not_fail_the_merge(
    pytester: pytest.Pytester,
) -> None:
    """A hash shard with no case exits 5 and is no failure; a shard refusing to bless its
    subset as the baseline fails the shard, not the merge (bless the merge instead)."""
    _golden(pytester, IDS[:1])
    for bless in ((), ("--llmeval-update-baseline=b.json",)):
        prefix = "t" if bless else "s"
        codes = []
        for index in range(2):
            result = pytester.runpytest(
                "--llmeval-runner", "echo", f"--llmeval-shard={index}/2",
                f"--llmeval-run-dir={prefix}{index}", *bless,
            )  # fmt: skip
            codes.append(result.ret)
        assert pytest.ExitCode.NO_TESTS_COLLECTED in codes
        empty = pytester.path / f"{prefix}{codes.index(pytest.ExitCode.NO_TESTS_COLLECTED)}"
        if not bless:  # nothing of it to judge: no failure
            assert _manifest_verdict(empty) == {
                "status": "passed", "exit_status": 5, "reasons": [], "faults": []
            }  # fmt: skip
        else:  # each shard refused to bless its subset: red, as the shard exited
            assert sorted(codes) == [1, 5]
            for shard in (pytester.path / f"t{i}" for i in range(2)):
                assert [f["kind"] for f in _manifest_verdict(shard)["faults"]] == ["baseline"]
        done = _command(pytester.path, "merge", f"{prefix}merged", f"{prefix}0", f"{prefix}1")
        assert done.returncode == 0, done.stdout + done.stderr
        assert _manifest_verdict(pytester.path / f"{prefix}merged") == {
            "status": "passed", "exit_status": 0, "reasons": [], "faults": []
        }  # fmt: skip


BROKEN_SUITE = """
class Broken:
    name = "broken"

    def claims(self, path, head):
        return path.name.endswith(".brk.txt")

    def load(self, source, ctx):
        raise RuntimeError("suite bug")


def pytest_llmeval_register_suites(registry):
    registry.register(Broken())
"""


def test_a_data_file_that_fails_to_collect_is_red_under_exit_on_gates(
    pytester: pytest.Pytester,
) -> None:
    """A data file whose suite raises while collecting has no result for the verdict: the run
    is red in every mode, and its record says so."""
    pytester.makeconftest(BROKEN_SUITE)
    pytester.makeini("[pytest]\nllmeval_files =\n    *.golden.json\n    *.brk.txt\n")
    pytester.makefile(".brk.txt", data="x\n")
    _golden(pytester, IDS[:2])
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-run-dir=out/r", "--llmeval-exit-on", "gates",
        "--llmeval-gate", "golden.pass_rate>=0.5", "--continue-on-collection-errors",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-2000:]
    recorded = _manifest_verdict(pytester.path / "out/r")
    assert recorded["status"] == "failed" and [f["kind"] for f in recorded["faults"]] == ["tests"]
    assert "data.brk.txt" in recorded["reasons"][0]
    assert "  failed  " in _runs_line(pytester.path, pytester.path / "out/r")
