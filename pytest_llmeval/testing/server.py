"""A scripted loopback HTTP server for tests and benchmarks (stdlib only).

:class:`ScriptedServer` listens on ``127.0.0.1`` on an ephemeral port, serves each connection in
its own daemon thread, records every request, and answers from *routes* (``(method, path)`` →
handler) and *scripts* (queues of canned :class:`Reply` objects served in order before the
route handler takes over). A :class:`Reply` can also delay, drop the connection without an
answer, or send a body that is not valid JSON, which is what retry and error paths need::

    from pytest_llmeval.testing import Reply, ScriptedServer, example_agent_handler

    with ScriptedServer() as srv:
        srv.route("POST", "/chat", example_agent_handler)
        srv.script("/chat", [Reply(status=500), Reply(status=429, headers={"Retry-After": "0"})])
        ...  # point a client at srv.url_for("/chat"): two faults, then the toy agent answers
        assert len(srv.requests) == 3

Leaving the ``with`` block stops the listener, shuts every open connection (keep-alive ones
included), wakes replies that are still sleeping in ``delay_s``, and joins every thread it
started, so no thread outlives the block.
"""

from __future__ import annotations

import contextlib
import enum
import json as _json
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

__all__ = ["Handler", "Reply", "Request", "ScriptedServer"]


class _Unset(enum.Enum):
    UNSET = 0


_UNSET = _Unset.UNSET

MALFORMED_BODY = b'{"response": "this reply was cut off'
"""What ``Reply(malformed=True)`` sends when no ``body`` is given: truncated, invalid JSON."""


@dataclass(frozen=True)
class Request:
    """One request the server received (recorded before it is answered)."""

    method: str
    """``GET``, ``POST`` ... upper case."""
    path: str
    """The path without the query string (``/chat``)."""
    query: str
    """The raw query string, without ``?`` (``""`` when there is none)."""
    headers: dict[str, str]
    """Request headers with lower-cased names; repeated headers are joined with ``", "``."""
    body: bytes
    """The raw body (chunked bodies are decoded)."""
    json: Any = None
    """The body parsed as JSON, or ``None`` when it is empty or not JSON (see ``is_json``)."""
    is_json: bool = False
    """Whether ``body`` parsed as JSON (tells a JSON ``null`` body from an unparsable one)."""
    received_at: float = 0.0
    """``time.monotonic()`` when the request had been read."""

    @property
    def text(self) -> str:
        """The body decoded as UTF-8 (undecodable bytes replaced)."""
        return self.body.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class Reply:
    """How the server answers one request.

    Give at most one of ``json`` (serialised, ``Content-Type: application/json``) and ``body``
    (bytes, or str sent as UTF-8 ``text/plain``); with neither the body is empty. ``headers``
    are added as given and override the defaults (``Content-Length`` is always computed).
    """

    status: int = 200
    """The HTTP status code."""
    json: Any = _UNSET
    """A JSON-serialisable body (``None`` sends ``null``)."""
    body: bytes | str | None = None
    """A raw body, sent as is."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """Extra response headers (``{"Retry-After": "0"}``)."""
    delay_s: float = 0.0
    """Seconds to wait before answering (woken early, and dropped, when the server stops)."""
    drop: bool = False
    """Close the connection without sending any response."""
    malformed: bool = False
    """Send the status with a body that is not valid JSON: ``body`` when given, else
    :data:`MALFORMED_BODY`, labelled ``application/json``."""
    close: bool = False
    """Send ``Connection: close`` and close the connection after the reply."""

    def __post_init__(self) -> None:
        if self.json is not _UNSET and self.body is not None:
            raise ValueError("Reply: give json or body, not both")
        if self.delay_s < 0:
            raise ValueError("Reply: delay_s must be >= 0")

    def encode(self) -> tuple[int, dict[str, str], bytes]:
        """The status, headers and body bytes this reply sends."""
        headers: dict[str, str] = {}
        if self.malformed:
            body = self._raw_body() if self.body is not None else MALFORMED_BODY
            headers["Content-Type"] = "application/json"
        elif self.json is not _UNSET:
            body = _json.dumps(self.json).encode("utf-8")
            headers["Content-Type"] = "application/json"
        elif self.body is not None:
            body = self._raw_body()
            headers["Content-Type"] = (
                "text/plain; charset=utf-8"
                if isinstance(self.body, str)
                else "application/octet-stream"
            )
        else:
            body = b""
        overrides = {k.lower(): k for k in headers}
        for name, value in self.headers.items():
            existing = overrides.get(name.lower())
            if existing is not None:
                del headers[existing]
            headers[name] = value
        headers = {k: v for k, v in headers.items() if k.lower() != "content-length"}
        headers["Content-Length"] = str(len(body))
        return self.status, headers, body

    def _raw_body(self) -> bytes:
        if isinstance(self.body, str):
            return self.body.encode("utf-8")
        return self.body or b""


Handler = Callable[[Request], Reply]
"""A route handler: takes the recorded :class:`Request`, returns the :class:`Reply`.

