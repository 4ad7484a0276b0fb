"""Our BFCL checker against the official one: every parity vector must get the same verdict.

``vectors.jsonl`` holds real BFCL rows' replies (correct and mutated) with the verdict the
official ``bfcl-eval==2026.3.23`` pipeline gave them (``make_vectors.py`` regenerates it);
the rows themselves are the sample in ``tests/data/bfcl/``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.scoring.bfcl import language_of, score_ast, score_relevance
from pytest_llmeval.scoring.bfcl.checker import CHECKER_ERROR
from pytest_llmeval.scoring.bfcl.relevance import is_relevance_category

HERE = Path(__file__).parent
DATA = HERE.parents[1] / "data" / "bfcl"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _rows() -> dict[tuple[str, str], tuple[dict[str, Any], list[Any] | None]]:
    rows: dict[tuple[str, str], tuple[dict[str, Any], list[Any] | None]] = {}
    for path in sorted(DATA.glob("BFCL_v4_*.json")):
        category = path.stem.removeprefix("BFCL_v4_")
        truth_path = DATA / "possible_answer" / path.name
        truths = (
            {t["id"]: t["ground_truth"] for t in _jsonl(truth_path)} if truth_path.exists() else {}
        )
        for row in _jsonl(path):
            rows[category, row["id"]] = (row, truths.get(row["id"]))
    return rows


ROWS = _rows()
VECTORS = _jsonl(HERE / "vectors.jsonl")
TREE = [v for v in VECTORS if v["mode"] == "prompt" and language_of(v["category"]) != "python"]
"""Java and JavaScript prompt-mode vectors: they need the tree-sitter readers (``bfcl`` extra)."""


def _ours(vector: dict[str, Any]) -> tuple[bool, str | None]:
    row, truth = ROWS[vector["category"], vector["id"]]
    output = vector["output"]
    if vector["mode"] == "fc" and isinstance(output, list):
        output = [(name, arguments) for name, arguments in output]
    if is_relevance_category(vector["category"]):
        verdict = score_relevance(vector["category"], output, vector["mode"])
    else:
        assert truth is not None
        verdict = score_ast(vector["category"], row["function"], truth, output, vector["mode"])
    return verdict.valid, verdict.error_type


def _official(vector: dict[str, Any]) -> tuple[bool, str | None]:
    if vector.get("crash"):
        return False, CHECKER_ERROR
    return vector["valid"], None if vector["valid"] else vector["error_type"]


def _mismatches(vectors: list[dict[str, Any]]) -> str:
    mismatches = [
        (v["category"], v["id"], v["mode"], v["mutation"], _official(v), ours)
        for v in vectors
        if (ours := _ours(v)) != _official(v)
    ]
    shown = "\n".join(map(str, mismatches[:20]))
    return f"{len(mismatches)}/{len(vectors)} vectors differ:\n{shown}" if mismatches else ""


def test_every_vector_gets_the_official_verdict() -> None:
    assert not _mismatches([v for v in VECTORS if v not in TREE])


def test_every_java_and_javascript_prompt_vector_gets_the_official_verdict() -> None:
    pytest.importorskip("tree_sitter")
    assert not _mismatches(TREE)


def test_the_vectors_cover_every_single_turn_category_and_both_modes() -> None:
    seen = Counter((v["category"], v["mode"]) for v in VECTORS)
    categories = {category for category, _ in ROWS if not category.startswith("multi_turn")}
    for category in categories:
        assert seen[category, "fc"] > 0, category
        assert seen[category, "prompt"] > 0, category
    assert {v["valid"] for v in VECTORS} == {True, False}


@pytest.mark.parametrize(
    "error_type",
    [
        "ast_decoder:decoder_failed",
        "ast_decoder:decoder_wrong_output_format",
        "simple_function_checker:wrong_count",
        "simple_function_checker:wrong_func_name",
        "simple_function_checker:missing_required",
        "simple_function_checker:unexpected_param",
        "simple_function_checker:missing_optional",
        "multiple_function_checker:wrong_count",
        "parallel_function_checker_no_order:wrong_count",
        "parallel_function_checker_no_order:cannot_find_match",
        "type_error:simple",
        "type_error:nested",
        "type_error:java",
        "type_error:js",
        "value_error:string",
        "value_error:list/tuple",
        "value_error:dict_key",
        "value_error:dict_value",
        "value_error:others",
        "irrelevance_error:decoder_success",
        "relevance_error:decoder_failed",
    ],
)
def test_the_vectors_reach_each_official_error_type(error_type: str) -> None:
    assert any(v["error_type"] == error_type for v in VECTORS)
