"""The dispatcher: a background event loop running cases ahead of the item loop.

The plugin-level behaviour (results independent of concurrency, run-ahead under xdist) is in
plugin/test_determinism.py and plugin/test_fast_paths.py; these tests hold the loop's own rules.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from pytest_llmeval.core.models import EvalCase
from pytest_llmeval.engine.dispatch import Dispatcher, Job
from pytest_llmeval.tools.broker import ToolBroker

pytestmark = pytest.mark.usefixtures("no_thread_leak")

KEYS = [f"case{i}" for i in range(6)]


class SlowAgent:
    """Answers each case after ``delay_s``; remembers which cases finished and on what thread."""

    def __init__(self, delay_s: float, slow: dict[str, float] | None = None):
        self.delay_s = delay_s
        self.slow = slow or {}
        self.finished: list[str] = []
        self.threads: set[str] = set()

    async def run(self, case: EvalCase, broker: ToolBroker) -> str:
        await asyncio.sleep(self.slow.get(case.case_id, self.delay_s))
        self.finished.append(case.case_id)
        self.threads.add(threading.current_thread().name)
        return f"answer {case.case_id}"


def _jobs(agent: SlowAgent, tmp_path: Path) -> dict[str, Job]:
    broker = ToolBroker.from_dir(tmp_path / "no-fixtures")
    return {
        key: (EvalCase(case_id=key, suite="golden", file="x.jsonl", line=i + 1), agent, broker)
        for i, key in enumerate(KEYS)
    }


def _dispatcher(jobs: dict[str, Job], concurrency: int = 2) -> Dispatcher:
    dispatcher = Dispatcher(concurrency=concurrency, timeout_s=10.0)
    dispatcher.set_order(KEYS)
    return dispatcher


def _transcript(dispatcher: Dispatcher, jobs: dict[str, Job], key: str) -> str:
    transcript = dispatcher.transcript(key, jobs[key], lambda position: jobs[KEYS[position]])
    return transcript.response


def test_each_case_runs_once_on_the_dispatch_thread(tmp_path: Path) -> None:
    agent = SlowAgent(0.02)
    jobs = _jobs(agent, tmp_path)
    dispatcher = _dispatcher(jobs)
    try:
        assert [_transcript(dispatcher, jobs, key) for key in KEYS] == [
            f"answer {key}" for key in KEYS
        ]
        assert sorted(agent.finished) == KEYS  # run-ahead never runs a case twice
        assert agent.threads == {"llmeval-dispatch"}
    finally:
        dispatcher.close()


def test_cases_ahead_finish_while_the_caller_does_other_work(tmp_path: Path) -> None:
    """What a slow plain test between two eval items relies on: the loop has its own thread."""
    agent = SlowAgent(0.05)
    jobs = _jobs(agent, tmp_path)
    dispatcher = _dispatcher(jobs)
    try:
        _transcript(dispatcher, jobs, "case0")
        ahead = set(KEYS[1:5])  # the window: 2 * concurrency cases
        deadline = time.monotonic() + 5
        while not ahead <= set(agent.finished) and time.monotonic() < deadline:
            time.sleep(0.01)  # the caller is busy elsewhere; nobody asks for a transcript
        assert ahead <= set(agent.finished)
        assert _transcript(dispatcher, jobs, "case1") == "answer case1"
        assert sorted(agent.finished) == sorted({*agent.finished})  # none ran twice
    finally:
        dispatcher.close()


def test_called_from_inside_a_running_event_loop(tmp_path: Path) -> None:
    """An async test framework calling in: the dispatcher's loop is a different one."""
    agent = SlowAgent(0.01)
    jobs = _jobs(agent, tmp_path)
    dispatcher = _dispatcher(jobs)

    async def inside() -> list[str]:
        return [_transcript(dispatcher, jobs, key) for key in KEYS]

    try:
        assert asyncio.run(inside()) == [f"answer {key}" for key in KEYS]
    finally:
        dispatcher.close()


def test_close_cancels_what_is_still_running(tmp_path: Path) -> None:
    agent = SlowAgent(0.01, slow={key: 30.0 for key in KEYS[1:]})
    jobs = _jobs(agent, tmp_path)
    dispatcher = _dispatcher(jobs)
    _transcript(dispatcher, jobs, "case0")  # the slow ones are in flight behind it
    dispatcher.close()  # cancels them: had it waited for them, they would have finished
    assert agent.finished == ["case0"]


def test_the_jobs_ahead_are_asked_for_without_the_dispatchers_lock(tmp_path: Path) -> None:
    """The lookup is the plugin's code (it builds the next cases): the dispatcher must not
    hold its lock while it runs, or a lookup that reaches the dispatcher (here: a budget
    reached while the next cases are built stops the run-ahead) would wait on itself."""
    agent = SlowAgent(0.01)
    jobs = _jobs(agent, tmp_path)
    dispatcher = _dispatcher(jobs)
    asked: list[int] = []

    def lookup(position: int) -> Job | None:
        asked.append(position)
        if len(asked) == 1:
            dispatcher.stop_ahead()  # takes the dispatcher's lock
        return jobs[KEYS[position]]

    answers: list[str] = []
    caller = threading.Thread(
        target=lambda: answers.append(
            dispatcher.transcript("case0", jobs["case0"], lookup).response
        ),
        daemon=True,
    )
    try:
        caller.start()
        caller.join(timeout=10)
        assert not caller.is_alive(), "the lookup waited on the dispatcher's own lock"
        assert answers == ["answer case0"]
        assert asked == [1, 2, 3, 4]  # the window: 2 * concurrency positions
        assert agent.finished == ["case0"]  # stopped ahead in between: nothing ahead started
    finally:
        if not caller.is_alive():
            dispatcher.close()
