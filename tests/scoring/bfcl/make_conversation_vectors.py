"""Regenerate the BFCL conversation vectors: the requests the OFFICIAL client sends.

Runs in the scratch virtualenv with the full official package (never in the project's own
environment), like ``make_vectors.py``:

    /work/scratch/bfcl-venv/bin/python tests/scoring/bfcl/make_conversation_vectors.py

It drives the official ``OpenAICompletionsHandler`` (``bfcl-eval==2026.3.23``) end to end,
its ``inference`` method, with the OpenAI SDK's HTTP transport replaced by an in-process mock
(``httpx.MockTransport``: nothing leaves the process), and records every request body the SDK
would send:

1. every vendored single-turn row of ``tests/data/bfcl/``, in FC and prompt mode;
2. the vendored multi-turn rows, in both modes, with scripted replies (the ground-truth calls,
   calls that fail in the backend, positional arguments, a nested dict, an argument that is
   ``{}``, arguments that are not JSON, text, and a model that never stops calling, up to the
   force-termination), executed by the official backends;
3. the official tool-result formatting of synthetic return values (``str``, ``dict``, other,
   a dict ``json.dumps`` refuses, exceptions), through ``execute_multi_turn_func_call`` with
   a stand-in backend class.

Output: ``conversation_vectors.jsonl`` beside this file. Each conversation line holds the
server replies as sent, what the official decoder made of each (the call texts it ran, or
``null`` where the reply ended the turn), each execution step's result strings, and the
requests: the last request's ``messages`` (every earlier request's messages are a prefix of
it, which this script checks), each request's message count, and the distinct ``tools``
lists with each request's index into them (``null``: no ``tools`` key). The multi-turn rows
it needs are copied to ``tests/data/bfcl/`` with their ground truth and the backends' doc
files.
"""

from __future__ import annotations

import ast
import copy
import json
import os
import sys
import types
from pathlib import Path
from typing import Any

import bfcl_eval
import httpx
from bfcl_eval.constants import executable_backend_config
from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
from bfcl_eval.model_handler import base_handler
from bfcl_eval.model_handler.api_inference.openai_completion import OpenAICompletionsHandler
from bfcl_eval.utils import load_dataset_entry
from openai import OpenAI

PACKAGE = Path(bfcl_eval.__file__).parent / "data"
HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
DATA = REPO / "tests" / "data" / "bfcl"
OUT = HERE / "conversation_vectors.jsonl"

MULTI_TURN_IDS = [
    "multi_turn_base_47",
    "multi_turn_miss_func_41",
    "multi_turn_miss_func_47",
    "multi_turn_miss_param_46",
    "multi_turn_long_context_41",
]
DOC_CLASSES = [
    "GorillaFileSystem",
    "MathAPI",
    "MessageAPI",
    "TwitterAPI",
    "TicketAPI",
    "TradingBot",
    "TravelAPI",
    "VehicleControlAPI",
]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


# ------------------------------------------------------------------------- the mock server


