"""The official multi-turn inference loop, over a conversation the caller supplies.

For each turn of the item:

1. the conversation gets the turn's user message(s), or, at a ``miss_func`` held-out turn
   (its dataset turn is empty), the held-out functions and their fixed message;
2. the model is asked; while its reply decodes to a non-empty list of calls, the calls run on
   the item's backends (one fresh set for the whole item), the results go back through the
   conversation, and the model is asked again;
3. a reply that does not decode (text, FC arguments that are not a JSON object) or decodes to
   no calls ends the turn; it stays in the history.

After :data:`~.multi_turn.MAXIMUM_STEP_LIMIT` call steps in one turn, the next call step
(the 21st) still runs, then the whole item is force-terminated: no later turn is asked. (A
force-termination in the *last* turn leaves the turn count whole, so the checker scores the
item normally, as the official checker does.)

What the messages look like is the conversation's business (:class:`BfclConversation`); this
module only decides what runs and when.
"""

from __future__ import annotations

from typing import Any, Protocol

from pytest_llmeval.scoring.bfcl.call_text import decode_execute, is_empty_step
from pytest_llmeval.scoring.bfcl.calls import DecodeError, Mode
from pytest_llmeval.scoring.bfcl.decode_fc import FcOutput
from pytest_llmeval.scoring.bfcl.multi_turn import (
    DEFAULT_MODEL_LABEL,
    MAXIMUM_STEP_LIMIT,
    CallStep,
    MultiTurnItem,
    MultiTurnTranscript,
    TurnTranscript,
    new_session,
)

__all__ = ["BfclConversation", "inference_label", "run_multi_turn", "transcript_from_replies"]


class BfclConversation(Protocol):
    """One item's conversation with the model, as the official client holds it."""

    def begin_turn(self, turn_index: int, messages: list[dict[str, Any]]) -> None:
        """Add the turn's user message(s) from the dataset."""

    def begin_held_out_turn(self, turn_index: int) -> None:
        """``miss_func``: add the functions held out until this turn, and their message."""

    async def ask(self) -> FcOutput:
        """Send the conversation; keep the reply in the history and return it (FC: its tool
        calls as ``(name, arguments text)`` pairs, or its text; prompt: its text)."""

    def add_results(self, calls: list[str], results: list[str]) -> None:
        """Send back the results of the last reply's calls (official result texts, in call
        order; ``calls`` are the executed call texts)."""


def inference_label(model_name: str) -> str:
    """The model name as the official client writes it into the backends' global names."""
    return model_name.replace("/", "_").replace("-", "_").replace(".", "_")


def _step(reply: FcOutput, mode: Mode) -> CallStep:
    """One reply decoded; ``executed`` says whether it has calls to run (nothing is run)."""
    try:
        calls = decode_execute(reply, mode)
    except DecodeError as exc:
        return CallStep(calls=[], executed=False, error=str(exc))
    return CallStep(calls=calls, executed=not is_empty_step(calls))


def transcript_from_replies(turns: list[list[FcOutput]], mode: Mode) -> MultiTurnTranscript:
    """A transcript of recorded replies, per turn, without running them (the checker runs
    them again): how the official checker reads a result file."""
    return MultiTurnTranscript(
        turns=[TurnTranscript(steps=[_step(reply, mode) for reply in steps]) for steps in turns]
    )


async def run_multi_turn(
    item: MultiTurnItem,
    conversation: BfclConversation,
    mode: Mode,
    *,
    label: str = DEFAULT_MODEL_LABEL,
) -> MultiTurnTranscript:
    """Run one item's turns through ``conversation`` (module docstring)."""
    session = new_session(item, label)
    turns: list[TurnTranscript] = []
    for turn_index, messages in enumerate(item.question):
        if str(turn_index) in item.missed_function:
            conversation.begin_held_out_turn(turn_index)
        else:
            conversation.begin_turn(turn_index, messages)
        steps: list[CallStep] = []
        force_terminated = False
        while True:
            step = _step(await conversation.ask(), mode)
            if not step.executed:
                steps.append(step)
                break
            results = [result.text for result in session.execute(step.calls)]
            conversation.add_results(step.calls, results)
            steps.append(step.model_copy(update={"results": results}))
            if sum(step.executed for step in steps) > MAXIMUM_STEP_LIMIT:
                force_terminated = True
                break
        turns.append(TurnTranscript(steps=steps, force_terminated=force_terminated))
        if force_terminated:
            break
    return MultiTurnTranscript(turns=turns)
