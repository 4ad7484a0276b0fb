"""YAML read with limits: the document's size, its aliases and what they expand to.

``yaml.safe_load`` builds no arbitrary objects, but it still follows aliases: ten anchors
that each repeat the one before ten times ("billion laughs") make a few hundred bytes that
expand to 10⁹ values once anything walks them (a gate list, a fingerprint, an error message).
Here the document is composed first (aliases stay shared nodes, so composing is linear in
the text), its expanded size is counted once per distinct node, and only a document within
the limits is turned into Python values. An alias that refers to its own anchor (a cycle) is
refused too, and so is a mapping that names a key twice: YAML says keys are unique, and
PyYAML would keep the later one without a word (a second ``gates: []`` silently dropping
the gates above it). Nothing outside this module calls ``yaml.safe_load``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pytest_llmeval.inputs.regular import NOT_REGULAR, not_regular

MAX_BYTES = 1024 * 1024
"""The largest document read by default (1 MiB): a manifest is a few hundred bytes."""

MAX_ALIASES = 100
"""The most aliases (``*name``) a document may use."""

MAX_NODES = 100_000
"""The most values a document may expand to, aliases followed (a value per scalar, list and
mapping, keys included)."""

MAX_DEPTH = 100
"""The deepest nesting of lists and mappings."""

MERGE_TAG = "tag:yaml.org,2002:merge"
"""``<<``: merges another mapping's keys in; it may appear more than once."""


class YamlLimitError(ValueError):
    """A document that is not valid YAML or is over a limit; ``line`` is 1-based or ``None``."""

    def __init__(self, message: str, line: int | None = None):
        self.message = message
        self.line = line
        super().__init__(message)


@dataclass(frozen=True)
class YamlDocument:
    """A parsed document and the node tree it came from (for the line of any value)."""

    value: Any
    """The document as Python values (``None`` for an empty document)."""
    root: yaml.Node | None
    """The composed node tree; ``None`` for an empty document."""

    def line_of(self, path: tuple[Any, ...]) -> int | None:
        """The 1-based line of the value at ``path`` (mapping keys and list indices), or of
        the deepest part of it that exists; ``None`` for an empty document."""
        node = self.root
        if node is None:
            return None
        for step in path:
            child = _child(node, step)
            if child is None:
                break
            node = child
        return node.start_mark.line + 1


def read_limited(path: Path, max_bytes: int = MAX_BYTES) -> str:
    """The file's text, refusing a file over ``max_bytes`` without reading all of it.

    Raises ``OSError`` and ``UnicodeDecodeError`` as reading does, and
    :class:`YamlLimitError` for a file that is too large.
    """
    if not_regular(path):
        raise YamlLimitError(NOT_REGULAR)
    with path.open("rb") as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise YamlLimitError(
            f"the file is larger than {_size(max_bytes)}; at most {_size(max_bytes)} is read"
        )
    return data.decode("utf-8")


def load(
    text: str,
    *,
    max_aliases: int = MAX_ALIASES,
    max_nodes: int = MAX_NODES,
) -> YamlDocument:
    """Parse one YAML document within the limits; :class:`YamlLimitError` otherwise."""
    composer = _Composer(text, max_aliases)
    try:
        root = composer.get_single_node()
    except _TooManyAliases as exc:
        raise YamlLimitError(
            f"more than {max_aliases} YAML aliases (*name); a document may use at most "
            f"{max_aliases}",
            exc.line,
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise YamlLimitError(
            f"invalid YAML: {exc}", mark.line + 1 if mark is not None else None
        ) from None
    except RecursionError:
        raise YamlLimitError(f"nested more than {MAX_DEPTH} levels deep") from None
    finally:
        composer.dispose()
    if root is None:
        return YamlDocument(value=None, root=None)
    _Counter(max_nodes).count(root, 0)
    try:
        value = yaml.SafeLoader("").construct_document(root)
    except yaml.YAMLError as exc:  # an unknown tag (!!python/object), an unhashable key
        mark = getattr(exc, "problem_mark", None)
        raise YamlLimitError(
            f"invalid YAML: {exc}", mark.line + 1 if mark is not None else None
        ) from None
    return YamlDocument(value=value, root=root)


class _TooManyAliases(Exception):
    def __init__(self, line: int):
        self.line = line


class _Composer(yaml.SafeLoader):
    """The safe loader's composer, stopping at the first alias over the limit (the expanded
    size is counted afterwards, once per shared node)."""

    def __init__(self, text: str, max_aliases: int):
        super().__init__(text)
        self.max_aliases = max_aliases
        self.aliases_seen = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            self.aliases_seen += 1
            if self.aliases_seen > self.max_aliases:
                event: Any = self.peek_event()  # type: ignore[no-untyped-call]
                raise _TooManyAliases(event.start_mark.line + 1)
        return super().compose_node(parent, index)


class _Counter:
    """Counts the values a node tree expands to, each distinct node once."""

    def __init__(self, max_nodes: int):
        self.max_nodes = max_nodes
        self.sizes: dict[int, int] = {}
        self.open: set[int] = set()
        self.keys = yaml.SafeLoader("")
        """Builds scalar keys as Python reads them (``true`` and ``True`` are one key)."""

    def count(self, node: yaml.Node, depth: int) -> int:
        key = id(node)
        line = node.start_mark.line + 1
        if key in self.open:
            raise YamlLimitError("a YAML alias refers to the value that contains it", line)
        known = self.sizes.get(key)
        if known is not None:
            return known  # an alias: its size is known, and counted again where it is used
        if depth > MAX_DEPTH:
            raise YamlLimitError(f"nested more than {MAX_DEPTH} levels deep", line)
        self.open.add(key)
        if isinstance(node, yaml.MappingNode):
            self._unique_keys(node)
        size = 1
        for child in _children(node):
            size += self.count(child, depth + 1)
            if size > self.max_nodes:
                raise YamlLimitError(
                    f"the document expands to more than {self.max_nodes:,} values (YAML "
                    "aliases repeat what they refer to); write the values out or use fewer "
                    "aliases",
                    line,
                )
        self.open.discard(key)
        self.sizes[key] = size
        return size

    def _unique_keys(self, node: yaml.MappingNode) -> None:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == MERGE_TAG:
                continue
            try:
                key = self.keys.construct_object(key_node)
                hash(key)
            except (yaml.YAMLError, TypeError):
                continue  # an unknown tag or an unhashable key: construction says so
            line = key_node.start_mark.line + 1
            if key in seen:
                raise YamlLimitError(
                    f"duplicate key {key!r} (first on line {seen[key]}); a key may appear "
                    "once in a mapping",
                    line,
                )
            seen[key] = line


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _child(node: yaml.Node, step: Any) -> yaml.Node | None:
    if isinstance(node, yaml.SequenceNode) and isinstance(step, int):
        return node.value[step] if 0 <= step < len(node.value) else None
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == str(step):
                return value  # type: ignore[no-any-return]
    return None


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n % (1024 * 1024) == 0 else f"{n:,} bytes"