class Server:
    """Answers each chat request with the next scripted assistant message; records bodies."""

    def __init__(self, script: list[dict[str, Any]]) -> None:
        self.script = list(script)
        self.sent: list[dict[str, Any]] = []
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(request.content))
        message = self.script.pop(0) if self.script else {"role": "assistant", "content": "Done."}
        self.sent.append(message)
        return httpx.Response(
            200,
            json={
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": "mock",
                "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
        )


def _handler(mode: str, server: Server) -> OpenAICompletionsHandler:
    handler = OpenAICompletionsHandler(
        model_name="mock-model",
        temperature=0.001,
        registry_name="mock-model-FC" if mode == "fc" else "mock-model",
        is_fc_model=mode == "fc",
    )
    handler.client = OpenAI(
        api_key="not-a-key",
        base_url="http://127.0.0.1:9/v1",
        http_client=httpx.Client(transport=httpx.MockTransport(server)),
        max_retries=0,
    )
    return handler


RESULTS: list[list[str]] = []
_official_execute = multi_turn_utils.execute_multi_turn_func_call


def _recording_execute(func_call_list: list[str], *args: Any, **kwargs: Any) -> Any:
    results, instances = _official_execute(func_call_list, *args, **kwargs)
    if func_call_list:
        RESULTS.append(list(results))
    return results, instances


base_handler.execute_multi_turn_func_call = _recording_execute


def _record(entry: dict[str, Any], mode: str, label: str, script: list[dict[str, Any]]) -> dict:
    server = Server(script)
    RESULTS.clear()
    handler = _handler(mode, server)
    # a fresh model name per conversation: the official executor caches backends by name
    handler.model_name_underline_replaced = f"m{len(VECTORS)}_{mode}"
    steps: list[list[str] | None] = []
    decode = handler.decode_execute

    def recording_decode(result: Any, has_tool_call_tag: bool) -> Any:
        try:
            calls = decode(result, has_tool_call_tag)
        except Exception:
            steps.append(None)
            raise
        steps.append(None if multi_turn_utils.is_empty_execute_response(calls) else list(calls))
        return calls

    handler.decode_execute = recording_decode  # type: ignore[method-assign]
    handler.inference(copy.deepcopy(entry), include_input_log=False, exclude_state_log=True)
    last = server.bodies[-1]["messages"]
    tools: list[Any] = []
    request_tools: list[int | None] = []
    for body in server.bodies:
        assert body["messages"] == last[: len(body["messages"])], "not a prefix"
        assert set(body) <= {"messages", "model", "temperature", "store", "tools"}, body.keys()
        if "tools" not in body:
            request_tools.append(None)
            continue
        if body["tools"] not in tools:
            tools.append(body["tools"])
        request_tools.append(tools.index(body["tools"]))
    return {
        "kind": "conversation",
        "id": entry["id"],
        "mode": mode,
        "script": label,
        "replies": server.sent,
        "calls": steps,
        "results": list(RESULTS),
        "messages": last,
        "request_lengths": [len(body["messages"]) for body in server.bodies],
        "tools": tools,
        "request_tools": request_tools,
        "params": {k: v for k, v in server.bodies[0].items() if k not in ("messages", "tools")},
    }


VECTORS: list[dict[str, Any]] = []


# ------------------------------------------------------------------------------ scripts


def _fc_message(calls: list[tuple[str, str]], content: Any = None) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {
                "id": f"call_{k}_{name}",
                "type": "function",
                "function": {"name": name, "arguments": a},
            }
            for k, (name, a) in enumerate(calls)
        ],
    }


