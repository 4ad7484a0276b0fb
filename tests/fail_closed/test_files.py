"""Fail closed on user files and lost data: what the plugin removes, per-file artifacts that
never share a name, and the data hash of what was judged.

Each entry drives real pytest sessions (in process) or the offline commands and checks that a
user's file survives, that every source file keeps its own artifact, and that report.json's
hashes are of the bytes the cases were judged on.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.commands.merge import MergeError, merge
from pytest_llmeval.rundir.journal import read_results
from tests.conftest import W2C_FILE, read_jsonl, write_json

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


# -- per-file artifacts never share a name --------------------------------------------------

TOOLFORGE = [
    {"id": "tf-1", "input": {"message": "hi"}, "expect": {"responseNonEmpty": True}},
]


def _artifacts(run_dir: Path, folder: str) -> dict[str, Any]:
    return {
        p.relative_to(run_dir).as_posix(): json.loads(p.read_text())
        for p in sorted((run_dir / folder).glob("*.json"))
    }


def test_two_toolforge_files_of_one_name_keep_an_artifact_each(pytester: pytest.Pytester) -> None:
    write_json(pytester, "v1/get_weather.golden.json", TOOLFORGE)
    write_json(pytester, "v2/get_weather.golden.json", [{**TOOLFORGE[0], "id": "tf-2"}])
    write_json(pytester, "search.golden.json", [{**TOOLFORGE[0], "id": "tf-3"}])
    for workers in ((), ("-n", "2")):
        if workers:
            pytest.importorskip("xdist")
        result = pytester.runpytest(*ECHO, "--llmeval-run-dir", f"run{len(workers)}", *workers)
        assert result.ret == 0
    run = pytester.path / "run0"
    artifacts = _artifacts(run, "toolforge")
    assert len(artifacts) == 3
    assert "toolforge/search.golden.json" in artifacts  # a name no other file takes stays
    cases = {name: [c["id"] for c in body["cases"]] for name, body in artifacts.items()}
    assert sorted(cases.values()) == [["tf-1"], ["tf-2"], ["tf-3"]]
    manifest = json.loads((run / "manifest.json").read_text())
    assert set(artifacts) <= set(manifest["artifacts"])
    assert _artifacts(pytester.path / "run2", "toolforge").keys() == artifacts.keys()


def test_when2call_files_whose_escaped_paths_meet_keep_an_artifact_each(
    pytester: pytest.Pytester,
) -> None:
    rows = W2C_FILE.read_text(encoding="utf-8").splitlines()
    # both escape to when2call_a_b: only "letters, digits, . - _" are kept in a name
    (pytester.path / "when2call_a b.jsonl").write_text(rows[0] + "\n")
    (pytester.path / "when2call_a_b.jsonl").write_text("\n".join(rows[1:3]) + "\n")
    pytester.runpytest(*ECHO, "--llmeval-run-dir", "run")
    artifacts = _artifacts(pytester.path / "run", "when2call")
    assert sorted(body["file"] for body in artifacts.values()) == [
        "when2call_a b.jsonl",
        "when2call_a_b.jsonl",
    ]
    assert "when2call/when2call_a_b.json" not in artifacts  # neither takes the other's name


def test_a_registered_suite_that_names_artifacts_by_file_name_keeps_one_each(
    pytester: pytest.Pytester,
) -> None:
    from tests.plugin.test_suite_plugins import SUITE_CONFTEST

    by_name = """
    def file_artifacts(self, source, results, ctx, run_id):
        return {f"shout/{source.path.name}.json": {"file": source.display}}
"""
    conftest = SUITE_CONFTEST.replace("SHOUTED", "int").replace(
        "\n    def file_artifacts(self, source, results, ctx, run_id):\n        return {}\n",
        by_name,
    )
    pytester.makeconftest(conftest)
    pytester.makeini("[pytest]\nllmeval_files = *.shout.txt\n")
    for folder in ("v1", "v2"):
        (pytester.path / folder).mkdir()
        (pytester.path / folder / "greetings.shout.txt").write_text("HELLO\n")
    assert pytester.runpytest(*ECHO, "--llmeval-run-dir", "run").ret == 0
    artifacts = _artifacts(pytester.path / "run", "shout")
    assert sorted(body["file"] for body in artifacts.values()) == [
        "v1/greetings.shout.txt",
        "v2/greetings.shout.txt",
    ]


# -- the data hash is of what was judged ----------------------------------------------------

EDIT_DURING_THE_RUN = """
import json, pathlib, pytest

@pytest.fixture(autouse=True)
def edit_the_data_once():
    path = pathlib.Path("qa.golden.json")
    rows = json.loads(path.read_text())
    if rows[0]["expected_output"] == "x":  # an edit made while the run goes on
        rows[0]["expected_output"] = "edited"
        path.write_text(json.dumps(rows))
    yield
"""


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_a_data_file_edited_during_the_run_records_the_bytes_judged(
    pytester: pytest.Pytester, xdist: tuple[str, ...]
) -> None:
    if xdist:
        pytest.importorskip("xdist")
    collected = write_json(pytester, "qa.golden.json", CASES).read_bytes()
    pytester.makeconftest(EDIT_DURING_THE_RUN)
    result = pytester.runpytest(*ECHO, "--llmeval-run-dir", "run", *xdist)
    assert result.ret == 0  # every case was judged on the rows collected, and passed
    report = json.loads((pytester.path / "run" / "report.json").read_text())
    assert report["datasets"] == {"qa.golden.json": hashlib.sha256(collected).hexdigest()}
    assert report["datasets_changed"] == {
        "qa.golden.json": "changed on disk after it was collected"
    }
    result.stdout.fnmatch_lines(
        ["data changed during the run: qa.golden.json changed on disk after it was collected; "
         "report.json records the sha256 of the bytes collected"]
    )  # fmt: skip


def test_workers_that_collected_different_bytes_are_noted() -> None:
    from pytest_llmeval.suites.base import CollectedData

    data = CollectedData()
    data.add("qa.golden.json", "aa")
    data.add("qa.golden.json", "aa")
    assert data.changed == {}
    data.add("qa.golden.json", "bb")
    assert data.hashes == {"qa.golden.json": "aa"}
    assert "judged on different contents" in data.changed["qa.golden.json"]
