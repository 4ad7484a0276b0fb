"""``python -m pytest_llmeval runs [ROOT]``: every run dir under an output root, newest first.

Without ``ROOT`` it lists every output root at or below the current folder: its own
``.llmeval/runs`` and ``evals/.llmeval/runs`` (where ``pytest evals`` writes after ``init``),
as :func:`~pytest_llmeval.commands.run_roots.find_output_roots` finds them.

Each run dir is read back through :func:`~pytest_llmeval.rundir.outcomes.read_outcomes` and
shown at a glance (:mod:`pytest_llmeval.report.history`). Anything else under the root gets one line
saying what it is: a folder that is not a run dir, a run dir whose files cannot be read, one
whose session never finished, one a session is writing now. ``latest`` (the pointer at the
newest run) and hidden entries are skipped.

Exit status: 0 when every run dir under the root was read (an empty root too, and folders
that are not run dirs do not count against it); 1 when a run dir could not be read (broken
or unfinished) or an entry could not even be looked at (``unreadable``: a folder without
read permission; the rest is still listed); 2 when the root is missing or is not a folder
(without ``ROOT``: when no output root was found).
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_llmeval.commands.run_roots import DEFAULT_ROOT, find_output_roots, shown
from pytest_llmeval.core.errors import RunDirError
from pytest_llmeval.report.history import ListedEntry, RunSummary, history_lines, run_summary
from pytest_llmeval.rundir.files import is_run_dir
from pytest_llmeval.rundir.latest import LATEST, resolve_latest
from pytest_llmeval.rundir.layout import RunLayout
from pytest_llmeval.rundir.outcomes import read_outcomes

__all__ = ["DEFAULT_ROOT", "Listing", "RootError", "add_parser", "list_runs", "main"]

_STAMP = re.compile(r"^(\d{8}T\d{6}Z)_")
_KEY = "%Y%m%dT%H%M%S.%f"

EXIT_OK, EXIT_UNREADABLE, EXIT_NO_ROOT = 0, 1, 2


class RootError(RunDirError):
    """The output root is missing or is not a folder."""


@dataclass
class Listing:
    """What ``runs`` found under a root, newest first."""

    root: Path
    entries: list[RunSummary | ListedEntry]
    latest: str | None = None
    """The name of the run dir ``latest`` points at, when it is a pointer of ours."""

    @property
    def unreadable(self) -> list[ListedEntry]:
        """Run dirs that could not be read (broken, unfinished); folders that are not run
        dirs, and run dirs in use, are not counted."""
        return [
            e for e in self.entries
            if isinstance(e, ListedEntry) and e.kind in ("broken", "unfinished", "unreadable")
        ]  # fmt: skip


def add_parser(commands: Any) -> None:
    """Add ``runs`` to ``python -m pytest_llmeval``'s subparsers."""
    cmd = commands.add_parser(
        "runs",
        help="list the run dirs under an output root, newest first",
        description="List every run dir under ROOT, newest first: date, runner and model, "
        "cases, verdict, interruption, and each suite's headline numbers. Exit 0 when every run "
        "dir was read, 1 when one could not be (broken or unfinished), 2 when ROOT is missing.",
    )
    cmd.add_argument(
        "root",
        type=Path,
        nargs="?",
        default=None,
        metavar="ROOT",
        help=f"the output root (default: every {DEFAULT_ROOT} in the current folder or below "
        f"it, evals/{DEFAULT_ROOT} after init)",
    )


def list_runs(root: Path) -> Listing:
    """Read every entry of ``root``; :class:`RootError` when it is missing or not a folder."""
    if not root.exists():
        raise RootError(
            f"{root}: no such folder; give the output root of your runs (pytest writes them "
            f"under {DEFAULT_ROOT}, or --llmeval-output-root)"
        )
    if not root.is_dir():
        raise RootError(f"{root}: is not a folder; give the output root of your runs")
    try:
        children = sorted(root.iterdir())
    except OSError as exc:
        raise RootError(f"{root}: cannot be read: {exc.strerror or exc}") from None
    found: list[tuple[str, RunSummary | ListedEntry]] = []
    for child in children:
        if child.name == LATEST or child.name.startswith("."):
            continue
        try:
            entry = _entry(child)
        except OSError as exc:  # a folder without read permission, an I/O error: one line
            entry = _unreadable(child, exc)
        found.append((_when(child, entry), entry))
    found.sort(key=lambda pair: (pair[0], pair[1].name), reverse=True)
    try:
        pointed = resolve_latest(root / LATEST)
    except OSError:  # at a run dir that cannot be read: listed as such, no pointer shown
        pointed = None
    return Listing(root, [entry for _, entry in found], pointed.name if pointed else None)


