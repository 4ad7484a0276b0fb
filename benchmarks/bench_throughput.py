"""Throughput and per-case overhead of pytest-llmeval against the loopback OpenAI server.

    python benchmarks/bench_throughput.py                 # every section, N=2000, best of 3
    python benchmarks/bench_throughput.py --quick         # CI-size: N=400, best of 2
    python benchmarks/bench_throughput.py --only overhead # one section (comma list)
    python benchmarks/bench_throughput.py --inspect-venv /tmp/inspect-venv   # + inspect_ai
    python benchmarks/bench_throughput.py --baseline /tmp/base   # + another copy of the plugin

Every variant is a fresh subprocess making the same N chat requests to the same
:class:`~pytest_llmeval.testing.openai_server.OpenAIServer`, which runs in a process of its
own and answers each one (echoing the user message) after ``L`` ms. Variants run alternating,
best of R, and only ratios of one invocation are reported (see ``_harness.py``):

* ``bare``: a bare asyncio/httpx client: ``asyncio.gather`` over the cases with an
  ``asyncio.Semaphore(C)`` and one ``httpx.AsyncClient`` (the floor for C in flight);
* ``bare/aiohttp``: the same client over httpx-aiohttp's transport (aiohttp's pool and
  parser), the transport the plugin uses by default: the floor for that transport;
* ``llmeval``: ``pytest --llmeval-runner openai --llmeval-concurrency C`` on a golden JSONL of
  the same cases (exact match on the echo), run dir and journal included; ``llmeval/httpx``
  the same with ``--llmeval-http-transport httpx`` (httpx's own transport, as ``bare``);
* ``plain``: one parametrized pytest test per case posting with a session ``httpx.Client``
  (what a user would write without the plugin; serial);
* ``empty``: a pytest session with one trivial test (pytest's fixed cost); ``empty+plugin``
  the same with pytest-llmeval loaded (its import and configure cost);
* ``inspect``: inspect_ai's ``generate()`` + ``exact()`` on the same cases through its generic
  OpenAI-compatible provider with ``--max-connections C``, when ``--inspect-venv`` names a
  virtual environment that has it (never installed into this project).

Sections: ``throughput`` (L = 200 ms: wall over N·L/C and over ``bare``), ``overhead``
(L = 0: per case above ``empty``, whole run over ``plain``; also at C=1, the same one request
at a time as ``plain``), ``xdist`` (``-n 2`` with C/2 per worker against ``-n 0`` with C, at
0 and 200 ms; report.json must be identical) and ``shard`` (``--llmeval-shard 0/2`` and
``1/2`` then ``python -m pytest_llmeval merge``, against one unsharded run).
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _harness import (
    MODEL,
    PYTHON,
    Best,
    Sample,
    baseline_env,
    best_of,
    clean_env,
    openai_server,
    print_table,
    pytest_command,
    ratio,
    run,
    verdict,
    write_cases,
    write_files,
)

BARE = """
import asyncio, json, sys
import httpx

URL, CASES, CONCURRENCY = sys.argv[1] + "/chat/completions", sys.argv[2], int(sys.argv[3])
TRANSPORT = sys.argv[4] if len(sys.argv) > 4 else "httpx"

async def main():
    cases = [json.loads(line) for line in open(CASES, encoding="utf-8")]
    semaphore = asyncio.Semaphore(CONCURRENCY)
    transport = None
    if TRANSPORT == "aiohttp":  # the same httpx client over httpx-aiohttp's transport
        from httpx_aiohttp import AiohttpTransport
        transport = AiohttpTransport()
    async with httpx.AsyncClient(timeout=60, transport=transport) as client:
        async def one(case):
            async with semaphore:
                body = {"model": "test-model", "temperature": 0,
                        "messages": [{"role": "user", "content": case["input"]}]}
                response = await client.post(URL, json=body)
                response.raise_for_status()
                answer = response.json()["choices"][0]["message"]["content"]
                return answer == case["expected_output"]
        passed = await asyncio.gather(*(one(case) for case in cases))
    print(f"{sum(passed)}/{len(passed)} passed")
    sys.exit(0 if all(passed) else 1)

