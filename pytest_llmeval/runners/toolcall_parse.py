"""Tool calls from a local model's generated text (pure functions, no model needed).

Open-weights chat models write tool calls as text, in one of three common forms:

* **tagged** (Qwen, Hermes, ...): ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``,
  possibly several, possibly with text around them; an unclosed last block (generation hit
  its token limit) counts too;
* **bare JSON** (Llama 3.x): the whole answer is ``{"name": ..., "arguments": {...}}`` (or
  ``"parameters"``), or a JSON array of such objects, optionally in a ```` ```json ```` fence;
* **pythonic** (Llama 3.2/4, ...): the whole answer is ``[f(a=1, b="x"), web.search(q="y")]``,
  parsed with :mod:`ast` and :func:`ast.literal_eval`, so only literal values are accepted and
  nothing is ever evaluated.

Text that looks like a tool call but cannot be read (bad JSON, a call without a name, a
non-literal argument) becomes a :class:`ToolCall` whose ``arguments_error`` holds the raw text;
parsing never raises. Text that does not look like a tool call is the model's answer.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from pytest_llmeval.core.ast_parse import parse
from pytest_llmeval.core.models import ToolCall

_TAG_OPEN = "<tool_call>"
_TAG_CLOSE = "</tool_call>"
_TAGGED = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_FENCE = re.compile(r"\A```(?:json|python)?\s*\n?(.*?)\n?```\Z", re.DOTALL)
_JSON_LOOK = re.compile(r'\A\[?\s*\{\s*"')
_NAME_KEY = re.compile(r'"name"\s*:')
_ARGS_KEY = re.compile(r'"(?:arguments|parameters)"\s*:')
_PY_LOOK = re.compile(r"\A\[\s*[A-Za-z_][\w.]*\s*\(")
_NAME_IN_TEXT = re.compile(r'"name"\s*:\s*"([^"\\]*)"')
_PY_LITERALS = {"true": True, "false": False, "null": None}


def parse_tool_calls(text: str) -> tuple[str, list[ToolCall]]:
    """Split generated text into the answer text and the tool calls it makes.

    Returns ``(text, calls)``: with tagged calls, ``text`` is what is left outside the tags
    (stripped); with a bare JSON or pythonic answer it is ``""``; without tool calls it is the
    input unchanged.
    """
    if _TAG_OPEN in text:
        return _parse_tagged(text)
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if _JSON_LOOK.match(body) and _NAME_KEY.search(body) and _ARGS_KEY.search(body):
        calls = _parse_json_calls(body)
        if calls is not None:
            return "", calls
    if _PY_LOOK.match(body):
        calls = _parse_pythonic(body)
        if calls is not None:
            return "", calls
    return text, []


def _parse_tagged(text: str) -> tuple[str, list[ToolCall]]:
    calls = [_call_from_json_text(m.group(1).strip()) for m in _TAGGED.finditer(text)]
    rest = _TAGGED.sub("", text).replace(_TAG_CLOSE, "")
    return rest.strip(), calls


def _parse_json_calls(body: str) -> list[ToolCall] | None:
    """A bare JSON answer: calls when every object names a tool and carries its arguments,
    ``None`` when it is some other JSON (an answer that happens to be JSON)."""
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        return [_unreadable(body)]
    items = value if isinstance(value, list) else [value]
    if not items or not all(_is_call_object(item) for item in items):
        return None
    return [_call_from_value(item, json.dumps(item, ensure_ascii=False)) for item in items]


def _is_call_object(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    if isinstance(value.get("function"), dict):
        value = value["function"]
    return "name" in value and ("arguments" in value or "parameters" in value)


def _call_from_json_text(raw: str) -> ToolCall:
    body = raw
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        return _unreadable(raw)
    return _call_from_value(value, raw)


def _call_from_value(value: Any, raw: str) -> ToolCall:
    """A call from a decoded JSON object: ``{name, arguments|parameters, id?}`` or the OpenAI
    ``{type: function, function: {name, arguments}}`` shape; anything else is unreadable."""
    if not isinstance(value, dict):
        return _unreadable(raw)
    call_id = value.get("id")
    if isinstance(value.get("function"), dict):
        value = value["function"]
    name = value.get("name")
    if not isinstance(name, str) or not name:
        return _unreadable(raw)
    args = value.get("arguments", value.get("parameters", {}))
    if args is None:
        args = {}
    if isinstance(args, str):
        try:
            decoded = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            decoded = None
        if not isinstance(decoded, dict):
            return ToolCall(id=_id(call_id), name=name, arguments_error=args)
        args = decoded
    if not isinstance(args, dict):
        return ToolCall(
            id=_id(call_id), name=name, arguments_error=json.dumps(args, ensure_ascii=False)
        )
    return ToolCall(id=_id(call_id), name=name, arguments=args)


def _parse_pythonic(body: str) -> list[ToolCall] | None:
    """``[f(a=1), g.h(b="x")]`` → calls; ``None`` when it is a list of something else."""
    try:
        tree = parse(body, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return [_unreadable(body)]
    if not isinstance(tree, ast.List) or not tree.elts:
        return None
    if not all(isinstance(e, ast.Call) for e in tree.elts):
        return None
    calls: list[ToolCall] = []
    for element in tree.elts:
        assert isinstance(element, ast.Call)
        raw = ast.get_source_segment(body, element) or ""
        name = _dotted_name(element.func)
        if name is None or element.args or any(k.arg is None for k in element.keywords):
            calls.append(ToolCall(name=name or "", arguments_error=raw))
            continue
        try:
            args = {k.arg: _literal(k.value) for k in element.keywords if k.arg is not None}
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            calls.append(ToolCall(name=name, arguments_error=raw))
            continue
        calls.append(ToolCall(name=name, arguments=args))
    return calls


def _dotted_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted_name(node.value)
        return f"{base}.{node.attr}" if base is not None else None
    return None


def _literal(node: ast.expr) -> Any:
    """:func:`ast.literal_eval` of one node, with JSON's ``true``/``false``/``null`` too."""
    if isinstance(node, ast.Name) and node.id in _PY_LITERALS:
        return _PY_LITERALS[node.id]
    if isinstance(node, ast.List):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("dict unpacking is not a literal")
        return {
            _literal(k): _literal(v)
            for k, v in zip(node.keys, node.values, strict=True)
            if k is not None
        }
    return ast.literal_eval(node)


def _unreadable(raw: str) -> ToolCall:
    """A tool-call-looking text that could not be read: kept whole in ``arguments_error``."""
    found = _NAME_IN_TEXT.search(raw) or re.match(r"\A\[?\s*([A-Za-z_][\w.]*)\s*\(", raw)
    return ToolCall(name=found.group(1) if found else "", arguments_error=raw)


def _id(value: Any) -> str:
    return value if isinstance(value, str) else ""
