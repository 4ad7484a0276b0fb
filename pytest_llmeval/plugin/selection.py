"""Which eval cases a run left out, so gates judged on a subset say ``partial``: those not
selected, and those that were skipped (:meth:`Deselections.counts`).

Every eval item collected is noted (before ``--lf`` filters a file's items, which it does
without calling ``pytest_deselected``); whatever of them is not in the session's items once
collection is done was left out (``-k``, ``-m``, ``--lf``, any other plugin). Two are not a
subset of the run: another shard's cases (``--llmeval-shard``: the merge judges the whole) and
a resume's finished cases (their results are in the report). Under xdist each worker collects
on its own; its counts reach the controller in ``workeroutput``, and the controller keeps the
largest count per suite (every worker collects the same items).

Not seen: files ``--lf`` skips whole (no case of theirs failed last time) are never collected.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.core.shards import in_shard
from pytest_llmeval.plugin import worker_wire as wire
from pytest_llmeval.plugin.eval_item import EvalItem
from pytest_llmeval.plugin.resume import Resume
from pytest_llmeval.plugin.state import LLMEvalState

__all__ = ["Deselections", "deselections_key"]

deselections_key = pytest.StashKey["Deselections"]()


class Deselections:
    """Eval cases deselected in this run, by suite (registered in every process)."""

    def __init__(self, state: LLMEvalState, resume: Resume | None = None):
        self.state = state
        self.resume = resume
        self.by_suite: dict[str, int] = {}
        self._collected: dict[str, str] = {}
        """Node id -> suite of every eval item collected."""
        self.suites: set[str] = set()
        """The suites of every eval item collected, deselected or not (what gates may name)."""
        self.manifests: set[str] = set()
        """The ``*.llmeval.yaml`` manifests (their names in the session's manifest index) of
        every eval item collected, so their gates are judged (``partial``) when every case of
        theirs was deselected."""
        self.categories: dict[str, set[str]] = {}
        """The categories of every eval item collected, by suite (as ``report.json`` keys
        them: ``(none)`` for a case without one), so a gate on a category no case has is a
        usage error, not an optional ``n/a``."""

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Any:
        report = yield  # innermost: the items before --lf keeps only the last failures
        for item in report.result or ():
            if isinstance(item, EvalItem):
                self._collected[item.nodeid] = item.suite_name
                self.suites.add(item.suite_name)
                if item.eval_file.manifest_name is not None:
                    self.manifests.add(item.eval_file.manifest_name)
                found = self.categories.setdefault(item.suite_name, set())
                found.add(item.category or "(none)")
        return report

    def collected_nodeids(self) -> set[str]:
        """The node id of every eval item collected so far, deselected or not (until the
        collection finishes)."""
        return set(self._collected)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.settle(session)

    def settle(self, session: pytest.Session) -> None:
        """Count the collected eval cases ``session.items`` left out, once (filled whole, or
        not at all). Also called as an interrupted session ends: a signal that stopped an
        earlier implementation of ``pytest_collection_finish`` skips this one, and the gates
        of the cases left out must still be judged (``partial``)."""
        if not self._collected:
            return
        kept = {item.nodeid for item in session.items}
        shard = self.state.settings.shard
        finished = self.resume.finished if self.resume is not None else {}
        by_suite: dict[str, int] = {}
        for nodeid, suite in self._collected.items():
            if nodeid in kept or nodeid in finished:
                continue  # ran, or resumed: its earlier result is in the report
            if shard is not None and not in_shard(nodeid, *shard):
                continue  # another shard's case: the merge judges the whole
            by_suite[suite] = by_suite.get(suite, 0) + 1
        self.by_suite, self._collected = by_suite, {}

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if session.exitstatus == pytest.ExitCode.INTERRUPTED:  # an xdist worker's, as above
            self.settle(session)
        output = wire.worker_output(session.config)  # an xdist worker's, to its controller
        output.deselected = dict(self.by_suite)
        output.manifests = sorted(self.manifests)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist: a worker's deselections (each worker collected the whole run)."""
        output = wire.node_output(node)
        if output is None:
            return
        for suite, count in output.deselected.items():
            self.by_suite[suite] = max(self.by_suite.get(suite, 0), count)
        self.manifests.update(output.manifests)

    def counts(self, results: Iterable[CaseResult] = ()) -> dict[str, int] | None:
        """``Report.deselected``: the cases left out by suite, sorted; ``None`` when none was.

        Left out are the deselected cases and, of ``results``, those that were skipped: by a
        spent budget (``--llmeval-max-tokens-total``, ``--llmeval-max-cost``), a fixture's or
        an agent's ``pytest.skip``, a ``skip``/``skipif`` mark or ``xfail(run=False)``; gates
        judged the rest only (:func:`~pytest_llmeval.report.verdict.skipped_under_gates`).
        """
        left_out = dict(self.by_suite)
        for result in results:
            if result.outcome == "skipped":
                left_out[result.suite] = left_out.get(result.suite, 0) + 1
        return dict(sorted(left_out.items())) if left_out else None