Handlers run in the connection's thread; they must be thread-safe when requests can overlap.
"""

_NOT_FOUND = Reply(status=404, json={"error": "no route"})


class ScriptedServer:
    """A loopback HTTP/1.1 server answering from routes and scripted reply queues.

    Args:
        handler: Answers requests no route matches (404 ``{"error": "no route"}`` when None).
        routes: Initial routes, ``{(method, path): handler_or_reply}``; see :meth:`route`.
        host: The address to bind (loopback by default).
        port: The port to bind; 0 (the default) picks a free one. A fixed port lets a test
            bring a backend back where a stopped one was.
        join_timeout_s: How long :meth:`stop` waits for connection threads before it gives up
            and raises ``RuntimeError``.

    How a request is answered, first match wins: the next scripted reply queued for its
    ``(method, path)`` (:meth:`script`), the route for ``(method, path)``, the route for
    ``("*", path)``, then ``handler``. A handler that raises answers 500
    ``{"error": "handler raised ..."}`` and the exception lands in :attr:`errors`.
    """

    def __init__(
        self,
        handler: Handler | Reply | None = None,
        *,
        routes: Mapping[tuple[str, str], Handler | Reply] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        join_timeout_s: float = 5.0,
    ) -> None:
        self._default: Handler | None = _as_handler(handler) if handler is not None else None
        self._host = host
        self._port = port
        self._join_timeout_s = join_timeout_s
        self._lock = threading.Lock()
        self._routes: dict[tuple[str, str], Handler] = {}
        self._scripts: dict[tuple[str, str], deque[Reply]] = {}
        self._requests: list[Request] = []
        self._errors: list[BaseException] = []
        self._in_flight = 0
        self._max_concurrent = 0
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        for (method, path), route in (routes or {}).items():
            self.route(method, path, route)

    # -- configuration ------------------------------------------------------------------------

    def route(self, method: str, path: str, handler: Handler | Reply) -> None:
        """Answer ``method path`` with ``handler`` (a :class:`Reply` is served every time).

        ``method`` ``"*"`` matches any method. The path is matched exactly, query excluded.
        Replaces an existing route for the same key.
        """
        with self._lock:
            self._routes[(method.upper(), path)] = _as_handler(handler)

    def script(self, path: str, replies: Iterable[Reply], *, method: str = "POST") -> None:
        """Queue ``replies`` for ``method path``: each request takes the next one, in order.

        Once the queue is empty the route handler answers again. Calling it again appends.
        """
        with self._lock:
            queue = self._scripts.setdefault((method.upper(), path), deque())
            queue.extend(replies)

    def pending(self, path: str, *, method: str = "POST") -> int:
        """How many scripted replies for ``method path`` have not been served yet."""
        with self._lock:
            return len(self._scripts.get((method.upper(), path), ()))

    # -- observation --------------------------------------------------------------------------

    @property
    def requests(self) -> list[Request]:
        """A snapshot of every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str, method: str | None = None) -> list[Request]:
        """The received requests for ``path`` (and ``method``, when given)."""
        wanted = method.upper() if method else None
        return [
            r for r in self.requests if r.path == path and (wanted is None or r.method == wanted)
        ]

    @property
    def max_concurrent(self) -> int:
        """The peak number of requests being handled at the same time (delays included)."""
        with self._lock:
            return self._max_concurrent

    @property
    def in_flight(self) -> int:
        """Requests received and not answered yet (the count drops just before the answer's
        body is sent, so it never exceeds what the client has outstanding)."""
        with self._lock:
            return self._in_flight

    @property
    def errors(self) -> list[BaseException]:
        """Exceptions raised by handlers (each was answered with a 500)."""
        with self._lock:
            return list(self._errors)

    def reset(self) -> None:
        """Forget recorded requests, errors and the concurrency peak (routes and scripts stay)."""
        with self._lock:
            self._requests.clear()
            self._errors.clear()
            self._max_concurrent = self._in_flight

    # -- lifecycle ----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port (the server must be started)."""
        if self._httpd is None:
            raise RuntimeError("ScriptedServer is not running; use it as a context manager")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        return f"http://{self._host}:{self.port}"

    def url_for(self, path: str) -> str:
        """``url`` joined with ``path`` (``srv.url_for("/chat")``)."""
        return self.url + (path if path.startswith("/") else "/" + path)

    def start(self) -> ScriptedServer:
        """Bind and start serving in a background thread; returns ``self``."""
        if self._httpd is not None:
            raise RuntimeError("ScriptedServer is already running")
        self._stopping.clear()
        httpd = _HTTPServer(self, (self._host, self._port))
        thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name=f"ScriptedServer:{httpd.server_address[1]}",
            daemon=True,
        )
        self._httpd, self._thread = httpd, thread
        thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, close every connection and join every thread (idempotent)."""
        httpd, thread = self._httpd, self._thread
        if httpd is None or thread is None:
            return
        self._stopping.set()
        try:
            httpd.shutdown()  # the accept loop exits; no new connection threads after this
            thread.join(self._join_timeout_s)
            leftover = httpd.close_connections(self._join_timeout_s)
        finally:
            httpd.server_close()
            self._httpd = self._thread = None
        if leftover or thread.is_alive():
            raise RuntimeError(
                f"ScriptedServer: {leftover} connection thread(s) still running after "
                f"{self._join_timeout_s}s (a handler is blocked?)"
            )

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.stop()
        except RuntimeError:
            if exc_type is None:
                raise

    # -- called from connection threads -------------------------------------------------------

    def _answer(self, request: Request) -> Reply:
        key = (request.method, request.path)
        with self._lock:
            self._requests.append(request)
            self._in_flight += 1
            self._max_concurrent = max(self._max_concurrent, self._in_flight)
            queue = self._scripts.get(key)
            if queue:
                return queue.popleft()
            handler = self._routes.get(key) or self._routes.get(("*", request.path))
        handler = handler or self._default
        if handler is None:
            return _NOT_FOUND
        try:
            return handler(request)
        except Exception as exc:
            with self._lock:
                self._errors.append(exc)
            return Reply(status=500, json={"error": f"handler raised {type(exc).__name__}: {exc}"})

    def _done(self) -> None:
        with self._lock:
            self._in_flight -= 1


def _as_handler(handler: Handler | Reply) -> Handler:
    if isinstance(handler, Reply):
        reply = handler
        return lambda _request: reply
    return handler


class _HTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that tracks its connections and threads so they can be closed."""

    daemon_threads = True
    block_on_close = False  # ScriptedServer.stop joins with a timeout instead
    # socketserver's default listen backlog is 5: with 16+ clients connecting at once the
    # kernel drops connections and clients see ReadError (benchmarks run 64 at once)
    request_queue_size = 1024

    def __init__(self, owner: ScriptedServer, address: tuple[str, int]) -> None:
        self.owner = owner
        self._track_lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._conn_threads: set[threading.Thread] = set()
        super().__init__(address, _RequestHandler)

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self._serve_connection,
            args=(request, client_address),
            name=f"ScriptedServer:{self.server_address[1]}:conn",
            daemon=True,
        )
        with self._track_lock:
            self._conns.add(request)
            self._conn_threads.add(thread)
        thread.start()

    def _serve_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            with self._track_lock:
                self._conns.discard(request)
            self.shutdown_request(request)
            with self._track_lock:
                self._conn_threads.discard(threading.current_thread())

    def close_connections(self, timeout_s: float) -> int:
        """Shut every open connection down, join the threads; return how many are left."""
        with self._track_lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + timeout_s
        while True:
            with self._track_lock:
                threads = list(self._conn_threads)
            if not threads:
                return 0
            for thread in threads:
                thread.join(max(0.0, deadline - time.monotonic()))
            if time.monotonic() >= deadline:
                with self._track_lock:
                    return sum(t.is_alive() for t in self._conn_threads)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that went away (timeouts, dropped connections) is routine here; anything
        # else is kept for the test to inspect instead of being printed to stderr.
        exc = sys.exc_info()[1]
        if exc is None or isinstance(exc, OSError):
            return
        with self.owner._lock:
            self.owner._errors.append(exc)


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request log lines."""

    def do_GET(self) -> None:
        self._dispatch()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_GET

    def _dispatch(self) -> None:
        owner = self.server.owner
        body = self._read_body()
        split = urlsplit(self.path)
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        parsed: Any = None
        is_json = False
        if body:
            with contextlib.suppress(ValueError):
                parsed, is_json = _json.loads(body), True
        request = Request(
            method=self.command.upper(),
            path=split.path or "/",
            query=split.query,
            headers=headers,
            body=body,
            json=parsed,
            is_json=is_json,
            received_at=time.monotonic(),
        )
        # Counted down before the client can have the whole answer (before the body, or the
        # drop), so in_flight never exceeds the requests the client still has outstanding: a
        # client that sends its next request on the answer is not seen as one more at once.
        done = False
        try:
            reply = owner._answer(request)
            if (reply.delay_s and owner._stopping.wait(reply.delay_s)) or reply.drop:
                owner._done()
                done = True
                self._drop()
                return
            status, reply_headers, payload = reply.encode()
            self.send_response(status)
            for name, value in reply_headers.items():
                self.send_header(name, value)
            if reply.close:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            owner._done()
            done = True
            self.wfile.write(payload)
        finally:
            if not done:
                owner._done()

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = bytearray()
            while True:
                size = int(self.rfile.readline(65537).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(chunks)
                chunks += self.rfile.read(size)
                self.rfile.readline(65537)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""
