"""Unit tests for the pure tool-forge scoring module (no pytester)."""

from __future__ import annotations

import hashlib
import math
from typing import Any

import pytest

from pytest_llmeval.core.models import ToolCallRecord, Transcript
from pytest_llmeval.scoring.toolforge import (
    UNRESOLVED,
    CaseRecord,
    ToolForgeOutcome,
    build_suite_result,
    check_case,
    default_token_estimate,
    description_hash,
    diff_baseline,
    js_string,
    resolve_path,
    staleness_warnings,
    tokens_in,
)
from pytest_llmeval.suites.toolforge_console import format_console_summary

SEED: dict[str, Any] = {
    "holdings": {
        "equities": [
            {"symbol": "AAPL", "shares": 150, "name": "Apple Inc."},
            {"symbol": "MSFT", "shares": 0, "name": ""},
        ]
    },
    "totals": {"portfolioValue": 125000, "active": False, "nothing": None},
    "matrix": [[1, 2], [3, 4]],
    "city": "Tokyo",
    "profile": {"b": 1, "a": [1.0, "é"]},
}
SNAPSHOT: dict[str, Any] = {"prices": {"AAPL": {"current": 178.5}}}


def transcript(
    response: str = "",
    calls: list[tuple[str, dict[str, Any]]] | None = None,
    duration_ms: float = 0.0,
) -> Transcript:
    records = [ToolCallRecord(name=name, params=params) for name, params in calls or []]
    return Transcript(response=response, tool_calls=records, duration_ms=duration_ms)


def check(
    expect: dict[str, Any],
    t: Transcript | None = None,
    stubs: dict[str, Any] | None = None,
    snapshot: Any = SNAPSHOT,
) -> ToolForgeOutcome:
    return check_case(expect, stubs, t or transcript(), SEED, snapshot)


# --- js_string ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, "true"),
        (False, "false"),
        (None, "null"),
        (150, "150"),
        (0, "0"),
        (1.0, "1"),
        (1.5, "1.5"),
        (-2.5, "-2.5"),
        (178.5, "178.5"),
        (-0.0, "0"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1e16, "10000000000000000"),
        (1e20, "100000000000000000000"),
        (1.2345678901234568e20, "123456789012345680000"),
        (1e21, "1e+21"),
        (1.5e300, "1.5e+300"),
        (1e-6, "0.000001"),
        (1e-7, "1e-7"),
        (2.5e-7, "2.5e-7"),
        (123456.789, "123456.789"),
        (math.nan, "NaN"),
        (math.inf, "Infinity"),
        (-math.inf, "-Infinity"),
        ("as is", "as is"),
        ("", ""),
        ([1, 2], "[1,2]"),
        ({"b": 1, "a": [1.0, "é", None, True]}, '{"b":1,"a":[1,"é",null,true]}'),
        ([math.nan], "[null]"),
    ],
)
def test_js_string(value: Any, expected: str) -> None:
    assert js_string(value) == expected


# --- tokens ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("holdings.equities[0].symbol", "AAPL"),
        ("holdings.equities[0].shares", 150),
        ("holdings.equities[1].shares", 0),
        ("holdings.equities[1].name", ""),
        ("totals.portfolioValue", 125000),
        ("totals.active", False),
        ("matrix[1]", [3, 4]),
        ("holdings.equities.1.symbol", "MSFT"),
    ],
)
def test_resolve_path_values(path: str, expected: Any) -> None:
    assert resolve_path(SEED, path) == expected


@pytest.mark.parametrize(
    "path",
    [
        "matrix[1][0]",
        "totals.nothing",
        "totals.missing",
        "holdings.equities[5].symbol",
        "holdings.equities.01",
        "city.length",
        "totals[0]",
        "",
    ],
)
def test_resolve_path_unresolved(path: str) -> None:
    assert resolve_path(SEED, path) is UNRESOLVED


def substituted(value: str, snapshot: Any = SNAPSHOT) -> str | None:
    """What a ``responseContains`` value reads once its tokens are replaced (``None``: one
    did not resolve, so the check was skipped). Checked against an empty response, the
    failure message quotes the substituted text."""
    outcome = check({"responseContains": [value]}, snapshot=snapshot)
    if outcome.skipped_tokens:
        assert outcome.passed and outcome.assertions_skipped == 1
        return None
    assert outcome.error is not None
    prefix, suffix = "responseContains: expected '", "' in response but not found"
    assert outcome.error.startswith(prefix) and outcome.error.endswith(suffix)
    return outcome.error[len(prefix) : -len(suffix)]


