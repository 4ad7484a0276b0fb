"""Side-by-side timing of pytest-llmeval against plain pytest on the same cases.

    python benchmarks/bench_dispatch.py            # N=2000 at 0 ms, N=400 at 20 ms latency
    python benchmarks/bench_dispatch.py --quick    # smaller N, fewer repeats

Every figure is a ratio of runs made in the same invocation, alternating, best of R (these
machines are shared and noisy; absolute times alone mean little). Each variant is a fresh
``python -m pytest`` subprocess on the same generated cases:

* ``empty``: a pytest session with one trivial test (the fixed cost of starting pytest);
* ``plain``: one parametrized test per case read from the same JSONL, each calling a model
  stand-in that sleeps ``latency`` and echoes (what a user would write without the plugin);
* ``llmeval``: the plugin on the JSONL, with a registered runner that sleeps ``latency``
  (``asyncio.sleep``) and echoes, at ``--llmeval-concurrency C``.

The model stand-in is in-process, so this measures the harness (collection, dispatch, scoring,
reporting), not an HTTP stack; the loopback-server throughput benchmark comes with the
speed-and-scale issue.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFTEST = """
import asyncio
from pytest_llmeval.models import Usage
from pytest_llmeval.runners.base import Completion

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
CASES = [json.loads(l) for l in pathlib.Path(__file__).with_name("cases.eval.jsonl").open()]

def model(text):
    if LATENCY:
        time.sleep(LATENCY)
    return text

@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case(case):
    assert model(case["input"]) == case["expected_output"]
"""


def _write(root: Path, n: int, latency: float) -> None:
    for name in ("empty", "plain", "llmeval"):
        (root / name).mkdir(parents=True, exist_ok=True)
    rows = (
        {"id": f"c{i:06d}", "input": f"message {i}", "expected_output": f"message {i}"}
        for i in range(n)
    )
    text = "".join(json.dumps(row) + "\n" for row in rows)
    (root / "llmeval" / "cases.eval.jsonl").write_text(text)
    (root / "llmeval" / "conftest.py").write_text(CONFTEST.format(latency=latency))
    (root / "plain" / "cases.eval.jsonl").write_text(text)
    (root / "plain" / "test_plain.py").write_text(PLAIN.format(latency=latency))
    (root / "empty" / "test_empty.py").write_text("def test_nothing():\n    pass\n")
    for name in ("empty", "plain", "llmeval"):
        (root / name / "pytest.ini").write_text("[pytest]\n")


def _run(cwd: Path, *args: str) -> float:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed in {cwd}:\n{done.stdout[-2000:]}")
    return elapsed


def measure(n: int, latency: float, concurrency: int, repeats: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _write(root, n, latency)
        variants = {
            "empty": (root / "empty", ("-p", "no:llmeval")),
            "plain": (root / "plain", ("-p", "no:llmeval")),
            "llmeval": (
                root / "llmeval",
                ("--llmeval-runner", "sleepy", "--llmeval-concurrency", str(concurrency),
                 "--llmeval-run-dir", str(root / "run")),
            ),
        }  # fmt: skip
        best = {name: float("inf") for name in variants}
        for _ in range(repeats):
            for name, (cwd, args) in variants.items():
                best[name] = min(best[name], _run(cwd, *args))
    return best


def report(n: int, latency: float, concurrency: int, repeats: int) -> list[str]:
    t = measure(n, latency, concurrency, repeats)
    lines = [
        f"N={n} latency={latency * 1000:.0f}ms concurrency={concurrency} (best of {repeats})",
        f"  empty session {t['empty']:.2f}s | plain pytest {t['plain']:.2f}s | "
        f"llmeval {t['llmeval']:.2f}s",
        f"  llmeval / plain pytest: {t['llmeval'] / t['plain']:.2f}x",
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
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small N, 2 repeats")
    options = parser.parse_args()
    repeats = 2 if options.quick else 3
    scale = 4 if options.quick else 1
    print("\n".join(report(2000 // scale, 0.0, 8, repeats)))
    print("\n".join(report(400 // scale, 0.02, 8, repeats)))


if __name__ == "__main__":
    main()
