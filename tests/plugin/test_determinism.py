"""Cassette round trips through pytest, and results that do not depend on how the run is split."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_outputs, strip_timings, write_json

CASES = [
    {"id": f"c{i:02d}", "category": cat, "input": text, "expected_output": expected}
    for i, (cat, text, expected) in enumerate(
        [
            ("weather", "weather in Paris", "It is 18C and cloudy in Paris."),
            ("search", "search the web", "Top hit: RoPE precision notes"),
            ("chat", "hello you", "Hello there!"),
            ("chat", "plain echo", "plain echo"),
            ("chat", "another echo", "not the echo"),
        ]
        * 4
    )
]


def test_record_then_replay_offline(scripted: pytest.Pytester) -> None:
    write_json(scripted, "qa.golden.json", CASES[:5])
    recorded = scripted.runpytest(
        "--llmeval-runner", "scripted", "--llmeval-record", "new", "--llmeval-run-dir", "rec"
    )
    recorded.assert_outcomes(passed=4, failed=1)
    cassettes = list((scripted.path / "fixtures" / "cassettes").rglob("*.json"))
    # one runner.json plus one file per distinct model call (weather + search take two calls)
    assert len(cassettes) == 1 + 7
    # replay needs no live runner: the scripted runner is gone from conftest
    scripted.makeconftest("")
    replayed = scripted.runpytest("--llmeval-run-dir", "rep")
    replayed.assert_outcomes(passed=4, failed=1)
    assert run_outputs(scripted.path / "rec") == run_outputs(scripted.path / "rep")


def test_replay_miss_is_an_error_that_says_how_to_record(scripted: pytest.Pytester) -> None:
    write_json(scripted, "qa.golden.json", CASES[:1])
    scripted.runpytest("--llmeval-runner", "scripted", "--llmeval-record", "new")
    write_json(
        scripted, "more.golden.json", [{"id": "new", "input": "hi", "expected_output": "hi"}]
    )
    result = scripted.runpytest("-q")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*cassette error:*--llmeval-record new*"])


def test_replay_without_cassettes_explains_itself(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES[:1])
    result = pytester.runpytest("-q")
    result.stderr.fnmatch_lines(["*fixtures/cassettes*--llmeval-record new*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # at once, not once per case


def test_results_do_not_depend_on_concurrency(scripted: pytest.Pytester) -> None:
    write_json(scripted, "qa.golden.json", CASES)
    for n in ("1", "16"):
        scripted.runpytest(
            "--llmeval-runner", "scripted", "--llmeval-concurrency", n, "--llmeval-run-dir", n
        )
    assert run_outputs(scripted.path / "1") == run_outputs(scripted.path / "16")


def test_run_ahead_keeps_cases_in_flight(pytester: pytest.Pytester) -> None:
    """With a slow model, the dispatcher has several cases in flight at once."""
    pytester.makeconftest(
        """
import json, pathlib
from pytest_llmeval.testing.scripted import ScriptedModel

MODEL = ScriptedModel(delay_s=0.05)

def pytest_llmeval_register_runners(registry):
    registry.register("slow", lambda s: MODEL)

def pytest_sessionfinish(session):
    pathlib.Path("peak.json").write_text(json.dumps([MODEL.calls, MODEL.max_in_flight]))
