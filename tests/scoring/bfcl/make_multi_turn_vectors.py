"""Regenerate the BFCL multi-turn parity vectors: real rows, scripted replies, OFFICIAL verdicts.

Runs in a scratch virtualenv that holds the official package with its dependencies, never in
the project's environment:

    /work/scratch/bfcl-venv/bin/python tests/scoring/bfcl/make_multi_turn_vectors.py

It

1. picks a few rows of each multi-turn category from the package's ``bfcl_eval/data`` (every
   backend class covered in each category, then a fixed seed) and writes them, with their
   ground truth, to ``tests/data/bfcl/multi_turn/`` (JSON Lines, unchanged, as the package
   stores them);
2. scripts the model's replies for each row, in FC mode (tool calls) and prompt mode (Python
   call text): the ground truth answered in one step per turn and one call per step, and
   mutations of every kind the multi-turn checker has a rule for (a missing call, an extra
   harmless read, an extra draw from a backend's seeded RNG, different arguments with the same
   effect, a call made a turn early, calls done twice, an empty turn, bad arguments, an unknown
   function, a blocked name, a call that raises, positional arguments in prompt mode, replies
   that do not decode, 21 call steps in a turn, in the last turn and before it, and turn
   counts that do not match);
3. runs the official inference loop (``BaseHandler.inference_multi_turn_FC`` / ``_prompting``)
   with a handler that answers from the script, records each executed step's official result
   texts (as one digest), then scores the replies with the official
   ``_evaluate_single_multi_turn_entry``, and writes
   ``tests/scoring/bfcl/multi_turn_vectors.jsonl`` (and ``multi_turn_call_vectors.jsonl``: call
   texts run one by one through the official executor, with its result texts).

Every vector uses its own model name, because the official executor keeps backend instances in
a module global keyed by model name and item. ``test_multi_turn_parity.py`` requires our loop
and checker to agree on every line. The replies are built here, so nothing hostile reaches the
official ``eval()``.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import importlib
import inspect
import json
import random
from pathlib import Path
from typing import Any

import bfcl_eval
from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING
from bfcl_eval.eval_checker import eval_runner
from bfcl_eval.model_handler.base_handler import BaseHandler
from bfcl_eval.model_handler.utils import (
    convert_to_function_call,
    default_decode_execute_prompting,
)

DATA = Path(bfcl_eval.__file__).parent / "data"
HERE = Path(__file__).resolve().parent
OUT_DATA = HERE.parents[1] / "data" / "bfcl" / "multi_turn"
OUT_VECTORS = HERE / "multi_turn_vectors.jsonl"
OUT_CALLS = HERE / "multi_turn_call_vectors.jsonl"
CATEGORIES = [
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
]
ROWS_PER_CATEGORY = 5
SEED = 31

HARMLESS_READ = {
    "GorillaFileSystem": "pwd()",
    "MathAPI": "mean(numbers=[1.0, 2.0])",
    "MessageAPI": "list_users()",
    "TwitterAPI": "list_all_following()",
    "TicketAPI": "ticket_get_login_status()",
    "TradingBot": "get_watchlist()",
    "TravelAPI": "list_all_airports()",
    "VehicleControlAPI": "check_tire_pressure()",
}
RNG_DRAW = {
    "VehicleControlAPI": "get_current_speed()",
    "TradingBot": "fund_account(amount=10.0)",
    "MessageAPI": "send_message(receiver_id='USR002', message='hi')",
    "TravelAPI": "register_credit_card(access_token='bad', card_number='1234567812345678', "
    "expiration_date='12/2030', cardholder_name='A B', card_verification_number=123)",
}
DONE_TEXT = "I have completed the request."


# --- scripted official handler ---------------------------------------------------------------


class ScriptedHandler(BaseHandler):  # type: ignore[misc]
    """The official loop's hooks, answering from a script of replies per turn."""

    def __init__(self, model_name: str, fc: bool, script: list[list[Any]]) -> None:
        super().__init__(model_name, 0.001, model_name, fc)
        self.script = script
        self.turn = -1
        self.position = 0
        self.executed: list[list[list[str]]] = []

    def decode_execute(self, result: Any, has_tool_call_tag: bool) -> list[str]:
        if self.is_fc_model:
            return convert_to_function_call(result)
        return default_decode_execute_prompting(result)

    def _next_turn(self, data: dict[str, Any]) -> dict[str, Any]:
        self.turn += 1
        self.position = 0
        self.executed.append([])
        return data

    def _reply(self) -> Any:
        replies = self.script[self.turn] if self.turn < len(self.script) else []
        reply = replies[self.position] if self.position < len(replies) else {"text": DONE_TEXT}
        self.position += 1
        if "tool_calls" in reply:
            return [{name: arguments} for name, arguments in reply["tool_calls"]]
        return reply["text"]

    def _parsed(self, response: Any) -> dict[str, Any]:
        return {"model_responses": response, "input_token": 0, "output_token": 0}

    def _results(self, data: dict[str, Any], results: list[str], _: Any) -> dict[str, Any]:
        self.executed[-1].append(list(results))
        return data

    def _pre_query_processing_FC(self, data: dict[str, Any], entry: Any) -> dict[str, Any]:
        return {"message": []}

    def _compile_tools(self, data: dict[str, Any], entry: Any) -> dict[str, Any]:
        return data

    def add_first_turn_message_FC(self, data: dict[str, Any], _: Any) -> dict[str, Any]:
        return self._next_turn(data)

    _add_next_turn_user_message_FC = add_first_turn_message_FC
    add_first_turn_message_prompting = add_first_turn_message_FC
    _add_next_turn_user_message_prompting = add_first_turn_message_FC

    def _query_FC(self, data: dict[str, Any]) -> tuple[Any, float]:
        return self._reply(), 0.0

    _query_prompting = _query_FC

    def _parse_query_response_FC(self, response: Any) -> dict[str, Any]:
        return self._parsed(response)

    _parse_query_response_prompting = _parse_query_response_FC

    def _add_assistant_message_FC(self, data: dict[str, Any], _: Any) -> dict[str, Any]:
        return data

    _add_assistant_message_prompting = _add_assistant_message_FC
    _add_execution_results_FC = _results
    _add_execution_results_prompting = _results

    def _pre_query_processing_prompting(self, entry: Any) -> dict[str, Any]:
        return {"message": []}


