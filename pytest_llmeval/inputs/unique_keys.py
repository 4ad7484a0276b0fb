"""JSON objects that name a key twice are bad input, not "the later one wins".

``json.loads`` keeps the last of two equal keys without a word, so a row
``{"expected_output": "WRONG", "expected_output": "right"}`` would be judged on whichever the
writer happened to put last, and a reviewer reading the file sees both. Every reader of a
user's JSON parses objects through :func:`unique_object` (``object_pairs_hook``): the dict is
built as ``json`` builds it, and only when it came out shorter than its pairs is the key
looked for, so a file without duplicates pays one ``len`` per object.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["DuplicateKeyError", "duplicate_line", "unique_object"]


class DuplicateKeyError(ValueError):
    """An object with ``key`` twice."""

    def __init__(self, key: str):
        self.key = key
        super().__init__(f"duplicate key {key!r}")


def unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``dict(pairs)``, or :class:`DuplicateKeyError` naming the first key given twice."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(key)
            seen.add(key)
    return value


def duplicate_line(text: str, start: int, end: int, key: str) -> int:
    """The 1-based line (of ``text``) of the second ``"key":`` between ``start`` and ``end``
    (a best guess for a key spelled with other escapes: the line of ``start``)."""
    pattern = re.compile(re.escape(json.dumps(key, ensure_ascii=False)) + r"\s*:")
    found = [m.start() for m in pattern.finditer(text, start, end if end > start else len(text))]
    where = found[1] if len(found) > 1 else start
    return text.count("\n", 0, where) + 1