asyncio.run(main())
"""

PLAIN = """
import json, os, pathlib
import httpx
import pytest

URL = os.environ["BENCH_BASE_URL"] + "/chat/completions"
CASES = [json.loads(line) for line in pathlib.Path(__file__).with_name("cases.jsonl").open()]

@pytest.fixture(scope="session")
def client():
    with httpx.Client(timeout=60) as client:
        yield client

@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_case(client, case):
    body = {"model": "test-model", "temperature": 0,
            "messages": [{"role": "user", "content": case["input"]}]}
    response = client.post(URL, json=body)
    response.raise_for_status()
    assert response.json()["choices"][0]["message"]["content"] == case["expected_output"]
"""

INSPECT_TASK = """
import json, pathlib
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import exact
from inspect_ai.solver import generate

@task
def bench():
    rows = [json.loads(line) for line in pathlib.Path(__file__).with_name("cases.jsonl").open()]
    samples = [Sample(id=r["id"], input=r["input"], target=r["expected_output"]) for r in rows]
    return Task(dataset=samples, solver=generate(), scorer=exact())
"""

EMPTY = "def test_nothing():\n    pass\n"
HTTPX_TRANSPORT = ("--llmeval-http-transport", "httpx")


class Bench:
    """The variants' folders and commands for N cases against one server URL."""

    def __init__(
        self,
        root: Path,
        n: int,
        url: str,
        inspect_venv: Path | None = None,
        baseline: Path | None = None,
    ):
        self.root, self.n, self.url, self.inspect_venv = root, n, url, inspect_venv
        self.runs = itertools.count()
        self.last_run_dir: dict[str, Path] = {}
        cases = root / "cases.jsonl"
        write_cases(cases, n)
        text = cases.read_text(encoding="utf-8")
        self.llmeval_dir = write_files(root / "llmeval", {"cases.eval.jsonl": text})
        self.plain_dir = write_files(root / "plain", {"cases.jsonl": text, "test_plain.py": PLAIN})
        self.empty_dir = write_files(root / "empty", {"test_empty.py": EMPTY})
        self.bare_dir = write_files(root / "bare", {"cases.jsonl": text, "bare.py": BARE})
        self.inspect_dir = write_files(
            root / "inspect", {"cases.jsonl": text, "task.py": INSPECT_TASK}
        )
        self.env = clean_env(BENCH_BASE_URL=url)
        self.base_env = baseline_env(self.env, baseline) if baseline else None

    def run_dir(self, label: str = "run") -> Path:
        path = self.root / "runs" / f"{label}{next(self.runs):03d}"
        self.last_run_dir[label] = path
        return path

    def bare(self, concurrency: int, transport: str = "httpx") -> Callable[[], Sample]:
        command = [PYTHON, "bare.py", self.url, "cases.jsonl", str(concurrency), transport]
        return lambda: run(command, self.bare_dir, self.env)

    def llmeval_command(self, concurrency: int, run_dir: Path, *extra: str) -> list[str]:
        return pytest_command(
            "--llmeval-runner", "openai", "--llmeval-model", MODEL,
            "--llmeval-base-url", self.url, "--llmeval-concurrency", str(concurrency),
            f"--llmeval-run-dir={run_dir}", *extra,
        )  # fmt: skip

    def llmeval(
        self, concurrency: int, *extra: str, label: str = "run", baseline: bool = False
    ) -> Callable[[], Sample]:
        env = self.base_env if baseline and self.base_env else self.env

        def go() -> Sample:
            command = self.llmeval_command(concurrency, self.run_dir(label), *extra)
            return run(command, self.llmeval_dir, env)

        return go

    def with_baseline(
        self, variants: dict[str, Callable[[], Sample]], concurrency: int
    ) -> dict[str, Callable[[], Sample]]:
        """``variants`` plus ``llmeval@baseline`` when ``--baseline`` was given."""
        if self.base_env is not None:
            variants["llmeval@baseline"] = self.llmeval(concurrency, baseline=True)
        return variants

    def plain(self) -> Callable[[], Sample]:
        command = pytest_command("-p", "no:llmeval")
        return lambda: run(command, self.plain_dir, self.env)

    def empty(self, with_plugin: bool = False) -> Callable[[], Sample]:
        command = pytest_command() if with_plugin else pytest_command("-p", "no:llmeval")
        return lambda: run(command, self.empty_dir, self.env)

    def inspect(self, concurrency: int) -> Callable[[], Sample] | None:
        if self.inspect_venv is None:
            return None
        binary = self.inspect_venv / "bin" / "inspect"
        env = {**self.env, "BENCH_API_KEY": "unused", "INSPECT_DISPLAY": "none"}

        def go() -> Sample:
            command = [
                str(binary), "eval", "task.py", "--model", f"openai-api/bench/{MODEL}",
                "--max-connections", str(concurrency), "--max-samples", str(concurrency),
                "--log-dir", str(self.run_dir("inspect")), "--display", "none",
                "--max-retries", "2", "--temperature", "0",
            ]  # fmt: skip
            return run(command, self.inspect_dir, env)

        return go

    def sharded(self, concurrency: int, shards: int, parts: list[float]) -> Callable[[], Sample]:
        """Every shard one after the other, then ``merge``; appends the critical path (the
        slowest shard plus the merge, as on ``shards`` machines) to ``parts``."""

        def go() -> Sample:
            walls, rss, dirs = [], [], []
            for index in range(shards):
                dirs.append(self.run_dir(f"shard{index}-"))
                extra = ("--llmeval-shard", f"{index}/{shards}")
                command = self.llmeval_command(concurrency, dirs[-1], *extra)
                done = run(command, self.llmeval_dir, self.env)
                walls.append(done.wall_s)
                rss.append(done.maxrss_mb)
            merged = self.run_dir("merged")
            command = [PYTHON, "-m", "pytest_llmeval", "merge", str(merged), *map(str, dirs)]
            done = run(command, self.llmeval_dir, self.env)
            parts.append(max(walls) + done.wall_s)
            return Sample(sum(walls) + done.wall_s, max([*rss, done.maxrss_mb]), done.output)

        return go


