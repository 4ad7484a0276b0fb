"""Render compare.html: a :class:`~pytest_llmeval.report.run_matrix.Comparison` into
``templates/compare.html.j2``, with ``templates/compare.css`` inlined.

The page is static and self-contained: no script (its Content-Security-Policy allows none),
no fetches, every value escaped by the template. Unlike ``compare.md`` it holds every case
row, however many.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from pytest_llmeval.report.headlines import Headline, format_value
from pytest_llmeval.report.html.render import environment
from pytest_llmeval.report.run_matrix import (
    MARKER,
    CaseCell,
    Comparison,
    cases_line,
    outcome_text,
    p_text,
)

if TYPE_CHECKING:
    pass

__all__ = ["render_compare_html"]

TEMPLATE = "compare.html.j2"
STYLESHEET = "compare.css"
CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
"""No script at all, inline styles only, nothing fetched."""


@functools.cache
def _css() -> str:
    env = environment()
    assert env.loader is not None
    css = env.loader.get_source(env, STYLESHEET)[0]
    if "</style" in css.lower() or "<!--" in css:
        raise RuntimeError(f"templates/{STYLESHEET} must not contain '</style' nor '<!--'")
    return css


def render_compare_html(comparison: Comparison) -> str:
    """The whole ``compare.html``."""
    from markupsafe import Markup

    return (
        environment()
        .get_template(TEMPLATE)
        .render(
            csp=Markup(CSP),  # our own text
            css=Markup(_css()),  # checked by _css()
            marker=MARKER,
            runs=comparison.runs,
            suites=[
                {"suite": row.suite, "label": row.label, "cells": [_headline(h) for h in row.cells]}
                for row in comparison.suites
            ],
            pairs=[{**pair.model_dump(), "p": p_text(pair.mcnemar_p)} for pair in comparison.pairs],
            cases=[
                {
                    "nodeid": row.nodeid,
                    "differs": row.differs,
                    "changed": row.changed,
                    "shared": row.shared,
                    "cells": [_cell(cell, row.differs or row.changed) for cell in row.cells],
                }
                for row in comparison.cases
            ],
            shared=comparison.shared,
            differing=comparison.differing,
            not_shared=comparison.not_shared,
            cases_line=cases_line(comparison),
        )
    )


def _headline(headline: Headline | None) -> dict[str, Any] | None:
    if headline is None:
        return None
    has_range = headline.low is not None and headline.high is not None
    return {
        "text": format_value(headline.value),
        "range": f"[{format_value(headline.low)}, {format_value(headline.high)}]"
        if has_range
        else None,
        "interval": headline.interval,
        "n": headline.n,
    }


def _cell(cell: CaseCell, told: bool) -> dict[str, str]:
    """A matrix cell; ``told``: the row's outcomes differ or its data changed, so the cell
    shows the run's reason for its outcome (every cell keeps it in its tooltip)."""
    title = ", ".join(f"{name} {value:.3g}" for name, value in cell.scores.items())
    if cell.reason:
        title = f"{title}: {cell.reason}" if title else cell.reason
    return {
        "cls": cell.outcome or "missing",
        "text": outcome_text(cell),
        "title": title,
        "reason": cell.reason if told and cell.reason else "",
    }
