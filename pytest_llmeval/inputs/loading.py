"""Reading eval case files record by record, without ever losing the rest of a file.

Every eval case file becomes pytest items, one per record. A broken record becomes a
:class:`Record` whose ``error`` is a :class:`~pytest_llmeval.core.errors.CaseFileError` naming
``path:line`` and what was expected; the plugin turns it into one erroring item and every
other record of the file still loads.

Two formats:

* **JSONL** (:func:`iter_jsonl`): one JSON object per line, streamed from disk one line at a
  time, so a 100,000-line file is never held in memory.
* **JSON** (:func:`read_json_document` / :func:`iter_json_document`): either a bare array of
  records or an object "envelope" whose ``array_key`` (default ``"cases"``) holds the array
  and whose other keys form the *header*. The text is decoded once and the array is walked
  element by element with :meth:`json.JSONDecoder.raw_decode`, so each record is parsed
  exactly once and only one record's value is alive at a time.

Line numbers are 1-based and count ``\\n`` only (so CRLF files number like LF files); blank
lines count. A UTF-8 byte order mark at the start of a file is ignored.

:func:`sniff`, :func:`first_record` and :func:`head_records` help suites decide, by content,
whether a file is theirs.
"""

from __future__ import annotations

import codecs
import json
import re
from array import array
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_llmeval.core.errors import CaseFileError
from pytest_llmeval.inputs.regular import NOT_REGULAR, not_regular
from pytest_llmeval.inputs.unique_keys import DuplicateKeyError, duplicate_line, unique_object

__all__ = [
    "JsonDocument",
    "Record",
    "first_record",
    "head_records",
    "iter_json_document",
    "iter_jsonl",
    "json_type",
    "lone_surrogate",
    "read_json_document",
    "sniff",
]

_BOM = codecs.BOM_UTF8
_WS = re.compile(r"[ \t\n\r]*")
_NEWLINE = re.compile(r"\n")
# From any position, everything up to the next ``[``/``]`` outside a string (or up to an
# unterminated string's opening quote): lets the envelope header scan step over the records
# array by bracket matching, without building any value.
_TO_BRACKET = re.compile(r'[^"\[\]]*(?:"[^"\\]*(?:\\.[^"\\]*)*"[^"\[\]]*)*', re.DOTALL)
_DECODER = json.JSONDecoder(object_pairs_hook=unique_object)
"""Records and header values: an object naming a key twice is that record's error."""
_LENIENT = json.JSONDecoder()
"""Only to step over a record found to have a duplicate key, and for best-effort sniffing."""
_SURROGATE = re.compile("[\ud800-\udfff]")
# a JSON escape that may decode to a lone surrogate: only text holding one needs the walk
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


@dataclass(frozen=True, slots=True)
class Record:
    """One record of a case file, parsed or broken."""

    line: int | None
    """1-based line where the record starts; ``None`` only when the file could not be read."""
    index: int
    """0-based position among the file's records (broken records count)."""
    value: Any
    """The parsed JSON value, or ``None`` when the record is broken."""
    error: CaseFileError | None
    """Why the record cannot be used, or ``None``."""

    @property
    def ok(self) -> bool:
        return self.error is None


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type: object, array, string, number, boolean, null."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


def a_json_type(value: Any) -> str:
    """:func:`json_type` as a message phrase: 'an object', 'a string', 'null' ..."""
    name = json_type(value)
    if name == "null":
        return name
    return ("an " if name[0] in "aeiou" else "a ") + name


