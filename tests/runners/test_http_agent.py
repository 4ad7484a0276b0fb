"""The ``http-agent`` runner against a real loopback ScriptedServer (no httpx mocks)."""

from __future__ import annotations

import asyncio
import base64
import http.client
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_llmeval.core.errors import ConfigError, RunnerError
from pytest_llmeval.runners.base import AgentEndpoint, AgentResponse
from pytest_llmeval.runners.http_agent import HttpAgentRunner
from pytest_llmeval.testing.agent import (
    EXAMPLE_DURATION_MS,
    EXAMPLE_TOOL_DURATION_MS,
    example_agent_handler,
)
from pytest_llmeval.testing.server import Reply, Request, ScriptedServer

# every test once per transport: the fault table must read the same with both
pytestmark = pytest.mark.usefixtures("no_thread_leak", "each_transport")

FAST = {"backoff_s": 0.01, "max_backoff_s": 0.05, "timeout_s": 5.0}


@pytest.fixture
def srv() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        server.route("POST", "/chat", example_agent_handler)
        yield server


def send(url: str, message: str = "hello", **kwargs: Any) -> AgentResponse:
    async def go() -> AgentResponse:
        async with HttpAgentRunner(url, **{**FAST, **kwargs}) as runner:
            return await runner.send(message)

    return asyncio.run(go())


def send_error(url: str, message: str = "hello", **kwargs: Any) -> RunnerError:
    with pytest.raises(RunnerError) as info:
        send(url, message, **kwargs)
    return info.value


# -- happy paths --------------------------------------------------------------------------------


def test_tool_calls_and_endpoint_duration(srv: ScriptedServer) -> None:
    result = send(srv.url_for("/chat"), "What's the weather in paris today?")

    assert "Paris" in result.response
    assert result.duration_ms == EXAMPLE_DURATION_MS
    [call] = result.tool_calls
    assert call.name == "get_weather"
    assert call.params == {"city": "Paris"}
    assert call.success is True
    assert call.duration_ms == EXAMPLE_TOOL_DURATION_MS
    assert call.source == "endpoint"
    [request] = srv.requests
    assert (request.method, request.path) == ("POST", "/chat")
    assert request.json == {"message": "What's the weather in paris today?"}
    assert request.headers["content-type"] == "application/json"


def test_echo_without_tool_calls(srv: ScriptedServer) -> None:
    result = send(srv.url_for("/chat"), "hi there")
    assert result.response == "Echo: hi there"
    assert result.tool_calls == []


def test_runner_is_an_agent_endpoint() -> None:
    runner = HttpAgentRunner("http://127.0.0.1:9/chat")
    assert isinstance(runner, AgentEndpoint)
    assert runner.name == "http-agent"


def test_missing_duration_uses_wall_clock(srv: ScriptedServer) -> None:
    srv.script("/chat", [Reply(json={"response": "ok", "toolCalls": None})])
    result = send(srv.url_for("/chat"))
    assert result.response == "ok"
    assert result.tool_calls == []
    assert result.duration_ms is not None and result.duration_ms > 0


def test_tool_call_defaults(srv: ScriptedServer) -> None:
    srv.script("/chat", [Reply(json={"response": "ok", "toolCalls": [{"name": "lookup"}]})])
    [call] = send(srv.url_for("/chat")).tool_calls
    assert (call.name, call.params, call.success, call.duration_ms) == ("lookup", {}, True, 0.0)


def test_several_sends_share_one_runner(srv: ScriptedServer) -> None:
    async def go() -> list[str]:
        async with HttpAgentRunner(srv.url_for("/chat"), **FAST) as runner:
            return [(await runner.send(f"m{i}")).response for i in range(3)]

    assert asyncio.run(go()) == ["Echo: m0", "Echo: m1", "Echo: m2"]


# -- retries ------------------------------------------------------------------------------------


def test_retry_after_500_then_success(srv: ScriptedServer) -> None:
    srv.script("/chat", [Reply(status=500, json={"error": "boom"})])
    assert send(srv.url_for("/chat"), "hi").response == "Echo: hi"
    assert len(srv.requests) == 2


def test_429_with_retry_after_then_success(srv: ScriptedServer) -> None:
    srv.script("/chat", [Reply(status=429, headers={"Retry-After": "0"})])
    # backoff_s is huge: only honouring Retry-After: 0 keeps this test fast.
    result = send(srv.url_for("/chat"), "hi", backoff_s=30.0, max_backoff_s=30.0)
    assert result.response == "Echo: hi"
    assert len(srv.requests) == 2


