"""A circuit breaker per backend, shared by every case of a session.

A dead backend would otherwise cost every case its own connection attempts and retries. The
HTTP runners (:class:`~pytest_llmeval.runners.http.JsonHttp`) tell the session's
:class:`Breaker` how each attempt went:

* a **connection failure** (refused, a host name that does not resolve, a dropped
  connection) adds one to the backend's count;
* **any HTTP answer**, whatever its status, sets the count back to 0: the backend is there;
* timeouts count neither way (a slow backend is not a dead one).

When the count reaches ``threshold`` the breaker *opens* for that backend, for the rest of
the session: every later request to it raises
:class:`~pytest_llmeval.core.errors.BackendUnreachable` before anything is sent, so the remaining
cases become errors at once, each with the same one-line message. A resumed run
(``--llmeval-resume``) starts with a closed breaker and runs them again.

Backends are told apart by the URL the runner names them by (its base URL, without
credentials). With xdist, each worker holds a :class:`RemoteBreaker`: it counts on its own,
reports every failure (and the success after one) to the controller's
:class:`~pytest_llmeval.limits.server.LimitServer`, which counts for the whole session, and
hears when any process opened a breaker.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable

from pytest_llmeval.core.errors import BackendUnreachable
from pytest_llmeval.limits.channel import close_channel, open_channel

__all__ = ["Breaker", "RemoteBreaker", "breaker_message"]

Listener = Callable[[str, str], None]


def breaker_message(backend: str, failures: int, reason: str) -> str:
    """The one line every case sent to ``backend`` after its breaker opened shows."""
    plural = "s" if failures != 1 else ""
    return (
        f"backend {backend} is unreachable: circuit breaker open after {failures} consecutive "
        f"connection failure{plural} ({reason}); remaining cases not sent"
    )


class Breaker:
    """Consecutive connection failures per backend, and the backends given up on.

    Thread-safe; any event loop. ``threshold`` 0 never opens.
    """

    def __init__(self, threshold: int) -> None:
        if threshold < 0:
            raise ValueError(f"threshold must be 0 (off) or more, got {threshold}")
        self.threshold = threshold
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._open: dict[str, str] = {}
        self._listeners: list[Listener] = []

    def check(self, backend: str) -> None:
        """Raise :class:`BackendUnreachable` if the breaker of ``backend`` is open."""
        message = self._open.get(backend)
        if message is not None:
            raise BackendUnreachable(message)

    def message(self, backend: str) -> str | None:
        """The open breaker's message for ``backend``, or ``None`` while it is closed."""
        return self._open.get(backend)

    def failure(self, backend: str, reason: str) -> str | None:
        """Count a connection failure; the breaker's message if this one opened it."""
        with self._lock:
            if backend in self._open:
                return None
            count = self._counts.get(backend, 0) + 1
            self._counts[backend] = count
            if not self.threshold or count < self.threshold:
                return None
        message = breaker_message(backend, count, reason)
        return message if self.trip(backend, message) else None

    def success(self, backend: str) -> None:
        """The backend answered: its count starts again from 0 (an open breaker stays open)."""
        if self._counts.get(backend):
            with self._lock:
                self._counts[backend] = 0

    def trip(self, backend: str, message: str) -> bool:
        """Open the breaker of ``backend`` with ``message``; ``False`` if it was open."""
        with self._lock:
            if backend in self._open:
                return False
            self._open[backend] = message
            listeners = list(self._listeners)
        for listener in listeners:
            listener(backend, message)
        return True

    def opened(self) -> dict[str, str]:
        """Every open breaker: backend → message."""
        with self._lock:
            return dict(self._open)

    def listen(self, listener: Listener) -> None:
        """Call ``listener(backend, message)`` whenever a breaker opens (any thread)."""
        with self._lock:
            self._listeners.append(listener)

    def close(self) -> None:
        return None


class RemoteBreaker(Breaker):
    """An xdist worker's breaker, kept in step with the controller's through its limit server.

    Lines to the server: ``W`` (send me every open breaker, now and later), ``F {json}`` (a
    connection failure: ``backend``, ``reason``) and ``S {json}`` (a success after a failure:
    ``backend``). The server sends ``O {json}`` (``backend``, ``message``) when a breaker is or
    becomes open. If the server cannot be reached, the worker's own count still opens it.
    """

    def __init__(self, address: str, token: str, threshold: int) -> None:
        super().__init__(threshold)
        host, _, port = address.rpartition(":")
        self.address = (host, int(port))
        self.token = token
        self._send_lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._reader: threading.Thread | None = None
        self._broken = False
        self._failed_since_success: set[str] = set()

    def check(self, backend: str) -> None:
        self._connected()
        super().check(backend)

    def failure(self, backend: str, reason: str) -> str | None:
        self._failed_since_success.add(backend)
        self._send("F", {"backend": backend, "reason": reason})
        return super().failure(backend, reason)

    def success(self, backend: str) -> None:
        if backend in self._failed_since_success:
            self._failed_since_success.discard(backend)
            self._send("S", {"backend": backend})
        super().success(backend)

    def _connected(self) -> None:
        if self._sock is None and not self._broken:
            self._send(None, None)

    def _send(self, kind: str | None, payload: dict[str, str] | None) -> None:
        with self._send_lock:
            if self._broken:
                return
            try:
                if self._sock is None:
                    self._sock, self._reader = open_channel(
                        self.address, f"HELLO {self.token}\nW\n", self._read, "llmeval-breaker"
                    )
                if kind is not None:
                    line = f"{kind} {json.dumps(payload, ensure_ascii=True)}\n"
                    self._sock.sendall(line.encode("ascii"))
            except OSError:
                self._broken = True  # counting goes on in this process alone

    def _read(self, sock: socket.socket) -> None:
        with contextlib.suppress(OSError, ValueError), sock.makefile("rb") as lines:
            for line in lines:
                kind, _, payload = line.partition(b" ")
                if kind == b"O":
                    data = json.loads(payload)
                    self.trip(str(data["backend"]), str(data["message"]))

    def close(self) -> None:
        with self._send_lock:
            sock, self._sock = self._sock, None
            self._broken = True
        close_channel(sock, self._reader)
        self._reader = None
