"""Session-wide limits on requests to the model or agent backend, across xdist workers.

``--llmeval-max-connections N``
    Requests in flight to the backend, summed over every process of the session.
``--llmeval-rate-limit SPEC``
    Comma-separated limits, at most one of each kind: ``N/s`` or ``N/min`` (requests), and
    ``Ntok/s`` or ``Ntok/min`` (tokens), e.g. ``10/s``, ``600/min``, ``90000tok/min``,
    ``10/s,90000tok/min``. ``N`` is a positive number (``0.5/s`` is fine).

Every HTTP attempt of the ``openai`` and ``http-agent`` runners (retries included) goes through
a :class:`Limiter`::

    async with limiter.slot(tokens_estimate) as slot:
        response = await send()
        slot.feedback(response.status_code, retry_after, used_tokens)

**Where the limits live.** One :class:`LimiterCore` per session holds them. Without xdist it
runs in the process (:class:`LocalLimiter`). With ``-n`` the controller serves its core on a
loopback TCP port (:class:`LimitServer`) and every worker talks to it through one connection
(:class:`RemoteLimiter`), a line protocol: ``A id tokens`` asks for a slot, ``G id delay``
grants it (the client sleeps ``delay`` seconds first: rate limit or ``Retry-After`` pause),
``R id status retry_after used_tokens`` gives it back with the answer's status. One round trip
per request (~0.1 ms on loopback); the release needs no answer. A worker's connection closing
gives back whatever it held, so a crashed worker does not leak slots.

**Rates** are token buckets that may go into debt: a request always reserves its cost at once
and waits until the bucket has refilled to zero, so requests queue in arrival order and a
request bigger than the bucket still goes (after a longer wait). A bucket holds one second's
worth (at least one request), so ``600/min`` allows bursts of 10 and then 10 per second.
Token costs are estimated before sending (:func:`estimate_tokens`: a quarter of the JSON
body's characters plus its ``max_tokens``) and corrected by the answer's
``usage.total_tokens`` when it has one.

**Adaptive backoff (AIMD).** Both limits are scaled by one factor ``f`` in
[:data:`MIN_FACTOR`, 1]: ``max(1, floor(f * max_connections))`` connections and ``f * rate``.
An HTTP 429 halves ``f`` (:data:`DECREASE`), once per congestion event: 429s answering requests
admitted before the last decrease do not decrease it again, so a burst of 429s from the
requests already in flight counts once. Each answer below 400 adds :data:`INCREASE` to ``f``.
A 429's ``Retry-After`` also pauses every new request of the session until it has passed.
Other statuses and transport failures leave ``f`` alone. Without any limit there is nothing to
scale and no limiter at all (:data:`NULL_LIMITER`).

Time spent waiting here counts toward ``--llmeval-timeout`` of the case that waits, so keep
``--llmeval-concurrency`` times the workers within what the limits serve in that time.

Runners built by the plugin get the session's limiter from :func:`current`; a runner registered
by a conftest can call it too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
import secrets
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, cast

from pytest_llmeval.errors import RunnerError

__all__ = [
    "DECREASE",
    "INCREASE",
    "MIN_FACTOR",
    "NULL_LIMITER",
    "LimitServer",
    "Limiter",
    "LimiterCore",
    "LimiterError",
    "LocalLimiter",
    "NullLimiter",
    "RateLimit",
    "RemoteLimiter",
    "SessionLimits",
    "Slot",
    "Ticket",
    "current",
    "estimate_tokens",
    "install",
    "parse_rate_limit",
    "uninstall",
    "usage_tokens",
]

DECREASE = 0.5
"""What a 429 multiplies the limits' factor by."""
INCREASE = 0.05
"""What each successful answer adds to the factor (20 successes from nothing back to full)."""
MIN_FACTOR = 1 / 64
"""The factor never goes below this."""

ADDRESS_KEY = "llmeval_limits_address"
TOKEN_KEY = "llmeval_limits_token"

Clock = Callable[[], float]

# -- the rate spec --------------------------------------------------------------------------

RATE_FORM = (
    "LIMIT[,LIMIT] where LIMIT is N/s or N/min (requests) or Ntok/s or Ntok/min (tokens), "
    "at most one of each kind, e.g. 10/s,90000tok/min"
)
_LIMIT = re.compile(r"(?P<n>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(?P<tok>tok)?\s*/\s*(?P<unit>s|min)")
_SECONDS = {"s": 1.0, "min": 60.0}


@dataclass(frozen=True)
class RateLimit:
    """A parsed ``--llmeval-rate-limit``: per-second rates, ``None`` for no limit."""

    requests_per_s: float | None = None
    tokens_per_s: float | None = None
    text: str = ""
    """The spec, normalised (``10/s,90000tok/min``)."""

    def __str__(self) -> str:
        return self.text


