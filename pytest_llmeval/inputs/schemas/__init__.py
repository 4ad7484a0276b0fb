"""The JSON Schemas shipped with the package, and their errors in the project's words.

``manifest.schema.json`` describes the keys every ``*.llmeval.yaml`` manifest may hold;
``tool_registry.schema.json`` a ``--llmeval-tool-registry`` file. Both are checked with
``jsonschema`` (draft 2020-12) where ``integer`` means a whole number and never a bool or
``3.0``. :func:`explain` turns an error into the field it is about and one short sentence
("expected a whole number >= 1, got 0") instead of the validator's own wording.
"""

from __future__ import annotations

import datetime
import functools
import json
from collections.abc import Iterable, Mapping
from importlib import resources
from typing import TYPE_CHECKING, Any

from pytest_llmeval.core.clip import clip
from pytest_llmeval.inputs.loading import a_json_type

if TYPE_CHECKING:
    from jsonschema.exceptions import SchemaError, ValidationError
    from jsonschema.protocols import Validator

DocPath = tuple[str | int, ...]
"""Where a value sits in a document: mapping keys and list indices."""

MAX_SHOWN = 80
"""The longest value an error message quotes."""


def _whole_number(checker: Any, instance: object) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


@functools.cache
def strict_validator() -> type[Validator]:
    """Draft 2020-12, where ``integer`` is an ``int`` (``3.0`` and ``true`` are not).

    ``jsonschema`` is imported here, on first use: importing it costs a session about 60 ms,
    which a run without manifests or a tool registry never needs to pay."""
    from jsonschema import Draft202012Validator
    from jsonschema.validators import extend

    checker = Draft202012Validator.TYPE_CHECKER.redefine("integer", _whole_number)
    return extend(Draft202012Validator, type_checker=checker)  # type: ignore[no-untyped-call,no-any-return]


@functools.cache
def schema(name: str) -> dict[str, Any]:
    """``<name>.schema.json`` (package data), parsed once."""
    text = resources.files(__name__).joinpath(f"{name}.schema.json").read_text("utf-8")
    value: dict[str, Any] = json.loads(text)
    return value


@functools.cache
def shipped(name: str) -> Validator:
    """The validator of ``<name>.schema.json``, its schema checked once."""
    validator = strict_validator()
    validator.check_schema(schema(name))
    return validator(schema(name))


def validator_for(schema: Mapping[str, Any]) -> Validator:
    """A validator of the project's flavour for ``schema`` (not checked)."""
    return strict_validator()(dict(schema))


def first_error(validator: Validator, instance: Any, line_of: Any = None) -> ValidationError | None:
    """The error to report: the first in the document (by ``line_of(path)`` when given, then
    by path), so the same file always gives the same message."""
    errors = list(validator.iter_errors(instance))
    if not errors:
        return None

    def order(error: ValidationError) -> tuple[int, str]:
        path = explain(error)[0]
        line = line_of(path) if line_of is not None else None
        return (line or 0, field_name(path))

    return min(errors, key=order)


def explain(error: ValidationError | SchemaError) -> tuple[DocPath, str]:
    """The path of the field an error is about, and what was wrong with it."""
    path: DocPath = tuple(error.absolute_path)
    value: Any = error.instance
    rule: Any = error.validator
    expected: Any = error.validator_value
    schema: Any = error.schema
    if rule == "required":
        missing = next(k for k in expected if not (isinstance(value, dict) and k in value))
        kind = schema.get("properties", {}).get(missing, {}).get("type")
        hint = f" ({_types(kind)})" if kind else ""
        return (*path, missing), f"missing required field{hint}"
    if rule == "additionalProperties" and isinstance(value, dict):
        known = schema.get("properties", {})
        extra = next(k for k in value if k not in known)
        listed = f"; expected one of {', '.join(known)}" if known else ""
        return (*path, str(extra)), f"unknown field{listed}"
    if rule == "type":
        return path, f"expected {_types(expected)}, got {_a_type(value)}"
    if rule == "enum":
        choices = ", ".join(str(c) for c in expected)
        return path, f"expected one of {choices}, got {_shown(value)}"
    if rule == "minLength" and expected == 1:
        return path, "expected a non-empty string"
    if rule == "minItems" and expected == 1:
        return path, "expected a non-empty array"
    if rule in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        op = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}
        kind = "a whole number" if schema.get("type") == "integer" else "a number"
        return path, f"expected {kind} {op[rule]} {expected}, got {_shown(value)}"
    return path, clip(error.message, MAX_SHOWN)


def field_name(path: Iterable[str | int]) -> str:
    """``("gates", 1, "op")`` as ``gates[1].op``."""
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else str(step))
    return text


_TYPE_PHRASES = {
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "object": "an object",
    "array": "an array",
    "null": "null",
}


def _types(kind: object) -> str:
    kinds = kind if isinstance(kind, list) else [kind]
    phrases = [_TYPE_PHRASES.get(str(k), str(k)) for k in kinds]
    return " or ".join([", ".join(phrases[:-1]), phrases[-1]] if len(phrases) > 2 else phrases)


def _a_type(value: object) -> str:
    """The value's JSON type as a phrase, or what YAML made of it (a date, a set, bytes)."""
    if value is None or isinstance(value, dict | list | str | bool | int | float):
        return a_json_type(value)
    if isinstance(value, datetime.date):
        return "a date"
    if isinstance(value, set):
        return "a set"
    if isinstance(value, bytes):
        return "binary data"
    return f"a {type(value).__name__}"


def _shown(value: object) -> str:
    return clip(repr(value), MAX_SHOWN)
