"""The tool-integration suite: a worked example's numbers, hand-computed items through the
real agent loop and broker, collection, gates and a contaminated control failing the session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.scoring.grounding import (
    SpanText,
    extract_spans,
    facts_of,
    lax_match,
    numbers_in,
)
from pytest_llmeval.scoring.integration import Call, ItemConfig, score_item
from pytest_llmeval.suites.integration_metrics import aggregate
from tests.conftest import read_jsonl, write_json, write_jsonl

SUMMARY = "RoPE keeps precision at long context"
RESULT_A = {"ok": True, "summary": SUMMARY, "lines": 128, "title": "Notes on RoPE scaling"}
SEQ = [{"name": "read_file"}]


def _item(text: str, result: Any = RESULT_A, **meta: Any) -> dict[str, Any]:
    calls = [Call("read_file", {"path": "notes.md"}, result)]
    meta = {"expected_behaviour": "normal", "call_sequence": SEQ, **meta}
    schemas = {"read_file": {"type": "object", "properties": {"path": {"type": "string"}}}}
    return score_item(text, calls, meta, schemas, ItemConfig())


def _result(i: int, details: dict[str, Any]) -> CaseResult:
    return CaseResult(
        case_id=f"i{i}",
        suite="integration",
        file="d.integration.jsonl",
        line=i,
        nodeid=f"d::i{i}",
        outcome="passed" if details["passed"] else "failed",
        passed=details["passed"],
        details=details,
    )


# -- spans ------------------------------------------------------------------------------------


def test_spans_are_code_point_intervals_without_their_end_marker() -> None:
    text = (
        "Intro.\nIntegration: it takes 3.5 s. Then Integration: caf\u00e9 \u2603 ok! "
        "Integration: last"
    )
    spans = extract_spans(text)
    assert [text[a:b] for a, b in spans.kept] == ["it takes 3.5 s", "caf\u00e9 \u2603 ok", "last"]
    ended = "Integration: the claim is supported."
    assert [ended[a:b] for a, b in extract_spans(ended).kept] == ["the claim is supported"]
    broken = "Integration: no terminator\nNext line."
    assert [broken[a:b] for a, b in extract_spans(broken).kept] == ["no terminator"]
    many = " ".join(f"Integration: fact {i}." for i in range(5))
    capped = extract_spans(many, cap=3)
    assert (len(capped.kept), capped.total, capped.exceeded_cap) == (3, 5, True)


def test_numbers_are_read_one_token_at_a_time_in_the_locale() -> None:
    assert [n.value for n in numbers_in("1.280,5 y 7", "de")] == [1280.5, 7]
    assert [n.value for n in numbers_in("1,280.5 and 1280", "en")] == [1280.5, 1280]
    assert [n.value for n in numbers_in("1\u202f280,5 %", "fr")] == [1280.5]
    assert numbers_in("95,5 %", "de")[0].percent
    assert numbers_in("1.280,5", "en") == []  # never half a German number


# -- a worked example, checked by hand ---------------------------------------------------------


A = (
    f"Integration: {SUMMARY}. Integration: The file has 128 lines. "
    "Integration: see Notes on RoPE scaling."
)
B = "Integration: it is sunny today. Integration: nothing else matters."
C = f"Integration: {SUMMARY}."


def test_worked_items_a_b_c() -> None:
    a, b, c = _item(A), _item(B), _item(C)
    assert (a["lax"]["f1"], a["strict"]["precision"]) == (1.0, pytest.approx(2 / 3))
    assert a["strict"]["f1"] == pytest.approx(0.8)
    assert (b["lax"]["f1"], b["strict"]["f1"]) == (0.0, 0.0)
    assert (c["lax"]["f1"], c["strict"]["f1"]) == (1.0, 1.0)
    assert a["grounded_strict"][2] is None and a["grounded"][2].endswith("'Notes on RoPE scaling'")
    m = aggregate([_result(i, d) for i, d in enumerate((a, b, c))])
    assert m["lax"]["macro_f1"] == pytest.approx(0.667, abs=1e-3)
    assert m["lax"]["micro_f1"] == pytest.approx(0.667, abs=1e-3)
    assert m["strict"]["macro_f1"] == pytest.approx(0.600, abs=1e-3)
    assert m["strict"]["micro_f1"] == pytest.approx(0.571, abs=1e-3)
    assert m["eligible"] == 3 and m["integration_coverage"] == 1.0
    assert m["grounded_coverage"] == pytest.approx(2 / 3, abs=1e-6)


def test_grounding_edge_cases() -> None:
    # "1280" never grounds a fact of 128 (numbers are whole tokens, compared by value)
    assert _item("Integration: the file has 1280 lines.")["lax"]["f1"] == 0.0
    # decimals inside a span, a span that ends the text
    result = {"ok": True, "summary": "x", "count": 3.5}
    assert _item("Integration: it took 3.5 seconds", result)["strict"]["f1"] == 1.0
    # a German number, read with the item's locale
    de = {"ok": True, "count": 1280.5}
    item = _item("Integration: insgesamt 1.280,5 Zeilen.", de, locale="de", locale_probe=True)
    assert (item["lax"]["f1"], item["strict"]["f1"], item["locale_ok"]) == (1.0, 1.0, True)
    wrong = _item(
        "Integration: insgesamt 1.280,5 und 7 Zeilen.", de, locale="de", locale_probe=True
    )
    assert wrong["locale_ok"] is False  # 7 is in no fact
    # a boolean is never a fact: "true" does not ground (the reference grounds it on ok: "True")
    flags = {"ok": True, "cached": True, "summary": "the model card"}
    assert _item("Integration: that claim is true for most models.", flags)["lax"]["f1"] == 0.0
    # nested search results: lax through the snippet, never strict (not keyed)
    hits = {
        "ok": True,
        "hits": [
            {"title": "RoPE", "snippet": "rope scaling keeps precision", "url": "https://ex.org/a"}
        ],
    }
    nested = _item("Integration: rope scaling keeps precision.", hits)
    assert (nested["lax"]["f1"], nested["strict"]["f1"]) == (1.0, 0.0)
    assert _item("Integration: see ex.org/a for more.", hits)["lax"]["f1"] == 1.0
    # a whole-token match only
    assert not lax_match(facts_of({"summary": "rope"}, "t", 0)[0], SpanText("ropes are long"))


def test_controls_negative_controls_and_recovery_by_hand() -> None:
    control = score_item(
        "Integration: I looked it up.", [Call("read_file", {"path": "a"}, RESULT_A)],
        {"expected_behaviour": "no_tool"}, {"read_file": {}}, ItemConfig(),
    )  # fmt: skip
    assert (control["contaminated"], control["kind"]) == (True, "control")
    decoy = {"ok": False, "error": "No results found"}
    meta = {"negative_control": True, "call_sequence": SEQ, "prompt_text": "Find Zorblax."}
    calls = [Call("read_file", {"path": "a"}, decoy)]
    empty = score_item("", calls, meta, {"read_file": {}}, ItemConfig())
    assert empty["negative_ok"] is False  # an empty answer acknowledges nothing
    said = score_item(
        "I couldn't find anything on Zorblax.", calls, meta, {"read_file": {}}, ItemConfig()
    )
    assert said["negative_ok"] is True
    invented = score_item(
        "I couldn't find it. Integration: Zorblax was founded by Quentin in 1999.",
        calls, meta, {"read_file": {}}, ItemConfig(),
    )  # fmt: skip
    assert invented["negative_ok"] is False
    fail = {"ok": False, "error": "404"}
    good = {"ok": True, "summary": "the fixed page"}
    retry = {"complexity": "branching_error_recovery", "call_sequence": ["web.open", "web.open"]}
    same = [Call("web.open", {"url": "a"}, fail), Call("web.open", {"url": "a"}, good)]
    other = [Call("web.open", {"url": "a"}, fail), Call("web.open", {"url": "b"}, good)]
    text = "Integration: the fixed page."
    assert score_item(text, same, retry, {"web.open": {}}, ItemConfig())["recovered"] is False
    assert score_item(text, other, retry, {"web.open": {}}, ItemConfig())["recovered"] is True


# -- through pytest ----------------------------------------------------------------------------

TOOLS = {
    "tools": [
        {
            "name": "read_file",
            "description": "Read a file",
            "version": "1.0.0",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
                "additionalProperties": False,
            },
        },
        {
            "name": "web.search",
            "description": "Search the web",
            "version": "1.0.0",
            "parameters": {
                "type": "object",
                "properties": {"q": {"type": "string"}, "top_k": {"type": "integer"}},
                "required": ["q"],
            },
        },
    ]
}
FIXTURES = [
    {"name": "read_file", "key": {"path": "notes.md"}, "result": RESULT_A},
    {
        "name": "web.search",
        "key": {"q": "rope precision", "top_k": 3},
        "result": {"ok": True, "hits": [{"title": "RoPE", "snippet": "rope keeps precision"}]},
    },
]

# The model: a script per prompt, one step per model call (a call, or the final text).
MODEL_CONFTEST = """
import json
import pathlib
from pytest_llmeval.core.models import ToolCall
from pytest_llmeval.runners.base import Completion

