"""Which agents an xdist worker was running when it died: one byte per collected test, shared.

A worker fed by the hash scheduler runs agents ahead of pytest's item (:mod:`~pytest_llmeval.
plugin.run_ahead`). When one of them kills the worker (``os._exit``, a signal, native code),
xdist blames the item pytest was on, which may have been judged already, and not the case
whose agent was running. So the worker marks, in a file the controller made for it and mapped
into memory, each case's agent as it starts and ends, and the case once pytest judged it, at
the case's index in the collection (which every worker and the controller share). A mapped
page outlives the process that wrote it: after a crash the controller reads the file
(:func:`read`) and the scheduler names the case whose agent was running, gives the item pytest
was on to the replacement worker unless it was judged already. Marking costs three byte writes
per case, no system call.

The files live in a temporary folder of the controller's (:func:`hand_to_worker`), removed at
the end of the session (:func:`remove`); a worker that cannot open its file (another machine)
marks nothing, and xdist's own blame stands.
"""

from __future__ import annotations

import mmap
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

import pytest

from pytest_llmeval.plugin import worker_wire as wire

__all__ = ["Marks", "folder", "open_marks", "read", "remove"]

STARTED = 1
"""The case's agent runs."""
FINISHED = 2
"""Its agent ended."""
JUDGED = 3
"""pytest made the case's call report: it has its result (the controller may have it)."""

_dir_key = pytest.StashKey[Path]()


def folder(config: pytest.Config) -> str:
    """The controller: the folder the workers' marks go to (made on first use)."""
    found = config.stash.get(_dir_key, None)
    if found is None:
        found = config.stash[_dir_key] = Path(tempfile.mkdtemp(prefix="llmeval-running-"))
    return str(found)


def remove(config: pytest.Config) -> None:
    """The controller, at the end: the folder goes."""
    folder = config.stash.get(_dir_key, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
        del config.stash[_dir_key]


def _path(folder: str | Path, workerid: str) -> Path:
    return Path(folder) / f"{workerid}.running"


class Marks:
    """A worker's marks: :meth:`started` and :meth:`finished` by node id."""

    __slots__ = ("_index", "_map")

    def __init__(self, buffer: mmap.mmap, index: Mapping[str, int]) -> None:
        self._map = buffer
        self._index = index

    def started(self, key: str) -> None:
        index = self._index.get(key)
        if index is not None:
            self._map[index] = STARTED

    def finished(self, key: str) -> None:
        index = self._index.get(key)
        if index is not None:
            self._map[index] = FINISHED

    def judged(self, key: str) -> None:
        index = self._index.get(key)
        if index is not None:
            self._map[index] = JUDGED


def open_marks(config: pytest.Config, nodeids: Mapping[str, int], size: int) -> Marks | None:
    """A worker: its marks for the cases ``nodeids`` (node id -> index in the collection of
    ``size`` tests), or None when the controller gave no folder or it cannot be written."""
    given, workerid = wire.worker_input(config), wire.worker_id(config)
    where = given.running_marks if given is not None else None
    if not where or not workerid or size <= 0:
        return None
    try:
        with _path(where, workerid).open("w+b") as handle:
            handle.truncate(size)
            buffer = mmap.mmap(handle.fileno(), size)
    except (OSError, ValueError):
        return None
    return Marks(buffer, nodeids)


def read(config: pytest.Config, workerid: str) -> bytes:
    """The controller, after ``workerid`` died: its mark of each test, by collection index
    (:data:`STARTED`, :data:`FINISHED`, :data:`JUDGED`; empty when it marked none)."""
    stash = getattr(config, "stash", None)  # a scheduler's stand-in config has none
    folder = stash.get(_dir_key, None) if stash is not None else None
    if folder is None:
        return b""
    try:
        return _path(folder, workerid).read_bytes()
    except OSError:
        return b""
