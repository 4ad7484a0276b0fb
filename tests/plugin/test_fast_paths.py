"""The per-case shortcuts of the speed-and-scale work change no outcome.

* items of a file reuse the session fixture values the first item resolved, but any other
  closure (a function-scoped override, an autouse function fixture) still goes through pytest;
* marks are shared between items, and selection by them works as before;
* the dispatcher queues look-ahead cases in batches, and still runs every case exactly once.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import write_jsonl

ROWS = [{"id": f"c{i:02d}", "input": f"m{i}", "expected_output": f"m{i}"} for i in range(12)]


def _counting_conftest(scope: str, autouse: str = "") -> str:
    return f"""
import json, pathlib
import pytest

CALLS = {{"agent": 0, "auto": 0}}

@pytest.fixture(scope="{scope}")
def llmeval_agent(llmeval_agent):
    CALLS["agent"] += 1
    return llmeval_agent

{autouse}

def pytest_sessionfinish(session):
    pathlib.Path("calls.json").write_text(json.dumps(CALLS))
"""


AUTOUSE = """
@pytest.fixture(autouse=True)
def per_test():
    CALLS["auto"] += 1
    yield
"""


@pytest.mark.parametrize(
    ("scope", "autouse", "agents", "autos"),
    [("session", "", 1, 0), ("function", "", 12, 0), ("session", AUTOUSE, 1, 12)],
)
def test_fixture_values_are_reused_only_when_pytest_would_return_the_same(
    pytester: pytest.Pytester, scope: str, autouse: str, agents: int, autos: int
) -> None:
    pytester.makeconftest(_counting_conftest(scope, autouse))
    write_jsonl(pytester, "qa.eval.jsonl", ROWS)
    result = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    result.assert_outcomes(passed=12)
    calls = json.loads((pytester.path / "calls.json").read_text())
    assert calls == {"agent": agents, "auto": autos}


def test_items_see_the_same_funcargs_as_through_pytest(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
import pytest

SEEN = []

@pytest.hookimpl(trylast=True)
def pytest_runtest_call(item):
    SEEN.append((sorted(item.funcargs), item.funcargs["request"] is item._request,
                 sorted(item._request.fixturenames)))

def pytest_sessionfinish(session):
    assert len(SEEN) == 12 and all(seen == SEEN[0] for seen in SEEN), SEEN
    assert SEEN[0][1] is True
"""
    )
    write_jsonl(pytester, "qa.eval.jsonl", ROWS)
    result = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    result.assert_outcomes(passed=12)


def test_shared_marks_select_as_before(pytester: pytest.Pytester) -> None:
    rows = [{**row, "category": "odd" if i % 2 else "even"} for i, row in enumerate(ROWS)]
    write_jsonl(pytester, "qa.eval.jsonl", rows)
    items, _ = pytester.inline_genitems("--llmeval-runner", "echo")
    assert all(item.get_closest_marker("llmeval") for item in items)
    marks = {(m.name, m.args, tuple(m.kwargs)) for item in items for m in item.own_markers}
    assert marks == {("llmeval", (), ()), ("golden", (), ()), ("odd", (), ()), ("even", (), ())}
    result = pytester.runpytest(
        "-m", "golden and odd", "--llmeval-runner", "echo", "--strict-markers", "-q"
    )
    result.assert_outcomes(passed=6, deselected=6)


def test_batched_run_ahead_runs_each_case_once(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
import json, pathlib
from pytest_llmeval.testing.scripted import ScriptedModel

MODEL = ScriptedModel(delay_s=0.01)

def pytest_llmeval_register_runners(registry):
    registry.register("slow", lambda s: MODEL)

def pytest_sessionfinish(session):
    pathlib.Path("peak.json").write_text(json.dumps([MODEL.calls, MODEL.max_in_flight]))
"""
    )
    rows = [{"id": f"c{i:03d}", "input": f"m{i}", "expected_output": f"m{i}"} for i in range(50)]
    write_jsonl(pytester, "qa.eval.jsonl", rows)
    result = pytester.runpytest("--llmeval-runner", "slow", "--llmeval-concurrency", "4", "-q")
    result.assert_outcomes(passed=50)
    calls, peak = json.loads((pytester.path / "peak.json").read_text())
    assert calls == 50
    assert 2 <= peak <= 4


def test_an_item_holds_its_own_fields_outside_its_dict(pytester: pytest.Pytester) -> None:
    """pytest keeps every item to the end: an eval item's own fields sit in slots, so its
    ``__dict__`` is no larger than a plain test function's, and other plugins still set
    attributes of their own on it."""
    pytester.makeconftest(
        """
import json, pathlib
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item.mine = item.name

def pytest_sessionfinish(session):
    item = session.items[0]
    found = {"keys": sorted(vars(item)), "mine": item.mine, "line": item.line}
    pathlib.Path("item.json").write_text(json.dumps(found))
"""
    )
    write_jsonl(pytester, "qa.eval.jsonl", ROWS)
    result = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    result.assert_outcomes(passed=12)
    found = json.loads((pytester.path / "item.json").read_text())
    own = {"_case", "_pending", "category", "eval_file", "line", "problem", "result", "state"}
    assert not own & set(found["keys"])
    assert found["mine"] == "c00" and found["line"] == 1
