"""The multi-turn loop and checker, on verdicts read from the spec (section 5).

The official verdicts on many more replies are in ``test_multi_turn_parity.py``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from typing import Any

import pytest

from pytest_llmeval.scoring.bfcl.decode_fc import FcOutput
from pytest_llmeval.scoring.bfcl.multi_turn import (
    MultiTurnItem,
    MultiTurnTranscript,
    score_multi_turn,
)
from pytest_llmeval.scoring.bfcl.multi_turn_loop import run_multi_turn

if importlib.util.find_spec("bfcl_eval") is None or importlib.util.find_spec("mpmath") is None:
    pytest.skip(
        "needs the BFCL backends: pip install --no-deps bfcl-eval==2026.3.23 mpmath",
        allow_module_level=True,
    )

CONFIG = {"GorillaFileSystem": {"root": {"home": {"type": "directory", "contents": {}}}}}
ITEM = MultiTurnItem(
    id="multi_turn_miss_func_9",
    question=[[{"role": "user", "content": "make a"}], [], [{"role": "user", "content": "b"}]],
    initial_config=CONFIG,
    involved_classes=["GorillaFileSystem"],
    missed_function={"1": ["mkdir"]},
)
TRUTH = [["mkdir(dir_name='a')"], ["mkdir(dir_name='b')"], ["ls()"]]


def _call(text: str) -> FcOutput:
    name, _, rest = text.partition("(")
    arguments = "{}" if rest == ")" else json.dumps({"dir_name": rest.split("'")[1]})
    return [(name, arguments)]


class Script:
    def __init__(self, turns: list[list[FcOutput]]) -> None:
        self.turns = turns
        self.events: list[tuple[str, int]] = []
        self.sent: list[list[str]] = []

    def begin_turn(self, turn_index: int, messages: list[dict[str, Any]]) -> None:
        self.events.append(("turn", turn_index))

    def begin_held_out_turn(self, turn_index: int) -> None:
        self.events.append(("held_out", turn_index))

    async def ask(self) -> FcOutput:
        replies = self.turns[self.events[-1][1]]
        self.events.append(("ask", self.events[-1][1]))
        return replies.pop(0) if replies else "done"

    def add_results(self, calls: list[str], results: list[str]) -> None:
        self.sent.append(results)


def _run(turns: list[list[FcOutput]]) -> tuple[MultiTurnTranscript, Script]:
    script = Script(turns)
    return asyncio.run(run_multi_turn(ITEM, script, "fc")), script


def test_the_ground_truth_passes_and_the_held_out_turn_goes_to_the_builder() -> None:
    transcript, script = _run(
        [[_call("mkdir(dir_name='a')")], [_call("mkdir(dir_name='b')")], [_call("ls()")]]
    )
    assert ("held_out", 1) in script.events
    assert score_multi_turn(ITEM, TRUTH, transcript).valid
    assert score_multi_turn(ITEM, TRUTH, transcript).valid  # scoring twice: fresh instances


def test_the_21st_call_step_force_terminates_the_item() -> None:
    transcript, _ = _run([[_call("ls()")] * 25, [], []])
    assert len(transcript.turns) == 1
    assert transcript.force_terminated
    assert sum(step.executed for step in transcript.turns[0].steps) == 21
    verdict = score_multi_turn(ITEM, TRUTH, transcript)
    assert verdict.error_type == "multi_turn:force_terminated"


def test_arguments_that_are_not_json_end_the_turn() -> None:
    transcript, script = _run([[[("mkdir", "{not json")], _call("mkdir(dir_name='a')")], [], []])
    first = transcript.turns[0].steps
    assert [step.executed for step in first] == [False]
    assert script.sent == []
    verdict = score_multi_turn(ITEM, TRUTH, transcript)
    assert verdict.error_type == "multi_turn:empty_turn_model_response"


def test_a_later_turns_call_made_early_fails_the_state_check() -> None:
    early = [_call("mkdir(dir_name='a')")[0], _call("mkdir(dir_name='b')")[0]]
    transcript, _ = _run([[early], [], [_call("ls()")]])
    verdict = score_multi_turn(ITEM, TRUTH, transcript)
    assert verdict.error_type == "multi_turn:instance_state_mismatch"
