"""How a kept result holds its large fields: as compact JSON, equal ones once.

A session holds every case's result to its end (:meth:`pytest_llmeval.core.models.CaseResult.
kept`). Its ``input``, ``expected``, ``transcript`` and ``events`` are only read to be written,
so they are held as :class:`Packed` JSON (a tenth of the dicts' size, and no containers for the
garbage collector to walk), read back through :func:`unpack`; equal token counts are one
:class:`~pytest_llmeval.core.model_base.Usage`.
"""

from __future__ import annotations

import copy
import json
from json.scanner import make_scanner
from typing import Any, NoReturn

from pydantic import PlainSerializer

from pytest_llmeval.core.held_once import HeldOnce
from pytest_llmeval.core.model_base import Usage

__all__ = [
    "PACKED_FIELDS",
    "SHOWN",
    "Packed",
    "pack",
    "packable",
    "shared_containers",
    "shared_usage",
    "unpack",
]


class Packed(bytes):
    """A kept result's ``input``, ``expected``, ``transcript`` or ``events``: its value as
    compact JSON (UTF-8). A field that may hold one is declared ``... | Packed``; read it with
    :func:`unpack`."""


_SCAN = make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # what json itself passes
"""``json.loads`` of a text that is one JSON value, without its checks around the value
(about half its time for a short value; a session's end reads every kept value back)."""


def unpack(value: Any) -> Any:
    """A packable field's value (``CaseResult.input``/``expected``/``transcript``/``events``)
    as JSON values, whether the result was kept (:class:`Packed`) or not."""
    if isinstance(value, Packed):
        text = value.decode("utf-8", "surrogatepass")
        try:
            found, end = _SCAN(text, 0)
        except StopIteration:  # not JSON: json.loads says where
            return json.loads(text)
        return found if end == len(text) else json.loads(text)  # text after the value
    return value


SHOWN = PlainSerializer(unpack)
PACKED_FIELDS = ("input", "expected", "transcript", "events")


_PACKED: HeldOnce[bytes, Packed] = HeldOnce()
"""Packed values seen before, so equal ones (the same expectations) are held once."""
_PACK = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)
"""Packs JSON values (a dump: no cycle in them)."""


_USAGES: HeldOnce[tuple[int, int, int], Usage] = HeldOnce()
"""Kept results' token counts seen before, so equal ones are held once (never changed)."""
_EVERY_USAGE_FIELD: set[str] = set(Usage.model_fields)


def shared_usage(usage: Usage) -> Usage:
    """``usage``, or an equal one held before (a kept result's token counts)."""
    if usage.model_fields_set != _EVERY_USAGE_FIELD:
        return usage
    key = (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)
    return _USAGES.held(key, usage)


READ_ONLY = (
    "llmeval: a kept result's scores, details and tool calls are shared with equal results' "
    "and read-only; change a copy (dict(result.scores), result.model_copy(deep=True))"
)
"""What changing a shared container raises (it would change every result holding it)."""


def _refuse(*_: Any, **__: Any) -> NoReturn:
    raise TypeError(READ_ONLY)


class SharedDict(dict[str, Any]):
    """A dict many kept results hold (equal scores, empty details): read as a dict, dumped
    as one; every change raises :data:`READ_ONLY`, and a copy is a plain dict."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return copy.deepcopy(dict(self), memo)

    def __reduce__(self) -> tuple[Any, ...]:
        return dict, (dict(self),)


class SharedList(list[Any]):
    """The one empty list of tool calls kept results hold: :class:`SharedDict`'s rules."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = clear = extend = insert = pop = remove = reverse = sort = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return copy.deepcopy(list(self), memo)

    def __reduce__(self) -> tuple[Any, ...]:
        return list, (list(self),)


_SCORES: HeldOnce[tuple[tuple[str, str], ...], SharedDict] = HeldOnce()
"""Kept results' score dicts seen before, by their names and values' ``repr`` (so ``1`` and
``1.0``, or ``0.0`` and ``-0.0``, are never taken for each other), each held once (a copy:
the dict a result was made with stays its maker's)."""
_NOTHING = SharedDict()
_NONE = SharedList()


def shared_containers(fields: dict[str, Any]) -> None:
    """A kept result's ``scores`` made the equal dict held before, and its empty ``details``
    and ``tool_calls`` one shared empty dict and list: most results of a session score alike
    and call no tool. A kept result is only read: the shared ones refuse every change
    (:data:`READ_ONLY`), so none is ever seen in another result."""
    scores = fields["scores"]
    if type(scores) is dict and len(scores) <= 8:
        key = tuple((name, repr(value)) for name, value in scores.items())
        fields["scores"] = _SCORES.made(key, lambda: SharedDict(scores))
    if type(fields["details"]) is dict and not fields["details"]:
        fields["details"] = _NOTHING
    if type(fields["tool_calls"]) is list and not fields["tool_calls"]:
        fields["tool_calls"] = _NONE


def packable(data: dict[str, Any], name: str) -> bool:
    """Whether ``data[name]`` is JSON values of the field's declared shape, to be packed."""
    value = data.get(name)
    if name == "expected":
        return isinstance(value, dict) and all(isinstance(key, str) for key in value)
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)


def pack(value: Any) -> Packed:
    """``value`` (JSON values) as :class:`Packed`; a short one equal to one packed before is
    that one."""
    packed = Packed(_PACK.encode(value).encode("utf-8", "surrogatepass"))
    if len(packed) > 256:
        return packed
    return _PACKED.held(packed, packed)