"""
    )
    write_json(
        pytester,
        "qa.golden.json",
        [{"id": f"c{i}", "input": f"m{i}", "expected_output": f"m{i}"} for i in range(24)],
    )
    result = pytester.runpytest("--llmeval-runner", "slow", "--llmeval-concurrency", "6", "-q")
    result.assert_outcomes(passed=24)
    calls, peak = json.loads((pytester.path / "peak.json").read_text())
    assert calls == 24  # every case ran exactly once: run-ahead never duplicates work
    assert 2 <= peak <= 6


def test_xdist_gives_the_same_results_as_one_process(scripted: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    write_json(scripted, "qa.golden.json", CASES)
    write_json(
        scripted,
        "evals/t.golden.json",
        {
            "metadata": {"toolName": "get_weather"},
            "cases": [
                {
                    "id": "t1",
                    "input": {"message": "weather"},
                    "expect": {"toolsCalled": ["get_weather"]},
                },
                {
                    "id": "t2",
                    "input": {"message": "hello"},
                    "expect": {"toolsCalled": ["get_weather"]},
                },
            ],
        },
    )
    one = scripted.runpytest("--llmeval-runner", "scripted", "--llmeval-run-dir", "n0")
    two = scripted.runpytest("--llmeval-runner", "scripted", "--llmeval-run-dir", "n2", "-n", "2")
    assert one.parseoutcomes() == two.parseoutcomes()
    assert run_outputs(scripted.path / "n0") == run_outputs(scripted.path / "n2")
    tf0 = json.loads((scripted.path / "n0/toolforge/t.golden.json").read_text())
    tf2 = json.loads((scripted.path / "n2/toolforge/t.golden.json").read_text())
    for key in ("cases", "summary"):
        assert strip_timings(_no_durations(tf0[key])) == strip_timings(_no_durations(tf2[key]))


def _no_durations(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _no_durations(v)
            for k, v in value.items()
            if "Duration" not in k and k != "durationMs"
        }
    if isinstance(value, list):
        return [_no_durations(v) for v in value]
    return value


def test_workers_know_the_controllers_run_dir(scripted: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    write_json(scripted, "qa.golden.json", CASES[:4])
    scripted.makeconftest(
        scripted.path.joinpath("conftest.py").read_text()
        + """
import pathlib
from pytest_llmeval.plugin.state import state_key

def pytest_sessionfinish(session):
    worker = getattr(session.config, "workerinput", {}).get("workerid", "controller")
    state = session.config.stash[state_key]
    pathlib.Path(f"seen-{worker}.txt").write_text(f"{state.run_dir}|{state.run_id}")
"""
    )
    scripted.runpytest("--llmeval-runner", "scripted", "-n", "2")
    seen = {p.name: p.read_text() for p in scripted.path.glob("seen-*.txt")}
    assert set(seen) == {"seen-controller.txt", "seen-gw0.txt", "seen-gw1.txt"}
    assert len(set(seen.values())) == 1
    run_dir = Path(seen["seen-controller.txt"].split("|")[0])
    assert run_dir.is_absolute() and (run_dir / "report.json").is_file()


def test_cases_in_flight_go_on_while_a_plain_test_runs(pytester: pytest.Pytester) -> None:
    """Cases started ahead keep going while an ordinary test runs between two eval files:
    the dispatcher's loop has a thread of its own, so they finish during that test rather
    than when the next eval item asks for its transcript."""
    pytester.makeconftest(
        """
import asyncio, json, pathlib, time
from pytest_llmeval.testing.scripted import ScriptedModel

class Clocked(ScriptedModel):
    # answers "a" at once and the "c" cases after 0.5 s; notes when each one finished
    finished = {}
    async def generate(self, request):
        text = request.messages[-1].content
        await asyncio.sleep(0.5 if text.startswith("c") else 0.0)
        Clocked.finished[text] = time.monotonic()
        return await super().generate(request)

def pytest_llmeval_register_runners(registry):
    registry.register("clocked", lambda s: Clocked())

def pytest_sessionfinish(session):
    pathlib.Path("finished.json").write_text(json.dumps(Clocked.finished))
"""
    )
    write_json(pytester, "a.golden.json", [{"id": "a", "input": "a", "expected_output": "a"}])
    pytester.makepyfile(  # b_test.py: collected between a.golden.json and c.golden.json
        b_test="""
import json, pathlib, time
from conftest import Clocked

def test_mid():
    # busy with something else for up to 10 s, or until the cases ahead have finished
    start = time.monotonic()
    while len(Clocked.finished) < 4 and time.monotonic() < start + 10:
        time.sleep(0.01)
    pathlib.Path("mid.json").write_text(json.dumps([start, time.monotonic()]))
"""
    )
    rows = [{"id": f"c{i}", "input": f"c{i}", "expected_output": f"c{i}"} for i in range(3)]
    write_json(pytester, "c.golden.json", rows)
    result = pytester.runpytest("--llmeval-runner", "clocked", "-v")
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(["*a.golden.json::a PASSED*", "*test_mid PASSED*", "*c0 PASSED*"])
    finished = json.loads((pytester.path / "finished.json").read_text())
    start, end = json.loads((pytester.path / "mid.json").read_text())
    for case in ("c0", "c1", "c2"):  # started ahead at a's item, done while test_mid slept
        assert start < finished[case] < end, (case, finished[case] - start)