def parse_rate_limit(text: str) -> RateLimit:
    """Parse a rate spec; ``ValueError`` says what is wrong (the accepted form: RATE_FORM)."""
    rates: dict[str, float] = {}
    parts: list[str] = []
    for raw in text.split(","):
        piece = raw.strip()
        match = _LIMIT.fullmatch(piece)
        if match is None:
            raise ValueError(f"{piece!r} is not N/s, N/min, Ntok/s or Ntok/min")
        count = float(match["n"])
        if not (math.isfinite(count) and count > 0):
            raise ValueError(f"{piece!r}: the number must be above 0")
        kind = "tokens" if match["tok"] else "requests"
        if kind in rates:
            raise ValueError(f"more than one {kind} limit")
        rates[kind] = count / _SECONDS[match["unit"]]
        parts.append(f"{count:g}{'tok' if match['tok'] else ''}/{match['unit']}")
    return RateLimit(rates.get("requests"), rates.get("tokens"), ",".join(parts))


def estimate_tokens(body: Any) -> int:
    """Tokens a request will cost, guessed before sending: a quarter of its JSON text, plus
    the ``max_tokens`` it asks for."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), default=str)
    tokens = len(text) // 4 + 1
    wanted = body.get("max_tokens") if isinstance(body, dict) else None
    if isinstance(wanted, int) and not isinstance(wanted, bool) and wanted > 0:
        tokens += wanted
    return tokens


def usage_tokens(response: Any) -> int | None:
    """``usage.total_tokens`` of an HTTP response's JSON body, if it has one."""
    try:
        data = response.json()
    except ValueError:
        return None
    usage = data.get("usage") if isinstance(data, dict) else None
    total = usage.get("total_tokens") if isinstance(usage, dict) else None
    if isinstance(total, int) and not isinstance(total, bool) and total >= 0:
        return total
    return None


# -- the limits themselves ------------------------------------------------------------------


@dataclass(frozen=True)
class Ticket:
    """An admitted request: its estimated tokens and the decrease epoch it was admitted in."""

    tokens: int
    epoch: int


class _Bucket:
    """A token bucket that may go into debt (see the module docs)."""

    def __init__(self, rate: float, now: float) -> None:
        self.rate = rate
        self.capacity = max(rate, 1.0)
        self.level = self.capacity
        self.last = now

    def refill(self, at: float, factor: float) -> None:
        if at > self.last:
            self.level = min(self.capacity, self.level + (at - self.last) * self.rate * factor)
            self.last = at

    def reserve(self, cost: float, at: float, factor: float) -> float:
        """Take ``cost`` at time ``at``; when the request may start (``>= at``)."""
        self.refill(at, factor)
        self.level -= cost
        if self.level >= 0:
            return at
        return self.last - self.level / (self.rate * factor)


@dataclass
class LimiterStats:
    """What the limits did this session (for the terminal summary)."""

    requests: int = 0
    """Requests admitted."""
    queued: int = 0
    """Requests that had to wait for a connection."""
    delayed: int = 0
    """Requests admitted with a wait for the rate or a ``Retry-After`` pause."""
    throttled: int = 0
    """Answers with HTTP 429."""
    peak_in_flight: int = 0
    lowest_factor: float = 1.0


