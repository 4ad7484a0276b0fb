"""Golden scorers (pure) and the golden suite's pass rules."""

from __future__ import annotations

import pytest

from pytest_llmeval.scoring import text
from tests.conftest import read_jsonl, write_json


@pytest.mark.parametrize(
    ("actual", "expected", "score"),
    [("  391\n", "391", 1.0), ("391.", "391", 0.0), ("Paris", "paris", 0.0), ("", "", 1.0)],
)
def test_exact_match(actual: str, expected: str, score: float) -> None:
    assert text.exact_match(actual, expected) == score


def test_contains_keywords_is_a_case_insensitive_share() -> None:
    assert text.contains_keywords("The Quick fox", ["quick", "FOX", "dog", "cat"]) == 0.5
    assert text.contains_keywords("anything", []) == 1.0


def test_regex_searches_anywhere() -> None:
    assert text.regex_match("total = 391 units", r"= \d+") == 1.0
    assert text.regex_match("total = x", r"^\d+$") == 0.0


@pytest.mark.parametrize(
    ("actual", "score"),
    [
        ('{"a": 1}', 1.0),
        ("[1, 2]", 1.0),
        ('```json\n{"a": 1}\n```', 1.0),
        ("{'a': 1}", 0.0),
        ("Here it is: {}", 0.0),
        ('```\n{"a": \n```', 0.0),
    ],
)
def test_json_valid(actual: str, score: float) -> None:
    assert text.json_valid(actual) == score


def test_min_scores_and_category_thresholds_decide(scripted: pytest.Pytester) -> None:
    write_json(
        scripted,
        "data/kw.json",
        [
            # echo answers with the input itself
            {"id": "half", "category": "loose", "input": "alpha beta",
             "keywords": ["alpha", "gamma"]},
            {"id": "strict", "category": "loose", "input": "alpha beta",
             "keywords": ["alpha", "gamma"], "min_scores": {"contains_keywords": 1.0}},
            {"id": "tight", "category": "tight", "input": "alpha beta",
             "keywords": ["alpha", "gamma"]},
            {"id": "json", "category": "loose", "input": "[1, 2]", "scorers": ["json_valid"],
             "min_scores": {"json_valid": 1.0}},
        ],
    )  # fmt: skip
    scripted.path.joinpath("kw.llmeval.yaml").write_text(
        "suite: golden\ndata: data/kw.json\nthresholds:\n"
        "  loose: {contains_keywords: 0.5}\n  tight: {contains_keywords: 0.9}\n"
    )
    result = scripted.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run", "-v")
    result.stdout.fnmatch_lines_random(
        [
            "kw.llmeval.yaml::half PASSED*",
            "kw.llmeval.yaml::strict FAILED*",
            "kw.llmeval.yaml::tight FAILED*",
            "kw.llmeval.yaml::json PASSED*",
        ]
    )
    rows = {r["case_id"]: r for r in read_jsonl(scripted.path / "run/results.jsonl")}
    assert rows["strict"]["error"] == 'contains_keywords: 0.50 < 1.00 (missing ["gamma"])'
    assert rows["json"]["scores"] == {"json_valid": 1.0}
    assert rows["half"]["file"] == "data/kw.json"


def test_a_case_with_nothing_to_check_is_an_error(scripted: pytest.Pytester) -> None:
    write_json(scripted, "x.golden.json", [{"id": "a", "input": "hi", "expected_output": None}])
    result = scripted.runpytest("--llmeval-runner", "echo", "-q")
    result.stdout.fnmatch_lines(
        ["x.golden.json:2: expected_output: the case has nothing to check*"]
    )
    result.assert_outcomes(errors=1)


def test_messages_input_and_id_fallback(scripted: pytest.Pytester) -> None:
    row = {
        "input": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hello"},
        ],
        "expected_output": "hello",
    }
    write_json(scripted, "m.golden.json", [row])
    result = scripted.runpytest("--llmeval-runner", "echo", "-v")
    result.stdout.fnmatch_lines(["m.golden.json::h* PASSED*"])
