"""What a BFCL case costs per item: built once, never parsed again, copied fast, aliasing nothing.

A BFCL case carries its function docs (the item, the tools of its request). The suite builds
the item's model once, when it makes the case, and keeps it on the case's
:class:`~pytest_llmeval.core.models.BfclTask` (``bfcl_conversation.keeping``): the agent
(``engine/bfcl_agent.py``) and the scorer read that model instead of validating the item's
dump again per case; a task read back from JSON (no model kept) is validated as before. The
conversation builders copy the docs with :func:`~pytest_llmeval.suites.bfcl_conversation.fresh`
(JSON data, new containers all the way down), so a request never aliases its item.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.core.case_context import case_scope
from pytest_llmeval.core.fingerprint import canonical_json
from pytest_llmeval.core.models import EvalCase
from pytest_llmeval.engine.bfcl_agent import run_bfcl
from pytest_llmeval.runners.base import Completion, GenerateRequest
from pytest_llmeval.suites import bfcl_conversation as conv
from pytest_llmeval.suites.base import CaseSource
from pytest_llmeval.suites.bfcl import BfclSuite, _as_json
from pytest_llmeval.suites.bfcl_data import read_data, select_categories
from pytest_llmeval.suites.bfcl_rows import BfclItem

DATA = Path(__file__).parents[1] / "data" / "bfcl"
CATEGORIES = ["simple_python", "simple_java", "parallel", "irrelevance", "live_multiple"]
ITEMS = read_data(DATA, CATEGORIES).items
SOURCE = CaseSource(path=DATA, display="bfcl_data", options={"data": "bfcl_data"})


class FirstCallRunner:
    """Answers every request with a call of its first tool, no arguments (FC mode)."""

    name = "first-call"

    def fingerprint(self) -> dict[str, Any]:
        return {"type": "first-call"}

    async def generate(self, request: GenerateRequest) -> Completion:
        name = request.tools[0].name if request.tools else "none"
        call = {"id": "c0", "type": "function", "function": {"name": name, "arguments": "{}"}}
        return Completion(message={"role": "assistant", "content": None, "tool_calls": [call]})

    async def aclose(self) -> None:
        return None


def _run(case: EvalCase) -> Any:
    async def main() -> Any:
        with case_scope():
            return await run_bfcl(FirstCallRunner(), case)

    return asyncio.run(main())


def _verdicts(cases: list[EvalCase]) -> list[tuple[bool, str | None]]:
    suite = BfclSuite()
    out = []
    for case in cases:
        score = suite.score(case, _run(case), None)  # type: ignore[arg-type]
        out.append((score.passed, score.details.get("error_type")))
    return out


def test_the_agent_and_the_scorer_never_parse_the_item_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    suite = BfclSuite()
    cases = [suite._case(SOURCE, item, "fc") for item in ITEMS]
    expected = _verdicts(
        [EvalCase.model_validate(json.loads(case.model_dump_json())) for case in cases]
    )
    validated: list[Any] = []
    real = BfclItem.model_validate.__func__  # type: ignore[attr-defined]

    def counted(cls: type[BfclItem], obj: Any, *args: Any, **kwargs: Any) -> BfclItem:
        validated.append(obj)
        return real(cls, obj, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(BfclItem, "model_validate", classmethod(counted))
    assert _verdicts(cases) == expected  # the same verdicts as from a task read back
    assert validated == []
    for case in cases:
        assert case.bfcl is not None and conv.task_item(case.bfcl) is not None
    assert validated == []


def test_a_task_read_back_from_json_is_validated() -> None:
    case = BfclSuite()._case(SOURCE, ITEMS[0], "fc")
    assert case.bfcl is not None and conv.task_item(case.bfcl) is ITEMS[0]
    again = EvalCase.model_validate(json.loads(case.model_dump_json()))
    assert again.bfcl is not None and again.bfcl._parsed is None
    assert "_parsed" not in case.model_dump_json()
    assert conv.task_item(again.bfcl) == ITEMS[0]
    assert again.fingerprint == case.fingerprint


def test_a_case_and_its_requests_alias_nothing_of_the_item() -> None:
    """The tools and messages of a case are fresh copies: changing them in place changes
    neither the item nor the next case built from it."""
    item = next(i for i in ITEMS if i.category == "simple_java")
    before = item.model_dump(mode="json")
    case = BfclSuite()._case(SOURCE, item, "fc")
    for tool in case.tools:
        for prop in tool.parameters["properties"].values():
            prop["description"] = "changed"
            prop.clear()
    tools = conv.tools_for(item, "fc")
    assert tools is not None
    tools[0]["function"]["parameters"]["properties"].clear()
    conv.first_messages(item, "fc")[0]["content"] = "changed"
    echo = {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}
    copied = conv.assistant_echo(echo)
    copied["tool_calls"][0]["function"]["name"] = "g"
    assert echo["tool_calls"][0]["function"]["name"] == "f"  # type: ignore[index]
    assert item.model_dump(mode="json") == before
    rebuilt = BfclSuite()._case(SOURCE, item, "fc")
    assert rebuilt.tools == BfclSuite()._case(SOURCE, item, "fc").tools != case.tools


def test_fresh_copies_json_data_and_deep_copies_anything_else() -> None:
    data = {"a": [1, 2.5, "x", None, True, {"b": []}], "c": {"d": {"e": "f"}}}
    copied = conv.fresh(data)
    assert copied == data and copied is not data
    assert copied["a"] is not data["a"] and copied["a"][5] is not data["a"][5]
    assert copied["c"]["d"] is not data["c"]["d"]
    odd = {"t": ([1],), "s": {1}}
    other = conv.fresh(odd)
    assert other == odd and other["t"][0] is not odd["t"][0] and other["s"] is not odd["s"]


def test_a_cases_item_json_is_the_items_dump() -> None:
    """The case's task holds the item as JSON (what its fingerprint hashes): byte for byte
    ``model_dump(mode="json")``, for every vendored item, multi-turn ones included."""
    for item in read_data(DATA, select_categories(DATA, None)).items:
        dumped = item.model_dump(mode="json")
        assert _as_json(item) == dumped
        assert canonical_json(_as_json(item)) == canonical_json(dumped)
    case = BfclSuite()._case(SOURCE, ITEMS[0], "fc")
    assert case.bfcl is not None and case.bfcl.item == ITEMS[0].model_dump(mode="json")


def test_a_collected_item_waits_as_json_and_comes_back_exactly(tmp_path: Path) -> None:
    """A collected item waits for its case as one JSON string, not as ~40 live objects (the
    garbage collector walked every collected item's docs again), and is read back equal to
    the item collection parsed, down to values pydantic's own JSON would change: NaN,
    infinity, -0.0, an integer past 64 bits."""
    import math

    data = tmp_path / "bfcl_data"
    (data / "possible_answer").mkdir(parents=True)
    doc = {
        "name": "f",
        "description": "odd values \u00e9",
        "parameters": {
            "type": "dict",
            "properties": {"x": {"type": "float", "description": "x", "default": float("nan")}},
            "required": [],
        },
        "extra": {"zero": -0.0, "big": 2**70, "inf": float("inf")},
    }
    row = {"id": "simple_python_0", "question": [[{"role": "user", "content": "q"}]]}
    (data / "BFCL_v4_simple_python.json").write_text(json.dumps({**row, "function": [doc]}) + "\n")
    truth = {"id": "simple_python_0", "ground_truth": [{"f": {"x": [1.0]}}]}
    (data / "possible_answer" / "BFCL_v4_simple_python.json").write_text(json.dumps(truth) + "\n")
    (collected,) = read_data(data, ["simple_python"]).items
    make = BfclSuite()._maker(SOURCE, collected, "fc")
    kept = [cell.cell_contents for cell in make.__closure__ or ()]
    assert not any(isinstance(value, BfclItem) for value in kept)  # no parsed item kept
    case = make(1, {})
    assert case.bfcl is not None
    built = conv.task_item(case.bfcl)
    extra = built.functions[0]["extra"]
    assert math.isnan(built.functions[0]["parameters"]["properties"]["x"]["default"])
    assert math.copysign(1.0, extra["zero"]) == -1.0 and extra["big"] == 2**70
    assert built.functions[0]["description"] == "odd values \u00e9"
    assert canonical_json(_as_json(built)) == canonical_json(_as_json(collected))
