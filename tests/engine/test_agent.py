"""Agents: a conftest override of llmeval_agent, the loop's turns, faults as errors."""

from __future__ import annotations

import pytest

from tests.conftest import read_jsonl, write_json
from tests.engine.test_timeouts import SLOW_CONFTEST

GOLDEN = [
    {
        "id": "paris",
        "input": "weather in Paris",
        "expected_output": "It is 18C and cloudy in Paris.",
    },
    {"id": "nope", "input": "weather on Mars", "expected_output": "no idea"},
]


def test_conftest_overrides_the_agent(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", GOLDEN)
    pytester.makeconftest(
        """
        import pytest
        from pytest_llmeval.core.models import ToolCallRecord
        from pytest_llmeval.runners.base import AgentResponse

        class MyAgent:
            def run(self, case, broker):          # sync is fine: it runs in a worker thread
                if "Paris" in case.user_message:
                    return AgentResponse(
                        response="It is 18C and cloudy in Paris.",
                        tool_calls=[ToolCallRecord(name="get_weather", params={"city": "Paris"})],
                    )
                return {"response": "sorry", "toolCalls": [], "durationMs": 12.5}

        @pytest.fixture(scope="session")
        def llmeval_agent():
            return MyAgent()
        """
    )
    result = pytester.runpytest("--llmeval-run-dir", "run", "-q")
    result.assert_outcomes(passed=1, failed=1)
    rows = {r["case_id"]: r for r in read_jsonl(pytester.path / "run" / "results.jsonl")}
    assert rows["paris"]["tool_calls"][0]["params"] == {"city": "Paris"}
    assert rows["nope"]["duration_ms"] == 12.5
    assert rows["nope"]["error"] == 'exact_match: 0.00 < 1.00 (expected "no idea", got "sorry")'
    assert rows["paris"]["runner_fingerprint"] == rows["nope"]["runner_fingerprint"] != ""


def test_async_override_wrapping_the_default_agent(scripted: pytest.Pytester) -> None:
    """A conftest can wrap the plugin's agent: the fixture asks for the one it overrides."""
    write_json(scripted, "qa.golden.json", GOLDEN[:1])
    scripted.makeconftest(
        scripted.path.joinpath("conftest.py").read_text()
        + """
import pytest

class Shouting:
    def __init__(self, inner):
        self.inner = inner

    async def run(self, case, broker):
        transcript = await self.inner.run(case, broker)
        return transcript.model_copy(update={"response": transcript.response.upper()})

@pytest.fixture(scope="session")
def llmeval_agent(llmeval_agent):
    return Shouting(llmeval_agent)
"""
    )
    result = scripted.runpytest("--llmeval-runner", "scripted", "-q")
    result.stdout.fnmatch_lines(['*got "IT IS 18C AND CLOUDY IN PARIS."*'])
    result.assert_outcomes(failed=1)


def test_loop_serves_fixtures_and_counts_hits_and_misses(scripted: pytest.Pytester) -> None:
    write_json(scripted, "qa.golden.json", GOLDEN)
    result = scripted.runpytest("--llmeval-runner", "scripted", "--llmeval-run-dir", "run", "-q")
    result.assert_outcomes(passed=1, failed=1)
    rows = {r["case_id"]: r for r in read_jsonl(scripted.path / "run" / "results.jsonl")}
    assert rows["paris"]["fixture_hits"] == 1
    assert rows["paris"]["tool_calls"][0]["source"] == "fixture"
    assert rows["paris"]["response"] == "It is 18C and cloudy in Paris."


def test_fixture_miss_is_a_tool_result_not_a_crash(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
from pytest_llmeval.testing.scripted import Rule, ScriptedModel

def pytest_llmeval_register_runners(registry):
    registry.register("scripted", lambda s: ScriptedModel([
        Rule("weather", tool="get_weather", arguments={"city": "Atlantis"},
             answer="It is {result[temp_c]}C"),
    ]))
"""
    )
    write_json(
        pytester, "qa.golden.json", [{"id": "m", "input": "weather", "expected_output": "?"}]
    )
    pytester.runpytest("--llmeval-runner", "scripted", "--llmeval-run-dir", "run")
    row = read_jsonl(pytester.path / "run" / "results.jsonl")[0]
    assert row["outcome"] == "failed"
    assert row["fixture_misses"] == 1
    call = row["tool_calls"][0]
    assert (call["source"], call["success"]) == ("miss", False)
    assert call["result"]["error"] == "fixture_miss"
    assert row["response"].startswith("The tool failed:")


def test_max_turns_stops_a_model_that_keeps_calling_tools(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
from pytest_llmeval.testing.scripted import Rule, ScriptedModel

class Looping(ScriptedModel):
    def _answer(self, request):
        from pytest_llmeval.core.models import ToolCall
        from pytest_llmeval.runners.base import Completion
        return Completion(tool_calls=[ToolCall(id="c", name="get_weather", arguments={})])

def pytest_llmeval_register_runners(registry):
    registry.register("looping", lambda s: Looping())
"""
    )
    write_json(
        pytester,
        "qa.golden.json",
        [{"id": "loop", "input": "x", "expected_output": "", "max_turns": 3}],
    )
    pytester.runpytest("--llmeval-runner", "looping", "--llmeval-run-dir", "run")
    row = read_jsonl(pytester.path / "run" / "results.jsonl")[0]
    assert len(row["tool_calls"]) == 3
    assert row["outcome"] == "passed"  # the empty final text equals the expected ""


def test_invalid_tool_arguments_are_recorded(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
from pytest_llmeval.testing.scripted import Rule, ScriptedModel

def pytest_llmeval_register_runners(registry):
    registry.register("scripted", lambda s: ScriptedModel([
        Rule("go", tool="get_weather", raw_arguments='{"city": Par', answer="done"),
    ]))
"""
    )
    write_json(pytester, "qa.golden.json", [{"id": "a", "input": "go", "expected_output": "done"}])
    pytester.runpytest("--llmeval-runner", "scripted", "--llmeval-run-dir", "run")
    row = read_jsonl(pytester.path / "run" / "results.jsonl")[0]
    call = row["tool_calls"][0]
    assert call["arguments_error"] == '{"city": Par'
    assert call["success"] is False
    assert row["outcome"] == "passed"


def test_runner_fault_is_an_error_and_the_next_case_runs(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
from pytest_llmeval.testing.scripted import ScriptedModel

def pytest_llmeval_register_runners(registry):
    registry.register("flaky", lambda s: ScriptedModel(fail_with="boom"))
"""
    )
    write_json(
        pytester,
        "qa.golden.json",
        [
            {"id": "a", "input": "boom", "expected_output": "boom"},
            {"id": "b", "input": "fine", "expected_output": "fine"},
        ],
    )
    result = pytester.runpytest("--llmeval-runner", "flaky", "--llmeval-run-dir", "run", "-q")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["qa.golden.json:2: http error: scripted failure for 'boom'"])
    row = read_jsonl(pytester.path / "run" / "errors.jsonl")[0]
    assert (row["case_id"], row["outcome"]) == ("a", "error")


def test_timeout_is_an_error_and_the_next_case_runs(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(SLOW_CONFTEST)
    write_json(
        pytester,
        "qa.golden.json",
        [
            {"id": "a", "input": "slow", "expected_output": "slow"},
            {"id": "b", "input": "fast", "expected_output": "fast"},
        ],
    )
    result = pytester.runpytest(
        "--llmeval-runner", "slow", "--llmeval-timeout", "0.2", "-q", "--llmeval-concurrency", "1"
    )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*timeout error: timed out after 0.2s*"])
