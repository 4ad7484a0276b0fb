"""What an eval session keeps to its end is frozen out of the garbage collector's full walks:
the items once collected, what every ``EVERY`` finished tests left, and all of it given back
once pytest's own last collections are done."""

from __future__ import annotations

import gc
import json

import pytest

from pytest_llmeval.plugin import frozen_objects
from tests.conftest import write_jsonl

ROWS = [{"id": f"c{i:02d}", "input": f"m{i}", "expected_output": f"m{i}"} for i in range(9)]

RECORDING = """
import gc, json, pathlib
import pytest

SEEN = {"setup": [], "unconfigure": None}

def pytest_runtest_setup(item):
    SEEN["setup"].append(gc.get_freeze_count())

def pytest_unconfigure(config):
    SEEN["unconfigure"] = gc.get_freeze_count()
    pathlib.Path("frozen.json").write_text(json.dumps(SEEN))
"""


def test_a_session_freezes_as_it_goes_and_gives_everything_back(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(frozen_objects, "EVERY", 3)
    pytester.makeconftest(RECORDING)
    write_jsonl(pytester, "qa.eval.jsonl", ROWS)
    assert gc.get_freeze_count() == 0
    result = pytester.runpytest_inprocess("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    result.assert_outcomes(passed=9)
    seen = json.loads((pytester.path / "frozen.json").read_text())
    counts = seen["setup"]
    assert counts[0] > 0  # the collected items, frozen before the first case
    grew = [i for i in range(1, len(counts)) if counts[i] > counts[i - 1]]
    assert grew == [3, 6]  # after every third finished test, what the tests left
    assert seen["unconfigure"] > 0  # still frozen while pytest collects at the end
    assert gc.get_freeze_count() == 0  # the process goes on: its collector sees it all again


def test_a_session_without_eval_cases_freezes_nothing(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(RECORDING)
    pytester.makepyfile(test_plain="def test_one():\n    pass\n")
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(passed=1)
    seen = json.loads((pytester.path / "frozen.json").read_text())
    assert seen["setup"] == [0] and seen["unconfigure"] == 0


AT_EXIT = """
import atexit, gc, pathlib

def _count():  # registered before the plugin's handler, so it runs after it
    pathlib.Path("at_exit.txt").write_text(str(gc.get_freeze_count()))

atexit.register(_count)
"""


@pytest.mark.parametrize("cases", [True, False], ids=["eval-session", "no-eval-case"])
def test_the_interpreter_exits_with_everything_frozen_after_an_eval_session(
    pytester: pytest.Pytester, cases: bool
) -> None:
    """Its last collections then walk and free nothing the session kept; a process that ran
    no eval case exits as pytest alone would."""
    pytester.makeconftest(AT_EXIT)
    if cases:
        write_jsonl(pytester, "qa.eval.jsonl", ROWS)
    else:
        pytester.makepyfile(test_plain="def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess("--llmeval-runner", "echo", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=9 if cases else 1)
    frozen = int((pytester.path / "at_exit.txt").read_text())
    assert (frozen > 0) is cases
