"""The tool broker: serves tool results from fixture files and per-case stubs.

The broker never touches the network and never raises for a call it cannot serve: a miss is a
``ToolCallRecord`` with ``source="miss"`` whose result tells the model (and the report) what
was asked and which fixture came closest. A *broken fixture file*, on the other hand, is a
configuration error (:class:`~pytest_llmeval.core.errors.ConfigError`) reported once.

Fixture files are the ``*.jsonl`` files directly inside a fixtures directory (not its
subfolders, which may hold cassettes or anything else). Each entry is one JSON object::

    {"name": "web.search", "key": {"q": "what is rope precision", "top_k": 3}, "result": {...}}

Entries are normally one per line; an object may also span several lines (the seed shows
pretty-printed entries), and its location is then the line it starts on.

Arguments are normalised (:func:`normalize_args`) both when fixtures load and when a call is
looked up, so fixtures match despite whitespace, case and optional-parameter differences
between runners.
"""

from __future__ import annotations

import copy
import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pytest_llmeval.core.errors import ConfigError
from pytest_llmeval.core.fingerprint import canonical_json, fingerprint
from pytest_llmeval.core.models import ToolCallRecord
from pytest_llmeval.inputs.safe_read import SupportFileError, iter_json_values

__all__ = [
    "NORMALIZATION_VERSION",
    "BrokerMode",
    "FixtureEntry",
    "ToolBroker",
    "iter_fixture_file",
    "normalize_args",
    "parse_entry",
]

BrokerMode = Literal["broker", "stubs", "routing"]

NORMALIZATION_VERSION = 1
"""Bumped whenever :func:`normalize_args` changes; part of :meth:`ToolBroker.fingerprint`."""

_QUERY_KEYS = ("q", "query")
_SEARCH_PREFIX = "web.search"
_SEARCH_DEFAULT_TOP_K = 3
_ENTRY_FIELDS = ("name", "key", "result")
_WHITESPACE = re.compile(r"\s+")


