"""The http-agent runner through pytest, against a real server on 127.0.0.1.

These run pytest in a subprocess: an in-process pytester run restores ``sys.modules``
afterwards, and the httpx/httpcore/anyio modules imported lazily during it would then be
imported twice, with two sets of exception classes, breaking later tests in this process.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_llmeval.testing.agent import example_agent_handler
from pytest_llmeval.testing.server import Reply, ScriptedServer
from tests.conftest import read_jsonl, write_json


@pytest.fixture
def agent_server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        server.route("POST", "/chat", example_agent_handler)
        yield server


def test_toolforge_cases_against_an_agent_endpoint(
    pytester: pytest.Pytester, agent_server: ScriptedServer
) -> None:
    cases = [
        {
            "id": "w",
            "input": {"message": "weather in paris"},
            "expect": {
                "toolsCalled": ["get_weather"],
                "toolParams": [
                    {"tool": "get_weather", "paramName": "city", "assertion": "equals",
                     "value": "Paris"}
                ],
                "responseContains": ["Paris"],
                "noToolErrors": True,
                "maxLatencyMs": 42,
            },
        },
        {"id": "e", "input": {"message": "hi"}, "expect": {"responseContains": ["Echo: hi"]}},
        {"id": "slow", "input": {"message": "hi"}, "expect": {"maxLatencyMs": 41}},
    ]  # fmt: skip
    write_json(pytester, "agent.golden.json", {"metadata": {"toolName": "agent"}, "cases": cases})
    url = agent_server.url_for("/chat")
    result = pytester.runpytest_subprocess(
        "--llmeval-runner", "http-agent", "--llmeval-agent-url", url,
        "--llmeval-run-dir", "run", "-v",
    )  # fmt: skip
    result.stdout.fnmatch_lines(["*maxLatencyMs: expected at most 41ms but took 42ms*"])
    result.assert_outcomes(passed=2, failed=1)
    rows = {r["case_id"]: r for r in read_jsonl(pytester.path / "run/results.jsonl")}
    assert rows["w"]["duration_ms"] == 42.0  # the endpoint's own durationMs
    assert rows["w"]["tool_calls"][0]["source"] == "endpoint"
    messages = sorted(r.json["message"] for r in agent_server.requests_to("/chat"))
    assert messages == ["hi", "hi", "weather in paris"]


def _one_case(pytester: pytest.Pytester) -> None:
    """One tool-forge case the agent must answer at all."""
    write_json(
        pytester,
        "agent.golden.json",
        [{"id": "a", "input": {"message": "hi"}, "expect": {"responseNonEmpty": True}}],
    )


def test_server_faults_are_errors_after_bounded_retries(
    pytester: pytest.Pytester, agent_server: ScriptedServer
) -> None:
    _one_case(pytester)
    agent_server.script("/chat", [Reply(status=503)] * 10)
    url = agent_server.url_for("/chat").replace("http://", "http://user:hunter2@")
    result = pytester.runpytest_subprocess(
        "--llmeval-runner", "http-agent", "--llmeval-agent-url", url,
        "--llmeval-run-dir", "run", "-q",
    )  # fmt: skip
    result.assert_outcomes(errors=1)
    assert len(agent_server.requests_to("/chat")) == 3  # one try and two retries
    files = (p for p in (pytester.path / "run").rglob("*") if p.is_file())
    text = result.stdout.str() + "".join(p.read_text() for p in files)
    assert "hunter2" not in text
    row = read_jsonl(pytester.path / "run/errors.jsonl")[0]
    assert "503" in row["error"]


def test_deterministic_mode_is_honoured(
    pytester: pytest.Pytester, agent_server: ScriptedServer
) -> None:
    """``--llmeval-deterministic yes``: the first 429 is the case's error, never retried."""
    _one_case(pytester)
    agent_server.script("/chat", [Reply(status=429, headers={"Retry-After": "0"})])
    result = pytester.runpytest_subprocess(
        "--llmeval-runner", "http-agent", "--llmeval-agent-url", agent_server.url_for("/chat"),
        "--llmeval-deterministic", "yes", "--llmeval-run-dir", "run", "-q",
    )  # fmt: skip
    result.assert_outcomes(errors=1)
    assert len(agent_server.requests_to("/chat")) == 1
    row = read_jsonl(pytester.path / "run/errors.jsonl")[0]
    assert "not retried: deterministic mode" in row["error"]
