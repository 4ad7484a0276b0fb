"""Fail closed on state: resume, run dirs, locks, and paths that cannot be read or written.

Each entry drives real pytest sessions (in process, or as subprocesses for two sessions at
once and for a full disk) and checks the exit status, the cases in ``results.jsonl`` and that
nothing the plugin did not make was lost or overwritten.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_llmeval.commands.merge import MergeError, merge
from pytest_llmeval.rundir.journal import Journal, read_results
from tests.conftest import read_jsonl, write_json

CASES = [
    {"id": "a", "input": "x", "expected_output": "x"},
    {"id": "b", "input": "y", "expected_output": "y"},
    {"id": "c", "input": "z", "expected_output": "z"},
]
ECHO = ("-p", "no:cacheprovider", "--llmeval-runner", "echo")


def _outcomes(run_dir: Path) -> dict[str, str]:
    return {r["case_id"]: r["outcome"] for r in read_jsonl(run_dir / "results.jsonl")}


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


# -- resume reuses only what did not change ------------------------------------------------


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_an_edited_case_runs_again_on_resume(
    pytester: pytest.Pytester, xdist: tuple[str, ...]
) -> None:
    if xdist:
        pytest.importorskip("xdist")
    write_json(pytester, "qa.golden.json", CASES)
    assert pytester.runpytest(*ECHO, "--llmeval-run-dir", "run").ret == 0
    edited = [dict(CASES[0]), {**CASES[1], "expected_output": "changed"}, CASES[2]]
    write_json(pytester, "qa.golden.json", edited)
    result = pytester.runpytest(*ECHO, "--llmeval-resume", "run", *xdist)
    result.stdout.fnmatch_lines(
        ["llmeval: 1 of 3 cases changed since the interrupted run; running them again"]
    )
    assert result.parseoutcomes()["failed"] == 1
    assert "passed" not in result.parseoutcomes()  # a and c were reused, not run
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert _outcomes(pytester.path / "run") == {"a": "passed", "b": "failed", "c": "passed"}


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_a_run_dir_of_another_dataset_is_refused(
    pytester: pytest.Pytester, xdist: tuple[str, ...]
) -> None:
    if xdist:
        pytest.importorskip("xdist")
    write_json(pytester, "qa.golden.json", CASES)
    assert pytester.runpytest(*ECHO, "--llmeval-run-dir", "run").ret == 0
    before = _snapshot(pytester.path / "run")
    other = [{**case, "expected_output": "other"} for case in CASES]  # same ids, other data
    write_json(pytester, "qa.golden.json", other)
    result = pytester.runpytest(*ECHO, "--llmeval-resume", "run", *xdist)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = result.stdout.str() + result.stderr.str()
    assert "ERROR: --llmeval-resume " in output
    assert "run: made from another dataset (every one of its 3 finished cases" in output
    assert "INTERNALERROR" not in output
    assert _snapshot(pytester.path / "run") == before  # touched nothing
    allowed = pytester.runpytest(
        *ECHO, "--llmeval-resume", "run", "--llmeval-resume-allow-mismatch", *xdist
    )
    assert allowed.parseoutcomes()["failed"] == 3
    assert _outcomes(pytester.path / "run") == {"a": "failed", "b": "failed", "c": "failed"}


RUNNERS_CONFTEST = """
from pytest_llmeval.runners.echo import EchoRunner

class Other(EchoRunner):
    def fingerprint(self):
        return {"type": "other-echo"}

def pytest_llmeval_register_runners(registry):
    registry.register("other", lambda s: Other())
