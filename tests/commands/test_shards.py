"""Shards across machines: --llmeval-shard, ``merge`` and ``validate-sharding``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_llmeval.commands.shard_validation import compare_values, validate
from pytest_llmeval.plugin.scheduling import in_shard
from tests.conftest import read_jsonl, run_outputs, strip_timings, write_json

CASES = [
    {"id": f"c{i:02d}", "category": cat, "input": text, "expected_output": expected}
    for i, (cat, text, expected) in enumerate(
        [
            ("weather", "weather in Paris", "It is 18C and cloudy in Paris."),
            ("search", "search the web", "Top hit: RoPE precision notes"),
            ("chat", "hello you", "Hello there!"),
            ("chat", "plain echo", "plain echo"),
            ("chat", "another echo", "not the echo"),  # fails
        ]
        * 3
    )
] + [
    {"category": "chat", "input": "no id here", "expected_output": "no id here"},
    {"category": "chat", "input": "no id either", "expected_output": "no id either"},
]

TOOLFORGE = {
    "metadata": {"toolName": "get_weather"},
    "cases": [
        {"id": "t1", "input": {"message": "weather"}, "expect": {"toolsCalled": ["get_weather"]}},
        {"id": "t2", "input": {"message": "hello"}, "expect": {"toolsCalled": ["get_weather"]}},
        {"id": "t3", "input": {"message": "search"}, "expect": {"toolsCalled": ["web.search"]}},
    ],
}

RUNNER = ("--llmeval-runner", "scripted")


def _nodeids(run_dir: Path) -> list[str]:
    return [row["nodeid"] for row in read_jsonl(run_dir / "results.jsonl")]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest_llmeval", *args]
    return subprocess.run(command, capture_output=True, text=True)


def _shards(pytester: pytest.Pytester, count: int, *args: str, prefix: str = "s") -> list[str]:
    """Run every shard of ``count`` in-process; the run dir names."""
    names = []
    for index in range(count):
        name = f"{prefix}{index}"
        pytester.runpytest(
            *RUNNER, *args, "--llmeval-shard", f"{index}/{count}", "--llmeval-run-dir", name
        )
        names.append(name)
    return names


def _write_suite(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    write_json(pytester, "evals/t.golden.json", TOOLFORGE)


# --------------------------------------------------------------------------------------------
# --llmeval-shard


def test_merged_shards_equal_the_unsharded_run(scripted: pytest.Pytester) -> None:
    _write_suite(scripted)
    gate = ("--llmeval-gate", "golden.pass_rate>=0.5")
    full = scripted.runpytest(*RUNNER, *gate, "--llmeval-run-dir", "full")
    shards = _shards(scripted, 3, *gate)
    sizes = [len(_nodeids(scripted.path / name)) for name in shards]
    assert all(sizes) and sum(sizes) == len(CASES) + len(TOOLFORGE["cases"])
    manifest = json.loads((scripted.path / "s1/manifest.json").read_text())
    assert manifest["shard"] == [1, 3] and manifest["settings"]["shard"] == [1, 3]

    done = _cli("merge", "merged", *shards)
    assert done.returncode == full.ret == 1, done.stderr  # c04 & co fail: exit_on all
    assert "gates: passed; exit 1" in done.stdout
    merged = scripted.path / "merged"
    assert run_outputs(merged) == run_outputs(scripted.path / "full")
    for name in ("summary.md", "errors.jsonl"):
        assert (merged / name).read_text() == (scripted.path / "full" / name).read_text(), name
    events = strip_timings(read_jsonl(merged / "events.jsonl"))
    assert events == strip_timings(read_jsonl(scripted.path / "full/events.jsonl")) != []
    report = json.loads((merged / "report.json").read_text())
    assert report["gates"]["passed"] is True
    merged_manifest = json.loads((merged / "manifest.json").read_text())
    assert [m["shard"] for m in merged_manifest["merged_from"]] == [[0, 3], [1, 3], [2, 3]]
    assert merged_manifest["shard"] is None
    # the merged dir is an ordinary run dir: summarize rebuilds the same report from it
    assert _cli("summarize", "merged").returncode == 1  # cases failed: red, as the run was
    assert json.loads((merged / "report.json").read_text()) == report


def test_shard_membership_survives_reordering(scripted: pytest.Pytester) -> None:
    def collected() -> list[str]:
        result = scripted.runpytest("--collect-only", "-q", "--llmeval-shard", "1/3")
        return sorted(line for line in result.outlines if "::" in line)

    write_json(scripted, "qa.golden.json", CASES)
    before = collected()
    write_json(scripted, "qa.golden.json", list(reversed(CASES)))
    after = collected()
    assert before == after
    every = scripted.runpytest("--collect-only", "-q").outlines
    expected = sorted(n for n in every if "::" in n and in_shard(n, 1, 3))
    assert before == expected and 0 < len(before) < len(CASES)
    assert any("::h" in nodeid for nodeid in every)  # rows without id are sharded too


def test_non_eval_tests_are_not_sharded(scripted: pytest.Pytester) -> None:
    write_json(scripted, "qa.golden.json", CASES[:6])
    scripted.makepyfile(test_plain="def test_a(): pass\ndef test_b(): pass\n")
    for index in range(2):
        result = scripted.runpytest("--collect-only", "-q", "--llmeval-shard", f"{index}/2")
        lines = [line for line in result.outlines if "::" in line]
        assert "test_plain.py::test_a" in lines and "test_plain.py::test_b" in lines


def test_xdist_with_a_shard_runs_exactly_that_shard(scripted: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    _write_suite(scripted)
    shard = ("--llmeval-shard", "1/2")
    result = scripted.runpytest(*RUNNER, *shard, "--llmeval-run-dir", "x", "-n", "2", "-v")
    one = scripted.runpytest(*RUNNER, *shard, "--llmeval-run-dir", "one")
    every = _nodeids(scripted.path / "one") + _nodeids(scripted.path / "x")
    ran = _nodeids(scripted.path / "x")
    assert ran == _nodeids(scripted.path / "one") and ran == sorted(set(ran))
    assert all(in_shard(nodeid, 1, 2) for nodeid in every)
    all_ids = scripted.runpytest("--collect-only", "-q").outlines
    assert ran == sorted(n for n in all_ids if "::" in n and in_shard(n, 1, 2))
    assert run_outputs(scripted.path / "x") == run_outputs(scripted.path / "one")
    # workers deselect the other shard's cases, so only the single process counts them
    assert result.parseoutcomes() == {
        k: v for k, v in one.parseoutcomes().items() if k != "deselected"
    }
    result.stdout.fnmatch_lines(["*gw0*", "*gw1*"], consecutive=False)  # both workers work


def test_bad_shard_option_is_a_usage_error(scripted: pytest.Pytester) -> None:
    write_json(scripted, "qa.golden.json", CASES[:2])
    result = scripted.runpytest("--llmeval-shard", "3/3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--llmeval-shard I/N needs 0 <= I < N*"])


# --------------------------------------------------------------------------------------------
# merge


def test_merge_refuses_a_duplicate_and_a_missing_shard(scripted: pytest.Pytester) -> None:
    write_json(scripted, "qa.golden.json", CASES[:8])
    s0, s1 = _shards(scripted, 2)
    twice = _cli("merge", "out", s0, s1, s1)
    assert twice.returncode == 2
    assert "shard 1/2 is given more than once" in twice.stderr
    duplicate = _nodeids(scripted.path / s1)[0]
    assert f"duplicate case {duplicate}: in shard 1/2 (s1) and shard 1/2 (s1)" in twice.stderr
    missing = _cli("merge", "out", s0)
    assert missing.returncode == 2
    assert "shard 1/2 is missing (given: 0/2)" in missing.stderr
    assert not (scripted.path / "out").exists()
    full = scripted.runpytest(*RUNNER, "--llmeval-run-dir", "full")
    assert full.ret == 1
    unsharded = _cli("merge", "out", s0, "full")
    assert unsharded.returncode == 2 and "full: not a shard run dir" in unsharded.stderr


def test_merge_refuses_shards_of_different_runners(scripted: pytest.Pytester) -> None:
    write_json(scripted, "qa.golden.json", CASES[:8])
    scripted.runpytest(*RUNNER, "--llmeval-shard", "0/2", "--llmeval-run-dir", "a")
    scripted.runpytest(
        "--llmeval-runner", "echo", "--llmeval-shard", "1/2", "--llmeval-run-dir", "b"
    )
    done = _cli("merge", "out", "a", "b")
    assert done.returncode == 2
    assert "setting runner differs: 'scripted' in shard 0/2 (a), 'echo' in shard 1/2 (b)" in (
        done.stderr
    )


@pytest.mark.parametrize(
    ("args", "code", "decision"),
    [
        ((), 1, "gates: none"),  # a failed case fails the merge
        (("--llmeval-gate", "golden.pass_rate>=0.5"), 1, "gates: passed"),
        (("--llmeval-exit-on", "gates", "--llmeval-gate", "golden.pass_rate>=0.5"), 0, "passed"),
        (("--llmeval-exit-on", "gates", "--llmeval-gate", "golden.pass_rate>=0.9"), 1, "FAILED"),
    ],
)
def test_merge_exit_code_follows_cases_and_gates(
    scripted: pytest.Pytester, args: tuple[str, ...], code: int, decision: str
) -> None:
    write_json(scripted, "qa.golden.json", CASES[:10])  # 8 of 10 pass
    full = scripted.runpytest(*RUNNER, *args, "--llmeval-run-dir", "full")
    shards = _shards(scripted, 2, *args)
    done = _cli("merge", "out", *shards)
    assert done.returncode == code == full.ret, done.stdout + done.stderr
    assert decision in done.stdout


def test_merge_of_passing_shards_exits_zero(scripted: pytest.Pytester) -> None:
    passing = [case for case in CASES if case["input"] != "another echo"]
    write_json(scripted, "qa.golden.json", passing)
    done = _cli("merge", "out", *_shards(scripted, 2))
    assert done.returncode == 0, done.stderr
    assert f"{len(passing)} case(s) -> out; gates: none; exit 0" in done.stdout


def test_empty_shards_still_merge(scripted: pytest.Pytester) -> None:
    write_json(scripted, "qa.golden.json", CASES[3:4])
    shards = _shards(scripted, 3)
    empty = [name for name in shards if not _nodeids(scripted.path / name)]
    assert len(empty) == 2  # one case, three shards: two run dirs with no results
    assert json.loads((scripted.path / empty[0] / "manifest.json").read_text())["shard"]
    done = _cli("merge", "out", *shards)
    assert done.returncode == 0, done.stderr
    assert _nodeids(scripted.path / "out") == ["qa.golden.json::c03"]


# --------------------------------------------------------------------------------------------
# validate-sharding


def test_validate_sharding(scripted: pytest.Pytester) -> None:
    _write_suite(scripted)
    done = _cli(
        "validate-sharding", "--shards", "2", "--out", "vs", "--jobs", "3",
        *RUNNER, "--llmeval-gate", "golden.pass_rate>=0.5",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    out = scripted.path / "vs"
    report = json.loads((out / "sharding_validation.json").read_text())
    assert report["ok"] is True, report
    total = len(CASES) + len(TOOLFORGE["cases"])
    assert report["num_shards"] == 2 and sum(report["shard_sizes"]) == total
    for flag in ("fingerprints_match", "coverage_ok", "metrics_match", "gates_ok"):
        assert report[flag] is True, flag
    assert report["per_example_mismatches"] == 0 and report["metric_diffs"] == {}
    assert report["duplicates"] == [] and report["missing"] == []
    unsharded = json.loads((out / "unsharded/report.json").read_text())
    assert report["dataset_sha256"] == unsharded["dataset_sha256"]
    assert report["runner_fingerprint"] == unsharded["runner_fingerprint"]
    assert report["model_fingerprint"] is None  # the scripted model has no weights to hash
    assert report["environment"] == {
        "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"
    }  # fmt: skip
    for name in ("unsharded", "shard-1-of-2"):  # the runs saw it (manifest.json records it)
        environment = json.loads((out / name / "manifest.json").read_text())["environment"]
        assert environment["PYTHONHASHSEED"] == "0" and environment["OMP_NUM_THREADS"] == "1"
    assert run_outputs(out / "merged") == run_outputs(out / "unsharded")

    # a shard run dir lost before the merge: its cases are missing, and named
    shard_dirs = [out / f"shard-{i}-of-2" for i in range(2)]
    lost = validate(out / "unsharded", shard_dirs[:1], num_shards=2)
    assert lost["ok"] is False and lost["coverage_ok"] is False
    assert lost["missing"] == _nodeids(shard_dirs[1]) and lost["missing"]
    assert lost["missing_shards"] == [1] and lost["shard_sizes"][1] == 0
    assert lost["metrics_match"] is False and "totals.total" in lost["metric_diffs"]

    # a shard that answered differently: a per-example mismatch naming the case
    journal = next((shard_dirs[0] / "journal").rglob("*.jsonl"))
    rows = [json.loads(line) for line in journal.read_text().splitlines()]
    rows[0]["result"]["response"] += " (changed)"
    journal.write_text("".join(json.dumps(row) + "\n" for row in rows))
    changed = validate(out / "unsharded", shard_dirs, num_shards=2)
    assert changed["ok"] is False and changed["coverage_ok"] is True
    assert changed["per_example_mismatches"] == 1
    assert changed["mismatches"] == [
        {"nodeid": rows[0]["result"]["nodeid"], "fields": ["response"]}
    ]


def test_validate_sharding_refuses_its_own_options(scripted: pytest.Pytester) -> None:
    done = _cli("validate-sharding", "--shards", "2", "--llmeval-shard", "0/2")
    assert done.returncode == 2 and "set by validate-sharding itself" in done.stderr


def test_validate_sharding_into_the_project_keeps_the_users_logs(
    scripted: pytest.Pytester,
) -> None:
    """``--out .`` where ``./logs`` is the user's: validating (twice) replaces the tool's
    own logs there and nothing else."""
    write_json(scripted, "qa.golden.json", CASES)
    (scripted.path / "logs").mkdir()
    (scripted.path / "logs/keep.txt").write_text("mine")
    for _ in range(2):
        done = _cli("validate-sharding", "--shards", "1", "--out", ".", "--jobs", "2", *RUNNER)
        assert done.returncode == 0, done.stdout + done.stderr
    assert (scripted.path / "logs/keep.txt").read_text() == "mine"
    logs = sorted(p.name for p in (scripted.path / "logs").iterdir())
    assert logs == ["keep.txt", "shard-0-of-1.log", "unsharded.log"]
    assert (scripted.path / "unsharded/results.jsonl").is_file()


def test_validate_sharding_refuses_before_removing_anything(tmp_path: Path) -> None:
    from pytest_llmeval.commands.shard_validation import clear_outputs
    from pytest_llmeval.core.errors import LLMEvalError
    from pytest_llmeval.rundir.files import is_run_dir, tag_run_dir

    earlier, mine, logs = tmp_path / "unsharded", tmp_path / "merged", tmp_path / "logs"
    tag_run_dir(earlier)
    mine.mkdir()
    (mine / "notes.md").write_text("mine")
    with pytest.raises(LLMEvalError, match="merged: exists and is not a run dir"):
        clear_outputs([earlier, mine], logs)
    assert is_run_dir(earlier) and (mine / "notes.md").is_file() and not logs.exists()
    logs.mkdir()
    for name in ("unsharded.log", "shard-3-of-4.log", "app.log", "keep.txt"):
        (logs / name).write_text("x")
    clear_outputs([earlier], logs)
    assert not earlier.exists()
    assert sorted(p.name for p in logs.iterdir()) == ["app.log", "keep.txt"]


def test_dual_tolerance() -> None:
    assert compare_values({"a": 0.5}, {"a": 0.5 + 5e-7}, 1e-6, 1e-6) == {}
    assert compare_values({"a": 1e9}, {"a": 1e9 + 100}, 1e-6, 1e-6) == {}  # relative
    assert "a" in compare_values({"a": 0.5}, {"a": 0.5 + 5e-6}, 1e-6, 1e-6)
    assert "n" in compare_values({"n": 3}, {"n": 4}, 1e9, 1e9)  # counts are exact
    assert "x.y[1]" in compare_values({"x": {"y": [1, 2]}}, {"x": {"y": [1, 3]}}, 1e-6, 1e-6)
    assert "k" in compare_values({"k": 1}, {}, 1e-6, 1e-6)
