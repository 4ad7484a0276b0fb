"""Regenerate the BFCL parity vectors: real rows, mutated replies, the OFFICIAL verdicts.

This script runs in a scratch virtualenv that holds the official package, never in the
project's own environment (the package pulls in every model SDK):

    python -m venv /work/scratch/bfcl-venv
    /work/scratch/bfcl-venv/bin/pip install bfcl-eval==2026.3.23 soundfile
    /work/scratch/bfcl-venv/bin/python tests/scoring/bfcl/make_vectors.py

(``soundfile`` is a missing dependency of the package's ``qwen_agent`` import chain.) It

1. samples rows per single-turn category from the package's ``bfcl_eval/data`` (a fixed seed,
   plus the rows the spec names) and writes them, with their ground truth, to
   ``tests/data/bfcl/`` (JSON Lines, as the package stores them);
2. builds model replies for each row: the correct calls, and mutations of every kind the
   official checker has a rule for (types, optional and extra arguments, order, string
   normalisation, names, ``+N``, nested dicts, parallel permutations, empty and non-JSON
   replies, fences, …), in FC mode (tool calls) and prompt mode (Python call text, and for
   Java and JavaScript their call text, with the tree-sitter readers' quirks);
3. runs the official per-item pipeline on each (``eval_runner._evaluate_single_ast_entry`` or
   ``_evaluate_single_relevance_entry``, with the OpenAI-compatible handler's ``decode_ast``)
   and writes ``tests/scoring/bfcl/vectors.jsonl``: one line per reply with the official
   ``valid`` and ``error_type`` (or ``crash`` where the official checker raises).

``test_parity.py`` then requires our checker to agree on every line. The replies here are
built by this script, so nothing hostile reaches the official ``eval()``.
"""

from __future__ import annotations

import copy
import functools
import json
import random
import sys
import types
from pathlib import Path
from typing import Any

import bfcl_eval
from bfcl_eval.constants.enums import Language, ReturnFormat
from bfcl_eval.eval_checker import eval_runner
from bfcl_eval.model_handler.api_inference.openai_completion import OpenAICompletionsHandler

DATA = Path(bfcl_eval.__file__).parent / "data"
HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
OUT_DATA = REPO / "tests" / "data" / "bfcl"
OUT_VECTORS = HERE / "vectors.jsonl"

MODEL = {"fc": "gpt-4o-2024-11-20-FC", "prompt": "gpt-4o-2024-11-20"}
"""Registry names whose ``underscore_to_dot`` the checker reads (True in FC, False in prompt)."""

SAMPLE = {
    "simple_python": 5,
    "simple_java": 5,
    "simple_javascript": 5,
    "multiple": 4,
    "parallel": 4,
    "parallel_multiple": 4,
    "live_simple": 4,
    "live_multiple": 4,
    "live_parallel": 3,
    "live_parallel_multiple": 3,
    "irrelevance": 3,
    "live_irrelevance": 3,
    "live_relevance": 3,
}
NAMED = [
    # the first row of each parameter shape (dict, tuple, arrays of each element type)
    "simple_python_13",
    "simple_python_37",
    "simple_python_79",
    "simple_python_83",
    "simple_python_89",
    "simple_python_96",
    "simple_python_122",
    "multiple_5",
    "multiple_8",
    "multiple_119",
    "live_simple_27-7-0",
    "live_simple_40-17-0",
    "live_simple_165-98-0",
    "simple_java_1",
    "simple_java_22",
    "simple_java_24",
    "simple_java_27",
    "simple_java_35",
    "simple_java_36",
    "simple_java_69",
    "simple_java_72",
    "simple_java_81",
    "simple_javascript_2",
    "simple_javascript_3",
    "simple_javascript_5",
    "simple_javascript_24",
    # the rows the spec names (dotted names, greedy matching, unpassable items)
    "simple_python_1",
    "parallel_178",
    "parallel_multiple_12",
    "parallel_multiple_26",
    "live_simple_106-63-0",
    "live_simple_112-68-0",
    "live_multiple_507-149-4",
    "live_multiple_862-181-3",
    "live_multiple_964-207-0",
]
SEED = 20260323


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _sample() -> dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]] | None]]:
    rng = random.Random(SEED)
    chosen: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]] | None]] = {}
    for category, size in SAMPLE.items():
        rows = _read_jsonl(DATA / f"BFCL_v4_{category}.json")
        truth_path = DATA / "possible_answer" / f"BFCL_v4_{category}.json"
        truths = {t["id"]: t for t in _read_jsonl(truth_path)} if truth_path.exists() else None
        picked = sorted(rng.sample(range(len(rows)), size))
        ids = {rows[i]["id"] for i in picked} | {r["id"] for r in rows if r["id"] in NAMED}
        kept = [r for r in rows if r["id"] in ids]
        chosen[category] = (kept, [truths[r["id"]] for r in kept] if truths else None)
    return chosen