SCRIPTS = json.loads(pathlib.Path("scripts.json").read_text())

class Scripted:
    name = "steps"
    def fingerprint(self):
        return {"type": "steps"}
    async def aclose(self):
        pass
    async def generate(self, request):
        user = next(m.content for m in request.messages if m.role == "user")
        turn = sum(1 for m in request.messages if m.role == "assistant")
        step = SCRIPTS[user][turn]
        if isinstance(step, str):
            return Completion(text=step)
        return Completion(tool_calls=[ToolCall(id=f"c{turn}", name=step[0], arguments=step[1])])

def pytest_llmeval_register_runners(registry):
    registry.register("steps", lambda settings: Scripted())
"""


def _dataset(pytester: pytest.Pytester, items: list[dict[str, Any]], **header: Any) -> Path:
    head = {"integration_span_cap": 3, "min_eligible_for_gates": 2, **header}
    return write_jsonl(pytester, "data.integration.jsonl", [{"__header__": head}, *items])


@pytest.fixture
def loop(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\nllmeval_tool_registry = tools.json\n")
    pytester.makeconftest(MODEL_CONFTEST)
    write_json(pytester, "tools.json", TOOLS)
    write_jsonl(pytester, "fixtures/tools/tools.jsonl", FIXTURES)
    return pytester


def _scripts(pytester: pytest.Pytester, scripts: dict[str, list[Any]]) -> None:
    write_json(pytester, "scripts.json", scripts)


ITEMS = [
    {"sample_id": "a", "prompt": "item A", "call_sequence": SEQ, "tools": ["read_file"]},
    {"sample_id": "b", "prompt": "item B", "call_sequence": SEQ},
    {"sample_id": "c", "prompt": "item C", "call_sequence": SEQ},
    {"sample_id": "ctl", "prompt": "say hello", "expected_behaviour": "no_tool"},
    {
        "sample_id": "multi",
        "prompt": "two calls",
        "call_sequence": [{"name": "web.search"}, {"name": "read_file"}],
        "complexity": "multi_step",
    },
]
SCRIPTS = {
    "item A": [["read_file", {"path": "notes.md"}], A],
    "item B": [["read_file", {"path": " notes.md"}], B],  # a fixture miss: no facts
    "item C": [["read_file", {"path": "notes.md"}], C],
    "say hello": ["Hello there!"],
    "two calls": [
        ["web.search", {"q": "  ROPE precision "}],
        ["read_file", {"path": "notes.md"}],
        f"Integration: {SUMMARY}.",
    ],
}


def test_a_dataset_runs_through_the_loop_and_reports(loop: pytest.Pytester) -> None:
    _dataset(loop, ITEMS)
    _scripts(loop, SCRIPTS)
    result = loop.runpytest("--llmeval-runner", "steps", "-p", "no:cacheprovider")
    # a: every span grounded; b: none; c, ctl, multi: pass; the gates hold but one: the data
    # has no negative control, so that gate has nothing to judge and fails
    result.assert_outcomes(passed=4 + 6, failed=1 + 1)
    out = result.stdout.str()
    assert "negative_control_ok_rate = n/a (threshold 1): nothing to judge" in out
    assert "ungrounded span(s): 'it is sunny today'; 'nothing else matters'" in out
    (run,) = [p for p in (loop.path / ".llmeval" / "runs").iterdir() if p.name != "latest"]
    rows = {r["case_id"]: r for r in read_jsonl(run / "results.jsonl")}
    starts = [A.index(x) for x in (SUMMARY, "The file", "see Notes")]
    ends = [A.index(x) + len(x) for x in (SUMMARY, "128 lines", "RoPE scaling")]
    assert rows["a"]["details"]["spans"] == [[a, b] for a, b in zip(starts, ends, strict=True)]
    assert rows["a"]["details"]["strict"]["f1"] == pytest.approx(0.8)
    assert rows["multi"]["details"]["parity_ok"] is True
    assert rows["ctl"]["category"] == "no_tool"
    report = json.loads((run / "report.json").read_text())
    body = report["suites"]["integration"]
    assert body["eligible"] == 4 and body["controls"] == 1
    assert body["controls_with_integration"] == 0
    assert body["json_args_validity"] == 1.0 and body["multi_call_parity"] == 1.0
    assert body["fixture_hit_rate"] == pytest.approx(4 / 5)
    names = [g["gate"]["name"] for g in report["gates"]["results"]]
    assert "integration.controls_with_integration==0" in names
    assert (run / "integration" / "data.integration.json").is_file()
    seed = json.loads((run / "integration" / "data.integration.json").read_text())
    assert seed["report_version"] == "1.0.0" and seed["num_eligible"] == 4
    marked = loop.runpytest("--llmeval-runner", "steps", "-m", "multi_step", "--co", "-q")
    marked.stdout.fnmatch_lines(["data.integration.jsonl::multi"])


def test_a_contaminated_control_fails_the_session_and_is_named(loop: pytest.Pytester) -> None:
    _dataset(loop, ITEMS)
    _scripts(
        loop, {**SCRIPTS, "say hello": [["read_file", {"path": "notes.md"}], "Integration: hi."]}
    )
    result = loop.runpytest("--llmeval-runner", "steps")
    assert result.ret == 1
    out = result.stdout.str()
    assert "control contaminated: calls ['read_file'] and spans ['hi']" in out
    assert "integration.controls_with_integration==0" in out
    assert "items: ctl" in out


def test_bad_items_and_headers_are_clear_errors(loop: pytest.Pytester) -> None:
    items = [
        {"sample_id": "ok", "prompt": "item C", "call_sequence": SEQ},
        {"sample_id": "bad-tool", "prompt": "x", "tools": ["nope"]},
        {"sample_id": "no-prompt"},
        {"sample_id": "typo", "prompt": "x", "expected_behavior": "normal"},
    ]
    _dataset(loop, items, gates={"coverage": 0.9})
    _scripts(loop, SCRIPTS)
    result = loop.runpytest("--llmeval-runner", "steps")
    assert "__header__.gates.coverage: unknown gate" in result.stdout.str()
    _dataset(loop, items, dataset_sha256="0" * 64)
    result = loop.runpytest("--llmeval-runner", "steps")
    out = result.stdout.str()
    assert "data.integration.jsonl:1: __header__: __header__.dataset_sha256 is 000" in out
    assert "data.integration.jsonl:3: tools[0]: unknown tool 'nope'" in out
    assert "data.integration.jsonl:4: prompt: give exactly one of prompt" in out
    assert "data.integration.jsonl:5: expected_behavior: unknown field" in out
    relaxed = loop.runpytest(
        "--llmeval-runner", "steps", "--no-llmeval-fail-on-fingerprint-mismatch"
    )
    # two gates have nothing to judge in one valid item: they fail; two are inconclusive (too
    # few eligible items): neither passed nor failed, junit skips them
    relaxed.assert_outcomes(errors=3, passed=1 + 3, failed=2, skipped=2)


# -- compat: the reference harness -------------------------------------------------------------


def _compat(text: str, result: Any, **meta: Any) -> dict[str, Any]:
    calls = [Call("read_file", {"path": "notes.md"}, result)]
    meta = {"expected_behaviour": "normal", "call_sequence": SEQ, **meta}
    return score_item(text, calls, meta, {"read_file": {}}, ItemConfig(mode="compat"))


def _triple(details: dict[str, Any], mode: str) -> tuple[float, float, float]:
    body = details[mode]
    return (round(body["precision"], 3), body["recall"], round(body["f1"], 3))


def test_compat_reproduces_the_reference_table() -> None:
    a = _compat(A, RESULT_A)
    assert a["span_texts"][2] == "see Notes on RoPE scaling."  # the end of text keeps its "."
    assert (_triple(a, "lax"), _triple(a, "strict")) == ((1, 1, 1), (0.667, 1, 0.8))
    assert a["contains_grounding"] is True
    b = _compat(B, RESULT_A)
    assert (b["lax"]["f1"], b["strict"]["f1"], b["contains_grounding"]) == (0.0, 0.0, False)
    c = _compat(C, RESULT_A)
    assert (c["lax"]["f1"], c["strict"]["f1"], c["contains_grounding"]) == (1.0, 1.0, True)
    d = _compat("Integration: That claim is true for most models", {"ok": True, "summary": "x y z"})
    assert (d["lax"]["f1"], d["strict"]["f1"], d["contains_grounding"]) == (1.0, 0.0, True)
    hits = {"ok": True, "hits": [{"title": "RoPE", "snippet": "rope keeps precision"}]}
    e = _compat("Integration: rope keeps precision", hits)
    assert (e["lax"]["f1"], e["strict"]["f1"], e["contains_grounding"]) == (0.0, 0.0, False)
    german = {"ok": True, "summary": "Der Bericht zählt 1.234 Zeilen", "count": 1234, "pct": 0.955}
    g = _compat("Integration: Der Bericht zählt 1.234 Zeilen", german)
    assert (g["lax"]["f1"], g["strict"]["f1"], g["contains_grounding"]) == (1.0, 1.0, True)
    h = _compat("Integration: Insgesamt 1.234 Zeilen mit 95,5 % Erfolg", german)
    assert (h["lax"]["f1"], h["strict"]["f1"], h["contains_grounding"]) == (0.0, 0.0, False)
    i = _compat("Integration: The file has 1280 lines", RESULT_A)
    assert (i["lax"]["f1"], i["strict"]["f1"], i["contains_grounding"]) == (1.0, 1.0, False)
    cut = _compat("Integration: no terminator\nNext line.", RESULT_A)
    assert cut["spans"] == []  # `$` without MULTILINE: the reference loses this span
    m = aggregate([_result(k, x) for k, x in enumerate((a, b, c))])
    assert m["mode"] == "compat"
    assert (m["lax"]["macro_f1"], m["strict"]["macro_f1"]) == (0.666667, 0.6)
    assert (m["lax"]["micro_f1_verifier"], m["strict"]["micro_f1_verifier"]) == (0.8, 0.666667)
    assert m["lax"]["micro_f1"] == 0.666667
    assert m["strict"]["micro_f1"] == pytest.approx(0.606, abs=1e-3)


def test_compat_mode_from_the_command_line_and_a_manifest(loop: pytest.Pytester) -> None:
    _dataset(loop, ITEMS)
    _scripts(loop, SCRIPTS)
    loop.runpytest("--llmeval-runner", "steps", "--llmeval-integration-mode", "compat")
    (run,) = [p for p in (loop.path / ".llmeval" / "runs").iterdir() if p.name != "latest"]
    body = json.loads((run / "report.json").read_text())["suites"]["integration"]
    assert body["mode"] == "compat" and body["lax"]["micro_f1_verifier"] is not None
    assert body["strict_grounded_coverage"] is None and body["branching_recovery"] is None
    (loop.path / "c.llmeval.yaml").write_text("suite: integration\ndata: d.jsonl\nmode: nope\n")
    (loop.path / "d.jsonl").write_text((loop.path / "data.integration.jsonl").read_text())
    bad = loop.runpytest("--llmeval-runner", "steps", "c.llmeval.yaml")
    assert "manifest option mode: expected one of precise, compat, got 'nope'" in bad.stdout.str()


def test_private_text_in_answers_is_masked_in_every_artifact_and_counted(
    loop: pytest.Pytester,
) -> None:
    items = [
        {"sample_id": "leaky", "prompt": "item C", "call_sequence": SEQ},
        {"sample_id": "fine", "prompt": "item A", "call_sequence": SEQ},
    ]
    _dataset(loop, items)
    secret = "Call me at +1 415-555-0132 or mail ana.lopez@example.com"
    _scripts(
        loop,
        {**SCRIPTS, "item C": [["read_file", {"path": "notes.md"}], f"{C} Integration: {secret}."]},
    )
    result = loop.runpytest("--llmeval-runner", "steps", "--junitxml=junit.xml")
    # the leaky span is not grounded; multi-call parity and negative controls: none in the data
    result.assert_outcomes(passed=1 + 5, failed=1 + 2)
    (run,) = [p for p in (loop.path / ".llmeval" / "runs").iterdir() if p.name != "latest"]
    body = json.loads((run / "report.json").read_text())["suites"]["integration"]
    assert body["privacy_ok_rate"] == 0.5
    written = [p for p in run.rglob("*") if p.is_file()] + [loop.path / "junit.xml"]
    for path in written:
        text = path.read_text(encoding="utf-8", errors="replace")
        assert "415-555-0132" not in text and "ana.lopez@example.com" not in text, path
    assert "[phone]" in (run / "results.jsonl").read_text()
    assert "415-555-0132" not in result.stdout.str()