# --- rows ------------------------------------------------------------------------------------


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def pick_rows(category: str, rng: random.Random) -> list[str]:
    lines = (DATA / f"BFCL_v4_{category}.json").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    picked: list[int] = []
    covered: set[str] = set()
    for index, row in enumerate(rows):
        if set(row["involved_classes"]) - covered:
            picked.append(index)
            covered |= set(row["involved_classes"])
    rest = [index for index in range(len(rows)) if index not in picked]
    picked += rng.sample(rest, max(0, ROWS_PER_CATEGORY - len(picked)))
    picked.sort()
    truth_lines = (
        (DATA / "possible_answer" / f"BFCL_v4_{category}.json")
        .read_text(encoding="utf-8")
        .splitlines()
    )
    OUT_DATA.joinpath("possible_answer").mkdir(parents=True, exist_ok=True)
    OUT_DATA.joinpath(f"BFCL_v4_{category}.json").write_text(
        "".join(lines[index] + "\n" for index in picked), encoding="utf-8"
    )
    OUT_DATA.joinpath("possible_answer", f"BFCL_v4_{category}.json").write_text(
        "".join(truth_lines[index] + "\n" for index in picked), encoding="utf-8"
    )
    return [rows[index]["id"] for index in picked]


# --- scripts ---------------------------------------------------------------------------------


def _method_owner(classes: list[str]) -> dict[str, Any]:
    owner: dict[str, Any] = {}
    for name in classes:
        cls = getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[name]), name)
        for method_name, method in inspect.getmembers(cls, predicate=inspect.isfunction):
            if not method_name.startswith("_"):
                owner[method_name] = method
    return owner


