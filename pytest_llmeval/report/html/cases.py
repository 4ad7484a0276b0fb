"""The cases embedded in report.html: one compact dict per case, as JSON safe inside
``<script>``."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterator, Sequence
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


_SORTED = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str)
_UNSORTED = json.JSONEncoder(ensure_ascii=False, default=str)
"""``json.dumps(value, ensure_ascii=False, [sort_keys=True,] default=str)`` without a new
encoder for every value."""


def _json_text(value: Any, limit: int) -> str:
    """A value as compact JSON text (a string stays as it is), cut to ``limit``."""
    if isinstance(value, str):
        return clip(value, limit)
    try:
        text = _SORTED.encode(value)
    except TypeError:  # keys of mixed types cannot be sorted
        text = _UNSORTED.encode(value)
    return clip(text, limit)


Share = Callable[[str], "str | int"]
"""What a row holds for one of its shareable texts (under :data:`TEXT_KEYS`): the text, or
its number in the page's ``strings`` (:func:`cases_json_pieces`)."""


def _as_is(text: str) -> str | int:
    return text


def _ms_value(value: float) -> float:
    return round(value, 1) if math.isfinite(value) else 0.0


def _score(value: float) -> float | str:
    """A score as JSON allows it: NaN and infinities become strings."""
    return value if math.isfinite(value) else str(value)


def _tool_call(call: ToolCallRecord, limit: int, share: Share) -> dict[str, Any]:
    row: dict[str, Any] = {
        "name": call.name,
        "ok": call.success,
        "source": call.source,
        "ms": _ms_value(call.duration_ms),
        "args": share(_json_text(call.params, limit)),
    }
    if call.result is not None:
        row["result"] = share(_json_text(call.result, limit))
    if call.arguments_error is not None:
        row["args_error"] = share(clip(call.arguments_error, limit))
    return row


def _message(message: dict[str, Any], limit: int, share: Share) -> dict[str, Any]:
    """A shown message of a result (``CaseResult.input``/``transcript``) for the page."""
    if "role" not in message:  # the {"omitted": N} marker of a long conversation
        return {"omitted": message.get("omitted", 0)}
    row: dict[str, Any] = {"role": message["role"]}
    content = message.get("content")
    if isinstance(content, str):
        row["content"] = share(clip(content, limit))
    calls = message.get("tool_calls")
    if calls:
        row["calls"] = [_message_call(call, limit, share) for call in calls[:MAX_TOOL_CALLS]]
    for key, short in (("name", "name"), ("tool_call_id", "call_id")):
        if message.get(key):
            row[short] = clip(str(message[key]), limit)
    return row


def _message_call(call: dict[str, Any], limit: int, share: Share) -> dict[str, Any]:
    args = call.get("arguments")
    shown = clip(args, limit) if isinstance(args, str) else _json_text(args, limit)
    row = {"name": str(call.get("name", "")), "args": share(shown)}
    if call.get("arguments_error") is not None:
        row["args_error"] = share(clip(str(call["arguments_error"]), limit))
    return row


def _is_answer(message: dict[str, Any], response: str) -> bool:
    """Whether ``message`` is the final answer alone (the page shows ``response`` anyway)."""
    return (
        message.get("role") == "assistant"
        and not message.get("tool_calls")
        and message.get("content") == response
    )


def _messages(messages: list[dict[str, Any]], limit: int, share: Share) -> list[dict[str, Any]]:
    return [_message(m, limit, share) for m in messages[:MAX_MESSAGES]]


def case_row(result: CaseResult, limit: int, share: Share = _as_is) -> dict[str, Any]:
    """One case for the page; empty and default fields are left out to keep the file small.
    Each shareable text (under :data:`TEXT_KEYS`) is put in as ``share`` gives it, in the
    order the row's keys hold it."""
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
    row.update(_told(result, limit, share))
    if result.scores:
        row["scores"] = {key: _score(value) for key, value in sorted(result.scores.items())}
    usage = result.usage
    if usage.total_tokens or usage.prompt_tokens or usage.completion_tokens:
        row["usage"] = [usage.prompt_tokens, usage.completion_tokens, usage.total_tokens]
    if result.fixture_hits or result.fixture_misses:
        row["fixtures"] = [result.fixture_hits, result.fixture_misses]
    if result.details:
        row["details"] = share(_json_text(result.details, limit))
    return row


