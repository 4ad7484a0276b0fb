"""A file no suite claims: an empty suite when it holds no records, else why not.

An empty file, a JSON file holding ``[]`` or an envelope with an empty ``cases`` array has no
cases, and that is not an error. A file that does not parse is told so with its first
syntax error (``path:line: invalid JSON: ... (column N)``), not with "no suite recognises
this file", which is for files that parse but have no suite's shape.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_llmeval.core.errors import CaseFileError
from pytest_llmeval.core.models import EvalCase, Transcript
from pytest_llmeval.inputs.loading import Record, iter_jsonl, read_json_document
from pytest_llmeval.suites.base import CaseSource, SuiteBase

__all__ = ["EMPTY_SUITE", "why_unclaimed"]


class _EmptySuite(SuiteBase):
    """An empty file has no cases; that is not an error."""

    name = "empty"

    def claims(self, path: Path, head: bytes) -> bool:
        return False

    def load(self, source: CaseSource, ctx: Any) -> Iterator[Any]:
        return iter(())

    def score(self, case: EvalCase, transcript: Transcript, ctx: Any) -> Any:
        raise NotImplementedError

    def aggregate(self, results: Any) -> dict[str, Any]:
        return {}


EMPTY_SUITE: SuiteBase = _EmptySuite()


def why_unclaimed(path: Path, display: str) -> tuple[bool, CaseFileError | None]:
    """Why no suite claims a file: ``(True, None)`` when it holds no records at all (``[]``,
    an envelope with an empty ``cases``: an empty suite, as an empty file is), else the first
    record that is not valid JSON or not UTF-8 (with its line and column), if any."""
    if path.suffix == ".jsonl":
        records: Iterator[Record] = iter_jsonl(path, display)
    else:
        records = read_json_document(path, display).records()
    empty = True
    for record in records:
        empty = False
        error = record.error
        if error is not None and error.message.startswith(("invalid JSON", "invalid UTF-8")):
            return False, error
    return empty, None
