"""Java and JavaScript argument values: the official converters from source text to Python.

In the Java and JavaScript categories every argument arrives as source text (a JSON string in
FC mode). The checker turns it into a Python value by the parameter's declared type, with the
official converters' regular expressions; text that does not fit the declared type stays a
string, which then fails the type check. The quirks that follow from the official rules:

* Java: ``long`` needs the ``L`` suffix, ``float`` the ``f`` suffix; ``char`` always stays the
  text (its pattern can never match); ``String`` and ``any`` keep the text as it is, quotes
  included; ``Array``/``ArrayList`` elements of type ``String`` or ``char`` lose their first
  and last character only in the ``ArrayList`` forms (``Array`` elements go through the
  element type's converter, so a quoted ``String[]`` element keeps its quotes).
* JavaScript: a ``String`` loses one pair of surrounding quotes; ``float`` has no exponent
  form; ``Bigint`` needs the ``n`` suffix; arrays and objects are read with regular
  expressions, not a parser, so nesting is read loosely.
* ``Set``, ``Hashtable``, ``Queue`` and ``Stack`` are not implemented officially: they raise
  :class:`UnsupportedType`, as the official converter raises.
"""

from __future__ import annotations

import re
from typing import Any

JAVA_TYPES: dict[str, type] = {
    "byte": int,
    "short": int,
    "integer": int,
    "float": float,
    "double": float,
    "long": int,
    "boolean": bool,
    "char": str,
    "Array": list,
    "ArrayList": list,
    "Set": set,
    "HashMap": dict,
    "Hashtable": dict,
    "Queue": list,
    "Stack": list,
    "String": str,
    "any": str,
}
"""The Python type each Java type converts to (the official table)."""

JS_TYPES: dict[str, type] = {
    "String": str,
    "integer": int,
    "float": float,
    "Bigint": int,
    "Boolean": bool,
    "dict": dict,
    "array": list,
    "any": str,
}
"""The Python type each JavaScript type converts to (the official table)."""

_INT = re.compile(r"^-?\d+$")
_JAVA_FLOAT = re.compile(r"^-?\d+(\.\d+)?([eE][+-]?\d+)?[fF]$")
_JAVA_DOUBLE = re.compile(r"^-?\d+(\.\d+)?([eE][+-]?\d+)?$")
_JAVA_LONG = re.compile(r"^-?\d+[lL]$")
_JS_FLOAT = re.compile(r"^-?\d+(\.\d+)?$")
_JS_BIGINT = re.compile(r"^-?\d+n$")


class UnsupportedType(ValueError):
    """A declared type the official converters do not handle (they raise too)."""


# --------------------------------------------------------------------------------- Java


def java_value(text: str, java_type: str, nested_type: str | None = None) -> Any:
    """Convert Java source text by its declared type, as the official converter does."""
    if java_type not in JAVA_TYPES:
        raise UnsupportedType(f"unsupported Java type: {java_type}")
    if java_type in ("byte", "short", "integer"):
        return int(text) if _INT.match(text) else text
    if java_type == "float":
        return float(re.sub(r"[fF]$", "", text)) if _JAVA_FLOAT.match(text) else text
    if java_type == "double":
        return float(text) if _JAVA_DOUBLE.match(text) else text
    if java_type == "long":
        return int(re.sub(r"[lL]$", "", text)) if _JAVA_LONG.match(text) else text
    if java_type == "boolean":
        return text == "true" if text in ("true", "false") else text
    if java_type == "char":
        return text  # the official pattern cannot match, and both of its branches keep the text
    if java_type == "ArrayList":
        return _java_arraylist(text, nested_type)
    if java_type == "Array":
        return _java_array(text, nested_type)
    if java_type == "HashMap":
        return _java_hashmap(text)
    if java_type in ("String", "any"):
        return text
    raise UnsupportedType(f"{java_type} conversion is not implemented")


def _java_element(text: str, nested_type: str | None) -> Any:
    """An ``ArrayList`` element: ``char``/``String`` lose their ends, others convert."""
    if nested_type in ("char", "String"):
        return text[1:-1]
    return java_value(text, nested_type) if nested_type else java_literal(text)


def _java_arraylist(text: str, nested_type: str | None) -> Any:
    as_list = re.search(r"new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)", text)
    if as_list:
        return [_java_element(part.strip(), nested_type) for part in as_list.group(1).split(",")]
    with_adds = re.search(r"new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}", text, re.DOTALL)
    if with_adds:
        adds = re.findall(r"add\((.+?)\)", with_adds.group(1))
        return [_java_element(add.strip(), nested_type) for add in adds]
    if re.search(r"new\s+ArrayList<\w*>\(\)", text):
        return []
    return text