def normalize_args(tool: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments of a call to ``tool`` in the form fixtures are keyed by.

    * top-level keys whose value is ``None`` are dropped (nested ``None`` values are kept:
      they are data, not omitted optional parameters);
    * string values of ``q`` and ``query`` are lower-cased, runs of whitespace collapse to
      one space, and the ends are stripped;
    * tools whose name starts with ``web.search`` get ``top_k=3`` when it is missing.

    Pure: ``args`` is not modified.
    """
    normalized: dict[str, Any] = {}
    for name, value in args.items():
        if value is None:
            continue
        if name in _QUERY_KEYS and isinstance(value, str):
            value = _WHITESPACE.sub(" ", value).strip().lower()
        normalized[name] = value
    if tool.startswith(_SEARCH_PREFIX) and "top_k" not in normalized:
        normalized["top_k"] = _SEARCH_DEFAULT_TOP_K
    return normalized


@dataclass(frozen=True)
class FixtureEntry:
    """One fixture: the result ``name`` returns for the (normalised) arguments ``key``."""

    name: str
    key: dict[str, Any]
    """Normalised arguments."""
    result: Any
    origin: str
    """Where the entry came from (``path:line``), for error messages."""

    @property
    def lookup_key(self) -> str:
        return canonical_json(self.key)

    def content(self) -> dict[str, Any]:
        """The entry without its origin: what the fingerprint covers."""
        return {"name": self.name, "key": self.key, "result": self.result}


def _fixture_error(origin: str, field: str | None, message: str) -> ConfigError:
    what = f"{field}: " if field else ""
    return ConfigError(f"fixture {origin}: {what}{message}")


def parse_entry(raw: Any, origin: str) -> FixtureEntry:
    """Validate one raw fixture object and normalise its key; raises :class:`ConfigError`."""
    if not isinstance(raw, Mapping):
        raise _fixture_error(origin, None, f"expected a JSON object, got {type(raw).__name__}")
    for field in _ENTRY_FIELDS:
        if field not in raw:
            raise _fixture_error(origin, field, "missing (an entry needs name, key and result)")
    unknown = sorted(set(raw) - set(_ENTRY_FIELDS))
    if unknown:
        raise _fixture_error(origin, unknown[0], "unknown field (expected name, key, result)")
    name, key = raw["name"], raw["key"]
    if not isinstance(name, str) or not name:
        raise _fixture_error(origin, "name", f"expected a non-empty string, got {name!r}")
    if not isinstance(key, Mapping):
        raise _fixture_error(origin, "key", f"expected an object, got {type(key).__name__}")
    return FixtureEntry(
        name=name, key=normalize_args(name, key), result=raw["result"], origin=origin
    )


def iter_fixture_file(path: Path) -> Iterator[FixtureEntry]:
    """Entries of one fixture file, in file order; raises :class:`ConfigError` naming
    ``path:line`` for unreadable files, bad JSON (through the support-file reader and its
    caps) and malformed entries."""
    try:
        values = list(iter_json_values(path))
    except SupportFileError as exc:
        raise _fixture_error(exc.where, None, exc.message) from None
    for line, raw in values:
        yield parse_entry(raw, f"{path}:{line}")


def _nearest(normalized: Mapping[str, Any], keys: Iterable[dict[str, Any]]) -> Any:
    """The key sharing the most equal key/value pairs with ``normalized``; ties go to the key
    with fewest differing pairs, then to the smallest canonical JSON (deterministic)."""
    wanted = {name: canonical_json(value) for name, value in normalized.items()}
    best: tuple[int, int, str] | None = None
    best_key: dict[str, Any] | None = None
    for key in keys:
        have = {name: canonical_json(value) for name, value in key.items()}
        shared = sum(1 for name, value in have.items() if wanted.get(name) == value)
        differing = len(set(have) | set(wanted)) - shared
        rank = (-shared, differing, canonical_json(key))
        if best is None or rank < best:
            best, best_key = rank, key
    return copy.deepcopy(best_key)


class ToolBroker:
    """Fixture store, argument normalisation, stubs and hit/miss accounting.

    Safe to call from many asyncio tasks and threads at once: the fixture table is read-only
    after construction and the counters sit behind a lock.
    """

    def __init__(self, entries: Iterable[FixtureEntry | Mapping[str, Any]] = ()) -> None:
        self._entries: dict[tuple[str, str], FixtureEntry] = {}
        self._keys_by_tool: dict[str, list[dict[str, Any]]] = {}
        for index, entry in enumerate(entries, start=1):
            if not isinstance(entry, FixtureEntry):
                entry = parse_entry(entry, f"<entry {index}>")
            self._add(entry)
        self._lock = threading.Lock()
        self._stats: dict[str, dict[str, int]] = {}
        self.hits = 0
        """Calls answered from a stub or a fixture."""
        self.misses = 0
        """Calls nothing could answer."""

    @classmethod
    def from_dir(cls, path: Path | str | None) -> ToolBroker:
        """A broker over the ``*.jsonl`` files directly in ``path`` (sorted by name), or over
        ``path`` itself when it is a file. ``None`` or a missing path gives an empty broker."""
        if path is None:
            return cls()
        path = Path(path)
        if path.is_file():
            files = [path]
        elif path.is_dir():
            files = sorted(p for p in path.glob("*.jsonl") if p.is_file())
        else:
            return cls()
        return cls(entry for file in files for entry in iter_fixture_file(file))

    def _add(self, entry: FixtureEntry) -> None:
        slot = (entry.name, entry.lookup_key)
        existing = self._entries.get(slot)
        if existing is None:
            self._entries[slot] = entry
            self._keys_by_tool.setdefault(entry.name, []).append(entry.key)
        elif canonical_json(existing.result) != canonical_json(entry.result):
            raise ConfigError(
                f"fixture {entry.origin}: conflicts with {existing.origin}: both answer "
                f"{entry.name} {slot[1]} (after normalisation) with different results; "
                "keep one of them"
            )

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def entries(self) -> list[FixtureEntry]:
        """The fixture entries, sorted by tool name and canonical key."""
        return [self._entries[slot] for slot in sorted(self._entries)]

    @property
    def tools(self) -> list[str]:
        """Tool names with at least one fixture, sorted."""
        return sorted(self._keys_by_tool)

    def fingerprint(self) -> str:
        """sha256 over the fixture content (tool, normalised key, result), independent of file
        names, file order and duplicate entries."""
        return fingerprint(
            {
                "normalization": NORMALIZATION_VERSION,
                "entries": [entry.content() for entry in self.entries],
            }
        )

    def stats(self) -> dict[str, dict[str, int]]:
        """Hits and misses per tool name: ``{"web.search": {"hits": 3, "misses": 1}}``."""
        with self._lock:
            return {tool: dict(counts) for tool, counts in sorted(self._stats.items())}

    def _count(self, tool: str, hit: bool) -> None:
        with self._lock:
            counts = self._stats.setdefault(tool, {"hits": 0, "misses": 0})
            if hit:
                self.hits += 1
                counts["hits"] += 1
            else:
                self.misses += 1
                counts["misses"] += 1

    def lookup(self, tool: str, args: Mapping[str, Any]) -> FixtureEntry | None:
        """The fixture answering ``tool(args)``, or ``None``; counts nothing."""
        return self._entries.get((tool, canonical_json(normalize_args(tool, args))))

    def miss_result(self, tool: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """The result handed to the model when nothing answers ``tool(args)``."""
        normalized = normalize_args(tool, args)
        keys = self._keys_by_tool.get(tool)
        return {
            "error": "fixture_miss",
            "tool": tool,
            "normalized_args": copy.deepcopy(normalized),
            "nearest": _nearest(normalized, keys) if keys else None,
        }

    def call(
        self,
        tool: str,
        args: Mapping[str, Any] | None,
        stubs: Mapping[str, Any] | None = None,
        mode: BrokerMode = "broker",
    ) -> ToolCallRecord:
        """Serve one tool call.

        * ``routing``: nothing runs; the record has ``source="routing"`` and no result.
        * ``stubs``: the case's stub for ``tool``, else a miss.
        * ``broker``: the case's stub for ``tool`` when there is one, else a fixture, else a
          miss.

        Results are deep copies, so callers may modify them. ``params`` are ``args`` as the
        model passed them.
        """
        started = time.perf_counter()
        params = dict(args or {})
        if mode == "routing":
            return ToolCallRecord(name=tool, params=params, source="routing", success=True)
        if mode not in ("broker", "stubs"):
            raise ValueError(f"unknown tool mode {mode!r} (expected broker, stubs or routing)")
        source: Literal["stub", "fixture", "miss"]
        if stubs is not None and tool in stubs:
            source, result = "stub", copy.deepcopy(stubs[tool])
        else:
            entry = self.lookup(tool, params) if mode == "broker" else None
            if entry is not None:
                source, result = "fixture", copy.deepcopy(entry.result)
            else:
                source, result = "miss", self.miss_result(tool, params)
        self._count(tool, hit=source != "miss")
        return ToolCallRecord(
            name=tool,
            params=params,
            success=source != "miss",
            duration_ms=(time.perf_counter() - started) * 1000.0,
            result=result,
            source=source,
        )
