"""Schedule agents ahead of pytest's item loop, with bounded concurrency.

pytest runs one item at a time; model calls are I/O. The dispatcher owns an asyncio loop in a
background thread. When an item asks for its transcript, the dispatcher also queues the agents
of the next items this process will run, so the next item usually finds its transcript ready.
At most ``concurrency`` agents run at once; up to ``2 * concurrency`` cases are queued ahead,
topped up in one batch whenever no more than ``concurrency`` are left (one wake-up of the
loop per batch, not per case: each wake-up is a write to the loop's self-pipe, and the GIL
hand-over around it cost the item loop more than anything else per case). A transcript is
handed out once and then dropped, so memory stays bounded by the look-ahead window.

Results never depend on concurrency: every case runs in its own task with its own cassette
scope, and nothing a case sees depends on what ran before it.

An agent that says it runs in this process (``in_process = True``: the echo and replay
runners' loop, a user's agent that does no I/O a background loop could overlap) gains nothing
from that loop and pays for it: every case handed to the other thread and back, the GIL with
it, cost the item loop more than the agent's own work (a fifth of the wall time of a 20,000
case echo run). Its cases run on pytest's thread instead, one at a time, each when its item
asks, on a loop of that thread's own (:meth:`Dispatcher.transcript`); what a case needs of the
background loop (a judge, an embedder) keeps it there, as does a loop already running on
pytest's thread. A case queued ahead on the background loop is taken from there.

The dispatcher only schedules: running one case (agent, similarity, judge, repeats, deadline)
is :class:`~pytest_llmeval.engine.case_run.CaseRunner`'s job. It never calls code it was
handed (a :data:`JobLookup`) while it holds its lock: the jobs ahead are asked for between
two locked steps.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import signal
import threading
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, Protocol, TypeVar

from pytest_llmeval.core.models import EvalCase, Transcript
from pytest_llmeval.engine.agent_threads import AgentThreads
from pytest_llmeval.engine.case_run import CaseRunner
from pytest_llmeval.engine.case_services import CaseServices
from pytest_llmeval.tools.broker import ToolBroker

T = TypeVar("T")

Job = tuple[EvalCase, Any, ToolBroker]
"""What one case needs to run: the case, its agent, its broker."""

JobLookup = Callable[[int], Job | None]
"""Given a position in the run order, the job there if it can start now (else ``None``);
called without the dispatcher's lock held."""


CLOSE_WAIT_S = 10.0
"""How long closing waits for the cases it cancelled: their agents' clean-ups may ignore it."""


class RunningMarks(Protocol):
    """Where the process notes whose agent runs now: read by someone else if it dies."""

    def started(self, key: str) -> None: ...

    def finished(self, key: str) -> None: ...


