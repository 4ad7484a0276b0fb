"""A BFCL item through any runner, the way BFCL's own OpenAI-compatible client runs it.

A case with :attr:`~pytest_llmeval.core.models.EvalCase.bfcl` is not run by the agent loop:

* a **single-turn** item is one request (the official first messages and tools) and its
  reply; no tool is run, no second request is made;
* a **multi-turn** item runs the official turn loop
  (:func:`~pytest_llmeval.scoring.bfcl.multi_turn_loop.run_multi_turn`: the step limit, the
  force-termination, the ``miss_func`` held-out turns), its calls executed on one fresh set
  of the official backends for this case (parsed with :mod:`ast`, never ``eval``), each
  step's results sent back as the official client sends them.

Every request asks the runner for the server's reply message verbatim
(:attr:`~pytest_llmeval.runners.base.GenerateRequest.keep_message`): in FC mode it goes back
into the history as it came and its calls' raw argument text is what the checker decodes. A
runner that gives no message (echo, hf, an old cassette) has it rebuilt from its completion.
The transcript keeps every reply per turn (:attr:`~pytest_llmeval.core.models.Transcript.
replies`); the suite scores from them, with fresh backends of its own.
"""

from __future__ import annotations

import time
from typing import Any

from pytest_llmeval.core.case_context import emit
from pytest_llmeval.core.models import EvalCase, Message, ToolSpec, Transcript, Usage
from pytest_llmeval.runners.base import GenerateRequest, Runner
from pytest_llmeval.scoring.bfcl.calls import Mode
from pytest_llmeval.scoring.bfcl.decode_fc import FcOutput
from pytest_llmeval.scoring.bfcl.multi_turn import MultiTurnItem
from pytest_llmeval.scoring.bfcl.multi_turn_loop import run_multi_turn
from pytest_llmeval.suites import bfcl_conversation as conv
from pytest_llmeval.suites.bfcl_replies import echo, rebuilt_reply, reply_output, tool_specs
from pytest_llmeval.suites.bfcl_rows import BfclItem

__all__ = ["RunnerConversation", "run_bfcl"]


class RunnerConversation:
    """One item's conversation with a runner (the official client's history and tools)."""

    def __init__(self, runner: Runner, item: BfclItem, mode: Mode) -> None:
        self.runner = runner
        self.item = item
        self.mode = mode
        self.messages: list[Message] = []
        self.tools: list[ToolSpec] = []
        self.replies: list[list[dict[str, Any]]] = []
        self.usage = Usage()
        self.asked = 0
        self.response = ""

    def begin_turn(self, turn_index: int, messages: list[dict[str, Any]]) -> None:
        if turn_index == 0:
            opening = conv.first_messages(self.item, self.mode)
        else:
            opening = conv.turn_messages(self.item, self.mode, turn_index)
        self._open(turn_index, opening)

    def begin_held_out_turn(self, turn_index: int) -> None:
        self._open(turn_index, conv.turn_messages(self.item, self.mode, turn_index))

    def _open(self, turn_index: int, opening: list[dict[str, Any]]) -> None:
        self.messages += [Message(role=m["role"], content=m["content"]) for m in opening]
        revealed = conv.revealed_turns(self.item, turn_index)
        self.tools = tool_specs(conv.tools_for(self.item, self.mode, revealed))
        self.replies.append([])

    async def ask(self) -> FcOutput:
        request = GenerateRequest(messages=self.messages, tools=self.tools, keep_message=True)
        completion = await self.runner.generate(request)
        self.asked += 1
        self.usage = self.usage + completion.usage
        self.response = completion.text
        emit(
            "model_call",
            turn=self.asked,
            finish_reason=completion.finish_reason,
            tool_calls=[call.name for call in completion.tool_calls],
            usage=completion.usage.model_dump(),
        )
        reply = completion.message
        if reply is None:
            reply = rebuilt_reply(completion.text or None, completion.tool_calls)
        self.replies[-1].append(reply)
        self.messages.append(
            Message(
                role="assistant",
                content=completion.text or None,
                tool_calls=completion.tool_calls,
                raw=echo(reply, self.mode),
            )
        )
        return reply_output(reply, self.mode)

    def add_results(self, calls: list[str], results: list[str]) -> None:
        last = self.replies[-1][-1]
        for message in conv.tool_result_messages(
            self.mode, results, tool_call_ids=conv.tool_call_ids(last), call_texts=calls
        ):
            self.messages.append(Message(**message))


async def run_bfcl(runner: Runner, case: EvalCase) -> Transcript:
    """The case's official conversation (module docstring)."""
    assert case.bfcl is not None
    start = time.perf_counter()
    mode: Mode = case.bfcl.mode
    item = conv.task_item(case.bfcl)
    conversation = RunnerConversation(runner, item, mode)
    if item.multi_turn:
        await run_multi_turn(MultiTurnItem.model_validate(case.bfcl.item), conversation, mode)
    else:  # the case holds the official first request already (built with the case)
        conversation.messages = list(case.messages)
        conversation.tools = list(case.tools)
        conversation.replies.append([])
        await conversation.ask()
    return Transcript(
        messages=conversation.messages,
        response=conversation.response,
        turns=conversation.asked,
        stop_reason="final",
        usage=conversation.usage,
        duration_ms=(time.perf_counter() - start) * 1000,
        replies=conversation.replies,
    )
