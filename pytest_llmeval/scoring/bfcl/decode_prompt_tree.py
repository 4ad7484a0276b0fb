"""Prompt mode, Java and JavaScript: a reply's text read with tree-sitter, as the official does.

The official decoder parses Java and JavaScript call text with the tree-sitter grammars
(``tree-sitter==0.21.3``, ``tree-sitter-java==0.21.0``, ``tree-sitter-javascript==0.21.4``,
the ``bfcl`` extra; imported on first use) and keeps argument values as *source text*; the
checker's converters then read them by declared type. Its rules, with their quirks:

* The text is pre-processed as in Python (backticks, newlines and spaces stripped at the ends;
  ``[``/``]`` added when missing), then its first and last characters are cut off again, and
  the rest is parsed as a whole program. A parse with an ``ERROR`` node fails (so two Java
  calls fail); an empty program is no call.
* **Java**: the first method invocation of the tree, depth first, is the call; its name is
  ``object.method`` when it has an object. Named arguments (``a=...``) keep their value's
  text, by the official rules: a string or character literal loses its quotes at the top and
  keeps them inside; ``new T[]{...}`` and ``new T(args)`` are rebuilt (a class body, as in
  ``new HashMap<>() {{ put(..) }}``, is dropped); other nodes are their children's texts
  joined without spaces. Text is cut from the *character* string by the nodes' *byte*
  offsets, so non-ASCII text before a value shifts it (the official quirk). Found no call:
  ``{}``, which is not a call list.
* **JavaScript**: the first call that is a statement of its own, at the top level, is the
  call (``a(), b()`` is none: not a call list). Named arguments keep their value's text with
  one pair of matching quotes removed; ``false`` and other unnamed values are dropped.
* Both: an unnamed identifier becomes the argument ``**`` (the official ``None`` key); an
  argument named twice fails; any error while walking the tree fails.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

from pytest_llmeval.core.errors import ConfigError
from pytest_llmeval.scoring.bfcl.calls import DOUBLE_STAR, DecodeError
from pytest_llmeval.scoring.bfcl.decode_prompt import wrap_prompt_text

INSTALL_HINT = "pip install 'pytest-llmeval-harness[bfcl]'"

Node = Any
"""A tree-sitter node (the package is optional and untyped here)."""


@functools.cache
def _parser(language: str) -> Callable[[bytes], Node]:
    """A ``parse(bytes) -> root node`` function for ``java`` or ``javascript``."""
    try:
        import tree_sitter

        grammar = importlib.import_module(f"tree_sitter_{language}")
    except ImportError as exc:
        raise ConfigError(
            f"BFCL prompt mode for {language} reads calls with tree-sitter: {INSTALL_HINT}"
        ) from exc
    try:
        lang = tree_sitter.Language(grammar.language())
        parser = tree_sitter.Parser(lang)
    except TypeError:  # tree-sitter 0.21 (the official pin): a name, then set_language
        lang = tree_sitter.Language(grammar.language(), language)
        parser = tree_sitter.Parser()
        parser.set_language(lang)
    return lambda source: parser.parse(source).root_node


def _has_error(root: Node) -> bool:
    sexp = root.sexp() if hasattr(root, "sexp") else str(root)
    return "ERROR" in sexp


def decode_prompt_java(text: str) -> Any:
    """Decode a Java prompt-mode reply: ``[{name: {arg: text}}]``, or ``{}`` (no call)."""
    source = wrap_prompt_text(text)[1:-1]
    root = _parser("java")(source.encode("utf-8"))
    if _has_error(root):
        raise DecodeError("Error parsing java the source code.")
    try:
        found = _java_call(root, source)
    except DecodeError:
        raise
    except Exception as exc:  # the official walk raises on odd trees; that is a decode failure
        raise DecodeError(f"cannot read the Java call: {exc!r}") from exc
    return found if found else {}


def decode_prompt_javascript(text: str) -> Any:
    """Decode a JavaScript prompt-mode reply: ``[{name: {arg: text}}]``, or ``None``."""
    source = wrap_prompt_text(text)[1:-1]
    root = _parser("javascript")(source.encode("utf-8"))
    if _has_error(root):
        raise DecodeError("Error js parsing the source code.")
    try:
        return _js_call(root)
    except DecodeError:
        raise
    except Exception as exc:
        raise DecodeError(f"cannot read the JavaScript call: {exc!r}") from exc


# ------------------------------------------------------------------------------------ Java


def _java_call(node: Node, source: str) -> list[dict[str, Any]] | None:
    if node.type == "method_invocation":
        name = _cut(source, node.child_by_field_name("name"))
        owner = node.child_by_field_name("object")
        if owner is not None:
            name = f"{_cut(source, owner)}.{name}"
        arguments = node.child_by_field_name("arguments")
        if arguments:
            return [{name: _java_arguments(arguments, source)}]
        return None
    for child in node.children:
        found = _java_call(child, source)
        if found:
            return found
    return None


def _cut(source: str, node: Node) -> str:
    """The official ``get_text``: the *str* sliced by the node's *byte* offsets."""
    return source[node.start_byte : node.end_byte]


