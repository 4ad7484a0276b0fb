"""A run cut short, and a case a crashed xdist worker was running: neither may end green.

:class:`Interruption` (registered where results arrive: the controller, or a run without
xdist) notes the eval cases the session was to run and why it stopped early, if it did:
``-x``/``--maxfail``, Ctrl-C, SIGTERM or SIGHUP (:mod:`pytest_llmeval.plugin.termination`),
``pytest.exit()`` or a spent budget. At the end, :meth:`Interruption.tally` compares those cases
with the results that arrived: a run in which some case has no result, or a budget skipped some,
was cut short, whatever the reason (xdist giving up on crashed workers leaves cases unrun too).
The report and manifest then carry ``interrupted`` and the cases left out are counted in the
report's ``deselected``, so every gate that held is ``partial`` (``report.gates``).

Under xdist the controller collects nothing: the cases come from the workers' collections
(``pytest_xdist_node_collection_finished``), and a case's suite is read from its file
(:func:`_file_suite`) when no result of that file says it.

:func:`crashed_result` is the error result of a case whose worker died under it (SIGKILL, the
OOM killer, a crash in native code): xdist reports such a case with a bare test report, and
the case must still be in every artifact, an error the gates count, and run again on resume.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from pytest_llmeval.core.errors import CaseFileError
from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.inputs.manifest import SUFFIX
from pytest_llmeval.inputs.regular import not_regular
from pytest_llmeval.plugin import worker_wire as wire
from pytest_llmeval.plugin.collect import HEAD_BYTES, EvalFile, display_path
from pytest_llmeval.plugin.eval_item import EvalItem
from pytest_llmeval.plugin.selection import deselections_key
from pytest_llmeval.plugin.state import LLMEvalState
from pytest_llmeval.plugin.termination import Terminated
from pytest_llmeval.rundir.models import Interrupted

__all__ = [
    "JOURNAL_STOPPED",
    "WORKER_CRASHED",
    "Interruption",
    "crashed_result",
    "merged_counts",
    "stop_reason",
]

JOURNAL_STOPPED = "could not write the journal"
"""What the line of a session stopped by its journal says (:meth:`LLMEvalState.journal_stopped`)."""

WORKER_CRASHED = "worker crashed"
"""How a crashed worker's case's error begins."""

_DATA_SUFFIXES = (".json", ".jsonl")


def stop_reason(exc: BaseException) -> str:
    """``Interrupted.reason`` for the exception that ended a session's test loop.

    pytest's and xdist's ``Interrupted`` (both ``KeyboardInterrupt`` s) carry why the session
    stopped in their text: ``-x``/``--maxfail``, a journal that could not be written, a
    worker's Ctrl-C; a plain ``KeyboardInterrupt`` is Ctrl-C."""
    if isinstance(exc, Terminated):
        return exc.reason
    if isinstance(exc, pytest.exit.Exception):
        return "exit"
    if type(exc) is not KeyboardInterrupt and isinstance(exc, KeyboardInterrupt):
        text = str(exc)
        if text.startswith("stopping after"):
            return "maxfail"
        if JOURNAL_STOPPED in text:
            return "journal"
        return "keyboard_interrupt" if "keyboard-interrupt" in text else "stopped"
    return "keyboard_interrupt"


