"""Every way of running a fixed project writes the run dir it wrote before the re-layering.

A re-layering of the run dir, the report model or the verdict must leave ``pytest evals/``,
``-n 2``, shards + ``merge``, ``summarize``, resume and baselines giving byte-identical
``results.jsonl`` and equal ``report.json`` (timings aside) before and after. This file pins that:
it copies the example project (``evals/`` and ``fixtures/``, with the ini keys ``pytest evals/``
reads from the repo's ``pyproject.toml``) into a tmp dir, runs it in each mode through a real
``pytest`` or ``python -m pytest_llmeval`` subprocess (the default ``replay`` runner, offline),
and compares each mode's outputs with ``tests/data/rundir_golden/<mode>/``, written by the code
before the first re-layering (6d8c2f2) and regenerated since only where fields were added on
purpose (each case's ``input``, ``expected``, ``transcript`` and ``xfailed``, each gate's
``status``, the baseline's case lists; a repeated case's ``usage`` counting every run, not the
first; each baseline gate change's ``baseline_status`` and ``current_status``;
``LLMEVAL_REGEN_GOLDEN=1`` rewrites them):

* ``results.jsonl`` byte for byte, after normalising (below);
* ``report.json`` as parsed JSON, after normalising;
* for the baseline modes, the blessed ``baseline.json`` as parsed JSON.

It also checks that the modes agree with each other: an unsharded run, the same run on two
xdist workers, the merge of its two shards, ``summarize`` of its run dir, a resumed run and a
run that blesses a baseline are one run, so their outputs are equal, not merely each pinned.

Normalised, and why (found by running each mode twice, in two tmp dirs, and diffing):

* ``duration_ms`` and ``elapsed_ms`` (``conftest.TIMINGS``), at any depth: wall-clock times of
  a case and of each tool call. The value becomes ``"<timing>"``; the key stays.
* the fixed project's absolute path becomes ``<project>``: ``report.json``'s ``baseline.baseline``
  is the baseline file's resolved path, and the tmp dir differs on every run.

Nothing else varies, so nothing else is normalised. Run ids, which do vary, do not reach these
files here: every run gets ``--llmeval-run-dir NAME`` and its run id is that name (it appears as
``baseline.json``'s ``run_id`` and ``report.json``'s ``baseline.baseline_run_id``). Start and end
times live in ``manifest.json``, which is not compared.

The golden files change only on purpose (a change to ``evals/`` or ``fixtures/``, or a report
change that is meant). Then regenerate them, review the diff, and commit it::

    LLMEVAL_REGEN_GOLDEN=1 pytest tests/rundir/test_rundir_equivalence.py
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TIMINGS

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parents[1] / "data" / "rundir_golden"
REGEN = os.environ.get("LLMEVAL_REGEN_GOLDEN") == "1"

INI = """\
[pytest]
llmeval_tool_registry = evals/tools.json
xfail_strict = true
filterwarnings = error
"""
"""The ini keys of the repo's ``pyproject.toml`` that ``pytest evals/`` uses."""

GATES = (
    "--llmeval-gate", "golden.pass_rate>=0.5",  # passes (1.0)
    "--llmeval-gate", "when2call.acc_norm>=0.9",  # fails (0.458): every run below exits 1
)  # fmt: skip
TOTAL = 119
"""Eval cases in ``evals/``."""

CRASH_AFTER = 60
"""The interrupted run is killed (SIGKILL) when this many tests have reported."""
CRASH_PLUGIN = """\
import os, signal

_reported = 0

def pytest_runtest_logreport(report):
    global _reported
    if report.when == "call":
        _reported += 1
        if _reported == int(os.environ["CRASH_AFTER"]):
            os.kill(os.getpid(), signal.SIGKILL)
"""

TIMING = re.compile(rf'"({"|".join(TIMINGS)})": (?:-?[0-9][0-9.eE+-]*|null)')
PROJECT = "<project>"

MODES = (
    "plain", "xdist", "shards_merged", "summarize", "resume", "baseline_update",
    "baseline_compare",
)  # fmt: skip
SAME_RUN = ("xdist", "shards_merged", "summarize", "resume", "baseline_update")
"""Modes that are the plain run by another road: equal results and report."""


