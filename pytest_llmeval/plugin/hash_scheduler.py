"""The hash scheduler, an xdist scheduler of its own (xdist keeps its schedulers in
``xdist/scheduler/``): each test runs on the worker its stable hash names, so the same
inputs give the same split whatever the order, and a dead worker's cases are blamed on the
case whose agent it was running. :mod:`~pytest_llmeval.plugin.scheduling` decides when it
is used and tells the workers."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import pytest

from pytest_llmeval.core import shards
from pytest_llmeval.core.shards import assign
from pytest_llmeval.plugin import running_marks
from pytest_llmeval.plugin.compat import xdist_collection_diff, xdist_worker_count

__all__ = ["SHARD_DEST", "HashScheduling", "parse_shard", "shard_count", "worker_index"]

SHARD_DEST = "llmeval_shard"
"""Its option dest: a ``"I/N"`` string or an already parsed ``(I, N)`` tuple."""
_WORKER_RE = re.compile(r"gw(\d+)")


def parse_shard(text: str) -> tuple[int, int]:
    """:func:`pytest_llmeval.core.shards.parse_shard`, whose errors are usage errors here."""
    try:
        return shards.parse_shard(text)
    except shards.ShardSpecError as exc:
        raise pytest.UsageError(str(exc)) from None


def worker_index(workerid: object) -> int | None:
    """``"gw3"`` -> 3; None for anything that is not an xdist worker id."""
    match = _WORKER_RE.fullmatch(str(workerid))
    return int(match.group(1)) if match else None


def shard_count(config: Any) -> int:
    """N of ``--llmeval-shard I/N`` when the option is given, else 1."""
    value = config.getoption(SHARD_DEST, None)
    if value is None or value == "":
        return 1
    if isinstance(value, str):
        return parse_shard(value)[1]
    return int(value[1])


class _Node(Protocol):
    """What the scheduler uses of xdist's ``WorkerController``."""

    @property
    def gateway(self) -> Any: ...

    def send_runtest_some(self, indices: Sequence[int]) -> None: ...

    def shutdown(self) -> None: ...


def _culprit(marks: bytes, pending: Sequence[int]) -> int:
    """The position in ``pending`` of the test a dead node is blamed for: the first whose agent
    it was running (``marks``: :mod:`~pytest_llmeval.plugin.running_marks`), else the item
    pytest was on (the first)."""
    running = running_marks.STARTED
    return next((at for at, i in enumerate(pending) if i < len(marks) and marks[i] == running), 0)


def _judged(marks: bytes, index: int) -> bool:
    return index < len(marks) and marks[index] == running_marks.JUDGED


def _node_order(node: _Node) -> tuple[int, int, str]:
    workerid = str(node.gateway.id)
    index = worker_index(workerid)
    return (0, index, workerid) if index is not None else (1, 0, workerid)


