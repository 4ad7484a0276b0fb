"""The ranges of the counts that multiply a run's work (pure).

A repeat count, a judge repeat count, a turn limit or a concurrency multiplies what one case
or one process does, so each is a whole number in a fixed range wherever it is given: the
command line, the ini file, the environment, a manifest or a data row. A value out of range,
or not a whole number (``"3"``, ``true``, ``2.5``, ``1e9``), is an error where it stands,
never a silent default and never a run that does not end.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BATCH_SIZE",
    "CONCURRENCY",
    "JUDGE_REPEATS",
    "MAX_CONNECTIONS",
    "MAX_TURNS",
    "REPEATS",
    "Bound",
]


@dataclass(frozen=True)
class Bound:
    """An inclusive range of whole numbers."""

    low: int
    high: int

    @property
    def text(self) -> str:
        """``a whole number from 1 to 1,000``."""
        return f"a whole number from {self.low:,} to {self.high:,}"

    def holds(self, value: object) -> bool:
        """Whether ``value`` is a whole number (not a bool, not a float) within the range."""
        if type(value) is int:  # the common case, checked first
            return self.low <= value <= self.high
        return (
            isinstance(value, int)
            and not isinstance(value, bool)
            and self.low <= value <= self.high
        )


REPEATS = Bound(1, 1_000)
"""Runs of one case: ``--llmeval-repeats``, a manifest's ``repeats``, a row's
``metadata.repeats``."""
JUDGE_REPEATS = Bound(1, 100)
"""Verdicts asked per answer (``--llmeval-judge-repeats``)."""
MAX_TURNS = Bound(1, 500)
"""Model calls of one case's agent loop: ``--llmeval-max-turns``, a row's own
``max_turns`` (tool-forge ``maxTurns``), a GAIA manifest's ``max_turns``."""
CONCURRENCY = Bound(1, 1_000)
"""Agents in flight per process (``--llmeval-concurrency``)."""
MAX_CONNECTIONS = Bound(1, 10_000)
"""Requests in flight to the backend over the session (``--llmeval-max-connections``)."""
BATCH_SIZE = Bound(1, 4_096)
"""Requests the ``hf`` runner batches at once (``--llmeval-batch-size``)."""
