"""Overhead per request of the session limits (``pytest_llmeval.limits``).

    python benchmarks/bench_limits.py            # 20000 slots per variant, best of 5
    python benchmarks/bench_limits.py --quick
    python benchmarks/bench_limits.py --smoke    # 200 slots, once: only checks it runs

Each variant enters and leaves ``limiter.slot()`` with nothing inside (the cost a request
pays on top of its HTTP call), one at a time and with 8 tasks at once in one event loop:

* ``null``: no limits (the default);
* ``local``: a :class:`LocalLimiter` (no xdist), limits never reached;
* ``remote``: a :class:`RemoteLimiter` talking to a :class:`LimitServer` in another process
  over loopback TCP, as an xdist worker does (limits never reached).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from typing import Any

from pytest_llmeval.limits import NULL_LIMITER, LimiterCore, LocalLimiter, RemoteLimiter

SERVER = """
import sys
from pytest_llmeval.limits import LimiterCore, LimitServer, parse_rate_limit
with LimitServer(LimiterCore(10_000, parse_rate_limit("1000000/s"))) as srv:
    print(srv.address, srv.token, flush=True)
    sys.stdin.read()
"""


async def run(limiter: Any, n: int, tasks: int) -> float:
    async def worker(count: int) -> None:
        for _ in range(count):
            async with limiter.slot(100) as slot:
                slot.feedback(200)

    started = time.perf_counter()
    await asyncio.gather(*(worker(n // tasks) for _ in range(tasks)))
    return (time.perf_counter() - started) / n


def best(limiter: Any, n: int, tasks: int, repeats: int) -> float:
    return min(asyncio.run(run(limiter, n, tasks)) for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="200 slots, once (a test's check)")
    args = parser.parse_args()
    n, repeats = (200, 1) if args.smoke else (4000, 3) if args.quick else (20000, 5)
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        address, token = server.stdout.readline().split()
        remote = RemoteLimiter(address, token, counts_tokens=True)
        local = LocalLimiter(LimiterCore(10_000))
        print(f"{n} slots per run, best of {repeats}; microseconds per request")
        for name, limiter in (("null", NULL_LIMITER), ("local", local), ("remote", remote)):
            one = best(limiter, n, 1, repeats) * 1e6
            eight = best(limiter, n, 8, repeats) * 1e6
            print(f"  {name:7s} 1 at a time {one:7.1f} us | 8 at once {eight:7.1f} us")
        remote.close()
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
