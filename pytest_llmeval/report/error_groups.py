"""Identical errors, shown once with their count: ``24 cases: no cassette for this request``.

A run where every case hits the same problem (no cassette, a refused key, an endpoint down)
would otherwise list one line per case. The terminal's llmeval section, ``summary.md`` and
``report.html`` group the failing and erroring cases by their message (on one line, clipped)
and show each message once, with how many cases had it and the first few of their ids.
A case's own hexadecimal id (a cassette key, a digest) differs from case to case in an
otherwise identical message, so it is read as ``…`` when grouping. pytest's own short
summary still lists every failed test.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pytest_llmeval.core.clip import clip
from pytest_llmeval.core.models import CaseResult

__all__ = ["MAX_MESSAGE", "ErrorGroup", "count_text", "error_groups", "message_key", "one_message"]

MAX_MESSAGE = 200
"""A message is clipped to this many characters (on one line)."""

_VOLATILE = re.compile(r"\b[0-9a-f]{8,}…|\b[0-9a-fA-F]{32,}\b")
"""A case's own id in a message: a hexadecimal id cut with ``…`` (the replay runner's cassette
key) or a whole digest (32 digits or more). A shorter one (a runner's folder) is kept."""


@dataclass
class ErrorGroup:
    """The cases of one outcome (``failed`` or ``error``) that share one message."""

    outcome: str
    """``failed`` (a scored miss) or ``error`` (the case could not be judged)."""
    message: str
    """The shared message, on one line and clipped, its hexadecimal ids read as ``…``."""
    first: str
    """The first case's message as it is (on one line, clipped): what a group of one shows."""
    nodeids: list[str] = field(default_factory=list)
    """The cases' node ids, in the order given."""

    @property
    def count(self) -> int:
        return len(self.nodeids)

    @property
    def shown(self) -> str:
        """The message to show: the case's own for a group of one, else the shared one."""
        return self.first if self.count == 1 else self.message


def one_message(error: str | None) -> str:
    """A case's message on one line, clipped to :data:`MAX_MESSAGE`."""
    return clip(" ".join((error or "").splitlines()), MAX_MESSAGE)


def message_key(message: str) -> str:
    """What two cases' messages (:func:`one_message`) must share to be grouped: the text
    with its hexadecimal ids read as ``…``."""
    return _VOLATILE.sub("…", message)


def error_groups(
    results: Iterable[CaseResult], outcomes: Sequence[str] = ("failed", "error")
) -> list[ErrorGroup]:
    """The cases of ``outcomes`` grouped by outcome and message, the largest group first
    (then in order of first appearance)."""
    groups: dict[tuple[str, str], ErrorGroup] = {}
    for result in results:
        if result.outcome not in outcomes:
            continue
        message = one_message(result.error)
        key = (result.outcome, message_key(message))
        groups.setdefault(key, ErrorGroup(*key, first=message)).nodeids.append(result.nodeid)
    return sorted(groups.values(), key=lambda group: -group.count)


def count_text(count: int) -> str:
    """``1 case`` / ``24 cases``."""
    return f"{count} case" if count == 1 else f"{count} cases"
