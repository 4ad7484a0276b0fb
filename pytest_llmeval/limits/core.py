"""The session's limits as plain bookkeeping: connections, rate buckets and the AIMD factor.

Nothing here sleeps, opens a socket or knows an event loop: :class:`LimiterCore` says who may
go and after how many seconds, on an injectable clock, and the limiters of
:mod:`pytest_llmeval.limits.client` do the waiting.

**Rates** are token buckets that may go into debt: a request always reserves its cost at once
and waits until the bucket has refilled to zero, so requests queue in arrival order and a
request bigger than the bucket still goes (after a longer wait). A bucket holds one second's
worth (at least one request), so ``600/min`` allows bursts of 10 and then 10 per second.

**Adaptive backoff (AIMD).** Both limits are scaled by one factor ``f`` in
[:data:`MIN_FACTOR`, 1]: ``max(1, floor(f * max_connections))`` connections and ``f * rate``.
An HTTP 429 halves ``f`` (:data:`DECREASE`), once per congestion event: 429s answering requests
admitted before the last decrease do not decrease it again, so a burst of 429s from the
requests already in flight counts once. Each answer below 400 adds :data:`INCREASE` to ``f``.
A 429's ``Retry-After`` also pauses every new request of the session until it has passed.
Other statuses and transport failures leave ``f`` alone.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from pytest_llmeval.limits.rates import RateLimit

__all__ = ["DECREASE", "INCREASE", "MIN_FACTOR", "LimiterCore", "LimiterStats", "Ticket"]

DECREASE = 0.5
"""What a 429 multiplies the limits' factor by."""
INCREASE = 0.05
"""What each successful answer adds to the factor (20 successes from nothing back to full)."""
MIN_FACTOR = 1 / 64
"""The factor never goes below this."""

Clock = Callable[[], float]


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