def test_unresolved_sentinel() -> None:
    assert repr(UNRESOLVED) == "UNRESOLVED"
    assert resolve_path(None, "a") is UNRESOLVED
    assert substituted("{{seed:nope}}") is None


def test_tokens_are_substituted() -> None:
    assert substituted("no tokens {{here}}") == "no tokens {{here}}"
    value = "{{seed:holdings.equities[0].shares}} {{seed:holdings.equities[0].symbol}}"
    assert substituted(value) == "150 AAPL"
    assert substituted("${{snapshot:prices.AAPL.current}}") == "$178.5"
    assert substituted("{{snapshot:prices.AAPL.current}}", snapshot=None) is None
    assert substituted("{{seed:city}} {{seed:gone}}") is None
    assert substituted("n={{seed:holdings.equities[1].shares}}") == "n=0"
    assert substituted("{{seed:totals.active}}") == "false"
    assert substituted("[{{seed:holdings.equities[1].name}}]") == "[]"
    assert substituted("{{seed:profile}}") == '{"b":1,"a":[1,"é"]}'
    assert substituted("{{seed:matrix[1]}}") == "[3,4]"


def test_tokens_in() -> None:
    value = "a {{seed:x.y[0]}} b {{snapshot:p}} {{other:z}}"
    assert tokens_in(value) == ["{{seed:x.y[0]}}", "{{snapshot:p}}"]


def test_default_token_estimate() -> None:
    assert [default_token_estimate(t) for t in ["", "a", "abcd", "abcde", "x" * 9]] == [
        0,
        1,
        1,
        2,
        3,
    ]


# --- routing checks ----------------------------------------------------------------------------


def test_tools_called() -> None:
    t = transcript(calls=[("a", {}), ("b", {})])
    assert check({"toolsCalled": ["a", "b"]}, t).passed
    outcome = check({"toolsCalled": ["b", "a"]}, t)
    assert outcome.error == 'toolsCalled: expected ["b","a"] but got ["a","b"]'
    assert (outcome.assertions_run, outcome.assertions_skipped) == (1, 0)
    doubled = check({"toolsCalled": ["a"]}, transcript(calls=[("a", {}), ("a", {})]))
    assert doubled.error == 'toolsCalled: expected ["a"] but got ["a","a"]'
    assert check({"toolsCalled": []}, transcript()).passed


def test_tools_acceptable() -> None:
    t = transcript(calls=[("b", {}), ("a", {}), ("a", {})])
    assert check({"toolsAcceptable": [["x"], ["a", "b"]]}, t).passed
    outcome = check({"toolsAcceptable": [["a"], ["b", "c"]]}, t)
    assert outcome.error == (
        'toolsAcceptable: expected one of [["a"],["b","c"]] but got ["b","a","a"]'
    )


def test_tools_acceptable_none_and_empty_sets() -> None:
    none_called = transcript()
    called = transcript(calls=[("a", {})])
    assert check({"toolsAcceptable": [["__none__"]]}, none_called).passed
    assert check({"toolsAcceptable": [["a", "__none__"]]}, none_called).passed
    assert check({"toolsAcceptable": [["a"], ["__none__"]]}, called).passed
    assert check({"toolsAcceptable": [["__none__"]]}, called).error == (
        'toolsAcceptable: expected one of [["__none__"]] but got ["a"]'
    )
    assert check({"toolsAcceptable": [[]]}, none_called).passed
    assert not check({"toolsAcceptable": [[]]}, called).passed
    assert not check({"toolsAcceptable": [["a"]]}, none_called).passed


def test_tools_not_called() -> None:
    t = transcript(calls=[("search", {})])
    passing = check({"toolsNotCalled": ["delete", "drop"]}, t)
    assert passing.passed
    assert passing.assertions_run == 2
    failing = check({"toolsNotCalled": ["delete", "search", "drop"]}, t)
    assert failing.error == 'toolsNotCalled: expected "search" not to be called but it was'
    assert failing.assertions_run == 2


# --- toolParams --------------------------------------------------------------------------------