# ---------------------------------------------------------------------- building replies


def _first(accepted: list[Any]) -> Any:
    return next((v for v in accepted if v != ""), "")


def _last(accepted: list[Any]) -> Any:
    return next((v for v in reversed(accepted) if v != ""), "")


def _pick(args: dict[str, list[Any]], chooser: Any) -> dict[str, Any]:
    picked = {}
    for name, accepted in args.items():
        value = chooser(accepted)
        if value == "" and "" in accepted:
            continue
        if isinstance(value, dict):  # a nested dict: accepted values one level down
            value = {k: chooser(v) for k, v in value.items() if chooser(v) != ""}
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            value = [{k: chooser(v) for k, v in d.items() if chooser(v) != ""} for d in value]
        picked[name] = value
    return picked


def _calls(truth: list[dict[str, Any]], chooser: Any = _first) -> list[tuple[str, dict]]:
    return [(name, _pick(args, chooser)) for call in truth for name, args in call.items()]


def _docs(row: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {doc["name"]: doc for doc in row["function"]}


JAVA_STYLE = {"suffixes": True, "quoted_elements": True}
"""How :func:`_java` writes numbers and array elements (mutations switch these off)."""


def _java(value: Any, detail: dict[str, Any], quote: bool = False) -> str:
    kind = detail.get("type")
    if isinstance(value, bool):
        return "true" if value else "false"
    if kind == "long" and isinstance(value, int) and JAVA_STYLE["suffixes"]:
        return f"{value}L"
    if kind == "float" and isinstance(value, int | float) and JAVA_STYLE["suffixes"]:
        return f"{value}f"
    if kind in ("Array", "ArrayList") and isinstance(value, list):
        inner = {"type": detail.get("items", {}).get("type", "any")}
        quoted = inner["type"] == "String" and JAVA_STYLE["quoted_elements"]
        parts = ", ".join(_java(v, inner, quote=quoted) for v in value)
        if kind == "Array":
            return f"new {inner['type']}[]{{{parts}}}"
        return f"new ArrayList<>(Arrays.asList({parts}))"
    if kind == "HashMap" and isinstance(value, dict):
        puts = " ".join(f'put("{k}", {_java(v, {}, quote=True)});' for k, v in value.items())
        return f"new HashMap<String, Object>() {{{{ {puts} }}}}"
    if isinstance(value, str):
        return f'"{value}"' if quote else value
    return json.dumps(value) if isinstance(value, list | dict) else str(value)


def _js(value: Any, detail: dict[str, Any], quote: bool = False) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_js(v, {}, quote=True) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f'"{k}": {_js(v, {}, quote=True)}' for k, v in value.items()) + "}"
    if isinstance(value, str):
        return f'"{value}"' if quote else value
    return str(value)


def _as_source(language: str, row: dict[str, Any], calls: list[tuple[str, dict]]) -> list:
    """Java/JS argument values as the source text the model would send in FC mode."""
    if language == "python":
        return calls
    docs = _docs(row)
    render = _java if language == "java" else _js
    out = []
    for name, args in calls:
        props = docs.get(name, {}).get("parameters", {}).get("properties", {})
        out.append((name, {k: render(v, props.get(k, {})) for k, v in args.items()}))
    return out