def _table(best: dict[str, Best], reference: str) -> None:
    print_table(
        ["variant", "best wall", f"/ {reference}", "all walls"],
        [
            [
                name,
                f"{b.wall_s:.2f}s",
                ratio(b.wall_s, best[reference].wall_s),
                " ".join(f"{w:.2f}" for w in b.walls),
            ]
            for name, b in best.items()
        ],
    )


def _transports(best: dict[str, Best]) -> str:
    """The transport's share: each client over httpx's own transport and over aiohttp's."""
    t = {name: b.wall_s for name, b in best.items()}
    return (
        f"- transports: llmeval / bare client, both over aiohttp: "
        f"{ratio(t['llmeval'], t['bare/aiohttp'])}; both over httpx: "
        f"{ratio(t['llmeval/httpx'], t['bare'])}; llmeval over httpx / over aiohttp: "
        f"{ratio(t['llmeval/httpx'], t['llmeval'])}"
    )


def _versus_baseline(best: dict[str, Best]) -> None:
    if "llmeval@baseline" in best:
        mine, base = best["llmeval"].wall_s, best["llmeval@baseline"].wall_s
        print(f"- this checkout / --baseline: {ratio(mine, base)}")


def _target(label: str, value: float, target: float, at_most: bool = True) -> str:
    met = value <= target if at_most else value >= target
    sign = "<=" if at_most else ">="
    return f"- {label}: {value:.2f}x (target {sign} {target:.2f}x: {'met' if met else 'MISSED'})"


