"""The official BFCL conversation: the messages and tools BFCL's own client sends, as builders.

These pure functions rebuild, for one item and mode, what ``bfcl-eval==2026.3.23``'s
``OpenAICompletionsHandler`` puts in each Chat Completions request (``messages`` and
``tools``); ``tests/scoring/bfcl/conversation_vectors.jsonl`` holds that client's real
requests, and the tests require these builders to equal them message by message and tool by
tool. Nothing here mutates its arguments (but :func:`keeping`, which hands a case's new task
its item's model).

**Tools (FC mode)**, :func:`tools_for`, in two steps:

1. the language hint (:func:`language_hint`, the official loader's
   ``_func_doc_language_specific_pre_processing``): each description gets a sentence naming
   the language; Java and JavaScript parameters all become ``string`` with a sentence naming
   the original type, arrays lose ``items`` (written into the description) and JavaScript
   dicts lose ``properties`` (likewise);
2. the conversion to an OpenAI tool (:func:`openai_tools`, the official ``convert_to_tool``):
   ``.`` in names becomes ``_``, ``parameters.type`` becomes ``object``, property types map
   through :data:`GORILLA_TO_OPENAPI` (into ``properties`` and ``items``), ``float`` gains
   ``"format": "float"`` and a sentence.

Multi-turn: the tools are the involved classes' docs; the ``miss_func`` held-out docs are
appended, unhinted, from their turn on. A request carries a ``tools`` key only when the list
is not empty, and never in prompt mode (:func:`tools_for` returns ``None`` then).

**Messages.** :func:`first_messages`, then per later turn :func:`turn_messages`; after each
model reply, :func:`assistant_echo` of it, then, when it decoded to calls that were run,
:func:`tool_result_messages`. In prompt mode the first turn carries the official system prompt
(:mod:`~pytest_llmeval.suites.bfcl_prompts`), merged into the row's own system message when
the turn starts with one.

Every builder returns fresh containers (:func:`fresh`: a copy of JSON data, about five times
as fast as :func:`copy.deepcopy`, which a case paid on its docs per request), so what a
request carries never aliases the item it was built from.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_llmeval.core.models import BfclTask
from pytest_llmeval.scoring.bfcl.calls import Mode, language_of
from pytest_llmeval.suites.bfcl_data import BfclItem
from pytest_llmeval.suites.bfcl_prompts import PromptTexts, installed_texts, system_prompt

Doc = dict[str, Any]
Message = dict[str, Any]

GORILLA_TO_OPENAPI: dict[str, str] = {
    "integer": "integer",
    "number": "number",
    "float": "number",
    "string": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "dict": "object",
    "object": "object",
    "tuple": "array",
    "any": "string",
    "byte": "integer",
    "short": "integer",
    "long": "integer",
    "double": "number",
    "char": "string",
    "ArrayList": "array",
    "Array": "array",
    "HashMap": "object",
    "Hashtable": "object",
    "Queue": "array",
    "Stack": "array",
    "Any": "string",
    "String": "string",
    "Bigint": "integer",
}
"""BFCL's parameter types -> OpenAPI types (the official ``GORILLA_TO_OPENAPI``)."""

HINTS = {
    "python": " Note that the provided function is in Python 3 syntax.",
    "java": " Note that the provided function is in Java 8 SDK syntax.",
    "javascript": " Note that the provided function is in JavaScript syntax.",
}
"""The sentence appended to every description, by the category's language."""

FLOAT_SENTENCE = " This is a float type value."

_LANGUAGE_NAMES = {"java": "Java", "javascript": "JavaScript"}


_ATOMS = (str, int, float, bool, type(None))


def keeping(task: BfclTask, item: BfclItem) -> BfclTask:
    """``task`` (whose :attr:`~BfclTask.item` is ``item``'s dump) holding ``item`` itself, for
    :func:`task_item`: the agent and the scorer need not validate the dump again per case."""
    task._parsed = item
    return task


