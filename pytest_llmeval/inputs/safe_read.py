"""The one reader for the files around the cases: with caps, and errors that say what is wrong.

Everything the plugin reads that is not a case file goes through here: tool fixtures, the tool
registry, prices, the seed manifest, the snapshot, baselines, run-dir files, cassettes and
their ``runner.json``. Each is read with the same caps:

* **size**: at most ``max_bytes`` (default :data:`MAX_BYTES`), refused before it is read whole;
* **depth**: lists and objects nested at most :data:`MAX_DEPTH` deep (what manifests allow,
  :data:`pytest_llmeval.inputs.safe_yaml.MAX_DEPTH`), so nothing downstream recurses without bound;
* **YAML** through :mod:`pytest_llmeval.inputs.safe_yaml` (alias and expansion caps);
* **JSON** strictly: valid UTF-8, no ``NaN``/``Infinity`` (not JSON, and a non-finite number
  must never reach a score), no key twice in one object, one value per document.

A problem is a :class:`SupportFileError` (a :class:`~pytest_llmeval.core.errors.ConfigError`)
naming ``path:line`` and what is wrong in words: ``the file ends inside a value (cut
short?)``, ``NaN is not a JSON number``, ``invalid UTF-8 at byte 12``, ``nested more than 100
levels deep``, ``the file is empty``; never a bare ``line 1 column 1`` or a
``RecursionError``. The caller decides what the error means: a usage error at the start for
a file every case needs, that case's error for a cassette.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_llmeval.core.errors import ConfigError
from pytest_llmeval.inputs import safe_yaml
from pytest_llmeval.inputs.regular import NOT_REGULAR, not_regular
from pytest_llmeval.inputs.unique_keys import DuplicateKeyError, duplicate_line, unique_object

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "NOT_REGULAR",
    "SupportDocument",
    "SupportFileError",
    "first_json_value",
    "iter_json_values",
    "not_regular",
    "parse_json",
    "read_bytes",
    "read_json",
    "read_json_or_yaml",
]

MAX_BYTES = 256 * 1024 * 1024
"""The largest support file read by default (256 MiB: a baseline of 100,000 cases is ~30 MiB)."""

MAX_DEPTH = safe_yaml.MAX_DEPTH
"""The deepest nesting of lists and objects in any support file (as in manifests)."""

_BOM = codecs.BOM_UTF8
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|NaN|-?Infinity|[\[\]{}]')
"""Strings (skipped whole), the non-finite constants and brackets: for the line of a problem."""


class SupportFileError(ConfigError):
    """A support file that cannot be used: ``path:line: message``."""

    def __init__(self, path: str, line: int | None, message: str, *, unreadable: bool = False):
        self.path = path
        self.line = line
        self.message = message
        self.unreadable = unreadable
        """The file could not be read at all (missing, a folder, too large), rather than its
        content being wrong."""
        super().__init__(str(self))

    @property
    def where(self) -> str:
        """``path:line`` (``path`` alone when the problem has no line)."""
        return f"{self.path}:{self.line}" if self.line else self.path

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


class _NonFinite(ValueError):
    def __init__(self, name: str):
        self.name = name
        super().__init__(name)


def _reject(name: str) -> Any:
    raise _NonFinite(name)


_DECODER = json.JSONDecoder(parse_constant=_reject, object_pairs_hook=unique_object)


@dataclass(frozen=True)
class SupportDocument:
    """A parsed JSON or YAML support file."""

    value: Any
    """The document as Python values."""
    text: str
    """Its text."""
    yaml: safe_yaml.YamlDocument | None
    """The YAML node tree (for the line of any value); ``None`` for JSON."""


def read_bytes(path: Path, display: str | None = None, *, max_bytes: int = MAX_BYTES) -> bytes:
    """The file's bytes; :class:`SupportFileError` when it cannot be read or is too large."""
    shown = display or str(path)
    if not_regular(path):
        raise SupportFileError(shown, None, NOT_REGULAR, unreadable=True)
    try:
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        message = f"cannot read it: {exc.strerror or exc}"
        raise SupportFileError(shown, None, message, unreadable=True) from None
    if len(data) > max_bytes:
        message = f"the file is larger than {_size(max_bytes)}; at most that is read"
        raise SupportFileError(shown, None, message, unreadable=True)
    return data


def read_json(path: Path, display: str | None = None, *, max_bytes: int = MAX_BYTES) -> Any:
    """The one JSON value in ``path``, within the caps; :class:`SupportFileError` otherwise."""
    shown = display or str(path)
    return parse_json(read_bytes(path, shown, max_bytes=max_bytes), shown)


def read_json_or_yaml(
    path: Path,
    display: str | None = None,
    *,
    max_bytes: int = MAX_BYTES,
    max_nodes: int = safe_yaml.MAX_NODES,
) -> SupportDocument:
    """``path`` as JSON (``.json``) or YAML (anything else), within the caps."""
    shown = display or str(path)
    data = read_bytes(path, shown, max_bytes=max_bytes)
    text = _decode(data, shown)
    if path.suffix == ".json":
        return SupportDocument(parse_json(text, shown), text, None)
    try:
        document = safe_yaml.load(text, max_nodes=max_nodes)
    except safe_yaml.YamlLimitError as exc:
        raise SupportFileError(shown, exc.line, exc.message) from None
    return SupportDocument(document.value, text, document)


