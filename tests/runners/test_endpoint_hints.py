"""A request an OpenAI-compatible server refuses names its fix; a probe tells whether the
endpoint gives prompt log-probabilities (issue 32, items 1 and 3)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pytest_llmeval.core.errors import RunnerError
from pytest_llmeval.core.models import Message
from pytest_llmeval.runners.base import GenerateRequest, LoglikRequest, NoLoglikelihood
from pytest_llmeval.runners.endpoint_hints import field_sources, refusal_hint
from pytest_llmeval.runners.openai_http import OpenAIRunner
from pytest_llmeval.testing.openai_server import OpenAIServer
from pytest_llmeval.testing.server import Reply

pytestmark = pytest.mark.usefixtures("no_thread_leak")

FAST: dict[str, Any] = {"backoff_s": 0.01, "max_backoff_s": 0.05, "timeout_s": 5.0}
HELLO = GenerateRequest(messages=[Message(role="user", content="hello")])


def _error(base_url: str, **kwargs: Any) -> str:
    async def go() -> None:
        async with OpenAIRunner("test-model", base_url, **{**FAST, **kwargs}) as runner:
            await runner.generate(HELLO)

    with pytest.raises(RunnerError) as info:
        asyncio.run(go())
    return str(info.value)


# -- the hints, as pure functions -------------------------------------------------------------


def test_a_404_on_a_base_url_without_v1_asks_for_v1() -> None:
    hint = refusal_hint(404, "", "http://h:8000/chat/completions", "http://h:8000", {})
    assert hint == "; did you mean http://h:8000/v1? (--llmeval-base-url)"


def test_a_404_under_v1_says_what_the_server_may_not_serve() -> None:
    chat = refusal_hint(404, "", "http://h/v1/chat/completions", "http://h/v1", {})
    assert "the server may not serve chat completions at this URL" in chat
    assert "--llmeval-base-url" in chat
    completions = refusal_hint(404, "", "http://h/v1/completions", "http://h/v1", {})
    assert "no completions API, which the mcq-loglik protocol needs" in completions
    assert "`protocol: mcq-string` or `protocol: judge`" in completions


def test_a_400_naming_a_field_names_what_sent_it() -> None:
    body = {"model": "m", "messages": [], "max_tokens": 5, "tool_choice": "required", "tools": []}
    sources = field_sources(body, extra_body=["tool_choice"])
    hint = refusal_hint(400, "Unsupported parameter: 'tool_choice'", "u", "http://h/v1", sources)
    assert hint == (
        "; the server does not take it: field 'tool_choice' was sent by --llmeval-extra-body"
    )
    hint = refusal_hint(422, "max_tokens must be at least 1", "u", "http://h/v1", sources)
    assert "field 'max_tokens' was sent by --llmeval-max-tokens" in hint
    scoring = field_sources({"prompt": "x", "echo": True, "logprobs": 1}, extra_body=[])
    hint = refusal_hint(400, "logprobs is not supported", "u", "http://h/v1", scoring)
    assert "field 'logprobs' was sent by the mcq-loglik protocol" in hint
    assert refusal_hint(400, "bad request", "u", "http://h/v1", sources) == ""
    assert refusal_hint(400, "the model is wrong", "u", "http://h/v1", sources) == ""


# -- through the runner -----------------------------------------------------------------------


def test_the_runner_says_did_you_mean_v1() -> None:
    with OpenAIServer() as srv:
        root = srv.url
        error = _error(root)  # the API lives under /v1
    assert "HTTP 404" in error
    assert error.endswith(f"; did you mean {root}/v1? (--llmeval-base-url)")


def test_the_runner_names_the_option_that_sent_a_refused_field() -> None:
    with OpenAIServer() as srv:
        message = {"error": {"message": "Unrecognized request argument supplied: tool_choice"}}
        srv.route("POST", srv.chat_path, Reply(status=400, json=message))
        error = _error(srv.base_url, extra_body={"tool_choice": "required"})
        assert len(srv.chat_bodies()) == 1  # not retried
    assert "HTTP 400" in error
    assert "field 'tool_choice' was sent by --llmeval-extra-body" in error


# -- the log-likelihood probe -----------------------------------------------------------------


def _probe(srv: OpenAIServer) -> tuple[str | None, OpenAIRunner]:
    runner = OpenAIRunner("test-model", srv.base_url, **FAST)

    async def go() -> str | None:
        try:
            return await runner.probe_loglikelihood()
        finally:
            await runner.aclose()

    return asyncio.run(go()), runner


def test_the_probe_passes_an_endpoint_with_prompt_logprobs() -> None:
    with OpenAIServer() as srv:
        reason, _ = _probe(srv)
        assert len(srv.completions_bodies()) == 1
    assert reason is None


def test_the_probe_names_what_a_server_without_prompt_logprobs_answered() -> None:
    with OpenAIServer() as srv:
        srv.route("POST", srv.completions_path, Reply(status=500, body="Internal Server Error"))
        reason, _ = _probe(srv)
        bodies = srv.completions_bodies()
    assert [b["max_tokens"] for b in bodies] == [0, 1]  # each once: never retried
    assert reason is not None
    assert "HTTP 500: Internal Server Error to max_tokens 0" in reason


def test_a_runner_told_there_are_no_logprobs_sends_nothing() -> None:
    with OpenAIServer() as srv:
        runner = OpenAIRunner("test-model", srv.base_url, **FAST)
        runner.no_loglik = "no prompt log-probabilities"

        async def go() -> None:
            try:
                await runner.loglikelihood([LoglikRequest(context="a", continuation=" b")])
            finally:
                await runner.aclose()

        with pytest.raises(NoLoglikelihood, match="no prompt log-probabilities"):
            asyncio.run(go())
        assert srv.completions_bodies() == []