def test_retry_delay_honours_retry_after_capped_and_jittered() -> None:
    runner = HttpAgentRunner("http://127.0.0.1:9/chat", backoff_s=1.0, max_backoff_s=8.0)
    assert runner._http.delay(1, retry_after=0.0) == 0.0
    assert runner._http.delay(1, retry_after=2.5) == 2.5
    assert runner._http.delay(1, retry_after=100.0) == 8.0
    for attempt, base in [(1, 1.0), (2, 2.0), (3, 4.0)]:
        delays = [runner._http.delay(attempt, None) for _ in range(50)]
        assert all(base <= d <= base * 1.5 for d in delays)
    assert runner._http.delay(10, None) == 8.0


def test_retries_exhausted(srv: ScriptedServer) -> None:
    srv.route("POST", "/chat", Reply(status=503, body="overloaded"))
    err = send_error(srv.url_for("/chat"), max_retries=2)
    assert (err.kind, err.retryable) == ("http", True)
    assert "503" in str(err) and "overloaded" in str(err) and "3 attempts" in str(err)
    assert len(srv.requests) == 3


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (Reply(status=429, headers={"Retry-After": "0"}), "http"),
        (Reply(status=503, body="overloaded"), "http"),
        (Reply(drop=True), "connection"),
        (Reply(json={"response": "late"}, delay_s=5.0), "timeout"),
    ],
    ids=["429", "503", "dropped", "timeout"],
)
def test_deterministic_mode_turns_the_first_fault_into_an_error(
    srv: ScriptedServer, reply: Reply, kind: str
) -> None:
    srv.route("POST", "/chat", reply)
    err = send_error(srv.url_for("/chat"), max_retries=3, timeout_s=0.2, deterministic=True)
    assert (err.kind, err.retryable) == (kind, True)
    assert "not retried: deterministic mode" in str(err)
    assert len(srv.requests) == 1


@pytest.mark.parametrize(
    ("status", "kind"), [(404, "http"), (400, "http"), (401, "auth"), (403, "auth")]
)
def test_client_errors_are_not_retried(srv: ScriptedServer, status: int, kind: str) -> None:
    srv.route("POST", "/chat", Reply(status=status, json={"error": "nope"}))
    err = send_error(srv.url_for("/chat"), max_retries=3)
    assert (err.kind, err.retryable) == (kind, False)
    assert f"HTTP {status}" in str(err)
    assert len(srv.requests) == 1


def test_dropped_connection_is_retried_then_fails(srv: ScriptedServer) -> None:
    srv.route("POST", "/chat", Reply(drop=True))
    err = send_error(srv.url_for("/chat"), max_retries=1)
    assert (err.kind, err.retryable) == ("connection", True)
    assert len(srv.requests) == 2


def test_dropped_connection_then_success(srv: ScriptedServer) -> None:
    srv.script("/chat", [Reply(drop=True)])
    assert send(srv.url_for("/chat"), "hi").response == "Echo: hi"
    assert len(srv.requests) == 2


def test_connection_refused() -> None:
    with ScriptedServer() as gone:
        url = gone.url_for("/chat")  # nothing listens there once the block is left
    err = send_error(url, max_retries=1)
    # nobody listens, so a retry a moment later cannot help: tried once
    assert (err.kind, err.retryable) == ("connection", False)
    assert str(err).endswith("(not retried: connection refused)")


