"""The data files' hashes as collected: report.json's ``datasets`` is of what was judged.

Each eval file is hashed once, right after its collection read it (once per file, never per
case), into the process's :class:`~pytest_llmeval.suites.base.CollectedData`. Under xdist the
controller collects nothing: every worker sends its hashes with its ``workeroutput`` and the
controller keeps them, noting a file the workers read with different bytes (edited between
their collections). At the end the writer records these hashes and notes a file whose bytes
changed on disk after it was collected.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from pytest_llmeval.core.fingerprint import file_sha256
from pytest_llmeval.plugin import worker_wire as wire
from pytest_llmeval.plugin.collect import EvalFile
from pytest_llmeval.plugin.state import LLMEvalState
from pytest_llmeval.suites.base import CollectedData

__all__ = ["CollectedHashes"]


class CollectedHashes:
    """Hashes each eval file as collected; on a worker, sends them to the controller."""

    def __init__(self, config: pytest.Config, state: LLMEvalState):
        self.config = config
        self.state = state
        self.rootdir = state.settings.rootdir

    @property
    def data(self) -> CollectedData:
        return self.state.context.collected  # built on first use, as collection builds it

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(
        self, collector: pytest.Collector
    ) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
        report = yield
        if isinstance(collector, EvalFile) and collector.suite_name != "unknown":
            path = self.rootdir / collector.data_display  # the data file, a manifest's too
            try:
                digest = file_sha256(path)
            except OSError:  # unreadable or gone: its cases say why; the end hashes it if it can
                return report
            self.data.add(collector.data_display, digest)
            wire.worker_output(self.config).datasets = dict(self.data.hashes)
        return report

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """A worker's hashes (none from a worker that died before collecting)."""
        output = wire.node_output(node)
        for name, digest in sorted(output.datasets.items() if output is not None else ()):
            self.data.add(name, digest)
