"""Scores are finite numbers: finding a NaN or an infinity in a score or a verdict (pure).

A NaN compares false with every threshold (``nan < 0.9`` is false), so a NaN score would pass
any minimum; an infinity passes every minimum too. Python's ``json`` reads ``NaN`` and
``Infinity`` literals, so a model's or an endpoint's JSON can carry them. A case whose score is
not a finite number could not be judged: it is an error, never compared with a threshold.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from math import isfinite
from typing import Any

__all__ = ["first_non_finite", "non_finite_scores"]

_NUMBER = (int, float)


def first_non_finite(value: Any, path: str = "") -> tuple[str, float] | None:
    """The first non-finite number in a JSON-like ``value`` (dicts, lists, numbers) and its
    ``/``-separated path (``scores/correctness``), or ``None`` when every number is finite."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, value)
    if isinstance(value, Mapping):
        for key, item in value.items():
            found = first_non_finite(item, f"{path}/{key}" if path else str(key))
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = first_non_finite(item, f"{path}/{index}" if path else str(index))
            if found is not None:
                return found
    return None


def non_finite_scores(scores: Mapping[str, float], source: str) -> str | None:
    """Why ``scores`` (a case's named scores, as ``source`` gave them) cannot be judged, or
    ``None`` when every score is a finite number."""
    for value in scores.values():  # a loop, not all(...): this runs for every case
        if not (isinstance(value, _NUMBER) and isfinite(value)):
            break
    else:
        return None
    bad = [f"{name} = {value!r}" for name, value in sorted(scores.items())
           if not (isinstance(value, (int, float)) and math.isfinite(value))]  # fmt: skip
    return (
        f"{source} gave a score that is not a finite number ({', '.join(bad)}): "
        "the case cannot be judged against its thresholds"
    )
