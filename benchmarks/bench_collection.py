"""Collection (and running) time and peak memory of pytest-llmeval against plain parametrize.

    python benchmarks/bench_collection.py            # 10,000 and 100,000 cases, best of 3
    python benchmarks/bench_collection.py --quick    # 2,000 and 10,000 cases, best of 2
    python benchmarks/bench_collection.py --sizes 50000 --repeats 5
    python benchmarks/bench_collection.py --modes run --sizes 100000 --repeats 1
    python benchmarks/bench_collection.py --baseline /tmp/base   # + another copy, side by side

For each size N, the same N golden rows are collected two ways, each a fresh
``python -m pytest --collect-only -q`` subprocess, alternating, best of R:

* ``plain``: one test module that reads the JSONL and parametrizes one test over its rows
  (ids from the rows' ``id``), with pytest-llmeval disabled (``-p no:llmeval``);
* ``llmeval``: the plugin collecting the JSONL as a golden eval file.

An ``empty`` session (one trivial test) gives pytest's fixed cost. Peak memory is each
subprocess's own ``ru_maxrss`` (``os.wait4``). Mode ``run`` (after ``collect``) runs the same
sessions without ``--collect-only``: every case through the plugin with the ``echo`` runner
(an in-process model answering at once; run dir, journal and reports written), against the
plain test comparing the row's two fields. Targets: at
100,000 cases, collection <= 1.5x plain pytest parametrize and peak memory <= 1.5x.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from _harness import (
    Sample,
    baseline_env,
    best_of,
    checkout_env,
    clean_env,
    print_table,
    pytest_command,
    ratio,
    run,
    timing_cells,
    timing_header,
    verdict,
    write_cases,
    write_files,
)

PLAIN = """
import json, pathlib
import pytest

CASES = [json.loads(line) for line in pathlib.Path(__file__).with_name("cases.jsonl").open()]

@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_case(case):
    assert case["input"] == case["expected_output"]
"""


def case_folders(root: Path, n: int) -> tuple[Path, Path]:
    """The ``plain`` and ``llmeval`` project folders of ``n`` golden rows under ``root``."""
    cases = root / f"n{n}" / "cases.jsonl"
    write_cases(cases, n)
    text = cases.read_text(encoding="utf-8")
    plain = write_files(root / f"n{n}" / "plain", {"cases.jsonl": text, "test_plain.py": PLAIN})
    return plain, write_files(root / f"n{n}" / "llmeval", {"cases.eval.jsonl": text})


def measure(
    root: Path, n: int, repeats: int, baseline: Path | None = None, mode: str = "collect"
) -> None:
    plain, llmeval = case_folders(root, n)
    empty = write_files(root / f"n{n}" / "empty", {"test_empty.py": "def test_x():\n    pass\n"})
    env = clean_env()
    mine = checkout_env(env)  # this checkout's plugin module, loaded by name
    only = ("--collect-only",) if mode == "collect" else ()
    runner = ("--llmeval-runner", "echo") if mode == "run" else ()
    runs = root / f"n{n}" / "runs"  # each run dir is removed once measured
    collect = pytest_command(*only, *runner, f"--llmeval-output-root={runs}")
    without = pytest_command(*only, "-p", "no:llmeval")

    def plugin(env: dict[str, str]) -> Sample:
        try:
            return run(collect, llmeval, env)
        finally:
            shutil.rmtree(runs, ignore_errors=True)

    variants: dict[str, Callable[[], Sample]] = {
        "empty": lambda: run(without, empty, env),
        "plain": lambda: run(without, plain, env),
        "llmeval": lambda: plugin(mine),
    }
    if baseline is not None:
        base_env = baseline_env(env, baseline)
        variants["llmeval@baseline"] = lambda: plugin(base_env)
    best = best_of(variants, repeats)
    done = f"{n} test" if mode == "collect" else f"{n} passed"
    for name in ("plain", "llmeval"):
        if done not in best[name].last_output:
            raise SystemExit(f"{name}: no '{done}' in:\n{best[name].last_output[-500:]}")
    what = "collection" if mode == "collect" else "collection and run (echo runner)"
    print(f"\n## {what}: N={n} (best of {repeats})")
    print_table(
        ["variant", *timing_header("plain")],
        [[name, *timing_cells(b, best["plain"])] for name, b in best.items()],
    )
    t = {name: b.wall_s for name, b in best.items()}
    m = {name: b.maxrss_mb for name, b in best.items()}
    wall, rss = t["llmeval"] / t["plain"], m["llmeval"] / m["plain"]
    above = {name: (t[name] - t["empty"]) / n * 1e6 for name in ("plain", "llmeval")}
    target = " (target <= 1.50x: {})" if mode == "collect" else " (small factor; no number set)"
    print(f"\n- {what} llmeval / plain: {wall:.2f}x{target.format(verdict(wall, 1.5))}")
    print(f"- peak RSS llmeval / plain: {rss:.2f}x (target <= 1.50x: {verdict(rss, 1.5)})")
    print(f"- per case above an empty session: llmeval {above['llmeval']:.0f} us, "
          f"plain {above['plain']:.0f} us; memory per case: llmeval "
          f"{(m['llmeval'] - m['empty']) / n * 1024:.1f} KiB, plain "
          f"{(m['plain'] - m['empty']) / n * 1024:.1f} KiB")  # fmt: skip
    if baseline is not None:
        base = "llmeval@baseline"
        cpu = {name: b.cpu_s for name, b in best.items()}
        print(f"- this checkout / --baseline: wall {ratio(t['llmeval'], t[base])}, "
              f"CPU {ratio(cpu['llmeval'], cpu[base])}, "
              f"peak RSS {ratio(m['llmeval'], m[base])}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 and 10,000 cases, best of 2")
    parser.add_argument("--smoke", action="store_true", help="200 cases, once (a test's check)")
    parser.add_argument("--sizes", help="comma list of N (default 10000,100000)")
    parser.add_argument("--repeats", type=int, help="override R")
    parser.add_argument("--modes", default="collect,run", help="comma list: collect, run")
    parser.add_argument(
        "--baseline", type=Path, help="also run the pytest_llmeval package found in this folder"
    )
    options = parser.parse_args()
    sizes, repeats = [10_000, 100_000], 3
    if options.quick:
        sizes, repeats = [2_000, 10_000], 2
    if options.smoke:
        sizes, repeats = [200], 1
    if options.sizes:
        sizes = [int(s) for s in options.sizes.split(",")]
    repeats = options.repeats or repeats
    with tempfile.TemporaryDirectory(prefix="llmeval-bench-") as tmp:
        for mode in [m.strip() for m in options.modes.split(",") if m.strip()]:
            if mode not in ("collect", "run"):
                parser.error(f"unknown mode {mode!r}: collect or run")
            for n in sizes:
                measure(Path(tmp), n, repeats, options.baseline, mode)


if __name__ == "__main__":
    main()
