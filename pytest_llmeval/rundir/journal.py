"""The append-only results journal, and resuming an interrupted run from it.

Every process (the single pytest process, or each xdist worker) appends each finished case to
its own file ``<run dir>/journal/<attempt>/<process>.jsonl`` and flushes it, so a run killed
with ``kill -9`` keeps every case it finished. ``--llmeval-resume RUN_DIR`` starts a new
attempt in the same run dir: cases with a *final* result in an earlier attempt are not run
again (an ``error`` is not final: infrastructure faults are retried; nor is a case a budget
skipped), and the report covers
every case. Earlier attempts only are read, so all xdist workers see the same set.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from pytest_llmeval.core.errors import RunDirError
from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.core.version import __version__
from pytest_llmeval.inputs.regular import NOT_REGULAR, not_regular
from pytest_llmeval.rundir.layout import RunLayout

FINAL_OUTCOMES = ("passed", "failed")
"""Outcomes that are a verdict on their case. An error was never judged, and a skip (a
budget, a fixture's ``pytest.skip``, a ``skip``/``skipif`` mark, ``xfail(run=False)``) left the
case out: a resume runs both again."""
SCORERS_VERSION = __version__
"""The version of the scorers that judged a journaled result (they ship with the plugin): a
resume reuses only results judged by the same ones."""
_ENCODER = json.JSONEncoder(sort_keys=True, check_circular=False)
"""json.dumps(..., sort_keys=True), built once; what it encodes is a dump (JSON values, which
hold no cycle), so it keeps no record of the containers it is inside."""
_SCORERS = _ENCODER.encode(SCORERS_VERSION)


def encode(result: dict[str, Any]) -> str:
    """A result's JSON as its journal line holds it (keys sorted, ASCII)."""
    return _ENCODER.encode(result)


FRESH_MARK = "fresh"
"""A file in an attempt's journal folder: that attempt was a fresh session (not a resume) in a
run dir an earlier session used. Readers start at the latest such attempt, so a fresh session
never mixes with an earlier one's results; the earlier journal files stay on disk."""


def journal_root(run_dir: Path) -> Path:
    return RunLayout(run_dir).journal


def next_attempt(run_dir: Path) -> int:
    """The number of the attempt a new session in ``run_dir`` makes (1 for a fresh run)."""
    root = journal_root(run_dir)
    numbers = [int(p.name) for p in root.iterdir() if p.name.isdigit()] if root.is_dir() else []
    return max(numbers, default=0) + 1


class Journal:
    """One process's journal file for one attempt; thread-safe, flushed per case."""

    def __init__(
        self,
        run_dir: Path,
        attempt: int,
        process: str,
        *,
        fresh: bool = False,
        scoring: Callable[[str], str] | None = None,
    ):
        self.run_dir = run_dir
        self.path = journal_root(run_dir) / f"{attempt:03d}" / f"{process}-{os.getpid()}.jsonl"
        self.fresh = fresh
        """A fresh session in a run dir used before: its first line marks the attempt
        (:data:`FRESH_MARK`) so readers leave the earlier sessions' results out."""
        self._handle: IO[bytes] | None = None
        self._lock = threading.Lock()
        self._whole = 0
        """Bytes of whole lines written so far: a failed write is cut back to it."""
        self.scoring = scoring
        """The scoring configuration's fingerprint for a case file (its manifest's thresholds
        and options, repeats, the judge ...), journaled with each result: a resume reuses a
        result only when it is the same."""
        self._tail: tuple[dict[str, Any] | None, str, str] | None = None
        """The runner, file and line tail of the last line (held: the runner is never changed,
        :func:`~pytest_llmeval.plugin.phase_results.agent_fingerprint` makes a new one)."""
        self.error: OSError | None = None
        """Why the journal stopped (a full disk, a folder that cannot be written); once set,
        nothing more is journaled and the file ends with its last whole line."""

    def stopped(self) -> str | None:
        """Why this journal stopped (a full disk), as one line saying what to do; ``None``
        while it writes."""
        error = self.error
        if error is None:
            return None
        return (
            f"llmeval: could not write the journal {self.path}: "
            f"{error.strerror or error}; free some space (or make the run dir writable), then "
            f"finish the run with --llmeval-resume={self.run_dir}"
        )

    def append(self, result: dict[str, Any], runner: dict[str, Any] | None) -> None:
        """Journal one result (a redacted dump) with its runner's fingerprint."""
        self.write(self.line(result, runner))

    def line(self, result: dict[str, Any], runner: dict[str, Any] | None) -> bytes:
        """The journal line of one result (a redacted dump) and its runner's fingerprint,
        newline included: what :meth:`write` writes, and what an xdist worker sends its
        controller (:func:`read_line` reads it back)."""
        return self.encoded_line(_ENCODER.encode(result), result, runner)

    def encoded_line(
        self, encoded: str, result: dict[str, Any], runner: dict[str, Any] | None
    ) -> bytes:
        """:meth:`line`, given the result's own JSON as :func:`encode` made it (``encoded``):
        the entry is that JSON with the runner's fingerprint and the scorers around it,
        byte for byte what encoding the entry whole gives (its keys sorted)."""
        file = str(result.get("file", ""))
        last = self._tail
        if last is not None and last[0] is runner and last[1] == file:
            tail = last[2]  # the session's agent, the same file: the same tail as the last line
        else:
            tail = f', "runner": {_ENCODER.encode(runner)}, "scorers": {_SCORERS}'
            if self.scoring is not None:
                tail += f', "scoring": {_ENCODER.encode(self.scoring(file))}'
            self._tail = (runner, file, tail)
        return f'{{"result": {encoded}{tail}}}\n'.encode("ascii")

    def write(self, line: bytes) -> None:
        """Append one :meth:`line` (flushed; nothing once the journal stopped)."""
        with self._lock:
            if self.error is not None:
                return
            try:
                if self._handle is None:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    if self.fresh:  # before the first line: no reader mixes the sessions
                        (self.path.parent / FRESH_MARK).touch()
                    self._handle = self.path.open("ab", buffering=0)
                    self._whole = self._handle.seek(0, os.SEEK_END)
                written = 0
                while written < len(line):  # an unbuffered write may write part of the line
                    written += self._handle.write(line[written:]) or 0
                self._whole += written
            except OSError as exc:
                self.error = exc
                self._cut_back()

    def _cut_back(self) -> None:
        """Drop a line written in part, so the journal ends with a whole line (truncating
        needs no free space)."""
        if self._handle is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._handle.fileno(), self._whole)

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None


