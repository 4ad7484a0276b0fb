"""The official AST checker: decoded calls against the ground truth, for the AST categories.

Routing (:func:`ast_check`) follows the category name: a name containing ``parallel`` takes
the order-free parallel checker, one containing ``multiple`` takes exactly one call checked
against the one ground-truth call, anything else must be exactly one call.

:func:`check_call` (the official ``simple_function_checker``), in order: the function name
(in FC mode the documented name has ``.`` replaced by ``_``, so a dotted name from the model
fails); every required parameter present; every argument both documented and in the ground
truth; then per argument the type and the value; last, every ground-truth argument left out
must accept ``""``. The first failure is the verdict.

Types (:func:`check_type`, the official ``type_checker``) are compared with ``type(x) ==``,
so ``bool`` is not ``int`` and a numeric string is not a number; an ``int`` becomes a
``float`` for a Python ``float`` parameter first, and a tuple becomes a list for a ``tuple``
parameter. Array elements are checked one level deep against each accepted list. When the
ground truth's accepted values have another type than the documented one, the argument is a
"variable": a value of the ground truth's type passes the type check, and its value is then
compared exactly. Java and JavaScript values must be strings, converted by the declared type
first (:mod:`~pytest_llmeval.scoring.bfcl.convert`).

The parallel checker takes each ground-truth call in order and gives it the **first** unused
model call that passes :func:`check_call`: greedy, so a valid set can fail in one order.

Where the official checker raises (an undocumented type, an argument value of a shape it does
not expect), :func:`ast_check` returns ``ast_checker:error`` instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_llmeval.scoring.bfcl.calls import (
    DecodedCall,
    FunctionDoc,
    GroundTruthCall,
    Language,
    Mode,
    Verdict,
)
from pytest_llmeval.scoring.bfcl.convert import JAVA_TYPES, JS_TYPES, java_value, js_value
from pytest_llmeval.scoring.bfcl.values import (
    check_dict,
    check_list,
    check_list_of_dicts,
    check_string,
)

PYTHON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
"""The Python type each documented Python type must have (the official table)."""

_PYTHON_NESTED = ("array", "tuple")
_CONVERTED_NESTED = ("Array", "ArrayList", "array")

CHECKER_ERROR = "ast_checker:error"
"""The error type where the official checker raises instead of answering."""


@dataclass(frozen=True)
class TypeCheck:
    """One type check: its verdict, and whether the value is read as a variable."""

    verdict: Verdict
    is_variable: bool = False


def _accepted_type(accepted: Any) -> type | None:
    """The type of the first accepted value that is not the optional marker ``""``."""
    for option in accepted:
        if option != "":
            return type(option)
    return None


def check_type(
    param: str,
    value: Any,
    accepted: Any,
    declared: str,
    expected: type,
    nested: type | None,
) -> TypeCheck:
    """The official type check of one argument (module docstring)."""
    accepted_type = _accepted_type(accepted)
    is_variable = accepted_type is not None and accepted_type != expected
    nested_failure: Verdict | None = None
    if type(value) == expected:  # noqa: E721 - the official rule compares types exactly
        if nested is None:
            return TypeCheck(Verdict.ok(), is_variable)
        elements: Any = value
        for option in accepted:
            if type(option) is list and not all(
                check_type(param, item, option, str(nested), nested, None).verdict.valid
                for item in elements
            ):
                continue
            return TypeCheck(Verdict.ok(), is_variable)
        nested_failure = Verdict.fail(
            "type_error:nested",
            f"Nested type checking failed for parameter {param!r}. Expected outer type "
            f"{declared} with inner type {nested}. Parameter value: {value!r}.",
        )
    if accepted_type is not None and type(value) == accepted_type:  # noqa: E721
        return TypeCheck(nested_failure or Verdict.ok(), True)
    return TypeCheck(
        Verdict.fail(
            "type_error:simple",
            f"Incorrect type for parameter {param!r}. Expected type {declared}, got "
            f"{type(value).__name__}. Parameter value: {value!r}.",
        )
    )


def _not_a_string(param: str, value: Any, language: Language) -> Verdict:
    kind = "java" if language == "java" else "js"
    return Verdict.fail(
        f"type_error:{kind}",
        f"Incorrect type for parameter {param!r}. Expected type String, got "
        f"{type(value).__name__}. Parameter value: {value!r}.",
    )


def _check_argument(
    param: str, value: Any, detail: dict[str, Any], accepted: list[Any], language: Language
) -> Verdict:
    declared: str = detail["type"]
    nested: type | None = None
    if language == "python":
        expected = PYTHON_TYPES[declared]
        if declared in _PYTHON_NESTED:
            nested = PYTHON_TYPES[detail["items"]["type"]]
        if declared == "tuple" and type(value) is tuple:
            value = list(value)
        if declared == "float" and type(value) is int:
            value = float(value)
    else:
        table, convert = (JAVA_TYPES, java_value) if language == "java" else (JS_TYPES, js_value)
        expected = table[declared]
        if type(value) is not str:
            return _not_a_string(param, value, language)
        if declared in _CONVERTED_NESTED:
            nested_name: str = detail["items"]["type"]
            nested = table[nested_name]
            value = convert(value, declared, nested_name)
        else:
            value = convert(value, declared)
    typed = check_type(param, value, accepted, declared, expected, nested)
    if not typed.verdict.valid:
        return typed.verdict
    if not typed.is_variable:
        if expected is dict:
            return check_dict(param, value, accepted)
        if expected is list and nested is dict:
            return check_list_of_dicts(param, value, accepted)
        if expected is str:
            return check_string(param, value, accepted)
        if expected is list:
            return check_list(param, value, accepted)
    if value not in accepted:
        return Verdict.fail(
            "value_error:others",
            f"Invalid value for parameter {param!r}: {value!r}. Expected one of {accepted}.",
        )
    return Verdict.ok()


def check_call(
    doc: FunctionDoc,
    call: DecodedCall,
    truth: GroundTruthCall,
    language: Language,
    mode: Mode,
) -> Verdict:
    """The official ``simple_function_checker``: one model call against one ground-truth call."""
    accepted_args = next(iter(truth.values()))
    name: str = doc["name"]
    properties: dict[str, Any] = doc["parameters"]["properties"]
    if mode == "fc":
        name = name.replace(".", "_")
    if name not in call:
        return Verdict.fail(
            "simple_function_checker:wrong_func_name",
            f"Function name {name!r} not found in model output.",
        )
    arguments = call[name]
    for param in doc["parameters"]["required"]:
        if param not in arguments:
            return Verdict.fail(
                "simple_function_checker:missing_required",
                f"Missing required parameter: {param!r}.",
            )
    for param, value in arguments.items():
        if param not in properties or param not in accepted_args:
            return Verdict.fail(
                "simple_function_checker:unexpected_param", f"Unexpected parameter: {param!r}."
            )
        verdict = _check_argument(param, value, properties[param], accepted_args[param], language)
        if not verdict.valid:
            return verdict
    for param, accepted in accepted_args.items():
        if param not in arguments and "" not in accepted:
            return Verdict.fail(
                "simple_function_checker:missing_optional",
                f"Optional parameter {param!r} not provided and not marked as optional.",
            )
    return Verdict.ok()


def _doc_named(functions: list[FunctionDoc], name: str) -> FunctionDoc:
    for doc in functions:
        if doc["name"] == name:
            return doc
    raise KeyError(f"no function document named {name!r}")


def check_parallel(
    functions: list[FunctionDoc],
    calls: list[DecodedCall],
    truth: list[GroundTruthCall],
    language: Language,
    mode: Mode,
) -> Verdict:
    """The official order-free checker: equal counts, then a greedy first-fit match."""
    if len(calls) != len(truth):
        return Verdict.fail(
            "parallel_function_checker_no_order:wrong_count", "Wrong number of functions."
        )
    used: set[int] = set()
    for position, expected in enumerate(truth):
        doc = _doc_named(functions, next(iter(expected)))
        match = next(
            (
                index
                for index, call in enumerate(calls)
                if index not in used and check_call(doc, call, expected, language, mode).valid
            ),
            None,
        )
        if match is None:
            return Verdict.fail(
                "parallel_function_checker_no_order:cannot_find_match",
                f"Could not find a matching function among index "
                f"{[i for i in range(len(calls)) if i not in used]} of model output for index "
                f"{position} of possible answers.",
            )
        used.add(match)
    return Verdict.ok()


def check_multiple(
    functions: list[FunctionDoc],
    calls: list[DecodedCall],
    truth: list[GroundTruthCall],
    language: Language,
    mode: Mode,
) -> Verdict:
    """The official ``multiple`` checker: as many calls as the truth (one), checked as simple."""
    if len(calls) != len(truth):
        return Verdict.fail("multiple_function_checker:wrong_count", "Wrong number of functions.")
    doc = _doc_named(functions, next(iter(truth[0])))
    return check_call(doc, calls[0], truth[0], language, mode)


def ast_check(
    functions: list[FunctionDoc],
    calls: list[DecodedCall],
    truth: list[GroundTruthCall],
    language: Language,
    category: str,
    mode: Mode,
) -> Verdict:
    """Route by category name and check; ``ast_checker:error`` where the official code raises."""
    try:
        if "parallel" in category:
            return check_parallel(functions, calls, truth, language, mode)
        if "multiple" in category:
            return check_multiple(functions, calls, truth, language, mode)
        if len(calls) != 1:
            return Verdict.fail("simple_function_checker:wrong_count", "Wrong number of functions.")
        return check_call(functions[0], calls[0], truth[0], language, mode)
    except (KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:
        return Verdict.fail(CHECKER_ERROR, f"the official checker raises here: {exc!r}")