def lone_surrogate(value: Any, path: str = "") -> tuple[str, str] | None:
    """Where ``value`` holds text that is not valid Unicode, or ``None``.

    JSON's ``\\ud800`` escapes can spell a lone UTF-16 surrogate, which no UTF-8 file,
    terminal or report can hold. Returns ``(field, problem)``: the dotted path of the first
    string (or key) with one, such as ``messages[0].content``, and what is wrong, such as
    ``not valid Unicode: a lone surrogate \\ud800 at character 3``.
    """
    if isinstance(value, str):
        m = _SURROGATE.search(value)
        if m is None:
            return None
        code = f"\\u{ord(m.group()):04x}"
        return path, f"not valid Unicode: a lone surrogate {code} at character {m.start() + 1}"
    if isinstance(value, dict):
        for key, item in value.items():
            in_key = lone_surrogate(key, path) if isinstance(key, str) else None
            if in_key is not None:
                return in_key[0], f"a key is {in_key[1]}"
            found = lone_surrogate(item, f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for k, item in enumerate(value):
            found = lone_surrogate(item, f"{path}[{k}]")
            if found is not None:
                return found
    return None


def _skip_ws(text: str, i: int) -> int:
    m = _WS.match(text, i)
    return m.end() if m else i


def _unreadable(display: str, exc: OSError) -> CaseFileError:
    return CaseFileError(display, None, f"cannot read the file: {exc.strerror or exc}")


# --------------------------------------------------------------------------------------- JSONL


def iter_jsonl(path: Path, display: str) -> Iterator[Record]:
    """Stream the records of a JSONL file, one :class:`Record` per non-blank line.

    The file is read in binary one line at a time. Each line is decoded as strict UTF-8 and
    parsed on its own, so a broken line yields one error record and the next line loads.
    Error messages: ``invalid UTF-8 at byte N of the line`` (N 1-based),
    ``invalid JSON: <reason> (column C)`` (C counts characters, 1-based) and
    ``expected a JSON object, got <type>``. A file that cannot be opened or read yields one
    error record with ``line=None``.
    """
    if not_regular(path):
        yield Record(None, 0, None, CaseFileError(display, None, NOT_REGULAR))
        return
    try:
        handle = path.open("rb")
    except OSError as exc:
        yield Record(None, 0, None, _unreadable(display, exc))
        return
    with handle:
        lines = iter(handle)
        lineno = 0
        index = 0
        while True:
            try:
                raw = next(lines)
            except StopIteration:
                return
            except OSError as exc:
                error = _unreadable(display, exc)
                yield Record(lineno + 1, index, None, error)
                return
            lineno += 1
            if lineno == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]
            if not raw or raw.isspace():
                continue
            yield _jsonl_record(raw, lineno, index, display)
            index += 1


def _jsonl_record(raw: bytes, line: int, index: int, display: str) -> Record:
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        message = f"invalid UTF-8 at byte {exc.start + 1} of the line"
        return Record(line, index, None, CaseFileError(display, line, message))
    try:
        value = _DECODER.decode(text)
    except DuplicateKeyError as exc:
        return Record(line, index, None, CaseFileError(display, line, str(exc), field=exc.key))
    except json.JSONDecodeError as exc:
        message = f"invalid JSON: {exc.msg} (column {exc.colno})"
        return Record(line, index, None, CaseFileError(display, line, message))
    except RecursionError:
        message = "invalid JSON: nested too deeply"
        return Record(line, index, None, CaseFileError(display, line, message))
    except ValueError as exc:  # e.g. an integer longer than sys.get_int_max_str_digits()
        return Record(line, index, None, CaseFileError(display, line, f"invalid JSON: {exc}"))
    if not isinstance(value, dict):
        message = f"expected a JSON object, got {json_type(value)}"
        return Record(line, index, None, CaseFileError(display, line, message))
    if _SURROGATE_ESCAPE.search(text):
        bad = lone_surrogate(value)
        if bad is not None:
            error = CaseFileError(display, line, bad[1], field=bad[0], case_id=_row_id(value))
            return Record(line, index, None, error)
    return Record(line, index, value, None)


def _row_id(row: dict[str, Any]) -> str | None:
    """A broken row's id, if it has a readable one under a key the suites use for it."""
    for key in ("id", "uuid", "task_id"):
        value = row.get(key)
        if isinstance(value, str) and value and lone_surrogate(value) is None:
            return value
    return None


# ---------------------------------------------------------------------------------------- JSON


def _decode_tracking(view: memoryview) -> tuple[str, list[int], list[int]]:
    """Decode UTF-8 like ``errors="replace"`` and remember where each replacement came from.

    Returns the text, the (ascending) indices in the text of the U+FFFD characters that
    replaced invalid bytes, and the byte offset in ``view`` of each of them. A U+FFFD that was
    literally in the file is not listed.
    """
    try:
        return str(view, "utf-8"), [], []
    except UnicodeDecodeError:
        pass
    parts: list[str] = []
    bad_chars: list[int] = []
    bad_bytes: list[int] = []
    pos = 0
    length = 0
    while True:
        try:
            rest = str(view[pos:], "utf-8")
        except UnicodeDecodeError as exc:
            good = str(view[pos : pos + exc.start], "utf-8")
            parts.append(good)
            length += len(good)
            bad_chars.append(length)
            bad_bytes.append(pos + exc.start)
            parts.append("\ufffd")
            length += 1
            pos += exc.end
        else:
            parts.append(rest)
            return "".join(parts), bad_chars, bad_bytes