def _as_keywords(call: str, owner: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A ground-truth call text as (name, keyword arguments); positionals get their names."""
    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    name = node.func.id
    arguments: dict[str, Any] = {}
    if node.args:
        parameters = [p for p in inspect.signature(owner[name]).parameters if p != "self"]
        for parameter, value in zip(parameters, node.args, strict=False):
            arguments[parameter] = ast.literal_eval(value)
    for keyword in node.keywords:
        arguments[str(keyword.arg)] = ast.literal_eval(keyword.value)
    return name, arguments


def _reply(calls: list[str], mode: str, owner: dict[str, Any], verbatim: bool = False) -> Any:
    """One reply making ``calls``; ``verbatim`` keeps the texts as written (prompt mode)."""
    if mode == "fc":
        pairs = [_as_keywords(call, owner) for call in calls]
        return {"tool_calls": [[name, json.dumps(args)] for name, args in pairs]}
    if verbatim:
        return {"text": "[" + ", ".join(calls) + "]"}
    texts = []
    for call in calls:
        name, arguments = _as_keywords(call, owner)
        texts.append(f"{name}(" + ", ".join(f"{k}={v!r}" for k, v in arguments.items()) + ")")
    return {"text": "[" + ", ".join(texts) + "]"}


def _script(turns: list[list[str]], mode: str, owner: dict[str, Any]) -> list[list[Any]]:
    """One reply with each turn's calls, then a text reply; an empty turn is text only."""
    return [[_reply(calls, mode, owner)] if calls else [] for calls in turns]


def _sequential(turns: list[list[str]], mode: str, owner: dict[str, Any]) -> list[list[Any]]:
    return [[_reply([call], mode, owner) for call in calls] for calls in turns]


def _last_nonempty(truth: list[list[str]]) -> int:
    return max(index for index, calls in enumerate(truth) if calls)


def _renamed_argument(call: str) -> str | None:
    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Call)
    if not node.keywords:
        return None
    node.keywords[0].arg = f"{node.keywords[0].arg}_x"
    return ast.unparse(node)


def _reordered(call: str) -> str:
    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Call)
    node.keywords.reverse()
    return ast.unparse(node)


