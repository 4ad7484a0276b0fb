"""Another plugin's or a conftest's own ``--llmeval-*`` options: the help groups' check (every
option of the plugin's table in a group) is about the plugin's own options only, so startup and
``pytest --help`` go on, and theirs are shown where they put them."""

from __future__ import annotations

import pytest

CONFTEST = """
def pytest_addoption(parser):
    parser.getgroup("llmeval").addoption("--llmeval-custom", help="a conftest's own option")
    parser.addoption("--llmeval-mine", action="store_true", help="another of its own")
    parser.addini("llmeval_mine", help="its own ini key")


def pytest_configure(config):
    print("custom:", config.getoption("llmeval_custom"), config.getoption("llmeval_mine"))
"""


def test_a_conftests_llmeval_options_do_not_break_startup_or_help(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_unit="def test_one():\n    assert True\n")
    helped = pytester.runpytest("--help")
    assert helped.ret == 0, helped.stderr.str()
    text = helped.stdout.str()
    assert "--llmeval-custom" in text and "--llmeval-mine" in text
    assert "pytest-llmeval-harness: runner and model" in text
    done = pytester.runpytest_subprocess("--llmeval-custom", "x", "--llmeval-mine", "-s")
    assert done.ret == 0, done.stdout.str() + done.stderr.str()
    done.stdout.fnmatch_lines(["*custom: x True*", "*1 passed*"])