def throughput(
    tmp: Path,
    n: int,
    concurrency: int,
    repeats: int,
    inspect: Path | None,
    baseline: Path | None = None,
) -> None:
    latency = 0.2
    ideal = n * latency / concurrency
    print(f"\n## throughput: N={n}, L=200 ms, C={concurrency} (best of {repeats})")
    with openai_server(latency) as url:
        bench = Bench(tmp / "throughput", n, url, inspect, baseline)
        variants = {
            "bare": bench.bare(concurrency),
            "bare/aiohttp": bench.bare(concurrency, "aiohttp"),
            "llmeval": bench.llmeval(concurrency),
            "llmeval/httpx": bench.llmeval(concurrency, *HTTPX_TRANSPORT),
        }
        inspect_run = bench.inspect(concurrency)
        if inspect_run is not None:
            variants["inspect"] = inspect_run
        best = best_of(bench.with_baseline(variants, concurrency), repeats)
    _table(best, "bare")
    llm, bare = best["llmeval"].wall_s, best["bare"].wall_s
    print(f"\nideal N*L/C = {ideal:.2f}s")
    print(f"- llmeval / ideal: {ratio(llm, ideal)}; bare / ideal: {ratio(bare, ideal)}")
    print(_target("llmeval / bare client", llm / bare, 1.3))
    print(_transports(best))
    if "inspect" in best:
        print(_target("inspect_ai / llmeval", best["inspect"].wall_s / llm, 2.0, at_most=False))
    else:
        print("- inspect_ai: skipped (pass --inspect-venv DIR of a venv with inspect-ai)")
    _versus_baseline(best)


def overhead(
    tmp: Path, n: int, concurrency: int, repeats: int, baseline: Path | None = None
) -> None:
    print(f"\n## overhead: N={n}, L=0 ms, C={concurrency} (best of {repeats})")
    with openai_server(0.0) as url:
        bench = Bench(tmp / "overhead", n, url, None, baseline)
        variants = {
            "empty": bench.empty(),
            "empty+plugin": bench.empty(with_plugin=True),
            "bare": bench.bare(concurrency),
            "bare/aiohttp": bench.bare(concurrency, "aiohttp"),
            "plain": bench.plain(),
            "llmeval": bench.llmeval(concurrency),
            "llmeval/httpx": bench.llmeval(concurrency, *HTTPX_TRANSPORT),
            "llmeval C=1": bench.llmeval(1),
        }
        best = best_of(bench.with_baseline(variants, concurrency), repeats)
    _table(best, "plain")
    t = {name: b.wall_s for name, b in best.items()}

    def per_case(name: str, above: str = "empty") -> float:
        return (t[name] - t[above]) / n * 1000

    print()
    print(
        f"- llmeval per case above an empty session: {per_case('llmeval'):.3f} ms "
        f"(target <= 1 ms: {verdict(per_case('llmeval'), 1.0)}); at C=1: "
        f"{per_case('llmeval C=1'):.3f} ms; plain pytest: {per_case('plain'):.3f} ms"
    )
    print(
        f"  above an empty session with the plugin loaded: "
        f"{per_case('llmeval', 'empty+plugin'):.3f} ms; above plain pytest: "
        f"{per_case('llmeval', 'plain'):.3f} ms (C=1: {per_case('llmeval C=1', 'plain'):.3f} ms)"
    )
    print(_target("llmeval / plain pytest serial", t["llmeval"] / t["plain"], 1.5))
    print(_target("llmeval C=1 / plain pytest serial", t["llmeval C=1"] / t["plain"], 1.5))
    print(f"- llmeval / bare client: {ratio(t['llmeval'], t['bare'])}")
    print(_transports(best))
    _versus_baseline(best)


def _report(run_dir: Path) -> Any:
    return json.loads((run_dir / "report.json").read_text(encoding="utf-8"))


def _same_report(a: Path, b: Path) -> str:
    left, right = _report(a), _report(b)
    if left == right:
        return "yes"
    keys = sorted(k for k in set(left) | set(right) if left.get(k) != right.get(k))
    return f"NO (differs in {', '.join(keys)})"


