"""What K repeats cost: K=5 against K=1, side by side, at 64 model calls in flight.

    python benchmarks/bench_repeats.py            # N=128 cases, 200 ms per call, R=3
    python benchmarks/bench_repeats.py --quick    # N=64, R=1
    python benchmarks/bench_repeats.py --smoke    # N=8, 20 ms, R=1: only checks it runs

Both variants are the plugin (``openai`` runner, ``--llmeval-concurrency 64``) against the
project's loopback OpenAI server in its own process, answering after ``latency``; K=5 runs
every case five times (``--llmeval-repeats 5``, still one test per case). Printed: the model
calls each made (from ``results.jsonl``: runs per case), the wall times (best of R,
alternating), and their ratios; the ideal wall time at 64 in flight is also shown.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from pathlib import Path

from _harness import MODEL, best_of, clean_env, openai_server, pytest_command, ratio, run
from _harness import write_cases as write_golden

CONCURRENCY = 64


def main() -> None:
    n, latency, repeats = (
        (8, 0.02, 1) if ARGS.smoke else (64, 0.2, 1) if ARGS.quick else (128, 0.2, 3)
    )
    with tempfile.TemporaryDirectory() as tmp, openai_server(latency) as url:
        root = Path(tmp)
        write_golden(root / "cases.golden.jsonl", n)
        (root / "pytest.ini").write_text("[pytest]\nllmeval_files = *.golden.jsonl\n")
        env = clean_env()

        def variant(k: int):  # type: ignore[no-untyped-def]
            def go():  # type: ignore[no-untyped-def]
                return run(
                    pytest_command(
                        "--llmeval-runner", "openai", "--llmeval-model", MODEL,
                        "--llmeval-base-url", url, "--llmeval-concurrency", str(CONCURRENCY),
                        "--llmeval-repeats", str(k), f"--llmeval-run-dir={root / f'k{k}'}",
                    ),
                    root,
                    env,
                )  # fmt: skip

            return go

        best = best_of({"K=1": variant(1), "K=5": variant(5)}, repeats)
        calls = {}
        for k in (1, 5):
            rows = [
                json.loads(x) for x in (root / f"k{k}" / "results.jsonl").read_text().splitlines()
            ]
            calls[k] = sum((r.get("repeats") or {"n": 1})["n"] for r in rows)
        print(
            f"N={n} cases, {latency * 1000:.0f} ms per call, {CONCURRENCY} in flight, "
            f"best of {repeats}"
        )
        for k in (1, 5):
            b = best[f"K={k}"]
            ideal = math.ceil(calls[k] / CONCURRENCY) * latency
            walls = ", ".join(f"{w:.2f}" for w in b.walls)
            print(f"  K={k}: {calls[k]} model calls, wall {b.wall_s:.2f} s (all: {walls}); "
                  f"ideal {ideal:.2f} s")  # fmt: skip
        print(f"  K=5 / K=1: calls {ratio(calls[5], calls[1])}, "
              f"wall {ratio(best['K=5'].wall_s, best['K=1'].wall_s)}")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--smoke", action="store_true")
    ARGS = parser.parse_args()
    main()
