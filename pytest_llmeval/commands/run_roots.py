"""Where the runs are: the output roots below a project folder, and a run named as ``runs``
prints it.

pytest writes its run dirs under ``<rootdir>/.llmeval/runs``, and the rootdir is the folder of
the ``pytest.ini`` it read: after ``init``, that is ``evals/.llmeval/runs``, not the project's
own ``.llmeval/runs``. So ``runs`` and ``compare`` look in the start folder's ``.llmeval/runs``
and in every ``.llmeval/runs`` below it (:func:`find_output_roots`), never inside version
control, virtual environments, caches or installed packages (:data:`PRUNED`), and never
through a symbolic link.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pytest_llmeval.core.errors import RunDirError
from pytest_llmeval.rundir.files import is_run_dir
from pytest_llmeval.rundir.latest import LATEST, resolve_latest

__all__ = [
    "DEFAULT_ROOT",
    "PRUNED",
    "RunNameError",
    "find_output_roots",
    "find_run",
    "shown",
    "unsearched",
]

DEFAULT_ROOT = Path(".llmeval/runs")
"""The plugin's default ``--llmeval-output-root``, relative to the pytest rootdir."""

PRUNED = frozenset(
    {
        "node_modules", "site-packages", "dist-packages", "__pycache__", "venv", "env",
        "build", "dist", "htmlcov",
    }
)  # fmt: skip
"""Folders never searched, besides every hidden one (``.git``, ``.venv``, ``.tox``, caches)
but ``.llmeval`` itself."""

_HIDDEN_KEPT = DEFAULT_ROOT.parts[0]


class RunNameError(RunDirError):
    """A run named by ``compare`` that is under no output root, or under more than one."""


def find_output_roots(start: Path, skipped: list[Path] | None = None) -> list[Path]:
    """Every ``.llmeval/runs`` folder at or below ``start``, sorted, as paths under ``start``.

    A folder that cannot be listed (no read permission) may hold runs: it is added to
    ``skipped`` so the caller can name it, never passed over in silence."""
    found: list[Path] = []

    def unsearchable(exc: OSError) -> None:
        if skipped is not None:
            skipped.append(Path(exc.filename) if exc.filename else start)

    for here, folders, _ in os.walk(start, onerror=unsearchable, followlinks=False):
        base = Path(here)
        if base.name == _HIDDEN_KEPT:  # only its runs/ is ours to look at
            if (base / DEFAULT_ROOT.name).is_dir():
                found.append(base / DEFAULT_ROOT.name)
            folders.clear()
            continue
        folders[:] = sorted(
            name for name in folders
            if name == _HIDDEN_KEPT or (not name.startswith(".") and name not in PRUNED)
        )  # fmt: skip
    return sorted(found, key=lambda path: (len(path.parts), str(path)))


def shown(path: Path) -> str:
    """``path`` as the user typed it relative to the current folder, when it is below it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def unsearched(skipped: Sequence[Path]) -> str:
    """The folders :func:`find_output_roots` could not list, as the clause an error ends with."""
    if not skipped:
        return ""
    return (
        f"; could not search {', '.join(shown(path) for path in skipped)} (no read permission?): "
        "give this user access, or give the run dir's path"
    )


def find_run(name: str, roots: Sequence[Path], where: Path, skipped: Sequence[Path] = ()) -> Path:
    """The run dir ``name`` (as ``runs`` prints it, or ``latest``) under one of ``roots``.

    ``latest`` is followed to the run dir it points at (one that is gone names no run). A
    name that is not a single folder name (a separator, ``.``, ``..``) is refused, so it never
    leads out of the roots. A name under no root, or under more than one, is a
    :class:`RunNameError` naming the roots it looked in, or the run dirs it found, and
    ``--root``; ``skipped`` (folders that could not be searched) are named too."""
    if not name or name in (".", "..") or "/" in name or "\\" in name:
        raise RunNameError(
            f"{name!r} is not a run's name (a single folder name as `python -m pytest_llmeval "
            "runs` prints it, or latest); give the run dir's path"
        )
    if not roots:
        raise RunNameError(
            f"{name}: no such run dir: no {DEFAULT_ROOT} folder in {where} or below it "
            "(pytest writes its runs under the pytest rootdir: after init, "
            f"evals/{DEFAULT_ROOT}); give the run dir's path, or --root the folder its "
            f"{DEFAULT_ROOT} is in{unsearched(skipped)}"
        )
    hits: list[Path] = []
    for root in roots:
        candidate = root / name
        if name == LATEST:
            target = resolve_latest(candidate)
            if target is not None and target.is_dir() and is_run_dir(target):
                hits.append(target)
        elif candidate.is_dir() and is_run_dir(candidate):
            hits.append(candidate)
    listed = ", ".join(shown(root) for root in roots)
    if not hits:
        raise RunNameError(
            f"{name}: no such run dir under {listed}; "
            "`python -m pytest_llmeval runs` lists them, or give the run dir's path"
            f"{unsearched(skipped)}"
        )
    if len(hits) > 1:
        found = ", ".join(shown(hit) for hit in hits)
        raise RunNameError(
            f"{name}: found under more than one output root ({found}); give one of these "
            "paths, or --root the folder of the one you mean"
        )
    return hits[0]
