"""Fail closed on inputs: every data row is collected once, secrets in a base URL stay out of
every artifact, support files are read through one capped reader, and small file shapes.

Each entry drives a real session through pytester and asserts the exit status, which cases
are in ``results.jsonl``, the gates' statuses in ``report.json`` and, where a file could be
lost, that it is still there.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from conftest import read_jsonl

GATE = ("--llmeval-gate", "golden.pass_rate>=0.5")


def _jsonl(*rows: Any) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


def _row(case_id: Any = None, text: str = "same") -> dict[str, Any]:
    row: dict[str, Any] = {"input": text, "expected_output": text}
    if case_id is not None:
        row["id"] = case_id
    return row


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    if "--llmeval-runner" not in args:
        args = ("--llmeval-runner", "echo", *args)
    return pytester.runpytest(*args, "--llmeval-run-dir", "run", "-p", "no:cacheprovider", "-rA")


def _results(pytester: pytest.Pytester) -> list[dict[str, Any]]:
    return read_jsonl(pytester.path / "run" / "results.jsonl")


def _gates(pytester: pytest.Pytester) -> dict[str, str]:
    report = json.loads((pytester.path / "run" / "report.json").read_text(encoding="utf-8"))
    gates = (report.get("gates") or {}).get("results", [])
    return {g["gate"]["name"]: g["status"] for g in gates}


def _outcomes(rows: list[dict[str, Any]]) -> dict[str, str]:
    return {r["nodeid"]: r["outcome"] for r in rows}


# ---------------------------------------------------------------- every row collected once

ROWS_ONCE = [
    pytest.param(
        "c.eval.jsonl",
        _jsonl(_row("x@line3"), _row("x"), _row("x")),
        {"x@line3": "passed", "x": "passed", "x@line3_": "error"},
        id="a-duplicate's-name-is-a-real-id",
    ),
    pytest.param(
        "c.eval.jsonl",
        _jsonl("{not json", _row("line1")),
        {"line1": "passed", "line1_": "error"},
        id="a-broken-line's-name-is-a-later-real-id",
    ),
    pytest.param(
        "c.eval.jsonl",
        _jsonl(_row("x"), _row("x"), _row("x@line2"), _row("x@line2_")),
        {"x": "passed", "x@line2": "passed", "x@line2_": "passed", "x@line2__": "error"},
        id="suffixes-also-taken",
    ),
    pytest.param(
        "c.golden.json",
        json.dumps(["not an object", _row("line1"), _row("x"), _row("x")]),
        {"line1": "passed", "x": "passed", "line1_": "error", "x@line1": "error"},
        id="json-array-one-line",
    ),
    pytest.param(
        "c.eval.jsonl",
        _jsonl(_row(None, "no id"), _row("PLACEHOLDER", "real")),
        {"PLACEHOLDER": "passed", "PLACEHOLDER@line1": "error"},
        id="an-id-less-row's-hash-is-a-real-id",
    ),
]


@pytest.mark.parametrize(("name", "content", "expected"), ROWS_ONCE)
def test_every_row_is_collected_exactly_once(
    pytester: pytest.Pytester, name: str, content: str, expected: dict[str, str]
) -> None:
    """A name the plugin makes up (a duplicate's ``@lineN``, a broken line's ``lineN``, an
    id-less row's hash, a ``_`` suffix) never takes a real case's id: N rows, N results."""
    if "PLACEHOLDER" in content:
        from pytest_llmeval.suites.base import fallback_case_id

        hashed = fallback_case_id(_row(None, "no id"))
        content = content.replace("PLACEHOLDER", hashed)
        expected = {k.replace("PLACEHOLDER", hashed): v for k, v in expected.items()}
    (pytester.path / name).write_text(content, encoding="utf-8")
    result = _run(pytester, *GATE)
    assert result.ret == 1  # the broken or duplicate rows are errors
    rows = _results(pytester)
    assert _outcomes(rows) == {f"{name}::{k}": v for k, v in expected.items()}
    assert len(rows) == len(expected)  # one result per row, none lost
    assert _gates(pytester) == {"golden.pass_rate>=0.5": "passed"}
    nodeids = [r["nodeid"] for r in rows]
    assert nodeids == sorted(nodeids)


def test_a_gaia_row_without_an_id_never_takes_a_real_id(pytester: pytest.Pytester) -> None:
    """GAIA names an id-less row ``row<index>``; a row whose own id is that keeps it."""
    rows = [
        {"Question": "q0", "Final answer": "a", "Level": 1},
        {"task_id": "row0", "Question": "q1", "Final answer": "b", "Level": 1},
    ]
    (pytester.path / "g").mkdir()
    (pytester.path / "g" / "metadata.jsonl").write_text(_jsonl(*rows), encoding="utf-8")
    manifest = {"suite": "gaia", "data": "g/metadata.jsonl"}
    (pytester.path / "g.llmeval.yaml").write_text(yaml.safe_dump(manifest), encoding="utf-8")
    result = _run(pytester)
    assert result.ret == 1  # echo gives no FINAL ANSWER: both are scored misses
    outcomes = _outcomes(_results(pytester))
    assert outcomes == {"g.llmeval.yaml::row0": "failed", "g.llmeval.yaml::row0_": "failed"}


# ------------------------------------------------------------------------------ small ones


def test_a_golden_file_holding_an_empty_array_is_an_empty_suite(
    pytester: pytest.Pytester,
) -> None:
    (pytester.path / "empty.golden.json").write_text("[]\n", encoding="utf-8")
    (pytester.path / "blank.golden.json").write_text("  \n", encoding="utf-8")
    (pytester.path / "ok.golden.json").write_text(json.dumps([_row("ok")]), encoding="utf-8")
    result = _run(pytester)
    assert result.ret == 0, result.stdout.str()
    assert "no suite recognises" not in result.stdout.str()
    assert _outcomes(_results(pytester)) == {"ok.golden.json::ok": "passed"}


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        (
            "bad.golden.json",
            '[\n  {"id": "a", "input": "a", "expected_output": "a"},\n  {"id": "b",, }\n]\n',
            "bad.golden.json:3: invalid JSON: Expecting property name enclosed in double "
            "quotes (column 14)",
        ),
        ("bad.golden.json", '[{"id": "a", "input": ', "bad.golden.json:1: invalid JSON"),
        ("bad.golden.json", "{\n  oops\n", "bad.golden.json:2: invalid JSON"),
        ("bad.eval.jsonl", "{oops\n", "bad.eval.jsonl:1: invalid JSON"),
    ],
    ids=["array-row", "cut-short", "not-an-object", "jsonl"],
)
def test_a_file_with_a_json_syntax_error_says_where(
    pytester: pytest.Pytester, name: str, content: str, message: str
) -> None:
    """A file found by its name with broken JSON reports the syntax error and its line, not
    ``no suite recognises this file``; the good file still runs and the run is red."""
    (pytester.path / name).write_text(content, encoding="utf-8")
    (pytester.path / "ok.golden.json").write_text(json.dumps([_row("ok")]), encoding="utf-8")
    result = _run(pytester, *GATE)
    out = result.stdout.str()
    assert message in out, out
    assert "no suite recognises" not in out
    assert result.ret == 1
    rows = _results(pytester)
    assert _outcomes(rows)["ok.golden.json::ok"] == "passed"
    assert [r["outcome"] for r in rows if r["file"] == name] in (["error"], ["passed", "error"])
