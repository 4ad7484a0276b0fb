"""The agent executor: a private workspace per case, and the event stream in events.jsonl."""

from __future__ import annotations

import pytest

from tests.conftest import read_jsonl, write_json

WORKSPACE_AGENT = """
import pytest
from pytest_llmeval.core import case_context as context

class NoteTaker:
    def run(self, case, broker):
        folder = context.workspace()
        seen = sorted(p.name for p in folder.iterdir())
        (folder / "notes.txt").write_text(case.case_id)
        context.emit("wrote", file="notes.txt", seen=seen)
        return f"{case.case_id} saw {seen} in {folder.name}"

@pytest.fixture(scope="session")
def llmeval_agent():
    return NoteTaker()
"""


def test_cases_do_not_see_each_others_files(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(WORKSPACE_AGENT)
    write_json(
        pytester,
        "qa.golden.json",
        [
            {"id": "a", "input": "x", "expected_output": "?"},
            {"id": "b", "input": "x", "expected_output": "?"},
        ],
    )
    pytester.runpytest("--llmeval-run-dir", "run", "--llmeval-concurrency", "2")
    rows = {r["case_id"]: r for r in read_jsonl(pytester.path / "run/results.jsonl")}
    for case_id in ("a", "b"):
        assert rows[case_id]["response"].startswith(f"{case_id} saw [] in ")
    folders = sorted((pytester.path / "run/workspaces").iterdir())
    assert len(folders) == 2
    assert sorted(f.joinpath("notes.txt").read_text() for f in folders) == ["a", "b"]


def test_events_jsonl_has_sample_id_and_event_index(scripted: pytest.Pytester) -> None:
    write_json(
        scripted,
        "qa.golden.json",
        [
            {"id": "paris", "input": "weather in Paris", "expected_output": "x"},
            {"id": "plain", "input": "hi", "expected_output": "hi"},
        ],
    )
    scripted.runpytest("--llmeval-runner", "scripted", "--llmeval-run-dir", "run")
    events = read_jsonl(scripted.path / "run/events.jsonl")
    paris = [e for e in events if e["sample_id"] == "paris"]
    assert [e["event_index"] for e in paris] == [0, 1, 2]
    assert [e["type"] for e in paris] == ["model_call", "tool_call", "model_call"]
    assert paris[1]["name"] == "get_weather" and paris[1]["source"] == "fixture"
    assert paris[0]["tool_calls"] == ["get_weather"]
    assert [e["type"] for e in events if e["sample_id"] == "plain"] == ["model_call"]
    results = read_jsonl(scripted.path / "run/results.jsonl")
    assert all("events" not in row for row in results)


def test_a_fault_is_an_event_too(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
from pytest_llmeval.testing.scripted import ScriptedModel

def pytest_llmeval_register_runners(registry):
    registry.register("flaky", lambda s: ScriptedModel(fail_with="boom"))
"""
    )
    write_json(pytester, "qa.golden.json", [{"id": "a", "input": "boom", "expected_output": "x"}])
    pytester.runpytest("--llmeval-runner", "flaky", "--llmeval-run-dir", "run")
    (event,) = read_jsonl(pytester.path / "run/events.jsonl")
    assert (event["type"], event["kind"]) == ("error", "http")
    assert event["message"] == "scripted failure for 'boom'"


def test_workspace_outside_a_case_is_an_error() -> None:
    from pytest_llmeval.core import case_context as context
    from pytest_llmeval.core.errors import LLMEvalError

    with pytest.raises(LLMEvalError, match="only available while a case runs"):
        context.workspace()
    context.emit("ignored")  # dropped, not an error