def _fc(calls: list[tuple[str, dict]], fc_names: bool = True) -> list[list[str]]:
    return [[name.replace(".", "_") if fc_names else name, json.dumps(a)] for name, a in calls]


def _py_value(value: Any, plus: bool = False) -> str:
    if plus and isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return f"+{value!r}"
    return repr(value)


def _prompt(calls: list[tuple[str, dict]], plus: bool = False, underscore: bool = False) -> str:
    parts = []
    for name, args in calls:
        shown = name.replace(".", "_") if underscore else name
        body = ", ".join(f"{k}={_py_value(v, plus)}" for k, v in args.items())
        parts.append(f"{shown}({body})")
    return "[" + ", ".join(parts) + "]"


def _mutations(row: dict[str, Any], truth: list[dict[str, Any]]) -> list[tuple[str, list]]:
    """(label, calls) pairs: each a list of (name, python args) to render in each mode."""
    base = _calls(truth)
    docs = _docs(row)
    out: list[tuple[str, list]] = [
        ("correct", base),
        ("correct_last_alternative", _calls(truth, _last)),
    ]
    first_name, first_args = base[0]
    doc = docs.get(first_name, {"parameters": {"properties": {}, "required": []}})
    props = doc["parameters"]["properties"]
    required = doc["parameters"].get("required", [])
    gt_args = truth[0][first_name]

    def with_first(args: dict[str, Any], label: str) -> None:
        out.append((label, [(first_name, args), *base[1:]]))

    for name, accepted in gt_args.items():
        if "" in accepted and name in first_args:
            with_first({k: v for k, v in first_args.items() if k != name}, f"omit_optional:{name}")
            break
    for name in required:
        if name in first_args:
            with_first({k: v for k, v in first_args.items() if k != name}, f"omit_required:{name}")
            break
    for name, accepted in gt_args.items():
        if "" not in accepted and name not in required and name in first_args:
            with_first({k: v for k, v in first_args.items() if k != name}, f"omit_truth_arg:{name}")
            break
    with_first({**first_args, "extra_param": "x"}, "extra_param")
    unused_optional = [p for p in props if p not in gt_args]
    if unused_optional:
        with_first({**first_args, unused_optional[0]: "x"}, "documented_not_in_truth")
    for name, value in first_args.items():
        kind = props.get(name, {}).get("type")
        label = f"{kind}:{name}"
        if isinstance(value, bool):
            with_first({**first_args, name: int(value)}, f"bool_as_int:{label}")
            with_first({**first_args, name: str(value).lower()}, f"bool_as_str:{label}")
        elif isinstance(value, int):
            with_first({**first_args, name: str(value)}, f"int_as_str:{label}")
            with_first({**first_args, name: float(value)}, f"int_as_float:{label}")
            with_first({**first_args, name: value + 1}, f"int_off_by_one:{label}")
        elif isinstance(value, float):
            if value == int(value):
                with_first({**first_args, name: int(value)}, f"float_as_int:{label}")
            with_first({**first_args, name: str(value)}, f"float_as_str:{label}")
            with_first({**first_args, name: value * 2 + 1}, f"float_wrong:{label}")
        elif isinstance(value, str):
            with_first({**first_args, name: value.upper()}, f"str_upper:{label}")
            with_first({**first_args, name: f" {value}, ./-_*^"}, f"str_punct_ignored:{label}")
            with_first({**first_args, name: value + "!"}, f"str_bang:{label}")
            with_first({**first_args, name: value.replace('"', "'")}, f"str_quotes:{label}")
            with_first({**first_args, name: value + " extra"}, f"str_wrong:{label}")
            with_first({**first_args, name: [value]}, f"str_as_list:{label}")
            with_first({**first_args, name: 7}, f"str_as_int:{label}")
        elif isinstance(value, list):
            if len(value) > 1:
                with_first({**first_args, name: list(reversed(value))}, f"list_reversed:{label}")
            with_first({**first_args, name: value[:-1]}, f"list_shorter:{label}")
            with_first({**first_args, name: [str(v) for v in value]}, f"list_items_str:{label}")
            with_first(
                {**first_args, name: [*value, value[0]] if value else [1]}, f"list_longer:{label}"
            )
            if value and all(isinstance(v, str) for v in value):
                with_first({**first_args, name: [v.upper() for v in value]}, f"list_upper:{label}")
            with_first({**first_args, name: ",".join(map(str, value))}, f"list_as_str:{label}")
            with_first({**first_args, name: tuple(value)}, f"list_as_tuple:{label}")
            with_first({**first_args, name: []}, f"list_empty:{label}")
        elif isinstance(value, dict):
            if value:
                key = next(iter(value))
                with_first(
                    {**first_args, name: {k: v for k, v in value.items() if k != key}},
                    f"dict_missing_key:{label}",
                )
                bumped = value[key].upper() if isinstance(value[key], str) else "zz"
                with_first(
                    {**first_args, name: {**value, key: bumped}}, f"dict_value_changed:{label}"
                )
            with_first({**first_args, name: {**value, "extra_key": 1}}, f"dict_extra_key:{label}")
            with_first({**first_args, name: json.dumps(value)}, f"dict_as_str:{label}")
    out.append(("wrong_function_name", [(first_name + "_x", first_args), *base[1:]]))
    others = [n for n in docs if n not in {c[0] for c in base}]
    if others:
        out.append(("other_documented_function", [(others[0], first_args), *base[1:]]))
    if len(base) > 1:
        out.append(("reversed_order", list(reversed(base))))
        out.append(("rotated_order", base[1:] + base[:1]))
        out.append(("drop_last_call", base[:-1]))
    out.append(("duplicate_first_call", [base[0], *base]))
    return out


