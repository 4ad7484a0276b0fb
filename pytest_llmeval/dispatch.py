"""Run agents ahead of pytest's item loop, with bounded concurrency (DESIGN §7).

pytest runs one item at a time; model calls are I/O. When an item asks for its transcript, the
dispatcher also starts the agents of the next items this process will run, so the next item
usually finds its transcript ready. At most ``concurrency`` agents run at once; up to
``2 * concurrency`` cases are queued ahead, topped up in one batch whenever no more than
``concurrency`` are left. A transcript is handed out once and then dropped, so memory stays
bounded by the look-ahead window.

**Who drives the event loop.** The loop has no thread of its own: pytest's thread runs it
while an item waits for its transcript (``run_until_complete``), and for one turn when the
transcript is already there, so replies that arrived meanwhile are read and the window is
refilled. Between items the loop rests, and replies wait in the socket buffers for the next
turn. An earlier design ran the loop in a background thread; with a fast model the two threads
then fought for the GIL on every reply and every hand-over, which cost more per case than
everything else the plugin does (``benchmarks/RESULTS.md``). Two exceptions:

* while pytest runs a test that is not an eval case, :meth:`Dispatcher.in_background` lends
  the loop to a helper thread, so the cases already in flight go on (a slow unit test between
  two eval files does not stall them into their timeouts);
* if pytest's thread is itself inside a running event loop (an async test framework calling
  in), the loop is run to completion in a helper thread instead, since a thread can run only
  one loop at a time.

Results never depend on concurrency: every case runs in its own task with its own cassette
scope, and nothing a case sees depends on what ran before it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pytest_llmeval.agent import run_agent
from pytest_llmeval.aio import within
from pytest_llmeval.broker import ToolBroker
from pytest_llmeval.context import case_run
from pytest_llmeval.errors import RunnerError
from pytest_llmeval.models import EvalCase, Transcript
from pytest_llmeval.runners.replay import case_scope

T = TypeVar("T")

Job = tuple[EvalCase, Any, ToolBroker]
"""What one case needs to run: the case, its agent, its broker."""

JobLookup = Callable[[int], Job | None]
"""Given a position in the run order, the job there if it can start now (else ``None``)."""


class Dispatcher:
    """An event loop driven from pytest's thread, plus a run-ahead window over the items of
    this process. Use it from one thread (pytest's)."""

    def __init__(self, concurrency: int, timeout_s: float, workspace_root: Path | None = None):
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.workspace_root = workspace_root
        self._loop: asyncio.AbstractEventLoop | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._helper: threading.Thread | None = None
        """The thread the loop is lent to while a non-eval test runs (see in_background)."""
        self._tasks: dict[str, asyncio.Task[Transcript]] = {}
        self._order: list[str] = []
        self._position: dict[str, int] = {}
        self._frontier = 0
        """Positions of the run order below this one have been considered for run-ahead."""

    # -- the loop ------------------------------------------------------------------------------

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        self._take_back()
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._semaphore = asyncio.Semaphore(self.concurrency)
        return self._loop

    def _drive(self, awaitable: Awaitable[T]) -> T:
        """Run the loop in this thread until ``awaitable`` is done (at least one turn)."""
        loop = self._ensure_loop()
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return loop.run_until_complete(awaitable)
        # this thread is inside another loop already: run ours in a helper thread meanwhile
        with concurrent.futures.ThreadPoolExecutor(1, "llmeval-dispatch") as pool:
            return pool.submit(loop.run_until_complete, awaitable).result()

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the dispatcher's loop and wait for its result."""
        return self._drive(coro)

    @contextlib.contextmanager
    def in_background(self) -> Iterator[None]:
        """While the block runs (another test), let a helper thread drive the cases in flight."""
        if self._loop is None or self._helper is not None or not self._tasks:
            yield
            return
        helper = threading.Thread(target=self._loop.run_forever, name="llmeval-dispatch")
        helper.daemon = True
        self._helper = helper
        helper.start()
        try:
            yield
        finally:
            self._take_back()

    def _take_back(self) -> None:
        """Stop the helper thread, if the loop is lent out, and wait until it has let go."""
        helper, self._helper = self._helper, None
        if helper is None:
            return
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._loop.stop)
        helper.join()

    def close(self) -> None:
        """Cancel what is still running and close the loop."""
        self._take_back()
        loop, self._loop = self._loop, None
        tasks, self._tasks = list(self._tasks.values()), {}
        if loop is None:
            return

        async def _cancel_all() -> None:
            pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, *tasks, return_exceptions=True)

        try:
            loop.run_until_complete(_cancel_all())
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()

    # -- run order ---------------------------------------------------------------------------

    def set_order(self, keys: Sequence[str]) -> None:
        """The keys (node ids) of the cases this process will run, in the order it runs them."""
        self._order = list(keys)
        self._position = {key: i for i, key in enumerate(self._order)}
        self._frontier = 0

    # -- transcripts -------------------------------------------------------------------------

    def transcript(self, key: str, job: Job, lookup: JobLookup | None = None) -> Transcript:
        """The transcript of case ``key``; starts the next cases of the run order on the way."""
        loop = self._ensure_loop()
        task = self._tasks.get(key)
        if task is None:
            task = self._start(loop, key, job)
            missed = True  # not started ahead: look ahead from here again
        else:
            missed = False
        position = self._position.get(key)
        if lookup is not None and position is not None:
            left = self._frontier - position - 1
            if missed or left <= self.concurrency:
                end = min(len(self._order), position + 1 + 2 * self.concurrency)
                for ahead in range(position + 1, end):
                    next_key = self._order[ahead]
                    if next_key in self._tasks:
                        continue
                    next_job = lookup(ahead)
                    if next_job is not None:
                        self._start(loop, next_key, next_job)
                self._frontier = max(self._frontier, end)
        try:
            return self._drive(task)
        finally:
            self._tasks.pop(key, None)

    def _start(self, loop: asyncio.AbstractEventLoop, key: str, job: Job) -> asyncio.Task[Any]:
        task = loop.create_task(self._run(key, *job))
        self._tasks[key] = task
        return task

    async def _run(self, key: str, case: EvalCase, agent: Any, broker: ToolBroker) -> Transcript:
        assert self._semaphore is not None
        async with self._semaphore:
            with case_scope(), case_run(key, self.workspace_root) as run:
                try:
                    transcript = await within(run_agent(agent, case, broker), self.timeout_s)
                except asyncio.TimeoutError:
                    transcript = _fault(f"timed out after {self.timeout_s:g}s", "timeout")
                except RunnerError as exc:
                    transcript = _fault(str(exc), exc.kind)
                except Exception as exc:
                    transcript = _fault(f"{type(exc).__name__}: {exc}", "agent")
                if transcript.error is not None:
                    run.emit("error", kind=transcript.error_kind, message=transcript.error)
                return transcript.model_copy(update={"events": transcript.events + run.events})


def _fault(message: str, kind: str) -> Transcript:
    return Transcript(stop_reason="error", error=message, error_kind=kind)
