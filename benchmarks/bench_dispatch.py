"""Side-by-side timing of pytest-llmeval against plain pytest on the same cases, no HTTP.

    python benchmarks/bench_dispatch.py            # N=2000 at 0 ms, N=400 at 20 ms latency
    python benchmarks/bench_dispatch.py --quick    # smaller N, fewer repeats
    python benchmarks/bench_dispatch.py --baseline /tmp/base   # + another copy of the plugin

Every figure is a ratio of runs made in the same invocation, alternating, best of R (these
machines are shared and noisy; absolute times alone mean little). Each variant is a fresh
``python -m pytest`` subprocess on the same generated cases:

* ``empty``: a pytest session with one trivial test (the fixed cost of starting pytest);
* ``plain``: one parametrized test per case read from the same JSONL, each calling a model
  stand-in that sleeps ``latency`` and echoes (what a user would write without the plugin);
* ``llmeval``: the plugin on the JSONL, with a registered runner that sleeps ``latency``
  (``asyncio.sleep``) and echoes, at ``--llmeval-concurrency C``.

The model stand-in is in-process, so this measures the harness (collection, dispatch, scoring,
reporting) without an HTTP stack; ``bench_throughput.py`` does the same against the loopback
OpenAI server.
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
from collections.abc import Callable
from pathlib import Path

from _harness import (
    Sample,
    baseline_env,
    best_of,
    checkout_env,
    clean_env,
    pytest_command,
    ratio,
    run,
    write_cases,
    write_files,
)

CONFTEST = """
import asyncio
from pytest_llmeval.runners.base import Completion
try:  # a --baseline copy from before the package's folders were layers
    from pytest_llmeval.models import Usage
except ImportError:
    from pytest_llmeval.core.models import Usage

LATENCY = {latency}

class Sleepy:
    name = "sleepy"
    def fingerprint(self):
        return {{"type": "sleepy", "latency": LATENCY}}
    async def aclose(self):
        pass
    async def generate(self, request):
        if LATENCY:
            await asyncio.sleep(LATENCY)
        return Completion(text=request.messages[-1].content, usage=Usage())

def pytest_llmeval_register_runners(registry):
    registry.register("sleepy", lambda settings: Sleepy())
"""

PLAIN = """
import json, time, pathlib
import pytest

LATENCY = {latency}
CASES = [json.loads(l) for l in pathlib.Path(__file__).with_name("cases.jsonl").open()]

def model(text):
    if LATENCY:
        time.sleep(LATENCY)
    return text

@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case(case):
    assert model(case["input"]) == case["expected_output"]
"""


def measure(
    n: int, latency: float, concurrency: int, repeats: int, baseline: Path | None = None
) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="llmeval-bench-") as tmp:
        root = Path(tmp)
        write_cases(root / "cases.jsonl", n)
        text = (root / "cases.jsonl").read_text(encoding="utf-8")
        llmeval = write_files(
            root / "llmeval",
            {"cases.eval.jsonl": text, "conftest.py": CONFTEST.format(latency=latency)},
        )
        plain = write_files(
            root / "plain", {"cases.jsonl": text, "test_plain.py": PLAIN.format(latency=latency)}
        )
        empty = write_files(root / "empty", {"test_empty.py": "def test_nothing():\n    pass\n"})
        env = clean_env()
        runs = itertools.count()

        def plugin(env: dict[str, str]) -> Callable[[], Sample]:
            def go() -> Sample:
                command = pytest_command(
                    "--llmeval-runner", "sleepy", "--llmeval-concurrency", str(concurrency),
                    f"--llmeval-run-dir={root / 'runs' / f'run{next(runs):03d}'}",
                )  # fmt: skip
                return run(command, llmeval, env)

            return go

        without = pytest_command("-p", "no:llmeval")
        variants = {
            "empty": lambda: run(without, empty, env),
            "plain": lambda: run(without, plain, env),
            "llmeval": plugin(checkout_env(env)),
        }
        if baseline is not None:
            variants["llmeval@baseline"] = plugin(baseline_env(env, baseline))
        best = best_of(variants, repeats)
    return {name: b.wall_s for name, b in best.items()}


def report(
    n: int, latency: float, concurrency: int, repeats: int, baseline: Path | None = None
) -> list[str]:
    t = measure(n, latency, concurrency, repeats, baseline)
    lines = [
        f"N={n} latency={latency * 1000:.0f}ms concurrency={concurrency} (best of {repeats})",
        "  " + " | ".join(f"{name} {seconds:.2f}s" for name, seconds in t.items()),
        f"  llmeval / plain pytest: {ratio(t['llmeval'], t['plain'])}",
        f"  per case above an empty session: llmeval "
        f"{(t['llmeval'] - t['empty']) / n * 1000:.3f} ms, plain "
        f"{(t['plain'] - t['empty']) / n * 1000:.3f} ms",
    ]
    if latency:
        ideal = n * latency / concurrency
        lines.append(
            f"  llmeval / ideal N*L/C ({ideal:.2f}s): "
            f"{(t['llmeval'] - t['empty']) / ideal:.2f}x (session start-up excluded)"
        )
    if baseline is not None:
        lines.append(f"  this checkout / --baseline: {ratio(t['llmeval'], t['llmeval@baseline'])}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small N, 2 repeats")
    parser.add_argument("--smoke", action="store_true", help="tiny N, once (a test's check)")
    parser.add_argument("--repeats", type=int, help="override R")
    parser.add_argument(
        "--baseline", type=Path, help="also run the pytest_llmeval package found in this folder"
    )
    options = parser.parse_args()
    repeats, scale = (2, 4) if options.quick else (3, 1)
    if options.smoke:
        repeats, scale = 1, 100
    repeats = options.repeats or repeats
    print("\n".join(report(2000 // scale, 0.0, 8, repeats, options.baseline)))
    if not options.smoke:
        print("\n".join(report(400 // scale, 0.02, 8, repeats, options.baseline)))


if __name__ == "__main__":
    main()
