"""The circuit breaker: a dead backend fails the rest of the run fast.

pytest runs go through ``runpytest_subprocess`` (see ``tests/runners/test_openai_http.py``: an
in-process run would leave two sets of httpx exception classes).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import Any

import pytest

from pytest_llmeval.core.errors import BackendUnreachable, RunnerError
from pytest_llmeval.limits import Breaker, LimitServer, NullLimiter, RemoteBreaker
from pytest_llmeval.limits.breaker import breaker_message
from pytest_llmeval.runners.http import JsonHttp
from pytest_llmeval.testing.openai_server import ChatAnswer, OpenAIServer
from pytest_llmeval.testing.server import Reply, ScriptedServer
from tests.conftest import read_jsonl, write_json

BACKEND = "http://127.0.0.1:9/v1"


# -- the state machine --------------------------------------------------------------------


def test_the_breaker_opens_after_threshold_consecutive_failures() -> None:
    breaker = Breaker(3)
    heard: list[tuple[str, str]] = []
    breaker.listen(lambda backend, message: heard.append((backend, message)))
    assert breaker.failure(BACKEND, "connection refused") is None
    assert breaker.failure(BACKEND, "connection refused") is None
    breaker.check(BACKEND)  # still closed
    message = breaker.failure(BACKEND, "connection refused")
    assert message == (
        f"backend {BACKEND} is unreachable: circuit breaker open after 3 consecutive "
        "connection failures (connection refused); remaining cases not sent"
    )
    with pytest.raises(BackendUnreachable, match="circuit breaker open") as caught:
        breaker.check(BACKEND)
    assert (caught.value.kind, caught.value.retryable) == ("connection", False)
    assert heard == [(BACKEND, message)]
    # open for the rest of the session: a late success does not close it, nor a failure
    # reopen it (the listeners hear once)
    breaker.success(BACKEND)
    assert breaker.failure(BACKEND, "connection refused") is None
    assert breaker.message(BACKEND) == message and len(heard) == 1
    breaker.check("http://elsewhere:1")  # another backend has its own breaker


def test_a_success_resets_the_count() -> None:
    breaker = Breaker(2)
    breaker.failure(BACKEND, "connection refused")
    breaker.success(BACKEND)
    assert breaker.failure(BACKEND, "connection refused") is None
    assert breaker.opened() == {}
    assert breaker.failure(BACKEND, "connection refused") is not None


def test_threshold_zero_never_opens() -> None:
    breaker = Breaker(0)
    for _ in range(100):
        assert breaker.failure(BACKEND, "connection refused") is None
    breaker.check(BACKEND)
    with pytest.raises(ValueError, match="threshold"):
        Breaker(-1)


# -- JsonHttp and the breaker -------------------------------------------------------------


def _post(http: JsonHttp, url: str) -> Any:
    async def go() -> Any:
        try:
            return await http.post_json(url, {"message": "hi"})
        finally:
            await http.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_connection_refused_is_tried_once(transport: str) -> None:
    with ScriptedServer() as gone:
        url, origin = gone.url_for("/chat"), gone.url  # nothing listens there after the block
    breaker = Breaker(10)
    limiter = NullLimiter(breaker)
    http = JsonHttp("t", max_retries=4, backoff_s=5.0, limiter=limiter, transport=transport)
    with pytest.raises(RunnerError, match=r"not retried: connection refused") as caught:
        _post(http, url)
    assert not caught.value.retryable
    # one attempt, one failure counted (the backoff of 5 s was never waited either)
    assert breaker._counts == {origin: 1}


def test_an_unresolvable_host_is_tried_once() -> None:
    breaker = Breaker(10)
    http = JsonHttp("t", max_retries=4, backoff_s=5.0, limiter=NullLimiter(breaker))
    with pytest.raises(RunnerError, match=r"not retried: name resolution failed"):
        _post(http, "http://no-such-host.invalid/chat")
    assert breaker._counts == {"http://no-such-host.invalid": 1}


def test_once_open_nothing_is_sent_and_an_answer_resets_the_count() -> None:
    with ScriptedServer(Reply(json={"response": "ok"})) as srv:
        url = srv.url_for("/chat")
        breaker = Breaker(3)
        http = JsonHttp(
            "t", max_retries=2, backoff_s=0.0, limiter=NullLimiter(breaker), backend="B"
        )
        # dropped connections are retried, and each counts
        srv.script("/chat", [Reply(drop=True), Reply(status=503)])
        assert _post(http, url)[0].status_code == 200  # the 503 answer reset the count
        assert breaker._counts == {"B": 0}
        srv.script("/chat", [Reply(drop=True)] * 3)
        with pytest.raises(RunnerError, match="gave up after 3 attempts"):
            _post(http, url)
        with pytest.raises(BackendUnreachable, match="backend B is unreachable"):
            _post(http, url)
        assert len(srv.requests) == 6  # the last call never reached the server


# -- across xdist workers: the limit server's breaker route ---------------------------------


def _until(test: Any) -> None:
    """Wait for ``test()`` to hold: the server's word arrives on another thread. (Not a timing
    check: the bound only keeps a broken route from hanging the suite.)"""
    for _ in range(1000):
        if test():
            return
        time.sleep(0.01)
    pytest.fail("the breaker never heard")


def test_workers_share_the_breaker_through_the_limit_server() -> None:
    controller = Breaker(3)
    with LimitServer(None, breaker=controller) as server:
        first = RemoteBreaker(server.address, server.token, 3)
        second = RemoteBreaker(server.address, server.token, 3)
        try:
            second.check(BACKEND)  # connects and watches
            first.failure(BACKEND, "connection refused")
            second.failure(BACKEND, "connection refused")
            assert first.message(BACKEND) is None  # neither worker counted 3 on its own
            first.failure(BACKEND, "connection refused")
            _until(lambda: second.message(BACKEND) is not None)
            with pytest.raises(BackendUnreachable) as caught:
                second.check(BACKEND)
            assert str(caught.value) == breaker_message(BACKEND, 3, "connection refused")
            _until(lambda: first.message(BACKEND) is not None)
            # a worker that starts later hears of it when it connects
            late = RemoteBreaker(server.address, server.token, 3)
            try:
                with contextlib.suppress(BackendUnreachable):
                    late.check(BACKEND)  # connects (it may have heard already)
                _until(lambda: late.message(BACKEND) is not None)
            finally:
                late.close()
        finally:
            first.close()
            second.close()


def test_a_worker_success_resets_the_controllers_count() -> None:
    controller = Breaker(2)
    with LimitServer(None, breaker=controller) as server:
        worker = RemoteBreaker(server.address, server.token, 2)
        try:
            worker.failure(BACKEND, "connection refused")
            worker.success(BACKEND)
            _until(lambda: controller._counts.get(BACKEND) == 0)
            worker.success(BACKEND)  # nothing to reset: not sent again
            worker.failure(BACKEND, "connection refused")
            _until(lambda: controller._counts.get(BACKEND) == 1)
            assert controller.opened() == {}
        finally:
            worker.close()


def test_an_unreachable_controller_leaves_the_workers_own_breaker() -> None:
    with ScriptedServer() as gone:
        address = gone.url.removeprefix("http://")  # nothing listens there after the block
    worker = RemoteBreaker(address, "token", 2)
    worker.failure(BACKEND, "connection refused")
    assert worker.failure(BACKEND, "connection refused") is not None
    with pytest.raises(BackendUnreachable):
        worker.check(BACKEND)
    worker.close()


# -- a whole run whose backend dies -------------------------------------------------------

N_CASES = 30
ANSWERED = 5
THRESHOLD = 3
CASES = [{"id": f"c{i:02d}", "input": f"m{i}", "expected_output": f"m{i}"} for i in range(N_CASES)]


@pytest.mark.parametrize("workers", [0, 2], ids=["one-process", "xdist-2"])
def test_a_backend_killed_mid_run_fails_the_rest_fast_and_resume_finishes(
    pytester: pytest.Pytester, workers: int
) -> None:
    """With -n 2 the workers share one breaker through the limit server: it opens once for
    the session, and each worker meets the dead backend at most with its case in flight."""
    write_json(pytester, "qa.golden.json", CASES)
    seen = 0
    lock = threading.Lock()
    stopper: list[threading.Thread] = []

    def brain(body: dict[str, Any]) -> ChatAnswer:
        nonlocal seen
        with lock:
            seen += 1
            if seen == ANSWERED:  # the backend dies right after this answer
                stopper.append(threading.Thread(target=server.stop))
                stopper[0].start()
        return ChatAnswer(str(body["messages"][-1]["content"]))

    args = ["--llmeval-runner", "openai", "--llmeval-model", "test-model",
            "--llmeval-concurrency", "1", "--llmeval-breaker-threshold", str(THRESHOLD),
            "-p", "no:cacheprovider", *(["-n", str(workers)] if workers else [])]  # fmt: skip
    server = OpenAIServer(brain)
    with server:
        base_url, port = server.base_url, server.port
        result = pytester.runpytest_subprocess(
            *args, "--llmeval-base-url", base_url, "--llmeval-run-dir", "run"
        )
        stopper[0].join()
        answered = len(server.chat_bodies())
    rows = read_jsonl(pytester.path / "run/results.jsonl")
    assert len(rows) == N_CASES and (pytester.path / "run/report.json").is_file()
    passed = [r for r in rows if r["outcome"] == "passed"]
    errors = [r for r in rows if r["outcome"] == "error"]
    assert len(passed) + len(errors) == N_CASES
    # the backend stops a moment after its 5th answer: a few more may get through, and the
    # answers on their way when it stops are lost
    in_flight = max(workers, 1)  # each process has one case in flight (--llmeval-concurrency 1)
    assert len(passed) >= ANSWERED - 1 and answered - in_flight <= len(passed) <= answered
    fast = [r for r in errors if "circuit breaker open" in r["error"]]
    tried = [r for r in errors if "circuit breaker open" not in r["error"]]
    # a few cases met the dead backend (each refusal tried once); all the others were never
    # sent, and say so in one and the same line naming the backend
    # In one process the breaker opens on the THRESHOLD-th failure: THRESHOLD cases meet the
    # dead backend (one fewer when the answer lost in flight is retried into a refusal and
    # that case counts two failures). With -n each worker also counts its own failures (the
    # controller's word may come after a worker's own count opened it): at least one case,
    # at most THRESHOLD per worker.
    if workers:
        assert 1 <= len(tried) <= THRESHOLD * workers
    else:
        assert THRESHOLD - 1 <= len(tried) <= THRESHOLD
    assert all("connection" in r["error"] for r in tried)
    [message] = {r["error"] for r in fast}
    assert message.startswith(f"backend {base_url} is unreachable: circuit breaker open after ")
    assert message.endswith("; remaining cases not sent")
    if not workers:  # one process runs the cases in order: the fast ones are the last
        assert [r["nodeid"] for r in rows[-len(fast) :]] == [r["nodeid"] for r in fast]
    stdout = result.stdout.str()
    assert message in stdout and "Traceback" not in stdout
    result.assert_outcomes(passed=len(passed), errors=len(errors))

    # the backend is back where it was: resume runs the errors again, and only them
    with OpenAIServer(port=port) as again:
        resumed = pytester.runpytest_subprocess(
            *args, "--llmeval-base-url", base_url, "--llmeval-resume", "run"
        )
        assert len(again.chat_bodies()) == len(errors)
    # xdist workers deselect the finished cases themselves: the controller does not count them
    resumed.assert_outcomes(passed=len(errors), deselected=0 if workers else len(passed))
    rows = read_jsonl(pytester.path / "run/results.jsonl")
    assert [r["outcome"] for r in rows] == ["passed"] * N_CASES


def test_eval_failure_messages_are_clipped() -> None:
    """A huge answer quoted in a failure is cut, with its full length."""
    from pytest_llmeval.core.errors import EvalFailure

    failure = EvalFailure("expected 'a', got " + "x" * 100_000, "y" * 100_000)
    assert failure.message.endswith("[clipped: 100018 characters in all]")
    assert len(failure.message) < 2_100 and len(failure.details) < 4_100