class Dispatcher:
    """Background event loop plus a run-ahead window over the items of this process."""

    def __init__(
        self,
        concurrency: int,
        timeout_s: float,
        workspace_root: Path | None = None,
        services: CaseServices | None = None,
    ):
        self.services = services if services is not None else CaseServices()
        """The judge, the embedder and the repeat policy the cases' runs use."""
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.workspace_root = workspace_root
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._futures: dict[str, concurrent.futures.Future[Transcript]] = {}
        self._order: list[str] = []
        self._position: dict[str, int] = {}
        self._frontier = 0
        """Positions of the run order below this one have been considered for run-ahead."""
        self._marks: RunningMarks | None = None
        self._lock = threading.Lock()
        self._tasks: set[asyncio.Future[Transcript]] = set()
        """Cases started on the loop and not finished (touched on the loop only)."""
        self.agent_threads = AgentThreads()
        """Where synchronous agents run: daemon threads, so one blocked past its timeout
        never keeps the process alive (:meth:`AgentThreads.running` names them)."""
        self.runner = CaseRunner(
            self.services, concurrency, timeout_s, workspace_root, self.agent_threads
        )
        """What runs each case the dispatcher starts."""
        self._here: tuple[asyncio.AbstractEventLoop, CaseRunner] | None = None
        """The loop on pytest's thread and its runner, for in-process agents' cases."""
        self._stops = _StopSignals()

    # -- lifecycle ---------------------------------------------------------------------------

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def main() -> None:
                asyncio.set_event_loop(loop)
                self.runner.open()
                ready.set()
                while True:  # a SystemExit or KeyboardInterrupt an agent's own task raised
                    try:  # leaves run_forever(): the loop keeps serving, the case errs
                        loop.run_forever()
                        return
                    except (SystemExit, KeyboardInterrupt):
                        continue

            self._thread = threading.Thread(target=main, name="llmeval-dispatch", daemon=True)
            self._thread.start()
            ready.wait()
            self._loop = loop
        return self._loop

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the dispatcher's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self._ensure_loop()).result()

    def call_for(self, owner: Any, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine of ``owner`` (an agent or a runner: its ``aclose()``) on the loop
        its cases ran on: pytest's thread's for one that runs in this process, once cases ran
        there (what it opened there, a connection, belongs to that loop), else the background
        loop (:meth:`call`)."""
        here = self._here
        if here is not None and getattr(owner, "in_process", False) is True and _may_run_here():
            return here[0].run_until_complete(coro)
        return self.call(coro)

    def put_back_signals(self) -> None:
        """Put back the signal handlers wrapped for in-process cases (:class:`_StopSignals`):
        no case runs any more. The plugin calls it as pytest's test loop ends, before the
        session takes the signals over while it writes its reports, so every handler is put
        back in the reverse order it was taken; :meth:`close` calls it too."""
        self._stops.uninstall()

    def close(self) -> None:
        """Cancel what is still running and stop the loops."""
        self.put_back_signals()
        here, self._here = self._here, None
        if here is not None:
            _close_here(here[0])
        loop, self._loop = self._loop, None
        if loop is None:
            return
        for future in self._futures.values():
            future.cancel()
        self._futures.clear()

        cancelled = asyncio.run_coroutine_threadsafe(_cancel_all(), loop)
        with contextlib.suppress(concurrent.futures.TimeoutError):  # an agent blocking the
            cancelled.result(timeout=CLOSE_WAIT_S + 1)  # loop's thread: left to the process
        loop.call_soon_threadsafe(loop.stop)
        thread = self._thread
        if thread is not None:
            thread.join(timeout=CLOSE_WAIT_S)
        if thread is None or not thread.is_alive():  # else an agent blocks it: a daemon thread
            loop.close()

    @property
    def in_flight(self) -> int:
        """Cases whose agents run now: started (ahead) and not finished, at most
        ``concurrency`` (the others wait for a slot)."""
        return min(len(self._tasks), self.concurrency)

    def stop_ahead(self) -> None:
        """Start nothing more ahead and cancel the cases queued or running ahead (a budget
        was reached): no item has asked for them yet."""
        with self._lock:
            futures = list(self._futures.values())
            self._futures.clear()
            self._order, self._position = [], {}
        for future in futures:
            future.cancel()
        loop = self._loop
        if loop is not None:
            loop.call_soon_threadsafe(lambda: [task.cancel() for task in list(self._tasks)])

    # -- run order ---------------------------------------------------------------------------

    def set_order(self, keys: Sequence[str], marks: RunningMarks | None = None) -> None:
        """The keys (node ids) of the cases this process will run, in the order it runs them;
        ``marks`` is told as each case's agent starts and ends (a crash names the right case)."""
        self._marks = marks
        self._order = list(keys)
        self._position = {key: i for i, key in enumerate(self._order)}
        self._frontier = 0

    # -- transcripts -------------------------------------------------------------------------

    def transcript(self, key: str, job: Job, lookup: JobLookup | None = None) -> Transcript:
        """The transcript of case ``key``; queues the next cases of the run order on the way.

        Three steps, so that ``lookup`` (the caller's code: it may build cases) runs without
        the lock: which positions ahead want a job (locked), their jobs (``lookup``, unlocked),
        then this case and those jobs started with one wake-up of the loop (locked; a position
        queued or dropped in between is left alone). A case of an in-process agent not queued
        runs here instead (the module's text), and queues nothing."""
        if _runs_here(job):
            with self._lock:
                queued = key in self._futures
            if not queued:
                return self._run_here(key, job)
        with self._lock:
            future = self._futures.get(key)
            wanted, end = self._wanted_ahead(key, future is None) if lookup else ([], 0)
        ahead: list[tuple[str, Job]] = []
        if lookup is not None:
            for position, next_key in wanted:
                next_job = lookup(position)
                if next_job is not None:
                    ahead.append((next_key, next_job))
        with self._lock:
            future = self._futures.get(key)  # again: stop_ahead() may have dropped it since
            batch = [(key, job)] if future is None else []
            batch += [
                (next_key, next_job)
                for next_key, next_job in ahead
                if next_key not in self._futures and next_key in self._position
            ]
            self._frontier = max(self._frontier, end)
            futures = self._submit(batch)
        future = future or futures[0]
        try:
            return future.result()
        finally:
            with self._lock:
                self._futures.pop(key, None)

    def _run_here(self, key: str, job: Job) -> Transcript:
        """Run ``key``'s case on this (pytest's) thread, on a loop of its own, with a runner
        of its own (the background runner's slots are that loop's)."""
        if self._here is None:
            runner = CaseRunner(
                self.services,
                self.concurrency,
                self.timeout_s,
                self.workspace_root,
                self.agent_threads,
            )
            runner.open()
            self._here = (asyncio.new_event_loop(), runner)
            self._stops.install()
        loop, runner = self._here
        stops = self._stops
        stops.running, stops.raised = True, None
        try:
            transcript = loop.run_until_complete(self._run(key, *job, runner=runner))
        finally:
            stops.running = False
        raised, stops.raised = stops.raised, None
        if raised is not None:  # a signal's, while the agent ran: the case runner made it
            raise raised  # the agent's fault; it stops the session (Ctrl-C, SIGTERM)
        return transcript

    def _wanted_ahead(self, key: str, missed: bool) -> tuple[list[tuple[int, str]], int]:
        """(Locked.) The positions (with their keys) after ``key`` whose jobs to start now,
        and the end of the window they were taken from: none while more than ``concurrency``
        are still queued ahead, unless ``key`` itself was not queued (look ahead from here)."""
        position = self._position.get(key)
        if position is None:
            return [], 0
        left = self._frontier - position - 1
        if not missed and left > self.concurrency:
            return [], 0
        end = min(len(self._order), position + 1 + 2 * self.concurrency)
        order, futures = self._order, self._futures
        wanted = [(i, order[i]) for i in range(position + 1, end) if order[i] not in futures]
        return wanted, end

    def _submit(self, batch: list[tuple[str, Job]]) -> list[concurrent.futures.Future[Transcript]]:
        """Start ``batch`` on the loop with a single wake-up; one future per case, in order."""
        if not batch:
            return []
        futures: list[concurrent.futures.Future[Transcript]] = []
        for key, _job in batch:
            future: concurrent.futures.Future[Transcript] = concurrent.futures.Future()
            self._futures[key] = future
            futures.append(future)
        jobs = [(key, job, f) for (key, job), f in zip(batch, futures, strict=True)]
        self._ensure_loop().call_soon_threadsafe(self._spawn, jobs)
        return futures

    def _spawn(self, jobs: list[tuple[str, Job, concurrent.futures.Future[Transcript]]]) -> None:
        """In the loop: one task per case, its outcome copied to the case's future."""
        for key, job, future in jobs:
            if future.cancelled():
                continue
            task = asyncio.ensure_future(self._run(key, *job))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            task.add_done_callback(functools.partial(_settle, future))

    async def _run(
        self,
        key: str,
        case: EvalCase,
        agent: Any,
        broker: ToolBroker,
        runner: CaseRunner | None = None,
    ) -> Transcript:
        run = (runner or self.runner).run
        marks = self._marks
        if marks is None:
            return await run(key, case, agent, broker)
        marks.started(key)
        try:
            return await run(key, case, agent, broker)
        finally:
            marks.finished(key)

    def close_services(self) -> None:
        """Close the judge's runner and the embedder, on the loop they were used on."""
        if self.services.open:
            self.call(self.services.aclose())


def _runs_here(job: Job) -> bool:
    """Whether ``job``'s case runs on pytest's thread: its agent runs in this process, the
    case needs none of the background loop's services, pytest runs on the main thread, and
    no loop runs there."""
    case, agent, _broker = job
    if getattr(agent, "in_process", False) is not True:
        return False
    if case.judge is not None or case.similarity_reference is not None:
        return False
    return _may_run_here()


def _may_run_here() -> bool:
    """Whether this thread may run a loop of the dispatcher's: it is the main thread (a
    signal is raised there, nowhere else) and runs no loop."""
    if threading.current_thread() is not threading.main_thread():
        return False  # pytest run on another thread: Ctrl-C is not raised there
    return asyncio._get_running_loop() is None


_STOPPING = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
"""The signals that stop a session (Ctrl-C; SIGTERM and SIGHUP, which the plugin's own handler
raises as a ``KeyboardInterrupt``, :mod:`pytest_llmeval.plugin.termination`)."""


class _StopSignals:
    """A stopping signal (:data:`_STOPPING`) that lands while a case runs on pytest's thread:
    its handler raises inside the agent, where the case runner makes a ``KeyboardInterrupt``
    the agent's fault (a case that errs, as the agent's own raise does on the background
    loop). So each signal's Python handler is wrapped: what it raised while a case ran is kept
    (:attr:`raised`) and raised again once the case is done, and the session stops as it
    would wherever the signal landed (a handler that raises nothing stops nothing). Installed
    once, with the first such case; put back by :meth:`Dispatcher.put_back_signals`.

    A wrapper that another handler took over meanwhile is left to it: that one may put the
    wrapper back later (the plugin's own, at the session's end), and the wrapper then only
    hands each signal on to the handler it found, forever."""

    def __init__(self) -> None:
        self.running = False
        self.raised: BaseException | None = None
        self._previous: dict[int, Callable[[int, FrameType | None], Any]] = {}
        """Each signal's handler found when it was wrapped (kept: see the class's text)."""
        self._wrapped: set[int] = set()

    def install(self) -> None:
        for signum in _STOPPING:
            previous = signal.getsignal(signum)
            if signum in self._wrapped or not callable(previous) or previous == self._note:
                continue  # ignored, the default, or C's: left alone
            self._previous[signum] = previous
            self._wrapped.add(signum)
            signal.signal(signum, self._note)

    def _note(self, signum: int, frame: FrameType | None) -> Any:
        try:
            return self._previous[signum](signum, frame)
        except BaseException as exc:
            if self.running and self.raised is None:
                self.raised = exc
            raise

    def uninstall(self) -> None:
        wrapped, self._wrapped = self._wrapped, set()
        for signum in wrapped:
            if signal.getsignal(signum) == self._note:
                signal.signal(signum, self._previous[signum])


def _close_here(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what an interrupted case left on pytest's thread's loop (:func:`_cancel_all`),
    then close it."""
    if not loop.is_running():
        loop.run_until_complete(_cancel_all())
        loop.close()


async def _cancel_all() -> None:
    """On the loop being closed: cancel every other task and wait for them at most
    :data:`CLOSE_WAIT_S` (an agent's clean-up may ignore being cancelled: the process must
    still end), their outcomes retrieved (no "exception was never retrieved" at exit)."""
    tasks = asyncio.all_tasks() - {asyncio.current_task()}
    for task in tasks:
        task.cancel()
    if tasks:
        done, _ = await asyncio.wait(tasks, timeout=CLOSE_WAIT_S)
        for task in done:
            _ = task.cancelled() or task.exception()


def _settle(
    future: concurrent.futures.Future[Transcript], task: asyncio.Future[Transcript]
) -> None:
    """Copy a finished task's outcome to the future the item loop waits on."""
    if task.cancelled():
        future.cancel()
        return
    if not future.set_running_or_notify_cancel():
        return  # cancelled by close() in the meantime
    exc = task.exception()
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(task.result())
