"""Late ends: what happens after the run dir was written never leaves a greener record.

pytest can end a process after this plugin's hooks wrote the run dir: a conftest's
``pytest_terminal_summary`` or ``pytest_unconfigure`` that raises (the process exits 1), a
synchronous agent still blocked in its thread when the session ends, a SIGHUP from a closing
terminal, and the offline commands meet run dirs that cannot be read. Each entry drives the
real thing through a pytest subprocess (or the command) and checks the exit status and every
reader of the record.
"""

from __future__ import annotations

import builtins
import errno
import io
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.__main__ import main as cli
from pytest_llmeval.commands import runs
from pytest_llmeval.plugin.termination import SigtermHandler
from tests.conftest import read_jsonl, write_json
from tests.fail_closed.test_interrupt import (
    BASE,
    IDS,
    _all_written,
    _gates,
    _interrupted,
    _outcomes,
    _project,
    _signalled,
)
from tests.fail_closed.test_recorded import _command, _golden, _manifest_verdict, _page_verdict

LATE_ERRORS = {
    "terminal_summary": (
        "def pytest_terminal_summary(config):\n    raise RuntimeError('a late summary')\n",
        "RuntimeError('a late summary')",
    ),
    "unconfigure": (
        "def pytest_unconfigure(config):\n    raise RuntimeError('a late unconfigure')\n",
        "RuntimeError('a late unconfigure')",
    ),
    "an outer unconfigure wrapper": (
        "@pytest.hookimpl(wrapper=True, tryfirst=True)\n"
        "def pytest_unconfigure(config):\n"
        "    yield\n"
        "    raise RuntimeError('after every unconfigure')\n",
        "RuntimeError('after every unconfigure')",
    ),
    "sys.exit() in unconfigure": (
        "def pytest_unconfigure(config):\n    raise SystemExit(3)\n",
        "SystemExit(3)",
    ),
    "a usage error in the summary": (
        "def pytest_terminal_summary(config):\n    raise pytest.UsageError('a late usage')\n",
        "UsageError('a late usage')",
    ),
}


@pytest.mark.parametrize("workers", ["0", "2"])
@pytest.mark.parametrize("late", LATE_ERRORS, ids=list(LATE_ERRORS))
def test_a_hook_that_raises_after_the_run_dir_leaves_it_red(
    pytester: pytest.Pytester, late: str, workers: str
) -> None:
    """Every case passed and the gate held, then a conftest's terminal summary or
    unconfigure raised and the process exits non-zero: the manifest, the page, ``runs`` and
    ``summarize`` say failed, with the error, and the status the process exited with."""
    if workers != "0":
        pytest.importorskip("xdist")
    hook, error = LATE_ERRORS[late]
    pytester.makeconftest("import pytest\n\n" + hook)
    _golden(pytester, IDS[:4])
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-n", workers, "--llmeval-runner", "echo",
        "--llmeval-run-dir=out/late", "--llmeval-gate", "golden.pass_rate>=0.5",
    )  # fmt: skip
    status = 3 if "SystemExit" in error else 4 if "UsageError" in error else 1
    assert result.ret == status, result.stdout.str() + result.stderr.str()
    run = pytester.path / "out/late"
    message = f"the session ended on an error after the run dir was written: {error}"
    recorded = _manifest_verdict(run)
    assert recorded["status"] == "failed" and recorded["exit_status"] == status, recorded
    assert {"kind": "exit", "message": message} in recorded["faults"]
    assert _page_verdict(run) == "failed"
    listed = _command(pytester.path, "runs", "out")
    assert f"  failed  ({message}" in listed.stdout, listed.stdout + listed.stderr
    # summarize cannot see why the process ended so: it keeps it
    assert _command(pytester.path, "summarize", "out/late").returncode == 1
    assert _manifest_verdict(run)["status"] == "failed"


