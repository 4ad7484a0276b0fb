"""FC mode: a reply's tool calls, as the official OpenAI-compatible handler decodes them.

The official handler keeps a reply as either its tool calls, ``[{name: arguments text}]``, or,
when it has none, its text content (a string, or ``None``). Decoding reads each call's
arguments with :func:`json.loads`; the text reply is iterated as if it were a list of calls,
so a non-empty text (and ``None``) fails, and an empty text decodes to ``[]``.

Nothing here checks the decoded shape: arguments that are valid JSON but not an object
(``"[1]"``, ``"null"``) decode, and :func:`is_call_list` (the official format check) rejects
them afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pytest_llmeval.scoring.bfcl.calls import DecodeError

ToolCall = tuple[str, str]
"""One tool call as the model sent it: ``(function name, arguments JSON text)``."""

FcOutput = Sequence[ToolCall] | str | None
"""A reply in FC mode: its tool calls, or its text when it made none."""


def decode_fc(output: FcOutput) -> list[dict[str, Any]]:
    """Decode an FC reply into ``[{name: arguments}]``; raise :class:`DecodeError` if it does not.

    A text reply raises unless it is empty (``""`` decodes to ``[]``); arguments that are not
    JSON raise."""
    if output is None:
        raise DecodeError("the reply has no tool calls and no text")
    if isinstance(output, str):
        if output:
            raise DecodeError("the reply is text, not tool calls")
        return []
    decoded: list[dict[str, Any]] = []
    for name, arguments in output:
        try:
            decoded.append({name: json.loads(arguments)})
        except (ValueError, TypeError, RecursionError) as exc:
            raise DecodeError(f"the arguments of {name!r} are not JSON: {exc}") from exc
    return decoded


def is_call_list(decoded: object) -> bool:
    """The official format check: a list of one-key dicts whose value is a dict (``[]`` passes)."""
    if type(decoded) is not list:
        return False
    for item in decoded:
        if type(item) is not dict or len(item) != 1:
            return False
        if type(next(iter(item.values()))) is not dict:
            return False
    return True


def is_empty_output(decoded: object) -> bool:
    """The official relevance rule: not a call list, ``[]``, or ``[{}]`` holds no call.

    (``[{}]`` never passes :func:`is_call_list`; the official check names it anyway.)"""
    if not is_call_list(decoded) or not isinstance(decoded, list):
        return True
    return len(decoded) == 0 or (len(decoded) == 1 and len(decoded[0]) == 0)
