"""The reference harness's grounding, quirks included: the ``compat`` mode.

For users who need the numbers the original tool-integration harness printed. Every rule here
is the reference's, on purpose, even where it is wrong (:mod:`.grounding` has the precise rules):

* spans: ``Integration:\\s*([^\\n]+?)(?:[.!?…]\\s|$)`` without MULTILINE, on the raw text; a
  span that ends the text keeps its final punctuation, one cut by a line break is lost;
* fields: every result's *top-level* keys as ``str(value)``, later calls overwriting earlier
  ones (so ``True`` is ``"True"`` and a list of hits its Python ``repr``);
* lax: any non-empty field value, casefolded with whitespace collapsed, as a plain substring of
  the span (bookkeeping keys included); URLs by ``host.lstrip("www.")`` and the first path
  segment; strict: the same over the keyed fields;
* :func:`contains_grounding`: the whole-output test behind grounded coverage and negative
  controls (``.lower()``, bare digits with word boundaries for numbers, a few verb swaps);
* per item ``P = g / max(1, n)``, ``R = 1[g >= 1]``; eligible = not a control, at least one
  call and at least one span.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from pytest_llmeval.scoring.grounding import PRF, Spans

SPAN_RE = re.compile(r"Integration:\s*([^\n]+?)(?:[\.!?…]\s|$)", re.UNICODE)
KEYED = ("summary", "lines", "count", "top_k", "results")
VERB_SWAPS = {"prefer": ("favor", "prioritize", "choose")}


def spans(text: str, cap: int = 3) -> Spans:
    found = [m.span(1) for m in SPAN_RE.finditer(text)]
    return Spans(kept=found[:cap], total=len(found))


def fields(results: Sequence[Any]) -> dict[str, str]:
    """Top-level keys of every result dict, as ``str``; later results overwrite."""
    out: dict[str, str] = {}
    for result in results:
        if isinstance(result, dict):
            for key, value in result.items():
                out[str(key)] = str(value)
    return out


def norm(value: Any) -> str:
    return " ".join(str(value).casefold().split())


def _url(value: str, segment_text: str) -> bool:
    parts = urlsplit(value)
    # the reference's own call: it strips the *characters* w and ., not the prefix
    host = (parts.hostname or "").lower().lstrip("w.")
    first = next((s for s in parts.path.split("/") if s), "")
    return bool(host) and host in segment_text and first.lower() in segment_text


def grounded(segment: str, values: Mapping[str, str], keys: Sequence[str] | None = None) -> bool:
    """``grounded_values_in_span`` (lax) or, with ``keys``, its strict twin."""
    text = norm(segment)
    for key, value in values.items():
        if keys is not None and key not in keys:
            continue
        if not value:
            continue
        if "://" in value and _url(value, text):
            return True
        if norm(value) in text:
            return True
    return False


def contains_grounding(
    text: str, kept: Sequence[tuple[int, int]], values: Mapping[str, str]
) -> bool:
    """Whether any span contains any field value, the reference's third way."""
    for start, end in kept:
        segment = text[start:end]
        lowered = segment.lower()
        for value in values.values():
            if not value:
                continue
            try:
                float(value)
            except ValueError:
                candidates = [value.lower()]
                for verb, swaps in VERB_SWAPS.items():
                    if verb in candidates[0]:
                        candidates += [candidates[0].replace(verb, s) for s in swaps]
                if any(c in lowered for c in candidates):
                    return True
                continue
            digits = re.sub(r"\D", "", value)
            if digits and re.search(rf"\b{digits}\b", segment):
                return True
    return False


def prf(g: int, n: int, has_fields: bool) -> PRF:
    if n == 0 or not has_fields:
        return PRF(0.0, 0.0, 0.0)
    precision = g / max(1, n)
    recall = 1.0 if g >= 1 else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return PRF(precision, recall, f1)
