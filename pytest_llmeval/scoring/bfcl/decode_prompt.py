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
import warnings
from collections.abc import Callable
from typing import Any

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
            tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise DecodeError(f"not Python call syntax: {exc}") from exc
    try:
        return _calls(tree.body)
    except _EVAL_ERRORS as exc:
        raise DecodeError(f"cannot read a value: {exc}") from exc


def _calls(body: ast.expr) -> list[DecodedCall]:
    if isinstance(body, ast.Call):
        return [_call(body)]
    if not isinstance(body, ast.List | ast.Tuple | ast.Set):
        raise DecodeError(f"expected a list of calls, got {type(body).__name__}")
    calls: list[DecodedCall] = []
    for element in body.elts:
        if not isinstance(element, ast.Call):
            raise DecodeError(f"expected a call, got {type(element).__name__}")
        calls.append(_call(element))
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


def _call(node: ast.Call) -> DecodedCall:
    arguments: dict[str, Any] = {}
    for keyword in node.keywords:
        name = DOUBLE_STAR if keyword.arg is None else keyword.arg
        arguments[name] = _value(keyword.value)
    return {_call_name(node.func): arguments}


def _value(node: ast.expr) -> Any:
    """One argument value, by the official decoder's rules (module docstring)."""
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else node.value
    if isinstance(node, ast.UnaryOp):
        if not isinstance(node.operand, ast.Constant):
            raise DecodeError("a unary operator on something that is not a literal")
        literal: Any = node.operand.value
        return -literal  # the official reading, whatever the operator
    if isinstance(node, ast.List):
        return [_value(element) for element in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_value(element) for element in node.elts)
    if isinstance(node, ast.Dict):
        return {_value(key): _value(value) for key, value in _entries(node)}
    if isinstance(node, ast.BinOp):
        return _arith(node)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return _call(node) if node.keywords else ast.unparse(node)
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


def _arith(node: ast.expr) -> Any:
    """Evaluate arithmetic over literals as Python would; anything else is a decode failure."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_arith(node.operand))
    if isinstance(node, ast.BinOp):
        left, right = _arith(node.left), _arith(node.right)
        _check_size(node.op, left, right)
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.List):
        return [_arith(element) for element in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_arith(element) for element in node.elts)
    if isinstance(node, ast.Set):
        return {_arith(element) for element in node.elts}
    if isinstance(node, ast.Dict):
        return {_arith(key): _arith(value) for key, value in _entries(node)}
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
