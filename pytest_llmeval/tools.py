"""The tool registry: the tools a model is offered, with descriptions and versions.

A registry file is JSON or YAML, either ``{"tools": [...]}`` or a bare list, each tool
``{name, description, version?, parameters?}`` (``parameters`` is a JSON schema; an OpenAI
``{"type": "function", "function": {...}}`` wrapper is accepted too).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from pytest_llmeval.errors import ConfigError
from pytest_llmeval.fingerprint import fingerprint
from pytest_llmeval.models import ToolSpec


class ToolRegistry:
    """Tools by name, in file order."""

    def __init__(self, tools: Iterable[ToolSpec] = (), source: str | None = None):
        self.tools: dict[str, ToolSpec] = {}
        self.source = source
        for tool in tools:
            if tool.name in self.tools:
                raise ConfigError(
                    f"{source or 'tool registry'}: tool {tool.name!r} is defined twice"
                )
            self.tools[tool.name] = tool

    @classmethod
    def load(cls, path: Path | None) -> ToolRegistry:
        """Read a registry file; ``None`` gives an empty registry."""
        if path is None:
            return cls()
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read the tool registry: {exc.strerror}") from None
        try:
            data = yaml.safe_load(text) if path.suffix in (".yaml", ".yml") else json.loads(text)
        except (ValueError, yaml.YAMLError) as exc:
            raise ConfigError(f"{path}: the tool registry is not valid: {exc}") from None
        items = data.get("tools") if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise ConfigError(f"{path}: expected a list of tools or an object with a 'tools' list")
        return cls((_tool(path, i, item) for i, item in enumerate(items)), source=str(path))

    def __len__(self) -> int:
        return len(self.tools)

    def __contains__(self, name: object) -> bool:
        return name in self.tools

    def get(self, name: str) -> ToolSpec | None:
        return self.tools.get(name)

    def specs(self, names: Iterable[str] = ()) -> list[ToolSpec]:
        """Specs for ``names`` (unknown names get an empty schema); all tools when empty."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return list(self.tools.values())
        return [self.tools.get(name) or ToolSpec(name=name) for name in wanted]

    def fingerprint(self) -> str:
        return fingerprint([tool.model_dump(mode="json") for tool in self.tools.values()])


def _tool(path: Path, index: int, item: Any) -> ToolSpec:
    if isinstance(item, dict) and item.get("type") == "function" and "function" in item:
        item = item["function"]
    if not isinstance(item, dict):
        raise ConfigError(f"{path}: tools[{index}]: expected an object, got {type(item).__name__}")
    known = {k: item[k] for k in ("name", "description", "parameters", "version") if k in item}
    if "version" in known and known["version"] is not None:
        known["version"] = str(known["version"])
    try:
        return ToolSpec(**known)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise ConfigError(f"{path}: tools[{index}].{field}: {err['msg']}") from None
