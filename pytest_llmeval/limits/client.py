"""What runners send through: the :class:`Limiter` protocol and its three kinds.

Every HTTP attempt of the ``openai`` and ``http-agent`` runners (retries included) goes::

    async with limiter.slot(tokens_estimate) as slot:
        response = await send()
        slot.feedback(response.status_code, retry_after, used_tokens)

:data:`NULL_LIMITER` grants every slot at once (no limits). A :class:`LocalLimiter` asks a
:class:`~pytest_llmeval.limits.core.LimiterCore` in this process, from any thread and any
event loop. A :class:`RemoteLimiter` asks the core an xdist controller serves
(:mod:`pytest_llmeval.limits.server`, whose docstring has the line protocol) over one loopback
connection. Grants may arrive on another thread; :class:`_Waiter` hands them to the waiting
task's loop, and gives back any grant nobody waits for any more.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Callable, Hashable
from types import TracebackType
from typing import Any, Protocol

from pytest_llmeval.core.errors import RunnerError
from pytest_llmeval.limits.breaker import Breaker
from pytest_llmeval.limits.channel import close_channel, open_channel
from pytest_llmeval.limits.core import LimiterCore, Ticket

__all__ = [
    "NULL_LIMITER",
    "Limiter",
    "LimiterError",
    "LocalLimiter",
    "NullLimiter",
    "RemoteLimiter",
    "Slot",
]


class Slot:
    """One admitted request. Tell it how the backend answered before leaving the block."""

    __slots__ = ("retry_after", "status", "used_tokens")

    def __init__(self) -> None:
        self.status = 0
        self.retry_after: float | None = None
        self.used_tokens: int | None = None

    def feedback(
        self, status: int, retry_after: float | None = None, used_tokens: int | None = None
    ) -> None:
        """The answer's HTTP status, its ``Retry-After`` in seconds, and the tokens it used
        (``usage.total_tokens``); applied when the slot is given back."""
        self.status = status
        self.retry_after = retry_after
        self.used_tokens = used_tokens


class Limiter(Protocol):
    """What JSON-over-HTTP runners send through: ``async with limiter.slot(tokens) as s``."""

    @property
    def counts_tokens(self) -> bool:
        """Whether a token rate is limited (else the ``tokens`` given to :meth:`slot` are
        ignored and need not be estimated)."""

    def slot(self, tokens: int = 0) -> contextlib.AbstractAsyncContextManager[Slot]:
        """Wait for room for one request of about ``tokens`` tokens; hold it in the block."""


class _NullSlot(Slot):
    __slots__ = ()

    async def __aenter__(self) -> Slot:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


class NullLimiter:
    """No limits: every slot is granted at once."""

    counts_tokens = False
    breaker: Breaker | None = None
    """The session's circuit breaker, which the HTTP runners consult (``None``: none)."""

    def __init__(self, breaker: Breaker | None = None) -> None:
        self.breaker = breaker

    def slot(self, tokens: int = 0) -> contextlib.AbstractAsyncContextManager[Slot]:
        return _NullSlot()

    def close(self) -> None:
        return None


NULL_LIMITER = NullLimiter()


class _Waiter:
    """A request waiting in some event loop for a grant that may come from another thread."""

    __slots__ = ("future", "loop", "orphan")

    def __init__(self, loop: asyncio.AbstractEventLoop, orphan: Callable[[Any], None]) -> None:
        self.loop = loop
        self.future: asyncio.Future[tuple[Any, float]] = loop.create_future()
        self.orphan = orphan  # gives back a grant nobody waits for any more

    def deliver(self, grant: Any, delay: float) -> None:
        """Hand ``grant`` to the waiting task (any thread)."""
        try:
            self.loop.call_soon_threadsafe(self._set, grant, delay)
        except RuntimeError:  # the loop is closed: nobody will take it
            self.orphan(grant)

    def fail(self, error: BaseException) -> None:
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self._fail, error)

    def _set(self, grant: Any, delay: float) -> None:
        if self.future.done():  # cancelled while the grant was on its way
            self.orphan(grant)
        else:
            self.future.set_result((grant, delay))

    def _fail(self, error: BaseException) -> None:
        if not self.future.done():
            self.future.set_exception(error)

    async def wait(self, withdraw: Callable[[], object]) -> tuple[Any, float]:
        try:
            return await self.future
        except asyncio.CancelledError:
            withdraw()  # still queued: no grant will come
            future = self.future
            if not future.done():
                future.cancel()  # a grant arriving later goes back through _set
            elif not future.cancelled() and future.exception() is None:
                self.orphan(future.result()[0])
            raise


class _HeldSlot(Slot):
    """The slot of a :class:`LocalLimiter` or :class:`RemoteLimiter`."""

    __slots__ = ("_grant", "_limiter", "_tokens")

    def __init__(self, limiter: _QueueingLimiter, tokens: int) -> None:
        super().__init__()
        self._limiter = limiter
        self._tokens = tokens
        self._grant: Any = None

    async def __aenter__(self) -> Slot:
        grant, delay = await self._limiter._acquire(self._tokens)
        self._grant = grant
        if delay > 0:
            try:
                await asyncio.sleep(delay)
            except BaseException:
                self._limiter._release(grant, self)
                raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._limiter._release(self._grant, self)