def _fc_extras(calls: list) -> list[tuple[str, Any]]:
    name = calls[0][0].replace(".", "_")
    return [
        ("fc_empty_text", ""),
        ("fc_none", None),
        ("fc_prose", "I would call a function for this."),
        ("fc_args_single_quotes", [[name, "{'a': 1}"]]),
        ("fc_args_truncated", [[name, '{"a": 1']]),
        ("fc_args_list", [[name, "[1, 2]"]]),
        ("fc_args_null", [[name, "null"]]),
        ("fc_args_empty_object", [[name, "{}"]]),
        ("fc_args_nan", [[name, '{"a": NaN}']]),
    ]


def _prompt_extras(calls: list) -> list[tuple[str, str]]:
    text = _prompt(calls)
    bare = text[1:-1]
    name, args = calls[0]
    first_value = next(iter(args.values()), 1)
    key = next(iter(args), "a")
    return [
        ("prompt_no_brackets", bare),
        ("prompt_plain_fence", f"```\n{text}\n```"),
        ("prompt_python_fence", f"```python\n{text}\n```"),
        ("prompt_leading_prose", f"Sure, here it is: {text}"),
        ("prompt_trailing_space_newline", f"\n {text} \n"),
        ("prompt_trailing_tab", f"{text}\t"),
        ("prompt_empty_list", "[]"),
        ("prompt_empty", ""),
        ("prompt_none_text", "None"),
        ("prompt_list_of_dict", "[{}]"),
        ("prompt_tuple_of_lists", f"{text}, {text}"),
        ("prompt_positional", f"[{name}({first_value!r})]"),
        ("prompt_positional_and_keywords", f"[{name}({first_value!r}, {bare.split('(', 1)[1]}]"),
        ("prompt_kwargs_splat", f"[{name}(**{{'{key}': {first_value!r}}})]"),
        ("prompt_name_value", f"[{name}({key}=some_variable)]"),
        ("prompt_attribute_value", f"[{name}({key}=math.pi)]"),
        ("prompt_call_value", f"[{name}({key}=compute(3))]"),
        ("prompt_nested_call_value", f"[{name}({key}=compute(x=3))]"),
        ("prompt_subscript_value", f"[{name}({key}=data[0])]"),
        ("prompt_fstring_value", f'[{name}({key}=f"x{{1}}")]'),
        ("prompt_lambda_value", f"[{name}({key}=lambda: 1)]"),
        ("prompt_ellipsis_value", f"[{name}({key}=...)]"),
        ("prompt_not_value", f"[{name}({key}=not True)]"),
        ("prompt_invert_value", f"[{name}({key}=~3)]"),
        ("prompt_neg_string", f"[{name}({key}=-'a')]"),
        ("prompt_set_value", f"[{name}({key}={{1, 2}})]"),
        ("prompt_called_call", f"[{name}()({key}=1)]"),
        ("prompt_subscript_call", f"[a[0].{name}({key}=1)]"),
        ("prompt_set_of_calls", "{" + bare + "}"),
        ("prompt_comparison_value", f"[{name}({key}=1 < 2)]"),
        ("prompt_arith_float", f"[{name}({key}=1.5 * 2)]"),
        ("prompt_arith_div", f"[{name}({key}=10 / 4)]"),
        ("prompt_arith_list", f"[{name}({key}=[1] * 3)]"),
        ("prompt_arith_zero_div", f"[{name}({key}=1 / 0)]"),
    ]


