"""The transport under :class:`~pytest_llmeval.runners.http.JsonHttp`, and how its faults read.

Runners speak httpx's API (requests, responses, timeouts). What moves the bytes is chosen by
``--llmeval-http-transport``:

``aiohttp`` (default)
    httpx-aiohttp's transport: aiohttp's connection pool and C HTTP parser behind httpx's API,
    the transport the OpenAI Python SDK offers for the same reason. Each request costs a
    fraction of httpcore's CPU, and unlike httpcore's pool, picking a connection does not
    scan (and poll) every open connection, so the cost stays flat at 64 and more in flight.
    Measured side by side in ``benchmarks/RESULTS.md``.
``httpx``
    httpx's own transport (httpcore), for anything only it does (HTTP/2, its proxy and
    certificate options, mounts).

:func:`fault_kind` sorts an exception from either transport into ``timeout``,
``connection`` or ``unsendable``. httpx-aiohttp maps some aiohttp errors onto httpx classes
(a dropped connection becomes ``httpx.ConnectTimeout``) and lets others through unmapped (a
malformed status line is an ``aiohttp.ClientResponseError``), so the sorting looks at the
aiohttp error underneath.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from typing import Literal

import aiohttp
import httpx
import httpx_aiohttp

TRANSPORTS = ("aiohttp", "httpx")
DEFAULT_TRANSPORT = "aiohttp"

FaultKind = Literal["timeout", "connection", "unsendable"]


def make_transport(kind: str, verify: ssl.SSLContext) -> httpx.AsyncBaseTransport | None:
    """The transport for ``httpx.AsyncClient(transport=...)``; ``None`` means httpx's own."""
    if kind == "httpx":
        return None
    if kind != "aiohttp":
        raise ValueError(f"unknown HTTP transport {kind!r}; known: {', '.join(TRANSPORTS)}")

    def session() -> aiohttp.ClientSession:
        # No connection cap of its own: the runner's concurrency and the session limits bound
        # what is in flight. No trust_env: httpx already routes the requests that the
        # environment's proxy settings name to a proxy transport of its own (and aiohttp's
        # trust_env would look up ~/.netrc in a thread for every request).
        connector = aiohttp.TCPConnector(limit=0, ssl=verify)
        return aiohttp.ClientSession(connector=connector)

    return _AiohttpTransport(client=session)


class _AiohttpTransport(httpx_aiohttp.AiohttpTransport):
    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.userinfo:
            # httpx has turned URL credentials into an Authorization header already; aiohttp
            # refuses a request that carries both
            request.url = request.url.copy_with(userinfo=b"")
        return await super().handle_async_request(request)


def fault_kind(exc: BaseException) -> FaultKind | None:
    """What a transport exception means, or ``None`` if it is not a transport fault."""
    cause = exc
    if isinstance(exc.__cause__, aiohttp.ClientError):
        cause = exc.__cause__  # httpx-aiohttp's mapping is lossy; judge by the original
    if isinstance(cause, (asyncio.TimeoutError, httpx.TimeoutException)):
        return "timeout"  # aiohttp's ServerTimeoutError is an asyncio.TimeoutError too
    unsendable = (httpx.UnsupportedProtocol, httpx.LocalProtocolError, aiohttp.InvalidURL)
    if isinstance(cause, (*unsendable, aiohttp.NonHttpUrlClientError)):
        return "unsendable"
    if isinstance(cause, (httpx.TransportError, aiohttp.ClientError)):
        return "connection"
    return None


def unreachable_reason(exc: BaseException) -> str | None:
    """``"connection refused"`` or ``"name resolution failed"`` when ``exc`` says the backend
    is not there at all (trying again at once cannot help), else ``None``."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, (socket.gaierror, aiohttp.ClientConnectorDNSError)):
            return "name resolution failed"
        if isinstance(current, ConnectionRefusedError):
            return "connection refused"
        os_error = getattr(current, "os_error", None)
        todo += [current.__cause__, current.__context__]
        if isinstance(os_error, BaseException):
            todo.append(os_error)
    return None


def describe(exc: BaseException) -> str:
    """``Type: detail`` of the fault, naming aiohttp's own error rather than httpx's mapping."""
    if isinstance(exc.__cause__, aiohttp.ClientError):
        exc = exc.__cause__
    detail = str(exc).strip()
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
