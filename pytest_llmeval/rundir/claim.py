"""Claiming a run dir: the checks before a session writes into a folder, and the lock that
makes one session its only writer.

A session writes its run dir only when the folder is its own to write: new, empty, or a run
dir (tagged by :func:`~pytest_llmeval.rundir.files.tag_run_dir`). A resume needs an existing
run dir. While a session runs, it holds an exclusive ``flock`` on the run dir's tag file, so a
second session pointed at the same folder (``--llmeval-run-dir``, ``--llmeval-resume``,
``summarize``) stops at once instead of mixing its results in; the lock goes with the
process, so a killed session never leaves a stale one. xdist workers write only their own
journal files and take no lock: they belong to their controller's session.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import tempfile
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path

from pytest_llmeval.core.errors import RunDirError
from pytest_llmeval.rundir.files import is_run_dir, read_json, tag_run_dir
from pytest_llmeval.rundir.layout import RunLayout
from pytest_llmeval.rundir.owned import remove_owned, sort_files

__all__ = [
    "RunDirLock",
    "check_resume_target",
    "check_run_dir_target",
    "folder_lock",
    "prepare_merge_dir",
    "unwritable",
]


def check_run_dir_target(path: Path, flag: str = "--llmeval-run-dir") -> None:
    """Refuse a run dir path the plugin may not write: a file, or a folder holding files of
    its own (not a run dir). Raises :class:`RunDirError` saying what to do."""
    if path.is_symlink() and not path.exists():
        raise RunDirError(f"{flag} {path}: is a broken symbolic link; give a folder")
    if path.exists() and not path.is_dir():
        raise RunDirError(
            f"{flag} {path}: is a file, not a folder; give a new or empty folder (or a run dir)"
        )
    if path.is_dir() and not is_run_dir(path) and _has_entries(path, flag):
        raise RunDirError(
            f"{flag} {path}: is a folder with files of its own, not a run dir; not writing "
            "into it (give a new or empty folder)"
        )


def check_resume_target(path: Path) -> None:
    """Refuse a resume path that is not an existing run dir (a typo must not start a fresh,
    full run)."""
    flag = "--llmeval-resume"
    if not path.exists():
        raise RunDirError(
            f"{flag} {path}: no such run dir; give the run dir of the interrupted run (the "
            "terminal's 'llmeval: run dir ...' line)"
        )
    if not path.is_dir():
        raise RunDirError(
            f"{flag} {path}: is a file, not a run dir; give the run dir of the interrupted run"
        )
    if not is_run_dir(path):
        raise RunDirError(
            f"{flag} {path}: is not a run dir (no {RunLayout(path).tag.name} tag); give the run "
            "dir of the interrupted run"
        )


def _has_entries(path: Path, flag: str) -> bool:
    try:
        return any(path.iterdir())
    except OSError as exc:
        raise RunDirError(f"{flag} {path}: cannot be read: {exc.strerror}") from None


class RunDirLock:
    """The exclusive lock one session holds on its run dir (on the run dir's tag file)."""

    def __init__(self, run_dir: Path, flag: str):
        self.run_dir = run_dir
        self.flag = flag
        self._fd: int | None = None

    def acquire(self) -> None:
        """Create and tag the run dir if needed and lock it; raises :class:`RunDirError` when
        another session holds it or the folder cannot be written."""
        try:
            tag_run_dir(self.run_dir)
            fd = os.open(RunLayout(self.run_dir).tag, os.O_RDONLY | os.O_CLOEXEC)
            try:
                tempfile.TemporaryFile(dir=self.run_dir).close()  # writable (a read-only mount)
            except OSError:
                os.close(fd)
                raise
        except OSError as exc:
            raise RunDirError(unwritable(self.run_dir, exc, self.flag)) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise RunDirError(
                    f"{self.flag} {self.run_dir}: is in use by another pytest session; wait for "
                    "it to end, or give another run dir"
                ) from None
            raise RunDirError(unwritable(self.run_dir, exc, self.flag)) from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the file releases the lock
            self._fd = None


def unwritable(path: Path, exc: OSError, flag: str = "run dir") -> str:
    """One line for a run dir path the session cannot use: what is wrong, what to do."""
    reason = exc.strerror or str(exc)
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        hint = "make it writable, or give another run dir"
    elif exc.errno == errno.ENOSPC:
        hint = "free some space, then finish the run with --llmeval-resume"
    elif exc.errno in (errno.ENOTDIR, errno.EEXIST):
        hint = "a file is in the way; give a folder"
    else:
        hint = "give another run dir"
    return f"{flag} {path}: {reason}; {hint}"


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``folder`` itself (no lock file is left beside the
    user's files): writers of one file in that folder take turns."""
    fd = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def prepare_merge_dir(out_dir: Path, inputs: Sequence[Path], writes: Collection[str] = ()) -> None:
    """Make ``out_dir`` ready for a merge of the run dirs ``inputs``: it must be new, empty, an
    earlier merge's output, or a run dir holding only a user's files. The files the plugin
    wrote there are removed; a user's files stay (:mod:`pytest_llmeval.rundir.owned`). A folder
    that is or holds an input, a file, a folder of anything else, or a user's file where the
    merge writes (``writes``, paths inside the run dir) raises :class:`RunDirError` before
    anything is removed."""
    resolved = out_dir.resolve()
    for path in inputs:  # replacing out_dir must never delete an input
        if path.resolve().is_relative_to(resolved):
            raise RunDirError(f"{out_dir}: is or holds {path}, one of the run dirs being merged")
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise RunDirError(f"{out_dir}: exists and is not a folder")
    if not any(out_dir.iterdir()):
        return
    files = sort_files(out_dir) if is_run_dir(out_dir) else None
    if files is None or not (_merged(out_dir) or files.owned == (RunLayout(out_dir).tag.name,)):
        raise RunDirError(f"{out_dir}: exists and is not empty (and not an earlier merge's output)")
    clashes = files.clashes(writes)
    if clashes:
        raise RunDirError(
            f"{out_dir}: holds {clashes[0]}, which no merge wrote, where this merge writes; "
            "move it out of the way, or give another output folder"
        )
    remove_owned(out_dir, files)


def _merged(run_dir: Path) -> bool:
    """Whether ``run_dir``'s manifest says a merge wrote it."""
    try:
        manifest = read_json(RunLayout(run_dir).manifest)
    except RunDirError:
        return False
    return isinstance(manifest, dict) and "merged_from" in manifest
