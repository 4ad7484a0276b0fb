"""Run dir files: atomic writes (temp file + rename), JSON and JSONL in a stable form, and the
one JSON reader every run-dir reader uses."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_llmeval.core import atomic
from pytest_llmeval.core.errors import RunDirError
from pytest_llmeval.inputs import safe_read
from pytest_llmeval.rundir.layout import RunLayout


def tag_run_dir(path: Path) -> None:
    """Create ``path`` and tag it as a run dir: collection skips tagged folders (their
    artifacts are not cases)."""
    path.mkdir(parents=True, exist_ok=True)
    tag = RunLayout(path).tag
    if not tag.exists():
        tag.write_text("pytest-llmeval run dir: its files are results, not eval cases\n")


def is_run_dir(path: Path) -> bool:
    return RunLayout(path).tag.is_file()


def plan_run_dir(
    output_root: Path, exact: Path | None = None, now: datetime | None = None
) -> tuple[Path, str]:
    """Where this session's run dir goes, and its run id (nothing is created yet).

    ``exact`` (``--llmeval-run-dir``) is used as is; otherwise a new
    ``<YYYYMMDDTHHMMSSZ>_<run_id>`` folder under ``output_root``.
    """
    if exact is not None:
        return exact, exact.name
    now = now or datetime.now(timezone.utc)
    run_id = uuid.uuid4().hex[:12]
    return output_root / f"{now.strftime('%Y%m%dT%H%M%SZ')}_{run_id}", run_id


def write_text(path: Path, text: str | Iterable[str]) -> None:
    """Write ``text`` (or its pieces) to ``path`` atomically, with the mode a plain ``open``
    would give it (:func:`pytest_llmeval.core.atomic.write_text`)."""
    atomic.write_text(path, text)


def rewrite_text(path: Path, pieces: Callable[[], Iterable[str]]) -> None:
    """Write the text ``pieces()`` makes over the existing file ``path``: atomically when its
    folder can take a new file; otherwise (a folder made read-only, no room for a second copy)
    in place, from fresh pieces, so a record that must change (a verdict turned red) is not
    left as it was. A write cut short in place leaves a file its readers refuse, never the old
    one."""
    try:
        write_text(path, pieces())
    except OSError:
        if not path.is_file():
            raise
        with open(path, "w", encoding="utf-8", errors="backslashreplace", newline="\n") as out:
            out.writelines(pieces())


def dumps(value: Any) -> str:
    """Pretty JSON with sorted keys and a final newline: stable, diff-friendly."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_json(path: Path, value: Any) -> None:
    write_text(path, dumps(value))


_LINE = json.JSONEncoder(sort_keys=True, ensure_ascii=False)
# json.dumps(row, sort_keys=True, ensure_ascii=False) without a new encoder for every row


def write_jsonl(path: Path, rows: Iterable[Any]) -> None:
    """One JSON line per row, streamed: a row is encoded and written, then dropped."""
    write_text(path, (_LINE.encode(row) + "\n" for row in rows))


def read_json(path: Path) -> Any:
    """``path``'s JSON value; ``None`` when the file does not exist.

    Read through the support-file reader (its size and depth caps); raises
    :class:`~pytest_llmeval.core.errors.RunDirError` naming the file (and line) for anything else.
    """
    if not path.exists():
        return None
    try:
        return safe_read.read_json(path)
    except safe_read.SupportFileError as exc:
        if exc.message == safe_read.NOT_REGULAR:
            raise RunDirError(f"{path}: {exc.message}") from None
        if exc.unreadable:
            raise RunDirError(f"{path}: cannot be read: {exc.message}") from None
        raise RunDirError(f"{exc.where}: not JSON: {exc.message}") from None
