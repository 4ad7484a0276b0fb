"""``python -m pytest_llmeval compare RUN_A RUN_B [RUN_C ...] [--out DIR]``: runs side by side.

Writes ``compare.md`` and ``compare.html`` into ``DIR`` (default: the current folder) and
prints the Markdown. A run is a run dir's path, or its name as ``runs`` prints it (``latest``
too) under an output root at or below ``--root`` (default: the current folder; after ``init``
the runs are in ``evals/.llmeval/runs``: :mod:`~pytest_llmeval.commands.run_roots`). The
tables and statistics are :mod:`pytest_llmeval.report.run_matrix`'s.

It never writes over a file it did not make: an existing ``compare.md`` or ``compare.html``
without the mark ``compare`` writes into its files is refused, and so is a run dir, or any
folder inside one, as ``DIR`` (a run dir holds only what its session wrote). Exit status: 0
when both files were written; 2 when a run cannot be read or the files cannot be written
(nothing is written then).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_llmeval.commands.run_roots import DEFAULT_ROOT, find_output_roots, find_run
from pytest_llmeval.core.errors import RunDirError
from pytest_llmeval.report.html.compare_page import render_compare_html
from pytest_llmeval.report.run_matrix import (
    MARKER,
    MAX_MARKDOWN_ROWS,
    compare_markdown,
    compare_runs,
)
from pytest_llmeval.rundir.files import is_run_dir, write_text
from pytest_llmeval.rundir.latest import LATEST, resolve_latest
from pytest_llmeval.rundir.layout import RunLayout
from pytest_llmeval.rundir.outcomes import RunOutcomes, read_outcomes

__all__ = ["COMPARE", "FILES", "add_parser", "compare", "run"]

COMPARE = "compare"
FILES = ("compare.md", "compare.html")
"""What it writes into ``--out``."""

EXIT_OK, EXIT_ERROR = 0, 2


class CompareError(RunDirError):
    """A run that cannot be read, or an output that may not be written."""


def add_parser(commands: Any) -> None:
    """Add ``compare`` to ``python -m pytest_llmeval``'s subparsers."""
    cmd = commands.add_parser(
        COMPARE,
        help="compare two or more runs: suite table, case matrix, flips and McNemar",
        description="Compare run dirs side by side (the first is the reference) and write "
        "compare.md and compare.html into DIR; exit 0 when written, 2 when a run cannot be "
        "read or a file cannot be written.",
    )
    cmd.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help=f"a run dir, or its name as `runs` prints it, or latest, under a {DEFAULT_ROOT} "
        "at or below --root; two or more",
    )
    cmd.add_argument(
        "--root",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help=f"where run names are looked up: every {DEFAULT_ROOT} in DIR or below it, or DIR "
        "itself when it is an output root (default: the current folder)",
    )
    cmd.add_argument(
        "--out",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="where compare.md and compare.html go (default: the current folder)",
    )
    cmd.add_argument(
        "--max-rows",
        type=int,
        default=MAX_MARKDOWN_ROWS,
        metavar="N",
        help=f"case rows shown in compare.md (default: {MAX_MARKDOWN_ROWS}); compare.html "
        "shows them all",
    )


def run(options: argparse.Namespace) -> int:
    """The command: compare, write, print; one line on stderr for anything wrong."""
    if len(options.runs) < 2:
        print("pytest_llmeval compare: give two runs or more", file=sys.stderr)
        return EXIT_ERROR
    try:
        markdown = compare(
            [resolve_run(arg, options.root) for arg in options.runs],
            options.out,
            max(options.max_rows, 0),
        )
    except (CompareError, RunDirError, OSError) as exc:  # RunNameError is a RunDirError
        print(f"pytest_llmeval compare: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print(markdown.split("\n", 1)[1], end="")  # without the marker comment
    print(f"wrote {options.out / FILES[0]} and {options.out / FILES[1]}")
    return EXIT_OK


def compare(run_dirs: Sequence[Path], out: Path, max_rows: int = MAX_MARKDOWN_ROWS) -> str:
    """Read ``run_dirs``, write both files into ``out``; the Markdown written."""
    _check_out(out)
    records = [_read(path) for path in run_dirs]
    comparison = compare_runs(records)
    markdown = compare_markdown(comparison, max_rows)
    page = render_compare_html(comparison)
    out.mkdir(parents=True, exist_ok=True)
    write_text(out / FILES[0], markdown)
    write_text(out / FILES[1], page)
    return markdown


def resolve_run(arg: str, root: Path = Path(".")) -> Path:
    """A run argument as a path: as given, else the run of that name (``latest`` too) under
    ``root`` when it is an output root, else under the one output root at or below ``root``
    that has it. A ``latest`` pointer is followed, so the run is named by its own folder."""
    path = Path(arg)
    if not path.exists() and len(path.parts) == 1 and path.name not in ("", ".", ".."):
        if (root / arg).exists() or (root / arg).is_symlink():  # root is an output root
            path = root / arg
        else:
            skipped: list[Path] = []
            path = find_run(arg, find_output_roots(root, skipped), root, skipped)
    if path.name == LATEST:  # the run dir it points at, by its own name
        target = resolve_latest(path)
        if target is not None:
            return target
    return path


def _read(path: Path) -> RunOutcomes:
    if not path.exists():
        raise CompareError(f"{path}: no such run dir")
    if not path.is_dir():
        raise CompareError(f"{path}: is not a folder; give a run dir")
    try:
        return read_outcomes(path)
    except RunDirError:
        if is_run_dir(path) or RunLayout(path).manifest.exists():
            raise
        raise CompareError(
            f"{path}: is a folder, not a run dir (no manifest.json, no .llmeval-run tag); "
            "give a run dir, or a run's name as `python -m pytest_llmeval runs` prints it"
        ) from None
    except OSError as exc:  # a folder without read permission, an I/O error: one line
        where = f" ({exc.filename})" if exc.filename else ""
        raise CompareError(
            f"{path}: cannot be read: {exc.strerror or exc}{where}; give a run dir this user "
            "can read"
        ) from None


def _check_out(out: Path) -> None:
    """Refuse an output that is not ours to write, before anything is read or written."""
    if out.exists() and not out.is_dir():
        raise CompareError(f"--out {out}: is a file; give a folder")
    run_dir = _run_dir_around(out)
    if run_dir is not None:
        where = "is a run dir" if run_dir == out.resolve() else f"is inside the run dir {run_dir}"
        raise CompareError(
            f"--out {out}: {where} (it holds only what its session wrote); give another folder"
        )
    for name in FILES:
        target = out / name
        if (target.exists() or target.is_symlink()) and not _ours(target):
            raise CompareError(
                f"{target}: exists and was not written by compare; not writing over it (give "
                "--out another folder, or move the file)"
            )


def _run_dir_around(out: Path) -> Path | None:
    """The run dir ``out`` is, or is inside (``RUN/journal``, a folder not made yet under a
    run dir), links followed; else ``None``."""
    try:
        place = out.resolve()
    except OSError:
        place = out.absolute()
    for folder in (place, *place.parents):
        if folder.is_dir() and is_run_dir(folder):
            return folder
    return None


def _ours(path: Path) -> bool:
    """Whether ``path`` is a regular file ``compare`` wrote (its mark in its first lines)."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with path.open("r", encoding="utf-8", errors="replace") as handle:
            head = handle.read(2048)
    except OSError:
        return False
    return MARKER in head
