"""The append-only results journal, and resuming an interrupted run from it.

Every process (the single pytest process, or each xdist worker) appends each finished case to
its own file ``<run dir>/journal/<attempt>/<process>.jsonl`` and flushes it, so a run killed
with ``kill -9`` keeps every case it finished. ``--llmeval-resume RUN_DIR`` starts a new
attempt in the same run dir: cases with a *final* result in an earlier attempt are not run
again (an ``error`` is not final: infrastructure faults are retried; nor is a case a budget
skipped), and the report covers
every case. Earlier attempts only are read, so all xdist workers see the same set.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from pytest_llmeval.models import CaseResult
from pytest_llmeval.pricing import is_budget_skip
from pytest_llmeval.rundir.layout import RunLayout

FINAL_OUTCOMES = ("passed", "failed", "skipped")
_ENCODER = json.JSONEncoder(sort_keys=True)  # json.dumps(..., sort_keys=True), built once


def journal_root(run_dir: Path) -> Path:
    return RunLayout(run_dir).journal


def next_attempt(run_dir: Path) -> int:
    """The number of the attempt a new session in ``run_dir`` makes (1 for a fresh run)."""
    root = journal_root(run_dir)
    numbers = [int(p.name) for p in root.iterdir() if p.name.isdigit()] if root.is_dir() else []
    return max(numbers, default=0) + 1


class Journal:
    """One process's journal file for one attempt; thread-safe, flushed per case."""

    def __init__(self, run_dir: Path, attempt: int, process: str):
        self.path = journal_root(run_dir) / f"{attempt:03d}" / f"{process}-{os.getpid()}.jsonl"
        self._handle: IO[str] | None = None
        self._lock = threading.Lock()

    def append(self, result: dict[str, Any], runner: dict[str, Any] | None) -> None:
        line = _ENCODER.encode({"result": result, "runner": runner})
        with self._lock:
            if self._handle is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._handle = self.path.open("a", encoding="utf-8")
            self._handle.write(line + "\n")
            self._handle.flush()

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None


def read_final(
    run_dir: Path, before_attempt: int
) -> dict[str, tuple[CaseResult, dict[str, Any] | None]]:
    """Final results by node id from the attempts before ``before_attempt`` (later wins).

    A line cut short by a crash (the last line of a file) is skipped.
    """
    return read_results(run_dir, before_attempt, final_only=True)


def read_results(
    run_dir: Path, before_attempt: int | None = None, *, final_only: bool = False
) -> dict[str, tuple[CaseResult, dict[str, Any] | None]]:
    """The latest journaled result of every case (only final ones with ``final_only``)."""
    found: dict[str, tuple[CaseResult, dict[str, Any] | None]] = {}
    root = journal_root(run_dir)
    if not root.is_dir():
        return found
    attempts = sorted(
        p
        for p in root.iterdir()
        if p.name.isdigit() and (before_attempt is None or int(p.name) < before_attempt)
    )
    for attempt in attempts:
        for path in sorted(attempt.glob("*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(line)
                    result = CaseResult.kept(entry["result"])
                except (ValueError, KeyError, TypeError, ValidationError):
                    continue
                if not final_only or _final(result):
                    found[result.nodeid] = (result, entry.get("runner"))
                else:
                    found.pop(result.nodeid, None)
    return found


def _final(result: CaseResult) -> bool:
    """Whether a result is a verdict on its case: not an error, nor a skip for a budget."""
    budget = is_budget_skip(result.outcome, result.error)
    return result.outcome in FINAL_OUTCOMES and not budget
