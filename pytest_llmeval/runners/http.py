"""JSON over HTTP for runners: one pooled client, bounded retries, secrets kept out of errors.

:class:`JsonHttp` is what the ``http-agent`` and ``openai`` runners share. It POSTs JSON and
hands back the 2xx response; every fault becomes a
:class:`~pytest_llmeval.core.errors.RunnerError`:

========================================  ===============  =========  =========
what happened                             kind             retried    retryable
========================================  ===============  =========  =========
connection refused, unresolvable host     ``connection``   no         False
other connect/read failure, dropped conn.  ``connection``   yes        True
no full answer within ``timeout_s``       ``timeout``      yes        True
HTTP 429 or 5xx                           ``http``         yes        True
HTTP 401 / 403                            ``auth``         no         False
any other non-2xx status                  ``http``         no         False
a body over ``max_response_bytes``        ``protocol``     no         False
the backend's circuit breaker is open     ``connection``   not sent   False
========================================  ===============  =========  =========

Retries wait ``backoff_s * 2**attempt`` plus up to 50 % random jitter, or the numeric
``Retry-After`` of a 429/5xx answer; either is capped at ``max_backoff_s``. They stop after
``max_retries`` retries, or earlier when the next wait would end past ``max_retry_time_s``
after the first attempt started. With ``deterministic=True`` nothing is retried: the first
retryable fault is raised at once (a retried call to a hosted model may not answer the same).

A refused connection or a host name that does not resolve is not retried: the backend is not
there, and a retry a moment later finds the same. Every connection failure is counted by the
session's circuit breaker (``limiter.breaker``, :mod:`pytest_llmeval.limits.breaker`), and any
HTTP answer resets its count; once it opens, :meth:`JsonHttp.post_json` raises
:class:`~pytest_llmeval.core.errors.BackendUnreachable` without sending.

Bodies are read as they stream in, up to ``max_response_bytes``; a longer one is abandoned
(never held whole in memory) and is an error naming the limit and how much was read.

Every attempt goes through the ``limiter`` (:mod:`pytest_llmeval.limits`: the session's
``--llmeval-max-connections`` and ``--llmeval-rate-limit``, none by default), which hears each
answer's status, so a 429 slows down the whole session; waiting for it is not part of the
attempt's ``timeout_s`` or its measured time.

Error messages name the URL without its user-info and query string and never contain a header
value, a URL credential or any other string given in ``secrets``, literal or encoded
(``core/secret_forms.py``): server bodies quoted in them are decoded (JSON escapes) and redacted
before they are cut short.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import math
import random
import re
import ssl
import time
from collections.abc import Collection, Iterable
from typing import Any, TypeVar
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit

import httpx

from pytest_llmeval.core.aio import within
from pytest_llmeval.core.clip import clip
from pytest_llmeval.core.errors import ConfigError, RunnerError, RunnerErrorKind
from pytest_llmeval.core.redact import public_url
from pytest_llmeval.core.secret_forms import readable_body, secrets_pattern
from pytest_llmeval.core.version import __version__
from pytest_llmeval.limits import NULL_LIMITER, Limiter, estimate_tokens, usage_tokens
from pytest_llmeval.runners import transport as transport_module
from pytest_llmeval.runners.transport import (
    TRANSPORTS,
    fault_kind,
    make_transport,
    unreachable_reason,
)

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "JsonHttp",
    "check_http_url",
    "loggable_url",
    "retry_after",
    "secrets_of",
]

_SNIPPET_CHARS = 200
DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024
"""The default cap on a response body (``--llmeval-max-response-bytes``): 16 MiB."""
_REPACKED = frozenset({"content-encoding", "content-length", "transfer-encoding"})


class JsonHttp:
    """A pooled ``httpx.AsyncClient`` with the retry and redaction rules above.

    Args:
        label: Starts every error message (``"openai"`` → ``openai: POST <url>: ...``).
        timeout_s: Deadline of one attempt: connecting, sending and reading the whole answer.
        max_retries: Extra attempts after a retryable fault (0 = try once).
        backoff_s: First retry delay; doubles each retry.
        max_backoff_s: Cap on any delay, ``Retry-After`` included.
        max_retry_time_s: Give up rather than wait past this many seconds after the first
            attempt started (``None``: bounded by ``max_retries`` only).
        deterministic: Raise the first retryable fault instead of retrying it.
        headers: Request headers (``Authorization`` ...); their values count as secrets.
        secrets: More strings to keep out of error messages (an API key, URL credentials).
        limiter: Every attempt waits for a slot of it (default: no limits).
        transport: ``"aiohttp"`` or ``"httpx"`` (:mod:`pytest_llmeval.runners.transport`);
            ``None``: the default, aiohttp.
        max_response_bytes: Largest (decoded) response body read; a longer one is an error.
        backend: The name the circuit breaker and its message know the backend by (the
            runner's base URL, without credentials); ``None``: each request URL's origin.

    The client is created on the first request, in the running event loop, and shared by
    concurrent requests. Call :meth:`aclose` in that same loop when done. A request from a
    different event loop (one ``asyncio.run`` per test) gets a fresh client; the old one is
    closed on a best-effort basis.
    """

    def __init__(
        self,
        label: str,
        *,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        backoff_s: float = 0.25,
        max_backoff_s: float = 8.0,
        max_retry_time_s: float | None = None,
        deterministic: bool = False,
        headers: dict[str, str] | None = None,
        secrets: Iterable[str] = (),
        limiter: Limiter | None = None,
        transport: str | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        backend: str | None = None,
    ) -> None:
        transport = transport or transport_module.DEFAULT_TRANSPORT
        if transport not in TRANSPORTS:
            raise ConfigError(
                f"{label}: unknown HTTP transport {transport!r}; known: {', '.join(TRANSPORTS)}"
            )
        if not timeout_s > 0:
            raise ConfigError(f"{label}: timeout_s must be > 0, got {timeout_s}")
        if max_retries < 0:
            raise ConfigError(f"{label}: max_retries must be >= 0, got {max_retries}")
        if backoff_s < 0 or max_backoff_s < 0:
            raise ConfigError(f"{label}: backoff_s and max_backoff_s must be >= 0")
        if max_retry_time_s is not None and max_retry_time_s < 0:
            raise ConfigError(f"{label}: max_retry_time_s must be >= 0, got {max_retry_time_s}")
        if max_response_bytes < 1:
            raise ConfigError(f"{label}: max_response_bytes must be >= 1, got {max_response_bytes}")
        self.label = label
        self.transport = transport
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self.max_retry_time_s = max_retry_time_s
        self.deterministic = deterministic
        self.headers: dict[str, str] = dict(headers or {})
        found = set(secrets_of("", self.headers)) | {s for s in secrets if len(s) >= 4}
        self._secrets = sorted(found, key=len, reverse=True)
        # each secret and its encoded forms (\/-escaped, %-encoded, base64, HTML), one pattern
        self._pattern = re.compile(secrets_pattern(self._secrets)) if self._secrets else None
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._rng = random.Random()
        self.limiter: Limiter = limiter or NULL_LIMITER
        self.max_response_bytes = int(max_response_bytes)
        self.backend = backend

    async def post_json(
        self, url: str, body: Any, *, pass_statuses: Collection[int] = (), once: bool = False
    ) -> tuple[httpx.Response, float]:
        """POST ``body`` as JSON to ``url``; the response and the successful attempt's ms.

        The response is 2xx, or has a status listed in ``pass_statuses`` (handed back instead
        of raised, so the caller can react to it); any other outcome raises RunnerError.
        ``once``: a single attempt, never retried (a probe of what the server can do).
        """
        client = await self._get_client()
        attempts = 1 if self.deterministic or once else self.max_retries + 1
        first_started = time.monotonic()
        where = public_url(url)
        breaker = getattr(self.limiter, "breaker", None)
        backend = self.backend or _origin(where)
        for attempt in range(1, attempts + 1):
            wait_hint: float | None = None
            kind: RunnerErrorKind
            if breaker is not None:
                breaker.check(backend)
            try:
                response, started = await self._attempt(client, url, body)
            except Exception as exc:
                fault = fault_kind(exc)
                if fault is None:
                    raise
                refused = unreachable_reason(exc) if fault == "connection" else None
                if fault == "connection" and breaker is not None:
                    breaker.failure(backend, refused or self.describe(exc))
                if refused is not None:
                    raise RunnerError(
                        self.say(where, f"connection failed: {self.describe(exc)}")
                        + f" (not retried: {refused})",
                        kind="connection",
                        retryable=False,
                    ) from None
                if fault == "unsendable":
                    raise RunnerError(
                        self.say(where, f"request could not be sent: {self.describe(exc)}"),
                        kind="connection",
                        retryable=False,
                    ) from None
                if fault == "timeout":
                    what, kind = f"no complete answer within {self.timeout_s:g}s", "timeout"
                else:
                    what, kind = f"connection failed: {self.describe(exc)}", "connection"
                error = RunnerError(self.say(where, what), kind=kind, retryable=True)
            else:
                if breaker is not None:
                    breaker.success(backend)
                elapsed_ms = (time.perf_counter() - started) * 1000.0
                status = response.status_code
                if 200 <= status < 300 or status in pass_statuses:
                    return response, elapsed_ms
                if status == 429 or status >= 500:
                    error = RunnerError(
                        self.say(where, f"HTTP {status}{self.snippet(response)}"),
                        kind="http",
                        retryable=True,
                    )
                    wait_hint = retry_after(response.headers.get("retry-after"))
                else:
                    kind = "auth" if status in (401, 403) else "http"
                    note = " (redirects are not followed)" if 300 <= status < 400 else ""
                    raise RunnerError(
                        self.say(where, f"HTTP {status}{note}{self.snippet(response)}"),
                        kind=kind,
                        retryable=False,
                    )
            if self.deterministic:
                raise RunnerError(
                    f"{error} (not retried: deterministic mode treats a retry as a failure)",
                    kind=error.kind,
                    retryable=error.retryable,
                )
            delay = self.delay(attempt, wait_hint) if attempt < attempts else 0.0
            budget = self.max_retry_time_s
            out_of_time = budget is not None and time.monotonic() - first_started + delay > budget
            if attempt == attempts or out_of_time:
                if attempt > 1 or out_of_time:
                    why = f"gave up after {attempt} attempt{'s' if attempt > 1 else ''}"
                    if out_of_time and attempt < attempts:
                        why += f": the next retry would end past {budget:g}s of retrying"
                    error = RunnerError(f"{error} ({why})", kind=error.kind, retryable=True)
                raise error
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _attempt(
        self, client: httpx.AsyncClient, url: str, body: Any
    ) -> tuple[httpx.Response, float]:
        """One POST in a slot of the limiter; the response and when it was sent."""
        tokens = estimate_tokens(body) if self.limiter.counts_tokens else 0
        async with self.limiter.slot(tokens) as slot:
            started = time.perf_counter()
            response = await within(self._post(client, url, body), self.timeout_s)
            status = response.status_code
            wait = retry_after(response.headers.get("retry-after")) if status == 429 else None
            used = usage_tokens(response) if tokens and response.is_success else None
            slot.feedback(status, None if wait is None else min(wait, self.max_backoff_s), used)
            return response, started

    async def _post(self, client: httpx.AsyncClient, url: str, body: Any) -> httpx.Response:
        """POST and read the answer as it streams in, up to ``max_response_bytes``."""
        request = client.build_request("POST", url, json=body)
        response = await client.send(request, stream=True)
        limit = self.max_response_bytes
        try:
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                raise self._too_large(url, f"it declares {int(declared)} bytes; none were read")
            content = bytearray()
            async for chunk in response.aiter_bytes():
                content += chunk
                if len(content) > limit:
                    raise self._too_large(url, f"stopped after reading {len(content)} bytes")
        finally:
            await response.aclose()
        # the body is decoded already: the new response must not decode it again
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _REPACKED]
        return httpx.Response(
            response.status_code,
            headers=headers,
            content=bytes(content),
            request=request,
            extensions=response.extensions,
        )

    def _too_large(self, url: str, what: str) -> RunnerError:
        limit = self.max_response_bytes
        return RunnerError(
            self.say(
                public_url(url),
                f"response body over the {limit}-byte limit (--llmeval-max-response-bytes): {what}",
            ),
            kind="protocol",
            retryable=False,
        )

    async def aclose(self) -> None:
        """Close the pooled client (idempotent; the next request opens a new one).

        Call it in the event loop that sent; from another loop the close is best-effort.
        """
        client, loop = self._client, self._loop
        self._client = self._loop = None
        if client is None:
            return
        if loop is asyncio.get_running_loop():
            await client.aclose()
        else:
            await close_stale(client, loop)

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if retry_after is not None:
            return min(retry_after, self.max_backoff_s)
        base = self.backoff_s * 2.0 ** (attempt - 1)
        return min(base + self._rng.uniform(0.0, base / 2.0), self.max_backoff_s)

    def say(self, where: str, what: str) -> str:
        """``<label>: POST <where>: <what>``, redacted."""
        return self.redact(f"{self.label}: POST {where}: {what}")

    def redact(self, text: str) -> str:
        """``text`` with every secret, literal or encoded, replaced by ``***``."""
        return text if self._pattern is None else self._pattern.sub("***", text)

    @staticmethod
    def describe(exc: BaseException) -> str:
        return transport_module.describe(exc)

    def snippet(self, response: httpx.Response) -> str:
        """The start of an error body, decoded (a JSON body's ``\\/`` and ``\\u00xx``), then
        redacted before it is cut, so no secret half-shows."""
        text = self.redact(readable_body(response.text))
        if not text:
            return ""
        return f": {clip(text, _SNIPPET_CHARS)}"

    async def _get_client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is not None and self._loop is not loop:
            stale, stale_loop = self._client, self._loop
            self._client = self._loop = None
            await close_stale(stale, stale_loop)
        if self._client is None:
            self._client = httpx.AsyncClient(
                headers={
                    "Accept": "application/json",
                    "User-Agent": f"pytest-llmeval/{__version__} {self.label}",
                    **self.headers,
                },
                timeout=httpx.Timeout(self.timeout_s),
                follow_redirects=False,
                verify=_ssl_context(),
                transport=make_transport(self.transport, _ssl_context()),
            )
            self._loop = loop
        return self._client


def _origin(url: str) -> str:
    """``scheme://host:port`` of a URL (what the breaker knows a backend by by default)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def check_http_url(url: str, label: str, what: str = "url") -> None:
    """Raise ConfigError unless ``url`` is an absolute http(s) URL httpx accepts."""
    try:
        parts = urlsplit(url)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
        _ = parts.port  # raises on a non-numeric or out-of-range port
        httpx.URL(url)
    except (ValueError, httpx.InvalidURL):
        valid = False
    if not valid:
        raise ConfigError(
            f"{label}: {what} must be an absolute http(s) URL, got {loggable_url(url)!r}"
        )


@functools.lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    """httpx's default verifying context, built once: building one costs tens of ms."""
    return httpx.create_ssl_context()


def loggable_url(url: str) -> str:
    """``public_url``, or a placeholder when ``url`` cannot even be split."""
    try:
        return public_url(url)
    except ValueError:
        return "<unparsable url>"


async def close_stale(client: httpx.AsyncClient, loop: asyncio.AbstractEventLoop | None) -> None:
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


def retry_after(value: str | None) -> float | None:
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


def secrets_of(url: str, headers: dict[str, str]) -> list[str]:
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


_Self = TypeVar("_Self", bound="AsyncClosing")


class AsyncClosing:
    """``async with runner:`` closes it on exit (for runners with ``aclose()``)."""

    async def aclose(self) -> None:
        raise NotImplementedError

    async def __aenter__(self: _Self) -> _Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
