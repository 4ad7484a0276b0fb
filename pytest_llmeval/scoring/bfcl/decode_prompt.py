"""Prompt mode, Python: a reply's text read as a list of calls, as the official decoder reads it.

The text is parsed with :mod:`ast` and read node by node; nothing in it is ever run. The
official decoder's rules, with its quirks:

* Backticks, newlines and spaces are stripped at the *ends* of the text; a ``[`` is added in
  front when it does not start with one, and a ``]`` at the back when it does not end with
  one. So a plain ```` ``` ```` fence decodes, a ```` ```python ```` fence does not, and prose
  before the calls fails.
* The result must be one call or a list (tuple, set) of calls. A call's name is its dotted
  attribute path (``math.factorial``); keyword arguments become the arguments and **positional
  arguments are dropped**. A ``**mapping`` keyword becomes the argument ``**``
  (:data:`~pytest_llmeval.scoring.bfcl.calls.DOUBLE_STAR`).
* Values: literals as Python literals (``...`` as the string ``"..."``); a bare name as its
  own text; lists, tuples and dicts element by element; a call without keyword arguments as
  its source text (``ast.unparse``), one with keyword arguments as a nested ``{name: args}``;
  a subscript as ``value[slice]`` source text. A unary operator applied to a literal
  **negates** it, whatever the operator: ``+5`` reads as ``-5``, ``not True`` as ``-1``.
  Attributes (``math.pi``), f-strings, comparisons, lambdas and the rest fail.
* Arithmetic (a binary operator anywhere in a value, ``149 + 1``) is evaluated. The official
  decoder hands its source text to ``eval()``; here only literals, containers of literals and
  operators are evaluated, with Python's own semantics, and with caps on powers and
  repetitions. Arithmetic over names or calls (``len(x) + 1``), which the official decoder
  would run, fails to decode here instead: the one deliberate difference.
"""

from __future__ import annotations

import ast
import operator
import re
import warnings
from collections.abc import Callable
from itertools import compress
from typing import Any

from pytest_llmeval.core.ast_parse import parse
from pytest_llmeval.scoring.bfcl.calls import DOUBLE_STAR, DecodedCall, DecodeError

MAX_POWER_BITS = 1_000_000
"""The largest integer power (in bits, estimated) the arithmetic evaluates."""

MAX_REPEAT_LENGTH = 10_000_000
"""The longest sequence a repetition (``"ab" * 3``) may build."""

MAX_SHIFT = 100_000
"""The largest left shift the arithmetic evaluates."""

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.BitAnd: operator.and_,
    ast.MatMult: operator.matmul,
}

_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Invert: operator.invert,
    ast.Not: operator.not_,
}

_SIZED = frozenset({str, bytes, list, tuple, set, dict})
"""The types whose results :func:`_check_weight` counts."""

_FORMAT_SPEC = re.compile(r"%[^a-zA-Z%]*")

_EVAL_ERRORS = (TypeError, ValueError, ArithmeticError, RecursionError, MemoryError)


def wrap_prompt_text(text: str) -> str:
    """The official pre-processing: strip backticks, newlines and spaces at the ends; bracket."""
    body = text.strip("`\n ")
    if not body.startswith("["):
        body = "[" + body
    if not body.endswith("]"):
        body = body + "]"
    return body


def decode_prompt_python(text: str) -> list[DecodedCall]:
    """Decode a prompt-mode reply into ``[{name: arguments}]``; raise :class:`DecodeError`."""
    source = wrap_prompt_text(text).strip().strip("'")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes warn; the official decoder shrugs
            tree = parse(source, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise DecodeError(f"not Python call syntax: {exc}") from exc
    try:
        return _calls(tree.body, [MAX_REPEAT_LENGTH])
    except _EVAL_ERRORS as exc:
        raise DecodeError(f"cannot read a value: {exc}") from exc


def _calls(body: ast.expr, budget: list[int]) -> list[DecodedCall]:
    if isinstance(body, ast.Call):
        return [_call(body, budget)]
    if not isinstance(body, ast.List | ast.Tuple | ast.Set):
        raise DecodeError(f"expected a list of calls, got {type(body).__name__}")
    calls: list[DecodedCall] = []
    for element in body.elts:
        if not isinstance(element, ast.Call):
            raise DecodeError(f"expected a call, got {type(element).__name__}")
        calls.append(_call(element, budget))
    return calls


def _call_name(func: ast.expr) -> str:
    """The dotted name of what is called; parts that are not names or attributes are dropped."""
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts))


def _call(node: ast.Call, budget: list[int]) -> DecodedCall:
    arguments: dict[str, Any] = {}
    for keyword in node.keywords:
        name = DOUBLE_STAR if keyword.arg is None else keyword.arg
        arguments[name] = _value(keyword.value, budget)
    return {_call_name(node.func): arguments}


