"""report.html's data block: each case's row is built once, and the texts it shares are the
ones the rows, walked whole, would share (a text met twice is in ``strings`` once)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from pytest_llmeval.core.models import CaseResult, ToolCallRecord
from pytest_llmeval.report.html import cases
from tests.report.test_html import make_results, rich_results


def _reference(results: list[CaseResult], limit: int) -> str:
    """The data block as the page made it before: every row built whole, walked for its
    shareable texts, then built and walked again to put the repeated ones' numbers in."""

    def texts(value: Any) -> Any:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in cases.TEXT_KEYS and isinstance(item, str):
                    if len(item) >= cases.MIN_SHARED:
                        yield item
                else:
                    yield from texts(item)
        elif isinstance(value, list):
            for item in value:
                yield from texts(item)

    def digest(text: str) -> bytes:
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def shared(value: Any) -> Any:
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                if key in cases.TEXT_KEYS and isinstance(item, str) and len(item) >= 48:
                    if digest(item) in repeated:
                        item = index.setdefault(digest(item), len(table))
                        if item == len(table):
                            table.append(value[key])
                    out[key] = item
                else:
                    out[key] = shared(item)
            return out
        return [shared(item) for item in value] if isinstance(value, list) else value

    seen: set[bytes] = set()
    repeated: set[bytes] = set()
    for result in results:
        for text in texts(cases.case_row(result, limit)):
            (repeated if digest(text) in seen else seen).add(digest(text))
    index: dict[bytes, int] = {}
    table: list[str] = []
    rows = [shared(cases.case_row(result, limit)) for result in results]
    block = {"version": 2, "max_chars": limit, "cases": rows, "strings": table}
    return cases._script_safe(cases._COMPACT.encode(block))


def _assorted() -> list[CaseResult]:
    """Agent cases (a shared system prompt, tool schema and results), plain ones, their kept
    forms (packed fields), and texts repeated across fields, clipped, or under the limit."""
    results = [*rich_results(40), *make_results(60)]
    results += [CaseResult.kept(r.model_dump(mode="json")) for r in results[::3]]
    same = "the same long text, met as an error, a response and a tool's result " * 2
    results.append(
        CaseResult(
            case_id="mixed", suite="golden", file="evals/x.jsonl", line=1,
            nodeid="evals/x.jsonl::mixed", outcome="error", passed=False, error=same,
            response=same, details={"note": same, "n": [1, 2]},
            transcript=[{"role": "assistant", "tool_calls": [
                {"name": "f", "arguments": same, "arguments_error": same}]}],
            tool_calls=[ToolCallRecord(name="f", params={"q": same}, result=same,
                                       arguments_error=same)],
        )
    )  # fmt: skip
    return results


@pytest.mark.parametrize("limit", [cases.MAX_CHARS, 60, 20])
def test_the_data_block_shares_what_the_whole_rows_would(limit: int) -> None:
    results = _assorted()
    block = "".join(cases.cases_json_pieces(results, limit))
    assert block == _reference(results, limit)
    if limit == cases.MAX_CHARS:
        assert len(json.loads(block)["strings"]) > 3  # the test shares texts at all


def test_each_row_is_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first pass builds only the parts of a row that hold texts; the row is built
    whole once, when it is written."""
    built: list[str] = []
    case_row = cases.case_row

    def counted(result: CaseResult, *args: Any) -> dict[str, Any]:
        built.append(result.case_id)
        return case_row(result, *args)

    monkeypatch.setattr(cases, "case_row", counted)
    results = rich_results(50)
    list(cases.cases_json_pieces(results, cases.MAX_CHARS))
    assert built == [result.case_id for result in results]