class Runs:
    """Runs the fixed project once per mode, on first use, and keeps each mode's run dir."""

    def __init__(self, project: Path):
        self.project = project
        self.dirs: dict[str, Path] = {}

    def __getitem__(self, mode: str) -> Path:
        if mode not in self.dirs:
            method: Callable[[], Path] = getattr(self, mode)
            self.dirs[mode] = method()
        return self.dirs[mode]

    def run(
        self, *args: str, module: str = "pytest", codes: tuple[int, ...] = (1,), **env: str
    ) -> subprocess.CompletedProcess[str]:
        """``python -m MODULE ARGS`` in the project; its exit code must be one of ``codes``
        (1 for every run here: the failing gate fails it)."""
        if module == "pytest":
            args = ("evals", "-p", "no:cacheprovider", "-q", *args)
        done = subprocess.run(
            [sys.executable, "-m", module, *args],
            cwd=self.project,
            env={**_clean_environment(), **env},
            capture_output=True,
            text=True,
        )
        assert done.returncode in codes, done.stdout[-3000:] + done.stderr[-3000:]
        return done

    def plain(self) -> Path:
        self.run(*GATES, "--llmeval-run-dir", "plain")
        return self.project / "plain"

    def xdist(self) -> Path:
        pytest.importorskip("xdist")
        self.run(*GATES, "-n", "2", "--llmeval-run-dir", "xdist")
        return self.project / "xdist"

    def shards_merged(self) -> Path:
        shards = [f"shard{i}" for i in range(2)]
        for index, name in enumerate(shards):
            # a shard fails the gates that count the whole file (when2call.n == 24 ...)
            self.run(*GATES, "--llmeval-shard", f"{index}/2", "--llmeval-run-dir", name)
        sizes = [len(_lines(self.project / name / "results.jsonl")) for name in shards]
        assert all(sizes) and sum(sizes) == TOTAL, sizes
        self.run("merge", "shards_merged", *shards, module="pytest_llmeval")
        return self.project / "shards_merged"

    def summarize(self) -> Path:
        run_dir = self.project / "summarize"
        shutil.copytree(self["plain"], run_dir)
        for name in ("report.json", "results.jsonl", "summary.md", "report.html"):
            (run_dir / name).unlink()
        # summarize exits as its rebuilt verdict says: a gate fails here (merge exits 1 too)
        self.run("summarize", "summarize", module="pytest_llmeval", codes=(1,))
        return run_dir

    def resume(self) -> Path:
        run_dir = self.project / "resume"
        (self.project / "crash_midway.py").write_text(CRASH_PLUGIN)
        crash = ("-p", "crash_midway", "--llmeval-run-dir", "resume")
        self.run(*GATES, *crash, codes=(-signal.SIGKILL,), CRASH_AFTER=str(CRASH_AFTER))
        assert (run_dir / "journal").is_dir() and not (run_dir / "report.json").exists()
        done = self.run(*GATES, "--llmeval-resume", "resume")
        skipped = re.search(r"(\d+) deselected", done.stdout)
        assert skipped, done.stdout[-3000:]  # the cases the killed run finished are not rerun
        assert CRASH_AFTER <= int(skipped[1]) < TOTAL
        return run_dir

    def baseline_update(self) -> Path:
        blessed = ("--llmeval-update-baseline", "baseline.json")
        self.run(*GATES, *blessed, "--llmeval-run-dir", "baseline_update")
        shutil.copy(self.project / "baseline.json", self.project / "baseline_update")
        return self.project / "baseline_update"

    def baseline_compare(self) -> Path:
        self["baseline_update"]  # blesses baseline.json
        _age_baseline(self.project / "baseline.json")
        compared = ("--llmeval-baseline", "baseline.json")
        self.run(*GATES, *compared, "--llmeval-run-dir", "baseline_compare")
        return self.project / "baseline_compare"


def _age_baseline(path: Path) -> None:
    """Make the blessed baseline look like an older run, so every part of the baseline
    comparison has something to say: one flip of each kind, a metric delta, a gate that newly
    fails. The edited file is an input; the file as blessed is pinned before the edit."""
    data = json.loads(path.read_text())
    rows: list[dict[str, Any]] = data["results"]

    def first(suite: str, outcome: str) -> dict[str, Any]:
        return next(r for r in rows if r["suite"] == suite and r["outcome"] == outcome)

    first("when2call", "failed").update(outcome="passed", passed=True)  # pass->fail now
    first("toolforge", "passed").update(outcome="failed", passed=False)  # fail->pass now
    first("integration", "passed")["case_fingerprint"] = "0" * 64  # changed
    rows.remove(first("gaia", "passed"))  # new
    retired = "evals/retired.golden.json"
    gone = {"case_id": "retired", "file": retired, "nodeid": f"{retired}::retired"}
    rows.append({**first("golden", "passed"), **gone})  # removed
    report = data["report"]
    report["suites"]["golden"]["pass_rate"] = 0.75  # a metric delta
    for gate in report["gates"]["results"]:
        if gate["gate"]["name"] == "when2call.acc_norm>=0.9":
            gate["passed"] = True  # a gate that newly fails
    path.write_text(json.dumps(data, indent=2) + "\n")


def _clean_environment() -> dict[str, str]:
    """This process's environment without pytest's and the plugin's variables (settings such
    as ``PYTEST_LLMEVAL_RUNNER``, ``PYTEST_ADDOPTS``, an outer xdist worker's name)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}


def _lines(path: Path) -> list[str]:
    return _read(path).splitlines()


def _read(path: Path) -> str:
    """The file's text as its bytes say (no newline translation: byte for byte means it)."""
    return path.read_bytes().decode("utf-8")


