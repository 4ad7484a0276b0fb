"""``report.html``: one self-contained page (inline CSS, inline SVG, vanilla JS, no network).

Its head shows what a reader looks for first (:mod:`.header`): runner and model, date, plugin
version, tokens, cost (with prices), duration and verdict, and each suite's headline numbers as
``runs`` and ``compare`` show them (:mod:`pytest_llmeval.report.headlines`).

:func:`render_html` is pure: the same report and results give the same bytes. The summary
sections (suites, gates, pass rates, confusion matrix, GAIA levels, latency, baseline flips) are
built as plain data (:mod:`.data`, :mod:`.latency`) and laid out by the Jinja template
``templates/report.html.j2``, which escapes every value (autoescaping is on). The cases are
embedded once as JSON in a ``<script type="application/json">`` block (:mod:`.cases`), with
``<``, ``>`` and ``&`` written as ``\\u003c`` escapes so no data can close the block; the page's
script (``templates/report.js``) pages through them (100 rows a page, failures first, an
expected miss shown as such, with each case's file), filters by outcome, suite and search text,
and builds a case's transcript only when its row is opened, always with ``textContent``. A long
text met in several cases (a system prompt, a tool schema) is stored once in the block's
``strings`` and put back when a case is shown, so a page of 20,000 agent cases holds each prompt
once, not 20,000 times. A Content-Security-Policy allows only that one script (by the hash of
the exact text inlined) and inline styles (``templates/report.css``), and no fetches of any
kind.

The page reads and writes its filter state in the URL fragment, so a link can point at a view:
``report.html#q=timeout&outcome=failed&suite=golden&page=2&open=<nodeid>``.
"""

from __future__ import annotations

from pytest_llmeval.report.html.cases import DATA_ELEMENT_ID, MAX_CHARS
from pytest_llmeval.report.html.latency import latency_buckets
from pytest_llmeval.report.html.render import html_pieces, render_html

__all__ = ["DATA_ELEMENT_ID", "MAX_CHARS", "html_pieces", "latency_buckets", "render_html"]
