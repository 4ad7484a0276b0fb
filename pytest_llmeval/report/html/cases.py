"""The cases embedded in report.html: one compact dict per case, as JSON safe inside
``<script>``."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator, Sequence
from typing import Any

from pytest_llmeval.core.clip import clip
from pytest_llmeval.core.models import CaseResult, ToolCallRecord, unpack

DATA_ELEMENT_ID = "llmeval-data"
"""The id of the ``<script type="application/json">`` element holding the cases."""
MAX_CHARS = 2000
"""Longer texts (responses, errors, tool arguments and results, details) are cut to this."""
MAX_TOOL_CALLS = 100
"""Tool calls embedded per case; the rest are counted in a marker."""
MAX_MESSAGES = 41
"""Messages of a case's input or transcript embedded per case: what ``results.jsonl`` keeps
(40 and the marker of the ones left out)."""


def _json_text(value: Any, limit: int) -> str:
    """A value as compact JSON text (a string stays as it is), cut to ``limit``."""
    if isinstance(value, str):
        return clip(value, limit)
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except TypeError:  # keys of mixed types cannot be sorted
        text = json.dumps(value, ensure_ascii=False, default=str)
    return clip(text, limit)


def _ms_value(value: float) -> float:
    return round(value, 1) if math.isfinite(value) else 0.0


def _score(value: float) -> float | str:
    """A score as JSON allows it: NaN and infinities become strings."""
    return value if math.isfinite(value) else str(value)


def _tool_call(call: ToolCallRecord, limit: int) -> dict[str, Any]:
    row: dict[str, Any] = {
        "name": call.name,
        "ok": call.success,
        "source": call.source,
        "ms": _ms_value(call.duration_ms),
        "args": _json_text(call.params, limit),
    }
    if call.result is not None:
        row["result"] = _json_text(call.result, limit)
    if call.arguments_error is not None:
        row["args_error"] = clip(call.arguments_error, limit)
    return row


def _message(message: dict[str, Any], limit: int) -> dict[str, Any]:
    """A shown message of a result (``CaseResult.input``/``transcript``) for the page."""
    if "role" not in message:  # the {"omitted": N} marker of a long conversation
        return {"omitted": message.get("omitted", 0)}
    row: dict[str, Any] = {"role": message["role"]}
    content = message.get("content")
    if isinstance(content, str):
        row["content"] = clip(content, limit)
    calls = message.get("tool_calls")
    if calls:
        row["calls"] = [_message_call(call, limit) for call in calls[:MAX_TOOL_CALLS]]
    for key, short in (("name", "name"), ("tool_call_id", "call_id")):
        if message.get(key):
            row[short] = clip(str(message[key]), limit)
    return row


def _message_call(call: dict[str, Any], limit: int) -> dict[str, Any]:
    args = call.get("arguments")
    shown = clip(args, limit) if isinstance(args, str) else _json_text(args, limit)
    row = {"name": str(call.get("name", "")), "args": shown}
    if call.get("arguments_error") is not None:
        row["args_error"] = clip(str(call["arguments_error"]), limit)
    return row


def _is_answer(message: dict[str, Any], response: str) -> bool:
    """Whether ``message`` is the final answer alone (the page shows ``response`` anyway)."""
    return (
        message.get("role") == "assistant"
        and not message.get("tool_calls")
        and message.get("content") == response
    )


def _messages(messages: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    return [_message(m, limit) for m in messages[:MAX_MESSAGES]]


def case_row(result: CaseResult, limit: int) -> dict[str, Any]:
    """One case for the page; empty and default fields are left out to keep the file small."""
    row: dict[str, Any] = {
        "id": result.case_id,
        "nodeid": result.nodeid,
        "suite": result.suite,
        "outcome": result.outcome,
        "ms": _ms_value(result.duration_ms),
        "line": result.line,
    }
    if result.xfailed:
        row["xfail"] = 1
    if result.nodeid.split("::", 1)[0] != result.file:  # the page reads it off the node id
        row["file"] = result.file
    if result.category is not None:
        row["cat"] = result.category
    if result.error:
        row["error"] = clip(result.error, limit)
    shown_input, expected, transcript = (unpack(result.input), unpack(result.expected),
                                         unpack(result.transcript))  # fmt: skip
    if shown_input:
        row["input"] = _messages(shown_input, limit)
    if expected:
        row["expected"] = _json_text(expected, limit)
    if transcript and _is_answer(transcript[-1], result.response):
        transcript = transcript[:-1]  # the page shows it as the final response, right after
    if transcript:
        row["transcript"] = _messages(transcript, limit)
    if result.response:
        row["response"] = clip(result.response, limit)
    if result.tool_calls:
        calls = [_tool_call(c, limit) for c in result.tool_calls[:MAX_TOOL_CALLS]]
        row["tools"] = calls
        if len(result.tool_calls) > MAX_TOOL_CALLS:
            row["tools_more"] = len(result.tool_calls) - MAX_TOOL_CALLS
    if result.scores:
        row["scores"] = {key: _score(value) for key, value in sorted(result.scores.items())}
    usage = result.usage
    if usage.total_tokens or usage.prompt_tokens or usage.completion_tokens:
        row["usage"] = [usage.prompt_tokens, usage.completion_tokens, usage.total_tokens]
    if result.fixture_hits or result.fixture_misses:
        row["fixtures"] = [result.fixture_hits, result.fixture_misses]
    if result.details:
        row["details"] = _json_text(result.details, limit)
    return row


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
"""The data block's JSON (one encoder for every row)."""


