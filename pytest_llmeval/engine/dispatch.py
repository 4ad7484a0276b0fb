"""Run agents ahead of pytest's item loop, with bounded concurrency.

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
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pytest_llmeval.core.aio import within
from pytest_llmeval.core.case_context import case_run, case_scope
from pytest_llmeval.core.errors import RunnerError
from pytest_llmeval.core.models import EvalCase, Judgement, Transcript, Usage
from pytest_llmeval.engine.agent import run_agent
from pytest_llmeval.engine.agent_threads import AgentThreads
from pytest_llmeval.engine.case_services import CaseServices
from pytest_llmeval.tools.broker import ToolBroker

T = TypeVar("T")

Job = tuple[EvalCase, Any, ToolBroker]
"""What one case needs to run: the case, its agent, its broker."""

JobLookup = Callable[[int], Job | None]
"""Given a position in the run order, the job there if it can start now (else ``None``)."""


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
        self._semaphore: asyncio.Semaphore | None = None
        self._futures: dict[str, concurrent.futures.Future[Transcript]] = {}
        self._order: list[str] = []
        self._position: dict[str, int] = {}
        self._frontier = 0
        """Positions of the run order below this one have been considered for run-ahead."""
        self._marks: RunningMarks | None = None
        self._lock = threading.Lock()
        self._tasks: set[asyncio.Future[Transcript]] = set()
        """Cases started on the loop and not finished (touched on the loop only)."""
        self._running = 0
        """Runs holding a slot now (touched on the loop only): a timed-out run's message
        says how many ran beside it."""
        self.agent_threads = AgentThreads()
        """Where synchronous agents run: daemon threads, so one blocked past its timeout
        never keeps the process alive (:meth:`AgentThreads.running` names them)."""

    # -- lifecycle ---------------------------------------------------------------------------

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def main() -> None:
                asyncio.set_event_loop(loop)
                self._semaphore = asyncio.Semaphore(self.concurrency)
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

    def close(self) -> None:
        """Cancel what is still running and stop the loop."""
        loop, self._loop = self._loop, None
        if loop is None:
            return
        for future in self._futures.values():
            future.cancel()
        self._futures.clear()

        async def _cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(_cancel_all(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=10)
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
        """The transcript of case ``key``; queues the next cases of the run order on the way."""
        batch: list[tuple[str, Job]] = []
        with self._lock:
            future = self._futures.get(key)
            missed = future is None  # not queued ahead: look ahead from here again
            if future is None:
                batch.append((key, job))
            position = self._position.get(key)
            if lookup is not None and position is not None:
                left = self._frontier - position - 1
                if missed or left <= self.concurrency:
                    end = min(len(self._order), position + 1 + 2 * self.concurrency)
                    for ahead in range(position + 1, end):
                        next_key = self._order[ahead]
                        if next_key in self._futures:
                            continue
                        next_job = lookup(ahead)
                        if next_job is not None:
                            batch.append((next_key, next_job))
                    self._frontier = max(self._frontier, end)
            futures = self._submit(batch)
        future = future or futures[0]
        try:
            return future.result()
        finally:
            with self._lock:
                self._futures.pop(key, None)

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

    async def _run(self, key: str, case: EvalCase, agent: Any, broker: ToolBroker) -> Transcript:
        marks = self._marks
        if marks is None:
            return await self._runs(key, case, agent, broker)
        marks.started(key)
        try:
            return await self._runs(key, case, agent, broker)
        finally:
            marks.finished(key)

    async def _runs(self, key: str, case: EvalCase, agent: Any, broker: ToolBroker) -> Transcript:
        runs = self.services.repeats_for(case)
        clock = _CaseClock(self.timeout_s, runs)
        if runs == 1:
            return await self._once(key, case, agent, broker, 0, clock)
        done = await self._repeated(key, case, agent, broker, clock)
        first = next((t for t in done if t.error is None), done[0])
        events = [{**e, "repeat": r} for r, t in enumerate(done) for e in t.events]
        return first.model_copy(update={"repeats": list(done), "events": events})

    async def _repeated(
        self, key: str, case: EvalCase, agent: Any, broker: ToolBroker, clock: _CaseClock
    ) -> list[Transcript]:
        """The case's runs in repeat order, at most ``concurrency`` of them started at once:
        a case with many repeats holds a few tasks, not one per repeat."""
        left = iter(range(clock.runs))
        by_repeat: dict[int, Transcript] = {}

        async def next_runs() -> None:
            for repeat in left:
                by_repeat[repeat] = await self._once(key, case, agent, broker, repeat, clock)

        await asyncio.gather(*(next_runs() for _ in range(min(clock.runs, self.concurrency))))
        return [by_repeat[r] for r in range(clock.runs)]

    async def _once(
        self,
        key: str,
        case: EvalCase,
        agent: Any,
        broker: ToolBroker,
        repeat: int,
        clock: _CaseClock,
    ) -> Transcript:
        """One run of one case, in its own task, slot, cassette scope and event stream; every
        step ends by the case's deadline (``clock``), shared by all of its repeats."""
        assert self._semaphore is not None
        async with self._semaphore:
            loop = asyncio.get_running_loop()
            started, beside = loop.time(), self._running
            self._running += 1
            with case_scope(), case_run(key, self.workspace_root, repeat) as run:
                # what ran before a fault still cost its tokens (nothing ran yet: None)
                transcript: Transcript | None = None
                try:
                    left = clock.left()
                    ran = run_agent(agent, case, broker, self.agent_threads, key)
                    transcript = await within(ran, left)
                    if case.similarity_reference is not None and transcript.error is None:
                        left = clock.left()
                        transcript = await within(self._measured(case, transcript), left)
                    if case.judge is not None and transcript.error is None:
                        left = clock.left()
                        transcript = await self._judged_within(case, transcript, left)
                except asyncio.TimeoutError:
                    beside = max(beside, self._running - 1)
                    message = clock.message + timeout_advice(beside, self.concurrency)
                    transcript = _fault(message, "timeout", transcript)
                except RunnerError as exc:
                    transcript = _fault(str(exc), exc.kind, transcript, getattr(exc, "usage", None))
                except Exception as exc:
                    transcript = _fault(f"{type(exc).__name__}: {exc}", "agent", transcript)
                except (SystemExit, KeyboardInterrupt) as exc:  # would stop the loop: a hang
                    message = f"the agent raised {type(exc).__name__}({_args(exc)})"
                    transcript = _fault(message, "agent", transcript)
                finally:
                    self._running -= 1
                if transcript.error is not None:
                    run.emit("error", kind=transcript.error_kind, message=transcript.error)
                    if not transcript.duration_ms:  # the time it really took, not 0
                        took = (loop.time() - started) * 1000.0
                        transcript = transcript.model_copy(update={"duration_ms": took})
                return transcript.model_copy(update={"events": transcript.events + run.events})

    async def _measured(self, case: EvalCase, transcript: Transcript) -> Transcript:
        """``transcript`` with the answer's semantic similarity to the case's reference."""
        assert case.similarity_reference is not None
        embedder = await self.services.embedder()
        value, usage = await embedder.similarity_counted(
            transcript.response, case.similarity_reference
        )
        measures = {**transcript.measures, "semantic_similarity": value}
        return transcript.model_copy(
            update={"measures": measures, "embedding_usage": transcript.embedding_usage + usage}
        )

    def close_services(self) -> None:
        """Close the judge's runner and the embedder, on the loop they were used on."""
        if self.services.open:
            self.call(self.services.aclose())

    async def _judged_within(
        self, case: EvalCase, transcript: Transcript, left: float
    ) -> Transcript:
        """:meth:`_judged` within what is ``left`` of the case timeout; a judge that runs out
        of it is audited."""
        try:
            return await within(self._judged(case, transcript), left)
        except asyncio.TimeoutError:
            from pytest_llmeval.engine.judge_model import audit

            problem = (
                f"the judge timed out after {self.timeout_s:g}s (--llmeval-timeout covers the "
                "model's answer and its judge: raise it, or lower --llmeval-judge-max-tokens)"
            )
            audit("judge_error", [], problem)
            raise RunnerError(f"judge: {problem}", kind="timeout") from None

    async def _judged(self, case: EvalCase, transcript: Transcript) -> Transcript:
        """``transcript`` with the judge's verdict on it (a judge error is raised)."""
        assert case.judge is not None
        from pytest_llmeval.engine.judge_model import JudgeError, audit

        judge = self.services.judge
        if judge is None:
            problem = (
                "this case is scored by a judge (its rubric): give --llmeval-judge-runner NAME"
            )
            audit("judge_error", [], problem)
            raise RunnerError(problem, kind="judge")

        try:
            judgement = await judge.judge(case.judge, transcript)
            repeats = self.services.judge_repeats
            if repeats > 1:  # the same answer again: the judge's own variance
                more = [await judge.judge(case.judge, transcript) for _ in range(repeats - 1)]
                usage = sum((j.usage for j in more), judgement.usage)
                samples = [j.verdict or {} for j in (judgement, *more)]
                judgement = judgement.model_copy(update={"samples": samples, "usage": usage})
        except JudgeError:
            raise
        except RunnerError as exc:  # the judge's backend failed: an error, never a verdict
            raise RunnerError(f"judge: {exc}", kind=exc.kind) from exc
        return transcript.model_copy(update={"judgement": judgement})


