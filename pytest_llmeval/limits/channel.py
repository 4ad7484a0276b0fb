"""A worker's line channel to the controller's limit server: connect, introduce, listen.

Both the limiter client and the shared circuit breaker open one: a TCP connection to the
controller on 127.0.0.1, a ``HELLO <token>`` line (and the kind of channel), and a daemon
thread reading the server's lines.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable

__all__ = ["close_channel", "open_channel"]


def open_channel(
    address: tuple[str, int],
    hello: str,
    read: Callable[[socket.socket], None],
    name: str,
    *,
    nodelay: bool = False,
) -> tuple[socket.socket, threading.Thread]:
    """A connected socket to ``address`` that has sent ``hello`` (ASCII lines), and the
    started daemon thread running ``read(sock)``. Raises :class:`OSError` as connecting does."""
    sock = socket.create_connection(address, timeout=10.0)
    if nodelay:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.settimeout(None)
    sock.sendall(hello.encode("ascii"))
    reader = threading.Thread(target=read, args=(sock,), name=name, daemon=True)
    reader.start()
    return sock, reader


def close_channel(sock: socket.socket | None, reader: threading.Thread | None) -> None:
    """Shut ``sock`` down (its reader then sees the end) and wait for ``reader`` to stop."""
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()
    if reader is not None:
        reader.join(timeout=10)
