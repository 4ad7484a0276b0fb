"""Run-ahead: which eval items this process runs, in order, and their transcripts.

Once collection is done, :meth:`RunAhead.plan` works out this process's items in the order it
will run them (``session.items``, or under xdist the worker's own list from the hash
scheduler) and hands their ids to the dispatcher, which starts the next agents before pytest
reaches them. :meth:`RunAhead.transcript_for` is what an item's setup waits on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeGuard

import pytest

from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.models import EvalCase, Transcript
from pytest_llmeval.engine.dispatch import Dispatcher, Job
from pytest_llmeval.plugin import running_marks
from pytest_llmeval.plugin import scheduling as sharding
from pytest_llmeval.plugin import worker_wire as wire
from pytest_llmeval.tools.broker import ToolBroker

__all__ = ["Queued", "RunAhead"]


class Queued(Protocol):
    """An eval item as the run-ahead reads it (collection's item, seen from below)."""

    @property
    def nodeid(self) -> str: ...

    @property
    def case(self) -> EvalCase | None:
        """The case, built from its row on first use; ``None`` when it cannot be."""

    @property
    def runnable(self) -> bool:
        """Whether there is a case to run (known without building it)."""

    def session_fixtures(self) -> tuple[object, ...]:
        """What answers its ``llmeval_agent`` and ``llmeval_broker``: equal for two items
        only when both are the same session-scoped fixtures (their agent may run ahead)."""


class RunAhead:
    """The process's run order and its look-ahead into the dispatcher."""

    def __init__(self, config: pytest.Config, settings: Settings, dispatcher: Dispatcher):
        self.config = config
        self.settings = settings
        self.dispatcher = dispatcher
        self._order: list[Queued] = []
        self._marks: running_marks.Marks | None = None

    def plan(
        self, items: list[pytest.Item], eval_items: Callable[[pytest.Item], TypeGuard[Queued]]
    ) -> None:
        """Work out which eval items (``eval_items(item)``) this process runs, in order, for
        the dispatcher."""
        marks = None
        if wire.is_worker(self.config):
            indices = sharding.run_order(self.config, items)
            ordered = [items[i] for i in indices] if indices is not None else []
            if indices:  # a crash names the case whose agent ran ahead, not pytest's item
                where = {items[i].nodeid: i for i in indices}
                marks = running_marks.open_marks(self.config, where, len(items))
        else:
            ordered = list(items)
        self._order = [i for i in ordered if eval_items(i) and i.runnable]
        self._marks = marks
        self.dispatcher.set_order([item.nodeid for item in self._order], marks)

    def judged(self, nodeid: str) -> None:
        """pytest made the call report of ``nodeid``: a crash after this does not run it again."""
        if self._marks is not None:
            self._marks.judged(nodeid)

    def transcript_for(self, item: Queued, agent: Any, broker: ToolBroker) -> Transcript:
        """The transcript of ``item``'s case, run by ``agent`` with ``broker`` (its fixtures'
        values, a user's look-alike broker maybe)."""
        assert item.case is not None
        job: Job = (item.case, agent, broker)
        defs = item.session_fixtures()

        def lookup(position: int) -> Job | None:
            """The job at ``position`` (its case built here from its row): the dispatcher
            asks for it without holding its lock."""
            other = self._order[position]
            if other.case is None or other.case.skip_reason or other.session_fixtures() != defs:
                return None
            return (other.case, job[1], job[2])

        return self.dispatcher.transcript(item.nodeid, job, lookup)