def _script_safe(text: str) -> str:
    """JSON text made safe inside ``<script>``: no ``<`` (so no ``</script>`` nor ``<!--``)."""
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


TEXT_KEYS = frozenset(
    {"error", "expected", "response", "details", "content", "args", "result", "args_error"}
)
"""The row keys whose texts may be shared: a text met more than once is stored once."""
MIN_SHARED = 48
"""Shorter texts stay in their rows: a reference would save too little."""


def _texts(value: Any) -> Iterator[str]:
    """The shareable texts of a row, at any depth."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in TEXT_KEYS and isinstance(item, str):
                if len(item) >= MIN_SHARED:
                    yield item
            else:
                yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _shared(value: Any, repeated: set[bytes], index: dict[bytes, int], table: list[str]) -> Any:
    """``value`` with each repeated text replaced by its number in ``table`` (added on its
    first sight)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in TEXT_KEYS and isinstance(item, str) and len(item) >= MIN_SHARED:
                digest = _digest(item)
                if digest in repeated:
                    if digest not in index:
                        index[digest] = len(table)
                        table.append(item)
                    item = index[digest]
                out[key] = item
            else:
                out[key] = _shared(item, repeated, index, table)
        return out
    if isinstance(value, list):
        return [_shared(item, repeated, index, table) for item in value]
    return value


def cases_json_pieces(results: Sequence[CaseResult], max_chars: int) -> Iterator[str]:
    """The data block's text (``{"version": 2, "max_chars": N, "cases": [...], "strings":
    [...]}``) in pieces: the head, then each case's row (after a comma), then each shared text,
    then the end. A row is built, encoded and made safe inside ``<script>`` only when it is
    asked for, so a page written piece by piece holds one row at a time, not the block (at
    100,000 cases the block is tens of MB, and a page built whole held it several times over).

    A long text met in more than one place (a system prompt in every case's input and
    transcript, a tool's schema, the same tool result) is written once, in ``strings``, and a
    row holds its number there instead (under the keys of :data:`TEXT_KEYS`); the page's
    script puts the text back when the case is shown. A first pass over the rows counts the
    texts by a digest, so only the repeated ones are kept in memory.
    """
    seen: set[bytes] = set()
    repeated: set[bytes] = set()
    for result in results:
        for text in _texts(case_row(result, max_chars)):
            digest = _digest(text)
            (repeated if digest in seen else seen).add(digest)
    seen.clear()
    index: dict[bytes, int] = {}
    table: list[str] = []
    head = _COMPACT.encode({"version": 2, "max_chars": max_chars})
    yield _script_safe(f'{head[:-1]},"cases":[')
    for i, result in enumerate(results):
        row = _shared(case_row(result, max_chars), repeated, index, table)
        text = _script_safe(_COMPACT.encode(row))
        yield text if i == 0 else "," + text
    yield '],"strings":['
    for i, text in enumerate(table):
        encoded = _script_safe(_COMPACT.encode(text))
        yield encoded if i == 0 else "," + encoded
    yield "]}"