def normalise(text: str, project: Path) -> str:
    """``text`` with timings and the project's path replaced (see the module docstring)."""
    text = TIMING.sub(r'"\1": "<timing>"', text)
    for form in sorted({str(project.resolve()), str(project)}, key=len, reverse=True):
        text = text.replace(form, PROJECT)
    return text


def outputs(run_dir: Path, project: Path) -> dict[str, str]:
    """A run dir's normalised files that equivalent runs share, by name."""
    found = {
        name: normalise(_read(run_dir / name), project) for name in ("results.jsonl", "report.json")
    }
    assert PROJECT not in found["results.jsonl"]  # no case result names a machine path
    return found


def _first_difference(expected: str, actual: str) -> str:
    """Where two results.jsonl texts part: the line, its node id and the differing keys."""
    old, new = expected.splitlines(), actual.splitlines()
    for number, (a, b) in enumerate(zip(old, new, strict=False), start=1):
        if a != b:
            try:
                rows = json.loads(a), json.loads(b)
            except ValueError:
                return f"line {number} differs (not JSON): {a[:200]!r} != {b[:200]!r}"
            keys = sorted(k for k in {*rows[0], *rows[1]} if rows[0].get(k) != rows[1].get(k))
            return f"line {number} ({rows[1].get('nodeid')}) differs in {keys}"
    if len(old) != len(new):
        return f"{len(old)} lines expected, {len(new)} written"
    return "the texts differ only in line endings"


def _differences(expected: Any, actual: Any, where: str = "") -> list[str]:
    """Dotted paths at which two parsed JSON values differ."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        return [
            path
            for key in sorted({*expected, *actual})
            for path in (
                _differences(expected.get(key), actual.get(key), f"{where}.{key}".lstrip("."))
                if key in expected and key in actual
                else [f"{where}.{key}".lstrip(".")]
            )
        ]
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        return [
            path
            for i, (a, b) in enumerate(zip(expected, actual, strict=True))
            for path in _differences(a, b, f"{where}[{i}]")
        ]
    return [] if expected == actual else [where or "<root>"]


def assert_same_json(expected: str, actual: str, what: str) -> None:
    paths = _differences(json.loads(expected), json.loads(actual))
    assert not paths, f"{what} differs at {paths[:20]}"


def assert_same_results(expected: str, actual: str, what: str) -> None:
    assert expected == actual, f"{what}: {_first_difference(expected, actual)}"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    project = tmp_path_factory.mktemp("project")
    ignore = shutil.ignore_patterns("__pycache__")
    for folder in ("evals", "fixtures"):
        shutil.copytree(ROOT / folder, project / folder, ignore=ignore)
    (project / "pytest.ini").write_text(INI)
    return Runs(project)


@pytest.mark.parametrize("mode", MODES)
def test_mode_writes_the_pinned_outputs(runs: Runs, mode: str) -> None:
    found = outputs(runs[mode], runs.project)
    if mode == "baseline_update":
        blessed = runs["baseline_update"] / "baseline.json"  # the file as blessed, unedited
        found["baseline.json"] = normalise(_read(blessed), runs.project)
    golden = GOLDEN / mode
    if REGEN:
        golden.mkdir(parents=True, exist_ok=True)
        for name, text in found.items():
            (golden / name).write_bytes(text.encode("utf-8"))
    for name, text in found.items():
        path = golden / name
        assert path.is_file(), f"no {path}; LLMEVAL_REGEN_GOLDEN=1 writes it"
        expected = _read(path)
        if name == "results.jsonl":
            assert_same_results(expected, text, f"{mode}/{name}")
        else:
            assert_same_json(expected, text, f"{mode}/{name}")
    if mode == "baseline_compare":  # the baseline comparison has something in every part
        baseline = json.loads(found["report.json"])["baseline"]
        kinds = ("pass->fail", "fail->pass", "changed", "new", "removed")
        assert all(baseline["flips"][kind] for kind in kinds), baseline["flips"]
        assert baseline["baseline"] == f"{PROJECT}/baseline.json"


def test_every_road_to_the_same_run_gives_the_same_outputs(runs: Runs) -> None:
    plain = outputs(runs["plain"], runs.project)
    assert len(_lines(runs["plain"] / "results.jsonl")) == TOTAL
    for mode in SAME_RUN:
        found = outputs(runs[mode], runs.project)
        assert_same_results(plain["results.jsonl"], found["results.jsonl"], mode)
        assert_same_json(plain["report.json"], found["report.json"], mode)
    # a run compared with a baseline is the same run plus the comparison
    compared = outputs(runs["baseline_compare"], runs.project)
    assert_same_results(plain["results.jsonl"], compared["results.jsonl"], "baseline_compare")
    report = json.loads(compared["report.json"])
    assert report.pop("baseline")
    assert_same_json(plain["report.json"], json.dumps(report), "baseline_compare")
    assert json.loads(plain["report.json"])["gates"]["passed"] is False