def read_line(line: bytes | str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The result (a redacted dump) and runner fingerprint of one :meth:`Journal.line`."""
    entry = json.loads(line)
    return entry["result"], entry["runner"]


def read_reusable(
    run_dir: Path, before_attempt: int
) -> tuple[dict[str, tuple[CaseResult, dict[str, Any] | None]], set[str], dict[str, Any]]:
    """What a resume may reuse: the final results of the attempts before ``before_attempt``
    judged by these scorers (:data:`SCORERS_VERSION`), the node ids of final results
    judged by other ones (or by a plugin that did not record its version), which run again,
    and the scoring configuration's fingerprint each result was judged under (``None`` when
    not journaled)."""
    rescore: set[str] = set()
    scoring: dict[str, Any] = {}
    found = read_results(run_dir, before_attempt, final_only=True, rescore=rescore, scoring=scoring)
    return found, rescore, scoring


def read_results(
    run_dir: Path,
    before_attempt: int | None = None,
    *,
    final_only: bool = False,
    rescore: set[str] | None = None,
    scoring: dict[str, Any] | None = None,
) -> dict[str, tuple[CaseResult, dict[str, Any] | None]]:
    """The latest journaled result of every case (only final ones with ``final_only``).

    With ``rescore``, a final result judged by other scorers is not final: its node id is
    added to ``rescore`` instead."""
    found: dict[str, tuple[CaseResult, dict[str, Any] | None]] = {}
    for attempt in _this_runs_attempts(run_dir, before_attempt):
        for path in sorted(attempt.glob("*.jsonl")):
            for number, line in enumerate(_whole_lines(path), 1):
                try:
                    entry = json.loads(line)
                    result = CaseResult.kept(entry["result"])
                except (ValueError, KeyError, TypeError, ValidationError):
                    continue
                except RecursionError:  # no result nests this deep: damaged after it was written
                    raise RunDirError(
                        f"{path}:{number}: nested too deeply to be a result (the journal was "
                        "damaged); delete that line (its case runs again on resume) and try again"
                    ) from None
                if rescore is not None:
                    rescore.discard(result.nodeid)
                    if _final(result) and entry.get("scorers") != SCORERS_VERSION:
                        rescore.add(result.nodeid)
                        found.pop(result.nodeid, None)
                        continue
                if not final_only or _final(result):
                    found[result.nodeid] = (result, entry.get("runner"))
                    if scoring is not None:
                        scoring[result.nodeid] = entry.get("scoring")
                else:
                    found.pop(result.nodeid, None)
    return found


def _this_runs_attempts(run_dir: Path, before_attempt: int | None) -> list[Path]:
    """The journal folders of this run's attempts before ``before_attempt`` (all without
    it), oldest first: from the latest fresh session on."""
    root = journal_root(run_dir)
    if not root.is_dir():
        return []
    attempts = sorted(
        p
        for p in root.iterdir()
        if p.name.isdigit() and (before_attempt is None or int(p.name) < before_attempt)
    )
    fresh = [i for i, p in enumerate(attempts) if (p / FRESH_MARK).exists()]
    return attempts[fresh[-1] if fresh else 0 :]


def every_result(
    run_dir: Path, before_attempt: int
) -> Iterator[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Every result this run journaled before ``before_attempt`` (a redacted dump, with its
    runner's fingerprint), each attempt's: a case run twice is there twice, as it was paid
    for twice. What a resume's budget counts as spent already; a line that is not a result
    is left out (:func:`read_results` says what is wrong with a damaged journal)."""
    for attempt in _this_runs_attempts(run_dir, before_attempt):
        for path in sorted(attempt.glob("*.jsonl")):
            for line in _whole_lines(path):
                try:
                    entry = json.loads(line)
                    result, runner = entry["result"], entry.get("runner")
                except (ValueError, KeyError, TypeError, RecursionError):
                    continue
                if isinstance(result, dict):
                    yield result, runner if isinstance(runner, dict) else None


def _whole_lines(path: Path) -> list[str]:
    """The whole lines of a journal file: a last line without its newline (a write cut short
    by a crash or a full disk) is left out. The journal is ASCII (JSON escapes): a line that is
    not valid UTF-8 was damaged after it was written, and is an error naming the file."""
    if not_regular(path):
        raise RunDirError(f"{path}: {NOT_REGULAR}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RunDirError(f"{path}: cannot be read: {exc.strerror}") from None
    lines = data.split(b"\n")[:-1]
    out = []
    for number, line in enumerate(lines, 1):
        try:
            out.append(line.decode("utf-8"))
        except UnicodeDecodeError:
            raise RunDirError(
                f"{path}:{number}: not valid UTF-8 (the journal was damaged); delete that line "
                "(its case runs again on resume) and try again"
            ) from None
    return out


def _final(result: CaseResult) -> bool:
    """Whether a result is a verdict on its case: neither an error nor a skip."""
    return result.outcome in FINAL_OUTCOMES
