"""The session's refusal to run: one :class:`Stop` per process, one way to set it.

A session refuses when what it was asked to do is not its to do (a run dir another session
holds, a resume of another dataset or runner, xdist workers that built their cases for
different models). Once refused it runs nothing more and writes nothing: the reason is the
one usage error the session ends with (exit 4), on the controller also when a worker found it.
"""

from __future__ import annotations

import pytest

__all__ = ["Stop", "stop_key"]

stop_key = pytest.StashKey["Stop"]()


class Stop:
    """Why the session stopped before running anything; the first reason given stands."""

    def __init__(self) -> None:
        self.reason: str | None = None

    @property
    def refused(self) -> bool:
        return self.reason is not None

    def refuse(self, reason: str) -> str:
        """Refuse the session for ``reason`` (unless it is refused already); the reason that
        stands."""
        if self.reason is None:
            self.reason = reason
        return self.reason