class WorkerStop:
    """On an xdist worker: says in ``workeroutput`` why its session stopped early, which the
    controller's :class:`Interruption` records (xdist stops the controller as for a Ctrl-C)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        wire.worker_output(self.config).stop_reason = stop_reason(excinfo.value)


def crashed_result(
    nodeid: str, worker: str, suite: str, file: str, category: str | None = None
) -> CaseResult:
    """The error result of the case ``nodeid`` a crashed xdist ``worker`` was running (its
    agent, maybe ahead of pytest's item); it keeps the case's ``category`` for the gates."""
    return CaseResult(
        case_id=nodeid.split("::", 1)[-1],
        suite=suite,
        category=category,
        file=file,
        line=0,
        nodeid=nodeid,
        outcome="error",
        passed=False,
        error=(
            f"{WORKER_CRASHED}: xdist worker {worker} died while running this case (killed, "
            "out of memory or a crash in native code); --llmeval-resume runs it again"
        ),
    )


class Interruption:
    """The eval cases the session was to run, and why it stopped early."""

    def __init__(self, state: LLMEvalState) -> None:
        self.state = state
        self.reason: str | None = None
        self.planned: dict[str, str | None] = {}
        """Node id -> suite of each eval case to run in this session (``None``: not known
        yet, under xdist)."""
        self.worker_reasons: set[str] = set()
        """xdist: why workers stopped, when it was not a plain Ctrl-C (``sigterm`` ...)."""
        self._suites: dict[str, tuple[str, str]] = {}
        """File part of a node id -> (suite, data file), read once."""
        self._categories: dict[str, dict[str, str | None]] = {}
        """File part of a node id -> each case's category, collected once (after a crash)."""
        self.session: pytest.Session | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    # -- hooks -------------------------------------------------------------------------------

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.settle(session)

    def settle(self, session: pytest.Session) -> None:
        """The eval cases of ``session.items``, planned once (filled whole, or not at all).
        Also called as an interrupted session ends: a signal that stopped an earlier
        implementation of ``pytest_collection_finish`` skips this one, and the run must still
        say what it planned (``interrupted``), not vanish."""
        if not self.planned:
            self.planned = {
                item.nodeid: item.suite_name for item in session.items if isinstance(item, EvalItem)
            }

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        """xdist: every worker collects the same items; the first one's eval cases."""
        if not self.planned:
            self.planned = {nodeid: None for nodeid in ids if self.is_eval(nodeid)}

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        reason = stop_reason(excinfo.value)
        if reason == "keyboard_interrupt" and self.worker_reasons:
            # xdist stops the controller for a worker's interrupt as for a Ctrl-C: the worker
            # said why (a SIGTERM to the whole process group reaches the workers first)
            reason = sorted(self.worker_reasons)[-1]
        self.reason = self.reason or reason

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist: why a worker stopped, read before the controller stops for it."""
        output = wire.node_output(node)
        reason = output.stop_reason if output is not None else None
        if reason is not None and reason != "keyboard_interrupt":
            self.worker_reasons.add(reason)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Any:
        """``-x``/``--maxfail`` exits 1 under xdist too (its controller stops with an
        ``Interrupted``, which pytest makes 2), before the verdict reads the status."""
        if self.reason == "maxfail" and session.exitstatus == pytest.ExitCode.INTERRUPTED:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return (yield)

    # -- reading -----------------------------------------------------------------------------

    def suite_of(self, nodeid: str) -> tuple[str, str]:
        """The suite and data file of the case ``nodeid``, from its file."""
        part = nodeid.split("::", 1)[0]
        if part not in self._suites:
            self._suites[part] = _file_suite(self.state.settings.rootdir / part, self.state)
        return self._suites[part]

    def category_of(self, nodeid: str) -> str | None:
        """The category of the case ``nodeid``, as its file's collection gives it (the xdist
        controller collects nothing: its file is collected here, once, after a crash)."""
        part = _file(nodeid)
        if part not in self._categories:
            path = self.state.settings.rootdir / part
            self._categories[part] = _file_categories(self.session, path, self.state)
        return self._categories[part].get(nodeid)

    def tally(
        self, session: pytest.Session, results: Sequence[CaseResult]
    ) -> tuple[Interrupted | None, dict[str, int]]:
        """Whether the run was cut short (``None``: every case ran) and, by suite, its cases
        that have no result."""
        have = {result.nodeid for result in results}
        known = {_file(r.nodeid): r.suite for r in results}
        unrun: dict[str, int] = {}
        for nodeid, suite in self.planned.items():
            if nodeid not in have:
                name = suite or known.get(_file(nodeid)) or self.suite_of(nodeid)[0]
                unrun[name] = unrun.get(name, 0) + 1
        skipped = sum(1 for r in results if r.budget_skip is not None)
        if not unrun and not skipped:
            return None, {}
        reason = self.reason
        if reason is None:
            reason = _session_reason(session) or ("budget" if skipped else "incomplete")
        deselected = self.state.config.stash[deselections_key].by_suite
        total = len(have) + sum(unrun.values()) + sum(deselected.values())
        return Interrupted(reason=reason, cases_run=len(have) - skipped, cases_total=total), unrun

    def is_eval(self, nodeid: str) -> bool:
        """Whether ``nodeid`` names an eval case (a data file's or a manifest's), as
        ``pytest_collect_file`` chooses the files."""
        name = PurePosixPath(nodeid.split("::", 1)[0]).name
        if name.endswith(SUFFIX) or name.endswith(_DATA_SUFFIXES):
            return True
        return any(fnmatch.fnmatch(name, glob) for glob in self.state.settings.file_globs)


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _session_reason(session: pytest.Session) -> str | None:
    if session.shouldfail:
        return "maxfail"
    if session.shouldstop:
        return "stopped"
    return None


def merged_counts(*counts: Iterable[tuple[str, int]]) -> dict[str, int] | None:
    """Counts by suite added up, sorted; ``None`` when there are none."""
    total: dict[str, int] = {}
    for pairs in counts:
        for suite, count in pairs:
            total[suite] = total.get(suite, 0) + count
    return dict(sorted(total.items())) if total else None


def _file_suite(path: Path, state: LLMEvalState) -> tuple[str, str]:
    """The suite and the data file (display path) of the eval file or manifest at ``path``,
    read as :class:`~pytest_llmeval.plugin.collect.EvalFile` reads it; ``"unknown"`` and
    ``path`` when it cannot be read.

    For the controller under xdist, which collects nothing but must still name the suite of
    a case a crashed worker was running."""
    rootdir = state.settings.rootdir
    display = display_path(path, rootdir)
    if not_regular(path):
        return "unknown", display
    try:
        if path.name.endswith(SUFFIX):
            manifest = state.manifests.read(path)
            suite = state.suites.get(manifest.suite)
            folder = suite is not None and suite.data_folder  # BFCL: a data folder, or none
            return manifest.suite, display_path(manifest.data_path(folder=folder), rootdir)
        with path.open("rb") as handle:
            head = handle.read(HEAD_BYTES)
    except (OSError, CaseFileError):
        return "unknown", display
    suite = state.suites.claim(path, head) if head.strip() else None
    return (suite.name if suite is not None else "unknown"), display


def _file_categories(
    session: pytest.Session | None, path: Path, state: LLMEvalState
) -> dict[str, str | None]:
    """Node id -> category of each case of the eval file or manifest at ``path``, collected
    as a worker collects it; empty when it cannot be."""
    if session is None or not_regular(path):
        return {}
    try:
        node = EvalFile.from_parent(session, path=path, state=state)
        return {item.nodeid: item.category for item in node.collect() if isinstance(item, EvalItem)}
    except Exception:  # a file that no longer collects: the crash is still reported
        return {}
