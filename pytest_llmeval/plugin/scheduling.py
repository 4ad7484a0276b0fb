"""Stable hash sharding: shard membership, ``--llmeval-shard`` parsing and the xdist scheduler.

Every test is keyed by :func:`case_key` (the case id of an eval item, the function name with
its parameters for an ordinary test) and goes to ``stable_hash(key) % n``: the first 8 bytes
of the key's sha256, read little-endian. Membership depends on the key alone, so reordering,
adding or removing other cases never moves a case to another shard, and a result can be
compared with a baseline run that was split differently.

The same hash drives two things:

* ``--llmeval-shard I/N`` keeps shard ``I`` of ``N`` (runs split across machines or CI jobs);
* :class:`HashScheduling`, the xdist scheduler, sends each case to worker ``gw<hash % n>``
  (one batch per worker, in collection order), so a worker knows before it runs anything which
  cases it will run and in which order (:func:`run_order`), and can start their agents early.

When both are used, the worker is picked from ``(hash // N) % n``: the cases of one shard all
share ``hash % N``, and taking ``hash % n`` again would leave workers idle whenever ``n`` and
``N`` share a factor (``N = n = 2`` would put a whole shard on ``gw0``).

Plugin wiring (hooks stay in ``plugin/hooks.py``)::

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(config, log):
        return sharding.make_scheduler(config, log)       # None: xdist picks its own

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(node):
        sharding.configure_node(node)                     # tells the worker it can predict

    # on a worker, once items are final (pytest_collection_finish):
    order = sharding.run_order(session.config, session.items)   # None: cannot predict
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any, Protocol

from pytest_llmeval.core.shards import (
    SHARD_FLAG,
    assign,
    case_key,
    in_shard,
    shard_of,
    split_shard,
    stable_hash,
    worker_of,
)
from pytest_llmeval.plugin.hash_scheduler import (
    SHARD_DEST,
    HashScheduling,
    parse_shard,
    shard_count,
    worker_index,
)

__all__ = [
    "HASH_SCHEDULING_DEST",
    "HASH_SCHEDULING_KEY",
    "SHARD_DEST",
    "SHARD_FLAG",
    "HashScheduling",
    "assign",
    "case_key",
    "configure_node",
    "hash_scheduling_enabled",
    "in_shard",
    "make_scheduler",
    "mark_hash_scheduling",
    "parse_shard",
    "run_order",
    "shard_of",
    "split_shard",
    "stable_hash",
    "worker_of",
]

HASH_SCHEDULING_DEST = "llmeval_hash_scheduling"
"""Option dest of ``--llmeval-hash-scheduling``: bool, ``"yes"``/``"no"``, or None (default)."""
HASH_SCHEDULING_KEY = "llmeval_hash_scheduling"
"""``workerinput`` key the controller sets when :class:`HashScheduling` feeds the workers."""

_FALSE_WORDS = frozenset({"no", "false", "off", "0"})


# --------------------------------------------------------------------------------------------
# controller side: when to schedule by hash, and telling the workers


def hash_scheduling_enabled(config: Any, enabled: bool | None = None) -> bool:
    """Whether :class:`HashScheduling` replaces xdist's scheduler in this session.

    Only for ``--dist load`` (what ``-n N`` means without ``--dist``), and only when hash
    scheduling is not switched off: ``enabled`` if the caller knows (``Settings.hash_scheduling``
    takes the ini key and environment into account), else the ``llmeval_hash_scheduling`` option
    (False or ``"no"`` switches it off; unset means on).
    """
    if config.getoption("dist", "no") != "load":
        return False
    if enabled is not None:
        return enabled
    value = config.getoption(HASH_SCHEDULING_DEST, True)
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip().lower() not in _FALSE_WORDS
    return value is not False


def make_scheduler(config: Any, log: Any, *, enabled: bool | None = None) -> HashScheduling | None:
    """The body of ``pytest_xdist_make_scheduler``: a :class:`HashScheduling` or None.

    None lets xdist choose its own scheduler (``--dist each``, ``loadscope`` … or hash
    scheduling switched off). ``enabled`` as in :func:`hash_scheduling_enabled`. Register the
    hook with ``@pytest.hookimpl(optionalhook=True)`` so the plugin still loads without xdist.
    """
    if not hash_scheduling_enabled(config, enabled):
        return None
    return HashScheduling(config, log)


def mark_hash_scheduling(workerinput: MutableMapping[str, Any]) -> None:
    """Tell a worker (through its ``workerinput``) that the controller schedules by hash."""
    workerinput[HASH_SCHEDULING_KEY] = True


def configure_node(node: Any, *, enabled: bool | None = None) -> None:
    """The body of ``pytest_configure_node(node)``: mark the node when hash scheduling is on.

    Decide with the same ``enabled`` that is passed to :func:`make_scheduler`: xdist sets nodes
    up (this hook) before it asks for the scheduler.
    """
    if hash_scheduling_enabled(node.config, enabled):
        mark_hash_scheduling(node.workerinput)


# --------------------------------------------------------------------------------------------
# worker side


class _HasNodeId(Protocol):
    @property
    def nodeid(self) -> str: ...


def run_order(config: Any, items: Sequence[_HasNodeId]) -> list[int] | None:
    """On an xdist worker fed by :class:`HashScheduling`: the indices into ``items`` (the
    session's collected items) that this worker runs, in the order it runs them.

    None when it cannot be known: not on a worker, the controller did not mark the worker
    (:func:`mark_hash_scheduling`), or the worker replaces a crashed one (its id is ``gwK``
    with ``K >= workercount``; it runs what the crashed worker left over).
    """
    workerinput: Mapping[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is None or not workerinput.get(HASH_SCHEDULING_KEY):
        return None
    index = worker_index(workerinput.get("workerid"))
    count = workerinput.get("workercount")
    if index is None or not isinstance(count, int) or not 0 <= index < count:
        return None
    return assign([item.nodeid for item in items], count, shard_count=shard_count(config))[index]
