"""The controller's side of the limits: a :class:`LimiterCore` served on loopback TCP.

With ``-n`` the controller runs a :class:`LimitServer` on ``127.0.0.1`` (a random port) and
every worker talks to it through one connection
(:class:`~pytest_llmeval.limits.client.RemoteLimiter`). The protocol is ASCII lines:

``HELLO token``
    Opens the connection; a wrong token gets it closed without a word.
``A id tokens``
    Asks for a slot for request ``id`` (the client's own counter) of about ``tokens`` tokens.
``G id delay``
    Grants it (the server's only line): the client sleeps ``delay`` seconds first (rate limit
    or ``Retry-After`` pause), then sends.
``R id status retry_after used_tokens``
    Gives it back with the answer's status (0: none); ``-`` for an unknown ``retry_after``
    or ``used_tokens``. It needs no answer.

The session's circuit breaker (:mod:`pytest_llmeval.limits.breaker`) travels on the same
server, on a connection of its own per worker:

``W``
    Watch the breakers: the server sends ``O`` for every breaker open now, and for each one
    that opens later.
``F {"backend", "reason"}``
    A connection failure at ``backend``; the server's count opens the breaker at the
    threshold, for every process.
``S {"backend"}``
    A success after a failure: the count starts again.
``O {"backend", "message"}``
    (server) The breaker of ``backend`` is open.

and so does the session's spend (:mod:`pytest_llmeval.limits.ledger`): ``B prompt completion
cost`` adds a case's, ``T prompt completion cost`` answers the session's totals.

One round trip per request (~0.1 ms on loopback). A connection closing gives back whatever
it held and drops what it still waited for, so a crashed worker does not leak slots.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import socket
import threading
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any, cast

from pytest_llmeval.limits.breaker import Breaker
from pytest_llmeval.limits.core import LimiterCore, Ticket
from pytest_llmeval.limits.ledger import SpendLedger

__all__ = ["LimitServer"]


class _Connection:
    """One client of a :class:`LimitServer`: its socket and the tickets it holds."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.lock = threading.Lock()
        self.tickets: dict[int, Ticket] = {}
        self.closed = False
        self.watching = False

    def send(self, line: str) -> None:
        """Send one line, unless the client is gone."""
        with self.lock:
            if not self.closed:
                with contextlib.suppress(OSError):
                    self.sock.sendall(line.encode("ascii"))

    def grant(self, request_id: int, ticket: Ticket, delay: float) -> bool:
        """Record and send a grant; ``False`` when the client is gone (give it back)."""
        with self.lock:
            if self.closed:
                return False
            self.tickets[request_id] = ticket
            try:
                self.sock.sendall(f"G {request_id} {delay:.6f}\n".encode("ascii"))
            except OSError:
                return False  # the reader sees the close and gives back the rest
            return True


