"""The AST checker's rules and quirks, one by one, on small hand-made items (from the spec)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_llmeval.scoring.bfcl import score_ast
from pytest_llmeval.scoring.bfcl.values import standardize_string


def _doc(function: str, required: list[str], **props: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": function,
        "description": "",
        "parameters": {"type": "dict", "properties": props, "required": required},
    }


def _fc(function: str, **args: Any) -> list[tuple[str, str]]:
    return [(function, json.dumps(args))]


FIND = _doc(
    "weather.find",
    ["city"],
    city={"type": "string"},
    days={"type": "integer"},
    ratio={"type": "float"},
    metric={"type": "boolean"},
    tags={"type": "array", "items": {"type": "string"}},
    point={"type": "tuple", "items": {"type": "float"}},
    filters={"type": "dict"},
    unused={"type": "string"},
)
TRUTH = [
    {
        "weather.find": {
            "city": ["New York, NY", "NYC"],
            "days": [3, ""],
            "ratio": [2.0, ""],
            "metric": [True, ""],
            "tags": [["Rain", "wind"], ""],
            "point": [[1.0, 2.0], ""],
            "filters": [{"kind": ["hourly"], "unit": ["C", ""]}, ""],
        }
    }
]


def _simple(output: Any, mode: str = "fc", category: str = "simple_python") -> tuple[bool, Any]:
    verdict = score_ast(category, [FIND], TRUTH, output, mode)  # type: ignore[arg-type]
    return verdict.valid, verdict.error_type


OK = (True, None)


def test_names_follow_the_mode() -> None:
    assert _simple(_fc("weather_find", city="NYC")) == OK
    assert _simple(_fc("weather.find", city="NYC")) == (
        False,
        "simple_function_checker:wrong_func_name",
    )
    assert _simple("[weather.find(city='NYC')]", "prompt") == OK
    assert _simple("[weather_find(city='NYC')]", "prompt") == (
        False,
        "simple_function_checker:wrong_func_name",
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({}, (False, "simple_function_checker:missing_required")),
        ({"city": "NYC", "unused": "x"}, (False, "simple_function_checker:unexpected_param")),
        ({"city": "NYC", "nope": "x"}, (False, "simple_function_checker:unexpected_param")),
        ({"city": "NYC", "metric": 1}, (False, "type_error:simple")),
        ({"city": "NYC", "days": True}, (False, "type_error:simple")),
        ({"city": "NYC", "days": "3"}, (False, "type_error:simple")),
        ({"city": "NYC", "days": 3.0}, (False, "type_error:simple")),
        ({"city": "NYC", "ratio": 2}, OK),
        # an optional array skips the element check (the "" marker is not a list) ...
        ({"city": "NYC", "tags": ["rain", 1]}, (False, "value_error:list/tuple")),
        ({"city": "new york ny"}, OK),
        ({"city": "NEW-YORK_NY."}, OK),
        ({"city": "New York, NY!"}, (False, "value_error:string")),
        ({"city": "NYC", "tags": ["RAIN", "Wind"]}, OK),
        ({"city": "NYC", "tags": ["wind", "rain"]}, (False, "value_error:list/tuple")),
        ({"city": "NYC", "tags": []}, OK),  # an optional list given as [] matches the "" marker
        ({"city": "NYC", "filters": {"kind": "Hourly"}}, OK),
        ({"city": "NYC", "filters": {"unit": "C"}}, (False, "value_error:dict_key")),
        ({"city": "NYC", "filters": {"kind": "hourly", "x": 1}}, (False, "value_error:dict_key")),
        ({"city": "NYC", "filters": {"kind": "daily"}}, (False, "value_error:dict_value")),
        ({"city": "NYC", "days": 4}, (False, "value_error:others")),
    ],
)
def test_argument_rules(args: dict[str, Any], expected: tuple[bool, Any]) -> None:
    assert _simple(_fc("weather_find", **args)) == expected


def test_standardize_string_keeps_other_punctuation() -> None:
    assert standardize_string("It's New-York, N.Y.!") == 'it"snewyorkny!'


def test_elements_are_type_checked_when_the_array_is_not_optional() -> None:
    truth = [{"weather.find": {"city": ["NYC"], "tags": [["rain"]], "point": [[1.0, 2.0]]}}]
    for args in ({"tags": ["rain", 1]}, {"tags": ["rain"], "point": [1, 2.0]}):
        output = _fc("weather_find", city="NYC", **{"tags": ["rain"], "point": [1.0, 2.0], **args})
        verdict = score_ast("simple_python", [FIND], truth, output, "fc")
        assert (verdict.valid, verdict.error_type) == (False, "type_error:nested")


def test_a_tuple_is_read_as_a_list_in_prompt_mode() -> None:
    assert _simple("[weather.find(city='NYC', point=(1.0, 2.0))]", "prompt") == OK
    # optional, so no element check; and [1, 2.0] == [1.0, 2.0]
    assert _simple("[weather.find(city='NYC', point=(1, 2.0))]", "prompt") == OK


def test_unary_plus_reads_as_minus_in_prompt_mode() -> None:
    assert _simple("[weather.find(city='NYC', days=+3)]", "prompt") == (
        False,
        "value_error:others",
    )
    assert _simple("[weather.find(city='NYC', days=2 + 1)]", "prompt") == OK


def test_a_left_out_truth_argument_must_accept_the_empty_marker() -> None:
    truth = [{"weather.find": {"city": ["NYC"], "days": [3]}}]
    verdict = score_ast("simple_python", [FIND], truth, _fc("weather_find", city="NYC"), "fc")
    assert (verdict.valid, verdict.error_type) == (
        False,
        "simple_function_checker:missing_optional",
    )


def test_counts() -> None:
    two = [*_fc("weather_find", city="NYC"), *_fc("weather_find", city="NYC")]
    assert _simple(two) == (False, "simple_function_checker:wrong_count")
    assert _simple(two, category="multiple") == (False, "multiple_function_checker:wrong_count")
    assert _simple("", category="multiple") == (False, "multiple_function_checker:wrong_count")
    assert _simple("no calls") == (False, "ast_decoder:decoder_failed")
    assert _simple([("weather_find", "[1]")]) == (False, "ast_decoder:decoder_wrong_output_format")


# ----------------------------------------------------------------------------- parallel

PRICE = _doc("price", ["x"], x={"type": "integer"})
PARALLEL_TRUTH = [{"price": {"x": [1, 2]}}, {"price": {"x": [1]}}]


def _parallel(*xs: int) -> tuple[bool, Any]:
    output = [("price", json.dumps({"x": x})) for x in xs]
    verdict = score_ast("parallel", [PRICE], PARALLEL_TRUTH, output, "fc")
    return verdict.valid, verdict.error_type


def test_parallel_matching_is_greedy_first_fit() -> None:
    assert _parallel(2, 1) == OK
    # the valid assignment exists (truth 0 -> 2, truth 1 -> 1) but truth 0 takes call 0 first
    assert _parallel(1, 2) == (False, "parallel_function_checker_no_order:cannot_find_match")
    assert _parallel(2) == (False, "parallel_function_checker_no_order:wrong_count")


# ---------------------------------------------------------------------- Java, JavaScript

JAVA = _doc(
    "Svc.run",
    ["n"],
    n={"type": "long"},
    name={"type": "String"},
    ok={"type": "boolean"},
    keys={"type": "Array", "items": {"type": "String"}},
    ids={"type": "ArrayList", "items": {"type": "String"}},
)
JAVA_TRUTH = [
    {
        "Svc.run": {
            "n": [5],
            "name": ["bob", ""],
            "ok": [True, ""],
            "keys": [["a"], ""],
            "ids": [["a"], ""],
        }
    }
]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"n": "5L"}, OK),
        ({"n": "5"}, (False, "type_error:simple")),
        ({"n": 5}, (False, "type_error:java")),
        ({"n": "5L", "ok": True}, (False, "type_error:java")),
        ({"n": "5L", "ok": "true"}, OK),
        ({"n": "5L", "name": "bob"}, OK),
        ({"n": "5L", "name": '"bob"'}, (False, "value_error:string")),
        ({"n": "5L", "keys": "new String[]{a}"}, OK),
        ({"n": "5L", "keys": 'new String[]{"a"}'}, (False, "value_error:list/tuple")),
        ({"n": "5L", "ids": 'new ArrayList<>(Arrays.asList("a"))'}, OK),
    ],
)
def test_java_values_are_strings_converted_by_declared_type(
    args: dict[str, Any], expected: tuple[bool, Any]
) -> None:
    verdict = score_ast("simple_java", [JAVA], JAVA_TRUTH, _fc("Svc_run", **args), "fc")
    assert (verdict.valid, verdict.error_type) == expected


JS = _doc(
    "go",
    ["s"],
    s={"type": "String"},
    on={"type": "Boolean"},
    xs={"type": "array", "items": {"type": "integer"}},
)
JS_TRUTH = [{"go": {"s": ["hi"], "on": [True, ""], "xs": [[1, 2], ""]}}]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"s": "hi"}, OK),
        ({"s": "'hi'"}, OK),
        ({"s": '"hi"'}, OK),
        ({"s": "hi", "on": True}, (False, "type_error:js")),
        ({"s": "hi", "on": "true"}, OK),
        ({"s": "hi", "xs": "[1, 2]"}, OK),
        ({"s": "hi", "xs": "[2, 1]"}, (False, "value_error:list/tuple")),
    ],
)
def test_javascript_strings_lose_their_quotes(
    args: dict[str, Any], expected: tuple[bool, Any]
) -> None:
    verdict = score_ast("simple_javascript", [JS], JS_TRUTH, _fc("go", **args), "fc")
    assert (verdict.valid, verdict.error_type) == expected


def test_an_undocumented_type_is_a_checker_error_where_the_official_code_raises() -> None:
    doc = _doc("f", ["a"], a={"type": "number"})
    verdict = score_ast("simple_python", [doc], [{"f": {"a": [1]}}], _fc("f", a=1), "fc")
    assert (verdict.valid, verdict.error_type) == (False, "ast_checker:error")


def test_a_required_array_whose_accepted_list_is_empty_cannot_pass() -> None:
    doc = _doc("record", ["a"], a={"type": "array", "items": {"type": "string"}})
    for value in [[], ["x"]]:
        verdict = score_ast(
            "live_simple", [doc], [{"record": {"a": []}}], _fc("record", a=value), "fc"
        )
        assert not verdict.valid