PARAMS = {"city": "Paris", "days": 3, "metric": True, "ratio": 1.0, "opts": {"a": [1]}, "n": None}


def param(
    assertion: str, name: str, value: Any = None, tool: str = "get_weather"
) -> dict[str, Any]:
    entry = {"tool": tool, "paramName": name, "assertion": assertion}
    if value is not None:
        entry["value"] = value
    return entry


def params_outcome(*entries: dict[str, Any]) -> ToolForgeOutcome:
    t = transcript(calls=[("get_weather", PARAMS), ("get_weather", {"city": "Lyon"})])
    return check({"toolParams": list(entries)}, t)


@pytest.mark.parametrize(
    "entry",
    [
        param("equals", "city", "Paris"),
        param("equals", "days", "3"),
        param("equals", "metric", "true"),
        param("equals", "ratio", "1"),
        param("equals", "opts", '{"a":[1]}'),
        param("contains", "city", "ari"),
        param("oneOf", "city", ["Lyon", "Paris"]),
        param("oneOf", "days", ["{{seed:gone}}", "3"]),
        param("exists", "city"),
        param("exists", "n"),
        param("notExists", "country"),
        param("matches", "city", "ar"),
        param("matches", "days", r"^\d$"),
    ],
)
def test_tool_params_pass(entry: dict[str, Any]) -> None:
    outcome = params_outcome(entry)
    assert outcome.passed, outcome.failures
    assert (outcome.assertions_run, outcome.assertions_skipped) == (1, 0)


@pytest.mark.parametrize(
    ("entry", "error"),
    [
        (
            param("equals", "city", "Lyon"),
            "toolParams: expected get_weather.city to equal 'Lyon' but got 'Paris'",
        ),
        (
            param("equals", "country", "FR"),
            "toolParams: expected get_weather.country to equal 'FR' but it was absent",
        ),
        (
            param("contains", "city", "yon"),
            "toolParams: expected get_weather.city to contain 'yon' but got 'Paris'",
        ),
        (
            param("oneOf", "city", ["Lyon", "{{seed:gone}}", "{{seed:city}}"]),
            'toolParams: expected get_weather.city to be one of ["Lyon","Tokyo"] but got \'Paris\'',
        ),
        (
            param("exists", "country"),
            "toolParams: expected get_weather.country to exist but it was absent",
        ),
        (
            param("notExists", "n"),
            "toolParams: expected get_weather.n to be absent but got 'null'",
        ),
        (
            param("matches", "city", "^ar"),
            "toolParams: expected get_weather.city to match /^ar/ but got 'Paris'",
        ),
        (
            param("matches", "city", "("),
            "toolParams: invalid pattern /(/ for get_weather.city: "
            "missing ), unterminated subpattern at position 0",
        ),
        (
            param("between", "city", "x"),
            'toolParams: unknown assertion "between" for get_weather.city',
        ),
        (param("equals", "city"), "toolParams: equals on get_weather.city needs a value"),
    ],
)
def test_tool_params_fail(entry: dict[str, Any], error: str) -> None:
    outcome = params_outcome(entry)
    assert not outcome.passed
    assert outcome.error == error
    assert (outcome.assertions_run, outcome.assertions_skipped) == (1, 0)


def test_tool_params_uses_first_call() -> None:
    assert params_outcome(param("equals", "city", "Paris")).passed
    assert params_outcome(param("equals", "city", "Lyon")).error is not None


def test_tool_params_skips() -> None:
    outcome = params_outcome(
        param("equals", "city", "Paris", tool="get_forecast"),
        param("equals", "city", "{{snapshot:prices.nope}}"),
        param("oneOf", "city", ["{{seed:a}}", "{{seed:b}}"]),
        param("equals", "days", "{{seed:totals.portfolioValue}}"),
    )
    assert outcome.error == "toolParams: expected get_weather.days to equal '125000' but got '3'"
    assert (outcome.assertions_run, outcome.assertions_skipped) == (1, 3)
    assert outcome.skipped_tokens == ["{{snapshot:prices.nope}}", "{{seed:a}}", "{{seed:b}}"]
    assert outcome.warnings == [
        "toolParams: get_forecast was not called, get_forecast.city skipped",
        "toolParams: unresolved {{snapshot:prices.nope}}, skipped",
        "toolParams: unresolved {{seed:a}}, skipped",
        "toolParams: unresolved {{seed:b}}, skipped",
    ]


