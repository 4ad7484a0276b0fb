"""Where an eval case's time goes: each pytest phase, per case, pytest-llmeval against plain pytest.

    python benchmarks/bench_phases.py                       # 20,000 cases, best of 2
    python benchmarks/bench_phases.py --quick               # 5,000 cases, best of 2
    python benchmarks/bench_phases.py --sizes 100000 --repeats 1
    python benchmarks/bench_phases.py --baseline /tmp/base  # + another copy, side by side
    python benchmarks/bench_phases.py --smoke               # 200 cases, once (a test's check)

The same N golden rows run two ways, as in ``bench_collection.py --modes run``: ``plain`` (one
test parametrized over the rows, ``-p no:llmeval``) and ``llmeval`` (the rows as a golden eval
file, every case through the ``echo`` runner, the run dir written). Both load a small timing
plugin (``-p``, written into the benchmark's folder) whose outermost hook wrapper takes
``time.perf_counter()`` around each phase hook: ``pytest_runtest_setup``, ``_call``,
``_teardown``, ``_makereport``, ``_logreport`` (each called three times a case), the whole
``pytest_runtest_protocol``, collection and ``pytest_sessionfinish``; in the ``llmeval``
session it also times the run dir's three large files (``report.html``, ``results.jsonl``,
``events.jsonl``). The wrappers cost the same in both sessions, so read the differences, not
the absolute times. The variants alternate, best of R by wall time; the table is of the best
run of each. ``--baseline DIR`` adds ``llmeval@baseline``, the ``pytest_llmeval`` package found
in ``DIR`` (a ``git worktree`` of the code before a change), and its column.

It answers "which phase holds the plugin's cost per case" with a command, where
``bench_collection.py`` gives only the ratio of the whole runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path

from _harness import (
    Sample,
    baseline_env,
    best_of,
    checkout_env,
    clean_env,
    print_table,
    pytest_command,
    run,
    write_files,
)
from bench_collection import case_folders

TIMER = "llmeval_bench_phase_timer"
"""The timing plugin's module name (written next to the case files, loaded with ``-p``)."""

TIMER_SOURCE = '''
"""Per-phase wall time of a pytest session (benchmarks/bench_phases.py)."""
import atexit, json, os, time
import pytest

TIMES = {}
PHASES = (
    "pytest_collection", "pytest_runtest_protocol", "pytest_runtest_setup",
    "pytest_runtest_call", "pytest_runtest_teardown", "pytest_runtest_makereport",
    "pytest_runtest_logreport", "pytest_runtest_logstart", "pytest_runtest_logfinish",
    "pytest_report_teststatus", "pytest_sessionfinish",
)


def _add(name, seconds):
    TIMES[name] = TIMES.get(name, 0.0) + seconds


def _timed(name):
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def hook(*args, **kwargs):
        start = time.perf_counter()
        try:
            return (yield)
        finally:
            _add(name, time.perf_counter() - start)

    return hook


for _name in PHASES:
    globals()[_name] = _timed(_name)


def _wrap(owner, attribute, name):
    original = getattr(owner, attribute, None)
    if original is None:  # another version of the plugin: that part is not split out
        return

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            _add(name, time.perf_counter() - start)

    setattr(owner, attribute, timed)


def pytest_configure(config):
    if not os.environ.get("LLMEVAL_BENCH_SPLIT"):  # the plain session: no run dir
        return
    from pytest_llmeval.report import writer

    _wrap(writer.RunWriter, "_write_page", "report.html")
    original = writer.write_jsonl

    def write_jsonl(path, rows):
        start = time.perf_counter()
        try:
            return original(path, rows)
        finally:
            _add(path.name, time.perf_counter() - start)

    writer.write_jsonl = write_jsonl


@atexit.register
def _write():
    with open(os.environ["LLMEVAL_BENCH_PHASES"], "w", encoding="utf-8") as out:
        json.dump(TIMES, out)
'''

ROWS = (
    ("collection", "pytest_collection"),
    ("a test's whole protocol", "pytest_runtest_protocol"),  # the next eight rows
    ("setup", "pytest_runtest_setup"),
    ("call", "pytest_runtest_call"),
    ("teardown", "pytest_runtest_teardown"),
    ("makereport (x3)", "pytest_runtest_makereport"),
    ("logreport (x3)", "pytest_runtest_logreport"),
    ("report_teststatus (x3)", "pytest_report_teststatus"),
    ("logstart + logfinish", ("pytest_runtest_logstart", "pytest_runtest_logfinish")),
    ("session finish (run dir)", "pytest_sessionfinish"),
    ("  report.html", "report.html"),
    ("  results.jsonl", "results.jsonl"),
    ("  events.jsonl", "events.jsonl"),
)