def _java_array(text: str, nested_type: str | None) -> Any:
    match = re.search(r"new\s+\w+\[\]\s*\{(.*?)\}", text)
    if not match:
        return text
    parts = [part.strip() for part in match.group(1).split(",") if part.strip()]
    if nested_type:
        return [java_value(part, nested_type) for part in parts]
    return [java_literal(part) for part in parts]


def _java_hashmap(text: str) -> Any:
    match = re.search(r"new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}", text, re.DOTALL)
    if match:
        entries: dict[str, Any] = {}
        if match.group(1).strip():
            for key, value in re.findall(r"put\(\"(.*?)\",\s*(.*?)\)", match.group(1)):
                entries[key] = java_literal(value.strip())
        return entries
    if re.search(r"new\s+HashMap<.*?>\s*\(\)", text):
        return {}
    return text


def java_literal(text: str) -> Any:
    """A Java literal read without a declared type (booleans, strings, numbers, else text)."""
    if text in ("true", "false"):
        return text == "true"
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1]
    if _JAVA_LONG.match(text):
        return int(text[:-1])
    if _JAVA_FLOAT.match(text):
        return float(re.sub(r"[fF]$", "", text))
    return _int_or_float_or_text(text)


def _int_or_float_or_text(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


# --------------------------------------------------------------------------- JavaScript


def js_value(text: str, js_type: str, nested_type: str | None = None) -> Any:
    """Convert JavaScript source text by its declared type, as the official converter does."""
    if js_type not in JS_TYPES:
        raise UnsupportedType(f"unsupported JavaScript type: {js_type}")
    if js_type == "String":
        quoted = (text.startswith('"') and text.endswith('"')) or (
            text.startswith("'") and text.endswith("'")
        )
        return text[1:-1] if quoted else text
    if js_type == "integer":
        return int(text) if _INT.match(text) else text
    if js_type == "float":
        return float(text) if _JS_FLOAT.match(text) else text
    if js_type == "Bigint":
        return int(text[:-1]) if _JS_BIGINT.match(text) else text
    if js_type == "Boolean":
        return text == "true" if text in ("true", "false") else text
    if js_type == "dict":
        return _js_object(text.strip())
    if js_type == "array":
        return _js_array(text.strip(), nested_type)
    return text  # any


_JS_2D = re.compile(
    r"\[\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\]|\bnew\s+Array\(\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\)"
)
_JS_1D = re.compile(r"\[(.*?)\]|\bnew\s+Array\((.*?)\)")


def _js_array(code: str, nested_type: str | None) -> Any:
    try:
        return _js_array_or_text(code, nested_type)
    except Exception:  # the official reader returns the text on any error
        return code


def _js_array_or_text(code: str, nested_type: str | None) -> Any:
    two_d = _JS_2D.match(code)
    if two_d:
        rows = []
        for index, inner in enumerate(re.findall(r"\[(.*?)\]", two_d.group(0))):
            inner = inner.strip()
            if index == 0 and inner.startswith("["):
                inner = inner[1:]
            rows.append([js_literal(part.strip()) for part in inner.split(",")])
        return rows
    one_d = _JS_1D.match(code)
    if not one_d:
        return code
    body = one_d.group(1) if one_d.group(1) is not None else one_d.group(2)
    body = (body or "").strip()
    parts = body.split(",") if body else []
    if not nested_type:
        return [js_literal(part.strip()) for part in parts]
    converted = []
    for part in parts:
        part = part.strip()
        if part.startswith(("'", '"')):
            converted.append(js_value(part, nested_type, "String"))
        else:
            converted.append(js_value(part, nested_type))
    return converted


def _js_object(code: str) -> Any:
    if code == "{}":
        return {}
    match = re.match(r"\{(.*?)\}", code)
    if not match:
        return code
    try:
        entries: dict[str, Any] = {}
        pairs = re.findall(r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)", match.group(1))
        for key, value in pairs:
            key = key.strip().strip("'\"")
            value = value.strip()
            if value.startswith("[") and value.endswith("]"):
                entries[key] = _js_array(value.strip(), None)
            elif value.startswith("{") and value.endswith("}"):
                entries[key] = _js_object(value.strip())
            else:
                entries[key] = js_literal(value.strip("'\""))
        return entries
    except Exception:  # the official reader returns the text on any error
        return code


def js_literal(text: str) -> Any:
    """A JavaScript literal read without a declared type (booleans, strings, numbers, text)."""
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    if (text.startswith('"') and text.endswith('"')) or (
        text.startswith("'") and text.endswith("'")
    ):
        return text[1:-1]
    return _int_or_float_or_text(text)
