"""Run-ahead: which eval items this process runs, in order, and their transcripts.

Once collection is done, :meth:`RunAhead.plan` works out this process's items in the order it
will run them (``session.items``, or under xdist the worker's own list from the hash
scheduler) and hands their ids to the dispatcher, which starts the next agents before pytest
reaches them. :meth:`RunAhead.transcript_for` is what an item's setup waits on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeGuard, cast

import pytest

from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.models import Transcript
from pytest_llmeval.engine.dispatch import Dispatcher, Job
from pytest_llmeval.plugin import scheduling as sharding
from pytest_llmeval.plugin.compat import fixture_closure
from pytest_llmeval.tools.broker import ToolBroker

if TYPE_CHECKING:
    from pytest_llmeval.plugin.collect import EvalItem

__all__ = ["RunAhead"]


class RunAhead:
    """The process's run order and its look-ahead into the dispatcher."""

    def __init__(self, config: pytest.Config, settings: Settings, dispatcher: Dispatcher):
        self.config = config
        self.settings = settings
        self.dispatcher = dispatcher
        self._order: list[EvalItem] = []

    def plan(
        self, items: list[pytest.Item], eval_items: Callable[[pytest.Item], TypeGuard[EvalItem]]
    ) -> None:
        """Work out which eval items (``eval_items(item)``) this process runs, in order, for
        the dispatcher."""
        if hasattr(self.config, "workerinput"):
            indices = sharding.run_order(self.config, items)
            ordered = [items[i] for i in indices] if indices is not None else []
        else:
            ordered = list(items)
        self._order = [i for i in ordered if eval_items(i) and i.runnable]
        self.dispatcher.set_order([item.nodeid for item in self._order])

    def transcript_for(self, item: EvalItem) -> Transcript:
        assert item.case is not None
        broker = cast(ToolBroker, item.funcargs["llmeval_broker"])  # or a user's look-alike
        job: Job = (item.case, item.funcargs["llmeval_agent"], broker)
        defs = _fixture_defs(item)

        def lookup(position: int) -> Job | None:
            other = self._order[position]
            if other.case is None or other.case.skip_reason or _fixture_defs(other) != defs:
                return None
            return (other.case, job[1], job[2])

        return self.dispatcher.transcript(item.nodeid, job, lookup)


def _fixture_defs(item: EvalItem) -> tuple[Any, ...]:
    names = fixture_closure(item)
    defs = []
    for name in ("llmeval_agent", "llmeval_broker"):
        chain = names.get(name) or ()
        last = chain[-1] if chain else None
        if last is None or last.scope != "session":
            return (object(),)  # never equal: no run-ahead for non-session fixtures
        defs.append(last)
    return tuple(defs)
