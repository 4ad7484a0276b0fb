"""A model's reply as the official BFCL client keeps it, and as its checker reads it.

The official OpenAI-compatible handler keeps the server's reply message as it came: in FC
mode it goes back into the history verbatim (every key, ``refusal: null`` included) and its
tool calls are read as ``[{name: arguments text}]``, the raw text (never a re-serialised
parse: ``""`` and ``"[1]"`` are not JSON objects and decode as the official decoder decodes
them); in prompt mode the history gets ``{"role": "assistant", "content": text}`` and the text
is decoded.

* :func:`reply_output`: a reply message to what the checker decodes (``FcOutput``);
* :func:`echo`: the assistant message that goes back into the history;
* :func:`rebuilt_reply`: a reply message rebuilt from a completion's text and tool calls,
  for a runner (or a user's agent) that does not hand the server's message on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_llmeval.core.models import ToolCall, ToolSpec
from pytest_llmeval.scoring.bfcl.calls import Mode
from pytest_llmeval.scoring.bfcl.decode_fc import FcOutput
from pytest_llmeval.suites.bfcl_conversation import assistant_echo

__all__ = ["echo", "rebuilt_reply", "reply_output", "tool_specs"]


def reply_output(message: Mapping[str, Any], mode: Mode) -> FcOutput:
    """What the official handler reads from a reply: in FC mode its tool calls as ``(name,
    arguments text)`` pairs when ``tool_calls`` is a list (an empty one too), else its
    content; in prompt mode its content (``None`` when it has none)."""
    content = message.get("content")
    text = content if isinstance(content, str) or content is None else _parts_text(content)
    if mode == "prompt":
        return text
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return text
    pairs: list[tuple[str, str]] = []
    for call in calls:
        function = call.get("function") if isinstance(call, Mapping) else None
        function = function if isinstance(function, Mapping) else {}
        name, arguments = function.get("name"), function.get("arguments")
        # arguments that are not text fail the official json.loads as "" does
        pairs.append((str(name), arguments if isinstance(arguments, str) else ""))
    return pairs


def echo(message: Mapping[str, Any], mode: Mode) -> dict[str, Any]:
    """The reply as it goes back into the history (module docstring)."""
    if mode == "prompt":
        return {"role": "assistant", "content": message.get("content")}
    return assistant_echo(message)


def rebuilt_reply(text: str | None, tool_calls: Sequence[ToolCall]) -> dict[str, Any]:
    """A reply message in OpenAI form from a completion's parts: each call's raw argument text
    when it was not a JSON object, else its arguments as JSON with sorted keys (a cassette
    keeps a completion's arguments sorted: a multi-turn item's next request, which echoes this
    reply, must be the same live and replayed, or its replay misses)."""
    if not tool_calls:
        return {"role": "assistant", "content": text}
    calls = [
        {
            "id": call.id,
            "type": "function",
            "function": {
                "name": call.name,
                "arguments": call.arguments_error
                if call.arguments_error is not None
                else json.dumps(call.arguments, ensure_ascii=False, sort_keys=True),
            },
        }
        for call in tool_calls
    ]
    return {"role": "assistant", "content": text or None, "tool_calls": calls}


def _parts_text(content: Any) -> str | None:
    if not isinstance(content, list):
        return None
    texts = [
        p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)
    ]
    return "".join(texts)


def tool_specs(tools: Sequence[Mapping[str, Any]] | None) -> list[ToolSpec]:
    """Official OpenAI tools as :class:`ToolSpec` s that a runner sends back unchanged (a
    doc's other keys, such as ``response``, in :attr:`ToolSpec.extra`)."""
    specs = []
    for tool in tools or []:
        doc = dict(tool["function"])
        name, description = doc.pop("name"), doc.pop("description")
        parameters = doc.pop("parameters")
        specs.append(ToolSpec(name=name, description=description, parameters=parameters, extra=doc))
    return specs
