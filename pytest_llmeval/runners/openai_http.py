"""The ``openai`` runner: any OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp, Ollama ...).

:meth:`OpenAIRunner.generate` POSTs ``{base_url}/chat/completions``::

    {"model", "messages", "tools"?, "temperature", "top_p"?, "max_tokens"?, "seed"?,
     ...request.params (tool_choice ...), ...extra_body}

Later keys win: a request's ``params`` override the runner's decoding settings, and
``extra_body`` is merged last. ``tools`` (OpenAI function form, without ``ToolSpec.version``)
is sent only when the request offers tools; unset ``top_p``/``max_tokens``/``seed`` are not
sent. Messages go out in OpenAI form: an assistant turn's calls as
``tool_calls: [{"id", "type": "function", "function": {"name", "arguments": <JSON text>}}]``
(the model's own raw text when its arguments were not a JSON object), a tool result as
``{"role": "tool", "tool_call_id", "content"}``. A call the model gave no id gets
``call_<message index>_<call index>``, and a tool result without ``tool_call_id`` answers the
first unanswered call of the same name (else the first unanswered call).

The answer's ``choices[0].message`` becomes the :class:`Completion`: ``content`` (a string, or
a list of text parts) is the text; each ``tool_calls`` entry a :class:`ToolCall` whose
``function.arguments`` is parsed as JSON (an object given as is is taken too; empty text means
``{}``); arguments that are not a JSON object give ``arguments={}`` and
``arguments_error=<the raw text>``, never an exception. ``finish_reason`` and ``usage`` are
copied; ``latency_ms`` is the wall time of the successful HTTP attempt.

:meth:`OpenAIRunner.loglikelihood` scores continuations through ``{base_url}/completions``
with ``prompt = context + continuation``, ``echo: true``, ``logprobs: 1``, ``max_tokens: 0``
and ``temperature: 0``. A server that rejects ``max_tokens: 0`` (HTTP 400 or 422) is asked
again with ``max_tokens: 1``, and every later call of this runner uses 1; the generated token
is never scored (only tokens whose ``text_offset`` lies inside the prompt are). As in
lm-evaluation-harness, the context's trailing whitespace belongs to the continuation: the
continuation's tokens are those from the first one starting at ``len(context.rstrip())``;
when no token starts exactly there (a token straddles the boundary), the straddling token
counts as part of the continuation. ``is_greedy`` compares each token with its
``top_logprobs`` entry (``None`` when the server sends none). A missing ``text_offset`` is
rebuilt from the token texts when they spell the prompt exactly. ``extra_body`` is merged
into these requests too, but cannot change ``model``, ``prompt``, ``echo``, ``logprobs``,
``max_tokens`` or ``temperature``.

Transport, retries and faults: :mod:`pytest_llmeval.runners.http` (429/5xx/connection errors
and timeouts retried with backoff honouring ``Retry-After``, bounded by ``max_retries`` and
``max_retry_time_s``; with ``deterministic=True`` the first of them is an error). A 2xx body
that breaks the format is a ``protocol`` error. The API key goes out only as
``Authorization: Bearer <key>``; it is never in :meth:`fingerprint`, an error message or
anything else this runner returns.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit, urlunsplit

import httpx

from pytest_llmeval.config.providers import route_model
from pytest_llmeval.core.clip import clip
from pytest_llmeval.core.errors import ConfigError, RunnerError
from pytest_llmeval.core.models import Message, ToolCall, ToolSpec, Usage
from pytest_llmeval.core.redact import mask_named, named_secrets, public_url, secret_values
from pytest_llmeval.inputs.loading import a_json_type
from pytest_llmeval.limits import Limiter
from pytest_llmeval.runners.base import (
    Completion,
    GenerateRequest,
    Loglik,
    LoglikRequest,
    NoLoglikelihood,
)
from pytest_llmeval.runners.endpoint_hints import field_sources, refusal_hint
from pytest_llmeval.runners.http import (
    DEFAULT_MAX_RESPONSE_BYTES,
    AsyncClosing,
    JsonHttp,
    check_http_url,
    secrets_of,
)
from pytest_llmeval.runners.prompt import PromptWrapper

if TYPE_CHECKING:
    from pytest_llmeval.config.settings import Settings

__all__ = ["DEFAULT_BASE_URL", "OpenAIRunner", "openai_messages", "openai_tools"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_FIXED_SCORING_KEYS = ("model", "prompt", "echo", "logprobs", "max_tokens", "temperature")
_REFUSALS = (400, 404, 422)
"""Statuses whose error names its fix (:mod:`~pytest_llmeval.runners.endpoint_hints`)."""
_PROBE = LoglikRequest(context="The sky is", continuation=" blue")


class OpenAIRunner(AsyncClosing):
    """A :class:`~pytest_llmeval.runners.base.Runner` for OpenAI-compatible HTTP APIs.

    ``supports_response_format``: a judge asks it for verdicts with a strict JSON Schema.

    Args:
        model: The model name sent with every request.
        base_url: The API root (``https://api.openai.com/v1``, ``http://127.0.0.1:8000/v1``).
        api_key: Sent as ``Authorization: Bearer``; ``None`` or empty sends no such header.
        temperature, top_p, max_tokens, seed: Decoding settings (``None``: not sent).
        extra_body: Merged last into every request body.
        prompt_wrapper: A :class:`PromptWrapper` (or the path of one) applied to each request.
        deterministic: Never retry: the first 429/5xx/timeout/dropped connection is an error.
        timeout_s: Deadline of one HTTP attempt.
        max_retries, backoff_s, max_backoff_s, max_retry_time_s: Retry bounds (see
            :class:`~pytest_llmeval.runners.http.JsonHttp`).
        headers: Extra request headers; their values are kept out of messages like the key.
        loglik_concurrency: ``/completions`` requests in flight for one :meth:`loglikelihood`.
        provider: The provider's name when routing picked one (informational).
        limiter: The session's limits every attempt waits for (:mod:`pytest_llmeval.limits`).
        transport: ``"aiohttp"`` or ``"httpx"`` (:mod:`pytest_llmeval.runners.transport`);
            ``None``: the default, aiohttp.
        max_response_bytes: Largest response body read; a longer one is the case's error.
        secrets: Other secret values (``--llmeval-secret-env``) that may stand in the base
            URL's path; masked, with the API key, where the URL is shown or fingerprinted.
    """

    name = "openai"

    def __init__(
        self,
        model: str,
        base_url: str = DEFAULT_BASE_URL,
        *,
        api_key: str | None = None,
        temperature: float = 0.0,
        top_p: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        extra_body: Mapping[str, Any] | None = None,
        prompt_wrapper: PromptWrapper | Path | str | None = None,
        deterministic: bool = False,
        timeout_s: float = 60.0,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        max_backoff_s: float = 20.0,
        max_retry_time_s: float | None = 120.0,
        headers: Mapping[str, str] | None = None,
        loglik_concurrency: int = 8,
        provider: str | None = None,
        limiter: Limiter | None = None,
        transport: str | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        secrets: Sequence[str] = (),
    ) -> None:
        if not model:
            raise ConfigError("openai: a model name is needed (--llmeval-model)")
        check_http_url(base_url, self.name, "base_url")
        if not (math.isfinite(temperature) and temperature >= 0):
            raise ConfigError(f"openai: temperature must be >= 0, got {temperature}")
        if top_p is not None and not 0 < top_p <= 1:
            raise ConfigError(f"openai: top_p must be in (0, 1], got {top_p}")
        if max_tokens is not None and max_tokens < 1:
            raise ConfigError(f"openai: max_tokens must be 1 or more, got {max_tokens}")
        if loglik_concurrency < 1:
            raise ConfigError("openai: loglik_concurrency must be 1 or more")
        self.model = model
        self.base_url = _join(base_url, "")
        self.temperature = float(temperature)
        self.top_p = top_p
        self.max_tokens = max_tokens
        self.seed = seed
        self.extra_body: dict[str, Any] = dict(extra_body or {})
        if isinstance(prompt_wrapper, (str, Path)):
            prompt_wrapper = PromptWrapper.load(prompt_wrapper)
        self.prompt_wrapper = prompt_wrapper
        self.deterministic = deterministic
        self.provider = provider
        self.loglik_concurrency = loglik_concurrency
        request_headers = dict(headers or {})
        self._url_secrets = [*([api_key] if api_key else []), *secrets]
        """Masked in the URL this runner shows and fingerprints (a gateway's key in the path)."""
        if api_key:
            request_headers["Authorization"] = f"Bearer {api_key}"
        self._http = JsonHttp(
            self.name,
            timeout_s=timeout_s,
            max_retries=max_retries,
            backoff_s=backoff_s,
            max_backoff_s=max_backoff_s,
            max_retry_time_s=max_retry_time_s,
            deterministic=deterministic,
            headers=request_headers,
            secrets=[
                *secrets_of(self.base_url, request_headers),
                *([api_key] if api_key else []),
                *named_secrets(self.extra_body),  # a backend's error may echo the body
            ],
            limiter=limiter,
            transport=transport,
            max_response_bytes=max_response_bytes,
            backend=public_url(self.base_url, self._url_secrets),
        )
        self._chat_url = _join(self.base_url, "/chat/completions")
        self._completions_url = _join(self.base_url, "/completions")
        self._max_tokens_zero_ok = True
        self.no_loglik: str | None = None
        """Set (to the reason) when the endpoint is known to give no prompt log-probabilities
        (the session's probe, with a manifest's ``loglik_fallback``)."""

    @classmethod
    def from_settings(cls, settings: Settings, limiter: Limiter | None = None) -> OpenAIRunner:
        """The runner ``--llmeval-runner openai`` builds: the model's provider (by name
        prefix, else ``--llmeval-base-url``), its key read from the environment now."""
        if not settings.model:
            raise ConfigError("--llmeval-runner openai needs --llmeval-model NAME")
        route = route_model(
            settings.model, settings.providers, settings.base_url, settings.api_key_env
        )
        api_key = os.environ.get(route.key_env, "").strip() if route.key_env else ""
        return cls(
            settings.model,
            route.base_url,
            api_key=api_key or None,
            temperature=settings.temperature,
            top_p=settings.top_p,
            max_tokens=settings.max_tokens,
            seed=settings.seed,
            extra_body=settings.extra_body,
            prompt_wrapper=settings.prompt_wrapper,
            deterministic=settings.deterministic,
            timeout_s=settings.timeout,
            max_retry_time_s=settings.timeout,
            provider=route.provider,
            limiter=limiter,
            transport=settings.http_transport,
            max_response_bytes=settings.max_response_bytes,
            secrets=secret_values(settings.secret_env),
        )

    def fingerprint(self) -> dict[str, Any]:
        """What decides the answers; the URL without user-info or query, never the key."""
        return {
            "type": self.name,
            "model": self.model,
            "base_url": public_url(self.base_url, self._url_secrets),
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "extra_body": mask_named(self.extra_body),  # sent as given; never its api_key
            "prompt_wrapper_sha256": self.prompt_wrapper.sha256 if self.prompt_wrapper else None,
        }

    # -- chat completions ---------------------------------------------------------------------

    supports_response_format = True

    def chat_body(self, request: GenerateRequest) -> dict[str, Any]:
        """The JSON body :meth:`generate` sends for ``request``."""
        messages = request.messages
        if self.prompt_wrapper is not None:
            messages = self.prompt_wrapper.apply(messages, request.tools)
        body: dict[str, Any] = {"model": self.model, "messages": openai_messages(messages)}
        if request.tools:
            body["tools"] = openai_tools(request.tools)
        body["temperature"] = self.temperature
        for key, value in (
            ("top_p", self.top_p),
            ("max_tokens", self.max_tokens),
            ("seed", self.seed),
        ):
            if value is not None:
                body[key] = value
        body.update(request.params)
        body.update(self.extra_body)
        return body

    async def generate(self, request: GenerateRequest) -> Completion:
        """One chat completion; faults raise :class:`RunnerError`."""
        body = self.chat_body(request)
        url = self._chat_url
        response, elapsed_ms = await self._http.post_json(url, body, pass_statuses=_REFUSALS)
        if response.status_code in _REFUSALS:
            self._refused(url, response, body, request.params)
        return self._parse_chat(response, elapsed_ms, request.keep_message)

    def _parse_chat(
        self, response: httpx.Response, elapsed_ms: float, keep_message: bool = False
    ) -> Completion:
        where = self._chat_url
        data = self._json_object(response, where)
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            self._protocol_error(where, _missing_or_type("choices", "a non-empty array", data))
        choice = choices[0]
        if not isinstance(choice, dict):
            self._protocol_error(
                where, f"field 'choices[0]': expected an object, got {a_json_type(choice)}"
            )
        message = choice.get("message")
        if not isinstance(message, dict):
            self._protocol_error(
                where, _missing_or_type("choices[0].message", "an object", choice, "message")
            )
        text = self._content(message.get("content"), where)
        raw_calls = message.get("tool_calls")
        if raw_calls is None:
            raw_calls = []
        if not isinstance(raw_calls, list):
            self._protocol_error(
                where,
                "field 'choices[0].message.tool_calls': expected an array, got "
                + a_json_type(raw_calls),
            )
        calls = [self._tool_call(i, raw, where) for i, raw in enumerate(raw_calls)]
        finish = choice.get("finish_reason")
        usage = _usage(data.get("usage"))
        if isinstance(usage, str):
            self._protocol_error(where, usage)
        return Completion(
            text=text,
            tool_calls=calls,
            finish_reason=finish if isinstance(finish, str) else None,
            usage=usage,
            latency_ms=elapsed_ms,
            message=message if keep_message else None,
        )

    def _content(self, content: Any, where: str) -> str:
        if content is None or isinstance(content, str):
            return content or ""
        if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
            return "".join(
                part["text"]
                for part in content
                if isinstance(part, dict) and isinstance(part.get("text"), str)
            )
        self._protocol_error(
            where,
            f"field 'choices[0].message.content': expected a string, got {a_json_type(content)}",
        )

    def _tool_call(self, index: int, raw: Any, where: str) -> ToolCall:
        field = f"choices[0].message.tool_calls[{index}]"
        if not isinstance(raw, dict):
            self._protocol_error(
                where, f"field '{field}': expected an object, got {a_json_type(raw)}"
            )
        function = raw.get("function")
        if not isinstance(function, dict):
            self._protocol_error(
                where, _missing_or_type(f"{field}.function", "an object", raw, "function")
            )
        name = function.get("name")
        if not isinstance(name, str) or not name:
            self._protocol_error(
                where,
                f"field '{field}.function.name': expected a non-empty string, got "
                + (repr(name) if isinstance(name, str) else a_json_type(name)),
            )
        call_id = raw.get("id")
        arguments, error = parse_arguments(function.get("arguments"))
        return ToolCall(
            id=call_id if isinstance(call_id, str) else "",
            name=name,
            arguments=arguments,
            arguments_error=error,
        )

    # -- log-likelihoods ----------------------------------------------------------------------

    async def loglikelihood(self, requests: list[LoglikRequest]) -> list[Loglik]:
        """Score each continuation given its context (see the module docs); in order. After
        a probe found no prompt log-probabilities (:attr:`no_loglik`), nothing is sent:
        :class:`NoLoglikelihood`."""
        if self.no_loglik is not None:
            raise NoLoglikelihood(self.no_loglik)
        semaphore = asyncio.Semaphore(self.loglik_concurrency)

        async def one(request: LoglikRequest) -> Loglik:
            async with semaphore:
                return await self._loglik(request)

        tasks = [asyncio.ensure_future(one(r)) for r in requests]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    def completions_body(self, request: LoglikRequest, max_tokens: int = 0) -> dict[str, Any]:
        """The JSON body :meth:`loglikelihood` sends for ``request``."""
        body = {k: v for k, v in self.extra_body.items() if k not in _FIXED_SCORING_KEYS}
        body.update(
            model=self.model,
            prompt=request.context + request.continuation,
            echo=True,
            logprobs=1,
            max_tokens=max_tokens,
            temperature=0.0,
        )
        return body

    async def _loglik(self, request: LoglikRequest) -> Loglik:
        url = self._completions_url
        body = self.completions_body(request, 0 if self._max_tokens_zero_ok else 1)
        response, _ = await self._http.post_json(url, body, pass_statuses=_REFUSALS)
        if self._max_tokens_zero_ok and response.status_code in (400, 422):
            self._max_tokens_zero_ok = False
            body = self.completions_body(request, 1)
            response, _ = await self._http.post_json(url, body, pass_statuses=_REFUSALS)
        if response.status_code in _REFUSALS:
            self._refused(url, response, body)
        return self._parse_logprobs(request, response)

    @property
    def scoring_endpoint(self) -> str:
        """The ``/completions`` URL log-likelihoods are asked at, without secrets."""
        return public_url(self._completions_url, self._url_secrets)

    async def probe_loglikelihood(self) -> str | None:
        """Why ``/completions`` gives no prompt log-probabilities (``echo`` with ``logprobs``),
        or ``None`` when it gives them or could not be asked (not reachable, timed out: the
        cases then meet that fault themselves). One request, a second with ``max_tokens: 1``
        when ``max_tokens: 0`` is refused (any 4xx/5xx); neither is retried. A server that
        takes only ``max_tokens: 1`` gets it from every later call."""
        url, failures = self._completions_url, []
        for max_tokens in (0, 1) if self._max_tokens_zero_ok else (1,):
            body = self.completions_body(_PROBE, max_tokens)
            try:
                response = await self._probe_post(url, body)
            except RunnerError:
                return None
            if not response.is_success:
                snippet = self._http.snippet(response)
                failures.append(f"HTTP {response.status_code}{snippet} to max_tokens {max_tokens}")
                continue
            try:
                self._parse_logprobs(_PROBE, response)
            except RunnerError as exc:
                failures.append(
                    f"max_tokens {max_tokens} answered no usable log-probabilities: {exc}"
                )
                return "; ".join(failures)
            self._max_tokens_zero_ok = max_tokens == 0
            return None
        return "; ".join(failures)

    def _parse_logprobs(self, request: LoglikRequest, response: httpx.Response) -> Loglik:
        where = self._completions_url
        data = self._json_object(response, where)
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            self._protocol_error(where, _missing_or_type("choices", "a non-empty array", data))
        logprobs = choices[0].get("logprobs")
        if not isinstance(logprobs, dict):
            self._protocol_error(
                where,
                "field 'choices[0].logprobs': expected an object, got "
                + a_json_type(logprobs)
                + " (does the server return prompt log-probabilities with echo?)",
            )
        raw_tokens = logprobs.get("tokens")
        values = logprobs.get("token_logprobs")
        if not (
            isinstance(raw_tokens, list)
            and _list_of(raw_tokens, str)
            and isinstance(values, list)
            and len(values) == len(raw_tokens)
        ):
            self._protocol_error(
                where,
                "fields 'logprobs.tokens' and 'logprobs.token_logprobs': expected arrays of "
                "the same length",
            )
        tokens: list[str] = raw_tokens
        prompt = request.context + request.continuation
        raw_offsets = logprobs.get("text_offset")
        if raw_offsets is None and "".join(tokens).startswith(prompt):
            raw_offsets, at = [], 0
            for token in tokens:
                raw_offsets.append(at)
                at += len(token)
        if not (
            isinstance(raw_offsets, list)
            and _list_of(raw_offsets, int)
            and len(raw_offsets) == len(tokens)
        ):
            self._protocol_error(
                where, "field 'logprobs.text_offset': expected an array of integers, one per token"
            )
        offsets: list[int] = raw_offsets
        top = logprobs.get("top_logprobs")
        in_prompt = [i for i, offset in enumerate(offsets) if offset < len(prompt)]
        # lm-eval moves the context's trailing whitespace to the continuation
        scored = _continuation_tokens(in_prompt, offsets, len(request.context.rstrip()))
        if not request.continuation:
            scored = []
        total = 0.0
        greedy: bool | None = True
        for i in scored:
            value = values[i]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                self._protocol_error(
                    where,
                    f"continuation token {tokens[i]!r} (index {i}) has no log-probability "
                    f"(got {a_json_type(value)}); an empty context leaves the first token "
                    "unscored",
                )
            total += float(value)
            choices_i = top[i] if isinstance(top, list) and i < len(top) else None
            if isinstance(choices_i, dict) and choices_i and greedy is not None:
                best = max(choices_i, key=lambda t: _as_float(choices_i[t]))
                greedy = greedy and best == tokens[i]
            else:
                greedy = None
        return Loglik(
            logprob_sum=total,
            token_count=len(scored),
            is_greedy=greedy,
            char_length=len(request.continuation),
            byte_length=len(request.continuation.encode("utf-8")),
        )

    # -- lifecycle ----------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the pooled client (idempotent; the next request opens a new one)."""
        await self._http.aclose()

    # -- internals ----------------------------------------------------------------------------

    def _json_object(self, response: httpx.Response, where: str) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError as exc:
            head = clip(self._http.redact(response.text), 80)
            self._protocol_error(
                where,
                f"body is not JSON ({exc})"
                + (f", got {head!r}" if head else ", got an empty body"),
            )
        if not isinstance(data, dict):
            self._protocol_error(where, f"body: expected a JSON object, got {a_json_type(data)}")
        if "choices" not in data and isinstance(data.get("error"), (dict, str)):
            error = data["error"]
            detail = error.get("message", error) if isinstance(error, dict) else error
            self._protocol_error(where, f"the server answered an error: {clip(str(detail), 200)}")
        return data

    async def _probe_post(self, url: str, body: dict[str, Any]) -> httpx.Response:
        """A probe's POST: any status handed back, never retried, except a connection the
        server dropped (after an HTTP 500 ``transformers serve`` closes it), sent once more."""
        try:
            response, _ = await self._http.post_json(
                url, body, pass_statuses=range(400, 600), once=True
            )
        except RunnerError as exc:
            if exc.kind != "connection" or not exc.retryable:
                raise
            response, _ = await self._http.post_json(
                url, body, pass_statuses=range(400, 600), once=True
            )
        return response

    def _refused(
        self,
        url: str,
        response: httpx.Response,
        body: Mapping[str, Any],
        params: Mapping[str, Any] | None = None,
    ) -> NoReturn:
        """The error of a request the server refused (400, 404, 422), ended by its fix."""
        where = public_url(url, self._url_secrets)
        status = response.status_code
        sources = field_sources(body, self.extra_body, params or ())
        base = public_url(self.base_url, self._url_secrets)
        hint = refusal_hint(status, self._http.redact(response.text), where, base, sources)
        raise RunnerError(
            self._http.say(where, f"HTTP {status}{self._http.snippet(response)}") + hint,
            kind="http",
            retryable=False,
        )

    def _protocol_error(self, where: str, what: str) -> NoReturn:
        raise RunnerError(
            self._http.say(public_url(where, self._url_secrets), what), kind="protocol"
        )


# -- OpenAI wire format ---------------------------------------------------------------------------


def openai_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """Tools in OpenAI function form (``ToolSpec.version`` is not sent; ``extra`` keys are)."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                **t.extra,
            },
        }
        for t in tools
    ]


def openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Messages in OpenAI chat form (see the module docs for ids of calls without one)."""
    out: list[dict[str, Any]] = []
    unanswered: list[tuple[str, str]] = []  # (call id, tool name) of the last assistant turn
    for index, message in enumerate(messages):
        if message.raw is not None:  # sent verbatim (a BFCL echo of the server's message)
            out.append(message.raw)
            calls = message.raw.get("tool_calls") or []
            unanswered = [
                (str(c.get("id")), str((c.get("function") or {}).get("name")))
                for c in calls
                if isinstance(c, dict)
            ]
        elif message.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant"}
            if message.tool_calls:
                entry["content"] = message.content
                unanswered = []
                calls = []
                for number, call in enumerate(message.tool_calls):
                    new_id = call.id or f"call_{index}_{number}"
                    arguments = (
                        call.arguments_error
                        if call.arguments_error is not None
                        else json.dumps(call.arguments, ensure_ascii=False)
                    )
                    calls.append(
                        {
                            "id": new_id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": arguments},
                        }
                    )
                    unanswered.append((new_id, call.name))
                entry["tool_calls"] = calls
            else:
                entry["content"] = message.content or ""
            out.append(entry)
        elif message.role == "tool":
            call_id: str | None = message.tool_call_id
            if call_id is None and unanswered:
                named = [c for c in unanswered if c[1] == message.name]
                call_id = (named or unanswered)[0][0]
            unanswered = [c for c in unanswered if c[0] != call_id]
            out.append(
                {"role": "tool", "tool_call_id": call_id or "", "content": message.content or ""}
            )
        else:
            out.append({"role": message.role, "content": message.content or ""})
    return out


def parse_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """``(arguments, arguments_error)`` from a tool call's ``function.arguments``.

    A JSON object (as text, or already decoded) is the arguments; empty or missing text is
    ``{}``; anything else gives ``{}`` and the raw text as the error.
    """
    if isinstance(raw, dict):
        return raw, None
    if raw is None:
        return {}, None
    if not isinstance(raw, str):
        return {}, json.dumps(raw, ensure_ascii=False)
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError:
        return {}, raw
    if not isinstance(value, dict):
        return {}, raw
    return value, None


def _continuation_tokens(in_prompt: list[int], offsets: list[int], context_len: int) -> list[int]:
    """Indices of the tokens that cover the continuation (see the module docs)."""
    starts_after = [i for i in in_prompt if offsets[i] >= context_len]
    if starts_after and offsets[starts_after[0]] == context_len:
        return starts_after
    before = [i for i in in_prompt if offsets[i] < context_len]
    if before:  # the last token starting inside the context straddles the boundary
        return [before[-1], *starts_after]
    return starts_after


def _usage(raw: Any) -> Usage | str:
    """The ``usage`` of an answer (none when absent), or what is wrong with it: a count that
    is there must be a whole number of tokens, 0 or more (a negative one would lower what a
    budget counts, a fraction or NaN is no count)."""
    if raw is None:
        return Usage()
    if not isinstance(raw, dict):
        return f"field 'usage': expected an object, got {a_json_type(raw)}"
    counts: dict[str, int] = {}
    for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
        value = raw.get(name)
        if value is None:
            continue
        whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        if isinstance(value, bool) or not whole or value < 0:
            return (
                f"field 'usage.{name}': expected a whole number of tokens, 0 or more, "
                f"got {json.dumps(value)}"
            )
        counts[name] = int(value)
    return Usage(**counts)


def _as_float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return -math.inf
    return float(value)


def _list_of(value: list[Any], kind: type) -> bool:
    return all(isinstance(v, kind) and not isinstance(v, bool) for v in value)


def _missing_or_type(
    field: str, expected: str, parent: dict[str, Any], key: str | None = None
) -> str:
    key = key or field
    got = "nothing (missing)" if key not in parent else a_json_type(parent[key])
    return f"field '{field}': expected {expected}, got {got}"


def _join(base_url: str, path: str) -> str:
    """``base_url`` with ``path`` appended to its path, minus any trailing ``/`` (the query
    string is kept)."""
    parts = urlsplit(base_url)
    return urlunsplit(
        (parts.scheme, parts.netloc, parts.path.rstrip("/") + path, parts.query, parts.fragment)
    )