def _told(result: CaseResult, limit: int, share: Share) -> dict[str, Any]:
    """The part of a case's row that holds texts but its ``details``: its error, input,
    expected answer, transcript, response and tool calls."""
    row: dict[str, Any] = {}
    if result.error:
        row["error"] = share(clip(result.error, limit))
    shown_input, expected, transcript = (unpack(result.input), unpack(result.expected),
                                         unpack(result.transcript))  # fmt: skip
    if shown_input:
        row["input"] = _messages(shown_input, limit, share)
    if expected:
        row["expected"] = share(_json_text(expected, limit))
    if transcript and _is_answer(transcript[-1], result.response):
        transcript = transcript[:-1]  # the page shows it as the final response, right after
    if transcript:
        row["transcript"] = _messages(transcript, limit, share)
    if result.response:
        row["response"] = share(clip(result.response, limit))
    if result.tool_calls:
        row["tools"] = [_tool_call(c, limit, share) for c in result.tool_calls[:MAX_TOOL_CALLS]]
        if len(result.tool_calls) > MAX_TOOL_CALLS:
            row["tools_more"] = len(result.tool_calls) - MAX_TOOL_CALLS
    return row


def _row_texts(result: CaseResult, limit: int, share: Share) -> None:
    """Hand ``share`` each shareable text of the case's row, in the row's order, without
    building the rest of the row (:func:`cases_json_pieces`' first pass)."""
    _told(result, limit, share)
    if result.details:
        share(_json_text(result.details, limit))


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


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class _Counted:
    """The first pass: which shareable texts are met more than once (by digest)."""

    def __init__(self) -> None:
        self.seen: set[bytes] = set()
        self.repeated: set[bytes] = set()

    def __call__(self, text: str) -> str:
        if len(text) >= MIN_SHARED:
            digest = _digest(text)
            (self.repeated if digest in self.seen else self.seen).add(digest)
        return text


class _Shared:
    """The second pass: a repeated text becomes its number in ``table`` (added on its first
    sight); every other text stays in its row."""

    def __init__(self, repeated: set[bytes]) -> None:
        self.repeated = repeated
        self.index: dict[bytes, int] = {}
        self.table: list[str] = []

    def __call__(self, text: str) -> str | int:
        if len(text) < MIN_SHARED or not self.repeated:
            return text
        digest = _digest(text)
        if digest not in self.repeated:
            return text
        number = self.index.get(digest)
        if number is None:
            number = self.index[digest] = len(self.table)
            self.table.append(text)
        return number


def cases_json_pieces(results: Sequence[CaseResult], max_chars: int) -> Iterator[str]:
    """The data block's text (``{"version": 2, "max_chars": N, "cases": [...], "strings":
    [...]}``) in pieces: the head, then each case's row (after a comma), then each shared text,
    then the end. A row is built, encoded and made safe inside ``<script>`` only when it is
    asked for, so a page written piece by piece holds one row at a time, not the block (at
    100,000 cases the block is tens of MB, and a page built whole held it several times over).

    A long text met in more than one place (a system prompt in every case's input and
    transcript, a tool's schema, the same tool result) is written once, in ``strings``, and a
    row holds its number there instead (under the keys of :data:`TEXT_KEYS`); the page's
    script puts the text back when the case is shown. A first pass counts the texts by a
    digest (building only the parts of the rows that hold them), so only the repeated ones
    are kept in memory; the second builds each row with them in place.
    """
    counted = _Counted()
    for result in results:
        _row_texts(result, max_chars, counted)
    shared = _Shared(counted.repeated)
    counted.seen.clear()
    head = _COMPACT.encode({"version": 2, "max_chars": max_chars})
    yield _script_safe(f'{head[:-1]},"cases":[')
    for i, result in enumerate(results):
        text = _script_safe(_COMPACT.encode(case_row(result, max_chars, shared)))
        yield text if i == 0 else "," + text
    yield '],"strings":['
    for i, text in enumerate(shared.table):
        encoded = _script_safe(_COMPACT.encode(text))
        yield encoded if i == 0 else "," + encoded
    yield "]}"
