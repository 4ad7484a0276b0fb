"""``<output root>/latest``: the pointer at the newest run dir, beside the run dirs.

After a session writes its run dir under the output root, :func:`point_latest` points
``latest`` at it: a relative symbolic link (``latest -> 20261126T112448Z_8eefb82a2e92``), or,
where links cannot be made, a small text file holding the run dir's name (one line). The new
pointer is made under a temporary name and renamed over the old one, so a reader sees the old
pointer or the new one, never none.

``latest`` is replaced only when it is one of ours: a link or a small one-line file naming a
tagged run dir beside it (one holding the ``.llmeval-run`` tag), or a name in the run-dir
stamp form (``<YYYYMMDDTHHMMSSZ>_<hex>``) that is gone (a run dir deleted since). A user's
own ``latest`` (a folder, a link elsewhere, a note of one line, any other file) is left as it
is, and the session says so. :func:`resolve_latest` reads either form back.
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from pathlib import Path

from pytest_llmeval.rundir.layout import RunLayout

__all__ = ["LATEST", "is_ours", "point_latest", "resolve_latest"]

LATEST = "latest"
"""The pointer's name in the output root."""

_MAX_POINTER_BYTES = 512
"""A text pointer holds one folder name; anything larger is not ours."""

_RUN_DIR_NAME = re.compile(r"\d{8}T\d{6}Z_[0-9a-f]+")
"""The stamp of a run dir this plugin names itself (``rundir.files``)."""


def point_latest(output_root: Path, run_dir: Path) -> str | None:
    """Point ``output_root/latest`` at ``run_dir``; a warning line when it was left alone.

    Nothing is done (and ``None`` returned) when ``run_dir`` is not directly inside
    ``output_root`` (a ``--llmeval-run-dir`` elsewhere): ``latest`` names a sibling only.
    """
    try:
        if run_dir.resolve().parent != output_root.resolve():
            return None
    except OSError:
        return None
    pointer = output_root / LATEST
    if not is_ours(pointer):
        return (
            f"{pointer} is not a pointer this plugin made (a file or folder of your own); "
            "left as it is, so it does not point at this run"
        )
    name = run_dir.resolve().name
    tmp = output_root / f".{LATEST}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        try:
            os.symlink(name, tmp, target_is_directory=True)
        except OSError:  # no links on this file system: a text file naming the run dir
            tmp.write_text(name + "\n", encoding="utf-8")
        os.replace(tmp, pointer)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        return f"{pointer} could not be updated: {exc.strerror or exc}"
    return None


def is_ours(pointer: Path) -> bool:
    """Whether ``pointer`` is missing or a pointer :func:`point_latest` made: a link, or a
    small regular file holding one line, naming a run dir beside it (see :func:`_names_a_run`)."""
    if pointer.is_symlink():
        return _names_a_run(pointer.parent, os.readlink(pointer))
    if not pointer.exists():
        return True
    if not pointer.is_file():
        return False
    try:
        if pointer.stat().st_size > _MAX_POINTER_BYTES:
            return False
        text = pointer.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return text.endswith("\n") and text.count("\n") == 1 and _names_a_run(pointer.parent, text[:-1])


def resolve_latest(pointer: Path) -> Path | None:
    """The run dir ``pointer`` names (a link or a text pointer of ours), else ``None``."""
    if not is_ours(pointer) or not (pointer.is_symlink() or pointer.is_file()):
        return None
    if pointer.is_symlink():
        return pointer.parent / os.readlink(pointer)
    return pointer.parent / pointer.read_text(encoding="utf-8").strip()


def _names_a_run(root: Path, name: str) -> bool:
    """Whether ``name`` is a run dir beside the pointer: a folder there holding the run-dir
    tag, or, when nothing of that name is there (a run dir deleted since), a name in the
    run-dir stamp form. A user's own one-word note or link to a folder of theirs is neither."""
    if not _one_name(name):
        return False
    target = root / name
    if target.is_symlink() or target.exists():
        return target.is_dir() and not target.is_symlink() and RunLayout(target).tag.is_file()
    return _RUN_DIR_NAME.fullmatch(name) is not None


def _one_name(text: str) -> bool:
    """A single folder name: no separator, not ``.`` or ``..``, nothing hidden."""
    return bool(text) and "/" not in text and "\\" not in text and not text.startswith(".")
