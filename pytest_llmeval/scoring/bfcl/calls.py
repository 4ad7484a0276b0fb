"""The shapes every BFCL scoring module shares: decoded calls, verdicts, modes, languages.

A decoded model output is a list of calls, each a one-key dict ``{function name: {argument:
value}}``, the shape the official checker reads. Values are plain Python values (``str``,
``int``, ``float``, ``bool``, ``None``, ``list``, ``tuple``, ``dict``, and in prompt mode also
``bytes`` and ``complex``); their exact Python type matters, because the official type check
compares ``type(value)`` exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Mode = Literal["fc", "prompt"]
"""How the model was asked: ``fc`` (native tool calls) or ``prompt`` (calls written as text)."""

Language = Literal["python", "java", "javascript"]
"""The language whose type rules the AST checker applies (from the category name)."""

Arguments = dict[str, Any]
"""One call's arguments, by name."""

DecodedCall = dict[str, Arguments]
"""One call: ``{function name: arguments}``."""

GroundTruthCall = dict[str, dict[str, list[Any]]]
"""One ground-truth call: ``{function name: {argument: [accepted values]}}``."""

FunctionDoc = dict[str, Any]
"""One function document as the dataset writes it (``name``, ``description``, ``parameters``)."""

DOUBLE_STAR = "**"
"""The argument name a prompt-mode ``**mapping`` keyword decodes to.

The official decoder keeps Python's ``None`` there; no parameter can be named ``**`` either, so
every check gives the same answer while arguments stay keyed by ``str``."""


class DecodeError(ValueError):
    """The model output does not decode to calls (the official decoder raised)."""


@dataclass(frozen=True)
class Verdict:
    """One official decision: pass or fail, and why.

    ``error_type`` is the official string (``type_error:simple``, ``ast_decoder:decoder_failed``,
    …) when ``valid`` is false, and ``None`` when it is true."""

    valid: bool
    error_type: str | None = None
    message: str = ""

    @classmethod
    def ok(cls) -> Verdict:
        return cls(True)

    @classmethod
    def fail(cls, error_type: str, message: str) -> Verdict:
        return cls(False, error_type, message)


def language_of(category: str) -> Language:
    """The checker's language for a category name, as the official runner picks it."""
    if "java" in category and "javascript" not in category:
        return "java"
    if "javascript" in category:
        return "javascript"
    return "python"
