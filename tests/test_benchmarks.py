"""Every benchmark script runs its ``--smoke`` path, the smallest run that exercises each
variant.

The ``--smoke`` configurations run a handful of cases once, in a subprocess, and only check
that every variant ran and that the ratios were printed; the figures themselves are noise at
that size. A ``bench_*.py`` without a smoke test here fails
:func:`test_every_benchmark_has_a_smoke_run`. Together they take about 13 s, plus about 20 s
for When2Call's (three processes load torch; it needs the ``hf`` extra, which CI installs).
The ``overhead``, ``xdist`` and ``shard`` sections of ``bench_throughput.py`` are not run here
(about 12 s more, as they start a dozen sessions); ``python benchmarks/bench_throughput.py
--smoke`` runs them all.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def _import(name: str) -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCHMARKS))


def _smoke(script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--smoke", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


SMOKE_TESTS = {
    "bench_bfcl.py": "test_bfcl_smoke",
    "bench_collection.py": "test_collection_smoke",
    "bench_dispatch.py": "test_dispatch_smoke",
    "bench_integration_scoring.py": "test_integration_scoring_smoke",
    "bench_limits.py": "test_limits_smoke",
    "bench_phases.py": "test_phases_smoke",
    "bench_repeats.py": "test_repeats_smoke",
    "bench_throughput.py": "test_throughput_smoke",
    "bench_when2call.py": "test_when2call_smoke",
}
"""Each benchmark script and the test here that runs its ``--smoke`` path."""


def test_every_benchmark_has_a_smoke_run() -> None:
    scripts = sorted(p.name for p in BENCHMARKS.glob("bench_*.py"))
    assert scripts == sorted(SMOKE_TESTS)
    for script, test in SMOKE_TESTS.items():
        assert test in globals(), test
        assert "--smoke" in (BENCHMARKS / script).read_text(encoding="utf-8"), script


def test_harness_runs_best_of_alternating(tmp_path: Path) -> None:
    harness = _import("_harness")
    order: list[str] = []

    def variant(name: str) -> object:
        def go() -> object:
            order.append(name)
            return harness.run([sys.executable, "-c", "print('hi')"], tmp_path)

        return go

    best = harness.best_of({"a": variant("a"), "b": variant("b")}, 3)
    assert order == ["a", "b", "b", "a", "a", "b"]
    assert len(best["a"].walls) == 3 and best["a"].wall_s == min(best["a"].walls)
    assert best["b"].maxrss_mb > 1 and best["b"].last_output == "hi\n"


def test_harness_stops_on_a_failing_command(tmp_path: Path) -> None:
    harness = _import("_harness")
    with pytest.raises(SystemExit, match="exited 3"):
        harness.run([sys.executable, "-c", "raise SystemExit(3)"], tmp_path)


def test_collection_smoke() -> None:
    out = _smoke("bench_collection.py")
    assert "## collection: N=200" in out
    assert "collection llmeval / plain" in out and "peak RSS llmeval / plain" in out


def test_phases_smoke() -> None:
    out = _smoke("bench_phases.py")
    assert "## phases: N=200" in out
    cells = {row[0]: row[1:] for row in (_cells(line) for line in out.splitlines()) if row}
    for phase in ("setup", "call", "makereport (x3)", "session finish (run dir)"):
        assert all(_number(cell) for cell in cells[phase]), (phase, cells[phase])
    # the run dir's files are timed in the plugin's session only
    assert cells["report.html"][0] == "" and _number(cells["report.html"][1])


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip("|").split("|")] if line.startswith("| ") else []


def _number(cell: str) -> bool:
    return cell.replace(",", "").lstrip("-").isdigit()


def test_bfcl_smoke() -> None:
    out = _smoke("bench_bfcl.py")
    assert "recorded bfcl:" in out and "recorded golden: 40 passed" in out
    assert "| bfcl |" in out and "bfcl / golden:" in out


def test_bfcl_bench_replies_pass_every_passable_row() -> None:
    """The benchmark's loopback model answers every vendored row the official checker can
    pass with a passing reply (Java and JavaScript values typed as their docs declare), so
    the comparison with the golden suite is of the suite's cost, not of pytest's failure
    reports; the rows that cannot be passed are known and the same in ``golden-matched``."""
    import json

    from pytest_llmeval.scoring.bfcl.relevance import is_relevance_category, score_relevance
    from pytest_llmeval.scoring.bfcl.single_turn import score_ast

    bench = _import("bench_bfcl")
    failing = {}
    for category, row, truth in bench.vendored_pool():
        reply = bench._reply(truth, row["function"], category)
        if reply is None:
            output: object = "I cannot help with that using these functions."
        else:
            output = [(name, json.dumps(arguments)) for name, arguments in reply]
        if is_relevance_category(category):
            verdict = score_relevance(category, output, "fc")
        else:
            verdict = score_ast(category, row["function"], truth, output, "fc")
        if not verdict.valid:
            failing[row["id"]] = verdict.error_type
    assert sorted(failing) == sorted(bench.UNPASSABLE), failing


def test_dispatch_smoke() -> None:
    out = _smoke("bench_dispatch.py")
    assert "llmeval / plain pytest" in out


def test_throughput_smoke() -> None:
    out = _smoke("bench_throughput.py", "--only", "throughput")
    assert "llmeval / bare client" in out and "| bare |" in out


def test_integration_scoring_smoke() -> None:
    out = _smoke("bench_integration_scoring.py")
    assert "precise:" in out and "compat:" in out
    assert "re-scored details identical" in out and "DIFFERENT" not in out


def test_repeats_smoke() -> None:
    out = _smoke("bench_repeats.py")
    assert "K=5 / K=1: calls 5.00x" in out


def test_limits_smoke() -> None:
    out = _smoke("bench_limits.py")
    for name in ("null", "local", "remote"):
        assert f"  {name} " in out and "8 at once" in out


@pytest.mark.hf
def test_when2call_smoke() -> None:
    pytest.importorskip("torch")
    out = _smoke("bench_when2call.py", "--lm-eval-python", "")
    assert "ours / naive:" in out and "ours vs naive: max |dLL|" in out
