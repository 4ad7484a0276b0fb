"""Hostile names in ``summary.md`` and ``compare.md`` cells (backticks, line breaks, pipes,
HTML, lone surrogates, very long values) stay inside their code span and their cell, as a
CommonMark renderer with GFM tables (markdown-it) reads them."""

from __future__ import annotations

import html
import re

import pytest

from pytest_llmeval.core.markdown import md_cell, md_code, md_plain, one_line

HOSTILE = [
    "a`b",
    "``x``",
    "`",
    "ends with `",
    "two\nlines\r\nand | pipes",
    "a|b||c",
    "a\\|b",
    "trailing \\",
    "<script>alert(1)</script>",
    "[link](http://x) ![i](y) # h *e* _u_ ~~s~~ &amp;",
    "lone \udc80 surrogate",
    "x" * 5000 + "|`<b>",
]


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize("shape", [md_code, md_plain])
def test_a_hostile_value_stays_in_its_code_span_and_its_cell(value: str, shape: object) -> None:
    markdown_it = pytest.importorskip("markdown_it")
    cell = md_cell(shape(value))  # type: ignore[operator]
    assert "\n" not in cell and "\r" not in cell
    text = f"| name | verdict |\n| --- | --- |\n| {cell} | ok |\n"
    safe = text.encode("utf-8", "backslashreplace").decode("utf-8")  # as the writer writes it
    page = markdown_it.MarkdownIt("commonmark").enable("table").render(safe)
    cells = re.findall(r"<td>(.*?)</td>", page, re.S)
    assert len(cells) == 2 and cells[1] == "ok", page
    assert "<script" not in page and "<b>" not in page and "<a " not in page
    code = re.fullmatch(r"<code>(.*)</code>", cells[0], re.S)
    assert code is not None, cells[0]
    expected = one_line(value).encode("utf-8", "backslashreplace").decode("utf-8")
    assert html.unescape(code.group(1)) == expected