def task_item(task: BfclTask) -> BfclItem:
    """The item a case's :class:`BfclTask` runs: the model its suite built (:func:`keeping`),
    or, for a task read back from JSON, :attr:`BfclTask.item` validated."""
    parsed = task._parsed
    if isinstance(parsed, BfclItem):
        return parsed
    return BfclItem.model_validate(task.item)


def fresh(value: Any) -> Any:
    """A deep copy of JSON data: new dicts and lists all the way down (a value of another
    type, which JSON data never holds, goes through :func:`copy.deepcopy`)."""
    kind = type(value)
    if kind is dict:
        return {key: fresh(child) for key, child in value.items()}
    if kind is list:
        return [fresh(child) for child in value]
    if kind in _ATOMS:
        return value
    return copy.deepcopy(value)


# ---------------------------------------------------------------------------------- tools


def language_hint(functions: Sequence[Doc], category: str) -> list[Doc]:
    """The docs after the official language hint for ``category`` (a deep copy)."""
    docs: list[Doc] = [fresh(doc) for doc in functions]
    language = language_of(category)
    for doc in docs:
        doc["description"] = doc["description"] + HINTS[language]
        if language == "python":
            continue
        name = _LANGUAGE_NAMES[language]
        arrays = ("array",) if language == "javascript" else ("ArrayList", "Array")
        for prop in doc["parameters"]["properties"].values():
            kind = prop["type"]
            if kind == "any":
                prop["description"] += (
                    f" This parameter can be of any type of {name} object in string representation."
                )
            else:
                prop["description"] += (
                    f" This is {name} {kind} type parameter in string representation."
                )
            if kind in arrays:
                prop["description"] += (
                    f" The list elements are of type {prop['items']['type']}; they are not in "
                    "string representation."
                )
                del prop["items"]
            if language == "javascript" and kind == "dict" and "properties" in prop:
                prop["description"] += (
                    " The dictionary entries have the following schema; they are not in string "
                    f"representation. {json.dumps(prop['properties'])}"
                )
                del prop["properties"]
            prop["type"] = "string"
    return docs


def openai_tools(functions: Sequence[Doc]) -> list[dict[str, Any]]:
    """The docs as OpenAI Chat Completions tools (the official ``convert_to_tool``)."""
    return _tools_of_copies([fresh(doc) for doc in functions])


def _tools_of_copies(docs: list[Doc]) -> list[dict[str, Any]]:
    """:func:`openai_tools` of docs the caller owns (changed in place, not copied again)."""
    tools = []
    for doc in docs:
        if "." in doc["name"]:
            doc["name"] = doc["name"].replace(".", "_")
        doc["parameters"]["type"] = "object"
        doc["parameters"]["properties"] = _openapi_types(doc["parameters"]["properties"])
        tools.append({"type": "function", "function": doc})
    return tools


def _openapi_types(properties: dict[str, Any]) -> dict[str, Any]:
    """The official ``_cast_to_openai_type``, step for step (an unknown ``items`` type raises
    ``KeyError`` there and here)."""
    mapping = GORILLA_TO_OPENAPI
    for prop in properties.values():
        if "type" not in prop:
            prop["type"] = "string"
        else:
            kind = prop["type"]
            if kind == "float":
                prop["format"] = "float"
                prop["description"] += FLOAT_SENTENCE
            prop["type"] = mapping.get(kind, "string") if isinstance(kind, str) else "string"
        if prop["type"] not in ("array", "object"):
            continue
        if "properties" in prop:
            prop["properties"] = _openapi_types(prop["properties"])
        elif "items" in prop:
            items = prop["items"]
            items["type"] = mapping[items["type"]]
            if items["type"] == "array" and "items" in items:
                items["items"]["type"] = mapping[items["items"]["type"]]
            elif items["type"] == "object" and "properties" in items:
                items["properties"] = _openapi_types(items["properties"])
    return properties


