"""Running one case: its agent, then the similarity to its reference, then its judge.

:class:`CaseRunner` is what the dispatcher hands each case to, on its event loop. A case runs
``repeats`` times (its repeat policy's count), at most ``concurrency`` runs of the process at
once, every step of every repeat within one deadline (``--llmeval-timeout``). A run that fails
is not raised: it becomes a transcript with ``error`` and ``error_kind`` set (and the tokens it
spent kept), which the case's scoring (:mod:`pytest_llmeval.engine.case_score`) turns into a
typed error.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pytest_llmeval.core.aio import within
from pytest_llmeval.core.case_context import case_run, case_scope
from pytest_llmeval.core.errors import RunnerError
from pytest_llmeval.core.models import EvalCase, Judgement, Transcript, Usage
from pytest_llmeval.engine.agent import run_agent
from pytest_llmeval.engine.agent_threads import AgentThreads
from pytest_llmeval.engine.case_services import CaseServices
from pytest_llmeval.tools.broker import ToolBroker

__all__ = ["CaseRunner", "timeout_advice"]


class CaseRunner:
    """Runs cases on the dispatcher's loop, each with its repeats, services and deadline."""

    def __init__(
        self,
        services: CaseServices,
        concurrency: int,
        timeout_s: float,
        workspace_root: Path | None,
        agent_threads: AgentThreads,
    ):
        self.services = services
        """The judge, the embedder and the repeat policy the cases' runs use."""
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.workspace_root = workspace_root
        self.agent_threads = agent_threads
        self._semaphore: asyncio.Semaphore | None = None
        self._running = 0
        """Runs holding a slot now (touched on the loop only): a timed-out run's message
        says how many ran beside it."""

    def open(self) -> None:
        """Called on the loop, before any case runs: the slots of this loop."""
        self._semaphore = asyncio.Semaphore(self.concurrency)

    async def run(self, key: str, case: EvalCase, agent: Any, broker: ToolBroker) -> Transcript:
        """The transcript of case ``key`` (a fault is a transcript with ``error`` set): one
        run, or every repeat with the first run that did not error in front."""
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
