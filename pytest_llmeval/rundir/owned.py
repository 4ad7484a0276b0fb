"""Which files of a run dir the plugin wrote, and removing only those.

A run dir is replaced by the commands that write it again (``merge`` into an earlier merge's
output, ``validate-sharding --out`` over an earlier validation's run dirs). A user may have put
files of their own there (notes, a plot, a folder). Only what the run dir's own layout and
manifest say the plugin wrote is removed: the tag, ``manifest.json``, the report files every
run writes, the journal files (``journal/<attempt>/<process>-<pid>.jsonl`` and the attempt's
``fresh`` mark), the case workspaces, and the per-file artifacts the manifest lists. Everything
else stays where it is, with the tag, so the folder is still a run dir to write again.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pytest_llmeval.core.errors import RunDirError
from pytest_llmeval.rundir.files import read_json
from pytest_llmeval.rundir.layout import REPORT_FILES, RunLayout

__all__ = ["RunDirFiles", "remove_owned", "sort_files"]

_JOURNAL_FILE = re.compile(r"journal/\d+/(?:[\w.]+-\d+\.jsonl|fresh)")
"""A journal file as :class:`~pytest_llmeval.rundir.journal.Journal` names it, or the mark of a
fresh attempt."""

_PLUGIN_FOLDERS = ("journal", "workspaces")
"""Folders of the layout: an empty folder left in them after a removal is removed too."""


@dataclass(frozen=True)
class RunDirFiles:
    """The files of a run dir (relative POSIX paths; a symbolic link is a file here)."""

    owned: tuple[str, ...]
    """What the plugin wrote: removed when the run dir is replaced."""
    foreign: tuple[str, ...]
    """Everything else: a user's, never removed."""

    def clashes(self, writes: Collection[str]) -> list[str]:
        """The user's files at a path a new run dir writes (``writes``), or inside its journal
        (whose every ``*.jsonl`` file is read as results)."""
        return [
            name
            for name in self.foreign
            if name in writes or PurePosixPath(name).parts[0] == "journal"
        ]


def sort_files(run_dir: Path) -> RunDirFiles:
    """Sort the files under ``run_dir`` (symbolic links never followed) into the plugin's and
    the user's. Raises :class:`RunDirError` when the folder cannot be read."""
    layout = RunLayout(run_dir)
    listed = {layout.tag.name, layout.manifest.name, *REPORT_FILES, *_listed(layout)}
    owned: list[str] = []
    foreign: list[str] = []

    def fail(exc: OSError) -> None:
        raise RunDirError(f"{run_dir}: cannot be read: {exc.strerror or exc}") from None

    for folder, dirs, files in os.walk(run_dir, onerror=fail):
        here = Path(folder).relative_to(run_dir)
        links = [d for d in dirs if os.path.islink(os.path.join(folder, d))]
        dirs[:] = sorted(d for d in dirs if d not in links)
        for name in sorted([*files, *links]):
            relative = (here / name).as_posix()
            mine = (
                relative in listed
                or _JOURNAL_FILE.fullmatch(relative) is not None
                or relative.startswith("workspaces/")
            )
            (owned if mine else foreign).append(relative)
    return RunDirFiles(tuple(owned), tuple(foreign))


def _listed(layout: RunLayout) -> list[str]:
    """The artifacts ``manifest.json`` lists (the suites' per-file reports among them); none
    when it cannot be read (then those files are kept as if they were the user's)."""
    try:
        manifest = read_json(layout.manifest)
    except RunDirError:
        return []
    artifacts = manifest.get("artifacts") if isinstance(manifest, dict) else None
    if not isinstance(artifacts, list):
        return []
    return [name for name in artifacts if isinstance(name, str)]


def remove_owned(run_dir: Path, files: RunDirFiles) -> None:
    """Remove the plugin's files of ``run_dir`` (``files``, from :func:`sort_files`), and the
    folders that held only them. With nothing of the user's left (no file, no folder) the run
    dir goes too; otherwise its tag stays, so it is still a run dir the plugin may write
    again."""
    tag = RunLayout(run_dir).tag
    emptied: set[Path] = set()
    for name in files.owned:
        path = run_dir / name
        if path == tag:
            continue
        path.unlink(missing_ok=True)
        emptied.update(p for p in path.parents if p != run_dir and p.is_relative_to(run_dir))
    for name in _PLUGIN_FOLDERS:
        if (run_dir / name).is_dir() and not (run_dir / name).is_symlink():
            emptied.update(Path(p) for p, _, _ in os.walk(run_dir / name))
    for folder in sorted(emptied, key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            folder.rmdir()  # only if empty: a user's file or folder keeps its folder
    with contextlib.suppress(OSError):
        if [p.name for p in run_dir.iterdir()] == [tag.name]:
            tag.unlink()
            run_dir.rmdir()