def _skip_array(text: str, start: int) -> int | None:
    """The index just past the ``]`` matching the ``[`` at ``start``; ``None`` if unterminated.

    Only brackets outside strings are counted and no value is built: this is how the header
    scan of an envelope steps over the records array. It does not validate anything; the
    array walk in :meth:`JsonDocument.records` reports syntax errors.
    """
    depth = 0
    i = start
    n = len(text)
    while True:
        m = _TO_BRACKET.match(text, i)
        j = m.end() if m else i
        if j >= n or text[j] == '"':  # end of text, or a string that never ends
            return None
        depth += 1 if text[j] == "[" else -1
        i = j + 1
        if depth == 0:
            return i


class JsonDocument:
    """A whole-file JSON case file: its header, available at once, and its records, lazily.

    Design: :meth:`read` reads and decodes the file once and precomputes the newline offsets
    (line numbers come from a bisect). For an envelope it then scans the top-level object
    key by key, parsing every key except ``array_key`` into :attr:`header`, and for the
    records array it stores only the array's start offset, stepping over it with a bracket
    matcher that builds no values. So :attr:`header` is complete as soon as the document is
    returned, whatever the order of the keys (array first or last), and :meth:`records`
    parses each record exactly once, when it is iterated.

    :attr:`header` is ``None`` for a bare array (or an empty, unreadable or non-object file),
    and a dict of the envelope's other keys when the top-level value is an object, even if
    the envelope turns out to be broken (the error then comes as a record).

    :meth:`records` yields, in order: the document-level problems found before the array
    (a syntax error in the header, a missing ``array_key``, an unreadable file...), then one
    record per array element, then the problems found after the array (in keys that follow
    it). Each call walks the array afresh (and parses it again), so iterate it once.
    """

    def __init__(self, display: str, array_key: str | None) -> None:
        self.display = display
        self.array_key = array_key
        self.header: dict[str, Any] | None = None
        self._text = ""
        self._newlines: array[int] = array("q")
        self._bad_chars: list[int] = []
        self._bad_bytes: list[int] = []
        self._array_start: int | None = None
        self._bare = False
        self._before: list[CaseFileError] = []
        self._after: list[CaseFileError] = []

    # ------------------------------------------------------------------ construction

    @classmethod
    def read(cls, path: Path, display: str, array_key: str | None = "cases") -> JsonDocument:
        """Read ``path`` and scan its top level; never raises for bad content or I/O."""
        doc = cls(display, array_key)
        if not_regular(path):
            doc._before.append(CaseFileError(display, None, NOT_REGULAR))
            return doc
        try:
            data = path.read_bytes()
        except OSError as exc:
            doc._before.append(_unreadable(display, exc))
            return doc
        doc._load(data)
        return doc

    def _load(self, data: bytes) -> None:
        bom = len(_BOM) if data.startswith(_BOM) else 0
        text, self._bad_chars, bad_bytes = _decode_tracking(memoryview(data)[bom:])
        self._bad_bytes = [offset + bom for offset in bad_bytes]
        self._text = text
        # offsets of every "\n", 8 bytes each (a list of ints would cost ~36)
        self._newlines = array("q", map(re.Match.start, _NEWLINE.finditer(text)))
        i = _skip_ws(text, 0)
        if i >= len(text):
            return  # empty: no records, no error
        first = text[i]
        if first == "[":
            self._bare = True
            self._array_start = i
        elif first == "{" and self.array_key is not None:
            self._scan_envelope(i, self.array_key)
        elif first == "{":
            self._problem(self._line(i), f"{self._expected()}, got object")
        else:
            try:
                value, _ = _DECODER.raw_decode(text, i)
            except json.JSONDecodeError as exc:
                self._syntax_problem(exc.pos, exc.msg)
            except (ValueError, RecursionError):
                self._syntax_problem(i, "Expecting value")
            else:
                self._problem(self._line(i), f"{self._expected()}, got {json_type(value)}")

    def _scan_envelope(self, start: int, array_key: str) -> None:
        text = self._text
        n = len(text)
        header: dict[str, Any] = {}
        self.header = header
        found = False
        i = _skip_ws(text, start + 1)
        if i < n and text[i] == "}":
            i += 1
        else:
            while True:
                if i >= n or text[i] != '"':
                    self._syntax_problem(i, "Expecting property name enclosed in double quotes")
                    return
                key_start = i
                try:
                    key, i = _DECODER.raw_decode(text, i)
                except json.JSONDecodeError as exc:
                    self._syntax_problem(exc.pos, exc.msg)
                    return
                i = _skip_ws(text, i)
                if i >= n or text[i] != ":":
                    self._syntax_problem(i, "Expecting ':' delimiter")
                    return
                i = _skip_ws(text, i + 1)
                if key == array_key and not found and i < n and text[i] == "[":
                    found = True
                    self._array_start = i
                    end = _skip_array(text, i)
                    if end is None:
                        return  # unterminated: the array walk reports where it breaks
                    i = end
                else:
                    value_start = i
                    inner: DuplicateKeyError | None = None
                    try:
                        try:
                            value, i = _DECODER.raw_decode(text, i)
                        except DuplicateKeyError as exc:
                            inner = exc
                            value, i = _LENIENT.raw_decode(text, value_start)
                    except json.JSONDecodeError as exc:
                        self._syntax_problem(exc.pos, exc.msg)
                        return
                    except RecursionError:
                        self._syntax_problem(value_start, "nested too deeply")
                        return
                    except ValueError as exc:
                        self._syntax_problem(value_start, str(exc))
                        return
                    line = self._line(value_start)
                    if inner is not None:
                        where = duplicate_line(text, value_start, i, inner.key)
                        self._problem(where, str(inner), field=f"{key}.{inner.key}")
                    elif key == array_key and found:
                        self._problem(line, f"duplicate key {array_key!r}", field=array_key)
                    elif key in header:
                        self._problem(self._line(key_start), f"duplicate key {key!r}", field=key)
                    elif key == array_key:
                        found = True
                        got = f"got {array_key!r}: {json_type(value)}"
                        self._problem(line, f"{self._expected()}, {got}")
                    else:
                        bad = self._first_bad(key_start, i)
                        surrogate = lone_surrogate({key: value})
                        if bad is not None:
                            self._problem(*self._utf8_problem(bad), field=key)
                        elif surrogate is not None:  # the header only holds writable text
                            self._problem(line, surrogate[1], field=surrogate[0] or None)
                        if surrogate is None:
                            header[key] = value
                i = _skip_ws(text, i)
                if i < n and text[i] == ",":
                    i = _skip_ws(text, i + 1)
                elif i < n and text[i] == "}":
                    i += 1
                    break
                else:
                    self._syntax_problem(i, "Expecting ',' delimiter")
                    return
        i = _skip_ws(text, i)
        if i < n:
            self._syntax_problem(i, "Extra data")
            return
        if not found:
            missing = f"got an object without a {array_key!r} key"
            self._problem(self._line(start), f"{self._expected()}, {missing}")

    # ------------------------------------------------------------------ iteration

    def records(self) -> Iterator[Record]:
        """The file's records in order (see the class docstring for where problems go)."""
        index = 0
        for error in self._before:
            yield Record(error.line, index, None, error)
            index += 1
        if self._array_start is not None:
            for line, value, problem in self._walk(self._array_start):
                yield Record(line, index, value, problem)
                index += 1
        for error in self._after:
            yield Record(error.line, index, None, error)
            index += 1

    def _walk(self, start: int) -> Iterator[tuple[int, Any, CaseFileError | None]]:
        text = self._text
        n = len(text)
        rest = "the rest of the file" if self._bare else f"the rest of the {self.array_key!r} array"
        i = _skip_ws(text, start + 1)
        if i < n and text[i] == "]":
            end = i + 1
        else:
            while True:
                line = self._line(i)
                duplicate: DuplicateKeyError | None = None
                try:
                    try:
                        value, end = _DECODER.raw_decode(text, i)
                    except DuplicateKeyError as exc:  # rare: step over the record to report it
                        duplicate = exc
                        value, end = _LENIENT.raw_decode(text, i)
                except json.JSONDecodeError as exc:
                    yield self._fatal(exc.pos, exc.msg, rest)
                    return
                except RecursionError:
                    yield self._fatal(i, "nested too deeply", rest)
                    return
                except ValueError as exc:
                    yield self._fatal(i, str(exc), rest)
                    return
                bad = self._first_bad(i, end)
                if bad is not None:
                    yield line, None, self._error(*self._utf8_problem(bad))
                elif duplicate is not None:
                    where = duplicate_line(text, i, end, duplicate.key)
                    error = self._error(where, str(duplicate), field=duplicate.key)
                    error.case_id = _row_id(value) if isinstance(value, dict) else None
                    yield line, None, error
                elif not isinstance(value, dict):
                    message = f"expected a JSON object, got {json_type(value)}"
                    yield line, None, self._error(line, message)
                elif _SURROGATE_ESCAPE.search(text, i, end) and (
                    surrogate := lone_surrogate(value)
                ):
                    error = self._error(line, surrogate[1], field=surrogate[0])
                    error.case_id = _row_id(value)
                    yield line, None, error
                else:
                    yield line, value, None
                del value
                i = _skip_ws(text, end)
                if i < n and text[i] == ",":
                    i = _skip_ws(text, i + 1)
                elif i < n and text[i] == "]":
                    end = i + 1
                    break
                else:
                    yield self._fatal(i, "Expecting ',' delimiter", rest)
                    return
        if self._bare:
            i = _skip_ws(text, end)
            if i < n:
                line, message = self._syntax_message(i, "Extra data")
                yield line, None, self._error(line, message)

    # ------------------------------------------------------------------ positions and errors

    def _line(self, pos: int) -> int:
        return bisect_left(self._newlines, pos) + 1

    def _column(self, pos: int) -> int:
        k = bisect_left(self._newlines, pos)
        line_start = self._newlines[k - 1] + 1 if k else 0
        return pos - line_start + 1

    def _first_bad(self, start: int, end: int) -> int | None:
        """Index into the bad-char lists of the first decode error in ``text[start:end]``."""
        k = bisect_left(self._bad_chars, start)
        if k < len(self._bad_chars) and self._bad_chars[k] < end:
            return k
        return None

    def _utf8_problem(self, bad: int) -> tuple[int, str]:
        line = self._line(self._bad_chars[bad])
        return line, f"invalid UTF-8 at byte offset {self._bad_bytes[bad]}"

    def _syntax_message(self, pos: int, reason: str) -> tuple[int, str]:
        k = bisect_left(self._bad_chars, pos)
        if k < len(self._bad_chars) and self._bad_chars[k] == pos:
            return self._utf8_problem(k)
        return self._line(pos), f"invalid JSON: {reason} (column {self._column(pos)})"

    def _fatal(self, pos: int, reason: str, rest: str) -> tuple[int, Any, CaseFileError]:
        line, message = self._syntax_message(pos, reason)
        return line, None, self._error(line, f"{message}; {rest} was not read")

    def _error(self, line: int | None, message: str, field: str | None = None) -> CaseFileError:
        return CaseFileError(self.display, line, message, field=field)

    def _problem(self, line: int | None, message: str, field: str | None = None) -> None:
        target = self._before if self._array_start is None else self._after
        target.append(self._error(line, message, field))

    def _syntax_problem(self, pos: int, reason: str) -> None:
        line, message = self._syntax_message(pos, reason)
        self._problem(line, f"{message}; the rest of the file was not read")

    def _expected(self) -> str:
        if self.array_key is None:
            return "expected a JSON array of cases"
        return f"expected a JSON array of cases or an object with a {self.array_key!r} array"


