"""Integration spans and their grounding in tool results (the precise definitions).

Pure functions over an answer's text and the tool results it saw; every rule is
deterministic:

* :func:`extract_spans`: ``Integration:`` spans as half-open code-point intervals of the text
  (NFC, LF line endings), the end marker excluded everywhere, a line break ending a span, the
  first ``cap`` kept;
* :func:`facts_of`: a successful result flattened recursively into ``(path, leaf)`` facts,
  bookkeeping keys dropped, strings of at least 3 characters and numbers kept;
* :func:`lax_match` / :func:`strict_match`: whether a span is grounded in a fact, and
  :func:`numbers_in` / :func:`dates_in` the locale-aware number and date reading they use.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

SPAN_RE = re.compile(r"Integration:[ \t]*(?P<s>[^\n]+?)(?=[.!?…](?:\s|$)|\n|$)")
BOOKKEEPING = frozenset({"ok", "error", "status", "name", "arguments", "key_normalized"})
STRICT_KEYS = frozenset({"summary", "lines", "count", "top_k", "results"})
"""Keys whose values are ``keyed`` facts, the only ones strict grounding uses (default)."""
MIN_STRING_FACT = 3
LONG_FACT_CHARS = 40
LONG_FACT_RUN = 8
TOLERANCE = 1e-6

_SPACE = " \u00a0\u202f"
_NUMBER_RE = {
    "en": re.compile(r"(?<![\w.,])-?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\w]|[.,]\d)"),
    "es": re.compile(r"(?<![\w.,])-?(?:\d{1,3}(?:\.\d{3})+(?:,\d+)?|\d+(?:,\d+)?)(?![\w]|[.,]\d)"),
    "fr": re.compile(
        rf"(?<![\w.,])-?(?:\d{{1,3}}(?:[{_SPACE}]\d{{3}})+(?:,\d+)?|\d+(?:,\d+)?)(?![\w]|[.,]\d)"
    ),
}
_NUMBER_RE["de"] = _NUMBER_RE["es"]
_PERCENT_RE = re.compile(rf"^[{_SPACE}]?%")
_DATE_RE = re.compile(r"(?<!\d)(\d{1,4})([./-])(\d{1,2})\2(\d{1,4})(?!\d)")
_ISO_DATE_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_DATE_ORDER = {"en": "mdy", "es": "dmy", "fr": "dmy", "de": "dmy"}


def norm(text: str) -> str:
    """NFKC, casefold, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def normalize_text(text: str) -> str:
    """The answer as spans are read from: NFC, CRLF and CR turned into LF."""
    return unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))


# ---------------------------------------------------------------------------- spans


@dataclass(frozen=True)
class Spans:
    """The spans of one answer."""

    kept: list[tuple[int, int]]
    """Half-open code-point intervals of the first ``cap`` spans."""
    total: int
    """Spans found before the cap."""

    @property
    def exceeded_cap(self) -> bool:
        return self.total > len(self.kept)


def extract_spans(text: str, cap: int = 3) -> Spans:
    """The ``Integration:`` spans of ``text`` (already :func:`normalize_text`-ed)."""
    found = []
    for match in SPAN_RE.finditer(text):
        start, end = match.span("s")
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            found.append((start, end))
    return Spans(kept=found[:cap], total=len(found))


# ---------------------------------------------------------------------------- facts


@dataclass(frozen=True)
class Fact:
    """One leaf of a tool result."""

    path: tuple[str | int, ...]
    value: str | float
    tool: str
    call: int
    """Index of the call in the trace."""

    @property
    def key(self) -> str | None:
        """The last key on the path (list indices skipped)."""
        return next((p for p in reversed(self.path) if isinstance(p, str)), None)

    def keyed(self, keys: frozenset[str] = STRICT_KEYS) -> bool:
        return self.key in keys

    def describe(self) -> str:
        where = ".".join(str(p) for p in self.path)
        return f"{self.tool}#{self.call}.{where}={self.value!r}"


def successful(result: Any) -> bool:
    """A call is successful unless its result has ``ok: false`` or an ``error`` key."""
    return not (isinstance(result, dict) and (result.get("ok") is False or "error" in result))


def facts_of(result: Any, tool: str, call: int) -> list[Fact]:
    """``result`` flattened into facts (whatever its success; callers choose), keys sorted."""
    out: list[Fact] = []

    def walk(value: Any, path: tuple[str | int, ...]) -> None:
        if isinstance(value, dict):  # keys sorted: the same facts whatever the JSON's order
            for key in sorted(value, key=str):
                if str(key) not in BOOKKEEPING:
                    walk(value[key], (*path, str(key)))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, (*path, i))
        elif isinstance(value, bool) or value is None:
            return
        elif isinstance(value, (int, float)):
            if math.isfinite(value):
                out.append(Fact(path, float(value), tool, call))
        elif isinstance(value, str) and len(norm(value)) >= MIN_STRING_FACT:
            out.append(Fact(path, value, tool, call))

    walk(result, ())
    return out


# ---------------------------------------------------------------------------- numbers, dates


def _parse_number(token: str, locale: str) -> float:
    text = token
    for space in _SPACE:
        text = text.replace(space, "")
    if locale in ("es", "de", "fr"):
        text = text.replace(".", "").replace(",", ".")
    else:
        text = text.replace(",", "")
    return float(text)


@dataclass(frozen=True)
class Number:
    value: float
    percent: bool
    start: int
    end: int


