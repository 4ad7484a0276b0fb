"""The ``http-agent`` runner: a whole agent behind one HTTP endpoint (tool-forge ``AgentEndpoint``).

Each :meth:`HttpAgentRunner.send` POSTs ``{"message": message}`` and expects::

    {"response": str,
     "toolCalls": [{"name": str, "success": bool, "durationMs": number, "params": {...}}],
     "durationMs": number}

``toolCalls`` may be missing or null (no calls); in a call ``success`` defaults to true,
``durationMs`` to 0 and ``params`` to ``{}``; a ``result`` is kept when present. Unknown fields
are ignored.

Faults become :class:`~pytest_llmeval.errors.RunnerError`:

========================================  ===============  =========  =========
what happened                             kind             retried    retryable
========================================  ===============  =========  =========
connect/read failure, dropped connection  ``connection``   yes        True
no full answer within ``timeout_s``       ``timeout``      yes        True
HTTP 429 or 5xx                           ``http``         yes        True
HTTP 401 / 403                            ``auth``         no         False
any other non-2xx status                  ``http``         no         False
2xx whose body breaks the contract        ``protocol``     no         False
========================================  ===============  =========  =========

Retries wait ``backoff_s * 2**attempt`` plus up to 50 % random jitter, or the numeric
``Retry-After`` of a 429/5xx answer; either is capped at ``max_backoff_s``. Error messages name
the URL without its user-info and query string, and never contain a header value.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import math
import random
import ssl
import time
from types import TracebackType
from typing import Any, NoReturn
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit

import httpx

from pytest_llmeval import __version__
from pytest_llmeval.errors import ConfigError, RunnerError, RunnerErrorKind
from pytest_llmeval.loading import a_json_type
from pytest_llmeval.models import ToolCallRecord
from pytest_llmeval.report.redact import public_url
from pytest_llmeval.runners.base import AgentResponse

__all__ = ["HttpAgentRunner", "public_url"]

_SNIPPET_CHARS = 200


class HttpAgentRunner:
    """An :class:`~pytest_llmeval.runners.base.AgentEndpoint` speaking JSON over HTTP.

    Args:
        url: The endpoint (``http://localhost:3000/chat``). User-info in it is sent as basic
            auth and kept out of messages and the fingerprint.
        timeout_s: Deadline of one attempt: connecting, sending and reading the whole answer.
        max_retries: Extra attempts after a retryable fault (0 = try once).
        backoff_s: First retry delay; doubles each retry.
        max_backoff_s: Cap on any delay, ``Retry-After`` included.
        headers: Extra request headers (``Authorization`` ...); never shown in errors.

    One pooled keep-alive ``httpx.AsyncClient`` is created on the first :meth:`send`, in the
    running event loop, and shared by concurrent sends. Call :meth:`aclose` in that same loop
    when done (or use ``async with``). A send from a different event loop (one ``asyncio.run``
    per test) gets a fresh client; the old one is closed on a best-effort basis.
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
    ) -> None:
        try:
            parts = urlsplit(url)
            valid = parts.scheme in ("http", "https") and bool(parts.hostname)
            _ = parts.port  # raises on a non-numeric or out-of-range port
            httpx.URL(url)
        except (ValueError, httpx.InvalidURL):
            valid = False
        if not valid:
            raise ConfigError(
                f"http-agent: url must be an absolute http(s) URL, got {_loggable(url)!r}"
            )
        if not timeout_s > 0:
            raise ConfigError(f"http-agent: timeout_s must be > 0, got {timeout_s}")
        if max_retries < 0:
            raise ConfigError(f"http-agent: max_retries must be >= 0, got {max_retries}")
        if backoff_s < 0 or max_backoff_s < 0:
            raise ConfigError("http-agent: backoff_s and max_backoff_s must be >= 0")
        self.url = url
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self.headers: dict[str, str] = dict(headers or {})
        self._public_url = public_url(url)
        self._secrets = _secrets_of(url, self.headers)
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._rng = random.Random()

    def fingerprint(self) -> dict[str, Any]:
        """``{"type": "http-agent", "url": <url without user-info and query>}``."""
        return {"type": self.name, "url": self._public_url}

    async def send(self, message: str) -> AgentResponse:
        """POST ``{"message": message}`` and parse the answer, retrying transient faults.

        ``duration_ms`` is the endpoint's ``durationMs`` when it gives a number; otherwise the
        wall-clock time of the successful attempt alone (failed attempts and backoff excluded).
        """
        client = await self._get_client()
        attempts = self.max_retries + 1
        for attempt in range(1, attempts + 1):
            retry_after: float | None = None
            started = time.perf_counter()
            try:
                response = await asyncio.wait_for(
                    client.post(self.url, json={"message": message}), self.timeout_s
                )
            except (asyncio.TimeoutError, httpx.TimeoutException):
                error = RunnerError(
                    self._say(f"no complete answer within {self.timeout_s:g}s"),
                    kind="timeout",
                    retryable=True,
                )
            except (httpx.UnsupportedProtocol, httpx.LocalProtocolError) as exc:
                raise RunnerError(
                    self._say(f"request could not be sent: {self._describe(exc)}"),
                    kind="connection",
                    retryable=False,
                ) from None
            except httpx.TransportError as exc:
                error = RunnerError(
                    self._say(f"connection failed: {self._describe(exc)}"),
                    kind="connection",
                    retryable=True,
                )
            else:
                elapsed_ms = (time.perf_counter() - started) * 1000.0
                status = response.status_code
                if 200 <= status < 300:
                    return self._parse(response, elapsed_ms)
                if status == 429 or status >= 500:
                    error = RunnerError(
                        self._say(f"HTTP {status}{self._snippet(response)}"),
                        kind="http",
                        retryable=True,
                    )
                    retry_after = _retry_after(response.headers.get("retry-after"))
                else:
                    kind: RunnerErrorKind = "auth" if status in (401, 403) else "http"
                    note = " (redirects are not followed)" if 300 <= status < 400 else ""
                    raise RunnerError(
                        self._say(f"HTTP {status}{note}{self._snippet(response)}"),
                        kind=kind,
                        retryable=False,
                    )
            if attempt == attempts:
                if attempts > 1:
                    error = RunnerError(
                        f"{error} (gave up after {attempts} attempts)",
                        kind=error.kind,
                        retryable=True,
                    )
                raise error
            await asyncio.sleep(self._delay(attempt, retry_after))
        raise AssertionError("unreachable")  # pragma: no cover

    async def aclose(self) -> None:
        """Close the pooled client (idempotent; the next send opens a new one).

        Call it in the event loop that sent; from another loop the close is best-effort.
        """
        client, loop = self._client, self._loop
        self._client = self._loop = None
        if client is None:
            return
        if loop is asyncio.get_running_loop():
            await client.aclose()
        else:
            await _close_stale(client, loop)

    async def __aenter__(self) -> HttpAgentRunner:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- internals ----------------------------------------------------------------------------

    async def _get_client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is not None and self._loop is not loop:
            stale, stale_loop = self._client, self._loop
            self._client = self._loop = None
            await _close_stale(stale, stale_loop)
        if self._client is None:
            self._client = httpx.AsyncClient(
                headers={
                    "Accept": "application/json",
                    "User-Agent": f"pytest-llmeval/{__version__} http-agent",
                    **self.headers,
                },
                timeout=httpx.Timeout(self.timeout_s),
                follow_redirects=False,
                verify=_ssl_context(),
            )
            self._loop = loop
        return self._client

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if retry_after is not None:
            return min(retry_after, self.max_backoff_s)
        base = self.backoff_s * 2.0 ** (attempt - 1)
        return min(base + self._rng.uniform(0.0, base / 2.0), self.max_backoff_s)

    def _say(self, what: str) -> str:
        return self._redact(f"http-agent: POST {self._public_url}: {what}")

    def _redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def _describe(self, exc: BaseException) -> str:
        detail = str(exc).strip()
        return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__

    def _snippet(self, response: httpx.Response) -> str:
        """The start of an error body; redacted before it is cut, so no secret half-shows."""
        text = self._redact(response.text.strip())
        if not text:
            return ""
        if len(text) > _SNIPPET_CHARS:
            text = text[:_SNIPPET_CHARS] + "..."
        return f": {text}"

    def _parse(self, response: httpx.Response, elapsed_ms: float) -> AgentResponse:
        try:
            body = response.json()
        except ValueError as exc:
            head = self._redact(response.text)[:80]
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


