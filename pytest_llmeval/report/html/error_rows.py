"""report.html's "Errors" section: the failing and erroring cases by message, each message
once with its count (``24 cases``) and its first cases, so a run where every case hit the same
problem reads as one row, not one per case (the cases table still has each)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.report.error_groups import count_text, error_groups

__all__ = ["MAX_IDS", "MAX_ROWS", "ErrorRow", "ErrorSection", "error_rows"]

MAX_ROWS = 50
"""Messages the section lists; the rest are counted in its last line."""
MAX_IDS = 5
"""Cases a row names."""


@dataclass
class ErrorRow:
    """One message of the Errors section."""

    cases: str
    """``1 case`` / ``24 cases``."""
    count: int
    """How many cases had it."""
    outcome: str
    """``failed`` or ``error``."""
    message: str
    """The message (a case's own for one case; hexadecimal ids as ``…`` for several)."""
    ids: list[str]
    """The first :data:`MAX_IDS` cases' node ids."""
    more: int
    """How many more cases had it."""


@dataclass
class ErrorSection:
    """The rows, and how many cases the rows left out."""

    rows: list[ErrorRow]
    left: str | None
    """``... and 12 cases more`` when there were more than :data:`MAX_ROWS` messages."""


def error_rows(results: Sequence[CaseResult]) -> ErrorSection | None:
    """The section's rows, the most common message first; ``None`` when no case failed or
    errored (the section is left out). Expected misses (xfailed) are no problem: left out."""
    groups = error_groups([result for result in results if not result.xfailed])
    if not groups:
        return None
    rows = [
        ErrorRow(
            cases=count_text(group.count),
            count=group.count,
            outcome=group.outcome,
            message=group.shown,
            ids=group.nodeids[:MAX_IDS],
            more=max(0, group.count - MAX_IDS),
        )
        for group in groups[:MAX_ROWS]
    ]
    left = sum(group.count for group in groups[MAX_ROWS:])
    return ErrorSection(rows, f"... and {count_text(left)} more" if left else None)