class _QueueingLimiter:
    counts_tokens = False
    breaker: Breaker | None = None
    """The session's circuit breaker, which the HTTP runners consult (``None``: none)."""

    def slot(self, tokens: int = 0) -> contextlib.AbstractAsyncContextManager[Slot]:
        return _HeldSlot(self, tokens)

    async def _acquire(self, tokens: int) -> tuple[Any, float]:
        raise NotImplementedError

    def _release(self, grant: Any, slot: Slot) -> None:
        raise NotImplementedError


class LocalLimiter(_QueueingLimiter):
    """The limits of a :class:`LimiterCore` in this process (any thread, any event loop)."""

    def __init__(self, core: LimiterCore) -> None:
        self.core = core
        self.counts_tokens = core.counts_tokens

    async def _acquire(self, tokens: int) -> tuple[Any, float]:
        waiter = _Waiter(asyncio.get_running_loop(), self._give_back)
        admitted = self.core.request(tokens, waiter)
        if admitted is not None:
            return admitted
        return await waiter.wait(lambda: self.core.cancel(waiter))

    def _release(self, grant: Any, slot: Slot) -> None:
        admitted = self.core.release(grant, slot.status, slot.retry_after, slot.used_tokens)
        _notify(admitted)

    def _give_back(self, grant: Any) -> None:
        _notify(self.core.release(grant))

    def close(self) -> None:
        return None


def _notify(admitted: list[tuple[Hashable, Ticket, float]]) -> None:
    for waiter, ticket, delay in admitted:
        assert isinstance(waiter, _Waiter)
        waiter.deliver(ticket, delay)


class LimiterError(RunnerError):
    """The session's limit coordinator cannot be reached (the controller went away)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="connection", retryable=False)


class RemoteLimiter(_QueueingLimiter):
    """The limits of a :class:`LimitServer` in another process (an xdist worker's view).

    One TCP connection, opened on the first request; a reader thread hands grants to the
    waiting tasks, whatever their event loop.
    """

    def __init__(self, address: str, token: str, *, counts_tokens: bool = False) -> None:
        host, _, port = address.rpartition(":")
        self.address = (host, int(port))
        self.token = token
        self.counts_tokens = counts_tokens
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._reader: threading.Thread | None = None
        self._pending: dict[int, _Waiter] = {}
        self._next_id = 0
        self._broken: str | None = None

    async def _acquire(self, tokens: int) -> tuple[Any, float]:
        waiter = _Waiter(asyncio.get_running_loop(), self._give_back)
        with self._lock:
            self._next_id += 1
            request_id = self._next_id
            self._pending[request_id] = waiter
            try:
                self._send(f"A {request_id} {int(tokens)}\n")
            except LimiterError:
                del self._pending[request_id]
                raise
        return await waiter.wait(lambda: None)  # a late grant is given back by _Waiter

    def _release(self, grant: Any, slot: Slot) -> None:
        retry_after = "-" if slot.retry_after is None else f"{slot.retry_after:.6f}"
        used = "-" if slot.used_tokens is None else str(int(slot.used_tokens))
        with self._lock, contextlib.suppress(LimiterError):
            self._send(f"R {grant} {int(slot.status)} {retry_after} {used}\n")

    def _give_back(self, grant: Any) -> None:
        with self._lock, contextlib.suppress(LimiterError):
            self._send(f"R {grant} 0 - -\n")

    def _send(self, line: str) -> None:
        """Send one line (under ``self._lock``), connecting first if need be."""
        if self._broken is not None:
            raise LimiterError(self._broken)
        try:
            if self._sock is None:
                self._connect()
            assert self._sock is not None
            self._sock.sendall(line.encode("ascii"))
        except OSError as exc:
            self._broken = self._broken or self._lost(exc)
            raise LimiterError(self._broken) from None

    def _connect(self) -> None:
        self._sock, self._reader = open_channel(
            self.address, f"HELLO {self.token}\n", self._read, "llmeval-limits-client",
            nodelay=True,
        )  # fmt: skip

    def _read(self, sock: socket.socket) -> None:
        error: BaseException | None = None
        try:
            with sock.makefile("rb") as lines:
                for line in lines:
                    kind, request_id, delay = line.split()
                    if kind != b"G":
                        raise ValueError(f"unexpected line {line!r}")
                    with self._lock:
                        waiter = self._pending.pop(int(request_id), None)
                    if waiter is not None:
                        waiter.deliver(int(request_id), float(delay))
        except (OSError, ValueError) as exc:
            error = exc
        with self._lock:
            self._broken = self._broken or self._lost(error)
            pending, self._pending = self._pending, {}
        for waiter in pending.values():
            waiter.fail(LimiterError(self._broken))

    def _lost(self, error: BaseException | None) -> str:
        host, port = self.address
        why = f": {type(error).__name__}: {error}" if error is not None else ""
        return f"llmeval limits: lost the session's limit coordinator at {host}:{port}{why}"

    def close(self) -> None:
        """Close the connection (the server gives back whatever it still held)."""
        with self._lock:
            sock, self._sock = self._sock, None
            self._broken = self._broken or "llmeval limits: the limiter is closed"
        close_channel(sock, self._reader)
        self._reader = None