def _java_arguments(node: Node, source: str) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    for child in node.children:
        if child.type == "assignment_expression":
            _add(arguments, _cut(source, child.children[0]), _java_text(child.children[2], source))
        elif child.type in ("identifier", "class_literal", "set"):
            _add(arguments, DOUBLE_STAR, _java_text(child, source))
    return arguments


def _add(arguments: dict[str, Any], name: str, value: str) -> None:
    if name in arguments:
        raise DecodeError("Error: Multiple arguments with the same name are not supported.")
    arguments[name] = value


def _java_text(node: Node, source: str, nested: bool = False) -> str:
    """The official ``traverse_node``: a value's text."""
    kind = node.type
    if kind in ("string_literal", "character_literal"):
        text = _cut(source, node)
        return text if nested else text[1:-1]
    if kind in ("identifier", "class_literal", "type_identifier", "method_invocation"):
        return _cut(source, node)
    if kind == "array_creation_expression":
        element = _java_text(node.child_by_field_name("type"), source, True)
        values = _java_text(node.child_by_field_name("value"), source, True)
        return f"new {element}[]{values}"
    if kind == "object_creation_expression":
        created = _java_text(node.child_by_field_name("type"), source, True)
        arguments = node.child_by_field_name("arguments")
        if not arguments:
            return f"new {created}()"
        parts = [
            _java_text(child, source, True)
            for child in arguments.children
            if child.type not in (",", "(", ")")
        ]
        return f"new {created}({', '.join(parts)})"
    if kind == "set":
        items = [_java_text(n, source, True) for n in node.children if n.type not in (",", "set")]
        return "{" + ", ".join(items) + "}"
    if node.child_count > 0:
        return "".join(_java_text(child, source, True) for child in node.children)
    return _cut(source, node)


# ------------------------------------------------------------------------------ JavaScript


def _js_call(root: Node) -> list[dict[str, Any]] | None:
    if root.type != "program":
        return None
    for child in root.children:
        if child.type != "expression_statement":
            continue
        for sub in child.children:
            if sub.type == "call_expression":
                name = sub.children[0].text.decode("utf8")
                return [{name: _js_arguments(sub.children[1])}]
    return None


def _js_arguments(node: Node) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    for child in node.children:
        if child.type == "assignment_expression":
            name = child.children[0].text.decode("utf-8")
            value = child.children[2].text.decode("utf-8")
            if (value.startswith('"') and value.endswith('"')) or (
                value.startswith("'") and value.endswith("'")
            ):
                value = value[1:-1]
            _add(arguments, name, value)
        elif child.type in ("identifier", "true"):
            _add(arguments, DOUBLE_STAR, child.text.decode("utf-8"))
    return arguments