def tools_for(
    item: BfclItem, mode: Mode, revealed: Iterable[str] = ()
) -> list[dict[str, Any]] | None:
    """The ``tools`` of a request, or ``None`` when the request has no ``tools`` key.

    ``revealed``: the ``miss_func`` turns (keys of :attr:`BfclItem.missed_function`) reached
    so far, in turn order; their held-out docs are appended without the language hint."""
    if mode != "fc":
        return None
    docs = language_hint(item.functions, item.category)
    for turn in revealed:
        docs.extend(fresh(doc) for doc in item.missed_function.get(turn, []))
    return _tools_of_copies(docs) or None  # docs: fresh deep copies already


def revealed_turns(item: BfclItem, turn_index: int) -> list[str]:
    """The held-out turns reached once turn ``turn_index`` is asked, in turn order."""
    return sorted((t for t in item.missed_function if int(t) <= turn_index), key=int)


# ------------------------------------------------------------------------------- messages


def first_messages(item: BfclItem, mode: Mode, texts: PromptTexts | None = None) -> list[Message]:
    """The messages of the first request (turn 0).

    Prompt mode: the system prompt over the hinted docs (held-out ones left out) is a new
    first message, or, when the row's first message is a system message, is put before its
    content with a blank line. ``texts`` defaults to the installed package's."""
    messages = turn_messages(item, mode, 0, texts)
    if mode != "prompt":
        return messages
    prompt = system_prompt(texts or installed_texts(), language_hint(item.functions, item.category))
    if messages and messages[0]["role"] == "system":
        messages[0]["content"] = prompt + "\n\n" + messages[0]["content"]
        return messages
    return [{"role": "system", "content": prompt}, *messages]


def turn_messages(
    item: BfclItem, mode: Mode, turn_index: int, texts: PromptTexts | None = None
) -> list[Message]:
    """The user messages that open turn ``turn_index`` (without the system prompt: use
    :func:`first_messages` for turn 0). A ``miss_func`` held-out turn is
    :func:`held_out_turn`."""
    held_out = item.missed_function.get(str(turn_index))
    if held_out is not None:
        return held_out_turn(mode, held_out, texts)
    return [fresh(message) for message in item.question[turn_index]]


def held_out_turn(
    mode: Mode, docs: Sequence[Doc], texts: PromptTexts | None = None
) -> list[Message]:
    """The user message of a ``miss_func`` turn that adds ``docs``.

    FC: the fixed sentence (the docs go into ``tools``); prompt: ``str(docs)`` (Python's
    ``str`` of the original docs, no hint), a newline, then the sentence."""
    texts = texts or installed_texts()
    if mode == "fc":
        return [{"role": "user", "content": texts.additional_functions_fc}]
    content = texts.additional_functions_prompting.format(functions=list(docs))
    return [{"role": "user", "content": content}]


def assistant_echo(message: Mapping[str, Any]) -> Message:
    """The model's reply as it goes back into the history: the server's message, verbatim
    (every key it sent, ``content`` ``None`` and ``tool_calls`` included)."""
    return {key: fresh(value) for key, value in message.items()}


def tool_result_messages(
    mode: Mode,
    results: Sequence[str],
    *,
    tool_call_ids: Sequence[str] = (),
    call_texts: Sequence[str] = (),
) -> list[Message]:
    """The messages carrying one step's execution results (already formatted strings).

    FC: one ``tool`` message per result, paired in order with ``tool_call_ids`` (the reply's
    tool call ids; unpaired ones are left out, as the official ``zip`` does). Prompt: one
    ``user`` message, Python's ``repr`` of ``[{'role': 'tool', 'name': CALL, 'content':
    RESULT}, ...]``, with ``call_texts`` the calls as the official executor wrote them."""
    if mode == "fc":
        return [
            {"role": "tool", "content": result, "tool_call_id": call_id}
            for result, call_id in zip(results, tool_call_ids, strict=False)
        ]
    entries = [
        {"role": "tool", "name": call, "content": result}
        for result, call in zip(results, call_texts, strict=False)
    ]
    return [{"role": "user", "content": repr(entries)}]


def tool_call_ids(message: Mapping[str, Any]) -> list[str]:
    """The ids of a reply's tool calls, in order (``[]`` when it has none)."""
    calls = message.get("tool_calls") or []
    return [str(call.get("id")) for call in calls if isinstance(call, Mapping)]