# --- noToolErrors ------------------------------------------------------------------------------


def test_no_tool_errors_stub_mode() -> None:
    calls = [("get_weather", {}), ("web_search", {})]
    t = transcript(calls=calls)
    t.tool_calls[0].success = False
    stubs = {"get_weather": {"temp": 20}, "web_search": []}
    passing = check({"noToolErrors": True}, t, stubs=stubs)
    assert passing.passed
    assert passing.assertions_run == 1
    failing = check({"noToolErrors": True}, t, stubs={"get_weather": {}})
    assert failing.error == 'noToolErrors: called "web_search", which has no stub'
    assert failing.assertions_run == 1


@pytest.mark.parametrize("stubs", [None, {}])
def test_no_tool_errors_routing_mode_is_a_no_op(stubs: dict[str, Any] | None) -> None:
    t = transcript(calls=[("hallucinated", {})])
    t.tool_calls[0].success = False
    outcome = check({"noToolErrors": True}, t, stubs=stubs)
    assert outcome.passed
    assert (outcome.assertions_run, outcome.assertions_skipped) == (0, 0)


def test_no_tool_errors_false_does_not_run() -> None:
    outcome = check({"noToolErrors": False}, transcript(calls=[("x", {})]), stubs={"y": 1})
    assert outcome.passed
    assert outcome.assertions_run == 0


# --- response checks ---------------------------------------------------------------------------


def test_response_non_empty() -> None:
    assert check({"responseNonEmpty": True}, transcript(" ok ")).assertions_run == 1
    outcome = check({"responseNonEmpty": True}, transcript(" \n\t"))
    assert outcome.error == "responseNonEmpty: expected a non-empty response but it was empty"
    off = check({"responseNonEmpty": False}, transcript(""))
    assert off.passed
    assert off.assertions_run == 0


def test_response_contains() -> None:
    t = transcript("Weather in Tokyo: 150 AAPL")
    assert check({"responseContains": ["Tokyo", "{{seed:holdings.equities[0].shares}}"]}, t).passed
    outcome = check({"responseContains": ["Tokyo", "tokyo"]}, t)
    assert outcome.error == "responseContains: expected 'tokyo' in response but not found"
    assert outcome.assertions_run == 2


def test_response_contains_any() -> None:
    t = transcript("It is sunny.")
    assert check({"responseContainsAny": [["clear", "sunny"]]}, t).passed
    outcome = check({"responseContainsAny": [["Sunny", "clear"]]}, t)
    expected = 'responseContainsAny: expected one of ["Sunny","clear"] in response but none found'
    assert outcome.error == expected


def test_response_not_contains() -> None:
    t = transcript('{"fetchedAt": 1}')
    assert check({"responseNotContains": ["FetchedAt"]}, t).passed
    outcome = check({"responseNotContains": ["fetchedAt"]}, t)
    assert outcome.error == 'responseNotContains: found "fetchedAt" in response'


def test_response_matches() -> None:
    t = transcript("Tokyo is 21°C today")
    assert check({"responseMatches": [r"\d+°C"]}, t).passed
    outcome = check({"responseMatches": ["^Tokyo", "^today"]}, t)
    assert outcome.error == "responseMatches: expected response to match /^today/"
    assert outcome.assertions_run == 2
    bad = check({"responseMatches": ["["]}, t)
    assert bad.error is not None
    assert bad.error.startswith("responseMatches: invalid pattern /[/: ")


def test_max_latency_ms() -> None:
    assert check({"maxLatencyMs": 2000}, transcript(duration_ms=2000)).passed
    outcome = check({"maxLatencyMs": 2000}, transcript(duration_ms=2100))
    assert outcome.error == "maxLatencyMs: expected at most 2000ms but took 2100ms"
    assert check({"maxLatencyMs": 0}, transcript(duration_ms=0)).passed
    zero = check({"maxLatencyMs": 0}, transcript(duration_ms=0.5))
    assert zero.error == "maxLatencyMs: expected at most 0ms but took 0.5ms"


def test_max_tokens() -> None:
    assert check({"maxTokens": 2}, transcript("abcdefgh")).passed
    outcome = check({"maxTokens": 2}, transcript("abcdefghi"))
    assert outcome.error == "maxTokens: expected at most 2 tokens but estimated 3"
    words = check_case({"maxTokens": 2}, None, transcript("a b c"), SEED, None, lambda s: 3)
    assert words.error == "maxTokens: expected at most 2 tokens but estimated 3"


