"""Run BFCL multi-turn calls against the official backends, without ``eval()``.

The official executor takes each call as Python text (``cd(folder='documents')``), rewrites
every ``name(`` whose name is a public method of an involved backend into
``<instance global>.name(``, refuses a few names (``kill``, ``exit``, ``run``, ...), and runs
the text with ``eval()``. This module gives the same result for the same text without running
it: the rewritten text is parsed with :mod:`ast` (a syntax error is the one ``eval`` raises,
same text), and read node by node:

* a call is allowed only on a backend instance's public method, found by name the official
  way (the method name maps to the *last* involved class that has it); positional and keyword
  arguments are passed as written, so the official exception texts (``GorillaFileSystem.sort()
  missing 1 required positional argument: ...``) come from the real call;
* argument values are literals, containers of literals, unary signs and nested backend calls
  (which the official ``eval`` runs too, in the same order);
* a name that is not a backend instance raises :class:`NameError` (``name 'foo' is not
  defined``), as ``eval`` does for an unknown function or for ``inf`` written by ``repr``.

What the official ``eval`` would run beyond that (builtins such as ``print``, the executor
module's own imports such as ``json``, arithmetic, attributes of other objects) is not run
here: the call's result is an :class:`UnsupportedCall` error naming it instead. No data item's
ground truth needs any of it.

The rewriting is done on the text, as the official does, so it also reaches into string
literals (``echo(content='see ls(')`` writes the instance's global name into the file); the
instance names therefore follow the official pattern, from the ``label`` a session is given.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import json
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from pytest_llmeval.core.ast_parse import parse

__all__ = [
    "BLOCKED_NAMES",
    "BackendSession",
    "CallResult",
    "UnsupportedCall",
    "format_result",
    "instance_global_name",
]

BLOCKED_NAMES = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})
"""Function names the official executor refuses before running a call."""

ERROR_PREFIX = "Error during execution: "
"""How the official executor writes a call that raised."""

_METHOD_CALL = re.compile(r"\b([a-zA-Z_]\w*)\s*(?=\()")
_UNSAFE_IN_NAME = re.compile(r"[-./:]")

_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Invert: operator.invert,
    ast.Not: operator.not_,
}


_EXECUTOR_GLOBALS = frozenset(dir(builtins)) | {
    "copy",
    "importlib",
    "inspect",
    "json",
    "re",
    "CLASS_FILE_PATH_MAPPING",
    "STATELESS_CLASSES",
    "execute_multi_turn_func_call",
    "is_empty_execute_response",
    "_process_method_calls",
    "__builtins__",
    "__cached__",
    "__file__",
}
"""Names the official ``eval`` finds (builtins and its module's globals): calling them is not a
``NameError`` there, so here it is :class:`UnsupportedCall`."""


class UnsupportedCall(Exception):
    """Call text the official executor would ``eval`` but this one does not run."""


@dataclass(frozen=True)
class CallResult:
    """One executed call: what the backend returned, or what it raised."""

    call: str
    """The call text as given (before the instance names are written in)."""
    value: Any = None
    """What the call returned (``None`` when it raised)."""
    error: Exception | None = None
    """What the call raised (its text is the result), or ``None``."""

    @property
    def text(self) -> str:
        """The official result string: the value formatted, or ``Error during execution: …``."""
        if self.error is not None:
            return ERROR_PREFIX + str(self.error)
        return format_result(self.value)


def format_result(value: Any) -> str:
    """A backend's return value as the official executor writes it.

    A ``str`` as it is, a ``dict`` as :func:`json.dumps` (or ``str`` when that fails), anything
    else as ``str`` (exact types: a ``str`` subclass goes through ``str``)."""
    if type(value) is str:
        return value
    if type(value) is dict:
        try:
            return json.dumps(value)
        except Exception:
            return str(value)
    return str(value)


def instance_global_name(label: str, entry_id: str, class_name: str) -> str:
    """The global name the official executor gives an instance (``-./:`` become ``_``).

    ``label`` is the model name as the official code passes it at that point: the handler's
    name at inference, ``<model>_eval`` when scoring the model, ``<model>_ground_truth_eval``
    when scoring the ground truth."""
    return _UNSAFE_IN_NAME.sub("_", f"{label}_{entry_id}_{class_name}_instance")


class BackendSession:
    """One set of live backend instances and the calls made on them, for one case or one
    side of one scoring (never shared)."""

    def __init__(self, instances: Mapping[str, Any], *, label: str, entry_id: str) -> None:
        self.instances: dict[str, Any] = dict(instances)
        """The instances by class name, in the involved-classes order."""
        self._by_global: dict[str, Any] = {}
        self._method_owner: dict[str, str] = {}
        for class_name, instance in self.instances.items():
            global_name = instance_global_name(label, entry_id, class_name)
            self._by_global[global_name] = instance
            for method_name, _ in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not method_name.startswith("_"):
                    self._method_owner[method_name] = global_name

    def execute(self, calls: Sequence[str]) -> list[CallResult]:
        """Run each call text in order; every call gets a result (module docstring)."""
        return [self._execute_one(call) for call in calls]

    def _rewrite(self, call: str) -> str:
        def owner(match: re.Match[str]) -> str:
            name = match.group(1)
            global_name = self._method_owner.get(name)
            return f"{global_name}.{name}" if global_name else name

        return _METHOD_CALL.sub(owner, call)

    def _execute_one(self, call: str) -> CallResult:
        text = self._rewrite(call)
        try:
            head = text.split("(")[0]
            if "." in head:
                head = head.split(".")[1]
            if head in BLOCKED_NAMES:
                raise Exception(f"Function call {head} is not allowed.")
            # Compiled (never run) first, for the exact SyntaxError eval would raise: a
            # repeated keyword is found by the compiler, not the parser.
            compile(text, "<string>", "eval", dont_inherit=True)
            tree = parse(text, mode="eval", filename="<string>")
            value = self._value(tree.body)
            format_result(value)  # formatting is inside the official try too (a huge int)
        except Exception as exc:  # the official executor reports every Exception as text
            return CallResult(call, error=exc)
        return CallResult(call, value=value)

    def _value(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            self._unknown_name(node.id)
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.List):
            return [self._value(element) for element in node.elts]
        if isinstance(node, ast.Tuple):
            return tuple(self._value(element) for element in node.elts)
        if isinstance(node, ast.Set):
            return {self._value(element) for element in node.elts}
        if isinstance(node, ast.Dict):
            return self._dict(node)
        if isinstance(node, ast.UnaryOp):
            return _UNARY[type(node.op)](self._value(node.operand))
        raise UnsupportedCall(
            f"{type(node).__name__} in call text is not run (the official executor evals it)"
        )

    def _dict(self, node: ast.Dict) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                raise UnsupportedCall("a ** entry in a dict is not run")
            result[self._value(key)] = self._value(value)
        return result

    def _unknown_name(self, name: str) -> NoReturn:
        """A name in call text that is not a backend method: ``eval``'s ``NameError``, unless
        ``eval`` would have found it (a builtin, the executor's imports, an instance)."""
        if name in self._by_global or name in _EXECUTOR_GLOBALS:
            raise UnsupportedCall(f"{name!r} is not a backend method; it is not run")
        raise NameError(f"name '{name}' is not defined")

    def _method(self, node: ast.expr) -> Any:
        """The bound public method a call names (``<instance>.<method>``)."""
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id not in self._by_global:
            self._unknown_name(root.id)  # eval looks the leftmost name up first
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and self._method_owner.get(node.attr) == node.value.id
        ):
            return getattr(self._by_global[node.value.id], node.attr)
        raise UnsupportedCall(f"calling {ast.unparse(node)} is not run")

    def _call(self, node: ast.Call) -> Any:
        method = self._method(node.func)
        args: list[Any] = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise UnsupportedCall("*arguments are not run")
            args.append(self._value(arg))
        kwargs: dict[str, Any] = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                raise UnsupportedCall("**arguments are not run")
            kwargs[keyword.arg] = self._value(keyword.value)
        _refuse_unbounded(method, args, kwargs)
        return method(*args, **kwargs)


MAX_INT_BITS = 1_000_000
"""The widest integer argument passed to a backend (a hex literal is not capped by Python)."""

MAX_PRECISION = 10_000
"""The largest ``precision`` passed to ``MathAPI.logarithm`` and ``square_root`` (digits)."""


def _refuse_unbounded(method: Any, args: list[Any], kwargs: dict[str, Any]) -> None:
    """Refuse arguments on which a backend would compute without end, in C, where nothing can
    interrupt it: a huge integer anywhere, ``MathAPI.power`` over a huge integer result, or a
    huge ``precision`` (the official executor just runs them, and hangs)."""
    pending: list[Any] = [*args, *kwargs.values()]
    while pending:
        value = pending.pop()
        if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
            raise UnsupportedCall("an integer argument too large is not run")
        if isinstance(value, list | tuple | set):
            pending.extend(value)
        elif isinstance(value, dict):
            pending.extend([*value.keys(), *value.values()])
    if type(getattr(method, "__self__", None)).__name__ != "MathAPI":
        return
    try:
        bound = inspect.signature(method).bind(*args, **kwargs).arguments
    except TypeError:
        return  # the real call raises the official error
    precision = bound.get("precision")
    if isinstance(precision, int | float) and precision > MAX_PRECISION:
        raise UnsupportedCall(f"a precision over {MAX_PRECISION} digits is not run")
    base, exponent = bound.get("base"), bound.get("exponent")
    if (
        method.__name__ == "power"
        and isinstance(base, int)
        and isinstance(exponent, int)
        and abs(base) > 1
        and exponent * abs(base).bit_length() > MAX_INT_BITS
    ):
        raise UnsupportedCall("a power too large is not run")
