"""The one atomic text write: a temp file beside the target, then ``os.replace``.

Readers see the old file or the new one, never half of one, and any number of writers (xdist
workers recording cassettes, two sessions blessing one baseline) may replace a file at once.
Every file the plugin writes whole goes through :func:`write_text`: run dir files, baselines,
``compare`` output, cassettes and the embedding cache.

The file gets the mode a plain ``open(path, "w")`` would give it: a new file ``0666`` less
the user's umask (``0644`` under umask ``022``), a file written again keeps its own mode.
:func:`tempfile.mkstemp` would make every file ``0600`` whatever the umask, so a CI job's
artifact uploader, or a teammate reading a shared run dir, could not read it; nothing secret
reaches these files (the redactor masks secrets first), so there is no reason to be stricter
than the user asked.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import time
from collections.abc import Iterable
from pathlib import Path

__all__ = ["write_text"]

NEW_FILE_MODE = 0o666
"""The mode asked for a new file; the kernel takes the umask off, as ``open`` does."""

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
"""A temp name that exists (or is a link) is never opened: another is drawn."""

_NAME_TRIES = 100
"""Temp names drawn before giving up (each is 48 random bits: a clash means a bug)."""

_REPLACE_TRIES = 10
"""Windows refuses to replace a file another process has open: tries before giving up."""


def write_text(path: Path, text: str | Iterable[str]) -> None:
    """Write ``text`` (or its pieces, one after the other) to ``path`` atomically, creating
    its folder. Pieces are written as they come, never joined in memory.

    Text that is not valid Unicode (a lone surrogate such as ``\\ud800``, from a model's
    answer) is written as its backslash escape: in a JSON string that is the JSON escape of
    the same character, so the file stays valid UTF-8 and the value reads back unchanged."""
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = _kept_mode(path)
    fd, tmp = _open_temp(path, NEW_FILE_MODE if kept is None else kept)
    try:
        if kept is not None and hasattr(os, "fchmod"):
            os.fchmod(fd, kept)  # the umask may have narrowed it: widen it back, never more
        with os.fdopen(
            fd, "w", encoding="utf-8", errors="backslashreplace", newline="\n"
        ) as handle:
            if isinstance(text, str):
                handle.write(text)
            else:
                handle.writelines(text)
        _replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _open_temp(path: Path, mode: int) -> tuple[int, Path]:
    """A new temp file beside ``path`` (``.<name>.<random>.tmp``), open for writing, created
    with ``mode`` (less the umask)."""
    for _ in range(_NAME_TRIES):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, _FLAGS, mode), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{path.parent}: no free temp file name for {path.name}")


def _kept_mode(path: Path) -> int | None:
    """The mode of the regular file ``path`` replaces, which the new one keeps, as writing
    that file in place would (a file the user made private stays private); ``None`` for a new
    file (``0666`` less the umask). The temp file is created with it, not changed to it once
    open: created wider, another user could open it in between and read what is written."""
    try:
        found = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return stat.S_IMODE(found.st_mode) & 0o777 if stat.S_ISREG(found.st_mode) else None


def _replace(tmp: Path, path: Path) -> None:
    for attempt in range(_REPLACE_TRIES):
        try:
            os.replace(tmp, path)
            return
        except PermissionError:  # Windows: the target is open in another process
            if os.name != "nt" or attempt == _REPLACE_TRIES - 1:
                raise
            time.sleep(0.01 * (attempt + 1))
