"""The session's spend, counted once for every process: what budgets compare with their limit.

Without xdist the budget counts in its own process. With ``-n`` every worker adds what each of
its cases cost to the controller's :class:`SpendLedger`, through the limit server
(:mod:`pytest_llmeval.limits.server`), and reads back the session's totals, so
``--llmeval-max-tokens-total`` and ``--llmeval-max-cost`` hold for the whole session rather
than for a share per worker. Lines (on a connection of its own per worker):

``B prompt completion cost``
    Add one case's prompt and completion tokens and cost (US dollars; ``0`` without prices).
``T prompt completion cost``
    (server) The session's totals after it.

A worker that cannot reach the ledger goes on counting alone and stops at its share of the
limit (the limit divided by the workers): never past the limit, only earlier.
"""

from __future__ import annotations

import io
import socket
import threading
from dataclasses import dataclass

__all__ = ["RemoteLedger", "SpendLedger", "Totals"]


@dataclass(frozen=True)
class Totals:
    """Tokens and cost counted so far."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class SpendLedger:
    """The session's running totals (thread-safe: the server's connection threads add)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals = Totals()

    def add(self, prompt: int, completion: int, cost: float) -> Totals:
        """Add one case's spend; the totals after it."""
        if prompt < 0 or completion < 0 or not cost >= 0:
            raise ValueError("spend is never negative")
        with self._lock:
            t = self._totals
            self._totals = Totals(
                t.prompt_tokens + prompt, t.completion_tokens + completion, t.cost_usd + cost
            )
            return self._totals

    def line(self, fields: list[bytes]) -> str:
        """The server's answer to a ``B`` line's fields (``ValueError`` on a bad one)."""
        if len(fields) != 4:
            raise ValueError(f"bad ledger line {b' '.join(fields)!r}")
        totals = self.add(int(fields[1]), int(fields[2]), float(fields[3]))
        return f"T {totals.prompt_tokens} {totals.completion_tokens} {totals.cost_usd!r}\n"


class RemoteLedger:
    """A worker's view of the controller's :class:`SpendLedger`: one blocking round trip per
    case (about 0.1 ms on loopback)."""

    def __init__(self, address: str, token: str) -> None:
        host, _, port = address.rpartition(":")
        self.address = (host, int(port))
        self.token = token
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._lines: io.BufferedReader | None = None
        self.broken = False
        """Set once the server could not be reached: the caller counts alone from then on."""

    def add(self, prompt: int, completion: int, cost: float) -> Totals | None:
        """Add this spend to the session's; its totals, or ``None`` when the server is gone."""
        with self._lock:
            if self.broken:
                return None
            try:
                if self._sock is None:
                    self._sock = socket.create_connection(self.address, timeout=30.0)
                    self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    self._sock.sendall(f"HELLO {self.token}\n".encode("ascii"))
                    self._lines = self._sock.makefile("rb")
                assert self._lines is not None
                self._sock.sendall(f"B {prompt} {completion} {cost!r}\n".encode("ascii"))
                answer = self._lines.readline().split()
                if len(answer) != 4 or answer[0] != b"T":
                    raise OSError("no totals from the ledger")
                return Totals(int(answer[1]), int(answer[2]), float(answer[3]))
            except (OSError, ValueError):
                self.broken = True
                self._close()
                return None

    def _close(self) -> None:
        sock, self._sock = self._sock, None
        lines, self._lines = self._lines, None
        if lines is not None:
            lines.close()
        if sock is not None:
            sock.close()

    def close(self) -> None:
        with self._lock:
            self.broken = True
            self._close()