class LimiterCore:
    """The session's limits and their AIMD factor; thread-safe, its clock injectable.

    :meth:`request` admits a request at once (a :class:`Ticket` and the seconds it must wait
    before sending) or queues its ``waiter`` (any hashable object) until a connection frees
    up; :meth:`release` hands a ticket back with the answer and returns the queued waiters it
    admitted, each with its ticket and wait. Callers notify those waiters themselves, outside
    the core's lock. Waiters are admitted in the order they asked.
    """

    def __init__(
        self,
        max_connections: int | None = None,
        rate: RateLimit | None = None,
        *,
        clock: Clock = time.monotonic,
    ) -> None:
        if max_connections is not None and max_connections < 1:
            raise ValueError(f"max_connections must be 1 or more, got {max_connections}")
        self.max_connections = max_connections
        self.rate = rate or RateLimit()
        self.clock = clock
        now = clock()
        per_s = self.rate.requests_per_s
        self._requests = _Bucket(per_s, now) if per_s else None
        per_s = self.rate.tokens_per_s
        self._tokens = _Bucket(per_s, now) if per_s else None
        self.factor = 1.0
        self.epoch = 0
        self.in_flight = 0
        self.paused_until = -math.inf
        self.stats = LimiterStats()
        self._queue: deque[tuple[Hashable, int]] = deque()
        self._lock = threading.Lock()

    @property
    def counts_tokens(self) -> bool:
        return self._tokens is not None

    @property
    def window(self) -> int | None:
        """Requests allowed in flight now (``None``: no connection limit)."""
        if self.max_connections is None:
            return None
        return max(1, math.floor(self.max_connections * self.factor + 1e-9))

    @property
    def waiting(self) -> int:
        """Requests queued for a connection."""
        with self._lock:
            return len(self._queue)

    def request(self, tokens: int, waiter: Hashable) -> tuple[Ticket, float] | None:
        """Admit a request now, or queue ``waiter`` and return ``None``."""
        with self._lock:
            if self._queue or not self._has_room():
                self._queue.append((waiter, tokens))
                self.stats.queued += 1
                return None
            return self._admit(tokens)

    def cancel(self, waiter: Hashable) -> bool:
        """Take a queued waiter out of the queue; ``False`` if it is not queued (any more)."""
        with self._lock:
            for entry in self._queue:
                if entry[0] == waiter:
                    self._queue.remove(entry)
                    return True
            return False

    def cancel_where(self, test: Callable[[Hashable], bool]) -> int:
        """Take every queued waiter ``test`` accepts out of the queue; how many there were."""
        with self._lock:
            kept = deque(entry for entry in self._queue if not test(entry[0]))
            dropped = len(self._queue) - len(kept)
            self._queue = kept
            return dropped

    def release(
        self,
        ticket: Ticket,
        status: int = 0,
        retry_after: float | None = None,
        used_tokens: int | None = None,
    ) -> list[tuple[Hashable, Ticket, float]]:
        """Hand a ticket back with the answer's status (0: none, the request failed or was
        cancelled); the queued waiters this admits, each with its ticket and wait."""
        with self._lock:
            now = self.clock()
            self.in_flight -= 1
            if used_tokens is not None and self._tokens is not None:
                self._tokens.refill(now, self.factor)
                self._tokens.level -= used_tokens - ticket.tokens
                self._tokens.level = min(self._tokens.level, self._tokens.capacity)
            if status == 429:
                self.stats.throttled += 1
                if retry_after is not None and retry_after > 0:
                    self.paused_until = max(self.paused_until, now + retry_after)
                if ticket.epoch == self.epoch:
                    self._set_factor(self.factor * DECREASE, now)
                    self.epoch += 1
            elif 0 < status < 400:
                self._set_factor(self.factor + INCREASE, now)
            admitted = []
            while self._queue and self._has_room():
                waiter, tokens = self._queue.popleft()
                admitted.append((waiter, *self._admit(tokens)))
            return admitted

    # -- internals (under the lock) ----------------------------------------------------------

    def _has_room(self) -> bool:
        window = self.window
        return window is None or self.in_flight < window

    def _admit(self, tokens: int) -> tuple[Ticket, float]:
        self.in_flight += 1
        stats = self.stats
        stats.requests += 1
        stats.peak_in_flight = max(stats.peak_in_flight, self.in_flight)
        now = self.clock()
        at = max(now, self.paused_until)
        start = at
        if self._requests is not None:
            start = max(start, self._requests.reserve(1.0, at, self.factor))
        if self._tokens is not None:
            start = max(start, self._tokens.reserve(float(tokens), at, self.factor))
        if start > now:
            stats.delayed += 1
        return Ticket(tokens, self.epoch), start - now

    def _set_factor(self, factor: float, now: float) -> None:
        for bucket in (self._requests, self._tokens):
            if bucket is not None:
                bucket.refill(now, self.factor)  # what accrued so far, at the old rate
        self.factor = min(1.0, max(MIN_FACTOR, factor))
        self.stats.lowest_factor = min(self.stats.lowest_factor, self.factor)


# -- the limiter interface ------------------------------------------------------------------


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
        sock = socket.create_connection(self.address, timeout=10.0)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(None)
        sock.sendall(f"HELLO {self.token}\n".encode("ascii"))
        self._sock = sock
        self._reader = threading.Thread(
            target=self._read, args=(sock,), name="llmeval-limits-client", daemon=True
        )
        self._reader.start()

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
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        if self._reader is not None:
            self._reader.join(timeout=10)
            self._reader = None


# -- the coordinator ------------------------------------------------------------------------