@functools.lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    """httpx's default verifying context, built once: building one costs tens of ms."""
    return httpx.create_ssl_context()


def _loggable(url: str) -> str:
    """``public_url``, or a placeholder when ``url`` cannot even be split."""
    try:
        return public_url(url)
    except ValueError:
        return "<unparsable url>"


async def _close_stale(client: httpx.AsyncClient, loop: asyncio.AbstractEventLoop | None) -> None:
    """Best-effort close of a client whose connections belong to another event loop.

    If that loop still runs (in another thread) the close is handed to it; if it has been
    closed (``asyncio.run`` returned) its sockets can no longer be closed cleanly and are left
    to the garbage collector, which may warn about an unclosed transport.
    """
    if loop is not None and loop.is_running() and not loop.is_closed():
        asyncio.run_coroutine_threadsafe(client.aclose(), loop)
        return
    with contextlib.suppress(Exception):
        await client.aclose()


def _retry_after(value: str | None) -> float | None:
    """Seconds from a numeric ``Retry-After`` header (HTTP-date forms are ignored)."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    if not math.isfinite(seconds):
        return None
    return max(seconds, 0.0)


def _secrets_of(url: str, headers: dict[str, str]) -> list[str]:
    """Strings that must never appear in an error message, longest first: header values
    (and their credential part), URL user-info (and its basic-auth token), query values."""
    secrets: set[str] = set()
    for value in headers.values():
        secrets.add(value)
        _scheme, _, credential = value.partition(" ")
        if credential:
            secrets.add(credential.strip())
    parts = urlsplit(url)
    for _name, value in parse_qsl(parts.query, keep_blank_values=True):
        secrets.update({value, quote(value), quote_plus(value)})
    userinfo = parts.netloc.rpartition("@")[0]
    if userinfo:
        user, _, password = userinfo.partition(":")
        secrets.update({userinfo, user, password, unquote(user), unquote(password)})
        basic = f"{unquote(user)}:{unquote(password)}".encode()
        secrets.add(base64.b64encode(basic).decode("ascii"))
    # Very short values ("1", "on") would mangle messages and cannot leak much.
    return sorted((s for s in secrets if len(s) >= 4), key=len, reverse=True)