"""


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_a_run_dir_of_another_runner_is_refused(
    pytester: pytest.Pytester, xdist: tuple[str, ...]
) -> None:
    if xdist:
        pytest.importorskip("xdist")
    pytester.makeconftest(RUNNERS_CONFTEST)
    write_json(pytester, "qa.golden.json", CASES)
    assert pytester.runpytest(*ECHO, "--llmeval-run-dir", "run").ret == 0
    write_json(pytester, "more.golden.json", [{"id": "d", "input": "w", "expected_output": "w"}])
    before = _snapshot(pytester.path / "run")
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--llmeval-runner", "other", "--llmeval-resume", "run", *xdist
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "made by another runner" in result.stdout.str() + result.stderr.str()
    assert _snapshot(pytester.path / "run") == before
    allowed = pytester.runpytest(
        "-p", "no:cacheprovider", "--llmeval-runner", "other", "--llmeval-resume", "run",
        "--llmeval-resume-allow-mismatch", *xdist,
    )  # fmt: skip
    assert allowed.ret == 0
    assert allowed.parseoutcomes()["passed"] == 1  # only d runs (xdist counts no deselected)
    assert set(_outcomes(pytester.path / "run")) == {"a", "b", "c", "d"}


def test_results_judged_by_other_scorers_run_again(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    assert pytester.runpytest(*ECHO, "--llmeval-run-dir", "run").ret == 0
    for path in (pytester.path / "run" / "journal").rglob("*.jsonl"):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        rows[0]["scorers"] = "0.0.1"  # judged by an older plugin's scorers
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = pytester.runpytest(*ECHO, "--llmeval-resume", "run")
    result.stdout.fnmatch_lines(
        ["llmeval: 1 cases were judged by other scorers*running them again"]
    )
    result.assert_outcomes(passed=1, deselected=2)


# -- a resume path must be a run dir ---------------------------------------------------------


@pytest.mark.parametrize("target", ["typo", "qa.golden.json", "plain"])
def test_a_resume_path_that_is_not_a_run_dir_is_an_error(
    pytester: pytest.Pytester, target: str
) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    (pytester.path / "plain").mkdir()
    result = pytester.runpytest(*ECHO, "--llmeval-resume", target)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --llmeval-resume *{target}: *"])
    assert "INTERNALERROR" not in result.stderr.str()
    assert not (pytester.path / ".llmeval").exists()  # never a fresh full run


def test_a_resume_path_is_relative_to_where_pytest_started(pytester: pytest.Pytester) -> None:
    write_json(pytester, "sub/qa.golden.json", CASES)
    pytester.makeini("[pytest]\n")
    assert pytester.runpytest(*ECHO, "--llmeval-run-dir", "sub/run").ret == 0
    os.chdir(pytester.path / "sub")
    result = pytester.runpytest(*ECHO, "--llmeval-resume=run", "--rootdir", str(pytester.path))
    result.stdout.fnmatch_lines(["*nothing left to run*"])
    assert result.ret == pytest.ExitCode.OK


def test_a_spaced_resume_that_moves_the_rootdir_is_refused(pytester: pytest.Pytester) -> None:
    write_json(pytester, "proj/sub/qa.golden.json", CASES)
    os.chdir(pytester.path / "proj")
    assert pytester.runpytest(*ECHO, "--llmeval-run-dir", "runs/r1", "sub").ret == 0
    os.chdir(pytester.path / "proj" / "sub")
    spaced = pytester.runpytest(*ECHO, "--llmeval-resume", "../runs/r1", ".")
    assert spaced.ret == pytest.ExitCode.USAGE_ERROR
    spaced.stderr.fnmatch_lines(["*moves its rootdir*write --llmeval-resume=../runs/r1"])


def test_resuming_a_finished_run_rebuilds_its_reports_and_exits_as_it_did(
    pytester: pytest.Pytester,
) -> None:
    write_json(
        pytester, "qa.golden.json", [*CASES, {"id": "d", "input": "u", "expected_output": "v"}]
    )
    first = pytester.runpytest(*ECHO, "--llmeval-run-dir", "run")
    assert first.ret == pytest.ExitCode.TESTS_FAILED
    (pytester.path / "run" / "report.json").unlink()
    again = pytester.runpytest(*ECHO, "--llmeval-resume", "run")
    again.stdout.fnmatch_lines(["llmeval: nothing left to run*"])
    assert again.ret == pytest.ExitCode.TESTS_FAILED  # never 5
    report = json.loads((pytester.path / "run" / "report.json").read_text())
    assert (report["totals"]["passed"], report["totals"]["failed"]) == (3, 1)
    write_json(pytester, "ok.golden.json", CASES)
    assert pytester.runpytest(*ECHO, "ok.golden.json", "--llmeval-run-dir", "ok").ret == 0
    assert pytester.runpytest(*ECHO, "ok.golden.json", "--llmeval-resume", "ok").ret == 0


# -- one session owns a run dir --------------------------------------------------------------

SLOW_CONFTEST = """
import asyncio, pathlib, time
from pytest_llmeval.testing.scripted import ScriptedModel

