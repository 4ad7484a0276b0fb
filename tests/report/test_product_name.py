"""One product name wherever a user reads it: the distribution's, ``pytest-llmeval-harness``,
in ``pytest --help``'s groups, summary.md, report.html, compare.md and compare.html (pytest's own
``plugins:`` line shortens a ``pytest-`` distribution to ``llmeval-harness``)."""

from __future__ import annotations

import re

import pytest

from tests.commands.history import command, echo_run

PRODUCT = "pytest-llmeval-harness"
OTHER_NAME = re.compile(r"pytest-llmeval(?!-harness)")
EXPERIMENT = "Default: pytest-llmeval."
"""The MLflow experiment's default name: an identifier runs are filed under, kept as it was."""


def test_every_page_a_run_writes_names_the_product_once_the_same_way(
    pytester: pytest.Pytester,
) -> None:
    first = echo_run(pytester, {"a": True})
    second = echo_run(pytester, {"a": False})
    done = command(pytester.path, "compare", first.name, second.name, "--out", "out")
    assert done.returncode == 0, done.stderr
    summary = (second / "summary.md").read_text()
    assert summary.startswith(f"# {PRODUCT} summary\n")
    page = (second / "report.html").read_text()
    assert f"<title>{PRODUCT} report</title>" in page
    compare_md = (pytester.path / "out" / "compare.md").read_text()
    assert f"# {PRODUCT} comparison" in compare_md
    compare_html = (pytester.path / "out" / "compare.html").read_text()
    assert f"<title>{PRODUCT} comparison</title>" in compare_html
    helped = " ".join(pytester.runpytest("--help").stdout.str().split()).replace(EXPERIMENT, "")
    assert f"{PRODUCT}: runner and model" in helped
    for text in (summary, page, compare_md, compare_html, helped):
        assert not OTHER_NAME.search(text), OTHER_NAME.search(text)