class _CaseClock:
    """The deadline of one case: ``--llmeval-timeout`` from the moment its first run got a
    slot, for every step of every repeat (the agent, the similarity, the judge). A case's
    repeats and services together never take longer than the timeout; a repeat that gets its
    slot after the deadline times out at once, without running."""

    def __init__(self, timeout_s: float, runs: int) -> None:
        self.timeout_s = timeout_s
        self.runs = runs
        self._end: float | None = None

    def left(self) -> float:
        """Seconds left (the clock starts at the first call); ``TimeoutError`` when none."""
        now = asyncio.get_running_loop().time()
        if self._end is None:
            self._end = now + self.timeout_s
        left = self._end - now
        if left <= 0:
            raise asyncio.TimeoutError
        return left

    @property
    def message(self) -> str:
        text = f"timed out after {self.timeout_s:g}s"
        return text if self.runs == 1 else f"{text} (the timeout covers all {self.runs} repeats)"


def timeout_advice(beside: int, concurrency: int) -> str:
    """What a timed-out case's message adds: the options that decide it, and, when other cases
    held a slot while it ran (``beside``), that a server answering one request at a time
    queues them, so the time may have gone to waiting rather than to this answer."""
    text = ": raise --llmeval-timeout, or lower --llmeval-max-tokens so each answer is shorter"
    if beside < 1:
        return text + (
            f" (no other case of this process ran beside it, --llmeval-concurrency {concurrency})"
        )
    return text + (
        f"; {beside} other case{'s' if beside > 1 else ''} ran beside it "
        f"(--llmeval-concurrency {concurrency}): a server that answers one request at a time "
        "(transformers serve, a one-slot llama.cpp) queues them, so much of this time may have "
        "been spent waiting in its queue; try --llmeval-concurrency 1"
    )


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


def _args(exc: BaseException) -> str:
    return ", ".join(repr(arg) for arg in exc.args)


def _fault(
    message: str, kind: str, before: Transcript | None = None, judge_usage: Usage | None = None
) -> Transcript:
    """A run that ended in a fault; it keeps the tokens spent ``before`` it (the agent's, the
    embeddings') and those of a judge that gave no verdict, so budgets still count them."""
    fault = Transcript(stop_reason="error", error=message, error_kind=kind)
    if before is None:
        return fault
    judgement = before.judgement
    if judge_usage is not None and judge_usage.counted:
        judgement = Judgement(stage="error", error=message, usage=judge_usage)
    return fault.model_copy(
        update={
            "usage": before.usage,
            "embedding_usage": before.embedding_usage,
            "judgement": judgement,
        }
    )
