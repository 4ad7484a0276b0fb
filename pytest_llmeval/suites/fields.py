"""Typed reads of one case row, each failure a CaseFileError naming ``path:line`` and the field."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, cast

from pytest_llmeval.core.bounds import MAX_TURNS, REPEATS, Bound
from pytest_llmeval.core.errors import CaseFileError
from pytest_llmeval.core.models import EvalCase
from pytest_llmeval.inputs.loading import a_json_type


class RowReader:
    """Reads fields of one row; every problem names the file, the line and the field."""

    def __init__(self, display: str, line: int, row: dict[str, Any], prefix: str = ""):
        self.display = display
        self.line = line
        self.row = row
        self.prefix = prefix

    def error(self, field: str, message: str) -> CaseFileError:
        return CaseFileError(self.display, self.line, message, field=self.prefix + field)

    def child(self, field: str) -> RowReader:
        """A reader for the object in ``field`` (which must be an object)."""
        return RowReader(self.display, self.line, self.obj(field) or {}, self.prefix + field + ".")

    def reject_unknown(self, known: Iterable[str]) -> None:
        allowed = known if isinstance(known, tuple) else tuple(known)
        for key in self.row:
            if key not in allowed:
                raise self.error(key, f"unknown field; expected one of {', '.join(allowed)}")

    def _get(self, field: str, required: bool) -> Any:
        if field not in self.row or self.row[field] is None:
            if required:
                raise self.error(field, "missing required field")
            return None
        return self.row[field]

    def _expect(self, field: str, value: Any, ok: bool, expected: str) -> None:
        if not ok:
            raise self.error(field, f"expected {expected}, got {a_json_type(value)}")

    def text(self, field: str, *, required: bool = False) -> str | None:
        value = self._get(field, required)
        if value is not None:
            self._expect(field, value, isinstance(value, str), "a string")
        return cast("str | None", value)

    def id(self, field: str = "id") -> str | None:
        """A case id: a non-empty string, or a whole number (turned into a string)."""
        value = self._get(field, False)
        if value is None:
            return None
        ok = (isinstance(value, str) and value.strip() != "") or (
            isinstance(value, int) and not isinstance(value, bool)
        )
        self._expect(field, value, ok, "a non-empty string")
        return str(value)

    def flag(self, field: str) -> bool | None:
        value = self._get(field, False)
        if value is not None:
            self._expect(field, value, isinstance(value, bool), "true or false")
        return cast("bool | None", value)

    def whole(self, field: str, *, minimum: int | None = None) -> int | None:
        value = self._get(field, False)
        if value is None:
            return None
        ok = isinstance(value, int) and not isinstance(value, bool)
        self._expect(field, value, ok, "a whole number")
        if minimum is not None and value < minimum:
            raise self.error(field, f"expected a whole number >= {minimum}, got {value}")
        return int(value)

    def count(self, field: str, bound: Bound) -> int | None:
        """A count that multiplies work (repeats, turns): a whole number in ``bound``."""
        value = self._get(field, False)
        if value is not None and not bound.holds(value):
            raise self.error(field, f"expected {bound.text}, got {shown_count(value)}")
        return cast("int | None", value)

    def number(self, field: str) -> float | None:
        value = self._get(field, False)
        if value is None:
            return None
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        self._expect(field, value, ok, "a number")
        return self._finite(field, value)

    def obj(self, field: str, *, required: bool = False) -> dict[str, Any] | None:
        value = self._get(field, required)
        if value is not None:
            self._expect(field, value, isinstance(value, dict), "an object")
        return cast("dict[str, Any] | None", value)

    def text_list(self, field: str) -> list[str] | None:
        value = self._get(field, False)
        if value is None:
            return None
        self._expect(field, value, isinstance(value, list), "an array of strings")
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise self.error(f"{field}[{i}]", f"expected a string, got {a_json_type(item)}")
        return list(value)

    def text_groups(self, field: str) -> list[list[str]] | None:
        value = self._get(field, False)
        if value is None:
            return None
        self._expect(field, value, isinstance(value, list), "an array of arrays of strings")
        for i, group in enumerate(value):
            if not isinstance(group, list):
                raise self.error(f"{field}[{i}]", f"expected an array, got {a_json_type(group)}")
            for j, item in enumerate(group):
                if not isinstance(item, str):
                    raise self.error(
                        f"{field}[{i}][{j}]", f"expected a string, got {a_json_type(item)}"
                    )
        return [list(group) for group in value]

    def number_map(self, field: str) -> dict[str, float] | None:
        value = self.obj(field)
        if value is None:
            return None
        for key, item in value.items():
            if not isinstance(item, (int, float)) or isinstance(item, bool):
                raise self.error(f"{field}.{key}", f"expected a number, got {a_json_type(item)}")
        return {key: self._finite(f"{field}.{key}", item) for key, item in value.items()}

    def _finite(self, field: str, value: float) -> float:
        """``value`` as a float; JSON's ``NaN`` and ``Infinity`` are errors (a NaN threshold
        would let every score pass)."""
        number = float(value)
        if not math.isfinite(number):
            raise self.error(field, f"expected a finite number, got {number}")
        return number


def shown_count(value: Any) -> str:
    """A bad count as a message shows it: a number as itself, anything else by its type."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(value)
    return a_json_type(value)


def check_counts(case: EvalCase) -> None:
    """Raise CaseFileError (``path:line: field: ...``) when a built case asks for more work
    than a case may: its ``metadata.repeats`` or its ``max_turns`` out of range. Every suite's
    cases pass here, so a count is never silently replaced by a default."""
    repeats = case.metadata.get("repeats")
    if repeats is not None and not REPEATS.holds(repeats):
        raise CaseFileError(
            case.file,
            case.line,
            f"expected {REPEATS.text}, got {shown_count(repeats)}",
            field="metadata.repeats",
        )
    if not MAX_TURNS.holds(case.max_turns):
        raise CaseFileError(
            case.file,
            case.line,
            f"expected {MAX_TURNS.text}, got {shown_count(case.max_turns)}",
            field="max_turns",
        )
