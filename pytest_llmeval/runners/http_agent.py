"""The ``http-agent`` runner: a whole agent behind one HTTP endpoint (tool-forge ``AgentEndpoint``).

Each :meth:`HttpAgentRunner.send` POSTs ``{"message": message}`` and expects::

    {"response": str,
     "toolCalls": [{"name": str, "success": bool, "durationMs": number, "params": {...}}],
     "durationMs": number}

``toolCalls`` may be missing or null (no calls); in a call ``success`` defaults to true,
``durationMs`` to 0 and ``params`` to ``{}``; a ``result`` is kept when present. Unknown fields
are ignored.

Faults become :class:`~pytest_llmeval.core.errors.RunnerError` as the table in
:mod:`pytest_llmeval.runners.http` says; a 2xx whose body breaks the endpoint contract is
``protocol`` (not retried).

Retries wait ``backoff_s * 2**attempt`` plus up to 50 % random jitter, or the numeric
``Retry-After`` of a 429/5xx answer; either is capped at ``max_backoff_s``. With
``deterministic=True`` (``--llmeval-deterministic yes``) nothing is retried: the first 429,
5xx, timeout or dropped connection is an error. Error messages name the URL without its
user-info and query string, and never contain a header value.
"""

from __future__ import annotations

import math
from typing import Any, NoReturn

import httpx

from pytest_llmeval.core.clip import clip
from pytest_llmeval.core.errors import RunnerError
from pytest_llmeval.core.models import ToolCallRecord
from pytest_llmeval.core.redact import header_secrets, public_url
from pytest_llmeval.inputs.loading import a_json_type
from pytest_llmeval.limits import Limiter
from pytest_llmeval.runners.base import AgentResponse
from pytest_llmeval.runners.http import (
    DEFAULT_MAX_RESPONSE_BYTES,
    AsyncClosing,
    JsonHttp,
    check_http_url,
    secrets_of,
)

__all__ = ["HttpAgentRunner", "public_url"]


