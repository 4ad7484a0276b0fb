"""Long texts cut for messages and reports, with a marker that says how long they were.

One marker everywhere a text is shortened for people to read (failure messages, the HTML
report, ``results.jsonl``'s transcript, GAIA's raw output): ``… [clipped: N characters in
all]``. The full length is what a reader needs to know whether the cut hid much.
"""

from __future__ import annotations

import re

__all__ = ["clip", "full_length", "marker"]


def marker(length: int) -> str:
    """The text appended to a clipped text whose full length was ``length`` characters."""
    return f"… [clipped: {length} characters in all]"


_CLIPPED = re.compile(re.escape(marker(0)).replace("0", r"(\d+)") + r"\Z")
"""A text :func:`clip` cut before ends with its marker."""


def clip(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else its first ``limit`` characters
    followed by :func:`marker`. A text clipped before (it ends with a marker: an error kept
    clipped, then clipped shorter for a summary) keeps the full length that marker gave."""
    if len(text) <= limit:
        return text
    found = _CLIPPED.search(text)
    return text[:limit] + marker(int(found.group(1)) if found else len(text))


def full_length(text: str) -> int:
    """The length ``text`` had before :func:`clip` cut it (its own length if it was not)."""
    found = _CLIPPED.search(text)
    return int(found.group(1)) if found else len(text)
