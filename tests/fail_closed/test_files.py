"""Fail closed on user files and lost data: what the plugin removes, per-file artifacts that
never share a name, and the data hash of what was judged.

Each entry drives real pytest sessions (in process) or the offline commands and checks that a
user's file survives, that every source file keeps its own artifact, and that report.json's
hashes are of the bytes the cases were judged on.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_llmeval.commands.merge import MergeError, merge
from pytest_llmeval.rundir.journal import read_results
from tests.conftest import read_jsonl, write_json

CASES = [
    {"id": "a", "input": "x", "expected_output": "x"},
    {"id": "b", "input": "y", "expected_output": "y"},
    {"id": "c", "input": "z", "expected_output": "z"},
]
ECHO = ("-p", "no:cacheprovider", "--llmeval-runner", "echo")


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def _user_files(folder: Path) -> None:
    """A user's file, a user's folder with a file, and an empty folder of theirs."""
    (folder / "notes.md").write_text("mine\n")
    (folder / "plots").mkdir()
    (folder / "plots" / "latency.png").write_bytes(b"\x89PNG")
    (folder / "empty").mkdir()


def _user_files_survive(folder: Path) -> None:
    assert (folder / "notes.md").read_text() == "mine\n"
    assert (folder / "plots" / "latency.png").read_bytes() == b"\x89PNG"
    assert (folder / "empty").is_dir()


# -- merge and validate-sharding delete only what they wrote --------------------------------


def _two_shards(pytester: pytest.Pytester) -> list[Path]:
    write_json(pytester, "qa.golden.json", CASES)
    for index in range(2):
        shard = ("--llmeval-shard", f"{index}/2", "--llmeval-run-dir", f"s{index}")
        assert pytester.runpytest(*ECHO, *shard).ret in (0, 5)
    return [pytester.path / "s0", pytester.path / "s1"]


def test_merging_again_keeps_the_users_files_in_the_output(pytester: pytest.Pytester) -> None:
    shards = _two_shards(pytester)
    out = pytester.path / "merged"
    merge(out, shards)
    _user_files(out)
    merged = merge(out, shards)  # again, into the earlier merge's output
    assert merged.exit_code == 0
    _user_files_survive(out)
    assert [r["case_id"] for r in read_jsonl(out / "results.jsonl")] == ["a", "b", "c"]
    assert sorted(r.case_id for r, _ in read_results(out).values()) == ["a", "b", "c"]
    journals = sorted(p.relative_to(out).parts[0] for p in out.glob("journal/*/*.jsonl"))
    assert journals == ["journal"]  # the earlier merge's journal is gone, one is left
    merge(out, shards)  # and a third time: the user's files are no obstacle
    _user_files_survive(out)


def test_merge_refuses_a_users_file_where_it_writes_and_touches_nothing(
    pytester: pytest.Pytester,
) -> None:
    shards = _two_shards(pytester)
    out = pytester.path / "merged"
    merge(out, shards)
    (out / "journal" / "001" / "mine.jsonl").write_text("{}\n")  # read as results if kept
    before = _snapshot(out)
    done = subprocess.run(
        [sys.executable, "-m", "pytest_llmeval", "merge", str(out), *map(str, shards)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "journal/001/mine.jsonl, which no merge wrote" in done.stderr
    assert "move it out of the way, or give another output folder" in done.stderr
    assert _snapshot(out) == before
    with pytest.raises(MergeError, match="move it out of the way"):
        merge(out, shards)


def test_validate_sharding_keeps_the_users_files_in_the_run_dirs_it_replaces(
    tmp_path: Path,
) -> None:
    from pytest_llmeval.commands.shard_validation import clear_outputs
    from pytest_llmeval.rundir.files import is_run_dir, tag_run_dir

    earlier = tmp_path / "unsharded"
    tag_run_dir(earlier)
    for name in ("manifest.json", "results.jsonl", "report.json"):
        (earlier / name).write_text("{}\n")
    (earlier / "journal" / "001").mkdir(parents=True)
    (earlier / "journal" / "001" / "controller-12.jsonl").write_text("{}\n")
    (earlier / "workspaces" / "a").mkdir(parents=True)
    (earlier / "workspaces" / "a" / "scratch.txt").write_text("agent's\n")
    _user_files(earlier)
    clear_outputs([earlier], tmp_path / "logs")
    _user_files_survive(earlier)
    assert is_run_dir(earlier)  # still a run dir the next session may write
    left = sorted(p.name for p in earlier.iterdir())
    assert left == [".llmeval-run", "empty", "notes.md", "plots"]
