"""Session-wide limits on requests to the model or agent backend, across xdist workers.

``--llmeval-max-connections N``
    Requests in flight to the backend, summed over every process of the session.
``--llmeval-rate-limit SPEC``
    Requests and tokens per second or minute (:mod:`~pytest_llmeval.limits.rates`), e.g.
    ``10/s,90000tok/min``.

Every HTTP attempt of the ``openai`` and ``http-agent`` runners (retries included) waits for a
slot of a :class:`Limiter` and tells it how the backend answered; an HTTP 429 scales the
limits down for the whole session (AIMD) and they grow back with each success.

The package, one job a module:

``rates``
    The rate spec and the token estimates.
``core``
    :class:`LimiterCore`: the buckets, the connection window and the AIMD factor; pure.
``client``
    :class:`Limiter` and its kinds: :data:`NULL_LIMITER`, :class:`LocalLimiter` (the core in
    this process) and :class:`RemoteLimiter` (the controller's core, from a worker).
``server``
    :class:`LimitServer`: the controller serving its core to workers on loopback TCP.
``session``
    :class:`SessionLimits`: the limits of one process of a session.
``breaker``
    :class:`Breaker`: the session's circuit breaker per backend (:class:`RemoteBreaker` on a
    worker); it rides on the limiter as ``limiter.breaker``.
``ledger``
    :class:`SpendLedger`: the session's tokens and cost, which budgets compare with their
    limits (:class:`RemoteLedger` on a worker).

Time spent waiting here counts toward ``--llmeval-timeout`` of the case that waits, so keep
``--llmeval-concurrency`` times the workers within what the limits serve in that time.

There is no global limiter: each process of a session holds its :class:`SessionLimits`, and
the plugin hands its :attr:`~SessionLimits.limiter` to the runners it builds through their
:class:`~pytest_llmeval.runners.registry.RunnerRegistry` (``RunnerRegistry(limiter=...)``). A
runner registered by a conftest can send through it too: its factory can close over
``registry.limiter``.
"""

from __future__ import annotations

from pytest_llmeval.limits.breaker import Breaker, RemoteBreaker, breaker_message
from pytest_llmeval.limits.client import (
    NULL_LIMITER,
    Limiter,
    LimiterError,
    LocalLimiter,
    NullLimiter,
    RemoteLimiter,
    Slot,
)
from pytest_llmeval.limits.core import (
    DECREASE,
    INCREASE,
    MIN_FACTOR,
    LimiterCore,
    LimiterStats,
    Ticket,
)
from pytest_llmeval.limits.ledger import RemoteLedger, SpendLedger
from pytest_llmeval.limits.process_limits import SessionLimits
from pytest_llmeval.limits.rates import (
    RATE_FORM,
    RateLimit,
    estimate_tokens,
    parse_rate_limit,
    usage_tokens,
)
from pytest_llmeval.limits.server import LimitServer

__all__ = [
    "DECREASE",
    "INCREASE",
    "MIN_FACTOR",
    "NULL_LIMITER",
    "RATE_FORM",
    "Breaker",
    "LimitServer",
    "Limiter",
    "LimiterCore",
    "LimiterError",
    "LimiterStats",
    "LocalLimiter",
    "NullLimiter",
    "RateLimit",
    "RemoteBreaker",
    "RemoteLedger",
    "RemoteLimiter",
    "SessionLimits",
    "Slot",
    "SpendLedger",
    "Ticket",
    "breaker_message",
    "estimate_tokens",
    "parse_rate_limit",
    "usage_tokens",
]