def scripts(row: dict[str, Any], truth: list[list[str]], mode: str) -> dict[str, Any]:
    """Every mutation of the ground truth for one row and mode: name → script or result."""
    owner = _method_owner(row["involved_classes"])
    first_class = row["involved_classes"][0]
    last = _last_nonempty(truth)
    out: dict[str, Any] = {
        "ground_truth": _script(truth, mode, owner),
        "ground_truth_sequential": _sequential(truth, mode, owner),
    }

    def changed(turn: int, calls: list[str]) -> list[list[Any]]:
        turns = copy.deepcopy(truth)
        turns[turn] = calls
        return _script(turns, mode, owner)

    out["missing_call"] = changed(last, truth[last][:-1])
    out["missing_turn_calls"] = changed(last, [])
    out["extra_read"] = changed(last, [*truth[last], HARMLESS_READ[first_class]])
    out["extra_read_first"] = changed(last, [HARMLESS_READ[first_class], *truth[last]])
    for name in row["involved_classes"]:
        if name in RNG_DRAW:
            first = min(index for index, calls in enumerate(truth) if calls)
            out[f"extra_rng_{name}"] = changed(first, [RNG_DRAW[name], *truth[first]])
    out["reordered_arguments"] = _script(
        [[_reordered(call) for call in calls] for calls in truth], mode, owner
    )
    out["doubled_calls"] = _script([calls + calls for calls in truth], mode, owner)
    out["doubled_steps"] = [steps + steps for steps in _script(truth, mode, owner)]
    out["reversed_calls"] = _script([list(reversed(calls)) for calls in truth], mode, owner)
    nonempty = [index for index, calls in enumerate(truth) if calls]
    if len(nonempty) >= 2:
        early, later = nonempty[0], nonempty[1]
        turns = copy.deepcopy(truth)
        turns[early] = turns[early] + turns[later][:1]
        out["early_next_turn_call"] = _script(turns, mode, owner)
        turns = copy.deepcopy(truth)
        turns[early] = turns[early] + turns[later][:1]
        turns[later] = turns[later][1:]
        out["moved_to_earlier_turn"] = _script(turns, mode, owner)
    renamed = _renamed_argument(truth[last][0])
    if renamed:
        out["bad_argument_name"] = changed(last, [renamed, *truth[last][1:]])
    out["unknown_function"] = changed(last, [*truth[last], "no_such_tool(x=1)"])
    out["unknown_function_only"] = changed(last, ["no_such_tool(x=1)"])
    head = _as_keywords(truth[last][0], owner)[0]
    out["missing_arguments"] = changed(last, [f"{head}()", *truth[last]])
    script = _script(truth, mode, owner)
    if mode == "prompt":
        out["positional_as_written"] = [
            [_reply(calls, mode, owner, verbatim=True)] if calls else [] for calls in truth
        ]
        blocked = {"text": "[run(command='ls')]"}
        fence = {"text": "```python\n" + script[last][0]["text"] + "\n```"}
        out["python_fence_then_calls"] = _with_first(script, last, fence)
    else:
        blocked = {"tool_calls": [["run", json.dumps({"command": "ls"})]]}
        broken = {"tool_calls": [[head, "{not json"]]}
        out["arguments_not_json"] = _with_first(script, last, broken)
        out["infinity_argument"] = _with_first(
            script, last, {"tool_calls": [[head, '{"x": Infinity}']]}
        )
    out["blocked_name"] = _with_first(script, last, blocked)
    out["text_only_last_turn"] = [steps if i != last else [] for i, steps in enumerate(script)]
    read = _reply([HARMLESS_READ[first_class]], mode, owner)
    for label, turn in (("first", 0), ("last", len(truth) - 1)):
        looping = copy.deepcopy(script)
        looping[turn] = [read] * 25
        out[f"force_terminated_{label}_turn"] = looping
        looping = copy.deepcopy(script)
        looping[turn] = [read] * 20
        out[f"twenty_steps_{label}_turn"] = looping
    out["result:fewer_turns"] = _raw(script[:-1], mode)
    out["result:more_turns"] = _raw([*script, [read]], mode)
    out["result:undecodable_steps"] = _raw(
        [[{"text": "Let me think."}, *steps, {"text": DONE_TEXT}] for steps in script], mode
    )
    return out


def _with_first(script: list[list[Any]], turn: int, reply: Any) -> list[list[Any]]:
    changed = copy.deepcopy(script)
    changed[turn] = [reply, *changed[turn]]
    return changed


def _raw(script: list[list[Any]], mode: str) -> list[list[Any]]:
    """A script as the official model result (a text reply ends every turn)."""
    return [[*steps, {"text": DONE_TEXT}] for steps in script]


# --- official run ----------------------------------------------------------------------------


def _official_reply(reply: Any) -> Any:
    if "tool_calls" in reply:
        return [{name: arguments} for name, arguments in reply["tool_calls"]]
    return reply["text"]


def run_official(
    row: dict[str, Any],
    truth: list[list[str]],
    mode: str,
    model_name: str,
    plan: Any,
    direct: bool,
) -> dict[str, Any]:
    entry = copy.deepcopy(row)
    entry.setdefault("function", [])
    handler = ScriptedHandler(model_name, mode == "fc", plan)
    executed: list[list[list[str]]] | None = None
    if direct:
        result = [[_official_reply(reply) for reply in steps] for steps in plan]
    else:
        loop = (
            handler.inference_multi_turn_FC
            if mode == "fc"
            else (handler.inference_multi_turn_prompting)
        )
        result, _ = loop(entry, include_input_log=False, exclude_state_log=True)
        executed = handler.executed
    verdict = eval_runner._evaluate_single_multi_turn_entry(
        handler,
        row["id"],
        result,
        truth,
        copy.deepcopy(row),
        model_name,
        row["id"].rsplit("_", 1)[0],
    )
    error = verdict.get("error", {}) if not verdict["valid"] else {}
    return {
        "valid": verdict["valid"],
        "error_type": error.get("error_type"),
        "turns": len(result),
        "executed_steps": None if executed is None else [len(turn) for turn in executed],
        "executed_digest": None if executed is None else results_digest(executed),
    }


