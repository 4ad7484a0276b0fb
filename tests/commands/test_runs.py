"""python -m pytest_llmeval runs: the run history under an output root, and the ``latest``
pointer the session keeps beside the run dirs."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.commands.history import ROOT, command, echo_run, no_traceback, run_dirs


def test_runs_lists_every_run_dir_newest_first(pytester: pytest.Pytester) -> None:
    first = echo_run(pytester, {"a": True, "b": True})
    second = echo_run(pytester, {"a": True, "b": False})
    cut = echo_run(pytester, {"a": False, "b": True, "c": True}, "-x")
    root = pytester.path / ROOT
    (root / "notes").mkdir()
    (root / "notes" / "README").write_text("mine\n")
    broken = root / "20200101T000000Z_0123456789ab"
    shutil.copytree(first, broken)
    (broken / "report.json").write_text("{", encoding="utf-8")
    unfinished = root / "20200102T000000Z_0123456789ab"
    shutil.copytree(first, unfinished)
    (unfinished / "manifest.json").unlink()

    done = command(pytester.path, "runs")
    no_traceback(done)
    assert done.returncode == 1, done.stdout + done.stderr  # two run dirs cannot be read
    lines = done.stdout.splitlines()
    heads = [line for line in lines if not line.startswith(" ")]
    names = [line.split("  ")[1] for line in heads if "UTC" in line]
    assert names == [cut.name, second.name, first.name]  # newest first
    row = {name: line for line in heads for name in (cut.name, second.name, first.name)
           if f"  {name}  " in line}  # fmt: skip
    assert "  echo  " in row[first.name] and "2 cases  passed" in row[first.name]
    assert "2 cases  failed" in row[second.name] and "1 case(s) failed" in row[second.name]
    assert "interrupted (maxfail: 1 of 3 ran)" in row[cut.name]
    assert "    golden  pass rate 100.0% [34.2-100.0]" in lines  # under the first run
    assert "    golden  pass rate 50.0% [9.5-90.5]" in lines
    assert f"{broken.name}  broken: report.json:1: not JSON: invalid JSON" in done.stdout
    assert f"{unfinished.name}  unfinished: no manifest.json" in done.stdout
    assert "notes  foreign: a folder, not a run dir (no .llmeval-run tag)" in done.stdout
    assert "latest  " not in done.stdout  # the pointer is no run: it marks the newest
    assert row[cut.name].endswith("  <- latest")
    assert lines[-1] == f"3 run dir(s) under {ROOT}, 2 unreadable"


def test_runs_reports_a_missing_or_empty_root(pytester: pytest.Pytester) -> None:
    done = command(pytester.path, "runs", str(ROOT))  # without ROOT: tests/commands/test_run_roots
    no_traceback(done)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        f"pytest_llmeval runs: {ROOT}: no such folder; give the output root of your runs "
        f"(pytest writes them under {ROOT}, or --llmeval-output-root)"
    ]
    (pytester.path / "afile").write_text("x")
    done = command(pytester.path, "runs", "afile")
    assert done.returncode == 2 and "afile: is not a folder" in done.stderr
    (pytester.path / "empty").mkdir()
    done = command(pytester.path, "runs", "empty")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "no run dirs under empty yet (pytest writes one per session)\n"


def test_runs_lists_only_foreign_folders_without_failing(pytester: pytest.Pytester) -> None:
    (pytester.path / "mine" / "a-folder").mkdir(parents=True)
    done = command(pytester.path, "runs", "mine")
    assert done.returncode == 0, done.stderr  # nothing of ours is broken
    assert "a-folder  foreign: a folder, not a run dir" in done.stdout
    assert done.stdout.splitlines()[-1] == "0 run dir(s) under mine"


# -- latest ------------------------------------------------------------------------------------


def latest(pytester: pytest.Pytester) -> str:
    return os.readlink(pytester.path / ROOT / "latest")


def test_latest_points_at_the_newest_run_and_a_resume_moves_it(pytester: pytest.Pytester) -> None:
    first = echo_run(pytester, {"a": True, "b": False})
    assert latest(pytester) == first.name  # relative: the root can move
    second = echo_run(pytester, {"a": True, "b": False})
    assert latest(pytester) == second.name
    assert (pytester.path / ROOT / "latest" / "report.json").is_file()
    pytester.runpytest("qa.golden.json", "--llmeval-runner", "echo",
                       f"--llmeval-resume={first}")  # fmt: skip
    assert latest(pytester) == first.name  # the resumed run is the newest written
    assert sorted(p.name for p in (pytester.path / ROOT).iterdir()) == sorted(
        [first.name, second.name, "latest"]
    )  # no temporary pointer left behind
    elsewhere = pytester.path / "elsewhere"
    pytester.runpytest("qa.golden.json", "--llmeval-runner", "echo",
                       f"--llmeval-run-dir={elsewhere}")  # fmt: skip
    assert (elsewhere / "report.json").is_file()
    assert latest(pytester) == first.name  # a run dir outside the root is not pointed at


@pytest.mark.parametrize("kind", ["file", "folder", "link elsewhere"])
def test_latest_of_the_users_own_is_left_alone(pytester: pytest.Pytester, kind: str) -> None:
    root = pytester.path / ROOT
    root.mkdir(parents=True)
    mine = root / "latest"
    if kind == "file":
        mine.write_text("my notes\nabout runs\n")
    elif kind == "folder":
        mine.mkdir()
        (mine / "keep").write_text("x")
    else:
        mine.symlink_to(pytester.path)
    write = pytester.path / "qa.golden.json"
    write.write_text('[{"id": "a", "input": "x", "expected_output": "x"}]')
    result = pytester.runpytest("qa.golden.json", "--llmeval-runner", "echo")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        ["llmeval: warning: */latest is not a pointer this plugin made (a file or folder of "
         "your own); left as it is, so it does not point at this run"]
    )  # fmt: skip
    if kind == "file":
        assert mine.read_text() == "my notes\nabout runs\n"
    elif kind == "folder":
        assert [p.name for p in mine.iterdir()] == ["keep"]
    else:
        assert mine.readlink() == pytester.path
    assert len(run_dirs(pytester)) == 1 + (kind == "folder")


def test_latest_is_written_by_the_xdist_controller(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    run = echo_run(pytester, {"a": True, "b": True, "c": False, "d": True}, "-n", "2")
    assert latest(pytester) == run.name
    assert sorted(p.name for p in (pytester.path / ROOT).iterdir()) == sorted([run.name, "latest"])
    done = command(pytester.path, "runs")
    assert done.returncode == 0, done.stderr
    assert f"  {run.name}  echo  4 cases  failed" in done.stdout


def test_runs_reads_the_journal_without_results_and_refuses_a_bad_row(
    pytester: pytest.Pytester,
) -> None:
    run = echo_run(pytester, {"a": True, "b": False})
    root = pytester.path / ROOT
    journal_only = root / "20200101T000000Z_journalonly"
    shutil.copytree(run, journal_only)
    (journal_only / "results.jsonl").unlink()
    bad_row = root / "20200102T000000Z_badrow"
    shutil.copytree(run, bad_row)
    (bad_row / "results.jsonl").write_text('{"nodeid": "x"}\n')
    done = command(pytester.path, "runs")
    no_traceback(done)
    assert done.returncode == 1
    assert f"  {journal_only.name}  echo  2 cases  failed  (1 case(s) failed)" in done.stdout
    assert f"{bad_row.name}  broken: results.jsonl:1: not a result: case_id: Field required" in (
        done.stdout
    )


@pytest.mark.parametrize(
    ("args", "ret", "verdict"),
    [
        (["--llmeval-exit-on", "gates", "--llmeval-gate", "golden.pass_rate>=0.4"], 0, "passed"),
        (["--llmeval-exit-on", "gates", "--llmeval-gate", "golden.pass_rate>=0.9"], 1,
         "failed  (gate golden.pass_rate>=0.9 failed)"),
        (["-k", "not b", "--llmeval-gate", "golden.pass_rate>=0.4"], 0, "partial"),
        ([], 1, "failed  (1 case(s) failed)"),
    ],
    ids=["gates pass", "a gate fails", "a gate judged a subset", "a case fails"],
)  # fmt: skip
def test_the_verdict_of_runs_is_the_sessions(
    pytester: pytest.Pytester, args: list[str], ret: int, verdict: str
) -> None:
    write = pytester.path / "qa.golden.json"
    rows = '[{"id": "a", "input": "x", "expected_output": "x"}, ' \
           '{"id": "b", "input": "y", "expected_output": "z"}]'  # fmt: skip
    write.write_text(rows)
    result = pytester.runpytest("qa.golden.json", "--llmeval-runner", "echo", *args)
    assert result.ret == ret
    (run,) = run_dirs(pytester)
    done = command(pytester.path, "runs")
    assert done.returncode == 0, done.stderr
    cases = "1 case" if "-k" in args else "2 cases"
    assert f"  {run.name}  echo  {cases}  {verdict}  <- latest" in done.stdout
