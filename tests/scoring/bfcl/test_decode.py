"""Decoding BFCL replies: FC tool calls and prompt-mode Python text, with the official quirks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.scoring.bfcl import DecodeError, decode_fc, decode_prompt_python
from pytest_llmeval.scoring.bfcl.calls import DOUBLE_STAR
from pytest_llmeval.scoring.bfcl.decode_prompt import wrap_prompt_text

# ------------------------------------------------------------------------------ FC mode


def test_fc_arguments_are_read_as_json() -> None:
    assert decode_fc([("f", '{"a": 1, "b": [true, null]}')]) == [{"f": {"a": 1, "b": [True, None]}}]


def test_fc_text_reply_does_not_decode_but_empty_text_is_no_calls() -> None:
    with pytest.raises(DecodeError):
        decode_fc("I would call f.")
    with pytest.raises(DecodeError):
        decode_fc(None)
    assert decode_fc("") == []


@pytest.mark.parametrize("arguments", ["{'a': 1}", '{"a": 1', "", "a=1"])
def test_fc_arguments_that_are_not_json_fail(arguments: str) -> None:
    with pytest.raises(DecodeError):
        decode_fc([("f", arguments)])


def test_fc_json_that_is_not_an_object_still_decodes() -> None:
    assert decode_fc([("f", "null"), ("g", "[1]")]) == [{"f": None}, {"g": [1]}]


# --------------------------------------------------------------------------- prompt mode


@pytest.mark.parametrize(
    ("text", "wrapped"),
    [
        ("f(a=1)", "[f(a=1)]"),
        ("```\n[f(a=1)]\n```", "[f(a=1)]"),
        ("[f(a=1)", "[f(a=1)]"),
        ("f(a=1)]", "[f(a=1)]"),
        ("\n [f(a=1)] \n", "[f(a=1)]"),
    ],
)
def test_only_backticks_newlines_and_spaces_are_stripped_at_the_ends(
    text: str, wrapped: str
) -> None:
    assert wrap_prompt_text(text) == wrapped


def test_plain_fence_decodes_python_fence_and_prose_do_not() -> None:
    assert decode_prompt_python("```\nf(a=1)\n```") == [{"f": {"a": 1}}]
    for text in ["```python\nf(a=1)\n```", "Sure: f(a=1)", "[f(a=1)]\t"]:
        with pytest.raises(DecodeError):
            decode_prompt_python(text)


def test_positional_arguments_are_dropped_and_names_keep_their_dots() -> None:
    assert decode_prompt_python("[math.factorial(5, number=5), sort('x')]") == [
        {"math.factorial": {"number": 5}},
        {"sort": {}},
    ]


@pytest.mark.parametrize(
    ("value", "decoded"),
    [
        ("'abc'", "abc"),
        ("3.5", 3.5),
        ("True", True),
        ("None", None),
        ("...", "..."),
        ("-5", -5),
        ("+5", -5),  # the official unary bug: any unary operator on a literal negates it
        ("not True", -1),
        ("~3", -3),
        ("149 + 1", 150),
        ("10 / 4", 2.5),
        ("2 ** 10", 1024),
        ("[1] * 3", [1, 1, 1]),
        ("-(2) + 1", -1),
        ("+2 + 1", 3),  # inside arithmetic, Python's own meaning
        ("some_variable", "some_variable"),
        ("g(1, 2)", "g(1, 2)"),
        ("g(x=1)", {"g": {"x": 1}}),
        ("data[0]", "data[0]"),
        ("(1, 2)", (1, 2)),
        ("[1, 'a']", [1, "a"]),
        ("{'k': [1]}", {"k": [1]}),
        ("b'x'", b"x"),
    ],
)
def test_values_follow_the_official_reading(value: str, decoded: Any) -> None:
    result = decode_prompt_python(f"[f(a={value})]")[0]["f"]["a"]
    assert result == decoded
    assert type(result) is type(decoded)


@pytest.mark.parametrize(
    "value",
    ["math.pi", "-(-5)", "-x", "-'a'", "lambda: 1", "f'x{1}'", "1 < 2", "{1, 2}", "1 / 0", "x + 1"],
)
def test_values_the_official_decoder_rejects_or_would_eval_fail(value: str) -> None:
    with pytest.raises(DecodeError):
        decode_prompt_python(f"[f(a={value})]")


def test_keyword_splat_becomes_a_double_star_argument() -> None:
    assert decode_prompt_python("[f(**{'a': 1})]") == [{"f": {DOUBLE_STAR: {"a": 1}}}]


def test_every_element_must_be_a_call() -> None:
    assert decode_prompt_python("[]") == []
    for text in ["[{}]", "[1]", "[f(a=1)], [g(b=2)]", "None"]:
        with pytest.raises(DecodeError):
            decode_prompt_python(text)


def test_huge_arithmetic_is_refused_not_computed() -> None:
    for value in ["10 ** 10 ** 10", "'a' * 10 ** 9", "1 << 10 ** 9"]:
        with pytest.raises(DecodeError):
            decode_prompt_python(f"[f(a={value})]")


# ------------------------------------------------------------------------------ never eval


def test_hostile_text_never_runs(tmp_path: Path) -> None:
    target = tmp_path / "pwned"
    command = f"__import__('os').system('touch {target}')"
    # As a call, officially too, it is only read: a call named ``system`` with no arguments.
    assert decode_prompt_python(command) == [{"system": {}}]
    # In arithmetic the official decoder would eval() it; here it fails to decode.
    for text in [f"[f(a={command} + 1)]", f"[f(a=1 + {command})]", f"[f(a=[{command}] * 2)]"]:
        with pytest.raises(DecodeError):
            decode_prompt_python(text)
    assert not target.exists()
