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

__all__ = ["DEFAULT_ROOT", "PRUNED", "RunNameError", "find_output_roots", "find_run", "shown"]

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


def find_output_roots(start: Path) -> list[Path]:
    """Every ``.llmeval/runs`` folder at or below ``start``, sorted, as paths under ``start``."""
    found: list[Path] = []
    for here, folders, _ in os.walk(start, followlinks=False):
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


def find_run(name: str, roots: Sequence[Path], where: Path) -> Path:
    """The run dir ``name`` (as ``runs`` prints it, or ``latest``) under one of ``roots``.

    ``latest`` is followed to the run dir it points at. A name under no root, or under more
    than one (two ``latest`` pointers, say), is a :class:`RunNameError` naming the roots and
    ``--root``."""
    if not roots:
        raise RunNameError(
            f"{name}: no such run dir: no {DEFAULT_ROOT} folder in {where} or below it "
            "(pytest writes its runs under the pytest rootdir: after init, "
            f"evals/{DEFAULT_ROOT}); give the run dir's path, or --root the folder its "
            f"{DEFAULT_ROOT} is in"
        )
    hits: list[Path] = []
    for root in roots:
        candidate = root / name
        if name == LATEST:
            target = resolve_latest(candidate)
            if target is not None:
                hits.append(target)
        elif candidate.is_dir() and is_run_dir(candidate):
            hits.append(candidate)
    listed = ", ".join(shown(root) for root in roots)
    if not hits:
        raise RunNameError(
            f"{name}: no such run dir under {listed}; "
            "`python -m pytest_llmeval runs` lists them, or give the run dir's path"
        )
    if len(hits) > 1:
        raise RunNameError(
            f"{name}: found under more than one output root ({listed}); give the run dir's "
            "path, or --root the folder of the one you mean"
        )
    return hits[0]
