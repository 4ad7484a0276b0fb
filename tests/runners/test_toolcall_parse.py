"""Tool calls parsed from generated text: tagged, bare JSON, pythonic, and unreadable ones."""

from __future__ import annotations

import pytest

from pytest_llmeval.core.models import ToolCall
from pytest_llmeval.runners.toolcall_parse import parse_tool_calls


def call(name: str, **arguments: object) -> ToolCall:
    return ToolCall(name=name, arguments=dict(arguments))


# -- tagged -----------------------------------------------------------------------------------


def test_tagged_single_call() -> None:
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    assert parse_tool_calls(text) == ("", [call("get_weather", city="Paris")])


def test_tagged_several_calls_with_text_around() -> None:
    text = (
        "Let me check.\n"
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>\n'
        '<tool_call>{"name": "web.search", "arguments": {"q": "rope", "top_k": 3}}</tool_call>'
    )
    assert parse_tool_calls(text) == (
        "Let me check.",
        [call("get_weather", city="Paris"), call("web.search", q="rope", top_k=3)],
    )


def test_tagged_arguments_as_json_string_and_openai_shape() -> None:
    text = (
        '<tool_call>{"name": "a", "arguments": "{\\"x\\": 1}"}</tool_call>'
        '<tool_call>{"id": "c1", "type": "function", "function": {"name": "b", '
        '"arguments": {}}}</tool_call>'
    )
    _, calls = parse_tool_calls(text)
    assert calls == [call("a", x=1), ToolCall(id="c1", name="b")]


def test_tagged_block_cut_off_by_the_token_limit() -> None:
    text = 'Sure <tool_call>{"name": "get_weather", "arguments": {"city": "Par'
    answer, calls = parse_tool_calls(text)
    assert answer == "Sure"
    assert calls == [
        ToolCall(
            name="get_weather",
            arguments_error='{"name": "get_weather", "arguments": {"city": "Par',
        )
    ]


@pytest.mark.parametrize(
    ("body", "name"),
    [
        ("not json at all", ""),
        ('{"arguments": {"x": 1}}', ""),
        ('["get_weather"]', ""),
        ("", ""),
        ('{"name": "f", "arguments": "x=1"}', "f"),
        ('{"name": "f", "arguments": [1, 2]}', "f"),
    ],
)
def test_unreadable_tagged_calls_keep_the_raw_text(body: str, name: str) -> None:
    _, calls = parse_tool_calls(f"<tool_call>{body}</tool_call>")
    assert len(calls) == 1
    assert calls[0].name == name
    assert calls[0].arguments == {}
    assert calls[0].arguments_error is not None
    assert calls[0].arguments_error in body


# -- bare JSON ----------------------------------------------------------------------------------


def test_bare_json_object() -> None:
    text = ' {"name": "get_weather", "arguments": {"city": "Paris"}}\n'
    assert parse_tool_calls(text) == ("", [call("get_weather", city="Paris")])


def test_bare_json_llama_parameters_list_and_fence() -> None:
    text = '```json\n[{"name": "a", "parameters": {"x": 1}}, {"name": "b", "parameters": {}}]\n```'
    assert parse_tool_calls(text) == ("", [call("a", x=1), call("b")])


def test_json_that_is_an_answer_is_not_a_call() -> None:
    for text in ('{"name": "Bob", "age": 3}', '{"result": 391}', '[{"name": "x"}]', "[]"):
        assert parse_tool_calls(text) == (text, [])


def test_bare_json_cut_off() -> None:
    text = '{"name": "get_weather", "arguments": {"city": "Pa'
    assert parse_tool_calls(text) == ("", [ToolCall(name="get_weather", arguments_error=text)])


# -- pythonic -----------------------------------------------------------------------------------


def test_pythonic_calls_with_literal_values() -> None:
    text = '[get_weather(city="Paris", days=3), web.search(q="rope", strict=true, tags=[1, null])]'
    assert parse_tool_calls(text) == (
        "",
        [
            call("get_weather", city="Paris", days=3),
            call("web.search", q="rope", strict=True, tags=[1, None]),
        ],
    )


@pytest.mark.parametrize(
    ("text", "name", "raw"),
    [
        ("[get_weather(city=paris)]", "get_weather", "get_weather(city=paris)"),
        ("[f(1, 2)]", "f", "f(1, 2)"),
        ("[f(**kw)]", "f", "f(**kw)"),
        ("[f(a=1 + 2)]", "f", "f(a=1 + 2)"),
        ('[__import__("os").system(cmd="ls")]', "", '__import__("os").system(cmd="ls")'),
        ('[f(a=open("x").read())]', "f", 'f(a=open("x").read())'),
    ],
)
def test_pythonic_non_literals_are_never_evaluated(text: str, name: str, raw: str) -> None:
    assert parse_tool_calls(text) == ("", [ToolCall(name=name, arguments_error=raw)])


def test_pythonic_syntax_error_is_unreadable() -> None:
    text = '[get_weather(city="Paris"'
    assert parse_tool_calls(text) == ("", [ToolCall(name="get_weather", arguments_error=text)])


def test_python_lists_that_are_not_calls_are_text() -> None:
    for text in ("[1, 2, 3]", "[f(a=1), 2]", "[x for x in y]"):
        assert parse_tool_calls(text) == (text, [])


# -- plain text -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["Hello there!", "17 * 23 = 391", "", "  spaced  ", "call f(a=1) later", "</tool_call> x"],
)
def test_plain_text_is_the_answer(text: str) -> None:
    answer, calls = parse_tool_calls(text)
    assert calls == []
    assert answer == text


def test_never_raises_on_odd_input() -> None:
    odd = ["[" * 5000 + "f(", "{" * 5000, "<tool_call>" * 3, "[f(a=" + "[" * 3000 + "])]"]
    for text in odd:
        answer, calls = parse_tool_calls(text)
        assert isinstance(answer, str)
        assert all(c.arguments_error is not None or c.arguments == {} for c in calls)