def read_json_document(path: Path, display: str, array_key: str | None = "cases") -> JsonDocument:
    """Read a whole-file JSON case file; see :class:`JsonDocument`."""
    return JsonDocument.read(path, display, array_key)


def iter_json_document(
    path: Path, display: str, array_key: str | None = "cases"
) -> tuple[dict[str, Any] | None, Iterator[Record]]:
    """``(header, records)`` of a whole-file JSON case file.

    The header is complete when this returns (see :class:`JsonDocument`); ``records`` is a
    generator that parses one array element per step. ``array_key=None`` accepts only a
    bare array.
    """
    doc = JsonDocument.read(path, display, array_key)
    return doc.header, doc.records()


# ------------------------------------------------------------------------------------ sniffing


def sniff(path: Path, size: int = 65536) -> bytes:
    """The first ``size`` bytes of ``path``; ``b""`` when it cannot be read.

    An unreadable file (or a FIFO, which would wait for a writer) is not an error here: the
    loader reports it as an error record.
    """
    if not_regular(path):
        return b""
    try:
        with path.open("rb") as handle:
            return handle.read(size)
    except OSError:
        return b""


def first_record(head: bytes) -> Any | None:
    """Best effort: the first record in ``head``, the possibly truncated start of a file.

    * a JSON array: its first element, if it is complete in ``head``;
    * JSONL (or a one-line JSON document): the value on the first non-blank line;
    * a pretty-printed object (an envelope, or a truncated long JSONL line): a dict of the
      leading keys whose values are complete, where a truncated array value is replaced by
      the list of its complete elements; ``None`` if not even one key could be read.

    Never raises; returns ``None`` when nothing can be made of ``head``.
    """
    try:
        return _first_record(head)
    except Exception:  # best effort by contract
        return None


