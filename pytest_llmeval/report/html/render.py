"""Render report.html: the section data into ``templates/report.html.j2``, with
``templates/report.css`` and ``templates/report.js`` inlined.

jinja2 is imported on the first render, not when the plugin loads, so a pytest session that
writes no HTML report does not pay for it. The environment and the assets are read once per
process.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.report.console import interrupted_line
from pytest_llmeval.report.html import data, gate_rows
from pytest_llmeval.report.html.cases import DATA_ELEMENT_ID, MAX_CHARS, cases_json_pieces
from pytest_llmeval.report.html.error_rows import error_rows
from pytest_llmeval.report.html.header import RunFacts, run_facts, suite_headlines, verdict_line
from pytest_llmeval.report.html.latency import latency
from pytest_llmeval.rundir.models import Interrupted
from pytest_llmeval.suites.base import base_totals

if TYPE_CHECKING:
    from jinja2 import Environment

TEMPLATE = "report.html.j2"
"""The page's markup."""
STYLESHEET = "report.css"
"""Inlined into the page's ``<style>``."""
SCRIPT = "report.js"
"""Inlined into the page's last ``<script>``; the CSP allows it by its SHA-256."""

_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Assets:
    """The inlined stylesheet and script, and the Content-Security-Policy that allows them."""

    css: str
    script: str
    csp: str


@functools.cache
def environment() -> Environment:
    """The one jinja2 environment of the package's pages (report.html, compare.html)."""
    from jinja2 import Environment, PackageLoader, StrictUndefined

    return Environment(
        loader=PackageLoader("pytest_llmeval.report.html", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,
    )


def _source(name: str) -> str:
    env = environment()
    assert env.loader is not None
    return env.loader.get_source(env, name)[0]


@functools.cache
def assets() -> Assets:
    """The stylesheet and script as shipped, and a CSP hashing that exact script text.

    Raises ``RuntimeError`` if either could end its element early: they are inlined as they
    are, without escaping.
    """
    css, script = _source(STYLESHEET), _source(SCRIPT)
    if "</style" in css.lower() or "<!--" in css:
        raise RuntimeError(f"templates/{STYLESHEET} must not contain '</style' nor '<!--'")
    if "</script" in script.lower() or "<!--" in script:
        raise RuntimeError(f"templates/{SCRIPT} must not contain '</script' nor '<!--'")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    csp = (
        "default-src 'none'; "
        "style-src 'unsafe-inline'; "
        f"script-src 'sha256-{digest}'; "
        "base-uri 'none'; form-action 'none'"
    )
    return Assets(css, script, csp)


def _nav(sections: dict[str, bool], n_cases: int) -> list[tuple[str, str]]:
    labels = {
        "overview": "overview",
        "errors": "errors",
        "gates": "gates",
        "pass-rates": "pass rates",
        "confusion-matrix": "confusion matrix",
        "levels": "levels",
        "latency": "latency",
        "baseline": "baseline",
        "cases": f"cases ({n_cases})",
    }
    return [(sid, label) for sid, label in labels.items() if sections[sid]]


def render_html(
    report: dict[str, Any],
    results: Sequence[CaseResult],
    *,
    title: str = "pytest-llmeval-harness report",
    max_chars: int = MAX_CHARS,
    facts: RunFacts | None = None,
) -> str:
    """The whole ``report.html`` as one text: :func:`html_pieces` joined."""
    return "".join(html_pieces(report, results, title=title, max_chars=max_chars, facts=facts))


def html_pieces(
    report: dict[str, Any],
    results: Sequence[CaseResult],
    *,
    title: str = "pytest-llmeval-harness report",
    max_chars: int = MAX_CHARS,
    facts: RunFacts | None = None,
) -> Iterator[str]:
    """``report.html`` for a ``report.json`` body and its case results, in pieces to be
    written one after the other: the page up to the cases' data block, each case's row, the
    rest of the page. No piece splits a text of the report (a case's row is whole), so each
    can be redacted on its own.

    Optional report keys add sections: ``gates`` (``report.json``'s ``{passed, results}``, or a
    list of ``{name, metric, op, threshold, value, passed}``; each gate's row shows its numbers
    and status, see :func:`.gate_rows.gates`; "no gates" otherwise),
    ``suites.<name>.confusion_matrix``
    (``{labels, matrix}``, ``matrix[true][predicted]``), ``suites.<name>.levels``
    (``{level1: {accuracy, correct, questions}, ...}``) and ``baseline`` (``{flips: {kind:
    [ids]}, mcnemar: {b, c, p_value}}``). Texts longer than ``max_chars`` are cut with a
    ``… [clipped: N characters in all]`` marker. ``facts`` are what only the session knows
    (start, duration, the runner asked for): the header shows them when given.
    """
    from markupsafe import Markup

    suites = report.get("suites")
    suites = suites if isinstance(suites, dict) else {}
    run = data.totals(report["totals"]) if isinstance(report.get("totals"), dict) else None
    run = run or base_totals(results)
    # the page is rendered around a slot for the cases' data block, which is streamed into it
    slot = f"\x00{secrets.token_hex(16)}\x00"  # no text of the report can hold it
    cases = Markup(slot)
    confusion = data.confusion(suites)
    levels = data.levels(suites)
    baseline = data.baseline(report.get("baseline"))
    errors = error_rows(results)
    present = {
        "overview": True,
        "errors": errors is not None,
        "gates": True,
        "pass-rates": True,
        "confusion-matrix": bool(confusion),
        "levels": bool(levels),
        "latency": True,
        "baseline": baseline is not None,
        "cases": True,
    }
    found = assets()
    page = (
        environment()
        .get_template(TEMPLATE)
        .render(
            title=title,
            csp=Markup(found.csp),  # our own text: no quotes, no markup
            css=Markup(found.css),  # checked by assets()
            script=Markup(found.script),  # checked by assets()
            facts=data.facts(report),
            header=run_facts(report, results, facts),
            verdict=verdict_line(facts),
            headlines=suite_headlines(report),
            nav=_nav(present, len(results)),
            overview=data.overview(suites, run),
            errors=errors,
            gates=gate_rows.gates(report.get("gates")),
            interrupted=_interrupted(report.get("interrupted")),
            pass_rates=data.pass_rates(suites),
            outcomes=data.OUTCOMES,
            confusion=confusion,
            levels=levels,
            latency=latency(results),
            baseline=baseline,
            data_id=DATA_ELEMENT_ID,
            cases=cases,
        )
    )
    head, tail = page.split(slot)
    for piece in (head, *cases_json_pieces(results, max_chars), tail):
        yield _no_surrogates(piece)


def _no_surrogates(text: str) -> str:
    """Lone surrogates (possible in JSON-sourced strings) cannot be written as UTF-8: each
    becomes ``?``; a text without one is returned as it is (no copy). An ASCII text holds none
    (``str.isascii()`` reads a flag of the string: most of a page's pieces skip the scan)."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-8", "replace").decode("utf-8")


def _interrupted(body: Any) -> str | None:
    """The page's line for a run cut short (``report.json`` ``interrupted``), else ``None``."""
    if not isinstance(body, dict) or not {"reason", "cases_run", "cases_total"} <= set(body):
        return None
    return interrupted_line(Interrupted.model_validate(body))