def measure(root: Path, n: int, repeats: int, baseline: Path | None = None) -> None:
    plain, llmeval = case_folders(root, n)
    timer = write_files(root / "timer", {f"{TIMER}.py": TIMER_SOURCE})
    runs = root / f"n{n}" / "runs"
    names = ["plain", "llmeval", *(["llmeval@baseline"] if baseline else [])]
    times: dict[str, dict[float, dict[str, float]]] = {name: {} for name in names}

    def timed(name: str, command: list[str], cwd: Path) -> Sample:
        out = root / f"{name}.json"
        env = clean_env(LLMEVAL_BENCH_PHASES=str(out))
        if name == "llmeval":  # this checkout's plugin, its run dir's files timed too
            env = {**checkout_env(env), "LLMEVAL_BENCH_SPLIT": "1"}
        elif baseline is not None and name == "llmeval@baseline":
            env = {**baseline_env(env, baseline), "LLMEVAL_BENCH_SPLIT": "1"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(timer), env.get("PYTHONPATH")]))
        try:
            sample = run(command, cwd, env)
        finally:
            shutil.rmtree(runs, ignore_errors=True)
        times[name][sample.wall_s] = json.loads(out.read_text(encoding="utf-8"))
        return sample

    with_timer = ("-p", TIMER)
    echo = pytest_command(*with_timer, "--llmeval-runner", "echo", f"--llmeval-output-root={runs}")
    variants = {
        "plain": lambda: timed("plain", pytest_command(*with_timer, "-p", "no:llmeval"), plain),
        "llmeval": lambda: timed("llmeval", echo, llmeval),
    }
    if baseline is not None:
        variants["llmeval@baseline"] = lambda: timed("llmeval@baseline", echo, llmeval)
    best = best_of(variants, repeats)
    for name in variants:
        if f"{n} passed" not in best[name].last_output:
            raise SystemExit(f"{name}: no '{n} passed' in:\n{best[name].last_output[-500:]}")
    phases = {name: times[name][best[name].wall_s] for name in variants}

    def per_case(name: str, keys: str | tuple[str, ...]) -> float | None:
        found = [phases[name].get(key) for key in ((keys,) if isinstance(keys, str) else keys)]
        return None if all(f is None for f in found) else sum(f or 0.0 for f in found) / n * 1e6

    def cell(value: float | None) -> str:
        return "" if value is None else f"{value:,.0f}"

    rows = []
    for label, keys in ROWS:
        a, b = per_case("plain", keys), per_case("llmeval", keys)
        row = [label, cell(a), cell(b), cell(None if b is None else b - (a or 0.0))]
        if baseline is not None:
            c = per_case("llmeval@baseline", keys)
            row += [cell(c), cell(None if c is None or b is None else b - c)]
        rows.append(row)
    print(f"\n## phases: N={n}, echo runner (best of {repeats}; us per case)")
    header = ["phase", "plain", "llmeval", "llmeval above plain"]
    if baseline is not None:
        header += ["llmeval@baseline", "llmeval above baseline"]
    print_table(header, rows)
    wall = {name: best[name].wall_s for name in variants}
    print(f"\n- wall (with the timing plugin in every session): plain {wall['plain']:.2f}s, "
          + ", ".join(f"{name} {wall[name]:.2f}s ({wall[name] / wall['plain']:.2f}x)"
                      for name in names[1:]))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5,000 cases, best of 2")
    parser.add_argument("--smoke", action="store_true", help="200 cases, once (a test's check)")
    parser.add_argument("--sizes", help="comma list of N (default 20000)")
    parser.add_argument("--repeats", type=int, help="override R (default 2)")
    parser.add_argument(
        "--baseline", type=Path, help="also run the pytest_llmeval package found in this folder"
    )
    options = parser.parse_args()
    sizes, repeats = [20_000], 2
    if options.quick:
        sizes = [5_000]
    if options.smoke:
        sizes, repeats = [200], 1
    if options.sizes:
        sizes = [int(s) for s in options.sizes.split(",")]
    repeats = options.repeats or repeats
    with tempfile.TemporaryDirectory(prefix="llmeval-bench-phases-") as tmp:
        for n in sizes:
            measure(Path(tmp), n, repeats, options.baseline)


if __name__ == "__main__":
    main()