class HashScheduling:
    """xdist scheduler: each test runs on worker ``gw<hash(case key) % n>``.

    All nodes collect; once every initial node has sent its collection and they are identical
    (a difference is logged and reported as a collection error, as ``LoadScheduling`` does, and
    nothing runs), node ``gwN`` receives ``assign(collection, n)[N]`` in one
    ``send_runtest_some`` call, immediately followed by ``shutdown``. A worker only runs an item
    once it knows the next one (or the shutdown marker), and the marker queues behind the
    items, so the whole list runs and the worker then exits; a worker with nothing to run is
    shut down at once. ``n`` is the number of configured workers (``workercount``), so workers
    can compute the same list themselves (:func:`run_order`).

    Crash handling (the EachScheduling way): when a node dies, :meth:`remove_node` returns the
    test it is blamed for, the one whose agent it was running ahead
    (:mod:`~pytest_llmeval.plugin.running_marks`), else the item pytest was on (its first
    pending one), and keeps the rest, in their order (less an item pytest had judged), for the
    next node that joins; xdist starts such a replacement unless ``--max-worker-restart`` is
    exhausted, in which case it stops the session, as it does for its own schedulers. The
    remainder is never spread over the surviving workers: they were told to shut down when they
    got their lists, so nothing sent to them later would run. ``mark_test_pending`` (used by
    ``pytest_handlecrashitem`` implementations that rerun the crashed item) puts the item back
    in front of that remainder.
    """

    def __init__(self, config: Any, log: Any = None) -> None:
        self.config = config
        self.numnodes = xdist_worker_count(config)
        self.shard_count = shard_count(config)
        self.node2collection: dict[_Node, list[str]] = {}
        self.node2pending: dict[_Node, list[int]] = {}
        self.collection: list[str] | None = None
        self.log: Callable[..., None] = log.hashsched if log is not None else _quiet
        self._scheduled = False
        self._started: set[_Node] = set()
        self._orphans: list[list[int]] = []
        self._last_remainder: list[int] | None = None

    @property
    def nodes(self) -> list[_Node]:
        """The nodes in the scheduler."""
        return list(self.node2pending)

    @property
    def collection_is_completed(self) -> bool:
        """Whether every initial node has sent its collection (stays True once scheduled)."""
        return self._scheduled or len(self.node2collection) >= self.numnodes

    @property
    def tests_finished(self) -> bool:
        """Whether every test has run: nothing is waiting for a node, and each node has at
        most its last item left (it already has its shutdown, so that item runs)."""
        if not self.collection_is_completed or self._orphans:
            return False
        return all(len(pending) < 2 for pending in self.node2pending.values())

    @property
    def has_pending(self) -> bool:
        """Whether any test is still to run, on a node or waiting for one."""
        return bool(self._orphans) or any(self.node2pending.values())

    def add_node(self, node: _Node) -> None:
        """A node came up; it collects next."""
        assert node not in self.node2pending
        self.node2pending[node] = []

    def add_node_collection(self, node: _Node, collection: Sequence[str]) -> None:
        """A node finished collecting. After scheduling, this is a replacement node; it must
        have collected exactly the scheduled collection, else it is reported and shut down."""
        assert node in self.node2pending
        if self.collection is not None:
            reference = next(
                (other.gateway.id for other in self.node2collection if other is not node),
                "scheduled collection",
            )
            msg = _collection_diff(self.collection, collection, reference, node.gateway.id)
            if msg:
                if self._orphans:
                    dropped = sum(len(orphan) for orphan in self._orphans)
                    msg += f"\n{dropped} test(s) left by a crashed worker will not run."
                    self._orphans.clear()
                    self._last_remainder = None
                self._report_collection_error(node, msg)
                self._start(node, [])
                return
        self.node2collection[node] = list(collection)

    def mark_test_complete(self, node: _Node, item_index: int, duration: float = 0) -> None:
        """A node finished running a test."""
        self.node2pending[node].remove(item_index)

    def mark_test_pending(self, item: str) -> None:
        """Run ``item`` (a node id, usually the crashed one) again, on the replacement node."""
        if self.collection is None:
            raise ValueError(f"cannot reschedule {item!r} before the tests are scheduled")
        index = self.collection.index(item)
        if self._last_remainder is not None and any(
            orphan is self._last_remainder for orphan in self._orphans
        ):
            self._last_remainder.insert(0, index)
        else:
            self._last_remainder = [index]
            self._orphans.append(self._last_remainder)

    def remove_pending_tests_from_node(self, node: _Node, indices: Sequence[int]) -> None:
        """Only for work stealing, which this scheduler does not do."""
        raise NotImplementedError()

    def remove_node(self, node: _Node) -> str | None:
        """Take a node out (it finished or died). Returns the test it was running when it died,
        None if it had nothing left; the rest of its list waits for a replacement node."""
        pending = self.node2pending.pop(node)
        self.node2collection.pop(node, None)
        self._started.discard(node)
        self._last_remainder = None
        if not pending:
            return None
        assert self.collection is not None
        marks = running_marks.read(self.config, str(node.gateway.id))
        crashitem = self.collection[pending.pop(_culprit(marks, pending))]
        if pending and _judged(marks, pending[0]):
            pending.pop(0)  # the item pytest was on has its result: not judged twice
        if pending:
            self._last_remainder = pending
            self._orphans.append(pending)
        self.log(f"{node.gateway.id} died on {crashitem}; {len(pending)} test(s) wait")
        return crashitem

    def schedule(self) -> None:
        """Send every node its list: the first time by hash, later (replacement nodes) the
        list a crashed node left, or a shutdown when there is nothing left."""
        assert self.collection_is_completed
        if not self._scheduled:
            self._scheduled = True
            self._distribute()
        for node in sorted(self.node2pending, key=_node_order):
            if node in self._started or node not in self.node2collection:
                continue
            if self.collection is not None and self._orphans:
                self._start(node, self._orphans.pop(0))
            else:
                self._start(node, [])

    def _distribute(self) -> None:
        if not self._same_collections():
            self.log("**Different tests collected, aborting run**")
            return
        self.collection = next(iter(self.node2collection.values()))
        shards = assign(self.collection, self.numnodes, shard_count=self.shard_count)
        ready = sorted(
            (node for node in self.node2collection if node in self.node2pending), key=_node_order
        )
        # gwN takes shard N; a node with another id (a replacement for a worker that died
        # while collecting) takes a shard whose worker is missing; a shard with no node left
        # waits for the next node to come up.
        owner: dict[int, _Node] = {}
        spare: list[_Node] = []
        for node in ready:
            index = worker_index(node.gateway.id)
            if index is not None and index < self.numnodes and index not in owner:
                owner[index] = node
            else:
                spare.append(node)
        for shard, indices in enumerate(shards):
            target = owner.get(shard) or (spare.pop(0) if spare else None)
            if target is not None:
                self._start(target, indices)
            elif indices:
                self._orphans.append(indices)
        self.log(
            "hash scheduling:",
            ", ".join(f"{node.gateway.id}={len(self.node2pending[node])}" for node in ready),
        )

    def _start(self, node: _Node, indices: Sequence[int]) -> None:
        """Give ``node`` its whole list at once, then its shutdown (queued behind the list)."""
        self._started.add(node)
        if indices:
            self.node2pending[node].extend(indices)
            node.send_runtest_some(list(indices))
        node.shutdown()

    def _same_collections(self) -> bool:
        collections = list(self.node2collection.items())
        first_node, first = collections[0]
        same = True
        for node, collection in collections[1:]:
            msg = _collection_diff(first, collection, first_node.gateway.id, node.gateway.id)
            if msg:
                same = False
                self._report_collection_error(node, msg)
        return same

    def _report_collection_error(self, node: _Node, msg: str) -> None:
        self.log(msg)
        report = pytest.CollectReport(
            nodeid=node.gateway.id, outcome="failed", longrepr=msg, result=[]
        )
        self.config.hook.pytest_collectreport(report=report)


def _collection_diff(
    first: Sequence[str], other: Sequence[str], first_id: str, other_id: str
) -> str | None:
    return xdist_collection_diff(list(first), list(other), first_id, other_id)


def _quiet(*args: object, **kwargs: object) -> None:
    """Logger used when xdist passes none."""