MAX_HEAD_RECORDS = 1000
"""The most records :func:`head_records` returns."""


def head_records(head: bytes) -> list[Any]:
    """Best effort: every complete record in ``head``, the possibly truncated start of a file.

    A JSON array gives its complete elements, an envelope (an object with a ``cases`` array)
    the complete elements of that array, JSONL the value of each complete line that parses;
    anything else what :func:`first_record` finds. So a suite can claim a file by the shape
    of its rows, not of its first row alone. At most :data:`MAX_HEAD_RECORDS`; never raises.
    """
    try:
        return _head_records(head)
    except Exception:  # best effort by contract
        return []


def _head_records(head: bytes) -> list[Any]:
    if head.startswith(_BOM):
        head = head[len(_BOM) :]
    text = head.decode("utf-8", errors="replace")
    i = _skip_ws(text, 0)
    if i >= len(text):
        return []
    if text[i] == "[":
        return _partial_array(text, i)[:MAX_HEAD_RECORDS]
    lines = text[i:].split("\n", MAX_HEAD_RECORDS)[:MAX_HEAD_RECORDS]
    rows = []
    first = None
    for k, line in enumerate(lines):
        try:
            rows.append(json.loads(line))
        except (ValueError, RecursionError):
            continue
        if k == 0:
            first = rows[0]
    if first is None and text[i] == "{":  # a pretty-printed object, or a truncated line
        first = _partial_object(text, i) or None
        rows = rows or ([first] if first is not None else [])
    if isinstance(first, dict) and isinstance(first.get("cases"), list):
        return list(first["cases"])[:MAX_HEAD_RECORDS]  # an envelope
    return rows


