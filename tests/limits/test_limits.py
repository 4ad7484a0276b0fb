"""Session-wide limits (``--llmeval-max-connections``, ``--llmeval-rate-limit``) and AIMD.

The maths runs on a fake clock; the limiters against real loopback servers. pytest runs that
use the openai runner go through ``runpytest_subprocess`` (see tests/runners/test_openai_http.py).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.models import Message
from pytest_llmeval.limits import (
    MIN_FACTOR,
    NULL_LIMITER,
    LimiterCore,
    LimiterError,
    LimitServer,
    LocalLimiter,
    RemoteLimiter,
    SessionLimits,
    Slot,
    Ticket,
    parse_rate_limit,
)
from pytest_llmeval.runners.base import GenerateRequest
from pytest_llmeval.runners.http import JsonHttp
from pytest_llmeval.runners.http_agent import HttpAgentRunner
from pytest_llmeval.runners.openai_http import OpenAIRunner
from pytest_llmeval.runners.registry import RunnerRegistry
from pytest_llmeval.testing.agent import example_agent_handler
from pytest_llmeval.testing.openai_server import ChatAnswer, OpenAIServer
from pytest_llmeval.testing.server import Reply, Request, ScriptedServer
from tests.conftest import read_jsonl, write_json

FAST: dict[str, Any] = {"backoff_s": 0.01, "max_backoff_s": 0.05, "timeout_s": 5.0}


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def core(clock: FakeClock, max_connections: int | None = None, rate: str = "") -> LimiterCore:
    return LimiterCore(max_connections, parse_rate_limit(rate) if rate else None, clock=clock)


def admit(c: LimiterCore, tokens: int = 0) -> tuple[Ticket, float]:
    admitted = c.request(tokens, object())
    assert admitted is not None
    return admitted


def chat_request(text: str = "hi") -> GenerateRequest:
    return GenerateRequest(messages=[Message(role="user", content=text)])


# -- the spec -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "per_s", "tok_per_s", "text"),
    [
        ("10/s", 10.0, None, "10/s"),
        ("600/min", 10.0, None, "600/min"),
        ("0.5/s", 0.5, None, "0.5/s"),
        ("90000tok/min", None, 1500.0, "90000tok/min"),
        (" 10 / s , 90000 tok/min ", 10.0, 1500.0, "10/s,90000tok/min"),
        ("120tok/s,30/min", 0.5, 120.0, "120tok/s,30/min"),
    ],
)
def test_rate_specs(spec: str, per_s: float | None, tok_per_s: float | None, text: str) -> None:
    rate = parse_rate_limit(spec)
    assert (rate.requests_per_s, rate.tokens_per_s, rate.text) == (per_s, tok_per_s, text)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("fast", "'fast' is not N/s"),
        ("10", "'10' is not N/s"),
        ("10/h", "'10/h' is not"),
        ("0/s", "must be above 0"),
        ("-1/s", "is not N/s"),
        ("10/s,20/min", "more than one requests limit"),
        ("1tok/s,2tok/min", "more than one tokens limit"),
        ("10/s,", "'' is not"),
    ],
)
def test_bad_rate_specs(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_rate_limit(spec)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--llmeval-rate-limit", "lots"],
            "--llmeval-rate-limit takes LIMIT[,LIMIT] where LIMIT is N/s or N/min (requests) or "
            "Ntok/s or Ntok/min (tokens), at most one of each kind, e.g. 10/s,90000tok/min; "
            "got 'lots': 'lots' is not N/s, N/min, Ntok/s or Ntok/min",
        ),
        (
            ["--llmeval-max-connections", "0"],
            "--llmeval-max-connections takes a whole number from 1 to 10,000, got '0'",
        ),
        (["--llmeval-max-connections", "many"], "--llmeval-max-connections takes a whole number"),
    ],
)
def test_bad_options_are_usage_errors(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


# -- token buckets --------------------------------------------------------------------------


def test_request_bucket_allows_a_second_of_burst_then_spaces_requests(clock: FakeClock) -> None:
    c = core(clock, rate="10/s")
    delays = [admit(c)[1] for _ in range(12)]
    assert delays[:10] == [0.0] * 10
    assert delays[10:] == pytest.approx([0.1, 0.2])
    clock.advance(1.2)  # repays the debt of 2 and refills 10
    assert [admit(c)[1] for _ in range(10)] == [0.0] * 10
    assert admit(c)[1] == pytest.approx(0.1)


def test_refill_never_exceeds_one_seconds_worth(clock: FakeClock) -> None:
    c = core(clock, rate="60/min")  # 1/s: a bucket of one request
    assert [admit(c)[1] for _ in range(3)] == pytest.approx([0.0, 1.0, 2.0])
    clock.advance(3600)
    assert [admit(c)[1] for _ in range(2)] == pytest.approx([0.0, 1.0])


def test_token_bucket_debt_and_usage_correction(clock: FakeClock) -> None:
    c = core(clock, rate="600tok/min")  # 10 tokens/s, a bucket of 10
    ticket, delay = admit(c, tokens=30)  # bigger than the bucket: goes, and the next one waits
    assert delay == 0.0 or delay == pytest.approx(2.0)
    assert admit(c, tokens=5)[1] == pytest.approx(2.5)
    c.release(ticket, 200, used_tokens=10)  # used 20 fewer than estimated: refunded
    assert admit(c, tokens=5)[1] == pytest.approx(1.0)


def test_both_rates_and_the_slower_wins(clock: FakeClock) -> None:
    c = core(clock, rate="1/s,100tok/s")
    assert admit(c, tokens=10)[1] == 0.0
    assert admit(c, tokens=10)[1] == pytest.approx(1.0)  # the request rate
    assert admit(c, tokens=300)[1] == pytest.approx(2.2)  # the token rate: 120 in debt at 100/s


# -- AIMD -----------------------------------------------------------------------------------


def test_429_halves_the_window_once_per_congestion_event(clock: FakeClock) -> None:
    c = core(clock, max_connections=8)
    burst = [admit(c)[0] for _ in range(8)]
    assert c.window == 8
    c.release(burst[0], 429)
    assert (c.factor, c.window) == (0.5, 4)
    for ticket in burst[1:]:  # the rest of the burst answers 429 too: no further decrease
        c.release(ticket, 429)
    assert (c.factor, c.window, c.stats.throttled) == (0.5, 4, 8)
    c.release(admit(c)[0], 429)  # admitted after the decrease: a new event
    assert (c.factor, c.window) == (0.25, 2)


def test_factor_and_window_stay_within_bounds(clock: FakeClock) -> None:
    c = core(clock, max_connections=3, rate="10/s")
    for _ in range(50):
        c.release(admit(c)[0], 429)
        assert MIN_FACTOR <= c.factor <= 1.0
        assert c.window == 1  # never below one connection
    assert c.factor == MIN_FACTOR
    assert c.stats.lowest_factor == MIN_FACTOR
    steps = 0
    while c.factor < 1.0:
        c.release(admit(c)[0], 200)
        steps += 1
        assert c.window is not None and 1 <= c.window <= 3
    assert steps == 20  # additive: + INCREASE per success, from MIN_FACTOR back to 1
    c.release(admit(c)[0], 200)
    assert (c.factor, c.window) == (1.0, 3)  # never above the configured limit


def test_other_statuses_leave_the_factor_alone(clock: FakeClock) -> None:
    c = core(clock, max_connections=4)
    c.release(admit(c)[0], 429)
    for status in (0, 500, 503, 400, 401):
        c.release(admit(c)[0], status)
    assert c.factor == 0.5


def test_a_429_slows_the_rate_and_retry_after_pauses_everyone(clock: FakeClock) -> None:
    c = core(clock, rate="10/s")
    tickets = [admit(c)[0] for _ in range(10)]  # the burst is used up
    c.release(tickets[0], 429, retry_after=0.1)
    assert c.factor == 0.5
    ticket, delay = admit(c)  # nobody before the pause ends; the bucket refills 0.5 by then,
    assert delay == pytest.approx(0.1 + 0.5 / 5)  # at half the rate (5/s)
    assert admit(c)[1] == pytest.approx(0.1 + 1.5 / 5)
    clock.advance(10)
    for t in [*tickets[1:], ticket]:
        c.release(t, 200)
    assert c.factor == pytest.approx(0.5 + 10 * 0.05)


def test_waiters_queue_in_order_and_can_withdraw(clock: FakeClock) -> None:
    c = core(clock, max_connections=2)
    first, second = admit(c)[0], admit(c)[0]
    assert c.request(0, "w1") is None and c.request(0, "w2") is None
    assert c.request(0, "w3") is None
    assert c.cancel("w2") and not c.cancel("w2")
    [(waiter, third, delay)] = c.release(first, 200)
    assert (waiter, delay, c.in_flight) == ("w1", 0.0, 2)
    assert [w for w, _, _ in c.release(second, 429)] == []  # the window fell to 1
    assert [w for w, _, _ in c.release(third, 200)] == ["w3"]
    assert c.stats.queued == 3 and c.stats.peak_in_flight == 2


# -- limiters -------------------------------------------------------------------------------


async def hammer(limiter: Any, tasks: int, hold_s: float, gauge: Gauge) -> None:
    async def one() -> None:
        async with limiter.slot() as slot:
            gauge.enter()
            await asyncio.sleep(hold_s)
            gauge.leave()
            slot.feedback(200)

    await asyncio.gather(*(one() for _ in range(tasks)))


class Gauge:
    """Counts concurrent holders, from any thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = self.peak = 0

    def enter(self) -> None:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)

    def leave(self) -> None:
        with self.lock:
            self.now -= 1


