"""``--llmeval-resume``: finish an interrupted run, reusing what it finished.

Shaped like pytest's ``--lf`` plugin (``cacheprovider.LFPlugin``): registered only with the
option, it holds the earlier attempts' final results, which of them must be judged again (other
scorers, another scoring configuration) and the notes for the terminal. At collection it
deselects the cases whose final result can be reused: same node id, same case fingerprint (the
data row, expectations included) and the same scoring key. A changed case runs again and the
terminal says how many did. A run dir of another dataset, another runner, or whose files are
gone is refused (:mod:`~pytest_llmeval.plugin.resume_refusals` words why), unless
``--llmeval-resume-allow-mismatch``.

Under xdist every worker collects and compares on its own; it tells its controller (which
collects nothing) in ``workeroutput`` that it refused, and which cases changed.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.config.scoring import ScoringKeys
from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.errors import LLMEvalError, RunDirError
from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.plugin import worker_wire as wire
from pytest_llmeval.plugin.resume_refusals import (
    cases_gone,
    files_gone,
    not_collected,
    other_dataset,
    other_runner,
    other_scoring,
    rows_gone,
)
from pytest_llmeval.plugin.stop import Stop
from pytest_llmeval.rundir.journal import SCORERS_VERSION, read_reusable

__all__ = ["Resume", "RunDirRefused", "resume_key"]

resume_key = pytest.StashKey["Resume"]()

Finished = dict[str, tuple[CaseResult, "dict[str, Any] | None"]]


class RunDirRefused(LLMEvalError):
    """The run dir is not this session's to resume (made by another runner)."""


class Resume:
    """The earlier attempts' final results and what a resume does with them."""

    def __init__(
        self,
        config: pytest.Config,
        settings: Settings,
        run_dir: Path,
        stop: Stop,
        scoring: ScoringKeys,
        attempt: int,
        fingerprint_of: Callable[[Any], tuple[dict[str, Any], str]],
    ) -> None:
        assert settings.resume is not None
        self.config = config
        self.settings = settings
        self.run_dir = run_dir
        self.stop = stop
        self.scoring = scoring
        self.fingerprint_of = fingerprint_of
        try:
            finished, rescore, scorings = read_reusable(self.run_dir, attempt)
        except RunDirError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.finished: Finished = finished
        """The final result (and its runner's fingerprint) of each case an earlier attempt
        finished and this one may reuse, by node id; a case that changed since is dropped."""
        self.rescore: set[str] = rescore
        """Node ids whose final result was judged by other scorers (another plugin version)."""
        self.scorings: dict[str, Any] = scorings
        """The scoring key each reusable result was judged under, by node id."""
        self.notes: list[str] = []
        """Lines for the terminal about what the resume reuses and runs again."""
        self._noted_changed = False
        self._runner_checked = False

    def skip_finished(
        self,
        items: list[pytest.Item],
        case_fingerprint: Callable[[pytest.Item], str | None],
        collected: Collection[str] | None = None,
    ) -> None:
        """Deselect the cases whose final result can be reused. A run dir from another dataset
        (no case in common, or every one changed) is refused unless
        ``--llmeval-resume-allow-mismatch``. ``case_fingerprint`` reads an item's case
        fingerprint (``None`` for another kind of item, or a broken row).

        ``collected``: the node id of every eval item collected now (before any deselection).
        Earlier final results of cases not among them (their file or manifest renamed, moved
        or deleted) would be counted beside the cases collected now, and a deleted manifest's
        results without its gates: refused unless ``--llmeval-resume-allow-mismatch``."""
        config = self.config
        worker = wire.is_worker(config)
        if self.rescore and not worker:
            self.notes.append(
                f"{len(self.rescore)} cases were judged by other scorers than pytest-llmeval "
                f"{SCORERS_VERSION}'s; running them again"
            )
        if not self.finished:
            return
        gone = not_collected(self.finished, collected, self.settings.rootdir)
        if gone and not self.settings.resume_allow_mismatch:
            self._refuse(items, files_gone(self.run_dir, gone))
            return
        # a row of a file collected now is gone; not when node ids chose the cases (a::b)
        rows = (
            []
            if any("::" in str(arg) for arg in config.args)
            else rows_gone(self.finished, collected)
        )
        if rows and not self.settings.resume_allow_mismatch:
            self._refuse(items, cases_gone(self.run_dir, rows))
            return
        reused: list[pytest.Item] = []
        changed: list[str] = []
        rescored = 0
        for item in items:
            entry = self.finished.get(item.nodeid)
            if entry is None:
                continue
            same_row = case_fingerprint(item) == entry[0].case_fingerprint
            same_scoring = self.scorings.get(item.nodeid) == self.scoring(entry[0].file)
            if same_row and same_scoring:
                reused.append(item)
            else:
                changed.append(item.nodeid)
                rescored += same_row
        if not reused and not self.settings.resume_allow_mismatch:
            reason = other_dataset(self.run_dir, len(self.finished), len(changed))
            if changed and rescored == len(changed):
                reason = other_scoring(self.run_dir, rescored)
            self._refuse(items, reason)
            return
        self.drop_changed(changed, len(reused) + len(changed))
        if worker:
            wire.worker_output(config).changed = wire.Changed(
                nodeids=changed, compared=len(reused) + len(changed)
            )
        if reused:
            config.hook.pytest_deselected(items=reused)
            drop = {id(item) for item in reused}
            items[:] = [item for item in items if id(item) not in drop]

    def _refuse(self, items: list[pytest.Item], reason: str) -> None:
        """Stop the session: a usage error, or (an xdist worker) told to the controller and
        nothing runs here."""
        self.stop.refuse(reason)
        if not wire.is_worker(self.config):
            raise pytest.UsageError(reason)
        wire.worker_output(self.config).refusal = reason
        self.config.hook.pytest_deselected(items=list(items))
        items[:] = []

    def drop_changed(self, changed: Sequence[str], compared: int) -> None:
        """Forget the earlier results of cases that changed since (they run again), and say
        how many did."""
        for nodeid in changed:
            self.finished.pop(nodeid, None)  # neither reused nor reported
        if changed and not self._noted_changed:
            self._noted_changed = True
            self.notes.append(
                f"{len(changed)} of {compared} cases changed since the interrupted run; "
                "running them again"
            )

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist, the controller: what a worker found at collection (the controller collects
        nothing): a refused resume, the cases that changed."""
        output = wire.node_output(node)
        if output is None:
            return
        if output.refusal is not None:
            self.stop.refuse(output.refusal)
        if output.changed is not None:
            self.drop_changed(output.changed.nodeids, output.changed.compared)

    def check_runner(self, item: pytest.Item, agent: Any) -> None:
        """The runner (or agent) must be the one that made the run dir's results, unless
        ``--llmeval-resume-allow-mismatch``; checked once per process, at the first case set
        up, before it runs. The session stops with a usage error; an
        xdist worker fails that case with :class:`RunDirRefused` and stops, and its
        controller, told on the report, exits the same way."""
        if self._runner_checked or not self.finished:
            return
        self._runner_checked = True
        runner_id = self.fingerprint_of(agent)[1]
        earlier = {r.runner_fingerprint for r, _ in self.finished.values() if r.runner_fingerprint}
        if not earlier or earlier == {runner_id} or self.settings.resume_allow_mismatch:
            return
        reason = self.stop.refuse(other_runner(self.run_dir, earlier, runner_id))
        if not wire.is_worker(self.config):
            pytest.exit(reason, returncode=pytest.ExitCode.USAGE_ERROR)
        item.session.shouldstop = reason
        raise RunDirRefused(reason)
