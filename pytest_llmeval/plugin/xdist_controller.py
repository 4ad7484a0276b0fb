"""The xdist controller's side of the plugin, shaped like xdist's ``dsession``: registered
only in the process that starts the workers. It tells each worker what it must know
(:class:`~pytest_llmeval.plugin.worker_wire.WorkerInput`, the limits server, the hash
scheduler's mark), brings the hash scheduler in, and stops the session on a configuration
error a worker hands on a collect report. The worker's side is
:class:`~pytest_llmeval.plugin.interruption.WorkerStop` and the
:class:`~pytest_llmeval.plugin.worker_wire.WorkerOutput` each plugin fills.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_llmeval.plugin import preflight, running_marks
from pytest_llmeval.plugin import scheduling as sharding
from pytest_llmeval.plugin.dry_sessions import runs_no_case
from pytest_llmeval.plugin.state import LLMEvalState

__all__ = ["XdistController"]


class XdistController:
    """The controller's xdist hooks: registered only in the process that starts the workers
    (xdist's ``dsession``), so no hook asks which process it runs in."""

    def __init__(self, state: LLMEvalState):
        self.state = state

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        preflight.raise_worker_usage_error(report)  # a worker's: one usage error, exit 4

    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        enabled = self.state.settings.hash_scheduling
        return sharding.make_scheduler(config, log, enabled=enabled)

    def pytest_configure_node(self, node: Any) -> None:
        state = self.state
        given = state.worker_input(node.config)
        given.running_marks = running_marks.folder(node.config)
        given.hand_to(node.workerinput)
        state.limits.hand_to_worker(node.workerinput)
        sharding.configure_node(node, enabled=state.settings.hash_scheduling)

    @pytest.hookimpl(tryfirst=True)  # before xdist starts its workers (its hook is trylast)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """The controller collects no case: it claims (creates, tags, locks) the run dir
        before its workers start, so a second session, a read-only folder or a killed
        controller is caught at once. A run dir it created stays only if the session used
        it."""
        distributing = session.config.pluginmanager.has_plugin("dsession")
        if distributing and not runs_no_case(session.config):
            self.state.claim_run_dir()
