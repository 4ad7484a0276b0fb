"""How report.html writes numbers: percentages, metric values, durations, counts.

Report values come from JSON, so anything may be missing or of the wrong type; these helpers
show ``n/a`` or ``–`` for that instead of failing.
"""

from __future__ import annotations

import math
from typing import Any


def number(value: Any) -> float | None:
    """A finite number, or ``None`` for anything else (``bool`` included)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    out = float(value)
    return out if math.isfinite(out) else None


def pct(value: Any) -> str:
    """``0.8125`` → ``81.2%``; ``n/a`` when it is not a number."""
    found = number(value)
    return "n/a" if found is None else f"{found * 100:.1f}%"


def count(value: Any) -> int:
    """A count, ``0`` when it is not a number."""
    found = number(value)
    return int(found) if found is not None else 0


def metric(value: Any) -> str:
    """A metric value for a table cell: integers as integers, others to four digits."""
    if value is None:
        return "–"
    found = number(value)
    if found is None:
        return str(value)
    if found.is_integer() and abs(found) < 1e15:
        return str(int(found))
    return f"{found:.4g}"


def ms(value: float) -> str:
    """A duration in milliseconds, in ``ms`` or ``s`` (the page's script does the same)."""
    if value >= 10_000:
        return f"{value / 1000:.0f} s"
    if value >= 1000:
        return f"{value / 1000:.1f} s".replace(".0 s", " s")
    if value >= 10 or value == 0:
        return f"{value:.0f} ms"
    return f"{value:.1f} ms"