class HttpAgentRunner(AsyncClosing):
    """An :class:`~pytest_llmeval.runners.base.AgentEndpoint` speaking JSON over HTTP.

    Args:
        url: The endpoint (``http://localhost:3000/chat``). User-info in it is sent as basic
            auth and kept out of messages and the fingerprint.
        timeout_s: Deadline of one attempt: connecting, sending and reading the whole answer.
        max_retries: Extra attempts after a retryable fault (0 = try once).
        backoff_s: First retry delay; doubles each retry.
        max_backoff_s: Cap on any delay, ``Retry-After`` included.
        headers: Extra request headers (``Authorization`` ...); never shown in errors.
        limiter: The session's limits every attempt waits for (:mod:`pytest_llmeval.limits`).
        transport: ``"aiohttp"`` or ``"httpx"`` (:mod:`pytest_llmeval.runners.transport`);
            ``None``: the default, aiohttp.
        deterministic: Never retry: the first 429/5xx/timeout/dropped connection is an error.
        max_response_bytes: Largest response body read; a longer one is the case's error.

    One pooled keep-alive ``httpx.AsyncClient`` is created on the first :meth:`send`, in the
    running event loop, and shared by concurrent sends (see
    :class:`~pytest_llmeval.runners.http.JsonHttp`). Call :meth:`aclose` in that same loop
    when done (or use ``async with``).
    """

    name = "http-agent"

    def __init__(
        self,
        url: str,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        backoff_s: float = 0.25,
        max_backoff_s: float = 8.0,
        headers: dict[str, str] | None = None,
        limiter: Limiter | None = None,
        transport: str | None = None,
        deterministic: bool = False,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        check_http_url(url, self.name)
        self.url = url
        self.headers: dict[str, str] = dict(headers or {})
        self._http = JsonHttp(
            self.name,
            timeout_s=timeout_s,
            max_retries=max_retries,
            backoff_s=backoff_s,
            max_backoff_s=max_backoff_s,
            deterministic=deterministic,
            headers=self.headers,
            secrets=secrets_of(url, self.headers),
            limiter=limiter,
            transport=transport,
            max_response_bytes=max_response_bytes,
            backend=public_url(url, header_secrets(self.headers)),
        )
        self.timeout_s = self._http.timeout_s
        self.max_retries = self._http.max_retries
        self.backoff_s = self._http.backoff_s
        self.max_backoff_s = self._http.max_backoff_s
        self.deterministic = deterministic
        self._public_url = public_url(url, header_secrets(self.headers))

    def fingerprint(self) -> dict[str, Any]:
        """``{"type": "http-agent", "url": <url without user-info and query>}``."""
        return {"type": self.name, "url": self._public_url}

    async def send(self, message: str) -> AgentResponse:
        """POST ``{"message": message}`` and parse the answer, retrying transient faults.

        ``duration_ms`` is the endpoint's ``durationMs`` when it gives a number; otherwise the
        wall-clock time of the successful attempt alone (failed attempts and backoff excluded).
        """
        response, elapsed_ms = await self._http.post_json(self.url, {"message": message})
        return self._parse(response, elapsed_ms)

    async def aclose(self) -> None:
        """Close the pooled client (idempotent; the next send opens a new one).

        Call it in the event loop that sent; from another loop the close is best-effort.
        """
        await self._http.aclose()

    # -- internals ----------------------------------------------------------------------------

    def _say(self, what: str) -> str:
        return self._http.say(self._public_url, what)

    def _redact(self, text: str) -> str:
        return self._http.redact(text)

    def _parse(self, response: httpx.Response, elapsed_ms: float) -> AgentResponse:
        try:
            body = response.json()
        except ValueError as exc:
            head = clip(self._redact(response.text), 80)
            self._protocol_error(
                f"body is not JSON ({exc}); expected an object with a string 'response'"
                + (f", got {head!r}" if head else ", got an empty body")
            )
        if not isinstance(body, dict):
            self._protocol_error(f"body: expected a JSON object, got {a_json_type(body)}")
        text = body.get("response")
        if not isinstance(text, str):
            self._protocol_error(
                "field 'response': expected a string, got "
                + ("nothing (missing)" if "response" not in body else a_json_type(text))
            )
        raw_calls = body.get("toolCalls")
        if raw_calls is None:
            raw_calls = []
        if not isinstance(raw_calls, list):
            self._protocol_error(
                f"field 'toolCalls': expected an array, got {a_json_type(raw_calls)}"
            )
        calls = [self._tool_call(i, raw) for i, raw in enumerate(raw_calls)]
        duration = body.get("durationMs")
        duration_ms = elapsed_ms if duration is None else self._number(duration, "durationMs")
        return AgentResponse(response=text, tool_calls=calls, duration_ms=duration_ms)

    def _tool_call(self, index: int, raw: Any) -> ToolCallRecord:
        where = f"toolCalls[{index}]"
        if not isinstance(raw, dict):
            self._protocol_error(f"field '{where}': expected an object, got {a_json_type(raw)}")
        name = raw.get("name")
        if not isinstance(name, str) or not name:
            self._protocol_error(
                f"field '{where}.name': expected a non-empty string, got "
                + (repr(name) if isinstance(name, str) else a_json_type(name))
            )
        success = raw.get("success", True)
        if success is None:
            success = True
        if not isinstance(success, bool):
            self._protocol_error(
                f"field '{where}.success': expected a boolean, got {a_json_type(success)}"
            )
        duration = raw.get("durationMs")
        duration_ms = 0.0 if duration is None else self._number(duration, f"{where}.durationMs")
        params = raw.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            self._protocol_error(
                f"field '{where}.params': expected an object, got {a_json_type(params)}"
            )
        return ToolCallRecord(
            name=name,
            params=params,
            success=success,
            duration_ms=duration_ms,
            result=raw.get("result"),
            source="endpoint",
        )

    def _number(self, value: Any, field: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self._protocol_error(f"field '{field}': expected a number, got {a_json_type(value)}")
        number = float(value)
        if not math.isfinite(number) or number < 0:
            self._protocol_error(f"field '{field}': expected a finite number >= 0, got {value!r}")
        return number

    def _protocol_error(self, what: str) -> NoReturn:
        raise RunnerError(self._say(what), kind="protocol", retryable=False)