def _text(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def _truth_calls(call: str, docs: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """A ground-truth call string as (name, keyword arguments); positional ones named by the
    doc's parameter order."""
    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    name = node.func.id
    params = list(docs[name]["parameters"]["properties"])
    args = {params[k]: ast.literal_eval(v) for k, v in enumerate(node.args)}
    args.update({kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg})
    return name, args


def _multi_turn_scripts(entry: dict, truth: list[list[str]], mode: str) -> list[tuple[str, list]]:
    docs = {d["name"]: d for d in entry["function"]}
    for held in entry.get("missed_function", {}).values():
        docs.update({d["name"]: d for d in held})

    def reply(calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        if mode == "fc":
            return _fc_message([(n, json.dumps(a)) for n, a in calls])
        body = ", ".join(f"{n}({', '.join(f'{k}={v!r}' for k, v in a.items())})" for n, a in calls)
        return _text(f"[{body}]")

    truthful: list[dict[str, Any]] = []
    for turn in truth:
        if turn:
            truthful.append(reply([_truth_calls(c, docs) for c in turn]))
        truthful.append(_text("I have done what you asked." if turn else "Which one do you mean?"))
    first = sorted(docs)[0]
    broken: list[dict[str, Any]] = [
        reply([("no_such_function", {"a": 1}), (first, {"bogus": [1, 2]})]),
        reply([(first, {"nested": {"inner": {"x": 1}}, "flat": {"k": "v"}})]),
    ]
    if mode == "fc":
        broken.append(_fc_message([(first, "{'not': json}")]))
        broken.append(_fc_message([(first, "{}")], content="Calling now."))
        broken.append({"role": "assistant", "content": "", "refusal": None})
    else:
        broken.append(_text(f"[{first}('positional', x=1.5)]"))
        broken.append(_text(f"[{first}(empty={{}})]"))
        broken.append(_text(f"```\n[{first}(x=-2)]\n```"))
        broken.append(_text("[]"))
    scripts = [("truth", truthful), ("broken", broken)]
    if entry["id"] == MULTI_TURN_IDS[0]:
        scripts.append(("never_stops", [reply([("pwd" if "pwd" in docs else first, {})])] * 25))
    return scripts


def _single_turn_scripts(mode: str) -> list[dict[str, Any]]:
    return [_text("ok")]


# ---------------------------------------------------------------- tool-result formatting


class FakeAPI:
    """A stand-in backend: ``value(k)`` returns :data:`VALUES` ``[k]``; ``boom(k)`` raises."""

    def _load_scenario(self, config: dict, long_context: bool = False) -> None:
        pass

    def value(self, k: int) -> Any:
        return VALUES[k]

    def boom(self, k: int) -> Any:
        raise EXCEPTIONS[k]


VALUES: list[Any] = [
    None,
    "plain text",
    "",
    3,
    780.0,
    1e-07,
    True,
    ["NVDA", "AAPL"],
    ("a", 1),
    {"a": 1, "b": [1.5, None, True], "c": {"d": "é"}},
    {},
    {"s": {1, 2}},
    {1: "int key"},
    {"nan": float("nan")},
    [{"x": "y"}],
    {"quote": 'it\'s "q"'},
]
VALUES_SOURCE = [repr(value) for value in VALUES]
EXCEPTIONS: list[BaseException] = [
    TypeError("value() missing 1 required positional argument: 'k'"),
    ValueError("bad value"),
    KeyError("key"),
    Exception(""),
]
EXCEPTIONS_SOURCE = [f"{type(e).__name__}({e.args[0]!r})" for e in EXCEPTIONS]


def _result_formatting() -> list[dict[str, Any]]:
    module = types.ModuleType("bfcl_fake_backend")
    module.FakeAPI = FakeAPI  # type: ignore[attr-defined]
    sys.modules["bfcl_fake_backend"] = module
    executable_backend_config.CLASS_FILE_PATH_MAPPING["FakeAPI"] = "bfcl_fake_backend"
    calls = [f"value(k={k})" for k in range(len(VALUES))]
    calls += [f"boom(k={k})" for k in range(len(EXCEPTIONS))]
    results, _ = _official_execute(calls, {}, ["FakeAPI"], "fmt", "fmt_0")
    out = []
    for source, result in zip(VALUES_SOURCE + EXCEPTIONS_SOURCE, results, strict=True):
        kind = "raises" if source in EXCEPTIONS_SOURCE else "returns"
        out.append({"kind": "result", kind: source, "content": result})
    return out


# ------------------------------------------------------------------------------- main


def _vendor_multi_turn() -> None:
    by_category: dict[str, list[str]] = {}
    for row_id in MULTI_TURN_IDS:
        by_category.setdefault(row_id.rsplit("_", 1)[0], []).append(row_id)
    for category, ids in by_category.items():
        name = f"BFCL_v4_{category}.json"
        for folder in (Path(), Path("possible_answer")):
            rows = [r for r in _jsonl(PACKAGE / folder / name) if r["id"] in ids]
            text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
            (DATA / folder / name).write_text(text, encoding="utf-8")
    (DATA / "multi_turn_func_doc").mkdir(exist_ok=True)
    mapping = executable_backend_config.MULTI_TURN_FUNC_DOC_FILE_MAPPING
    for class_name in DOC_CLASSES:
        source = PACKAGE / "multi_turn_func_doc" / mapping[class_name]
        (DATA / "multi_turn_func_doc" / mapping[class_name]).write_bytes(source.read_bytes())


def main() -> int:
    os.environ.setdefault("OPENAI_API_KEY", "not-a-key")
    _vendor_multi_turn()
    for path in sorted(DATA.glob("BFCL_v4_*.json")):
        category = path.stem.removeprefix("BFCL_v4_")
        ids = {row["id"] for row in _jsonl(path)}
        entries = [e for e in load_dataset_entry(category) if e["id"] in ids]
        assert len(entries) == len(ids), category
        truths = {}
        if category.startswith("multi_turn"):
            answers = PACKAGE / "possible_answer" / path.name
            truths = {t["id"]: t["ground_truth"] for t in _jsonl(answers)}
        for entry in entries:
            for mode in ("fc", "prompt"):
                if category.startswith("multi_turn"):
                    for label, script in _multi_turn_scripts(entry, truths[entry["id"]], mode):
                        VECTORS.append(_record(entry, mode, label, script))
                else:
                    VECTORS.append(_record(entry, mode, "single", _single_turn_scripts(mode)))
    VECTORS.extend(_result_formatting())
    OUT.write_text(
        "".join(json.dumps(v, ensure_ascii=False, sort_keys=True) + "\n" for v in VECTORS),
        encoding="utf-8",
    )
    print(f"{len(VECTORS)} vectors -> {OUT.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