def results_digest(executed: list[list[list[str]]]) -> str:
    """One short digest of every executed step's result texts (the texts are long)."""
    text = json.dumps(executed, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


CALL_ENTRY = "multi_turn_base_0"
CALL_TEXTS = [
    "pwd()",
    "ls(a=True)",
    "cd(folder='document')",
    "cd('document')",
    "cd()",
    "cd(folder='document', extra=1)",
    "cd(folder='no_such_folder')",
    "touch(file_name='note.txt')",
    "echo(content='see ls( and cd(x)', file_name='note.txt')",
    "cat(file_name='note.txt')",
    "no_such_tool(x=1)",
    "no_such_tool(x=no_other())",
    "GorillaFileSystem.ls()",
    "ls(a=inf)",
    "mean(numbers=[1.0, -2.5, 3])",
    "mean(numbers=(1, 2))",
    "add(a=1, b=2)",
    "add(a=-1, b=+2)",
    "add(a=1, b=2",
    "add(a=1, a=2)",
    "add(class=1)",
    "add(my key=1)",
    "(a=1)",
    "run(command='ls')",
    "remove(path='x')",
    "x.kill(n=1)",
    "touch(file_name=pwd())",
    "mkdir(dir_name={'a': 1})",
    "mkdir(dir_name=None)",
    "sort(file_name='final_report.pdf')",
    "post_tweet(content='hello', tags=['#a'], mentions=[])",
    "list_all_following()",
    "authenticate_twitter(username='x', password='y')",
    "wc(file_name='note.txt', mode='w')",
    "du(human_readable=True)",
    "",
    "pwd",
]
"""Call texts run one by one, with their official results, on one item's backends."""


def call_vectors() -> list[dict[str, Any]]:
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (
        execute_multi_turn_func_call,
    )

    row = next(r for r in _jsonl(DATA / "BFCL_v4_multi_turn_base.json") if r["id"] == CALL_ENTRY)
    classes = [*row["involved_classes"], "MathAPI"]
    results, _ = execute_multi_turn_func_call(
        CALL_TEXTS, row["initial_config"], classes, "calls-model", CALL_ENTRY
    )
    return [
        {
            "id": CALL_ENTRY,
            "classes": classes,
            "label": "calls_model",
            "initial_config": row["initial_config"],
            "calls": CALL_TEXTS,
            "results": results,
        }
    ]


def main() -> None:
    OUT_CALLS.write_text("".join(json.dumps(v) + "\n" for v in call_vectors()), encoding="utf-8")
    rng = random.Random(SEED)
    vectors = []
    number = 0
    for category in CATEGORIES:
        ids = set(pick_rows(category, rng))
        rows = {r["id"]: r for r in _jsonl(DATA / f"BFCL_v4_{category}.json") if r["id"] in ids}
        truths = {
            t["id"]: t["ground_truth"]
            for t in _jsonl(DATA / "possible_answer" / f"BFCL_v4_{category}.json")
            if t["id"] in ids
        }
        for entry_id in sorted(rows, key=lambda i: int(i.rsplit("_", 1)[1])):
            row, truth = rows[entry_id], truths[entry_id]
            for mode in ("fc", "prompt"):
                for mutation, plan in scripts(row, truth, mode).items():
                    number += 1
                    model_name = f"vec-{number}"
                    direct = mutation.startswith("result:")
                    official = run_official(row, truth, mode, model_name, plan, direct)
                    vectors.append(
                        {
                            "category": category,
                            "id": entry_id,
                            "mode": mode,
                            "mutation": mutation,
                            "model_name": model_name,
                            "script" if not direct else "result": plan,
                            **official,
                        }
                    )
    with OUT_VECTORS.open("w", encoding="utf-8") as out:
        for vector in vectors:
            out.write(json.dumps(vector, sort_keys=True) + "\n")
    passed = sum(v["valid"] for v in vectors)
    print(f"{len(vectors)} vectors, {passed} valid")


if __name__ == "__main__":
    main()
