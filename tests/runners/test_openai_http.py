"""The ``openai`` runner against a real OpenAI-compatible loopback server (no httpx mocks).

pytest runs that use the runner go through ``runpytest_subprocess``: an in-process pytester
run restores ``sys.modules`` afterwards and would leave two sets of httpx exception classes.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.config.providers import parse_providers, route_model
from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.errors import ConfigError, RunnerError
from pytest_llmeval.core.models import Message, ToolCall, ToolSpec
from pytest_llmeval.runners.base import (
    Completion,
    GenerateRequest,
    Loglik,
    LoglikRequest,
    Runner,
    SupportsLoglikelihood,
)
from pytest_llmeval.runners.openai_http import OpenAIRunner
from pytest_llmeval.runners.prompt import PromptWrapper
from pytest_llmeval.runners.registry import RunnerRegistry
from pytest_llmeval.testing.openai_server import (
    ChatAnswer,
    CompletionAnswer,
    OpenAIServer,
    Token,
    tool_call,
    word_tokens,
)
from pytest_llmeval.testing.server import Reply, Request
from tests.conftest import read_jsonl, write_json, write_jsonl

pytestmark = pytest.mark.usefixtures("no_thread_leak")

FAST: dict[str, Any] = {"backoff_s": 0.01, "max_backoff_s": 0.05, "timeout_s": 5.0}
WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
    version="1.2.0",
)


@pytest.fixture
def srv() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


def user(text: str) -> GenerateRequest:
    return GenerateRequest(messages=[Message(role="user", content=text)])


def generate(base_url: str, request: GenerateRequest, **kwargs: Any) -> Completion:
    async def go() -> Completion:
        async with OpenAIRunner(
            kwargs.pop("model", "test-model"), base_url, **{**FAST, **kwargs}
        ) as runner:
            return await runner.generate(request)

    return asyncio.run(go())


def generate_error(base_url: str, request: GenerateRequest, **kwargs: Any) -> RunnerError:
    with pytest.raises(RunnerError) as info:
        generate(base_url, request, **kwargs)
    return info.value


def loglikelihood(base_url: str, requests: list[LoglikRequest], **kwargs: Any) -> list[Loglik]:
    """Score ``requests``, then the first one again with the same runner (which remembers a
    ``max_tokens`` fallback); returns ``len(requests) + 1`` results."""

    async def go() -> list[Loglik]:
        async with OpenAIRunner("test-model", base_url, **{**FAST, **kwargs}) as runner:
            first = await runner.loglikelihood(requests)
            return first + await runner.loglikelihood(requests[:1])

    return asyncio.run(go())


# -- chat completions ---------------------------------------------------------------------------


@pytest.mark.usefixtures("each_transport")
def test_text_answer_without_tools(srv: OpenAIServer) -> None:
    srv.chat_brain = lambda body: ChatAnswer(
        "four", usage={"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8}
    )
    completion = generate(srv.base_url, user("What is 2+2?"))

    assert (completion.text, completion.tool_calls, completion.finish_reason) == (
        "four",
        [],
        "stop",
    )
    assert completion.usage.model_dump() == {
        "prompt_tokens": 7,
        "completion_tokens": 1,
        "total_tokens": 8,
    }
    assert completion.latency_ms > 0
    [request] = srv.requests_to(srv.chat_path)
    assert request.json == {
        "model": "test-model",
        "messages": [{"role": "user", "content": "What is 2+2?"}],
        "temperature": 0.0,
    }
    assert "authorization" not in request.headers  # no key: nothing sent


@pytest.mark.usefixtures("each_transport")
def test_tools_params_and_extra_body(srv: OpenAIServer) -> None:
    srv.chat_brain = lambda body: ChatAnswer(
        tool_calls=[tool_call("get_weather", {"city": "Paris"}, id="call_w")]
    )
    request = GenerateRequest(
        messages=[Message(role="user", content="weather in paris?")],
        tools=[WEATHER],
        params={"tool_choice": "required", "max_tokens": 20},
    )
    completion = generate(
        srv.base_url,
        request,
        api_key="sk-test-key",
        temperature=0.7,
        top_p=0.9,
        max_tokens=64,
        seed=42,
        extra_body={"temperature": 0.0, "top_k": 1},
    )

    assert completion.tool_calls == [
        ToolCall(id="call_w", name="get_weather", arguments={"city": "Paris"})
    ]
    assert (completion.text, completion.finish_reason) == ("", "tool_calls")
    [sent] = srv.requests_to(srv.chat_path)
    assert sent.headers["authorization"] == "Bearer sk-test-key"
    assert sent.json["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]  # no "version"
    assert sent.json["tool_choice"] == "required"
    assert (sent.json["top_p"], sent.json["seed"], sent.json["top_k"]) == (0.9, 42, 1)
    assert sent.json["max_tokens"] == 20  # the request's params beat the runner's setting
    assert sent.json["temperature"] == 0.0  # extra_body is merged last


def test_multi_turn_messages_in_openai_format(srv: OpenAIServer) -> None:
    messages = [
        Message(role="system", content="Be brief."),
        Message(role="user", content="weather in paris and rome?"),
        Message(
            role="assistant",
            content=None,
            tool_calls=[
                ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"}),
                ToolCall(name="get_weather", arguments={}, arguments_error='{"city": "Ro'),
            ],
        ),
        Message(role="tool", tool_call_id="call_1", name="get_weather", content='{"temp_c": 18}'),
        Message(role="tool", name="get_weather", content='{"error": "invalid_arguments"}'),
    ]
    generate(srv.base_url, GenerateRequest(messages=messages, tools=[WEATHER]))

    [body] = srv.chat_bodies()
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "weather in paris and rome?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {  # no id from the model: one is made up; its own raw argument text goes back
                    "id": "call_2_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Ro'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 18}'},
        {"role": "tool", "tool_call_id": "call_2_1", "content": '{"error": "invalid_arguments"}'},
    ]


@pytest.mark.parametrize(
    ("raw", "arguments", "error"),
    [
        ('{"city": "Par', {}, '{"city": "Par'),
        ("[1, 2]", {}, "[1, 2]"),
        ('"Paris"', {}, '"Paris"'),
        ("", {}, None),
        ('{"city": "Paris"}', {"city": "Paris"}, None),
    ],
    ids=["truncated", "array", "string", "empty", "object"],
)
def test_tool_call_arguments_are_parsed_or_recorded(
    srv: OpenAIServer, raw: str, arguments: dict[str, Any], error: str | None
) -> None:
    srv.chat_brain = lambda body: ChatAnswer(tool_calls=[tool_call("get_weather", raw)])
    [call] = generate(srv.base_url, user("weather?")).tool_calls
    assert (call.name, call.arguments, call.arguments_error) == ("get_weather", arguments, error)
    assert call.id.startswith("call_")


def test_content_parts_arguments_objects_and_missing_usage(srv: OpenAIServer) -> None:
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "It is "}, {"type": "text", "text": "sunny."}],
        "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": {"x": 1}}}],
    }
    srv.chat_brain = lambda body: {"choices": [{"message": message, "finish_reason": "length"}]}
    completion = generate(srv.base_url, user("hi"))
    assert (completion.text, completion.finish_reason) == ("It is sunny.", "length")
    assert completion.tool_calls == [ToolCall(id="c", name="f", arguments={"x": 1})]
    assert completion.usage.total_tokens == 0


@pytest.mark.usefixtures("each_transport")
@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (Reply(malformed=True), "body is not JSON"),
        (Reply(json=[1]), "body: expected a JSON object, got an array"),
        (Reply(json={"id": "x"}), "field 'choices': expected a non-empty array, got nothing"),
        (
            Reply(json={"choices": [{"finish_reason": "stop"}]}),
            "'choices[0].message': expected an object",
        ),
        (
            Reply(json={"choices": [{"message": {"tool_calls": {"name": "f"}}}]}),
            "'choices[0].message.tool_calls': expected an array, got an object",
        ),
        (
            Reply(
                json={"choices": [{"message": {"tool_calls": [{"function": {"arguments": "{}"}}]}}]}
            ),
            "'choices[0].message.tool_calls[0].function.name': expected a non-empty string",
        ),
        (
            Reply(json={"error": {"message": "overloaded"}}),
            "the server answered an error: overloaded",
        ),
    ],
    ids=["malformed", "array", "no-choices", "no-message", "calls-object", "no-name", "error-200"],
)
def test_bodies_that_break_the_format_are_protocol_errors(
    srv: OpenAIServer, reply: Reply, expected: str
) -> None:
    srv.route("POST", srv.chat_path, reply)
    err = generate_error(srv.base_url, user("hi"))
    assert (err.kind, err.retryable) == ("protocol", False)
    assert expected in str(err)
    assert f"openai: POST {srv.base_url}/chat/completions" in str(err)
    assert len(srv.requests) == 1


# -- faults and retries -------------------------------------------------------------------------


@pytest.mark.usefixtures("each_transport")
def test_429_honours_retry_after_then_succeeds(srv: OpenAIServer) -> None:
    srv.script(srv.chat_path, [Reply(status=429, headers={"Retry-After": "0"})])
    # The backoff is huge: only honouring Retry-After: 0 keeps this fast.
    completion = generate(srv.base_url, user("hi"), backoff_s=30.0, max_backoff_s=30.0)
    assert completion.text == "hi"
    assert len(srv.requests) == 2


@pytest.mark.usefixtures("each_transport")
def test_server_errors_exhaust_the_retries(srv: OpenAIServer) -> None:
    srv.route("POST", srv.chat_path, Reply(status=500, body="boom"))
    err = generate_error(srv.base_url, user("hi"), max_retries=2)
    assert (err.kind, err.retryable) == ("http", True)
    assert "HTTP 500: boom" in str(err) and "gave up after 3 attempts" in str(err)
    assert len(srv.requests) == 3


@pytest.mark.usefixtures("each_transport")
def test_retries_are_bounded_in_time(srv: OpenAIServer) -> None:
    srv.route("POST", srv.chat_path, Reply(status=503, headers={"Retry-After": "30"}))
    err = generate_error(
        srv.base_url, user("hi"), max_retries=5, max_backoff_s=60.0, max_retry_time_s=1.0
    )
    assert "the next retry would end past 1s of retrying" in str(err)
    assert len(srv.requests) == 1


@pytest.mark.usefixtures("each_transport")
def test_slow_reply_times_out(srv: OpenAIServer) -> None:
    srv.route("POST", srv.chat_path, Reply(json={}, delay_s=5.0))
    err = generate_error(srv.base_url, user("hi"), timeout_s=0.2, max_retries=0)
    assert (err.kind, err.retryable) == ("timeout", True)
    assert "0.2s" in str(err)


@pytest.mark.usefixtures("each_transport")
def test_dropped_connection_is_retried(srv: OpenAIServer) -> None:
    srv.script(srv.chat_path, [Reply(drop=True)])
    assert generate(srv.base_url, user("hi")).text == "hi"
    srv.route("POST", srv.chat_path, Reply(drop=True))
    err = generate_error(srv.base_url, user("hi"), max_retries=1)
    assert (err.kind, err.retryable) == ("connection", True)
    assert len(srv.requests) == 4


@pytest.mark.usefixtures("each_transport")
def test_deterministic_mode_turns_the_first_429_into_an_error(srv: OpenAIServer) -> None:
    srv.script(srv.chat_path, [Reply(status=429, headers={"Retry-After": "0"})])
    err = generate_error(srv.base_url, user("hi"), deterministic=True)
    assert err.kind == "http" and "HTTP 429" in str(err)
    assert "not retried: deterministic mode" in str(err)
    assert len(srv.requests) == 1


@pytest.mark.usefixtures("each_transport")
def test_auth_errors_are_not_retried_and_never_show_the_key() -> None:
    key = "sk-PLANTED-0123456789"

    def echo_headers(request: Request) -> Reply:
        return Reply(status=401, json={"you_sent": request.headers["authorization"]})

    with OpenAIServer(api_key=key) as server:
        server.route("POST", server.chat_path, echo_headers)
        err = generate_error(server.base_url, user("hi"), api_key=key)
        [request] = server.requests
        assert request.headers["authorization"] == f"Bearer {key}"  # really sent
    assert (err.kind, err.retryable) == ("auth", False)
    text = f"{err} {err!r}"
    assert "HTTP 401" in text and "***" in text
    assert key not in text and key[3:15] not in text


# -- log-likelihoods ----------------------------------------------------------------------------

LOGPROBS = {"The": None, " cat": -1.25, " sat": -0.5, " on": -0.75, " the": -0.125, " mat": -2.0,
            " café": -3.0, " ok": -0.25}  # fmt: skip
TOP = {" mat": {" hat": -0.5, " mat": -2.0}}


def scripted_logprobs(body: dict[str, Any]) -> CompletionAnswer:
    tokens = [Token(t, LOGPROBS[t], TOP.get(t)) for t in word_tokens(body["prompt"])]
    return CompletionAnswer(prompt_tokens=tokens, generated=[Token(" ok", -0.25)])


@pytest.mark.usefixtures("each_transport")
def test_loglikelihood_sums_the_continuation_tokens(srv: OpenAIServer) -> None:
    srv.completions_brain = scripted_logprobs
    requests = [
        LoglikRequest(context="The cat", continuation=" sat on the"),
        LoglikRequest(context="The cat sat on the", continuation=" mat"),
        LoglikRequest(context="The ca", continuation="t sat"),  # " cat" straddles the boundary
        LoglikRequest(context="The cat", continuation=" café"),
    ]
    results = loglikelihood(srv.base_url, requests)

    expected = [
        (LOGPROBS[" sat"] + LOGPROBS[" on"] + LOGPROBS[" the"], 3, True),
        (LOGPROBS[" mat"], 1, False),  # " hat" was the top choice
        (LOGPROBS[" cat"] + LOGPROBS[" sat"], 2, True),
        (LOGPROBS[" café"], 1, True),
    ]
    assert [(r.logprob_sum, r.token_count, r.is_greedy) for r in results[:4]] == expected
    assert (results[3].char_length, results[3].byte_length) == (5, 6)
    assert results[4] == results[0]
    bodies = srv.completions_bodies()
    assert sorted(b["prompt"] for b in bodies[:4]) == sorted(
        r.context + r.continuation for r in requests
    )
    assert {(b["echo"], b["logprobs"], b["max_tokens"], b["temperature"]) for b in bodies} == {
        (True, 1, 0, 0.0)
    }


def test_loglikelihood_falls_back_to_max_tokens_1(srv: OpenAIServer) -> None:
    def no_zero(body: dict[str, Any]) -> CompletionAnswer | Reply:
        if body["max_tokens"] == 0:
            return Reply(status=400, json={"error": {"message": "max_tokens must be >= 1"}})
        return scripted_logprobs(body)

    srv.completions_brain = no_zero
    results = loglikelihood(srv.base_url, [LoglikRequest(context="The cat", continuation=" sat")])
    # The generated " ok" token is never scored.
    assert [(r.logprob_sum, r.token_count) for r in results] == [(-0.5, 1), (-0.5, 1)]
    assert [b["max_tokens"] for b in srv.completions_bodies()] == [0, 1, 1]


def test_loglikelihood_without_a_logprob_is_a_protocol_error(srv: OpenAIServer) -> None:
    srv.completions_brain = scripted_logprobs
    with pytest.raises(RunnerError) as info:
        loglikelihood(srv.base_url, [LoglikRequest(context="", continuation="The cat")])
    assert info.value.kind == "protocol"
    assert "has no log-probability" in str(info.value)


def test_runner_protocols() -> None:
    runner = OpenAIRunner("m", "http://127.0.0.1:9/v1")
    assert isinstance(runner, Runner) and isinstance(runner, SupportsLoglikelihood)


# -- fingerprint, settings, providers -----------------------------------------------------------


def test_fingerprint_never_holds_the_key() -> None:
    runner = OpenAIRunner(
        "gpt-x",
        "https://bob:hunter22@api.example/v1/?api-version=2",
        api_key="sk-secret-key",
        seed=7,
        extra_body={"top_k": 1},
    )
    assert runner.fingerprint() == {
        "type": "openai",
        "model": "gpt-x",
        "base_url": "https://api.example/v1",
        "temperature": 0.0,
        "top_p": None,
        "max_tokens": None,
        "seed": 7,
        "extra_body": {"top_k": 1},
        "prompt_wrapper_sha256": None,
    }
    assert runner._chat_url == "https://bob:hunter22@api.example/v1/chat/completions?api-version=2"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"model": ""},
        {"base_url": "ftp://x/v1"},
        {"temperature": -1.0},
        {"top_p": 0.0},
        {"max_tokens": 0},
        {"timeout_s": 0},
    ],
)
def test_bad_runner_settings_are_config_errors(kwargs: dict[str, Any]) -> None:
    args = {"model": "m", "base_url": "http://127.0.0.1:9/v1", **kwargs}
    with pytest.raises(ConfigError):
        OpenAIRunner(args.pop("model"), args.pop("base_url"), **args)


def test_providers_parse_and_route_by_longest_prefix() -> None:
    providers = parse_providers(
        [
            "# comment",
            "gemini  https://g.example/v1beta/openai  GEMINI_KEY  gemini-",
            "local http://127.0.0.1:8000/v1 - llama-,tiny-; big http://big.example BIG tiny-big-",
        ]
    )
    assert [(p.name, p.key_env, p.model_prefixes) for p in providers] == [
        ("gemini", "GEMINI_KEY", ("gemini-",)),
        ("local", None, ("llama-", "tiny-")),
        ("big", "BIG", ("tiny-big-",)),
    ]
    default = ("https://api.openai.com/v1", "OPENAI_API_KEY")
    routes = {
        model: route_model(model, providers, *default).provider
        for model in ["gemini-2.5-pro", "tiny-1", "tiny-big-2", "gpt-4o", "xgemini-"]
    }
    assert routes == {
        "gemini-2.5-pro": "gemini",
        "tiny-1": "local",
        "tiny-big-2": "big",
        "gpt-4o": None,
        "xgemini-": None,
    }


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("gemini https://g.example GEMINI_KEY", "expected 4 fields"),
        ("g ftp://g.example KEY g-", "BASE_URL must be an absolute http(s) URL"),
        ("g https://g.example 1KEY g-", "KEY_ENV must be an environment variable name"),
        ("g https://g.example KEY ,", "at least one model-name prefix"),
        ("a https://a.example - x-; b https://b.example - x-", "claimed by providers 'a' and 'b'"),
        ("a https://a.example - x-; a https://b.example - y-", "listed twice"),
    ],
)
def test_bad_provider_entries(entry: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_providers(entry)


def test_bad_provider_setting_is_a_usage_error(pytester: pytest.Pytester) -> None:
    quiet = ("-p", "no:rerunfailures")  # it starts a socket thread in every xdist-capable session
    with pytest.raises(pytest.UsageError, match="llmeval_providers: provider entry 'x y'"):
        pytester.parseconfigure(*quiet, "--llmeval-providers", "x y")
    with pytest.raises(pytest.UsageError, match="--llmeval-extra-body takes a JSON object"):
        pytester.parseconfigure(*quiet, "--llmeval-extra-body", "[1]")
    with pytest.raises(pytest.UsageError, match="needs --llmeval-model"):
        pytester.parseconfigure(*quiet, "--llmeval-runner", "openai")


def make_settings(tmp_path: Path, **values: Any) -> Settings:
    return Settings(
        rootdir=tmp_path,
        cassettes=tmp_path / "cassettes",
        fixtures=tmp_path / "fixtures",
        seed_manifest=tmp_path / "seed.json",
        output_root=tmp_path / "runs",
        **values,
    )


def test_url_settings_are_written_without_credentials(tmp_path: Path) -> None:
    providers = parse_providers("p https://u:pw-SECRET@p.example/v1?key=Q-SECRET - p-")
    settings = make_settings(
        tmp_path, base_url="https://bob:B-SECRET@api.example/v1?key=K-SECRET", providers=providers
    )
    public = settings.public_dict()
    assert public["base_url"] == "https://api.example/v1"
    assert public["providers"][0]["base_url"] == "https://p.example/v1"
    assert "SECRET" not in json.dumps(public)
    assert settings.base_url.startswith("https://bob:")  # the runner still gets the real URL


def test_the_factory_routes_models_to_providers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEFAULT_KEY", "sk-default-1234")
    monkeypatch.setenv("LOCAL_KEY", "sk-local-5678")
    with OpenAIServer(models=None) as default, OpenAIServer(models=None) as local:
        providers = parse_providers(f"local {local.base_url} LOCAL_KEY tiny-")
        seen = []
        for model in ("tiny-1", "gpt-4o"):
            settings = make_settings(
                tmp_path,
                runner="openai",
                model=model,
                base_url=default.base_url,
                api_key_env="DEFAULT_KEY",
                providers=providers,
                timeout=5.0,
            )
            runner = RunnerRegistry().create(settings)
            assert isinstance(runner, OpenAIRunner)
            seen.append((runner.provider, runner.fingerprint()["base_url"]))

            async def go(runner: OpenAIRunner = runner) -> None:
                async with runner:
                    await runner.generate(user("hi"))

            asyncio.run(go())
        assert seen == [("local", local.base_url), (None, default.base_url)]
        [to_local] = local.requests
        [to_default] = default.requests
    assert (to_local.json["model"], to_local.headers["authorization"]) == (
        "tiny-1",
        "Bearer sk-local-5678",
    )
    assert (to_default.json["model"], to_default.headers["authorization"]) == (
        "gpt-4o",
        "Bearer sk-default-1234",
    )
    dumped = json.dumps(settings.model_dump(mode="json"))
    assert "sk-" not in dumped


# -- prompt wrappers ----------------------------------------------------------------------------

J2 = """{"system": "{{ system }} Tools: {% for t in tools %}{{ t.name }} {% endfor %}",
 "user": "Q: {{ user }}", "unused": null}"""


def test_j2_wrapper_rewrites_the_first_system_and_user_message(
    srv: OpenAIServer, tmp_path: Path
) -> None:
    path = tmp_path / "wrap.j2"
    path.write_text(J2.replace(', "unused": null', ""), encoding="utf-8")
    request = GenerateRequest(
        messages=[
            Message(role="system", content='Say "hi".'),
            Message(role="user", content="line one\nline two"),
            Message(role="assistant", content="ok"),
            Message(role="user", content="and again"),
        ],
        tools=[WEATHER],
    )
    generate(srv.base_url, request, prompt_wrapper=path)
    [body] = srv.chat_bodies()
    assert body["messages"] == [
        {"role": "system", "content": 'Say "hi". Tools: get_weather '},
        {"role": "user", "content": "Q: line one\nline two"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "and again"},
    ]


def test_tmpl_wrapper_flattens_into_the_user_message(srv: OpenAIServer, tmp_path: Path) -> None:
    path = tmp_path / "wrap.tmpl"
    path.write_text("[SYS] $system\n[USER] $user\n[TOOLS] $tools costs $$0", encoding="utf-8")
    request = GenerateRequest(
        messages=[Message(role="system", content="Be brief."), Message(role="user", content="hi")],
        tools=[WEATHER],
    )
    generate(srv.base_url, request, prompt_wrapper=path)
    [body] = srv.chat_bodies()
    tools = json.dumps([{"name": "get_weather", "description": WEATHER.description,
                         "parameters": WEATHER.parameters}])  # fmt: skip
    assert body["messages"] == [
        {"role": "user", "content": f"[SYS] Be brief.\n[USER] hi\n[TOOLS] {tools} costs $0"}
    ]


def test_wrapper_adds_or_drops_the_system_message(tmp_path: Path) -> None:
    path = tmp_path / "w.j2"
    path.write_text('{"system": {{ "S" | tojson }}, "user": "{{ user }}!"}', encoding="utf-8")
    wrapper = PromptWrapper.load(path)
    added = wrapper.apply([Message(role="user", content="hi")], [])
    assert [(m.role, m.content) for m in added] == [("system", "S"), ("user", "hi!")]
    path.write_text('{"user": "{{ user }}"}', encoding="utf-8")
    dropped = PromptWrapper.load(path).apply(
        [Message(role="system", content="x"), Message(role="user", content="hi")], []
    )
    assert [(m.role, m.content) for m in dropped] == [("user", "hi")]


def test_wrapper_sha_is_in_the_fingerprint_and_follows_the_file(tmp_path: Path) -> None:
    path = tmp_path / "w.tmpl"
    path.write_text("$user", encoding="utf-8")
    first = OpenAIRunner("m", "http://127.0.0.1:9/v1", prompt_wrapper=path).fingerprint()
    path.write_text("Q: $user", encoding="utf-8")
    second = OpenAIRunner("m", "http://127.0.0.1:9/v1", prompt_wrapper=path).fingerprint()
    assert first["prompt_wrapper_sha256"] != second["prompt_wrapper_sha256"]
    assert second["prompt_wrapper_sha256"] == PromptWrapper.load(path).sha256
    assert len(second["prompt_wrapper_sha256"]) == 64


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("w.txt", "$user", "must end in .j2"),
        ("w.tmpl", "$user $nope", "unknown variable $nope"),
        ("w.tmpl", "costs $5", "write $$ for a literal $"),
        ("w.j2", '{"user": "{{ user }"}', "line 1"),
        ("w.j2", '{"user": "{{ nope }}"}', "'nope' is undefined"),
        ("w.j2", "Q: {{ user }}", "must render to a JSON object"),
        ("w.j2", '{"user": 3}', '"user" must render to a string'),
        ("w.j2", '{"user": "u", "sys": "s"}', "unknown key(s) ['sys']"),
    ],
)
def test_bad_wrappers_fail_at_load(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        PromptWrapper.load(path)
    assert message in str(info.value) and str(path) in str(info.value)


# -- through pytest -----------------------------------------------------------------------------

CITY = {"type": "object", "properties": {"city": {"type": "string"}}}
REGISTRY = {
    "tools": [{"name": "get_weather", "description": "Weather for a city.", "parameters": CITY}]
}
FIXTURES = [{"name": "get_weather", "key": {"city": "Paris"}, "result": {"temp_c": 18}}]
CASES = [
    {"id": "math", "input": "What is 2+2?", "expected_output": "4"},
    {"id": "weather", "input": "Weather in Paris?", "expected_output": "It is 18C in Paris.",
     "tools": ["get_weather"]},
    {"id": "wrong", "input": "What is 3+3?", "expected_output": "6"},
    {"id": "explode", "input": "explode", "expected_output": "never"},
]  # fmt: skip


def weather_brain(body: dict[str, Any]) -> ChatAnswer | Reply:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return ChatAnswer(f"It is {json.loads(last['content'])['temp_c']}C in Paris.")
    text = last["content"]
    if "explode" in text:
        return Reply(status=500, headers={"Retry-After": "0"}, json={"error": "boom"})
    if "Weather" in text:
        return ChatAnswer(tool_calls=[tool_call("get_weather", {"city": "Paris"})])
    return ChatAnswer("4")


def test_golden_file_against_the_server(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    write_json(pytester, "tools.json", REGISTRY)
    write_jsonl(pytester, "fixtures/tools/weather.jsonl", FIXTURES)
    with OpenAIServer(weather_brain) as server:
        result = pytester.runpytest_subprocess(
            "--llmeval-runner", "openai", "--llmeval-base-url", server.base_url,
            "--llmeval-model", "test-model", "--llmeval-tool-registry", "tools.json",
            "--llmeval-run-dir", "run", "-v", "-p", "no:cacheprovider",
        )  # fmt: skip
        bodies = server.chat_bodies()
    result.assert_outcomes(passed=2, failed=1, errors=1)
    rows = {r["case_id"]: r for r in read_jsonl(pytester.path / "run/results.jsonl")}
    assert rows["weather"]["tool_calls"][0]["params"] == {"city": "Paris"}
    assert rows["weather"]["tool_calls"][0]["source"] == "fixture"
    assert rows["math"]["usage"]["total_tokens"] > 0
    assert rows["wrong"]["outcome"] == "failed"
    assert rows["explode"]["outcome"] == "error"
    assert (
        "HTTP 500" in rows["explode"]["error"]
        and "gave up after 5 attempts" in rows["explode"]["error"]
    )
    assert sum("explode" in b["messages"][-1].get("content", "") for b in bodies) == 5
    [second_turn] = [b for b in bodies if b["messages"][-1]["role"] == "tool"]
    assistant, tool = second_turn["messages"][-2:]
    [call] = assistant["tool_calls"]
    assert call["type"] == "function" and json.loads(call["function"]["arguments"]) == {
        "city": "Paris"
    }
    assert tool == {"role": "tool", "tool_call_id": call["id"], "content": '{"temp_c": 18}'}
    assert second_turn["tools"][0]["function"]["name"] == "get_weather"


def test_the_key_never_reaches_errors_logs_run_dir_or_cassettes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-PLANTED-a1b2c3d4e5f6"
    monkeypatch.setenv("PLANTED_KEY", key)
    write_json(
        pytester,
        "qa.golden.json",
        [CASES[0], {"id": "leak", "input": "leak", "expected_output": "x"}],
    )

    def leaky(request: Request) -> Reply:
        if "leak" in request.text:  # a server that echoes the credentials it was sent
            auth = request.headers["authorization"]
            return Reply(status=400, json={"error": {"message": f"bad key: {auth}"}})
        return Reply(json={"choices": [{"message": {"role": "assistant", "content": "4"}}]})

    with OpenAIServer(api_key=key) as server:
        server.route("POST", server.chat_path, leaky)
        result = pytester.runpytest_subprocess(
            "--llmeval-runner", "openai", "--llmeval-base-url", server.base_url,
            "--llmeval-model", "test-model", "--llmeval-api-key-env", "PLANTED_KEY",
            "--llmeval-record", "new", "--llmeval-run-dir", "run", "-rA",
            "--log-level", "DEBUG", "-p", "no:cacheprovider",
        )  # fmt: skip
        sent = {r.headers.get("authorization") for r in server.requests}
    result.assert_outcomes(passed=1, errors=1)
    assert sent == {f"Bearer {key}"}
    cassettes = list((pytester.path / "fixtures/cassettes").rglob("*.json"))
    assert len(cassettes) == 2  # runner.json and the one good call
    files = [p for p in (pytester.path / "run").rglob("*") if p.is_file()] + cassettes
    text = result.stdout.str() + result.stderr.str() + "".join(p.read_text() for p in files)
    assert "HTTP 400" in text and "bad key: ***" in text  # the server's echo, redacted
    assert key not in text and key[3:] not in text


@pytest.mark.parametrize("name", ["aiohttp", "httpx"])
def test_the_transport_setting_reaches_the_runner_and_not_the_fingerprint(
    tmp_path: Path, name: str
) -> None:
    with OpenAIServer() as srv:
        settings = make_settings(
            tmp_path, runner="openai", model="test-model", base_url=srv.base_url,
            http_transport=name, timeout=5.0,
        )  # fmt: skip
        runner = RunnerRegistry().create(settings)
        assert isinstance(runner, OpenAIRunner)

        async def go() -> tuple[str, str]:
            async with runner:
                text = (await runner.generate(user("hi"))).text
                client = runner._http._client
                assert client is not None
                return text, type(client._transport).__module__

        text, module = asyncio.run(go())
        url = srv.base_url
    assert text == "hi"
    assert module.startswith("pytest_llmeval" if name == "aiohttp" else "httpx")
    default = make_settings(tmp_path, runner="openai", model="test-model", base_url=url)
    assert runner.fingerprint() == RunnerRegistry().create(default).fingerprint()


def test_an_unknown_transport_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown HTTP transport 'curl'"):
        OpenAIRunner("m", "http://127.0.0.1:9/v1", transport="curl")


def test_a_response_over_the_size_cap_is_an_error_naming_the_limit() -> None:
    """The body is not read past --llmeval-max-response-bytes."""
    big = Reply(json={"choices": [{"message": {"content": "x" * 5000}}]})
    with OpenAIServer(lambda body: big) as server:
        runner = OpenAIRunner("test-model", server.base_url, max_response_bytes=1000)
        request = GenerateRequest(messages=[Message(role="user", content="hi")])
        with pytest.raises(RunnerError, match=r"over the 1000-byte limit") as caught:
            asyncio.run(_generate_once(runner, request))
    assert "it declares 50" in str(caught.value) and not caught.value.retryable


async def _generate_once(runner: OpenAIRunner, request: Any) -> Any:
    try:
        return await runner.generate(request)
    finally:
        await runner.aclose()
