"""The ``--llmeval-rate-limit`` spec, and the token counts a rate of tokens is charged.

A spec is comma-separated limits, at most one of each kind: ``N/s`` or ``N/min`` (requests),
and ``Ntok/s`` or ``Ntok/min`` (tokens), e.g. ``10/s``, ``600/min``, ``90000tok/min``,
``10/s,90000tok/min``. ``N`` is a positive number (``0.5/s`` is fine).

A request's tokens are guessed before it is sent (:func:`estimate_tokens`: a quarter of the
JSON body's characters plus its ``max_tokens``) and corrected by the answer's
``usage.total_tokens`` when it has one (:func:`usage_tokens`).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["RATE_FORM", "RateLimit", "estimate_tokens", "parse_rate_limit", "usage_tokens"]

RATE_FORM = (
    "LIMIT[,LIMIT] where LIMIT is N/s or N/min (requests) or Ntok/s or Ntok/min (tokens), "
    "at most one of each kind, e.g. 10/s,90000tok/min"
)
_LIMIT = re.compile(r"(?P<n>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(?P<tok>tok)?\s*/\s*(?P<unit>s|min)")
_SECONDS = {"s": 1.0, "min": 60.0}


@dataclass(frozen=True)
class RateLimit:
    """A parsed ``--llmeval-rate-limit``: per-second rates, ``None`` for no limit."""

    requests_per_s: float | None = None
    tokens_per_s: float | None = None
    text: str = ""
    """The spec, normalised (``10/s,90000tok/min``)."""

    def __str__(self) -> str:
        return self.text


def parse_rate_limit(text: str) -> RateLimit:
    """Parse a rate spec; ``ValueError`` says what is wrong (the accepted form: RATE_FORM)."""
    rates: dict[str, float] = {}
    parts: list[str] = []
    for raw in text.split(","):
        piece = raw.strip()
        match = _LIMIT.fullmatch(piece)
        if match is None:
            raise ValueError(f"{piece!r} is not N/s, N/min, Ntok/s or Ntok/min")
        count = float(match["n"])
        if not (math.isfinite(count) and count > 0):
            raise ValueError(f"{piece!r}: the number must be above 0")
        kind = "tokens" if match["tok"] else "requests"
        if kind in rates:
            raise ValueError(f"more than one {kind} limit")
        rates[kind] = count / _SECONDS[match["unit"]]
        parts.append(f"{count:g}{'tok' if match['tok'] else ''}/{match['unit']}")
    return RateLimit(rates.get("requests"), rates.get("tokens"), ",".join(parts))


def estimate_tokens(body: Any) -> int:
    """Tokens a request will cost, guessed before sending: a quarter of its JSON text, plus
    the ``max_tokens`` it asks for."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), default=str)
    tokens = len(text) // 4 + 1
    wanted = body.get("max_tokens") if isinstance(body, dict) else None
    if isinstance(wanted, int) and not isinstance(wanted, bool) and wanted > 0:
        tokens += wanted
    return tokens


def usage_tokens(response: Any) -> int | None:
    """``usage.total_tokens`` of an HTTP response's JSON body, if it has one."""
    try:
        data = response.json()
    except ValueError:
        return None
    usage = data.get("usage") if isinstance(data, dict) else None
    total = usage.get("total_tokens") if isinstance(usage, dict) else None
    if isinstance(total, int) and not isinstance(total, bool) and total >= 0:
        return total
    return None