def parse_json(data: bytes | str, display: str, *, first_line: int = 1) -> Any:
    """One JSON value from a file's content (``first_line``: the line it starts on, for one
    line of a JSONL file), within the depth cap; :class:`SupportFileError` otherwise."""
    text = _decode(data, display) if isinstance(data, bytes) else data.lstrip("\ufeff")
    start = _skip_ws(text, 0)
    if start >= len(text):
        raise SupportFileError(display, first_line, "the file is empty" if first_line == 1
                               else "an empty line")  # fmt: skip
    value, end = _decode_one(text, start, display, first_line)
    end = _skip_ws(text, end)
    if end < len(text):
        line, column = _position(text, end)
        raise SupportFileError(
            display,
            line + first_line - 1,
            f"more than one JSON value: extra data at column {column}",
        )
    return value


def first_json_value(text: str, start: int = 0, display: str = "argument") -> Any:
    """The JSON value that begins at ``start`` of ``text``, whatever follows it (a command
    line holding ``{...}`` among other words), within the depth cap; :class:`SupportFileError`
    otherwise."""
    return _decode_one(text, start, display, 1)[0]


def iter_json_values(
    path: Path, display: str | None = None, *, max_bytes: int = MAX_BYTES
) -> Iterator[tuple[int, Any]]:
    """``(line, value)`` for each JSON value of a file that holds several, one after another
    (one per line, or spread over lines), each within the caps."""
    shown = display or str(path)
    text = _decode(read_bytes(path, shown, max_bytes=max_bytes), shown)
    position = _skip_ws(text, 0)
    while position < len(text):
        line = text.count("\n", 0, position) + 1
        value, position = _decode_one(text, position, shown, 1)
        yield line, value
        position = _skip_ws(text, position)


# ---------------------------------------------------------------------------- internals


def _decode(data: bytes, display: str) -> str:
    body = data[len(_BOM) :] if data.startswith(_BOM) else data
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + (len(data) - len(body))
        line = data.count(b"\n", 0, offset) + 1
        raise SupportFileError(display, line, f"invalid UTF-8 at byte {offset + 1}") from None


def _decode_one(text: str, start: int, display: str, first_line: int) -> tuple[Any, int]:
    """The JSON value at ``start`` and where it ends, or the problem with its line."""
    shift = first_line - 1
    try:
        value, end = _DECODER.raw_decode(text, start)
    except DuplicateKeyError as exc:
        line = duplicate_line(text, start, len(text), exc.key)
        raise SupportFileError(display, line + shift, str(exc)) from None
    except _NonFinite as exc:
        line, column = _position(text, _find(text, start, exc.name))
        message = f"invalid JSON: {exc.name} is not a JSON number (column {column})"
        raise SupportFileError(display, line + shift, message) from None
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()):
            line, _ = _position(text, len(text.rstrip()))
            message = "invalid JSON: the file ends inside a value (cut short?)"
            raise SupportFileError(display, line + shift, message) from None
        message = f"invalid JSON: {exc.msg} (column {exc.colno})"
        raise SupportFileError(display, exc.lineno + shift, message) from None
    except RecursionError:
        raise _too_deep(text, start, display, shift) from None
    except ValueError as exc:  # e.g. an integer longer than sys.get_int_max_str_digits()
        line, _ = _position(text, start)
        raise SupportFileError(display, line + shift, f"invalid JSON: {exc}") from None
    if _opening_brackets(text, start, end) > MAX_DEPTH and not _within_depth(value):
        raise _too_deep(text, start, display, shift)
    return value, end


def _opening_brackets(text: str, start: int, end: int) -> int:
    """How many ``[`` and ``{`` the value's text holds: a bound on its nesting depth (each
    level opens with one; those inside strings only raise the bound), so a value with at most
    :data:`MAX_DEPTH` of them needs no walk (a cassette or a row, typically)."""
    return text.count("[", start, end) + text.count("{", start, end)


def _within_depth(value: Any, depth: int = 1) -> bool:
    """Whether no list or object in ``value`` is nested deeper than :data:`MAX_DEPTH`
    (``depth``: the level ``value`` is at; the recursion stops one level past the cap)."""
    if isinstance(value, dict):
        children: Any = value.values()
    elif isinstance(value, list):
        children = value
    else:
        return True
    if depth > MAX_DEPTH:
        return False
    for child in children:
        if isinstance(child, (dict, list)) and not _within_depth(child, depth + 1):
            return False
    return True


def _too_deep(text: str, start: int, display: str, shift: int) -> SupportFileError:
    depth, where = 0, start
    for match in _TOKENS.finditer(text, start):
        token = match[0]
        if token in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                where = match.start()
                break
        elif token in "]}":
            depth -= 1
    line, _ = _position(text, where)
    return SupportFileError(display, line + shift, f"nested more than {MAX_DEPTH} levels deep")


def _find(text: str, start: int, name: str) -> int:
    """Where the constant ``name`` stands outside a string (``start`` if not found)."""
    for match in _TOKENS.finditer(text, start):
        if match[0] == name:
            return match.start()
    return start


def _position(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of ``offset``."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _skip_ws(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in " \t\r\n\ufeff":
        i += 1
    return i


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n % (1024 * 1024) == 0 else f"{n:,} bytes"
