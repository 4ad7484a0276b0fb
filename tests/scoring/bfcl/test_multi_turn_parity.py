"""Our multi-turn loop and checker against the official ones, vector by vector.

``multi_turn_vectors.jsonl`` holds scripted replies to real multi-turn rows (the ground truth
and its mutations) with what the official ``bfcl-eval==2026.3.23`` loop and checker made of
them (``make_multi_turn_vectors.py`` regenerates it): the verdict, the error type, the number
of turns asked, the call steps run per turn and a digest of every result text. The rows are
the sample in ``tests/data/bfcl/multi_turn/``. The backends come from the installed package
(``pip install --no-deps bfcl-eval==2026.3.23``); without it these tests skip.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.scoring.bfcl.decode_fc import FcOutput
from pytest_llmeval.scoring.bfcl.multi_turn import MultiTurnItem, score_multi_turn
from pytest_llmeval.scoring.bfcl.multi_turn_loop import (
    inference_label,
    run_multi_turn,
    transcript_from_replies,
)

if importlib.util.find_spec("bfcl_eval") is None or importlib.util.find_spec("mpmath") is None:
    pytest.skip(
        "needs the BFCL backends: pip install --no-deps bfcl-eval==2026.3.23 mpmath",
        allow_module_level=True,
    )

HERE = Path(__file__).parent
DATA = HERE.parents[1] / "data" / "bfcl" / "multi_turn"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _rows() -> dict[str, tuple[MultiTurnItem, list[list[str]]]]:
    rows = {}
    for path in sorted(DATA.glob("BFCL_v4_*.json")):
        truths = {t["id"]: t["ground_truth"] for t in _jsonl(DATA / "possible_answer" / path.name)}
        for row in _jsonl(path):
            rows[row["id"]] = (MultiTurnItem.model_validate(row), truths[row["id"]])
    return rows


ROWS = _rows()
VECTORS = _jsonl(HERE / "multi_turn_vectors.jsonl")


def _reply(reply: dict[str, Any]) -> FcOutput:
    if "tool_calls" in reply:
        return [(name, arguments) for name, arguments in reply["tool_calls"]]
    text: str = reply["text"]
    return text


class Scripted:
    """A conversation that answers from a script of replies per turn (then a text reply)."""

    def __init__(self, script: list[list[dict[str, Any]]]) -> None:
        self.script = script
        self.turn = -1
        self.position = 0
        self.executed: list[list[list[str]]] = []

    def begin_turn(self, turn_index: int, messages: list[dict[str, Any]]) -> None:
        self.turn, self.position = turn_index, 0
        self.executed.append([])

    def begin_held_out_turn(self, turn_index: int) -> None:
        self.begin_turn(turn_index, [])

    async def ask(self) -> FcOutput:
        replies = self.script[self.turn] if self.turn < len(self.script) else []
        self.position += 1
        if self.position > len(replies):
            return "I have completed the request."
        return _reply(replies[self.position - 1])

    def add_results(self, calls: list[str], results: list[str]) -> None:
        self.executed[-1].append(list(results))


def _digest(executed: list[list[list[str]]]) -> str:
    text = json.dumps(executed, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _ours(vector: dict[str, Any]) -> dict[str, Any]:
    item, truth = ROWS[vector["id"]]
    mode = vector["mode"]
    name = vector["model_name"]
    if "result" in vector:
        replies = [[_reply(reply) for reply in steps] for steps in vector["result"]]
        transcript = transcript_from_replies(replies, mode)
        executed = None
    else:
        conversation = Scripted(vector["script"])
        transcript = asyncio.run(
            run_multi_turn(item, conversation, mode, label=inference_label(name))
        )
        executed = conversation.executed
    verdict = score_multi_turn(item, truth, transcript, model_name=name)
    return {
        "valid": verdict.valid,
        "error_type": verdict.error_type,
        "turns": len(transcript.turns),
        "executed_steps": None if executed is None else [len(turn) for turn in executed],
        "executed_digest": None if executed is None else _digest(executed),
    }


def test_the_vectors_cover_every_category_mode_and_outcome() -> None:
    assert {v["category"] for v in VECTORS} == {
        "multi_turn_base",
        "multi_turn_miss_func",
        "multi_turn_miss_param",
        "multi_turn_long_context",
    }
    assert {v["mode"] for v in VECTORS} == {"fc", "prompt"}
    outcomes = Counter(v["error_type"] for v in VECTORS)
    assert set(outcomes) == {
        None,
        "multi_turn:force_terminated",
        "multi_turn:empty_turn_model_response",
        "multi_turn:instance_state_mismatch",
        "multi_turn:execution_response_mismatch",
    }


@pytest.mark.parametrize(
    "vector",
    VECTORS,
    ids=[f"{v['id']}-{v['mode']}-{v['mutation']}" for v in VECTORS],
)
def test_official_parity(vector: dict[str, Any]) -> None:
    expected = {key: vector[key] for key in ("valid", "error_type", "turns")}
    expected["executed_steps"] = vector["executed_steps"]
    expected["executed_digest"] = vector["executed_digest"]
    assert _ours(vector) == expected
