"""One process's share of a session's limits, from the settings and ``workerinput``.

Without xdist the limits live in the pytest process. With ``-n`` the controller serves its
core (:mod:`pytest_llmeval.limits.server`) and hands each worker the address and a token
through ``workerinput``; each worker's :class:`SessionLimits` then holds a
:class:`~pytest_llmeval.limits.client.RemoteLimiter` to it. The session's spend
(:mod:`pytest_llmeval.limits.ledger`) is served the same way when a budget is set. Without
any limit there is nothing to share and no limiter at all
(:data:`~pytest_llmeval.limits.client.NULL_LIMITER`).

The session's circuit breaker (:mod:`pytest_llmeval.limits.breaker`) rides on the limiter
(``limiter.breaker``), so every runner that sends through the limits consults it too; with
``-n`` the controller serves it on the same server, limits or not.
"""

from __future__ import annotations

from typing import Any

from pytest_llmeval.limits.breaker import Breaker, RemoteBreaker
from pytest_llmeval.limits.client import (
    NULL_LIMITER,
    LocalLimiter,
    NullLimiter,
    RemoteLimiter,
)
from pytest_llmeval.limits.core import LimiterCore
from pytest_llmeval.limits.ledger import RemoteLedger, SpendLedger
from pytest_llmeval.limits.rates import parse_rate_limit
from pytest_llmeval.limits.server import LimitServer

__all__ = ["SessionLimits"]

ADDRESS_KEY = "llmeval_limits_address"
TOKEN_KEY = "llmeval_limits_token"


class SessionLimits:
    """The limits of one process of a session.

    Without limits its :attr:`limiter` is :data:`NULL_LIMITER`. On a worker whose controller
    serves the limits (``workerinput`` has the address) it is a :class:`RemoteLimiter`;
    otherwise a :class:`LocalLimiter` over this process's own core, which
    :meth:`hand_to_worker` starts serving the first time an xdist worker is configured.
    The plugin hands :attr:`limiter` to the runners it builds (through their
    :class:`~pytest_llmeval.runners.registry.RunnerRegistry`); nothing global refers to it, so
    two sessions in one process (pytester's in-process runs) keep their limits apart.
    """

    def __init__(
        self,
        max_connections: int | None,
        rate_limit: str | None,
        workerinput: dict[str, Any] | None = None,
        breaker_threshold: int = 0,
        budget: bool = False,
    ) -> None:
        self.core: LimiterCore | None = None
        self.breaker: Breaker | None = None
        served = workerinput is not None and ADDRESS_KEY in workerinput
        self.ledger: SpendLedger | None = None
        """The session's spend, kept by the process that serves the limits (a budget is set)."""
        self.remote_ledger: RemoteLedger | None = None
        """On an xdist worker with a budget: the controller's ledger."""
        if budget and served:
            assert workerinput is not None
            self.remote_ledger = RemoteLedger(workerinput[ADDRESS_KEY], workerinput[TOKEN_KEY])
        elif budget:
            self.ledger = SpendLedger()
        if breaker_threshold and served:
            assert workerinput is not None
            address, token = workerinput[ADDRESS_KEY], workerinput[TOKEN_KEY]
            self.breaker = RemoteBreaker(address, token, breaker_threshold)
        elif breaker_threshold:
            self.breaker = Breaker(breaker_threshold)
        self._server: LimitServer | None = None
        rate = parse_rate_limit(rate_limit) if rate_limit else None
        self.limiter: NullLimiter | LocalLimiter | RemoteLimiter
        if max_connections is None and rate is None:
            self.limiter = NULL_LIMITER if self.breaker is None else NullLimiter(self.breaker)
        elif served:
            assert workerinput is not None
            self.limiter = RemoteLimiter(
                workerinput[ADDRESS_KEY],
                workerinput[TOKEN_KEY],
                counts_tokens=bool(rate and rate.tokens_per_s),
            )
        else:
            self.core = LimiterCore(max_connections, rate)
            self.limiter = LocalLimiter(self.core)
        if self.breaker is not None and self.limiter is not NULL_LIMITER:
            self.limiter.breaker = self.breaker

    def hand_to_worker(self, workerinput: dict[str, Any]) -> None:
        """Serve this process's limits and breaker (once) and tell an xdist worker where."""
        if self.core is None and self.breaker is None and self.ledger is None:
            return
        if self._server is None:
            self._server = LimitServer(self.core, breaker=self.breaker, ledger=self.ledger)
            self._server.start()
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
        """Stop serving and close the connection to the controller."""
        if self._server is not None:
            self._server.stop()
            self._server = None
        self.limiter.close()
        if self.breaker is not None:
            self.breaker.close()
        if self.remote_ledger is not None:
            self.remote_ledger.close()
