"""Java and JavaScript prompt-mode decoding: the official tree-sitter readers' rules (spec §2).

The parity vectors (``test_parity.py``) hold the official verdicts; these name the rules one
by one.
"""

from __future__ import annotations

import builtins
from typing import Any

import pytest

from pytest_llmeval.core.errors import ConfigError
from pytest_llmeval.scoring.bfcl import decode_prompt_tree as tree
from pytest_llmeval.scoring.bfcl import score_ast
from pytest_llmeval.scoring.bfcl.calls import DOUBLE_STAR, DecodeError

pytest.importorskip("tree_sitter")


def test_java_values_stay_source_text_and_top_level_strings_lose_their_quotes() -> None:
    decoded = tree.decode_prompt_java('[Foo.bar(name="x", n=5L, list=new String[]{"a", "b"})]')
    assert decoded == [{"Foo.bar": {"name": "x", "n": "5L", "list": 'new String[]{"a","b"}'}}]


def test_a_java_hashmap_initializer_is_dropped() -> None:
    text = '[M.f(m=new HashMap<String, String>() {{ put("a", "b"); }})]'
    assert tree.decode_prompt_java(text) == [{"M.f": {"m": "new HashMap<String,String>()"}}]


def test_a_java_call_without_an_object_does_not_parse() -> None:
    with pytest.raises(DecodeError):  # the official reader fails on ``getX(n=5L)`` too
        tree.decode_prompt_java("[getX(n=5L)]")


def test_two_java_calls_fail_and_no_call_is_not_a_call_list() -> None:
    with pytest.raises(DecodeError):
        tree.decode_prompt_java("[M.f(a=1), M.g(b=2)]")
    assert tree.decode_prompt_java("[]") == {}


def test_javascript_two_calls_and_no_call_are_not_a_call_list() -> None:
    assert tree.decode_prompt_javascript("[f(a=1), g(b=2)]") is None
    assert tree.decode_prompt_javascript("[]") is None
    assert tree.decode_prompt_javascript("f(a='x', b=[1, 2])") == [{"f": {"a": "x", "b": "[1, 2]"}}]


def test_an_unnamed_argument_is_the_double_star_key_and_a_repeated_one_fails() -> None:
    assert tree.decode_prompt_javascript("[f(x)]") == [{"f": {DOUBLE_STAR: "x"}}]
    with pytest.raises(DecodeError):
        tree.decode_prompt_java("[M.f(a=1, a=2)]")


def test_java_text_is_cut_by_byte_offsets_as_the_official_reader_cuts_it() -> None:
    decoded = tree.decode_prompt_java('[f(note="é", a=12345)]')
    assert decoded == [{"f": {"note": 'é"', "=": "2345)"}}]  # shifted by one character


def test_prompt_mode_java_items_are_scored_through_the_tree_reader() -> None:
    doc = {
        "name": "Calc.run",
        "description": "",
        "parameters": {"type": "dict", "properties": {"n": {"type": "long"}}, "required": ["n"]},
    }
    truth = [{"Calc.run": {"n": [5]}}]
    assert score_ast("simple_java", [doc], truth, "[Calc.run(n=5L)]", "prompt").valid
    verdict = score_ast("simple_java", [doc], truth, "[Calc.run(n=5)]", "prompt")
    assert verdict.error_type == "type_error:simple"
    two = score_ast("simple_java", [doc], truth, "[Calc.run(n=5L), Calc.run(n=5L)]", "prompt")
    assert two.error_type == "ast_decoder:decoder_failed"
    js = score_ast("simple_javascript", [doc], truth, "[Calc.run(n=5), Calc.run(n=5)]", "prompt")
    assert js.error_type == "ast_decoder:decoder_wrong_output_format"


def test_without_tree_sitter_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_tree_sitter(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("tree_sitter"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    tree._parser.cache_clear()
    monkeypatch.setattr(builtins, "__import__", no_tree_sitter)
    try:
        with pytest.raises(ConfigError, match=r"pytest-llmeval-harness\[bfcl\]"):
            tree.decode_prompt_java("[f(a=1)]")
    finally:
        tree._parser.cache_clear()