def main(root: Path | None = None) -> int:
    """Print the listing of ``root``, or of every output root below the current folder; the
    exit status as the module docstring says."""
    if root is not None:
        return _main(root)
    skipped: list[Path] = []
    roots = find_output_roots(Path.cwd(), skipped)
    for folder in skipped:  # it may hold runs: named, and counted as unreadable
        print(
            f"pytest_llmeval runs: could not search {shown(folder)} for {DEFAULT_ROOT}: no "
            "read permission? give this user access, or give the output root: runs ROOT",
            file=sys.stderr,
        )
    if not roots:
        print(
            f"pytest_llmeval runs: no {DEFAULT_ROOT} folder here or below (pytest writes its "
            f"runs under the folder of the pytest.ini it read: after init, evals/{DEFAULT_ROOT}"
            "); run `pytest evals` first, or give the output root: runs ROOT",
            file=sys.stderr,
        )
        return EXIT_NO_ROOT
    codes: list[int] = [EXIT_UNREADABLE if skipped else EXIT_OK]
    for number, found in enumerate(roots):
        if number:
            print()
        codes.append(_main(Path(shown(found))))
    return max(codes)


def _main(root: Path) -> int:
    try:
        listing = list_runs(root)
    except RootError as exc:
        print(f"pytest_llmeval runs: {exc}", file=sys.stderr)
        return EXIT_NO_ROOT
    runs = sum(1 for e in listing.entries if isinstance(e, RunSummary))
    if not listing.entries:
        print(f"no run dirs under {root} yet (pytest writes one per session)")
        return EXIT_OK
    for line in history_lines(listing.entries, listing.latest):
        print(line)
    unreadable = listing.unreadable
    print(
        f"{runs} run dir(s) under {root}"
        + (f", {len(unreadable)} unreadable" if unreadable else "")
    )
    return EXIT_UNREADABLE if unreadable else EXIT_OK


def _entry(path: Path) -> RunSummary | ListedEntry:
    name = path.name
    if not path.is_dir() or not is_run_dir(path):
        what = "a folder" if path.is_dir() else "a file"
        return ListedEntry(
            name=name, kind="foreign", message=f"{what}, not a run dir (no .llmeval-run tag)"
        )
    if _in_use(path):
        return ListedEntry(name=name, kind="in use", message="a pytest session is writing it now")
    if not RunLayout(path).manifest.exists():
        return ListedEntry(
            name=name,
            kind="unfinished",
            message=(
                "no manifest.json: its session never finished (killed?); finish it with "
                f"pytest --llmeval-resume={path}"
            ),
        )
    try:
        run = read_outcomes(path)
    except (RunDirError, OSError) as exc:
        return ListedEntry(name=name, kind="broken", message=_one_line(str(exc), path))
    return run_summary(run)


def _unreadable(path: Path, exc: OSError) -> ListedEntry:
    """An entry that could not even be looked at; counted as a run dir that cannot be read."""
    where = f" ({_one_line(str(exc.filename), path)})" if exc.filename else ""
    return ListedEntry(
        name=path.name,
        kind="unreadable",
        message=f"cannot be read: {exc.strerror or exc}{where}; give this user read access "
        "to it, or move it out of the output root",
    )


def _in_use(run_dir: Path) -> bool:
    """Whether a session holds the run dir's lock (:class:`~pytest_llmeval.rundir.claim.
    RunDirLock`); a shared lock is taken and dropped at once, so nothing waits."""
    try:
        fd = os.open(RunLayout(run_dir).tag, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)
    finally:
        os.close(fd)
    return False


def _when(path: Path, entry: RunSummary | ListedEntry) -> str:
    """A sort key in UTC, ``YYYYMMDDTHHMMSS.ffffff``: when the session started, else the time
    in the run dir's name, else the folder's modification time."""
    started = entry.started if isinstance(entry, RunSummary) else None
    if started:
        try:
            when = datetime.fromisoformat(started).astimezone(timezone.utc)
            return when.strftime(_KEY)
        except ValueError:
            pass
    stamp = _STAMP.match(path.name)
    if stamp:
        return stamp.group(1)[:-1] + ".000000"
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return ""
    return datetime.fromtimestamp(mtime, timezone.utc).strftime(_KEY)


def _one_line(message: str, path: Path) -> str:
    """The reader's message on one line, without the run dir's path in front."""
    text = " ".join(message.split())
    prefix = f"{path}/"
    return text[len(prefix) :] if text.startswith(prefix) else text
