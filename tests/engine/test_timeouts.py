"""A timed-out case names the options that decide it, says when other cases ran beside it
(a server answering one request at a time queues them), and keeps the time it took (issue 32,
item 2). The real server's queue: tests/runners/test_transformers_serve.py."""

from __future__ import annotations

import pytest

from tests.conftest import read_jsonl, write_json

SLOW_CONFTEST = """
import asyncio
from pytest_llmeval.testing.scripted import ScriptedModel

class Slow(ScriptedModel):
    async def generate(self, request):
        if "slow" in request.messages[-1].content:
            await asyncio.sleep(30)
        return await super().generate(request)

def pytest_llmeval_register_runners(registry):
    registry.register("slow", lambda s: Slow())
"""


def _rows(pytester: pytest.Pytester) -> dict[str, dict[str, object]]:
    return {r["case_id"]: r for r in read_jsonl(pytester.path / "run" / "results.jsonl")}


def test_cases_that_time_out_together_say_they_may_have_queued(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(SLOW_CONFTEST)
    rows = [{"id": n, "input": "slow", "expected_output": "slow"} for n in ("a", "b")]
    write_json(pytester, "qa.golden.json", rows)
    result = pytester.runpytest(
        "--llmeval-runner", "slow", "--llmeval-timeout", "0.3", "--llmeval-concurrency", "2",
        "--llmeval-run-dir", "run",
    )  # fmt: skip
    result.assert_outcomes(errors=2)
    for row in _rows(pytester).values():
        assert row["error"] == (
            "timed out after 0.3s: raise --llmeval-timeout, or lower --llmeval-max-tokens so "
            "each answer is shorter; 1 other case ran beside it (--llmeval-concurrency 2): a "
            "server that answers one request at a time (transformers serve, a one-slot "
            "llama.cpp) queues them, so much of this time may have been spent waiting in its "
            "queue; try --llmeval-concurrency 1"
        )
        assert isinstance(row["duration_ms"], float) and row["duration_ms"] >= 290
    page = (pytester.path / "run" / "report.html").read_text(encoding="utf-8")
    assert "p50 0 ms" not in page


def test_a_case_that_times_out_alone_says_so(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(SLOW_CONFTEST)
    write_json(pytester, "qa.golden.json", [{"id": "a", "input": "slow", "expected_output": "x"}])
    result = pytester.runpytest(
        "--llmeval-runner", "slow", "--llmeval-timeout", "0.2", "--llmeval-run-dir", "run"
    )
    result.assert_outcomes(errors=1)
    error = _rows(pytester)["a"]["error"]
    assert error == (
        "timed out after 0.2s: raise --llmeval-timeout, or lower --llmeval-max-tokens so each "
        "answer is shorter (no other case of this process ran beside it, "
        "--llmeval-concurrency 8)"
    )