def _value(node: ast.expr, budget: list[int]) -> Any:
    """One argument value, by the official decoder's rules (module docstring)."""
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else node.value
    if isinstance(node, ast.UnaryOp):
        if not isinstance(node.operand, ast.Constant):
            raise DecodeError("a unary operator on something that is not a literal")
        literal: Any = node.operand.value
        return -literal  # the official reading, whatever the operator
    if isinstance(node, ast.List):
        return [_value(element, budget) for element in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_value(element, budget) for element in node.elts)
    if isinstance(node, ast.Dict):
        return {_value(key, budget): _value(value, budget) for key, value in _entries(node)}
    if isinstance(node, ast.BinOp):
        return _arith(node, budget)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return _call(node, budget) if node.keywords else ast.unparse(node)
    if isinstance(node, ast.Subscript):
        return f"{ast.unparse(node.value)}[{ast.unparse(node.slice)}]"
    raise DecodeError(f"unsupported value: {type(node).__name__}")


def _entries(node: ast.Dict) -> list[tuple[ast.expr, ast.expr]]:
    """A dict literal's key and value nodes; a ``**mapping`` entry fails."""
    entries = []
    for key, value in zip(node.keys, node.values, strict=True):
        if key is None:
            raise DecodeError("a ** entry in a dict literal")
        entries.append((key, value))
    return entries


def _arith(node: ast.expr, budget: list[int]) -> Any:
    """Evaluate arithmetic over literals as Python would; anything else is a decode failure."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_arith(node.operand, budget))
    if isinstance(node, ast.BinOp):
        left, right = _arith(node.left, budget), _arith(node.right, budget)
        _check_size(node.op, left, right)
        result = _BINARY[type(node.op)](left, right)
        _check_weight(result, budget)
        return result
    if isinstance(node, ast.List):
        return [_arith(element, budget) for element in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_arith(element, budget) for element in node.elts)
    if isinstance(node, ast.Set):
        return {_arith(element, budget) for element in node.elts}
    if isinstance(node, ast.Dict):
        return {_arith(key, budget): _arith(value, budget) for key, value in _entries(node)}
    raise DecodeError(
        f"arithmetic over {type(node).__name__} is not evaluated "
        "(the official decoder would eval it)"
    )


def _check_size(op: ast.operator, left: Any, right: Any) -> None:
    """Refuse the operations whose result would be huge (the official decoder just runs them)."""
    if (
        isinstance(op, ast.Pow)
        and isinstance(left, int)
        and isinstance(right, int)
        and abs(left) > 1
        and right * max(abs(left).bit_length(), 1) > MAX_POWER_BITS
    ):
        raise DecodeError("a power too large to evaluate")
    if isinstance(op, ast.Mult):
        for seq, count in ((left, right), (right, left)):
            sized = isinstance(seq, str | bytes | list | tuple) and isinstance(count, int)
            if sized and len(seq) * count > MAX_REPEAT_LENGTH:
                raise DecodeError("a repetition too long to evaluate")
    if isinstance(op, ast.LShift) and isinstance(right, int) and right > MAX_SHIFT:
        raise DecodeError("a shift too large to evaluate")
    if (
        isinstance(op, ast.Mult)
        and isinstance(left, int)
        and isinstance(right, int)
        and left.bit_length() + right.bit_length() > MAX_POWER_BITS
    ):
        raise DecodeError("a product too large to evaluate")
    if isinstance(op, ast.Mod) and isinstance(left, str | bytes):
        # printf-style formatting: a width or precision builds a string that long
        text = left.decode("latin-1") if isinstance(left, bytes) else left
        specs = _FORMAT_SPEC.findall(text)
        if (
            any("*" in spec for spec in specs)
            or sum(int(digits) for spec in specs for digits in re.findall(r"\d+", spec))
            > MAX_REPEAT_LENGTH
        ):
            raise DecodeError("a formatting too long to evaluate")


def _check_weight(value: Any, budget: list[int]) -> None:
    """Spend the size of a computed result from the reply's budget (``[MAX_REPEAT_LENGTH]`` per
    reply); refuse once it is spent. Elements are counted through shared references
    (``[[1] * 10**7] * 10**7``), whose writing-out would not end, and every computed result
    counts, so many large computations in one reply fail too."""
    if type(value) not in _SIZED:
        return
    pending = [value]
    while pending:
        item = pending.pop()
        budget[0] -= len(item)
        if budget[0] < 0:
            break
        if isinstance(item, dict):
            item = [*item.keys(), *item.values()]
        if not isinstance(item, str | bytes):  # only what has a size is walked (at C speed)
            pending.extend(compress(item, map(_SIZED.__contains__, map(type, item))))
    if budget[0] < 0:
        raise DecodeError("a value too large to evaluate")