def _prompt_source(language: str, row: dict[str, Any], calls: list[tuple[str, dict]]) -> str:
    """Java/JS prompt text: ``[name(k=source, ...)]``, strings written as quoted literals."""
    docs = _docs(row)
    render = _java if language == "java" else _js
    parts = []
    for name, args in calls:
        props = docs.get(name, {}).get("parameters", {}).get("properties", {})
        body = ", ".join(f"{k}={render(v, props.get(k, {}), quote=True)}" for k, v in args.items())
        parts.append(f"{name}({body})")
    return "[" + ", ".join(parts) + "]"


def _tree_extras(language: str, row: dict[str, Any], calls: list) -> list[tuple[str, str]]:
    """Java/JS prompt replies for the tree-sitter readers' rules and quirks."""
    text = _prompt_source(language, row, calls)
    bare = text[1:-1]
    name, args = calls[0]
    key = next(iter(args), "a")
    body = bare.split("(", 1)[1].rsplit(")", 1)[0] if "(" in bare else ""
    return [
        ("tree_no_brackets", bare),
        ("tree_plain_fence", f"```\n{text}\n```"),
        ("tree_language_fence", f"```{language}\n{text}\n```"),
        ("tree_leading_prose", f"Sure: {text}"),
        ("tree_prose_only", "I cannot do that."),
        ("tree_empty_list", "[]"),
        ("tree_empty", ""),
        ("tree_two_calls", f"[{bare}, {bare}]"),
        ("tree_two_statements", f"[{bare}; {bare}]"),
        ("tree_semicolon", f"[{bare};]"),
        ("tree_positional_name", f"[{name}(someVar)]"),
        ("tree_positional_string", f'[{name}("x")]'),
        ("tree_positional_true", f"[{name}(true)]"),
        ("tree_positional_false", f"[{name}(false)]"),
        ("tree_duplicate_argument", f"[{name}({key}=1, {key}=2)]"),
        ("tree_method_on_object", f"[obj.{name}({body})]"),
        ("tree_non_ascii_before", f'[{name}(note="héllo wörld", {body})]'),
        ("tree_non_ascii_value", f'[{name}({key}="café ☕")]'),
        (
            "tree_hashmap_initializer",
            f'[{name}({key}=new HashMap<String, String>() {{{{ put("a", "b"); }}}})]',
        ),
        ("tree_array_dimensions", f"[{name}({key}=new int[5])]"),
        ("tree_array_initializer", f'[{name}({key}=new String[]{{"a", "b"}})]'),
        ("tree_arraylist", f'[{name}({key}=new ArrayList<>(Arrays.asList("a", "b")))]'),
        ("tree_char_literal", f"[{name}({key}='c')]"),
        ("tree_nested_call", f"[{name}({key}=foo(1, 2))]"),
        ("tree_js_object", f'[{name}({key}={{a: 1, "b": [1, 2]}})]'),
        ("tree_js_arrow", f"[{name}({key}=() => 1)]"),
        ("tree_unary_plus", f"[{name}({key}=+5)]"),
        ("tree_quoted_number", f'[{name}({key}="5")]'),
        ("tree_single_quoted_string", f"[{name}({key}='abc')]"),
    ]


