"""The dispatcher: a background event loop running cases ahead of the item loop.

The plugin-level behaviour (results independent of concurrency, run-ahead under xdist) is in
plugin/test_determinism.py and plugin/test_fast_paths.py; these tests hold the loop's own rules.
"""

from __future__ import annotations

import asyncio
import signal
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


class HereAgent(SlowAgent):
    """A :class:`SlowAgent` that says it answers in this process."""

    in_process = True


def test_an_in_process_agents_cases_run_on_pytests_thread_one_at_a_time(
    tmp_path: Path,
) -> None:
    """No hand-over to the dispatcher's thread and back, and nothing queued ahead."""
    agent = HereAgent(0.0)
    jobs = _jobs(agent, tmp_path)
    dispatcher = _dispatcher(jobs)
    asked: list[int] = []

    def lookup(position: int) -> Job:
        asked.append(position)
        return jobs[KEYS[position]]

    try:
        for key in KEYS:
            assert dispatcher.transcript(key, jobs[key], lookup).response == f"answer {key}"
            assert agent.finished[-1] == key  # ran when asked, not ahead
        assert agent.finished == KEYS and asked == []
        assert agent.threads == {threading.main_thread().name}
        assert dispatcher._loop is None  # the background loop never started
    finally:
        dispatcher.close()


def test_an_in_process_agent_is_timed_out_and_errs_as_on_the_background_loop(
    tmp_path: Path,
) -> None:
    agent = HereAgent(30.0)
    jobs = _jobs(agent, tmp_path)
    dispatcher = Dispatcher(concurrency=2, timeout_s=0.2)
    dispatcher.set_order(KEYS)
    try:
        transcript = dispatcher.transcript("case0", jobs["case0"])
        assert transcript.error_kind == "timeout" and agent.finished == []
        assert transcript.error is not None and "timed out after 0.2s" in transcript.error
    finally:
        dispatcher.close()


@pytest.mark.parametrize("why", ["judge", "similarity", "loop running", "other thread"])
def test_what_keeps_an_in_process_agents_case_on_the_background_loop(
    tmp_path: Path, why: str
) -> None:
    """A judge's or an embedder's case (the services live on that loop), a loop already
    running on the caller's thread, a caller that is not the main thread."""
    agent = HereAgent(0.0)
    jobs = _jobs(agent, tmp_path)
    case, _, broker = jobs["case0"]
    if why == "judge":
        case = case.model_copy(update={"judge": {"rubric": "correct?"}})
    elif why == "similarity":
        case = case.model_copy(update={"similarity_reference": "answer case0"})
    dispatcher = _dispatcher(jobs)
    ran_on: list[str] = []

    def ask() -> None:
        if why == "loop running":

            async def inside() -> None:
                dispatcher.transcript("case0", (case, agent, broker))

            asyncio.run(inside())
        else:
            dispatcher.transcript("case0", (case, agent, broker))
        ran_on.extend(agent.threads)

    try:
        if why == "other thread":
            thread = threading.Thread(target=ask)
            thread.start()
            thread.join(10)
        else:
            ask()
        assert ran_on == ["llmeval-dispatch"]
    finally:
        dispatcher.close()


def test_an_in_process_agents_case_queued_ahead_is_taken_from_the_background_loop(
    tmp_path: Path,
) -> None:
    """A session with two agents: the other one's case queued this one's ahead."""
    background, here = SlowAgent(0.0), HereAgent(0.0)
    jobs = _jobs(background, tmp_path)
    mixed = {key: (case, here, broker) for key, (case, _, broker) in jobs.items()}
    dispatcher = _dispatcher(jobs)
    try:
        _transcript(dispatcher, jobs, "case0")  # queues case1..case4 with their jobs
        assert dispatcher.transcript("case1", mixed["case1"]).response == "answer case1"
        assert "case1" in background.finished and here.finished == []
        assert dispatcher.transcript("case5", mixed["case5"]).response == "answer case5"
        assert here.finished == ["case5"]  # not queued: it ran here
    finally:
        dispatcher.close()


class CtrlCAgent(HereAgent):
    """Presses Ctrl-C while it runs (``signal``), or raises ``KeyboardInterrupt`` itself."""

    def __init__(self, how: str) -> None:
        super().__init__(0.0)
        self.how = how

    async def run(self, case: EvalCase, broker: ToolBroker) -> str:
        if self.how == "own":
            raise KeyboardInterrupt("the agent's own")
        signal.raise_signal(signal.SIGINT)  # the handler runs here, inside the agent
        return "never"


@pytest.mark.parametrize("how", ["signal", "own"])
def test_ctrl_c_during_an_in_process_case_stops_the_session_its_own_raise_errs(
    tmp_path: Path, how: str
) -> None:
    """The case runner makes a ``KeyboardInterrupt`` inside the agent the agent's fault (a
    case that errs); a real Ctrl-C landing there still interrupts, as on any thread."""
    agent = CtrlCAgent(how)
    jobs = _jobs(agent, tmp_path)
    dispatcher = _dispatcher(jobs)
    handler = signal.getsignal(signal.SIGINT)
    try:
        if how == "signal":
            with pytest.raises(KeyboardInterrupt):
                dispatcher.transcript("case0", jobs["case0"])
        else:
            transcript = dispatcher.transcript("case0", jobs["case0"])
            assert transcript.error_kind == "agent"
            assert "KeyboardInterrupt" in (transcript.error or "")
        case, _, broker = jobs["case1"]
        after = dispatcher.transcript("case1", (case, HereAgent(0.0), broker))
        assert after.response == "answer case1"  # the dispatcher goes on
    finally:
        dispatcher.close()
    assert signal.getsignal(signal.SIGINT) == handler  # put back


def test_a_signal_whose_own_handler_raises_nothing_stops_nothing(tmp_path: Path) -> None:
    """A conftest's Ctrl-C handler that only takes note (to stop after this test, say): the
    case ends as its agent answered, as it would on the background loop."""
    seen: list[int] = []

    def note(signum: int, frame: object) -> None:
        seen.append(signum)

    found = signal.signal(signal.SIGINT, note)
    agent = CtrlCAgent("signal")
    jobs = _jobs(agent, tmp_path)
    dispatcher = _dispatcher(jobs)
    try:
        assert dispatcher.transcript("case0", jobs["case0"]).response == "never"
        assert seen == [signal.SIGINT]
    finally:
        dispatcher.close()
        assert signal.getsignal(signal.SIGINT) is note  # put back
        signal.signal(signal.SIGINT, found)


def test_a_wrapper_put_back_after_the_dispatcher_closed_hands_ctrl_c_on(tmp_path: Path) -> None:
    """A handler put on top of the dispatcher's wrapper, which puts the wrapper back only once
    the dispatcher closed (a conftest's, restored at its end): Ctrl-C there is still the
    ``KeyboardInterrupt`` of the handler the wrapper found."""
    found = signal.getsignal(signal.SIGINT)
    jobs = _jobs(HereAgent(0.0), tmp_path)
    dispatcher = _dispatcher(jobs)
    try:
        dispatcher.transcript("case0", jobs["case0"])
        wrapper = signal.signal(signal.SIGINT, signal.SIG_IGN)  # taken over
        dispatcher.close()
        signal.signal(signal.SIGINT, wrapper)  # and put back, late
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, found)
