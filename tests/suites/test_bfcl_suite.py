"""The bfcl suite as a user runs it: a manifest, the ``openai`` runner, a loopback model.

A tmp project holds the vendored BFCL rows (``tests/data/bfcl``) and ``suite: bfcl``
manifests; the loopback OpenAI server answers each item with a reply from the committed
parity vectors (``tests/scoring/bfcl/``: replies made and judged by the official
``bfcl-eval==2026.3.23``), and every case's outcome must be the official verdict. The requests
the server received must equal the official client's (``conversation_vectors.jsonl``).
"""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.suites import bfcl_conversation as conv
from pytest_llmeval.suites.bfcl_data import BfclItem, package_dir, read_data, select_categories
from pytest_llmeval.testing.openai_server import OpenAIServer

TESTS = Path(__file__).parents[1]
DATA = TESTS / "data" / "bfcl"
VECTORS = TESTS / "scoring" / "bfcl"
ITEMS = {item.id: item for item in read_data(DATA, select_categories(DATA, None)).items}
MT_DATA = DATA / "multi_turn"
"""The multi-turn rows the multi-turn vectors were made from (docs: ``DATA``'s)."""


def _multi_turn_items(folder: Path) -> dict[str, BfclItem]:
    return {item.id: item for item in read_data(folder, select_categories(folder, None)).items}


needs_package = pytest.mark.skipif(
    package_dir() is None, reason="needs `pip install --no-deps bfcl-eval==2026.3.23`"
)


def _jsonl(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (VECTORS / name).read_text("utf-8").splitlines()]


def needs_official_backends() -> None:
    """Skip unless the official multi-turn backends (``bfcl-eval``, with ``mpmath``) load."""
    pytest.importorskip("mpmath")
    backends = pytest.importorskip("pytest_llmeval.tools.bfcl_backends")
    try:
        backends.backend_class("GorillaFileSystem")
    except backends.BackendsMissing:
        pytest.skip("needs `pip install --no-deps bfcl-eval==2026.3.23`")


def _project(pytester: pytest.Pytester, manifests: dict[str, str], data: Path = DATA) -> None:
    shutil.copytree(data, pytester.path / "bfcl_data", dirs_exist_ok=True)
    if data != DATA:
        shutil.copytree(
            DATA / "multi_turn_func_doc", pytester.path / "bfcl_data" / "multi_turn_func_doc"
        )
    for name, text in manifests.items():
        (pytester.path / f"{name}.llmeval.yaml").write_text(text, encoding="utf-8")


def _message(reply: dict[str, Any], number: int) -> dict[str, Any]:
    """A scripted reply (``tool_calls`` pairs or ``text``) as the server's message."""
    if "tool_calls" in reply:
        calls = [
            {"id": f"call_{number}_{k}", "type": "function",
             "function": {"name": name, "arguments": arguments}}
            for k, (name, arguments) in enumerate(reply["tool_calls"])
        ]  # fmt: skip
        return {"role": "assistant", "content": None, "tool_calls": calls, "refusal": None}
    return {"role": "assistant", "content": reply.get("text", reply.get("content"))}