def _arith_variants(calls: list) -> list[tuple[str, str]]:
    """Prompt text whose int/float arguments are written as sums (and as ``+N``, ``-(-N)``)."""
    name, args = calls[0]
    out = []
    for key, value in args.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            rest = ", ".join(f"{k}={v!r}" for k, v in args.items() if k != key)
            tail = f", {rest}" if rest else ""
            out.append((f"prompt_sum:{key}", f"[{name}({key}={value - 1!r} + 1{tail})]"))
            out.append((f"prompt_unary_plus:{key}", f"[{name}({key}=+{value!r}{tail})]"))
            out.append((f"prompt_double_neg:{key}", f"[{name}({key}=-(-{value!r}){tail})]"))
            out.append((f"prompt_neg_neg:{key}", f"[{name}({key}=-{-value!r}{tail})]"))
            break
    return out


# ------------------------------------------------------------------ the official verdicts


def _handler(mode: str) -> Any:
    decode = functools.partial(
        OpenAICompletionsHandler.decode_ast, types.SimpleNamespace(is_fc_model=mode == "fc")
    )
    return types.SimpleNamespace(decode_ast=decode)


def _official(category: str, row: dict, truth: list | None, mode: str, output: Any) -> dict:
    raw = output
    if mode == "fc" and isinstance(output, list):
        raw = [{name: args} for name, args in output]
    handler = _handler(mode)
    try:
        if truth is None:
            result = eval_runner._evaluate_single_relevance_entry(
                handler, row["id"], copy.deepcopy(raw), copy.deepcopy(row), MODEL[mode], category
            )
        else:
            language = {"java": Language.JAVA, "javascript": Language.JAVASCRIPT}.get(
                _language(category), Language.PYTHON
            )
            fmt = ReturnFormat(language.value)
            result = eval_runner._evaluate_single_ast_entry(
                handler,
                row["id"],
                copy.deepcopy(raw),
                copy.deepcopy(truth),
                copy.deepcopy(row),
                MODEL[mode],
                category,
                language,
                fmt,
            )
    except Exception as exc:  # the official checker raised: record it
        return {"valid": False, "error_type": None, "crash": type(exc).__name__}
    return {"valid": result["valid"], "error_type": result.get("error_type")}


def _language(category: str) -> str:
    if "javascript" in category:
        return "javascript"
    return "java" if "java" in category else "python"