@pytest.mark.parametrize(
    "garbage",
    [b"HELLO THERE\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort"],
    ids=["status-line", "short-body"],
)
def test_a_garbled_http_answer_is_a_connection_error(garbage: bytes) -> None:
    """Not HTTP, or cut short: a retryable connection fault with either transport (aiohttp
    raises errors httpx-aiohttp does not map; they must not escape as agent crashes)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        served = []

        def answer() -> None:
            for _ in range(2):  # the first try and one retry
                conn, _addr = listener.accept()
                with conn:
                    conn.recv(65536)
                    conn.sendall(garbage)
                served.append(1)

        thread = threading.Thread(target=answer)
        thread.start()
        err = send_error(f"http://127.0.0.1:{port}/chat", max_retries=1)
        thread.join(timeout=10)
    assert (err.kind, err.retryable) == ("connection", True)
    assert "connection failed" in str(err)
    assert served == [1, 1]


def test_slow_reply_times_out(srv: ScriptedServer) -> None:
    srv.route("POST", "/chat", Reply(json={"response": "late"}, delay_s=5.0))
    err = send_error(srv.url_for("/chat"), timeout_s=0.1, max_retries=1)
    assert (err.kind, err.retryable) == ("timeout", True)
    assert "0.1s" in str(err)
    assert len(srv.requests) == 2


# -- protocol errors ----------------------------------------------------------------------------


def test_malformed_body_is_a_protocol_error(srv: ScriptedServer) -> None:
    srv.route("POST", "/chat", Reply(malformed=True))
    err = send_error(srv.url_for("/chat"))
    assert (err.kind, err.retryable) == ("protocol", False)
    assert "not JSON" in str(err) and "'response'" in str(err)
    assert len(srv.requests) == 1


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ([1, 2], "body: expected a JSON object, got an array"),
        ({"toolCalls": []}, "'response': expected a string, got nothing (missing)"),
        ({"response": 5}, "'response': expected a string, got a number"),
        ({"response": "x", "toolCalls": "get_weather"}, "'toolCalls': expected an array"),
        ({"response": "x", "toolCalls": [7]}, "'toolCalls[0]': expected an object"),
        (
            {"response": "x", "toolCalls": [{"name": "a"}, {"params": {}}]},
            "'toolCalls[1].name': expected a non-empty string, got null",
        ),
        (
            {"response": "x", "toolCalls": [{"name": "a", "params": [1]}]},
            "'toolCalls[0].params': expected an object, got an array",
        ),
        (
            {"response": "x", "toolCalls": [{"name": "a", "success": "yes"}]},
            "'toolCalls[0].success': expected a boolean, got a string",
        ),
        ({"response": "x", "durationMs": "12"}, "'durationMs': expected a number, got a string"),
        ({"response": "x", "durationMs": -1}, "'durationMs': expected a finite number >= 0"),
    ],
)
def test_contract_violations_name_the_field(srv: ScriptedServer, body: Any, expected: str) -> None:
    srv.route("POST", "/chat", Reply(json=body))
    err = send_error(srv.url_for("/chat"))
    assert (err.kind, err.retryable) == ("protocol", False)
    assert expected in str(err)


# -- secrets ------------------------------------------------------------------------------------


def echo_headers(status: int) -> Any:
    """A handler that puts the request's headers in its (error) body."""

    def handler(request: Request) -> Reply:
        return Reply(status=status, json={"you_sent": request.headers, "query": request.query})

    return handler


@pytest.mark.parametrize(
    "reply",
    [
        echo_headers(401),
        echo_headers(500),
        Reply(drop=True),
        lambda request: Reply(malformed=True, body=str(request.headers)),
        # The error body is cut at 200 characters right inside the credential.
        lambda request: Reply(status=502, body="x" * 185 + request.headers["authorization"]),
    ],
    ids=["auth", "server-error", "dropped", "malformed", "cut-echo"],
)
def test_secrets_never_reach_error_messages(srv: ScriptedServer, reply: Any) -> None:
    srv.route("POST", "/chat", reply)
    bearer = "sk-SECRET-bearer-123"
    user, password, query = "alice-SECRET", "pw-SECRET-456", "key=QUERY-SECRET-789"
    basic = base64.b64encode(f"{user}:{password}".encode()).decode()
    userinfo_url = srv.url_for("/chat").replace("://", f"://{user}:{password}@") + "?" + query

    errors = [
        send_error(srv.url_for("/chat"), headers={"Authorization": f"Bearer {bearer}"}),
        send_error(userinfo_url),
    ]

    sent = [r.headers.get("authorization", "") for r in srv.requests]
    assert any(bearer in h for h in sent) and any(basic in h for h in sent)  # really sent
    for err in errors:
        text = f"{err} {err!r}"
        for secret in (bearer, user, password, query, basic):
            # not even a piece of it
            assert not [
                secret[i : i + 6] for i in range(len(secret) - 5) if secret[i : i + 6] in text
            ]
        assert srv.url_for("/chat") in text


