"""Stable-hash shard and worker membership: pure functions, no pytest.

A case belongs to shard ``sha256(case id) mod N`` (first 8 bytes, little-endian), so
membership never changes when the dataset is reordered or other cases come and go.
:mod:`pytest_llmeval.plugin.scheduling` builds the xdist scheduler on these.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from pytest_llmeval.core.errors import ConfigError

__all__ = [
    "SHARD_FLAG",
    "ShardSpecError",
    "assign",
    "case_key",
    "in_shard",
    "parse_shard",
    "shard_of",
    "split_shard",
    "stable_hash",
    "worker_of",
]

SHARD_FLAG = "--llmeval-shard"
"""The command-line flag that keeps one shard of the collection."""

_SHARD_RE = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


class ShardSpecError(ConfigError, ValueError):
    """An ``I/N`` shard that is not one."""


class _HasNodeId(Protocol):
    @property
    def nodeid(self) -> str: ...


_T = TypeVar("_T", bound=_HasNodeId)


# --------------------------------------------------------------------------------------------
# hashing and membership


def stable_hash(key: str) -> int:
    """The first 8 bytes of ``sha256(key)`` (UTF-8) as a little-endian unsigned integer."""
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "little")


def shard_of(key: str, n: int) -> int:
    """The shard (0 .. n-1) that ``key`` belongs to out of ``n``."""
    _check_count(n)
    return stable_hash(key) % n


def worker_of(key: str, n: int, *, shard_count: int = 1) -> int:
    """The worker (0 .. n-1) that runs ``key`` when the run keeps one shard of ``shard_count``.

    With ``shard_count == 1`` (no ``--llmeval-shard``) this is ``shard_of(key, n)``.
    """
    _check_count(n)
    _check_count(shard_count)
    return (stable_hash(key) // shard_count) % n


def case_key(nodeid: str) -> str:
    """The key a test is sharded by: the part of its node id after the last ``::``.

    For an eval item (``path::case_id``) that is the case id; for an ordinary test it is the
    function name with its parameters (``test_f[1-a]``). A ``::`` inside the parameter part
    (``test_f[a::b]``) does not split it. A node id without ``::`` is its own key.
    """
    _path, sep, rest = nodeid.partition("::")
    if not sep:
        return nodeid
    bracket = rest.find("[")
    head = rest if bracket < 0 else rest[:bracket]
    cut = head.rfind("::")
    return rest if cut < 0 else rest[cut + 2 :]


def in_shard(nodeid: str, index: int, count: int) -> bool:
    """Whether the test ``nodeid`` belongs to shard ``index`` of ``count``."""
    return shard_of(case_key(nodeid), count) == index


def split_shard(
    items: Sequence[_T], index: int, count: int, sharded: Callable[[_T], bool]
) -> tuple[list[_T], list[_T]]:
    """``(kept, dropped)``: the items of shard ``index`` of ``count``, in their order, and the
    rest. Only items for which ``sharded(item)`` holds are split; every other item is kept
    (each shard runs it)."""
    kept: list[_T] = []
    dropped: list[_T] = []
    for item in items:
        keep = not sharded(item) or in_shard(item.nodeid, index, count)
        (kept if keep else dropped).append(item)
    return kept, dropped


def assign(nodeids: Sequence[str], n: int, *, shard_count: int = 1) -> list[list[int]]:
    """For each of ``n`` workers, the indices into ``nodeids`` it runs, in collection order.

    Test ``i`` goes to worker ``worker_of(case_key(nodeids[i]), n, shard_count=...)``. Every
    index appears exactly once; a worker may get none.
    """
    _check_count(n)
    _check_count(shard_count)
    buckets: list[list[int]] = [[] for _ in range(n)]
    for index, nodeid in enumerate(nodeids):
        buckets[(stable_hash(case_key(nodeid)) // shard_count) % n].append(index)
    return buckets


def _check_count(n: int) -> None:
    if n < 1:
        raise ValueError(f"the number of shards or workers must be 1 or more, got {n}")


def parse_shard(text: str) -> tuple[int, int]:
    """Parse ``--llmeval-shard I/N`` into ``(I, N)``; ``0 <= I < N`` and ``N >= 1``.

    Raises :class:`ShardSpecError` naming the flag and the accepted form otherwise.
    """
    match = _SHARD_RE.fullmatch(text)
    if match is None:
        raise ShardSpecError(
            f"{SHARD_FLAG} takes I/N, shard I of N counted from 0 (for example 0/4), got {text!r}"
        )
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1:
        raise ShardSpecError(f"{SHARD_FLAG} I/N needs N >= 1, got {text!r}")
    if index >= count:
        raise ShardSpecError(
            f"{SHARD_FLAG} I/N needs 0 <= I < N (shards are counted from 0), got {text!r}; "
            f"the shards of {count} are 0/{count} .. {count - 1}/{count}"
        )
    return index, count