def main() -> int:
    sample = _sample()
    (OUT_DATA / "possible_answer").mkdir(parents=True, exist_ok=True)
    for category, (rows, truths) in sample.items():
        lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        (OUT_DATA / f"BFCL_v4_{category}.json").write_text(lines, encoding="utf-8")
        if truths is not None:
            lines = "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in truths)
            (OUT_DATA / "possible_answer" / f"BFCL_v4_{category}.json").write_text(
                lines, encoding="utf-8"
            )
    vectors: list[dict[str, Any]] = []

    seen: set[tuple[str, str, str, str]] = set()

    def add(category: str, row: dict, truth: Any, mode: str, label: str, output: Any) -> None:
        key = (category, row["id"], mode, repr(output))
        if key in seen:  # the same reply under another label: one vector is enough
            return
        seen.add(key)
        verdict = _official(category, row, truth, mode, output)
        vectors.append(
            {
                "category": category,
                "id": row["id"],
                "mode": mode,
                "mutation": label,
                "output": output,
                **verdict,
            }
        )

    for category, (rows, truths) in sample.items():
        language = _language(category)
        for index, row in enumerate(rows):
            truth = truths[index]["ground_truth"] if truths is not None else None
            if truth is None:
                _relevance_vectors(category, row, add)
                continue
            for label, calls in _mutations(row, truth):
                add(category, row, truth, "fc", label, _fc(_as_source(language, row, calls)))
                if language == "python":
                    add(category, row, truth, "prompt", label, _prompt(calls))
            base = _calls(truth)
            for label, output in _fc_extras(base):
                add(category, row, truth, "fc", label, output)
            add(
                category,
                row,
                truth,
                "fc",
                "fc_dotted_name",
                _fc(_as_source(language, row, base), fc_names=False),
            )
            if language == "java":
                add(category, row, truth, "fc", "java_json_values", _fc(base))
                quoted = [
                    (n, {k: f'"{v}"' if isinstance(v, str) else v for k, v in a.items()})
                    for n, a in _as_source(language, row, base)
                ]
                add(category, row, truth, "fc", "java_quoted_strings", _fc(quoted))
                for style in JAVA_STYLE:
                    JAVA_STYLE[style] = False
                    add(
                        category,
                        row,
                        truth,
                        "fc",
                        f"java_no_{style}",
                        _fc(_as_source(language, row, base)),
                    )
                    JAVA_STYLE[style] = True
            if language == "javascript":
                add(category, row, truth, "fc", "js_json_values", _fc(base))
                quoted = [
                    (n, {k: f"'{v}'" if isinstance(v, str) else v for k, v in a.items()})
                    for n, a in _as_source(language, row, base)
                ]
                add(category, row, truth, "fc", "js_quoted_strings", _fc(quoted))
            if language != "python":
                for label, calls in _mutations(row, truth):
                    add(category, row, truth, "prompt", label, _prompt_source(language, row, calls))
                for label, text in _tree_extras(language, row, base):
                    add(category, row, truth, "prompt", label, text)
            if language == "python":
                add(
                    category,
                    row,
                    truth,
                    "prompt",
                    "prompt_unary_plus_all",
                    _prompt(base, plus=True),
                )
                add(
                    category,
                    row,
                    truth,
                    "prompt",
                    "prompt_underscored_name",
                    _prompt(base, underscore=True),
                )
                for label, text in _prompt_extras(base) + _arith_variants(base):
                    add(category, row, truth, "prompt", label, text)
    OUT_VECTORS.write_text(
        "".join(json.dumps(v, ensure_ascii=False, sort_keys=True) + "\n" for v in vectors),
        encoding="utf-8",
    )
    print(f"{len(vectors)} vectors -> {OUT_VECTORS.relative_to(REPO)}", file=sys.stderr)
    return 0


def _relevance_vectors(category: str, row: dict, add: Any) -> None:
    doc = row["function"][0]
    name = doc["name"]
    arg = next(iter(doc["parameters"]["properties"]), "query")
    fc_name = name.replace(".", "_")
    for label, output in [
        ("fc_call", [[fc_name, json.dumps({arg: "x"})]]),
        ("fc_call_unknown_function", [["no_such_function", "{}"]]),
        ("fc_empty_object_args", [[fc_name, "{}"]]),
        ("fc_empty_text", ""),
        ("fc_none", None),
        ("fc_prose", "I cannot help with that."),
        ("fc_args_not_json", [[fc_name, "{arg: 1}"]]),
        ("fc_args_null", [[fc_name, "null"]]),
        ("fc_args_list", [[fc_name, "[]"]]),
        ("fc_two_calls", [[fc_name, "{}"], ["other", '{"a": 1}']]),
    ]:
        add(category, row, None, "fc", label, output)
    for label, text in [
        ("prompt_call", f"[{name}({arg}='x')]"),
        ("prompt_call_unknown_function", "[no_such_function(a=1)]"),
        ("prompt_call_no_args", f"[{name}()]"),
        ("prompt_empty_list", "[]"),
        ("prompt_list_of_dict", "[{}]"),
        ("prompt_empty", ""),
        ("prompt_none_text", "None"),
        ("prompt_prose", "I cannot help with that."),
        ("prompt_broken", f"[{name}({arg}='x']"),
        ("prompt_python_fence", f"```python\n[{name}({arg}='x')]\n```"),
        ("prompt_plain_fence", f"```\n[{name}({arg}='x')]\n```"),
        ("prompt_attribute_value", f"[{name}({arg}=math.pi)]"),
        ("prompt_unary_plus", f"[{name}({arg}=+1)]"),
    ]:
        add(category, row, None, "prompt", label, text)


if __name__ == "__main__":
    raise SystemExit(main())