def xdist(tmp: Path, n: int, concurrency: int, repeats: int) -> None:
    half = max(1, concurrency // 2)
    for latency in (0.0, 0.2):
        ms = f"{latency * 1000:.0f}"
        print(
            f"\n## xdist: N={n}, L={ms} ms: -n 2 at C={half} per worker vs -n 0 at "
            f"C={concurrency} (best of {repeats})"
        )
        with openai_server(latency) as url:
            bench = Bench(tmp / f"xdist{ms}", n, url)
            best = best_of(
                {
                    "-n 0": bench.llmeval(concurrency, "-p", "no:xdist", label="n0-"),
                    "-n 2": bench.llmeval(half, "-n", "2", label="n2-"),
                },
                repeats,
            )
        _table(best, "-n 0")
        same = _same_report(bench.last_run_dir["n0-"], bench.last_run_dir["n2-"])
        print(f"\n- -n 2 / -n 0: {ratio(best['-n 2'].wall_s, best['-n 0'].wall_s)}")
        print(f"- report.json identical: {same}")


def _has_sharding(cwd: Path) -> bool:
    help_text = subprocess.run(
        pytest_command("--help"), cwd=cwd, capture_output=True, text=True
    ).stdout
    merge = subprocess.run(
        [PYTHON, "-m", "pytest_llmeval", "merge", "--help"], cwd=cwd, capture_output=True
    )
    return "--llmeval-shard" in help_text and merge.returncode == 0


def shard(tmp: Path, n: int, concurrency: int, repeats: int) -> None:
    print(f"\n## shard: N={n}, L=0 ms, C={concurrency}: 2 shards + merge vs unsharded")
    if not _has_sharding(tmp):
        print("- skipped: `--llmeval-shard` / `python -m pytest_llmeval merge` do not exist")
        return
    with openai_server(0.0) as url:
        bench = Bench(tmp / "shard", n, url)
        critical: list[float] = []
        best = best_of(
            {
                "unsharded": bench.llmeval(concurrency, label="whole-"),
                "2 shards + merge": bench.sharded(concurrency, 2, critical),
            },
            repeats,
        )
    _table(best, "unsharded")
    whole = best["unsharded"].wall_s
    same = _same_report(bench.last_run_dir["whole-"], bench.last_run_dir["merged"])
    print(f"\n- shards one after the other + merge / unsharded: "
          f"{ratio(best['2 shards + merge'].wall_s, whole)}")  # fmt: skip
    print(f"- slowest shard + merge (2 machines) / unsharded: {ratio(min(critical), whole)}")
    print(f"- merged report.json identical to the unsharded one: {same}")


SECTIONS = ("throughput", "overhead", "xdist", "shard")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI size: N=400, best of 2")
    parser.add_argument("--smoke", action="store_true", help="N=16, once (a test's check)")
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma list of sections")
    parser.add_argument("--inspect-venv", type=Path, help="a venv with inspect-ai installed")
    parser.add_argument("-n", "--cases", type=int, help="override N")
    parser.add_argument("--repeats", type=int, help="override R")
    parser.add_argument(
        "--baseline", type=Path, help="also run the pytest_llmeval package found in this folder"
    )
    options = parser.parse_args()
    n, repeats = (400, 2) if options.quick else (2000, 3)
    if options.smoke:
        n, repeats = 16, 1
    n, repeats = options.cases or n, options.repeats or repeats
    concurrency = 64
    only = {s.strip() for s in options.only.split(",") if s.strip()}
    if only - set(SECTIONS):
        parser.error(f"unknown sections {sorted(only - set(SECTIONS))}; known: {SECTIONS}")
    with tempfile.TemporaryDirectory(prefix="llmeval-bench-") as tmp:
        root = Path(tmp)
        if "throughput" in only:
            throughput(root, n, concurrency, repeats, options.inspect_venv, options.baseline)
        if "overhead" in only:
            overhead(root, n, concurrency, repeats, options.baseline)
        if "xdist" in only:
            xdist(root, n, concurrency, repeats)
        if "shard" in only:
            shard(root, n, concurrency, repeats)


if __name__ == "__main__":
    main()