def test_null_keys_do_not_run() -> None:
    expect = {key: None for key in ["toolsCalled", "maxLatencyMs", "maxTokens", "toolParams"]}
    outcome = check(expect, transcript(duration_ms=99))
    assert outcome.passed
    assert (outcome.assertions_run, outcome.assertions_skipped) == (0, 0)


# --- order, short-circuit, counting ------------------------------------------------------------


def test_order_does_not_depend_on_key_order() -> None:
    expect = {
        "maxTokens": 1,
        "responseContains": ["absent"],
        "toolsNotCalled": ["a"],
        "toolsCalled": ["b"],
    }
    assert list(expect)[-1] == "toolsCalled"
    outcome = check(expect, transcript("long enough response", calls=[("a", {})]))
    assert outcome.error == 'toolsCalled: expected ["b"] but got ["a"]'
    assert outcome.failures == [
        'toolsCalled: expected ["b"] but got ["a"]',
        'toolsNotCalled: expected "a" not to be called but it was',
        "responseContains: expected 'absent' in response but not found",
        "maxTokens: expected at most 1 tokens but estimated 5",
    ]
    assert (outcome.assertions_run, outcome.assertions_skipped) == (1, 0)


FULL_EXPECT: dict[str, Any] = {
    "maxTokens": 100,
    "maxLatencyMs": 1000,
    "responseMatches": ["AAPL"],
    "responseNotContains": ["error"],
    "responseContainsAny": [["{{seed:gone}}", "150"], ["{{snapshot:prices.MSFT.current}}"]],
    "responseContains": ["AAPL", "{{seed:holdings.equities[0].symbol}}", "{{seed:nope}}"],
    "responseNonEmpty": True,
    "noToolErrors": True,
    "toolParams": [
        {"tool": "get_holdings", "paramName": "symbol", "assertion": "equals", "value": "AAPL"},
        {"tool": "get_quote", "paramName": "symbol", "assertion": "exists"},
    ],
    "toolsNotCalled": ["delete", "trade"],
    "toolsCalled": ["get_holdings"],
}


def full_transcript() -> Transcript:
    return transcript("You hold 150 AAPL.", [("get_holdings", {"symbol": "AAPL"})], 400)


def test_counting_stub_mode() -> None:
    outcome = check(FULL_EXPECT, full_transcript(), stubs={"get_holdings": {"shares": 150}})
    assert outcome.passed, outcome.failures
    # 1 toolsCalled + 2 toolsNotCalled + 1 toolParams + 1 noToolErrors + 1 responseNonEmpty
    # + 2 responseContains + 1 responseContainsAny + 1 + 1 + 1 + 1 = 13 run
    assert (outcome.assertions_run, outcome.assertions_skipped) == (13, 3)
    assert outcome.skipped_tokens == [
        "{{seed:nope}}",
        "{{seed:gone}}",
        "{{snapshot:prices.MSFT.current}}",
    ]
    assert outcome.warnings == [
        "toolParams: get_quote was not called, get_quote.symbol skipped",
        "responseContains: unresolved {{seed:nope}}, skipped",
        "responseContainsAny: unresolved {{seed:gone}}, dropped from its group",
        "responseContainsAny: unresolved {{snapshot:prices.MSFT.current}}, skipped",
    ]


@pytest.mark.parametrize("stubs", [None, {}])
def test_counting_routing_mode(stubs: dict[str, Any] | None) -> None:
    outcome = check(FULL_EXPECT, full_transcript(), stubs=stubs)
    assert outcome.passed
    assert (outcome.assertions_run, outcome.assertions_skipped) == (12, 3)


def test_units_after_first_failure_count_as_neither() -> None:
    expect = {
        "responseContains": ["{{seed:a}}", "150", "missing", "{{seed:b}}", "also missing"],
        "responseNotContains": ["AAPL"],
        "maxLatencyMs": 1,
    }
    outcome = check(expect, full_transcript(), stubs={"get_holdings": {}})
    assert outcome.error == "responseContains: expected 'missing' in response but not found"
    assert (outcome.assertions_run, outcome.assertions_skipped) == (2, 1)
    assert outcome.skipped_tokens == ["{{seed:a}}"]
    assert outcome.failures == [
        "responseContains: expected 'missing' in response but not found",
        "responseContains: expected 'also missing' in response but not found",
        'responseNotContains: found "AAPL" in response',
        "maxLatencyMs: expected at most 1ms but took 400ms",
    ]


