"""What an agent can reach while it runs one case: its own workspace and the event stream.

The dispatcher opens a :class:`CaseRun` around every case (in the case's own asyncio task, so
concurrent cases never share one). Agents, built-in or a user's, call :func:`workspace` for a
private scratch folder under the run dir and :func:`emit` to add events to the case's stream,
which ends up in ``events.jsonl``. Both work from sync agents too (``asyncio.to_thread`` copies
the context into the worker thread).
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_llmeval.core.errors import LLMEvalError

__all__ = [
    "CaseRun",
    "begin_case",
    "case_run",
    "case_scope",
    "current",
    "emit",
    "end_case",
    "next_repeat_index",
    "repeat_index",
    "workspace",
    "workspace_name",
]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class CaseRun:
    """One running case: where its files go and what happened so far."""

    key: str
    """The case's node id."""
    workspace_root: Path | None
    """Parent of the per-case workspaces (``<run dir>/workspaces``)."""
    repeat: int = 0
    """Which repeat of the case this is (``--llmeval-repeats``), from 0."""
    events: list[dict[str, Any]] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)
    _workspace: Path | None = None

    def workspace(self) -> Path:
        """This case's private folder, created on first use."""
        if self._workspace is None:
            if self.workspace_root is None:
                raise LLMEvalError("this session has no run dir for case workspaces")
            name = self.key if not self.repeat else f"{self.key}#{self.repeat}"
            self._workspace = self.workspace_root / workspace_name(name)
            self._workspace.mkdir(parents=True, exist_ok=True)
        return self._workspace

    def emit(self, event: str, **data: Any) -> None:
        elapsed = round((time.perf_counter() - self.started) * 1000, 3)
        self.events.append({"type": event, "elapsed_ms": elapsed, **data})


_current: ContextVar[CaseRun | None] = ContextVar("llmeval_case_run", default=None)


def workspace_name(key: str) -> str:
    """A folder name for a node id: readable, and unique through a short hash."""
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:8]
    return f"{_UNSAFE.sub('_', key).strip('_')[-80:]}-{digest}"


@contextmanager
def case_run(key: str, workspace_root: Path | None, repeat: int = 0) -> Iterator[CaseRun]:
    """Make ``key`` (its ``repeat``-th run) the running case for the code inside."""
    run = CaseRun(key=key, workspace_root=workspace_root, repeat=repeat)
    token = _current.set(run)
    try:
        yield run
    finally:
        _current.reset(token)


def current() -> CaseRun | None:
    """The running case, or ``None`` outside of one."""
    return _current.get()


def repeat_index() -> int:
    """Which repeat of its case is running (0 outside a case or without repeats): a runner
    that caches or seeds by request can tell repeats apart with it."""
    run = _current.get()
    return run.repeat if run is not None else 0


def workspace() -> Path:
    """The running case's private scratch folder (created on first call)."""
    run = _current.get()
    if run is None:
        raise LLMEvalError("workspace() is only available while a case runs")
    return run.workspace()


def emit(event: str, **data: Any) -> None:
    """Add an event to the running case's stream; outside a case it is dropped."""
    run = _current.get()
    if run is not None:
        run.emit(event, **data)


# -- repeated requests within one case (cassette keys) ---------------------------------------

_case_counts: ContextVar[dict[str, int] | None] = ContextVar(
    "pytest_llmeval_cassette_case", default=None
)
_counts_lock = threading.Lock()


def begin_case() -> Token[dict[str, int] | None]:
    """Start counting repeated requests for one case; pass the token to :func:`end_case`.

    The counter is a fresh dict stored in a context variable and mutated in place, so asyncio
    tasks created inside the case (which copy the context) share it. Enter it once per case,
    inside that case's own task, never around several cases.
    """
    return _case_counts.set({})


def end_case(token: Token[dict[str, int] | None]) -> None:
    """Stop counting for the case :func:`begin_case` started."""
    _case_counts.reset(token)


@contextmanager
def case_scope() -> Iterator[None]:
    """``with case_scope(): ...`` around everything one case does (sync or async code)."""
    token = begin_case()
    try:
        yield
    finally:
        end_case(token)


def next_repeat_index(request_id: str) -> int:
    """How many times ``request_id`` was seen before in the current case (0 outside a case)."""
    counts = _case_counts.get()
    if counts is None:
        return 0
    with _counts_lock:
        index = counts.get(request_id, 0)
        counts[request_id] = index + 1
    return index