def numbers_in(text: str, locale: str = "en") -> list[Number]:
    """The number tokens of ``text`` read with ``locale``'s separators (one by one)."""
    pattern = _NUMBER_RE.get(locale, _NUMBER_RE["en"])
    out = []
    for match in pattern.finditer(text):
        percent = bool(_PERCENT_RE.match(text[match.end() : match.end() + 2]))
        value = _parse_number(match.group(), locale if locale in _NUMBER_RE else "en")
        out.append(Number(value, percent, match.start(), match.end()))
    return out


def dates_in(text: str, locale: str = "en") -> list[tuple[tuple[int, int, int], int, int]]:
    """Dates of ``text`` as (year, month, day) read in ``locale``'s order (d/m/y, d.m.y,
    m/d/y; y/m/d when the first part has four digits), with their offsets."""
    order = _DATE_ORDER.get(locale, "mdy")
    out = []
    for match in _DATE_RE.finditer(text):
        a, b, c = int(match[1]), int(match[3]), int(match[4])
        if len(match[1]) == 4:
            year, month, day = a, b, c
        elif order == "dmy":
            day, month, year = a, b, c
        else:
            month, day, year = a, b, c
        if year < 100:
            year += 2000
        if 1 <= month <= 12 and 1 <= day <= 31:
            out.append(((year, month, day), match.start(), match.end()))
    return out


def iso_date(value: str) -> tuple[int, int, int] | None:
    match = _ISO_DATE_RE.match(value.strip())
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def number_appears(x: float, numbers: Iterable[Number]) -> bool:
    """``x`` equals a token within 1e-6, or ``100·x`` when the token is a percentage."""
    for number in numbers:
        if abs(number.value - x) <= TOLERANCE:
            return True
        if number.percent and abs(number.value - 100 * x) <= TOLERANCE:
            return True
    return False


# ---------------------------------------------------------------------------- matching


class SpanText:
    """One span, read once: normalized text, numbers (item locale and en-US) and dates."""

    def __init__(self, text: str, locale: str = "en") -> None:
        self.raw = text
        self.norm = norm(text)
        self.locale = locale
        numbers = numbers_in(text, "en")
        if locale != "en":
            numbers += numbers_in(text, locale)
        self.numbers = numbers
        self.dates = {d for d, _, _ in dates_in(text, locale)}

    def has_token_run(self, needle: str) -> bool:
        """``needle`` (normalized) as a whole-token substring of the span."""
        if not needle:
            return False
        at = self.norm.find(needle)
        while at >= 0:
            before = self.norm[at - 1] if at else " "
            end = at + len(needle)
            after = self.norm[end] if end < len(self.norm) else " "
            if not _is_word(before) and not _is_word(after):
                return True
            at = self.norm.find(needle, at + 1)
        return False


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _url_appears(value: str, span: SpanText) -> bool:
    parts = urlsplit(value.strip())
    host = (parts.hostname or "").lower()
    host = host[4:] if host.startswith("www.") else host
    if not host:
        return False
    segment = next((s for s in parts.path.split("/") if s), "")
    return host in span.norm and (not segment or norm(segment) in span.norm)


def lax_match(fact: Fact, span: SpanText) -> bool:
    """A string fact as a whole-token substring, a number by value, a URL by host and path."""
    if isinstance(fact.value, float):
        return number_appears(fact.value, span.numbers)
    if "://" in fact.value and _url_appears(fact.value, span):
        return True
    date = iso_date(fact.value)
    if date is not None and date in span.dates:
        return True
    return span.has_token_run(norm(fact.value))


def strict_match(fact: Fact, span: SpanText) -> bool:
    """Keyed facts only (the caller filters): the full normalized value, or for a value over
    40 characters a contiguous run of at least 8 of its tokens; numbers by value."""
    if isinstance(fact.value, float):
        return number_appears(fact.value, span.numbers)
    value = norm(fact.value)
    if span.has_token_run(value):
        return True
    date = iso_date(fact.value)
    if date is not None and date in span.dates:
        return True
    if len(fact.value) > LONG_FACT_CHARS:
        tokens = value.split()
        for i in range(len(tokens) - LONG_FACT_RUN + 1):
            if span.has_token_run(" ".join(tokens[i : i + LONG_FACT_RUN])):
                return True
    return False


def first_match(
    facts: Sequence[Fact], span: SpanText, strict: bool, keys: frozenset[str] = STRICT_KEYS
) -> Fact | None:
    """The first fact that grounds ``span`` in that mode, or ``None``."""
    for fact in facts:
        if strict:
            if fact.keyed(keys) and strict_match(fact, span):
                return fact
        elif lax_match(fact, span):
            return fact
    return None


# ---------------------------------------------------------------------------- P / R / F1


@dataclass(frozen=True)
class PRF:
    precision: float | None
    recall: float | None
    f1: float | None

    def as_dict(self) -> dict[str, float | None]:
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1}


def any_hit_prf(grounded: int, spans: int) -> PRF:
    """P = g/n, R = 1[g >= 1] (any-hit), F1 their harmonic mean; all 0 with no span."""
    if spans == 0:
        return PRF(0.0, 0.0, 0.0)
    precision = grounded / spans
    recall = 1.0 if grounded else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return PRF(precision, recall, f1)


def harmonic(p: float | None, r: float | None) -> float | None:
    if p is None or r is None:
        return None
    return 2 * p * r / (p + r) if p + r else 0.0