BLOCKING_AGENT = """
import socket, time

import pytest


class Blocking:
    def run(self, case, broker):
        if case.case_id == "sleeps":
            time.sleep(3600)
        if case.case_id == "reads":
            left, right = socket.socketpair()
            left.recv(1)  # nothing ever arrives
        return case.case_id


@pytest.fixture(scope="session")
def llmeval_agent():
    return Blocking()
"""


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_blocked_synchronous_agent_never_hangs_the_process(
    pytester: pytest.Pytester, workers: str
) -> None:
    """Two synchronous agents' calls block forever (a sleep, a socket read): their cases time
    out and err, every report is written, one line names them, and the process exits 1
    instead of waiting for their threads."""
    if workers != "0":
        pytest.importorskip("xdist")
    pytester.makeconftest(BLOCKING_AGENT)
    cases = [{"id": i, "input": i, "expected_output": i} for i in ("ok", "sleeps", "reads")]
    write_json(pytester, "qa.golden.json", cases)
    args = [
        sys.executable, "-m", "pytest", "-p", "no:randomly", "-n", workers,
        "--llmeval-timeout=1", "--llmeval-run-dir=out/blocked", "--junitxml=junit.xml",
    ]  # fmt: skip
    try:
        done = subprocess.run(
            args, cwd=pytester.path, capture_output=True, text=True, timeout=90,
            env={**os.environ, "COLUMNS": "200"},
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the process hung after its cases timed out: {exc.stdout!r}")
    assert done.returncode == 1, done.stdout + done.stderr
    run = pytester.path / "out/blocked"
    outcomes = {r["case_id"]: r["outcome"] for r in read_jsonl(run / "results.jsonl")}
    assert outcomes == {"ok": "passed", "sleeps": "error", "reads": "error"}
    assert _manifest_verdict(run)["status"] == "failed"
    assert (pytester.path / "junit.xml").is_file()
    if workers == "0":  # the line is the process's own (an xdist worker's output is not shown)
        assert (
            "llmeval: 2 synchronous agent call(s) still blocked after --llmeval-timeout=1s were "
            "abandoned (the process exits without them): qa.golden.json::reads, "
            "qa.golden.json::sleeps"
        ) in done.stdout, done.stdout


@pytest.mark.parametrize("workers", ["0", "2"])
def test_sighup_is_handled_as_sigterm(pytester: pytest.Pytester, workers: str) -> None:
    """A closing terminal or ssh session sends SIGHUP to the whole process group: every report
    is written, ``interrupted.reason`` is ``sighup``, the exit status is 2, and resume
    finishes the rest."""
    if workers != "0":
        pytest.importorskip("xdist")
    _project(pytester)
    done, _ = _signalled(
        pytester, signal.SIGHUP, *BASE, "-n", workers, "--llmeval-run-dir", "run",
        "--llmeval-gate", "golden.skipped==0", group=True,
    )  # fmt: skip
    run = pytester.path / "run"
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout
    _all_written(run)
    ran = _outcomes(run)
    assert "c10" not in ran and len(ran) < 30
    assert _gates(run) == {"golden.skipped==0": "partial"}
    interrupted, in_manifest = _interrupted(run)
    assert interrupted == in_manifest == {
        "reason": "sighup", "cases_run": len(ran), "cases_total": 30,
    }  # fmt: skip

    resumed = pytester.runpytest(*BASE, "--llmeval-resume", str(run))
    assert resumed.ret == pytest.ExitCode.TESTS_FAILED  # the 12 misses
    assert sorted(_outcomes(run)) == IDS
    assert _interrupted(run) == (None, None)


def _deny_inside(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """Everything inside ``folder`` raises ``PermissionError``, as a folder with mode 000 does
    for a user who is not root (CI runs the tests as root, which ``chmod`` does not stop)."""
    base = os.path.abspath(folder)

    def guarded(real: Any, *, listing: bool = False) -> Any:
        def call(path: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(path, (str, os.PathLike)):
                where = os.path.abspath(os.fsdecode(path))
                if where.startswith(base + os.sep) or (listing and where == base):
                    raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
            return real(path, *args, **kwargs)

        return call

    for name in ("stat", "lstat", "open"):
        monkeypatch.setattr(os, name, guarded(getattr(os, name)))
    for name in ("scandir", "listdir"):
        monkeypatch.setattr(os, name, guarded(getattr(os, name), listing=True))
    monkeypatch.setattr(builtins, "open", guarded(builtins.open))
    monkeypatch.setattr(io, "open", guarded(io.open))


def test_runs_and_compare_survive_an_unreadable_folder(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Under the output root: a run dir that cannot be read at all (mode 000), one whose
    manifest.json is a folder, one whose manifest is a FIFO, a FIFO, a dangling link, and
    ``latest`` pointing at the unreadable one. ``runs`` lists each of them in one line, lists
    the readable run, and exits 1; ``compare`` with the unreadable run is one line, exit 2."""
    _golden(pytester, IDS[:3])
    for name in ("good", "locked", "manifest-folder", "manifest-fifo"):
        result = pytester.runpytest(
            "-p", "no:randomly", "--llmeval-runner", "echo", f"--llmeval-run-dir=out/{name}"
        )
        assert result.ret == pytest.ExitCode.OK
    out = pytester.path / "out"
    (out / "manifest-folder/manifest.json").unlink()
    (out / "manifest-folder/manifest.json").mkdir()
    (out / "manifest-fifo/manifest.json").unlink()
    os.mkfifo(out / "manifest-fifo/manifest.json")
    os.mkfifo(out / "a-fifo")
    (out / "dangling").symlink_to(pytester.path / "nowhere")
    (out / "latest").symlink_to("locked")
    capsys.readouterr()
    _deny_inside(monkeypatch, out / "locked")

    assert runs.main(out) == 1
    listed = capsys.readouterr()
    assert "Traceback" not in listed.out + listed.err
    lines = {line.split("  ")[0]: line for line in listed.out.splitlines() if "  " in line}
    assert "locked  unreadable: cannot be read: Permission denied (.llmeval-run)" in lines["locked"]
    assert "broken: manifest.json" in lines["manifest-folder"]
    assert "broken: manifest.json: not a regular file" in lines["manifest-fifo"]
    assert "foreign" in lines["a-fifo"] and "foreign" in lines["dangling"]
    assert any("  good  echo  3 cases  passed" in line for line in listed.out.splitlines())
    assert listed.out.splitlines()[-1] == "1 run dir(s) under " + str(out) + ", 3 unreadable"

    code = cli(["compare", str(out / "good"), str(out / "locked"), "--out", "cmp"])
    said = capsys.readouterr()
    assert code == 2 and "Traceback" not in said.out + said.err
    assert said.err.strip() == (
        f"pytest_llmeval compare: {out / 'locked'}: cannot be read: Permission denied "
        f"({out / 'locked/manifest.json'}); give a run dir this user can read"
    )
    for shape in ("manifest-folder", "manifest-fifo"):
        code = cli(["compare", str(out / "good"), str(out / shape), "--out", "cmp"])
        said = capsys.readouterr()
        assert code == 2 and said.err.count("\n") == 1 and "manifest.json" in said.err


def test_a_signal_ignored_on_purpose_stays_ignored() -> None:
    """``nohup pytest ...`` ignores SIGHUP so that the run outlives the terminal: the plugin
    does not take it over (nor SIGTERM or SIGINT when they are ignored)."""
    handler = SigtermHandler()
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        handler.install()
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
        handler.defer()
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
        handler.restore()
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        handler.restore()
        signal.signal(signal.SIGHUP, before)