def test_partially_unresolved_group_still_runs_and_can_fail() -> None:
    expect = {"responseContainsAny": [["{{seed:gone}}", "nowhere"]]}
    outcome = check(expect, full_transcript())
    assert outcome.error == (
        'responseContainsAny: expected one of ["nowhere"] in response but none found'
    )
    assert (outcome.assertions_run, outcome.assertions_skipped) == (1, 0)
    assert outcome.skipped_tokens == ["{{seed:gone}}"]


@pytest.mark.parametrize(
    "expect",
    [
        {"responseContains": ["{{seed:matrix[1][0]}}"]},
        {"responseContainsAny": [["{{seed:matrix[1][0]}}"]]},
        {"responseNotContains": ["{{seed:matrix[1][0]}}"]},
        {
            "toolParams": [
                {
                    "tool": "get_holdings",
                    "paramName": "symbol",
                    "assertion": "contains",
                    "value": "{{seed:matrix[1][0]}}",
                }
            ]
        },
    ],
)
def test_unresolved_token_in_each_field_is_skipped(expect: dict[str, Any]) -> None:
    outcome = check(expect, full_transcript())
    assert outcome.passed
    assert (outcome.assertions_run, outcome.assertions_skipped) == (0, 1)
    assert outcome.skipped_tokens == ["{{seed:matrix[1][0]}}"]


def test_falsy_values_resolve() -> None:
    t = transcript("shares: 0, active: false")
    expect = {
        "responseContains": [
            "shares: {{seed:holdings.equities[1].shares}}",
            "active: {{seed:totals.active}}",
            "{{seed:holdings.equities[1].name}}",
        ]
    }
    outcome = check(expect, t)
    assert outcome.passed
    assert (outcome.assertions_run, outcome.assertions_skipped) == (3, 0)
    assert check({"responseContains": ["{{seed:holdings.equities[1].name}}"]}, transcript()).passed
    empty_negative = check({"responseNotContains": ["{{seed:holdings.equities[1].name}}"]}, t)
    assert empty_negative.error == 'responseNotContains: found "" in response'


def test_snapshot_not_configured() -> None:
    t = transcript("AAPL is at 178.5")
    expect = {"responseContains": ["{{snapshot:prices.AAPL.current}}"]}
    assert check(expect, t).assertions_run == 1
    outcome = check(expect, t, snapshot=None)
    assert outcome.passed
    assert (outcome.assertions_run, outcome.assertions_skipped) == (0, 1)
    assert outcome.warnings == [
        "responseContains: unresolved {{snapshot:prices.AAPL.current}}, skipped"
    ]


# --- staleness ---------------------------------------------------------------------------------

DESCRIPTION = "Get the current weather for a city."
HASH = hashlib.sha256(DESCRIPTION.encode()).hexdigest()[:12]


def test_description_hash() -> None:
    assert description_hash(DESCRIPTION) == HASH
    assert len(HASH) == 12


def test_staleness_description_hash() -> None:
    fresh = staleness_warnings({"descriptionHash": HASH}, tool_name="w", description=DESCRIPTION)
    assert (fresh.warnings, fresh.stale) == ([], False)
    stale = staleness_warnings(
        {"descriptionHash": "abc123"}, tool_name="get_weather", description="new"
    )
    assert stale.stale
    assert stale.warnings == [
        f"Evals for get_weather generated against description hash abc123, current is "
        f"{description_hash('new')}. Results may not reflect current routing contract."
    ]


def test_staleness_registry_size() -> None:
    assert staleness_warnings({"registrySize": 10}, tool_name="w", registry_size=15).warnings == []
    grown = staleness_warnings({"registrySize": 10}, tool_name="w", registry_size=16)
    assert grown.warnings == [
        "Registry has grown from 10 to 16 tools. "
        "Labeled evals may have under-specified toolsAcceptable sets."
    ]
    assert not grown.stale


