"""Run- and case-derived text made inert for Markdown (``summary.md``, pull-request comments).

A CI step summary renders ``summary.md``: a case id, a message or a file name from the data
must not open a link, an image, a heading, a table cell or an HTML tag there. Every such text
goes through :func:`md_text` (escaped prose) or :func:`md_code` (a code span), and a table
cell through :func:`md_cell` on top.
"""

from __future__ import annotations

import html
import re

__all__ = ["md_cell", "md_code", "md_plain", "md_text", "one_line"]

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#!|~<>])")
_PLAIN = re.compile(r"^[\w .,:;/@+^%=()-]*$")
_LOOSE_UNDERSCORE = re.compile(r"(?<!\w)_|_(?!\w)")


def one_line(text: str) -> str:
    """``text`` with its line breaks and other vertical whitespace as single spaces."""
    return " ".join(text.split()) if any(ch in text for ch in "\r\n\t\v\f") else text


def md_text(value: object) -> str:
    """``value`` as inert Markdown text on one line: HTML escaped (``<``, ``>``, ``&``),
    every Markdown punctuation mark backslash-escaped (so no link, image, heading, emphasis,
    code span or table cell border survives), and line breaks as spaces."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", html.escape(one_line(str(value)), quote=False))


def md_plain(value: object) -> str:
    """``value`` as is when no Markdown can come of it (``acc_norm``, ``macro-F1 (3)``,
    ``replay: example-router``, ``cannot_answer``), else as a code span (:func:`md_code`): our
    own labels read the same in a CI log and rendered, anything else stays inert."""
    text = one_line(str(value))
    if _PLAIN.match(text) and not _LOOSE_UNDERSCORE.search(text):
        return text
    return md_code(text)


def md_code(value: object) -> str:
    """``value`` as a Markdown code span on one line: nothing in it is rendered, and its fence
    is one backtick longer than any run of backticks inside (CommonMark), so it cannot be
    closed early."""
    text = one_line(str(value))
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_cell(text: str) -> str:
    """Markdown for a table cell: one line, pipes escaped (a code span included)."""
    return one_line(text).replace("|", "\\|")