def _body(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


class Brain:
    """Answers each item's requests, in order, with its scripted messages; the item is known
    by the first messages of its conversation (and the mode by the system prompt)."""

    def __init__(
        self,
        scripts: dict[tuple[str, str], list[dict[str, Any]]],
        items: dict[str, BfclItem] = ITEMS,
    ) -> None:
        self.scripts = scripts
        self.served: dict[tuple[str, str], int] = defaultdict(int)
        self.requests: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        self.starts = []
        for item_id, mode in scripts:
            item = items[item_id]
            first = conv.first_messages(item, mode)
            tools = conv.tools_for(item, mode, conv.revealed_turns(item, 0)) or []
            self.starts.append((first, tools, (item_id, mode)))

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        tools = body.get("tools") or []
        key = next(
            key
            for first, first_tools, key in self.starts
            if messages[: len(first)] == first and tools[: len(first_tools)] == first_tools
        )
        self.requests[key].append(body)
        index = self.served[key]
        self.served[key] += 1
        return _body(self.scripts[key][index])


def _run(
    pytester: pytest.Pytester, brain: Callable[[dict[str, Any]], Any], *args: str
) -> pytest.RunResult:
    with OpenAIServer(brain) as server:
        return pytester.runpytest(
            "--llmeval-runner", "openai", "--llmeval-base-url", server.base_url,
            "--llmeval-model", "test-model", "--llmeval-deterministic", "yes",
            "--llmeval-run-dir", "run", "-p", "no:cacheprovider", *args,
        )  # fmt: skip


def _results(pytester: pytest.Pytester) -> dict[tuple[str, str], dict[str, Any]]:
    text = (pytester.path / "run" / "results.jsonl").read_text("utf-8")
    rows = [json.loads(line) for line in text.splitlines()]
    return {(r["case_id"], r["details"].get("mode", "?")): r for r in rows}


def _manifest(mode: str, ids: list[str], extra: str = "") -> str:
    return f"suite: bfcl\ndata: bfcl_data\nmode: {mode}\nids: {json.dumps(ids)}\n{extra}"


DONE_TEXT = "I have completed the request."
"""What the vectors' scripted model says once a turn's script is used up (it ends the turn)."""


class TurnBrain(Brain):
    """A multi-turn script: per turn, its replies, then :data:`DONE_TEXT`; a turn starts
    when the request ends with that turn's opening message."""

    def __init__(
        self, scripts: dict[tuple[str, str], list[list[dict[str, Any]]]], items: dict[str, BfclItem]
    ) -> None:
        super().__init__({key: [] for key in scripts}, items)
        self.turn_scripts = scripts
        self.openers = {
            (item_id, mode): [
                conv.turn_messages(items[item_id], mode, k)[-1]
                for k in range(len(items[item_id].question))
            ]
            for item_id, mode in scripts
        }
        self.at: dict[tuple[str, str], list[int]] = {}

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        tools = body.get("tools") or []
        messages = body["messages"]
        key = next(
            key
            for first, first_tools, key in self.starts
            if messages[: len(first)] == first and tools[: len(first_tools)] == first_tools
        )
        self.requests[key].append(body)
        turn, position = self.at.setdefault(key, [0, 0])
        openers = self.openers[key]
        if turn + 1 < len(openers) and messages[-1] == openers[turn + 1]:
            turn, position = turn + 1, 0
        script = self.turn_scripts[key]
        replies = script[turn] if turn < len(script) else []
        reply = replies[position] if position < len(replies) else {"text": DONE_TEXT}
        self.at[key] = [turn, position + 1]
        return _body(_message(reply, len(self.requests[key])))


# ------------------------------------------------------------- single-turn verdict parity


def _single_round(round_index: int) -> dict[tuple[str, str], dict[str, Any]]:
    """One vector per (id, mode): the ``round_index``-th of each, cycling."""
    by_key: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for vector in _jsonl("vectors.jsonl"):
        by_key[vector["id"], vector["mode"]].append(vector)
    return {key: vs[round_index % len(vs)] for key, vs in sorted(by_key.items())}


@needs_package
@pytest.mark.parametrize("round_index", [0, 1, 5])
def test_single_turn_items_get_the_official_verdict(
    pytester: pytest.Pytester, round_index: int
) -> None:
    pytest.importorskip("tree_sitter")
    chosen = _single_round(round_index)
    scripts = {}
    for key, vector in chosen.items():
        output = vector["output"]
        reply = {"tool_calls": output} if isinstance(output, list) else {"text": output}
        scripts[key] = [_message(reply, 0)]
    ids = {mode: sorted(i for i, m in chosen if m == mode) for mode in ("fc", "prompt")}
    _project(pytester, {m: _manifest(m, ids[m]) for m in ids})
    _run(pytester, Brain(scripts))
    _assert_official_verdicts(_results(pytester), chosen, one_line=True)


def _assert_official_verdicts(
    results: dict[tuple[str, str], dict[str, Any]],
    chosen: dict[tuple[str, str], dict[str, Any]],
    *,
    one_line: bool = False,
) -> None:
    """Every chosen item got the official verdict, and a failed one the official error type
    (in a one-line message when ``one_line``)."""
    assert set(results) == set(chosen)
    for key, vector in chosen.items():
        got = results[key]
        assert (got["outcome"] == "passed") == vector["valid"], (key, vector["mutation"], got)
        if not vector["valid"]:
            assert got["details"]["error_type"] == vector["error_type"], key
            assert not one_line or "\n" not in got["error"]


# -------------------------------------------------------------- multi-turn verdict parity


MT_CATEGORIES = ("base", "miss_func", "miss_param", "long_context")


@needs_package
@pytest.mark.parametrize("round_index", [0, 3, 7])
@pytest.mark.parametrize("category", MT_CATEGORIES)
def test_multi_turn_items_get_the_official_verdict(
    pytester: pytest.Pytester, round_index: int, category: str
) -> None:
    # one category per run: base_0, miss_param_0 and long_context_0 open with the same request
    _project(pytester, {}, MT_DATA)
    items = _multi_turn_items(pytester.path / "bfcl_data")
    by_key: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for vector in _jsonl("multi_turn_vectors.jsonl"):
        if vector["category"] != f"multi_turn_{category}":
            continue
        if not vector["mutation"].startswith("result:"):  # a raw result, not a conversation
            by_key[vector["id"], vector["mode"]].append(vector)
    chosen = {key: vs[round_index % len(vs)] for key, vs in sorted(by_key.items())}
    scripts = {key: v["script"] for key, v in chosen.items()}
    ids = {mode: sorted(i for i, m in chosen if m == mode) for mode in ("fc", "prompt")}
    for mode in ids:
        (pytester.path / f"{mode}.llmeval.yaml").write_text(_manifest(mode, ids[mode]))
    _run(pytester, TurnBrain(scripts, items))
    _assert_official_verdicts(_results(pytester), chosen)


# ------------------------------------------------------------------ the official requests


@needs_package
def test_the_model_receives_the_official_clients_requests(pytester: pytest.Pytester) -> None:
    vectors = [v for v in _jsonl("conversation_vectors.jsonl") if v["kind"] == "conversation"]
    runs: dict[str, dict[tuple[str, str], dict[str, Any]]] = defaultdict(dict)
    for vector in vectors:  # one run per script name: one conversation per (id, mode) each
        runs[vector["script"]][vector["id"], vector["mode"]] = vector
    for script, chosen in sorted(runs.items())[:2]:
        brain = Brain({key: v["replies"] for key, v in chosen.items()})
        ids = {mode: sorted(i for i, m in chosen if m == mode) for mode in ("fc", "prompt")}
        folder = pytester.mkdir(script)
        pytester.chdir()
        _project_in(folder, {m: _manifest(m, ids[m]) for m in ids if ids[m]})
        _run(pytester, brain, str(folder))
        for key, vector in chosen.items():
            got = brain.requests[key]
            assert len(got) == len(vector["request_lengths"]), key
            for body, length, tool_index in zip(
                got, vector["request_lengths"], vector["request_tools"], strict=True
            ):
                assert body["messages"] == vector["messages"][:length], key
                if tool_index is None:
                    assert "tools" not in body, key
                else:
                    assert body["tools"] == vector["tools"][tool_index], key


def _project_in(folder: Path, manifests: dict[str, str]) -> None:
    shutil.copytree(DATA, folder / "bfcl_data")
    for name, text in manifests.items():
        (folder / f"{name}.llmeval.yaml").write_text(text, encoding="utf-8")


# ------------------------------------------------------------------------- fail closed


def test_a_broken_row_is_that_rows_error_with_path_and_line(pytester: pytest.Pytester) -> None:
    _project(pytester, {"fc": _manifest("fc", ["simple_python_1"]).replace("ids", "#ids")})
    path = pytester.path / "bfcl_data" / "BFCL_v4_simple_python.json"
    lines = path.read_text("utf-8").splitlines()
    lines[1] = '{"id": "simple_python_x", "question": 3, "function": []}'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (pytester.path / "fc.llmeval.yaml").write_text(
        "suite: bfcl\ndata: bfcl_data\ncategories: [simple_python]\n"
    )
    result = _run(pytester, lambda body: _body({"role": "assistant", "content": "no"}))
    result.stdout.fnmatch_lines(["*bfcl_data/BFCL_v4_simple_python.json:2: question*"])
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors") == 1


def test_without_the_package_and_without_data_the_session_stops_naming_the_install(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pytest_llmeval.suites.bfcl.package_dir", lambda: None)
    (pytester.path / "b.llmeval.yaml").write_text("suite: bfcl\ncategories: [simple_python]\n")
    result = _run(pytester, lambda body: "x")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*pip install --no-deps bfcl-eval==2026.3.23*"])


def test_multi_turn_without_the_package_stops_the_session(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pytest_llmeval.suites.bfcl.package_dir", lambda: None)
    _project(pytester, {"m": "suite: bfcl\ndata: bfcl_data\ncategories: [multi_turn_base]\n"})
    result = _run(pytester, lambda body: "x")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*multi_turn_base*pip install --no-deps bfcl-eval==2026.3.23*"])


def test_a_gate_on_a_category_accuracy_decides_the_run(pytester: pytest.Pytester) -> None:
    manifest = (
        "suite: bfcl\ndata: bfcl_data\ncategories: [simple_python]\n"
        "gates:\n  - categories.simple_python.accuracy >= 0.9\n"
    )
    _project(pytester, {"g": manifest})
    result = _run(pytester, lambda body: _body({"role": "assistant", "content": "no idea"}))
    assert result.ret != 0
    report = json.loads((pytester.path / "run" / "report.json").read_text())
    section = report["suites"]["bfcl"]
    assert section["mode"] == "fc"
    assert section["categories"]["simple_python"]["accuracy"] == 0.0
    assert section["simple"]["accuracy"] is None  # java and javascript were not run
    assert section["simple"]["missing"] == ["simple_java", "simple_javascript"]
    gates = {g["gate"]["name"]: g["status"] for g in report["gates"]["results"]}
    assert gates == {"bfcl.categories.simple_python.accuracy>=0.9": "failed"}
    result.stdout.fnmatch_lines(["bfcl bfcl_data (fc)", "  simple_python 0.00% (0/13)"])


def test_a_gate_on_an_unknown_group_is_refused_before_any_case(pytester: pytest.Pytester) -> None:
    _project(pytester, {"g": "suite: bfcl\ndata: bfcl_data\ncategories: [simple_python]\n"})
    result = _run(pytester, lambda body: "x", "--llmeval-gate", "bfcl.non_liv.accuracy>=0.5")
    assert result.ret == 4


@needs_package
def test_xdist_gives_the_same_verdicts(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytest.importorskip("tree_sitter")
    chosen = {k: v for k, v in _single_round(1).items() if k[1] == "fc"}
    scripts = {}
    for key, vector in chosen.items():
        output = vector["output"]
        reply = {"tool_calls": output} if isinstance(output, list) else {"text": output}
        scripts[key] = [_message(reply, 0)]
    _project(pytester, {"fc": _manifest("fc", sorted(i for i, _ in chosen))})
    _run(pytester, Brain(scripts), "-n", "2")
    results = _results(pytester)
    assert {k: r["outcome"] == "passed" for k, r in results.items()} == {
        k: v["valid"] for k, v in chosen.items()
    }