def test_staleness_tool_version() -> None:
    same = staleness_warnings({"toolVersion": "v1.0.0"}, tool_name="w", version="1.4.2")
    assert same.warnings == []
    bumped = staleness_warnings({"toolVersion": "1.4.2"}, tool_name="get_weather", version="2.0.0")
    assert bumped.warnings == [
        "Tool get_weather is version 2.0.0, evals were generated for 1.4.2. "
        "Schema may have changed."
    ]
    assert not bumped.stale


def test_staleness_partial_metadata() -> None:
    current = {"description": "changed", "version": "9.0.0", "registry_size": 1000}
    assert staleness_warnings(None, tool_name="w", **current).warnings == []
    assert staleness_warnings({}, tool_name="w", **current).warnings == []
    only_version = staleness_warnings({"toolVersion": "1.0.0"}, tool_name="w", **current)
    assert only_version.warnings == [
        "Tool w is version 9.0.0, evals were generated for 1.0.0. Schema may have changed."
    ]
    assert not only_version.stale
    metadata = {"toolVersion": "1.0.0", "descriptionHash": "abc", "registrySize": 2}
    assert staleness_warnings(metadata, tool_name="w").warnings == []


# --- suite result, baseline, console -----------------------------------------------------------


def record(
    case_id: str, description: str, outcome: ToolForgeOutcome, transcript: Transcript
) -> CaseRecord:
    """The record of a case that ran, as the suite builds it from its result."""
    return CaseRecord(
        id=case_id,
        description=description,
        passed=outcome.passed,
        duration_ms=transcript.duration_ms,
        assertions_run=outcome.assertions_run,
        assertions_skipped=outcome.assertions_skipped,
        error=outcome.error,
        tools_called=[call.name for call in transcript.tool_calls],
        response_length=len(transcript.response),
        skipped_tokens=list(outcome.skipped_tokens),
    )


def records() -> list[CaseRecord]:
    passed = record(
        "gs-001",
        "direct weather question",
        check({"toolsCalled": ["get_weather"]}, transcript("Sunny", [("get_weather", {})], 1250)),
        transcript("Sunny", [("get_weather", {})], 1250),
    )
    failing_t = transcript('{"fetchedAt": 1}', [("get_forecast", {})], 2100.4)
    failed = record(
        "gs-002",
        "no raw JSON leak",
        check(
            {
                "responseContains": ["{{snapshot:prices.current}}"],
                "responseNotContains": ["fetchedAt"],
            },
            failing_t,
        ),
        failing_t,
    )
    skipped = CaseRecord(id="gs-003", description="no message", skipped=True)
    return [passed, failed, skipped]


def test_build_suite_result() -> None:
    baseline = {
        "runId": "run-0",
        "cases": [{"id": "gs-001", "passed": False}, {"id": "gs-002", "passed": True}],
    }
    result = build_suite_result(
        run_id="run-1",
        timestamp="2025-01-01T00:00:00Z",
        tier="golden",
        tool_name="get_weather",
        agent_endpoint="http://localhost:3000/chat",
        cases=records(),
        tool_version="1.0.0",
        description_hash=HASH,
        registry_size=12,
        eval_file_hash="deadbeef",
        staleness_warnings=["w1"],
        estimated_cost_usd=0.032,
        baseline=baseline,
    )
    assert list(result) == [
        "runId",
        "timestamp",
        "tier",
        "toolName",
        "agentEndpoint",
        "metadata",
        "stalenessWarnings",
        "cases",
        "summary",
        "baselineRunId",
        "regressions",
        "newPasses",
    ]
    assert result["metadata"] == {
        "toolVersion": "1.0.0",
        "descriptionHash": HASH,
        "registrySize": 12,
        "evalFileHash": "deadbeef",
    }
    assert result["cases"] == [
        {
            "id": "gs-001",
            "description": "direct weather question",
            "passed": True,
            "durationMs": 1250,
            "assertionsRun": 1,
            "assertionsSkipped": 0,
            "details": {"toolsCalled": ["get_weather"], "responseLength": 5, "skippedTokens": []},
        },
        {
            "id": "gs-002",
            "description": "no raw JSON leak",
            "passed": False,
            "durationMs": 2100,
            "assertionsRun": 1,
            "assertionsSkipped": 1,
            "error": 'responseNotContains: found "fetchedAt" in response',
            "details": {
                "toolsCalled": ["get_forecast"],
                "responseLength": 16,
                "skippedTokens": ["{{snapshot:prices.current}}"],
            },
        },
        {
            "id": "gs-003",
            "description": "no message",
            "passed": False,
            "durationMs": 0,
            "assertionsRun": 0,
            "assertionsSkipped": 0,
            "skipped": True,
            "details": {"toolsCalled": [], "responseLength": 0, "skippedTokens": []},
        },
    ]
    assert result["summary"] == {
        "totalCases": 3,
        "passed": 1,
        "failed": 1,
        "skippedAssertions": 1,
        "totalDurationMs": 3350,
        "estimatedCostUsd": 0.032,
    }
    assert result["stalenessWarnings"] == ["w1"]
    assert result["baselineRunId"] == "run-0"
    assert result["regressions"] == ["gs-002"]
    assert result["newPasses"] == ["gs-001"]


