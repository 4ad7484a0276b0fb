"""Equal values held once: what a session keeps of every case (token counts, scores, junit
properties, report facts) repeats the same few values, and each copy is bytes held to the end.

A :class:`HeldOnce` table maps a key to the value first given for it, so later equal ones are
that object. It holds at most ``limit`` values, then starts again (a session of distinct values
holds no more than that; equal ones given after a restart are simply held once more). A value
held this way is shared: it must never be changed in place.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["HeldOnce"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class HeldOnce(Generic[K, V]):
    """The value held for each key, at most ``limit`` of them."""

    __slots__ = ("_held", "limit")

    def __init__(self, limit: int = 4096) -> None:
        self._held: dict[K, V] = {}
        self.limit = limit

    def held(self, key: K, value: V) -> V:
        """The value held for ``key``: ``value``, the first time (or after a restart)."""
        found = self._held.get(key)
        if found is None:
            if len(self._held) >= self.limit:
                self._held.clear()
            found = self._held[key] = value
        return found

    def made(self, key: K, make: Callable[[], V]) -> V:
        """:meth:`held`, with the value made by ``make()`` only when none is held yet."""
        found = self._held.get(key)
        return found if found is not None else self.held(key, make())