def test_fingerprint_strips_userinfo_and_query() -> None:
    runner = HttpAgentRunner(
        "https://bob:hunter22@agent.example:8443/v1/chat?api_key=abc#frag",
        headers={"Authorization": "Bearer sk-xyz"},
    )
    assert runner.fingerprint() == {
        "type": "http-agent",
        "url": "https://agent.example:8443/v1/chat",
    }


@pytest.mark.parametrize(
    ("url", "kwargs"),
    [
        ("ftp://127.0.0.1/chat", {}),
        ("/chat", {}),
        ("http://127.0.0.1:99999999/chat", {}),
        ("http://[::1/chat", {}),
        ("http://127.0.0.1/chat", {"timeout_s": 0}),
        ("http://127.0.0.1/chat", {"max_retries": -1}),
    ],
)
def test_bad_settings_are_config_errors(url: str, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        HttpAgentRunner(url, **kwargs)


# -- concurrency and lifecycle ------------------------------------------------------------------


def test_concurrent_sends_overlap_on_the_server(srv: ScriptedServer) -> None:
    srv.route("POST", "/chat", Reply(json={"response": "slow"}, delay_s=0.2))

    async def go() -> list[AgentResponse]:
        async with HttpAgentRunner(srv.url_for("/chat"), **FAST) as runner:
            return await asyncio.gather(*(runner.send(f"m{i}") for i in range(4)))

    results = asyncio.run(go())
    assert [r.response for r in results] == ["slow"] * 4
    assert srv.max_concurrent > 1
    assert srv.in_flight == 0


def test_server_shuts_down_without_leaking_threads() -> None:
    baseline = threading.active_count()
    with ScriptedServer(example_agent_handler) as server:
        server.route("POST", "/slow", Reply(json={}, delay_s=30.0))
        assert send(server.url_for("/chat"), "hi").response == "Echo: hi"
        # An idle keep-alive connection and a request parked in a 30 s delay: stop must
        # close the first and wake the second.
        idle = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        idle.request("POST", "/chat", body=b'{"message": "x"}')
        assert idle.getresponse().read()
        parked = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        parked.request("POST", "/slow", body=b"{}")
        deadline = time.monotonic() + 5
        while server.in_flight < 1 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert server.in_flight == 1
        assert threading.active_count() > baseline
    assert threading.active_count() == baseline
    with pytest.raises((http.client.HTTPException, OSError)):
        parked.getresponse()
    idle.close()
    parked.close()


# -- the server itself --------------------------------------------------------------------------


def test_scripted_replies_run_in_order_then_fall_back() -> None:
    def fallback(request: Request) -> Reply:
        return Reply(json={"fallback": request.query})

    with ScriptedServer(routes={("GET", "/x"): fallback}) as server:
        server.script("/x", [Reply(status=201, body="one"), Reply(json=[2])], method="GET")
        assert server.pending("/x", method="GET") == 2
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        seen = []
        for _ in range(3):
            conn.request("GET", "/x?q=1", headers={"X-Test": "yes"})
            response = conn.getresponse()
            seen.append((response.status, response.read()))
        conn.request("GET", "/nowhere")
        missing = conn.getresponse()
        seen.append((missing.status, missing.read()))
        conn.close()
        assert server.pending("/x", method="GET") == 0
        [first, *_] = server.requests_to("/x", "GET")
        assert (first.path, first.query, first.headers["x-test"]) == ("/x", "q=1", "yes")
        assert len(server.requests) == 4
    assert seen == [
        (201, b"one"),
        (200, b"[2]"),
        (200, b'{"fallback": "q=1"}'),
        (404, b'{"error": "no route"}'),
    ]


def test_handler_exception_becomes_500_and_is_recorded() -> None:
    def broken(request: Request) -> Reply:
        raise ValueError("oops")

    with ScriptedServer(broken) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        conn.request("POST", "/anything", body=b"not json")
        response = conn.getresponse()
        assert response.status == 500 and b"ValueError: oops" in response.read()
        conn.close()
        [request] = server.requests
        assert (request.body, request.is_json, request.json) == (b"not json", False, None)
        assert [type(e) for e in server.errors] == [ValueError]


def test_example_agent_rejects_bad_input(srv: ScriptedServer) -> None:
    err = send_error(srv.url_for("/chat").replace("/chat", "/other"))
    assert err.kind == "http" and "404" in str(err)
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    conn.request("POST", "/chat", body=b'{"message": 3}')
    response = conn.getresponse()
    assert response.status == 400 and b"message" in response.read()
    conn.close()