def test_null_limiter_is_the_default() -> None:
    assert JsonHttp("x").limiter is NULL_LIMITER
    assert RunnerRegistry().limiter is NULL_LIMITER

    async def main() -> None:
        async with NULL_LIMITER.slot(10) as slot:
            slot.feedback(429, 1.0)

    asyncio.run(main())


def test_local_limiter_bounds_concurrency_across_threads_and_loops() -> None:
    c = LimiterCore(3)
    limiter, gauge = LocalLimiter(c), Gauge()
    threads = [
        threading.Thread(target=lambda: asyncio.run(hammer(limiter, 10, 0.01, gauge)))
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert gauge.peak == 3
    assert (c.in_flight, c.waiting, c.stats.requests) == (0, 0, 30)


def test_cancelled_waiters_do_not_leak_slots() -> None:
    c = LimiterCore(1)
    limiter = LocalLimiter(c)

    async def main() -> None:
        async with limiter.slot():
            waiting = [asyncio.ensure_future(limiter.slot().__aenter__()) for _ in range(3)]
            await asyncio.sleep(0.01)
            assert c.waiting == 3
            for task in waiting:
                task.cancel()
            await asyncio.gather(*waiting, return_exceptions=True)
            assert c.waiting == 0
        assert c.in_flight == 0
        async with limiter.slot():
            assert c.in_flight == 1

    asyncio.run(main())
    assert c.in_flight == 0


@pytest.fixture
def server() -> Iterator[LimitServer]:
    with LimitServer(LimiterCore(2)) as srv:
        yield srv


def test_remote_limiters_share_one_limit(server: LimitServer) -> None:
    gauge = Gauge()
    clients = [RemoteLimiter(server.address, server.token) for _ in range(3)]

    def work(client: RemoteLimiter) -> None:
        asyncio.run(hammer(client, 8, 0.01, gauge))

    threads = [threading.Thread(target=work, args=(client,)) for client in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for client in clients:
        client.close()
    assert gauge.peak == 2
    assert server.core.stats.requests == 24
    wait_for(lambda: server.core.in_flight == 0)


def test_a_vanished_client_gives_its_slots_back(server: LimitServer) -> None:
    host, port = server.address.split(":")
    with socket.create_connection((host, int(port))) as sock, sock.makefile("rb") as lines:
        sock.sendall(f"HELLO {server.token}\nA 1 0\nA 2 0\nA 3 0\n".encode())
        assert [lines.readline().split()[:2] for _ in range(2)] == [[b"G", b"1"], [b"G", b"2"]]
        wait_for(lambda: server.core.waiting == 1)
    wait_for(lambda: server.core.in_flight == 0 and server.core.waiting == 0)


def test_a_stranger_gets_nothing(server: LimitServer) -> None:
    host, port = server.address.split(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(b"HELLO wrong\nA 1 0\n")
        assert sock.recv(100) == b""  # closed without a grant
    assert server.core.stats.requests == 0


def test_losing_the_coordinator_is_a_connection_error() -> None:
    srv = LimitServer(LimiterCore(1)).start()
    client = RemoteLimiter(srv.address, srv.token)

    async def main() -> None:
        async with client.slot():
            pass
        srv.stop()
        wait_for(lambda: client._broken is not None)
        with pytest.raises(LimiterError, match="lost the session's limit coordinator"):
            async with client.slot():
                pass

    asyncio.run(main())
    client.close()


def test_session_limits_serve_workers_and_summarise() -> None:
    controller = SessionLimits(2, "100/s", None)
    try:
        assert isinstance(controller.limiter, LocalLimiter)
        workerinput: dict[str, Any] = {}
        controller.hand_to_worker(workerinput)
        worker = SessionLimits(2, "100/s", workerinput)
        assert isinstance(worker.limiter, RemoteLimiter)
        asyncio.run(hammer(worker.limiter, 4, 0.0, Gauge()))
        worker.close()
        assert controller.summary() == (
            "llmeval limits (2 connections, 100/s): 4 requests, at most 2 in flight; "
            "2 waited for a connection, 0 for the rate"
        )
    finally:
        controller.close()
    off = SessionLimits(None, None, None)
    assert off.limiter is NULL_LIMITER and off.summary() is None
    off.close()


# -- through the runners --------------------------------------------------------------------


class RecordingLimiter:
    counts_tokens = True

    def __init__(self) -> None:
        self.tokens: list[int] = []
        self.slots: list[Slot] = []

    def slot(self, tokens: int = 0) -> Any:
        self.tokens.append(tokens)
        slot = _Recorded()
        self.slots.append(slot)
        return slot


class _Recorded(Slot):
    async def __aenter__(self) -> Slot:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


def test_json_http_reports_estimates_statuses_and_usage() -> None:
    limiter = RecordingLimiter()
    brain = lambda body: ChatAnswer("ok", usage={"total_tokens": 77})  # noqa: E731
    with OpenAIServer(brain) as srv:
        srv.script(srv.chat_path, [Reply(status=429, headers={"Retry-After": "3"})])
        runner = OpenAIRunner("test-model", srv.base_url, max_tokens=50, limiter=limiter, **FAST)

        async def main() -> None:
            try:
                await runner.generate(chat_request())
            finally:
                await runner.aclose()

        asyncio.run(main())
    assert len(limiter.tokens) == 2 and all(t > 50 for t in limiter.tokens)
    first, second = limiter.slots
    assert (first.status, first.retry_after, first.used_tokens) == (429, 0.05, None)  # capped
    assert (second.status, second.retry_after, second.used_tokens) == (200, None, 77)


def test_openai_runner_never_exceeds_max_connections() -> None:
    c = LimiterCore(2)

    def slow(body: dict[str, Any]) -> ChatAnswer:
        time.sleep(0.05)
        return ChatAnswer("ok")

    with OpenAIServer(slow) as srv:
        runner = OpenAIRunner("test-model", srv.base_url, limiter=LocalLimiter(c), **FAST)

        async def main() -> None:
            try:
                await asyncio.gather(*(runner.generate(chat_request()) for _ in range(8)))
            finally:
                await runner.aclose()

        asyncio.run(main())
        assert srv.max_concurrent == 2
        assert len(srv.chat_bodies()) == 8
    assert c.stats.queued >= 1 and c.in_flight == 0


def test_a_429_storm_shrinks_the_limits_and_everything_finishes() -> None:
    c = LimiterCore(4, parse_rate_limit("200/s"))
    with OpenAIServer(lambda body: ChatAnswer("ok")) as srv:
        srv.script(srv.chat_path, [Reply(status=429, headers={"Retry-After": "0"})] * 8)
        runner = OpenAIRunner("test-model", srv.base_url, limiter=LocalLimiter(c), **FAST)

        async def main() -> list[str]:
            try:
                done = await asyncio.gather(*(runner.generate(chat_request()) for _ in range(12)))
            finally:
                await runner.aclose()
            return [completion.text for completion in done]

        assert asyncio.run(main()) == ["ok"] * 12
        assert len(srv.chat_bodies()) == 20
    assert c.stats.throttled == 8
    assert c.stats.lowest_factor <= 0.25  # at least two separate congestion events
    assert c.factor > c.stats.lowest_factor  # and it grew back after the successes


def test_http_agent_goes_through_the_limiter() -> None:
    c = LimiterCore(1)

    def slow(request: Request) -> Reply:
        time.sleep(0.02)
        return example_agent_handler(request)

    with ScriptedServer() as srv:
        srv.route("POST", "/chat", slow)
        runner = HttpAgentRunner(srv.url_for("/chat"), limiter=LocalLimiter(c))

        async def main() -> None:
            try:
                await asyncio.gather(*(runner.send("hi") for _ in range(4)))
            finally:
                await runner.aclose()

        asyncio.run(main())
        assert srv.max_concurrent == 1
    assert c.stats.requests == 4


def http_settings(tmp_path: Any, runner: str, agent_url: str = "http://127.0.0.1:9/chat") -> Any:
    return Settings(
        rootdir=tmp_path,
        runner=runner,
        model="m",
        base_url="http://127.0.0.1:9/v1",
        agent_url=agent_url,
        cassettes=tmp_path / "c",
        fixtures=tmp_path / "f",
        seed_manifest=tmp_path / "s.json",
        output_root=tmp_path / "runs",
    )


@pytest.mark.parametrize("runner", ["openai", "http-agent"])
def test_registry_hands_the_session_limiter_to_runners(runner: str, tmp_path: Any) -> None:
    settings = http_settings(tmp_path, runner)
    limiter = LocalLimiter(LimiterCore(1))
    assert RunnerRegistry(limiter=limiter).create(settings)._http.limiter is limiter
    assert RunnerRegistry().create(settings)._http.limiter is NULL_LIMITER


def test_two_sessions_limits_do_not_interfere(tmp_path: Any) -> None:
    """No global limiter: each registry's runners hold its own, closing one session leaves
    the other alone, and each core counts only its own runners' requests."""
    first, second = SessionLimits(1, None, None), SessionLimits(2, None, None)
    with ScriptedServer() as srv:
        srv.route("POST", "/chat", example_agent_handler)
        settings = http_settings(tmp_path, "http-agent", srv.url_for("/chat"))
        one = RunnerRegistry(limiter=first.limiter).create(settings)
        two = RunnerRegistry(limiter=second.limiter).create(settings)
        assert one._http.limiter is first.limiter and two._http.limiter is second.limiter
        first.close()
        assert RunnerRegistry().create(settings)._http.limiter is NULL_LIMITER

        async def main() -> None:
            try:
                await asyncio.gather(*(two.send("hi") for _ in range(3)), one.send("hi"))
            finally:
                await one.aclose()
                await two.aclose()

        asyncio.run(main())
    second.close()
    assert first.core is not None and second.core is not None
    assert (first.core.stats.requests, second.core.stats.requests) == (1, 3)
    assert (first.core.in_flight, second.core.in_flight) == (0, 0)


def test_a_conftest_runner_can_send_through_the_session_limits(pytester: pytest.Pytester) -> None:
    """A user's factory keeps ``factory(settings)`` and reaches the limits as
    ``registry.limiter``; this outer test session has none, the inner one has its own."""
    pytester.makeconftest(
        """
        from pytest_llmeval.limits import LocalLimiter
        from pytest_llmeval.runners.echo import EchoRunner

        def pytest_llmeval_register_runners(registry):
            def factory(settings):
                limiter = registry.limiter
                assert isinstance(limiter, LocalLimiter), limiter
                assert limiter.core.max_connections == 3
                return EchoRunner()

            registry.register("probe", factory)
        """
    )
    write_json(pytester, "qa.golden.json", [{"id": "c", "input": "ok", "expected_output": "ok"}])
    result = pytester.runpytest(
        "--llmeval-runner", "probe", "--llmeval-max-connections", "3",
        "--llmeval-run-dir", "run", "-p", "no:cacheprovider",
    )  # fmt: skip
    result.assert_outcomes(passed=1)


# -- through pytest -------------------------------------------------------------------------


@pytest.fixture
def slow_server() -> Iterator[OpenAIServer]:
    def slow(body: dict[str, Any]) -> ChatAnswer:
        time.sleep(0.05)
        return ChatAnswer("ok")

    with OpenAIServer(slow) as srv:
        yield srv


def write_cases(pytester: pytest.Pytester, count: int) -> None:
    cases = [{"id": f"c{i:02d}", "input": f"q{i}", "expected_output": "ok"} for i in range(count)]
    write_json(pytester, "qa.golden.json", cases)


def run_openai(pytester: pytest.Pytester, server: OpenAIServer, *args: str) -> Any:
    return pytester.runpytest_subprocess(
        "--llmeval-runner", "openai", "--llmeval-base-url", server.base_url,
        "--llmeval-model", "test-model", "--llmeval-run-dir", "run", "-p", "no:cacheprovider",
        *args,
    )  # fmt: skip


def test_max_connections_holds_in_process(
    pytester: pytest.Pytester, slow_server: OpenAIServer
) -> None:
    write_cases(pytester, 12)
    result = run_openai(
        pytester, slow_server, "--llmeval-max-connections", "2", "--llmeval-concurrency", "8"
    )
    result.assert_outcomes(passed=12)
    assert slow_server.max_concurrent == 2
    result.stdout.fnmatch_lines(["llmeval limits (2 connections): 12 requests, at most 2 in*"])


def test_the_global_limit_holds_with_n_2(
    pytester: pytest.Pytester, slow_server: OpenAIServer
) -> None:
    """2 workers x 8 in flight each, and the server never sees more than 3."""
    pytest.importorskip("xdist")
    write_cases(pytester, 30)
    result = run_openai(
        pytester, slow_server, "-n", "2",
        "--llmeval-max-connections", "3", "--llmeval-concurrency", "8",
    )  # fmt: skip
    result.assert_outcomes(passed=30)
    assert len(slow_server.chat_bodies()) == 30
    assert 1 < slow_server.max_concurrent <= 3
    result.stdout.fnmatch_lines(["llmeval limits (3 connections): 30 requests, at most 3 in*"])
    workers = {row["case_id"]: row for row in read_jsonl(pytester.path / "run/results.jsonl")}
    assert len(workers) == 30


def test_a_429_storm_with_n_2_slows_down_and_finishes(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    write_cases(pytester, 30)
    with OpenAIServer(lambda body: ChatAnswer("ok")) as srv:
        srv.script(srv.chat_path, [Reply(status=429, headers={"Retry-After": "0.02"})] * 8)
        result = run_openai(
            pytester, srv, "-n", "2", "--llmeval-concurrency", "8",
            "--llmeval-max-connections", "4", "--llmeval-rate-limit", "200/s",
        )  # fmt: skip
        assert len(srv.chat_bodies()) == 38
    result.assert_outcomes(passed=30)
    result.stdout.fnmatch_lines(
        [
            "llmeval limits (4 connections, 200/s): 38 requests, at most * in flight; "
            "* 8 answered 429: the limits went down to *% and ended at *%"
        ]
    )
    line = next(s for s in result.outlines if s.startswith("llmeval limits"))
    lowest = int(line.split("went down to ")[1].split("%")[0])
    assert lowest <= 50


def wait_for(condition: Any, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.005)
