"""Our BFCL conversation builders against the official client's real requests.

``tests/scoring/bfcl/conversation_vectors.jsonl`` (``make_conversation_vectors.py``) holds
every request ``bfcl-eval==2026.3.23``'s ``OpenAICompletionsHandler`` sent for each vendored
row in FC and prompt mode, and for multi-turn rows under scripted replies. Here the builders
rebuild each request from the item, the replies and the official decoder's decisions (which
reply ran which calls, with which results), and every request must be equal, message by
message and tool by tool.

The prompt texts come from the installed package (``pip install --no-deps
bfcl-eval==2026.3.23``); without it the tests that need them skip.
"""

from __future__ import annotations

import ast
import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.suites import bfcl_conversation as conv
from pytest_llmeval.suites.bfcl_data import BfclItem, package_dir, read_data, select_categories
from pytest_llmeval.suites.bfcl_prompts import PromptTexts, installed_texts

TESTS = Path(__file__).parents[1]
DATA = TESTS / "data" / "bfcl"
VECTORS = [
    json.loads(line)
    for line in (TESTS / "scoring" / "bfcl" / "conversation_vectors.jsonl")
    .read_text(encoding="utf-8")
    .splitlines()
]
CONVERSATIONS = [v for v in VECTORS if v["kind"] == "conversation"]
ITEMS = {item.id: item for item in read_data(DATA, select_categories(DATA, None)).items}
STEP_LIMIT = 20

needs_package = pytest.mark.skipif(
    package_dir() is None, reason="needs `pip install --no-deps bfcl-eval==2026.3.23`"
)


def _texts(vector: dict[str, Any]) -> PromptTexts | None:
    needed = vector["mode"] == "prompt" or ITEMS[vector["id"]].missed_function
    if needed and package_dir() is None:
        pytest.skip("needs `pip install --no-deps bfcl-eval==2026.3.23` (the prompt texts)")
    return installed_texts() if needed else None


def _rebuild(vector: dict[str, Any]) -> list[tuple[list[dict[str, Any]], Any]]:
    """Every request of the conversation, from our builders: (messages, tools)."""
    item: BfclItem = ITEMS[vector["id"]]
    mode = vector["mode"]
    texts = _texts(vector)
    calls_made = vector["calls"] or [None] * len(vector["replies"])  # single-turn: one reply
    replies = iter(zip(vector["replies"], calls_made, strict=True))
    results = iter(vector["results"])
    requests = []
    history = conv.first_messages(item, mode, texts)
    for turn in range(len(item.question)):
        if turn:
            history += conv.turn_messages(item, mode, turn, texts)
        tools = conv.tools_for(item, mode, conv.revealed_turns(item, turn))
        steps = 0
        while True:
            requests.append((copy.deepcopy(history), tools))
            reply, calls = next(replies)
            history.append(conv.assistant_echo(reply))
            if calls is None:  # the official decoder found no calls: the turn ends
                break
            history += conv.tool_result_messages(
                mode,
                next(results),
                tool_call_ids=conv.tool_call_ids(reply),
                call_texts=calls,
            )
            steps += 1
            if steps > STEP_LIMIT:
                break
        if steps > STEP_LIMIT:
            break
    return requests


def _official(vector: dict[str, Any]) -> list[tuple[list[dict[str, Any]], Any]]:
    return [
        (vector["messages"][:length], None if index is None else vector["tools"][index])
        for length, index in zip(vector["request_lengths"], vector["request_tools"], strict=True)
    ]


@pytest.mark.parametrize(
    "vector",
    CONVERSATIONS,
    ids=[f"{v['id']}-{v['mode']}-{v['script']}" for v in CONVERSATIONS],
)
def test_each_request_equals_the_official_clients(vector: dict[str, Any]) -> None:
    ours, official = _rebuild(vector), _official(vector)
    assert len(ours) == len(official)
    for number, ((messages, tools), (want_messages, want_tools)) in enumerate(
        zip(ours, official, strict=True)
    ):
        for k, (got, want) in enumerate(zip(messages, want_messages, strict=True)):
            assert got == want, f"request {number}, message {k}"
        assert len(messages) == len(want_messages), f"request {number}"
        if want_tools is None:
            assert tools is None, f"request {number}: the official request has no tools key"
            continue
        assert tools is not None
        for k, (got_tool, want_tool) in enumerate(zip(tools, want_tools, strict=True)):
            assert got_tool == want_tool, f"request {number}, tool {k}"