class Held(ScriptedModel):
    # the first answer at once (the session then holds its run dir); the others once the test
    # has written "release", so a loaded machine cannot let the session end before the test
    # has tried a second one (at most two minutes)
    answered = 0

    async def generate(self, request):
        Held.answered += 1
        deadline = time.monotonic() + 120
        while Held.answered > 1 and not pathlib.Path("release").exists():
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.02)
        return await super().generate(request)

def pytest_llmeval_register_runners(registry):
    registry.register("slow", lambda s: Held())
"""


def _journaled(run_dir: Path) -> int:
    count = 0
    for path in (run_dir / "journal").rglob("*.jsonl"):
        count += path.read_bytes().count(b"\n")
    return count


def _first_session(base: list[str], run_dir: Path, cwd: Path) -> subprocess.Popen[bytes]:
    """Start ``base`` on ``run_dir`` and return once it has journaled a case (so it holds the
    run dir while a second session is tried)."""
    first = subprocess.Popen(
        [*base, "--llmeval-run-dir", str(run_dir)],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while _journaled(run_dir) < 1:
        if first.poll() is not None or time.monotonic() > deadline:
            first.kill()
            raise AssertionError("the first session ended (or never journaled) before the second")
        time.sleep(0.02)
    return first


def test_a_second_session_on_a_run_dir_in_use_stops_and_touches_nothing(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(SLOW_CONFTEST)
    write_json(
        pytester,
        "qa.golden.json",
        [{"id": f"c{i}", "input": "m", "expected_output": "m"} for i in range(40)],
    )
    run_dir = pytester.path / "run"
    base = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--llmeval-runner", "slow",
            "--llmeval-concurrency", "1"]  # fmt: skip
    first = _first_session(base, run_dir, pytester.path)
    try:
        for flag in ("--llmeval-run-dir", "--llmeval-resume"):
            second = subprocess.run(
                [*base, flag, str(run_dir)], cwd=pytester.path, capture_output=True, text=True
            )
            assert second.returncode == pytest.ExitCode.USAGE_ERROR, second.stdout
            assert "is in use by another pytest session" in second.stderr
            assert not list((run_dir / "journal").glob("002"))  # no attempt of its own
        summarized = subprocess.run(
            [sys.executable, "-m", "pytest_llmeval", "summarize", str(run_dir)],
            capture_output=True,
            text=True,
        )
        assert summarized.returncode == 2
        assert "is in use by another pytest session" in summarized.stderr
        assert not (run_dir / "report.json").exists()
        assert first.poll() is None, "the checks must have run while the first session ran"
    finally:
        (pytester.path / "release").touch()
        assert first.wait(timeout=60) == 0
    assert len(_outcomes(run_dir)) == 40


def test_xdist_workers_belong_to_the_controllers_session(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    write_json(pytester, "qa.golden.json", CASES)
    result = pytester.runpytest(*ECHO, "-n", "2", "--llmeval-run-dir", "run")
    assert result.ret == 0
    assert _outcomes(pytester.path / "run") == {"a": "passed", "b": "passed", "c": "passed"}


def test_the_baseline_replaces_only_a_baseline(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    (pytester.path / "notes.json").write_text('{"mine": true}\n')
    result = pytester.runpytest(*ECHO, "--llmeval-update-baseline", "notes.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # before any case runs
    result.stderr.fnmatch_lines(["ERROR: baseline *notes.json: exists and is not a baseline*"])
    assert (pytester.path / "notes.json").read_text() == '{"mine": true}\n'
    assert not (pytester.path / ".llmeval").exists()
    assert pytester.runpytest(*ECHO, "--llmeval-update-baseline", "base.json").ret == 0
    assert pytester.runpytest(*ECHO, "--llmeval-update-baseline", "base.json").ret == 0
    assert json.loads((pytester.path / "base.json").read_text())["baseline_version"] == 1
    assert not [p for p in pytester.path.iterdir() if p.name.startswith(".base.json")]


# -- never write over what the plugin did not make -------------------------------------------


def test_a_run_dir_that_is_a_users_folder_is_refused(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    (pytester.path / "out").mkdir()
    (pytester.path / "out" / "summary.md").write_text("my notes\n")
    result = pytester.runpytest(*ECHO, "--llmeval-run-dir", "out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --llmeval-run-dir */out: is a folder with files of its own*"]
    )
    assert _snapshot(pytester.path / "out") == {"summary.md": b"my notes\n"}
    (pytester.path / "empty").mkdir()
    assert pytester.runpytest(*ECHO, "--llmeval-run-dir", "empty").ret == 0  # empty is fine
    assert pytester.runpytest(*ECHO, "--llmeval-run-dir", "empty").ret == 0  # its run dir too


def test_a_run_dir_path_that_is_a_file_is_one_line(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    (pytester.path / "taken").write_text("mine\n")
    for flag in ("--llmeval-run-dir", "--llmeval-output-root"):
        result = pytester.runpytest(*ECHO, flag, "taken")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert "INTERNALERROR" not in result.stderr.str()
        result.stderr.fnmatch_lines([f"ERROR: {flag} *taken*: *folder*"])
    assert (pytester.path / "taken").read_text() == "mine\n"


def test_validate_sharding_never_deletes_a_run_dir_it_did_not_make(tmp_path: Path) -> None:
    from pytest_llmeval.commands.shard_validation import clear_outputs
    from pytest_llmeval.core.errors import LLMEvalError
    from pytest_llmeval.rundir.files import tag_run_dir

    tag_run_dir(tmp_path / "merged")
    tag_run_dir(tmp_path / "merged" / "mine")  # a user's run dir kept inside
    with pytest.raises(LLMEvalError, match="holds another run dir"):
        clear_outputs([tmp_path / "merged"], tmp_path / "logs")
    assert (tmp_path / "merged" / "mine" / ".llmeval-run").is_file()


def test_merge_never_deletes_an_input(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    out = pytester.path / "out"
    for index in range(2):
        shard = ("--llmeval-shard", f"{index}/2", "--llmeval-run-dir", f"out/s{index}")
        assert pytester.runpytest(*ECHO, *shard).ret in (0, 5)
    merge(pytester.path / "first", [out / "s0", out / "s1"])
    # an earlier merge's output that holds the shards: replacing it would delete them
    (out / "manifest.json").write_text((pytester.path / "first" / "manifest.json").read_text())
    (out / ".llmeval-run").write_text("tag\n")
    before = _snapshot(out)
    with pytest.raises(MergeError, match=r"is or holds .*one of the run dirs being merged"):
        merge(out, [out / "s0", out / "s1"])
    assert _snapshot(out) == before


# -- paths that cannot be read or written ----------------------------------------------------


@contextlib.contextmanager
def _mounted(target: Path, options: str) -> Iterator[None]:
    target.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False)


def test_a_read_only_run_dir_is_one_line(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    target = pytester.path / "ro"
    with _mounted(target, "size=1m"):
        subprocess.run(["mount", "-o", "remount,ro", str(target)], check=True)
        result = pytester.runpytest(*ECHO, "--llmeval-run-dir", "ro")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["ERROR: --llmeval-run-dir */ro: Read-only file system; *"])
        auto = pytester.runpytest(*ECHO, "--llmeval-output-root", "ro")
        assert auto.ret == pytest.ExitCode.USAGE_ERROR
        assert "INTERNALERROR" not in result.stderr.str() + auto.stderr.str()
        if importlib.util.find_spec("xdist") is not None:  # refused before any worker runs
            workers = pytester.runpytest(*ECHO, "-n", "2", "--llmeval-run-dir", "ro/new")
            assert workers.ret == pytest.ExitCode.USAGE_ERROR
            workers.stderr.fnmatch_lines(["ERROR: --llmeval-run-dir */ro/new: Read-only*"])
            assert "passed" not in workers.stdout.str()


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_a_disk_that_fills_leaves_a_journal_resume_can_finish(
    pytester: pytest.Pytester, xdist: tuple[str, ...]
) -> None:
    if xdist:
        pytest.importorskip("xdist")
    long = "w" * 6000  # each journal line is about 20 KB: the disk fills after a few cases
    rows = [
        {"id": f"c{i:02d}", "input": f"{long}{i}", "expected_output": f"{long}{i}"}
        for i in range(40)
    ]
    write_json(pytester, "qa.golden.json", rows)
    target = pytester.path / "small"
    with _mounted(target, "size=160k"):
        full = pytester.runpytest_subprocess(
            *ECHO, "--llmeval-run-dir", str(target / "run"), *xdist
        )
        assert full.ret == pytest.ExitCode.TESTS_FAILED
        full.stdout.fnmatch_lines(["*could not write the journal *: No space left on device; *"])
        assert "INTERNALERROR" not in full.stdout.str() + full.stderr.str()
        for path in (target / "run" / "journal").rglob("*.jsonl"):
            assert path.read_bytes().endswith(b"\n")  # whole lines only
        kept = read_results(target / "run", 2, final_only=True)
        assert 0 < len(kept) < len(rows)
        subprocess.run(["mount", "-o", "remount,size=4m", str(target)], check=True)
        resumed = pytester.runpytest_subprocess(*ECHO, f"--llmeval-resume={target / 'run'}", *xdist)
        assert resumed.ret == 0, resumed.stdout.str()
        assert resumed.parseoutcomes()["passed"] == len(rows) - len(kept)
        assert len(read_jsonl(target / "run" / "results.jsonl")) == len(rows)


def test_a_damaged_journal_is_one_line_naming_it(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    assert pytester.runpytest(*ECHO, "--llmeval-run-dir", "run").ret == 0
    path = next((pytester.path / "run" / "journal").rglob("*.jsonl"))
    path.write_bytes(path.read_bytes() + b'{"result": "\xff\xfe"}\n')
    result = pytester.runpytest(*ECHO, "--llmeval-resume", "run")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {path}:4: not valid UTF-8*delete that line*"])


def test_a_torn_last_journal_line_is_skipped(tmp_path: Path) -> None:
    journal = Journal(tmp_path, 1, "main")
    row = {"case_id": "a", "suite": "golden", "file": "f", "line": 1, "nodeid": "f::a",
           "outcome": "passed", "passed": True}  # fmt: skip
    journal.append(row, None)
    journal.close()
    with journal.path.open("ab") as handle:
        handle.write(b'{"result": {"case_id": "b"')  # cut short
    assert list(read_results(tmp_path, 2, final_only=True)) == ["f::a"]


@pytest.mark.parametrize(
    "flag", ["--llmeval-output-root", "--llmeval-run-dir", "--llmeval-baseline"]
)
def test_a_spaced_path_option_that_moves_the_ini_file_is_refused(
    pytester: pytest.Pytester, flag: str
) -> None:
    # the project's own ini holds its gate; an ini a folder above would replace it
    pytester.makeini("[pytest]\n")
    write_json(pytester, "proj/qa.golden.json", [*CASES[:2], {**CASES[2], "expected_output": "no"}])
    (pytester.path / "proj" / "pytest.ini").write_text(
        "[pytest]\nllmeval_gate = golden.pass_rate>=1.0\nllmeval_exit_on = gates\n"
    )
    write_json(pytester, "elsewhere/qa.golden.json", CASES)
    made = ("--llmeval-run-dir=out", "--llmeval-update-baseline=base.json", "elsewhere")
    assert pytester.runpytest(*ECHO, *made).ret == 0
    os.chdir(pytester.path / "proj")
    value = {"--llmeval-baseline": "../base.json"}.get(flag, "../out")
    before = _snapshot(pytester.path / "out")
    spaced = pytester.runpytest(*ECHO, flag, value, ".")
    assert spaced.ret == pytest.ExitCode.USAGE_ERROR
    spaced.stderr.fnmatch_lines(
        [f"ERROR: {flag} {value}: *moves its rootdir or ini file*write {flag}={value}"]
    )
    assert "INTERNALERROR" not in spaced.stderr.str()
    assert _snapshot(pytester.path / "out") == before
    joined = pytester.runpytest(*ECHO, f"{flag}={value}", ".")
    assert joined.ret == pytest.ExitCode.TESTS_FAILED  # the project's gate holds it red
    joined.stdout.fnmatch_lines(["gate golden.pass_rate>=1: FAILED*"])


def test_summarize_exits_as_its_verdict_says(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", [*CASES[:2], {**CASES[2], "expected_output": "no"}])
    summarize = [sys.executable, "-m", "pytest_llmeval", "summarize"]
    red = pytester.runpytest(*ECHO, "--llmeval-run-dir", "red")
    assert red.ret == pytest.ExitCode.TESTS_FAILED
    done = subprocess.run([*summarize, "red"], cwd=pytester.path, capture_output=True, text=True)
    assert done.returncode == 1, done.stderr  # a case failed: red, as the session was
    gated = ("--llmeval-exit-on", "gates", "--llmeval-gate", "golden.pass_rate>=0.5")
    assert pytester.runpytest(*ECHO, *gated, "--llmeval-run-dir", "gated").ret == 0
    done = subprocess.run([*summarize, "gated"], cwd=pytester.path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr  # the gates decide, as in the session
    stopped = pytester.runpytest(*ECHO, "-x", "-p", "no:randomly", "--llmeval-run-dir", "cut")
    assert stopped.ret == pytest.ExitCode.TESTS_FAILED
    write_json(pytester, "qa.golden.json", CASES)  # summarize judges the journal, not the data
    done = subprocess.run([*summarize, "cut"], cwd=pytester.path, capture_output=True, text=True)
    assert done.returncode != 0, done.stdout


def test_a_fresh_session_in_a_used_run_dir_never_mixes_with_the_last(
    pytester: pytest.Pytester,
) -> None:
    write_json(pytester, "qa.golden.json", [{**case, "expected_output": "no"} for case in CASES])
    assert pytester.runpytest(*ECHO, "--llmeval-run-dir", "run").ret == 1
    write_json(pytester, "qa.golden.json", [{"id": "d", "input": "w", "expected_output": "w"}])
    assert pytester.runpytest(*ECHO, "--llmeval-run-dir", "run").ret == 0
    run = pytester.path / "run"
    assert _outcomes(run) == {"d": "passed"}
    journals = sorted(p.parent.name for p in (run / "journal").rglob("*.jsonl"))
    assert journals == ["001", "002"]  # the earlier session's journal stays on disk
    (run / "report.json").unlink()
    summarize = [sys.executable, "-m", "pytest_llmeval", "summarize", "run"]
    done = subprocess.run(summarize, cwd=pytester.path, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout  # the earlier session's 3 misses are not this run's
    assert "golden: 1/1 passed" in done.stdout
    assert _outcomes(run) == {"d": "passed"}
    resumed = pytester.runpytest(*ECHO, "--llmeval-resume", "run")
    resumed.stdout.fnmatch_lines(["llmeval: nothing left to run*"])
    assert resumed.ret == 0
    assert _outcomes(run) == {"d": "passed"}


def test_under_xdist_the_controller_claims_a_new_run_dir_before_any_worker(
    pytester: pytest.Pytester,
) -> None:
    pytest.importorskip("xdist")
    pytester.makeconftest(SLOW_CONFTEST)
    cases = [{"id": f"c{i}", "input": "m", "expected_output": "m"} for i in range(40)]
    write_json(pytester, "qa.golden.json", cases)
    run_dir = pytester.path / "run"
    base = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--llmeval-runner", "slow",
            "--llmeval-concurrency", "1", "-n", "2"]  # fmt: skip
    first = _first_session(base, run_dir, pytester.path)
    try:
        assert (run_dir / ".llmeval-run").is_file()  # a killed controller leaves a run dir
        second = subprocess.run(
            [*base, "--llmeval-run-dir", str(run_dir)],
            cwd=pytester.path,
            capture_output=True,
            text=True,
        )
        assert second.returncode == pytest.ExitCode.USAGE_ERROR, second.stdout
        assert "is in use by another pytest session" in second.stderr
        assert first.poll() is None, "the check must have run while the first session ran"
    finally:
        (pytester.path / "release").touch()
        assert first.wait(timeout=60) == 0
    assert len(_outcomes(run_dir)) == 40
    assert sorted(p.parent.name for p in (run_dir / "journal").rglob("*.jsonl")) == ["001"] * 2
    # a usage error found by the workers leaves no run dir behind
    for where in (("--llmeval-run-dir", "new/run"), ()):
        refused = pytester.runpytest(*ECHO, "-n", "2", "--llmeval-runner", "nope", *where)
        assert refused.ret == pytest.ExitCode.USAGE_ERROR
        assert not (pytester.path / "new").exists()
        assert not (pytester.path / ".llmeval").exists()


@pytest.mark.parametrize(
    "subset",
    [("-k", "not c"), ("--llmeval-limit", "2"), ("--llmeval-shard", "0/2")],
    ids=["k", "limit", "shard"],
)
def test_a_subset_is_never_blessed_as_the_baseline(
    pytester: pytest.Pytester, subset: tuple[str, ...]
) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    kept = '{"baseline_version": "1", "kept": true}\n'  # a baseline file: replaceable
    (pytester.path / "baseline.json").write_text(kept)
    result = pytester.runpytest(*ECHO, *subset, "--llmeval-update-baseline", "baseline.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # asked to bless, and did not: red
    assert (pytester.path / "baseline.json").read_text() == kept
    result.stdout.fnmatch_lines(["llmeval: baseline *baseline.json not updated: this run *"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_a_baseline_that_judged_a_subset_is_not_compared(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    assert pytester.runpytest(*ECHO, "-k", "not c", "--llmeval-run-dir", "part").ret == 0
    assert pytester.runpytest(*ECHO, "-x", "--llmeval-run-dir", "whole").ret == 0
    cut = json.loads((pytester.path / "whole" / "report.json").read_text())
    cut["interrupted"] = {"reason": "sigterm", "cases_run": 1, "cases_total": 3}
    (pytester.path / "whole" / "report.json").write_text(json.dumps(cut))  # as a cancelled run
    for baseline, why in (("part", "left 1 case(s) out"), ("whole", "cut short (sigterm")):
        result = pytester.runpytest(*ECHO, "--llmeval-baseline", baseline)
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        report = json.loads(next((pytester.path / ".llmeval").rglob("report.json")).read_text())
        assert "baseline" not in report
        result.stdout.fnmatch_lines([f"*baseline not compared: *judged only part*{why}*"])
        shutil.rmtree(pytester.path / ".llmeval")
        allowed = pytester.runpytest(
            *ECHO, "--llmeval-baseline", baseline, "--llmeval-baseline-allow-mismatch"
        )
        assert allowed.ret == 0
        shutil.rmtree(pytester.path / ".llmeval")


def test_a_changed_scoring_configuration_judges_the_cases_again_on_resume(
    pytester: pytest.Pytester,
) -> None:
    rows = [{"id": i, "input": "x", "category": "kw", "keywords": ["x", "y"]} for i in ("k", "l")]
    write_json(pytester, "kw/data.json", rows)  # half the keywords with echo
    manifest = "suite: golden\ndata: data.json\nthresholds: {kw: {contains_keywords: %s}}\n"
    (pytester.path / "kw" / "qa.llmeval.yaml").write_text(manifest % "0.0")
    write_json(pytester, "qa.golden.json", CASES)
    assert pytester.runpytest(*ECHO, "--llmeval-run-dir", "run").ret == 0
    (pytester.path / "kw" / "qa.llmeval.yaml").write_text(manifest % "1.0")
    result = pytester.runpytest(*ECHO, "--llmeval-resume", "run")
    result.stdout.fnmatch_lines(
        ["llmeval: 2 of 5 cases changed since the interrupted run; running them again"]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # judged with the new thresholds
    assert _outcomes(pytester.path / "run") == {
        "k": "failed",
        "l": "failed",
        **dict.fromkeys("abc", "passed"),
    }
    # the session's scoring settings count too: another repeat count or rule
    assert pytester.runpytest(*ECHO, "qa.golden.json", "--llmeval-run-dir", "two").ret == 0
    before = _snapshot(pytester.path / "two")
    for changed in (("--llmeval-repeats", "3"), ("--llmeval-repeat-rule", "any")):
        refused = pytester.runpytest(*ECHO, "qa.golden.json", "--llmeval-resume", "two", *changed)
        assert refused.ret == pytest.ExitCode.USAGE_ERROR
        refused.stderr.fnmatch_lines(["ERROR: --llmeval-resume *two: the scoring configuration*"])
        assert _snapshot(pytester.path / "two") == before
    allowed = pytester.runpytest(
        *ECHO, "qa.golden.json", "--llmeval-resume", "two", "--llmeval-repeats", "3",
        "--llmeval-resume-allow-mismatch",
    )  # fmt: skip
    allowed.assert_outcomes(passed=3)  # judged again, under three repeats each


# -- a resume never keeps results of files not collected now -------------------------------


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["one-process", "xdist"])
@pytest.mark.parametrize("change", ["rename", "delete"])
def test_a_resume_with_results_of_files_not_collected_now_is_refused(
    pytester: pytest.Pytester, change: str, xdist: tuple[str, ...]
) -> None:
    """Two manifests over rows; one renamed (its cases were counted twice, the gate went
    green) or the red one deleted (its results stayed, its gate was dropped: exit 1 -> 0).
    Either is one usage error naming the file, nothing written; allow-mismatch keeps them."""
    if xdist:
        pytest.importorskip("xdist")
    write_json(pytester, "data/good.json", CASES)
    write_json(pytester, "data/bad.json", [{**CASES[0], "expected_output": "no"}])
    pytester.makefile(".llmeval.yaml", good="suite: golden\ndata: data/good.json\n")
    pytester.makefile(
        ".llmeval.yaml",
        bad="suite: golden\ndata: data/bad.json\ngates:\n  pass_rate: '>= 0.9'\n",
    )
    first = pytester.runpytest(*ECHO, "--llmeval-run-dir", "run", "--llmeval-exit-on", "gates")
    assert first.ret == pytest.ExitCode.TESTS_FAILED
    bad = pytester.path / "bad.llmeval.yaml"
    if change == "rename":
        bad.rename(pytester.path / "bad2.llmeval.yaml")
    else:
        bad.unlink()
    before = _snapshot(pytester.path / "run")
    gate = ("--llmeval-gate", "golden.pass_rate>=0.5")  # a gate left once bad's is deleted
    args = (*ECHO, "--llmeval-resume", "run", "--llmeval-exit-on", "gates", *gate, *xdist)
    refused = pytester.runpytest(*args)
    assert refused.ret == pytest.ExitCode.USAGE_ERROR, refused.stdout.str()[-2000:]
    said = refused.stdout.str() + refused.stderr.str()
    assert (
        "1 of its finished cases belong to files or manifests not collected now "
        "(bad.llmeval.yaml: renamed, moved or deleted?)"
    ) in said
    assert "Traceback" not in said
    assert _snapshot(pytester.path / "run") == before
    kept = pytester.runpytest(*args, "--llmeval-resume-allow-mismatch")
    assert kept.ret != pytest.ExitCode.USAGE_ERROR


def test_a_spaced_run_dir_not_made_yet_is_judged_as_the_workers_will_see_it(
    pytester: pytest.Pytester,
) -> None:
    """xdist workers determine their rootdir after the controller made the run dir, so a
    spaced ``--llmeval-run-dir ../runs/x`` moved their rootdir (and renamed every case, and
    lost the datasets' hashes) although the controller's check saw no folder there yet."""
    pytest.importorskip("xdist")
    write_json(pytester, "proj/qa.golden.json", CASES)
    os.chdir(pytester.path / "proj")
    spaced = pytester.runpytest(*ECHO, "-n", "2", "--llmeval-run-dir", "../runs/x")
    assert spaced.ret == pytest.ExitCode.USAGE_ERROR
    spaced.stderr.fnmatch_lines(
        ["*--llmeval-run-dir ../runs/x: *write --llmeval-run-dir=../runs/x"]
    )
    assert not (pytester.path / "runs").exists()
    reports = {}
    for name, extra in (("n0", ("-p", "no:xdist")), ("n2", ("-n", "2"))):
        done = pytester.runpytest(*ECHO, *extra, f"--llmeval-run-dir=../runs/{name}")
        assert done.ret == 0
        reports[name] = json.loads((pytester.path / "runs" / name / "report.json").read_text())
    assert (
        reports["n2"]["datasets"]
        == reports["n0"]["datasets"]
        == {"qa.golden.json": reports["n0"]["datasets"]["qa.golden.json"]}
    )
    assert reports["n2"]["dataset_sha256"] == reports["n0"]["dataset_sha256"]
