"""Deterministic text scorers: pure functions from a response (and an expectation) to [0, 1]."""

from __future__ import annotations

import json
import re

_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n(.*?)\n?```\s*$", re.DOTALL)


def exact_match(actual: str, expected: str) -> float:
    """1.0 when the two texts are equal after stripping surrounding whitespace."""
    return 1.0 if actual.strip() == expected.strip() else 0.0


def contains_keywords(actual: str, keywords: list[str]) -> float:
    """Share of ``keywords`` found in ``actual``, case-insensitively (1.0 for no keywords)."""
    if not keywords:
        return 1.0
    text = actual.lower()
    return sum(1 for keyword in keywords if keyword.lower() in text) / len(keywords)


def regex_match(actual: str, pattern: str) -> float:
    """1.0 when ``pattern`` matches anywhere in ``actual`` (``re.search``)."""
    return 1.0 if re.search(pattern, actual) else 0.0


def json_valid(actual: str) -> float:
    """1.0 when ``actual`` is a JSON document; one surrounding Markdown code fence is allowed."""
    fenced = _FENCE.match(actual)
    text = fenced.group(1) if fenced else actual
    try:
        json.loads(text)
    except ValueError:
        return 0.0
    return 1.0