class _Connection:
    """One client of a :class:`LimitServer`: its socket and the tickets it holds."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.lock = threading.Lock()
        self.tickets: dict[int, Ticket] = {}
        self.closed = False

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
    """Serves a :class:`LimiterCore` to :class:`RemoteLimiter` s on ``127.0.0.1``.

    A thread accepts connections and each connection gets a thread reading its lines; grants
    to other connections' waiters are written by whichever thread freed the room. A
    connection must start with ``HELLO <token>``.
    """

    def __init__(self, core: LimiterCore, token: str | None = None) -> None:
        self.core = core
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
                    self._handle(connection, line.split())
        except (OSError, ValueError):
            pass  # a broken client: what it held is given back below
        finally:
            with self._lock:
                self._connections.discard(connection)
            with connection.lock:
                connection.closed = True
                held, connection.tickets = list(connection.tickets.values()), {}
            self.core.cancel_where(lambda waiter: _owner(waiter) is connection)
            for ticket in held:
                self._deliver(self.core.release(ticket))

    def _handle(self, connection: _Connection, fields: list[bytes]) -> None:
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
                todo.extend(self.core.release(ticket))


def _owner(waiter: Hashable) -> object:
    return waiter[0] if isinstance(waiter, tuple) else None


# -- one session ----------------------------------------------------------------------------


class SessionLimits:
    """The limits of one process of a session.

    Without limits its :attr:`limiter` is :data:`NULL_LIMITER`. On a worker whose controller
    serves the limits (``workerinput`` has the address) it is a :class:`RemoteLimiter`;
    otherwise a :class:`LocalLimiter` over this process's own core, which
    :meth:`hand_to_worker` starts serving the first time an xdist worker is configured.
    The limiter is installed as :func:`current` until :meth:`close`.
    """

    def __init__(
        self,
        max_connections: int | None,
        rate_limit: str | None,
        workerinput: dict[str, Any] | None = None,
    ) -> None:
        self.core: LimiterCore | None = None
        self._server: LimitServer | None = None
        rate = parse_rate_limit(rate_limit) if rate_limit else None
        self.limiter: NullLimiter | LocalLimiter | RemoteLimiter
        if max_connections is None and rate is None:
            self.limiter = NULL_LIMITER
        elif workerinput is not None and ADDRESS_KEY in workerinput:
            self.limiter = RemoteLimiter(
                workerinput[ADDRESS_KEY],
                workerinput[TOKEN_KEY],
                counts_tokens=bool(rate and rate.tokens_per_s),
            )
        else:
            self.core = LimiterCore(max_connections, rate)
            self.limiter = LocalLimiter(self.core)
        install(self.limiter)

    def hand_to_worker(self, workerinput: dict[str, Any]) -> None:
        """Serve this process's limits (once) and tell an xdist worker where."""
        if self.core is None:
            return
        if self._server is None:
            self._server = LimitServer(self.core).start()
        workerinput[ADDRESS_KEY] = self._server.address
        workerinput[TOKEN_KEY] = self._server.token

    def summary(self) -> str | None:
        """One line on what the limits did, for the controller's terminal summary."""
        core = self.core
        if core is None or not core.stats.requests:
            return None
        stats = core.stats
        limits = []
        if core.max_connections is not None:
            limits.append(f"{core.max_connections} connections")
        if core.rate.text:
            limits.append(core.rate.text)
        line = (
            f"llmeval limits ({', '.join(limits)}): {stats.requests} requests, at most "
            f"{stats.peak_in_flight} in flight; {stats.queued} waited for a connection, "
            f"{stats.delayed} for the rate"
        )
        if stats.throttled:
            line += (
                f"; {stats.throttled} answered 429: the limits went down to "
                f"{stats.lowest_factor:.0%} and ended at {core.factor:.0%}"
            )
        return line

    def close(self) -> None:
        """Stop serving, close the connection to the controller, uninstall the limiter."""
        uninstall(self.limiter)
        if self._server is not None:
            self._server.stop()
            self._server = None
        self.limiter.close()


_installed: list[Limiter] = []


def current() -> Limiter:
    """The limiter of the running session (:data:`NULL_LIMITER` outside one, or without
    limits); what the runners the plugin builds send through."""
    return _installed[-1] if _installed else NULL_LIMITER


def install(limiter: Limiter) -> None:
    """Make ``limiter`` :func:`current` (a session nested in another one stacks)."""
    _installed.append(limiter)


def uninstall(limiter: Limiter) -> None:
    """Undo :func:`install` of ``limiter``."""
    for index in range(len(_installed) - 1, -1, -1):
        if _installed[index] is limiter:
            del _installed[index]
            return


@contextlib.contextmanager
def installed(limiter: Limiter) -> Iterator[Limiter]:
    """``limiter`` is :func:`current` inside the block."""
    install(limiter)
    try:
        yield limiter
    finally:
        uninstall(limiter)