class LimitServer:
    """Serves a :class:`LimiterCore` to :class:`RemoteLimiter` s on ``127.0.0.1``, a
    :class:`Breaker` to :class:`RemoteBreaker` s and a :class:`SpendLedger` to
    :class:`RemoteLedger` s (any may be ``None``).

    A thread accepts connections and each connection gets a thread reading its lines; grants
    to other connections' waiters are written by whichever thread freed the room. A
    connection must start with ``HELLO <token>``.
    """

    def __init__(
        self,
        core: LimiterCore | None,
        token: str | None = None,
        *,
        breaker: Breaker | None = None,
        ledger: SpendLedger | None = None,
    ) -> None:
        self.core = core
        self.breaker = breaker
        self.ledger = ledger
        if breaker is not None:
            breaker.listen(self._broadcast)
        self.token = token or secrets.token_hex(16)
        self._listener: socket.socket | None = None
        self._threads: list[threading.Thread] = []
        self._connections: set[_Connection] = set()
        self._lock = threading.Lock()

    @property
    def address(self) -> str:
        if self._listener is None:
            raise RuntimeError("LimitServer is not running")
        host, port = self._listener.getsockname()[:2]
        return f"{host}:{port}"

    def start(self) -> LimitServer:
        listener = socket.create_server(("127.0.0.1", 0))
        self._listener = listener
        self._spawn(self._accept, listener, name="llmeval-limits-server")
        return self

    def stop(self) -> None:
        """Stop accepting, close every connection and join every thread (idempotent)."""
        listener, self._listener = self._listener, None
        if listener is None:
            return
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.sock.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(timeout=10)
        self._threads.clear()

    def __enter__(self) -> LimitServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _spawn(self, target: Callable[..., None], *args: Any, name: str) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                sock, _ = listener.accept()
            except OSError:
                return  # stopped
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._spawn(self._serve, sock, name="llmeval-limits-conn")

    def _serve(self, sock: socket.socket) -> None:
        connection = _Connection(sock)
        with self._lock:
            self._connections.add(connection)
        try:
            with sock, sock.makefile("rb") as lines:
                if lines.readline().split() != [b"HELLO", self.token.encode("ascii")]:
                    return
                for line in lines:
                    if line[:1] in (b"W", b"F", b"S"):
                        self._handle_breaker(connection, line)
                    elif line[:1] == b"B":
                        if self.ledger is None:
                            raise ValueError("no ledger is served")
                        connection.send(self.ledger.line(line.split()))
                    else:
                        self._handle(connection, line.split())
        except (OSError, ValueError):
            pass  # a broken client: what it held is given back below
        finally:
            with self._lock:
                self._connections.discard(connection)
            with connection.lock:
                connection.closed = True
                held, connection.tickets = list(connection.tickets.values()), {}
            if self.core is not None:
                self.core.cancel_where(lambda waiter: _owner(waiter) is connection)
                for ticket in held:
                    self._deliver(self.core.release(ticket))

    def _handle_breaker(self, connection: _Connection, line: bytes) -> None:
        breaker = self.breaker
        if breaker is None:
            raise ValueError("no circuit breaker is served")
        kind, _, payload = line.strip().partition(b" ")
        if kind == b"W":
            connection.watching = True
            for backend, message in breaker.opened().items():
                connection.send(_open_line(backend, message))
            return
        data = json.loads(payload)
        if kind == b"F":
            breaker.failure(str(data["backend"]), str(data["reason"]))
        elif kind == b"S":
            breaker.success(str(data["backend"]))
        else:
            raise ValueError(f"bad line {line!r}")

    def _broadcast(self, backend: str, message: str) -> None:
        """Tell every watching client that the breaker of ``backend`` opened."""
        with self._lock:
            watching = [c for c in self._connections if c.watching]
        for connection in watching:
            connection.send(_open_line(backend, message))

    def _handle(self, connection: _Connection, fields: list[bytes]) -> None:
        if self.core is None:
            raise ValueError("no limits are served")
        if fields[0] == b"A" and len(fields) == 3:
            request_id = int(fields[1])
            admitted = self.core.request(int(fields[2]), (connection, request_id))
            if admitted is not None:
                self._deliver([((connection, request_id), *admitted)])
        elif fields[0] == b"R" and len(fields) == 5:
            with connection.lock:
                ticket = connection.tickets.pop(int(fields[1]), None)
            if ticket is None:
                return  # not held (any more): nothing to give back
            retry_after = None if fields[3] == b"-" else float(fields[3])
            used = None if fields[4] == b"-" else int(fields[4])
            self._deliver(self.core.release(ticket, int(fields[2]), retry_after, used))
        else:
            raise ValueError(f"bad line {b' '.join(fields)!r}")

    def _deliver(self, admitted: list[tuple[Hashable, Ticket, float]]) -> None:
        """Send grants; a grant to a client that is gone is given back at once."""
        todo = deque(admitted)
        while todo:
            waiter, ticket, delay = todo.popleft()
            connection, request_id = cast(tuple[_Connection, int], waiter)
            if not connection.grant(request_id, ticket, delay):
                assert self.core is not None
                todo.extend(self.core.release(ticket))


def _open_line(backend: str, message: str) -> str:
    payload = json.dumps({"backend": backend, "message": message}, ensure_ascii=True)
    return f"O {payload}\n"


def _owner(waiter: Hashable) -> object:
    return waiter[0] if isinstance(waiter, tuple) else None
