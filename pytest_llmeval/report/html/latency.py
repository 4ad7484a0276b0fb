"""The Latency section's numbers: the percentiles, and the histogram as the shapes its SVG draws.

All coordinates are computed here and handed to the template as text, so the template only
places ``<rect>``, ``<line>`` and ``<text>`` elements.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.report.html.formatting import ms

WIDTH, HEIGHT = 760.0, 240.0
"""The SVG's view box."""
LEFT, BOTTOM, TOP, RIGHT = 48.0, 36.0, 12.0, 8.0
"""The margins around the plot (room for the axis labels)."""
BINS = 20
"""About how many equal buckets the histogram has."""


@dataclass(frozen=True)
class GridLine:
    """A horizontal grid line with its case count at the left."""

    y: str
    label_x: str
    label_y: str
    label: str


@dataclass(frozen=True)
class Bin:
    """One bar of the histogram; ``title`` is its tooltip (``10 ms–20 ms: 4 cases``)."""

    x: str
    y: str
    width: str
    height: str
    overflow: bool
    title: str


@dataclass(frozen=True)
class AxisLabel:
    """A bucket's lower edge under the plot."""

    x: str
    y: str
    text: str


@dataclass(frozen=True)
class Latency:
    """What the Latency section shows; ``cases == 0`` means there were no timed cases."""

    cases: int
    stats: str = ""
    width: str = f"{WIDTH:.0f}"
    height: str = f"{HEIGHT:.0f}"
    x1: str = f"{LEFT}"
    x2: str = f"{WIDTH - RIGHT}"
    axis_y: str = ""
    grid: tuple[GridLine, ...] = ()
    bins: tuple[Bin, ...] = ()
    labels: tuple[AxisLabel, ...] = ()


def _nice_step(raw: float) -> float:
    """The smallest of 1, 2, 2.5, 5 × 10^k that is at least ``raw``."""
    exponent = math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0):
        step = factor * 10.0**exponent
        if step >= raw * (1 - 1e-12):
            return step
    return 10.0 ** (exponent + 1)  # pragma: no cover - the loop always returns


def tick_format(step: float, top: float) -> Callable[[float], str]:
    """How the axis writes a bucket edge: in ``s`` when a bucket is a second wide or the axis
    reaches ten, else in ``ms``, with as many decimals as the bucket width needs (``0.25 ms``,
    ``12.5 ms``, ``2.5 s``), so no two edges read the same and none is rounded to a
    neighbour's value."""
    scale, unit = (1000.0, "s") if step >= 1000 or top >= 10_000 else (1.0, "ms")
    width = step / scale
    decimals = next(
        (d for d in range(7) if abs(round(width, d) - width) <= 1e-9 * max(1.0, width)), 6
    )

    def text(value: float) -> str:
        return f"{value / scale:.{decimals}f} {unit}"

    return text


def _quantile(values: Sequence[float], q: float) -> float:
    return values[min(len(values) - 1, max(0, math.ceil(q * len(values)) - 1))]


def _histogram(
    durations: Sequence[float], bins: int
) -> tuple[list[tuple[float, float, int]], bool]:
    values = sorted(max(0.0, float(v)) for v in durations if math.isfinite(v))
    if not values:
        return [], False
    top = values[-1]
    if top <= 0:
        return [(0.0, 0.0, len(values))], False
    span = _quantile(values, 0.99) or top
    width = _nice_step(span / bins)
    count = math.floor(span / width) + 1  # the last bucket holds ``span`` itself
    edge = count * width
    counts = [0] * count
    overflow = 0
    for value in values:
        if value >= edge:
            overflow += 1
        else:
            counts[min(count - 1, int(value // width))] += 1
    buckets = [(i * width, (i + 1) * width, n) for i, n in enumerate(counts)]
    if overflow:
        buckets.append((edge, top, overflow))
    return buckets, overflow > 0


def latency_buckets(durations: Sequence[float], bins: int = BINS) -> list[tuple[float, float, int]]:
    """A histogram of ``durations`` as ``(low, high, count)`` buckets.

    Equal buckets of a round width (1, 2, 2.5 or 5 × 10^k; about ``bins`` of them) cover 0 to
    the 99th percentile, ``[low, high)`` each; when slower outliers exist, a last bucket
    ``(edge, max, count)`` gathers them.
    """
    return _histogram(durations, bins)[0]


def latency(results: Sequence[CaseResult]) -> Latency:
    """The percentiles and histogram of the cases that ran (skipped cases are left out)."""
    durations = sorted(
        max(0.0, r.duration_ms)
        for r in results
        if r.outcome != "skipped" and math.isfinite(r.duration_ms)
    )
    buckets, has_overflow = _histogram(durations, BINS)
    if not buckets:
        return Latency(cases=0)
    stats = " · ".join(
        f"{label} {ms(value)}"
        for label, value in (
            ("p50", _quantile(durations, 0.5)),
            ("p90", _quantile(durations, 0.9)),
            ("p99", _quantile(durations, 0.99)),
            ("max", durations[-1]),
            ("mean", sum(durations) / len(durations)),
        )
    )
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - BOTTOM - TOP
    peak = max(n for _, _, n in buckets) or 1
    slot = plot_w / len(buckets)
    grid = []
    for frac in (0.0, 0.5, 1.0):
        y = TOP + plot_h * (1 - frac)
        grid.append(GridLine(f"{y:.1f}", f"{LEFT - 6}", f"{y + 4:.1f}", f"{round(peak * frac)}"))
    label_every = max(1, math.ceil(len(buckets) / 8))
    edge = buckets[-2][1] if has_overflow and len(buckets) > 1 else buckets[-1][1]
    tick = tick_format(buckets[0][1] - buckets[0][0] or 1.0, edge)
    last = len(buckets) - 1
    bins = []
    labels = []
    for i, (low, high, n) in enumerate(buckets):
        bar_h = plot_h * n / peak
        x = LEFT + i * slot
        overflow = has_overflow and i == last
        span = f"≥ {tick(low)}" if overflow else f"{tick(low)}–{tick(high)}"
        bins.append(
            Bin(
                x=f"{x + 1:.1f}",
                y=f"{TOP + plot_h - bar_h:.1f}",
                width=f"{max(1.0, slot - 2):.1f}",
                height=f"{bar_h:.1f}",
                overflow=overflow,
                title=f"{span}: {n} cases",
            )
        )
        if i % label_every == 0 or overflow:
            text = f"≥{tick(low)}" if overflow else tick(low)
            labels.append(AxisLabel(f"{x + 1:.1f}", f"{HEIGHT - BOTTOM + 16:.1f}", text))
    return Latency(
        cases=len(durations),
        stats=stats,
        axis_y=f"{TOP + plot_h:.1f}",
        grid=tuple(grid),
        bins=tuple(bins),
        labels=tuple(labels),
    )