def test_the_vectors_cover_every_vendored_category_both_modes_and_the_hard_paths() -> None:
    seen = {(ITEMS[v["id"]].category, v["mode"]) for v in CONVERSATIONS}
    categories = {item.category for item in ITEMS.values()}
    assert seen == {(c, m) for c in categories for m in ("fc", "prompt")}
    assert {v["id"] for v in CONVERSATIONS} == set(ITEMS)
    multi = [v for v in CONVERSATIONS if v["script"] != "single"]
    assert any(len(v["request_lengths"]) == STEP_LIMIT + 1 for v in multi)  # force-terminated
    assert any(len(v["tools"]) > 1 for v in multi if v["mode"] == "fc")  # held-out tools added
    systems = [
        v for v in CONVERSATIONS if any(m["role"] == "system" for m in ITEMS[v["id"]].question[0])
    ]
    assert any(v["mode"] == "prompt" for v in systems)  # a row that brings its own system


@needs_package
def test_the_system_prompt_keeps_the_official_spacing() -> None:
    item = ITEMS["simple_python_1"]
    prompt = conv.first_messages(item, "prompt")[0]["content"]
    assert "composing functions.You are given" in prompt
    assert "...), func_name2(params)].  You SHOULD NOT" in prompt
    assert prompt.endswith("in json format that you can invoke.\n" + _docs_json(item) + "\n")


def _docs_json(item: BfclItem) -> str:
    return json.dumps(conv.language_hint(item.functions, item.category), indent=4)


@needs_package
def test_a_rows_own_system_message_follows_the_system_prompt() -> None:
    item = next(i for i in ITEMS.values() if i.question[0][0]["role"] == "system")
    messages = conv.first_messages(item, "prompt")
    assert [m["role"] for m in messages] == [m["role"] for m in item.question[0]]
    assert messages[0]["content"].endswith("\n\n" + item.question[0][0]["content"])


def test_fc_sends_the_first_turn_unchanged_and_never_mutates_the_item() -> None:
    item = ITEMS["simple_java_1"]
    before = item.model_dump()
    assert conv.first_messages(item, "fc") == item.question[0]
    tools = conv.tools_for(item, "fc")
    assert tools is not None and conv.tools_for(item, "prompt") is None
    assert all(p["type"] == "string" for t in tools for p in _props(t))
    assert item.model_dump() == before


def _props(tool: dict[str, Any]) -> list[dict[str, Any]]:
    return list(tool["function"]["parameters"]["properties"].values())


def test_dotted_names_become_underscored_and_float_gets_a_format() -> None:
    doc = {
        "name": "math.hypot",
        "description": "d",
        "parameters": {
            "type": "dict",
            "properties": {
                "x": {"type": "float", "description": "x"},
                "y": {"type": "tuple", "items": {"type": "integer"}, "description": "y"},
                "z": {"description": "no type"},
            },
            "required": ["x"],
        },
    }
    (tool,) = conv.openai_tools([doc])
    assert tool["function"]["name"] == "math_hypot"
    assert tool["function"]["parameters"]["type"] == "object"
    x, y, z = _props(tool)
    float_x = {"type": "number", "description": "x This is a float type value.", "format": "float"}
    assert x == float_x
    assert y["type"] == "array" and y["items"] == {"type": "integer"}
    assert z["type"] == "string"
    assert doc["name"] == "math.hypot"  # the input is left alone


def test_tool_results_in_prompt_mode_are_one_user_message_holding_a_python_repr() -> None:
    (message,) = conv.tool_result_messages(
        "prompt", ["None", "it's"], call_texts=["ls(a=1)", "cd(folder='x')"]
    )
    assert message["role"] == "user"
    assert ast.literal_eval(message["content"]) == [
        {"role": "tool", "name": "ls(a=1)", "content": "None"},
        {"role": "tool", "name": "cd(folder='x')", "content": "it's"},
    ]
    assert message["content"].startswith("[{'role': 'tool', 'name': 'ls(a=1)'")


def test_result_vectors_hold_the_official_formatting() -> None:
    """The official formatting rules, as recorded (the formatter itself is the executor's)."""
    results = [v for v in VECTORS if v["kind"] == "result"]
    for vector in results:
        if "raises" in vector:
            assert vector["content"].startswith("Error during execution: ")
            continue
        value = _value(vector["returns"])
        if type(value) is str:
            assert vector["content"] == value
        elif type(value) is dict:
            try:
                assert vector["content"] == json.dumps(value)
            except TypeError:
                assert vector["content"] == str(value)
        else:
            assert vector["content"] == str(value)


def _value(source: str) -> Any:
    if source == "{'nan': nan}":
        return {"nan": math.nan}
    return ast.literal_eval(source)
