"""How suites read rows: JSONL line by line, JSON arrays and envelopes element by element."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pytest_llmeval.core.errors import CaseFileError
from pytest_llmeval.core.models import EvalCase
from pytest_llmeval.inputs.loading import (
    JsonDocument,
    Record,
    first_record,
    head_records,
    iter_jsonl,
)
from pytest_llmeval.suites.base import CaseSource, LoadItem, PendingCase


def read_records(
    source: CaseSource, array_key: str | None = "cases"
) -> tuple[dict[str, Any] | None, Iterator[Record]]:
    """The file's header (an envelope's other keys, else ``None``) and its records."""
    if source.path.suffix == ".jsonl":
        return None, iter_jsonl(source.path, source.display)
    document = JsonDocument.read(source.path, source.display, array_key)
    return document.header, document.records()


def first_row(path: Path, head: bytes) -> Any:
    """The first case row of a file from its first bytes (an envelope's first case), or None."""
    value = first_record(head)
    if isinstance(value, list):
        value = value[0] if value else None
    if isinstance(value, dict) and isinstance(value.get("cases"), list):
        cases = value["cases"]
        return cases[0] if cases else {}
    return value


def head_rows(path: Path, head: bytes) -> list[dict[str, Any]]:
    """The case rows complete in a file's first bytes (an envelope's cases), objects only: a
    suite claims a file when its rows have the suite's shape, whichever row shows it."""
    rows = [row for row in head_records(head) if isinstance(row, dict)]
    if not rows:
        row = first_row(path, head)
        rows = [row] if isinstance(row, dict) else []
    return rows


def is_envelope(head: bytes) -> bool:
    value = first_record(head)
    return isinstance(value, dict) and isinstance(value.get("cases"), list)


Identify = Callable[
    [int, dict[str, Any]], "tuple[str, str | None] | tuple[str, str | None, tuple[str, ...]]"
]
"""``(line, row) -> (case id, category)`` or ``(case id, category, extra markers)``."""


def iter_cases(
    records: Iterator[Record],
    make: Callable[[int, dict[str, Any]], EvalCase],
    identify: Identify | None = None,
) -> Iterator[LoadItem]:
    """Turn records into cases with ``make(line, row)``; a broken record or row yields its error.

    With ``identify(line, row) -> (case id, category[, markers])`` (which must agree with
    ``make`` and raises CaseFileError for a bad id), rows become :class:`PendingCase` and
    ``make`` runs when each case is first needed.
    """
    for record in records:
        if record.error is not None:
            yield record.error
            continue
        line = record.line or 1
        try:
            if identify is None:
                yield make(line, record.value)
            else:
                known = identify(line, record.value)
                marks = known[2] if len(known) > 2 else ()
                yield PendingCase(known[0], line, known[1], record.value, make, marks=marks)
        except CaseFileError as exc:
            yield exc