def _first_record(head: bytes) -> Any | None:
    if head.startswith(_BOM):
        head = head[len(_BOM) :]
    text = head.decode("utf-8", errors="replace")
    n = len(text)
    i = _skip_ws(text, 0)
    if i >= n:
        return None
    if text[i] == "[":
        try:
            value, _ = _LENIENT.raw_decode(text, _skip_ws(text, i + 1))
        except (ValueError, RecursionError):
            return None
        return value
    newline = text.find("\n", i)
    try:
        return json.loads(text[i : newline if newline >= 0 else n])
    except (ValueError, RecursionError):
        pass
    if text[i] == "{":
        return _partial_object(text, i) or None
    return None


def _partial_object(text: str, start: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    n = len(text)
    i = _skip_ws(text, start + 1)
    while i < n and text[i] == '"':
        try:
            key, i = _LENIENT.raw_decode(text, i)
        except (ValueError, RecursionError):
            break
        i = _skip_ws(text, i)
        if i >= n or text[i] != ":":
            break
        i = _skip_ws(text, i + 1)
        try:
            value, i = _LENIENT.raw_decode(text, i)
        except (ValueError, RecursionError):
            if i < n and text[i] == "[":
                out[key] = _partial_array(text, i)
            break
        out[key] = value
        i = _skip_ws(text, i)
        if i >= n or text[i] != ",":
            break
        i = _skip_ws(text, i + 1)
    return out


def _partial_array(text: str, start: int) -> list[Any]:
    items: list[Any] = []
    n = len(text)
    i = _skip_ws(text, start + 1)
    while i < n and text[i] != "]":
        try:
            value, i = _LENIENT.raw_decode(text, i)
        except (ValueError, RecursionError):
            break
        items.append(value)
        i = _skip_ws(text, i)
        if i >= n or text[i] != ",":
            break
        i = _skip_ws(text, i + 1)
    return items