def test_build_suite_result_without_baseline() -> None:
    result = build_suite_result(
        run_id="r",
        timestamp="t",
        tier="labeled",
        tool_name="x",
        agent_endpoint="e",
        cases=[],
    )
    assert result["baselineRunId"] is None
    assert (result["regressions"], result["newPasses"]) == ([], [])
    assert result["metadata"]["registrySize"] is None
    assert result["summary"]["totalCases"] == 0


def test_diff_baseline() -> None:
    baseline = {
        "runId": "b",
        "cases": [
            {"id": "c", "passed": True},
            {"id": "a", "passed": True},
            {"id": "b", "passed": False},
            {"id": "d", "passed": False},
            {"id": "removed", "passed": True},
            {"id": "s1", "passed": True, "skipped": False},
            {"id": "s2", "passed": False, "skipped": True},
        ],
    }
    current: list[CaseRecord | dict[str, Any]] = [
        {"id": "a", "passed": False},
        {"id": "b", "passed": True},
        CaseRecord(id="c", passed=False),
        {"id": "d", "passed": False},
        {"id": "new", "passed": False},
        CaseRecord(id="s1", skipped=True),
        {"id": "s2", "passed": True},
    ]
    assert diff_baseline(current, baseline) == (["a", "c"], ["b"])
    assert diff_baseline(current, None) == ([], [])


def test_console_summary() -> None:
    result = build_suite_result(
        run_id="r",
        timestamp="t",
        tier="golden",
        tool_name="get_weather",
        agent_endpoint="e",
        cases=records(),
        staleness_warnings=["Registry has grown from 10 to 16 tools."],
        baseline={"runId": "b", "cases": [{"id": "gs-002", "passed": True}]},
    )
    result["newPasses"] = ["gs-001"]
    assert format_console_summary(result).splitlines() == [
        "═══ get_weather — golden evals ════════════════════════════════════",
        "  ✓ gs-001  direct weather question  1250ms",
        "  ✗ gs-002  no raw JSON leak         2100ms",
        '    → responseNotContains: found "fetchedAt" in response',
        "  ○ gs-003  no message               skipped",
        "───────────────────────────────────────────────────────────────────",
        "  1/3 passed | 1 failed | 1 skipped | 1 skipped assertions | 3350ms total",
        "  ⚠ Registry has grown from 10 to 16 tools.",
        "  ⚠ REGRESSIONS (1): gs-002",
        "  ✓ new passes (1): gs-001",
    ]


def test_console_summary_quiet_run() -> None:
    result = build_suite_result(
        run_id="r",
        timestamp="t",
        tier="labeled",
        tool_name="a_much_longer_tool_name_that_overflows_the_header_width_x",
        agent_endpoint="e",
        cases=records()[:1],
    )
    lines = format_console_summary(result, width=40).splitlines()
    assert lines[0].endswith(" evals ═══")
    assert lines[-2] == "─" * 40
    assert lines[-1] == "  1/1 passed | 0 failed | 0 skipped assertions | 1250ms total"


def test_tool_params_one_of_drops_unresolved_members() -> None:
    outcome = params_outcome(param("oneOf", "days", ["{{seed:gone}}", "{{seed:city}}", "3"]))
    assert outcome.passed
    assert (outcome.assertions_run, outcome.assertions_skipped) == (1, 0)
    assert outcome.skipped_tokens == ["{{seed:gone}}"]
    assert outcome.warnings == ["toolParams: unresolved {{seed:gone}}, dropped from its group"]
