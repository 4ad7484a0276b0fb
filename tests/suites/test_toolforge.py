"""The tool-forge suite through pytest: layouts, stub and routing modes, tokens, artifacts."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import read_jsonl, write_json

CASES: list[dict[str, Any]] = [
    {
        "id": "tf-stub",
        "description": "stub mode: the stub result reaches the final answer",
        "input": {"message": "What's the weather?"},
        "stubs": {"get_weather": {"temp_c": 21, "conditions": "sunny"}},
        "expect": {
            "maxLatencyMs": 60000,
            "responseContains": ["21C", "{{seed:cities.home}}"],
            "noToolErrors": True,
            "toolsCalled": ["get_weather"],
        },
    },
    {
        "id": "tf-route",
        "description": "routing only: tools are recorded, not run",
        "input": {"message": "search for rope"},
        "expect": {
            "toolsAcceptable": [["web.search"], ["__none__"]],
            "toolParams": [
                {"tool": "web.search", "paramName": "q", "assertion": "contains", "value": "ROPE"}
            ],
        },
    },
    {
        "id": "tf-fail",
        "description": "a real miss",
        "input": {"message": "hello"},
        "expect": {"responseNotContains": ["Hello"], "responseNonEmpty": True},
    },
    {
        "id": "tf-skipped",
        "description": "no message",
        "input": {},
        "expect": {"responseNonEmpty": True},
    },
    {
        "id": "tf-token",
        "description": "unresolved token is skipped, not failed",
        "input": {"message": "hello"},
        "expect": {"responseContains": ["{{snapshot:prices.AAPL}}", "Hello"]},
    },
]


def _envelope(metadata: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": metadata, "cases": CASES}


def _setup(pytester: pytest.Pytester, layout: str = "envelope") -> Path:
    write_json(pytester, "evals/seed-manifest.json", {"cities": {"home": "Paris"}})
    body: Any = CASES if layout == "bare" else _envelope({"toolName": "get_weather"})
    return write_json(pytester, "evals/get_weather.golden.json", body)


def _run_dir(pytester: pytest.Pytester) -> Path:
    return pytester.path / "run"


@pytest.mark.parametrize("layout", ["envelope", "bare"])
def test_both_layouts_run_with_the_contract_verdicts(
    scripted: pytest.Pytester, layout: str
) -> None:
    _setup(scripted, layout)
    result = scripted.runpytest(
        "--llmeval-runner", "scripted", "--llmeval-run-dir", "run", "-v", "-rs"
    )
    result.assert_outcomes(passed=3, failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*get_weather.golden.json::tf-fail FAILED*",
            '*responseNotContains: found "Hello" in response*',
        ]
    )
    rows = {r["case_id"]: r for r in read_jsonl(_run_dir(scripted) / "results.jsonl")}
    assert rows["tf-stub"]["tool_calls"][0]["source"] == "stub"
    assert rows["tf-route"]["tool_calls"][0]["source"] == "routing"
    assert rows["tf-route"]["tool_calls"][0]["params"] == {"q": "  ROPE  Precision "}
    assert rows["tf-token"]["details"]["skippedTokens"] == ["{{snapshot:prices.AAPL}}"]
    assert rows["tf-token"]["details"]["assertionsSkipped"] == 1
    assert rows["tf-skipped"]["outcome"] == "skipped"


def test_suite_result_file_has_the_contract_fields(scripted: pytest.Pytester) -> None:
    _setup(scripted)
    scripted.runpytest("--llmeval-runner", "scripted", "--llmeval-run-dir", "run")
    suite_result = json.loads(
        (_run_dir(scripted) / "toolforge" / "get_weather.golden.json").read_text()
    )
    assert set(suite_result) == {
        "runId", "timestamp", "tier", "toolName", "agentEndpoint", "metadata",
        "stalenessWarnings", "cases", "summary", "baselineRunId", "regressions", "newPasses",
    }  # fmt: skip
    assert suite_result["tier"] == "golden"
    assert suite_result["toolName"] == "get_weather"
    assert [c["id"] for c in suite_result["cases"]] == [c["id"] for c in CASES]  # file order
    summary = suite_result["summary"]
    assert (summary["totalCases"], summary["passed"], summary["failed"]) == (5, 3, 1)
    stub = suite_result["cases"][0]
    assert (stub["assertionsRun"], stub["assertionsSkipped"]) == (5, 0)
    assert stub["details"]["toolsCalled"] == ["get_weather"]
    fail = suite_result["cases"][2]
    assert fail["error"] == 'responseNotContains: found "Hello" in response'


def test_console_summary_in_the_contract_layout(scripted: pytest.Pytester) -> None:
    _setup(scripted)
    result = scripted.runpytest("--llmeval-runner", "scripted", "--llmeval-run-dir", "run")
    result.stdout.fnmatch_lines(
        [
            "═══ get_weather — golden evals ═*",
            "  ✓ tf-stub *",
            "  ✗ tf-fail *",
            '    → responseNotContains: found "Hello" in response',
            "───*",
            "  3/5 passed | 1 failed | 1 skipped | 1 skipped assertions | *ms total",
        ]
    )


def test_staleness_warnings_from_the_tool_registry(scripted: pytest.Pytester) -> None:
    description = "Current weather for a city."
    write_json(
        scripted,
        "tools.json",
        {
            "tools": [
                {"name": "get_weather", "description": description, "version": "2.1.0"},
                *({"name": f"tool_{i}", "description": "x"} for i in range(5)),
            ]
        },
    )
    metadata = {
        "toolName": "get_weather",
        "descriptionHash": "abcdef123456",
        "registrySize": 2,
        "toolVersion": "1.4.0",
    }
    write_json(scripted, "evals/seed-manifest.json", {"cities": {"home": "Paris"}})
    write_json(scripted, "evals/get_weather.labeled.json", _envelope(metadata))
    result = scripted.runpytest(
        "--llmeval-runner", "scripted", "--llmeval-run-dir", "run",
        "--llmeval-tool-registry", "tools.json",
    )  # fmt: skip
    current = hashlib.sha256(description.encode()).hexdigest()[:12]
    result.stdout.fnmatch_lines(
        [
            "═══ get_weather — labeled evals*",
            f"  ⚠ Evals for get_weather generated against description hash abcdef123456, "
            f"current is {current}.*",
            "  ⚠ Registry has grown from 2 to 6 tools.*",
            "  ⚠ Tool get_weather is version 2.1.0, evals were generated for 1.4.0.*",
        ]
    )
    suite_result = json.loads(
        (_run_dir(scripted) / "toolforge" / "get_weather.labeled.json").read_text()
    )
    assert suite_result["metadata"]["registrySize"] == 6
    assert suite_result["metadata"]["toolVersion"] == "2.1.0"
    assert len(suite_result["stalenessWarnings"]) == 3


def test_baseline_diff_regressions_and_new_passes(scripted: pytest.Pytester) -> None:
    path = _setup(scripted)
    scripted.runpytest("--llmeval-runner", "scripted", "--llmeval-run-dir", "base")
    # flip two verdicts: tf-fail now passes, tf-stub now fails
    data = json.loads(path.read_text())
    data["cases"][2]["expect"] = {"responseContains": ["Hello"]}
    data["cases"][0]["expect"]["responseContains"] = ["42C"]
    path.write_text(json.dumps(data))
    result = scripted.runpytest(
        "--llmeval-runner", "scripted", "--llmeval-run-dir", "run", "--llmeval-baseline", "base"
    )
    result.stdout.fnmatch_lines(["  ⚠ REGRESSIONS (1): tf-stub", "  ✓ new passes (1): tf-fail"])
    base = json.loads((scripted.path / "base/toolforge/get_weather.golden.json").read_text())
    now = json.loads((_run_dir(scripted) / "toolforge" / "get_weather.golden.json").read_text())
    assert now["baselineRunId"] == base["runId"]
    assert (now["regressions"], now["newPasses"]) == (["tf-stub"], ["tf-fail"])


def test_invalid_expect_values_are_errors(scripted: pytest.Pytester) -> None:
    cases = [
        {"id": "a", "input": {"message": "x"}, "expect": {"toolsCalled": "get_weather"}},
        {"id": "b", "input": {"message": "x"}, "expect": {"responseMatches": ["(unclosed"]}},
        {
            "id": "c",
            "input": {"message": "x"},
            "expect": {"toolParams": [{"tool": "t", "paramName": "p", "assertion": "near"}]},
        },
        {"id": "d", "input": {"message": "x"}},
    ]
    # one line: every case starts on line 1
    (scripted.path / "t.golden.json").write_text(json.dumps({"metadata": {}, "cases": cases}))
    result = scripted.runpytest("--llmeval-runner", "echo", "-q")
    result.stdout.fnmatch_lines_random(
        [
            "t.golden.json:1: expect.toolsCalled: expected an array of strings, got a string",
            "t.golden.json:1: expect.responseMatches[[]0[]]: not a valid regular expression*",
            "t.golden.json:1: expect.toolParams[[]0[]].assertion: expected one of equals,*",
            "t.golden.json:1: expect: missing required field*",
        ]
    )
    result.assert_outcomes(errors=4)
