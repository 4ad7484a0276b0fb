"""The tool registry: the tools a model is offered, with descriptions and versions.

A registry file is JSON or YAML, either ``{"tools": [...]}`` or a bare list, each tool
``{name, description, version?, parameters?}`` (``parameters`` is a JSON schema; an OpenAI
``{"type": "function", "function": {...}}`` wrapper is accepted too). The file is checked
against the shipped ``schemas/tool_registry.schema.json`` and each ``parameters`` against the
metaschema it names (draft 2020-12 by default); YAML is read with the limits of
:mod:`pytest_llmeval.inputs.safe_yaml`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from pytest_llmeval.core.errors import ConfigError
from pytest_llmeval.core.fingerprint import fingerprint
from pytest_llmeval.core.models import ToolSpec
from pytest_llmeval.inputs import safe_yaml, schemas
from pytest_llmeval.inputs.safe_read import SupportFileError, parse_json, read_bytes

if TYPE_CHECKING:
    from jsonschema.exceptions import SchemaError

__all__ = [
    "REGISTRY_MAX_BYTES",
    "REGISTRY_MAX_NODES",
    "ToolRegistry",
]


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
        """Read a registry file; ``None`` gives an empty registry. A file that does not fit
        the shipped schema, or a tool whose ``parameters`` is not a valid JSON Schema, is a
        :class:`ConfigError` naming the file, the line (when it can be found), the tool and
        the field."""
        if path is None:
            return cls()
        document = _read(path)
        data = document.value
        _check(path, document)
        return cls((_tool(path, i, item) for i, item in enumerate(_items(data))), source=str(path))

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


REGISTRY_MAX_BYTES = 16 * 1024 * 1024
"""The largest YAML registry read."""

REGISTRY_MAX_NODES = 1_000_000
"""The most values a YAML registry may expand to (its aliases followed)."""

_SHAPE = "expected a list of tools or an object with a 'tools' list"


def _read(path: Path) -> _Document:
    """The registry's parsed content: YAML through the safe loader, JSON strictly, both
    within the support-file caps (:mod:`pytest_llmeval.inputs.safe_read`)."""
    yaml_file = path.suffix in (".yaml", ".yml")
    try:
        data = read_bytes(path, max_bytes=REGISTRY_MAX_BYTES)
        if not yaml_file:
            return _Document(parse_json(data, str(path)), data.decode("utf-8"), None)
        text = data.decode("utf-8")
    except SupportFileError as exc:
        raise ConfigError(f"{exc.where}: the tool registry is not valid: {exc.message}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: the tool registry is not valid: {exc}") from None
    try:
        parsed = safe_yaml.load(text, max_nodes=REGISTRY_MAX_NODES)
    except safe_yaml.YamlLimitError as exc:
        where = f"{path}:{exc.line}" if exc.line else str(path)
        raise ConfigError(f"{where}: the tool registry is not valid: {exc.message}") from None
    return _Document(parsed.value, text, parsed)


class _Document:
    """A registry's content, with what finds the line of a value in it."""

    def __init__(self, value: Any, text: str, parsed: safe_yaml.YamlDocument | None):
        self.value = value
        self.text = text
        self.parsed = parsed

    def line_of(self, path: schemas.DocPath) -> int | None:
        """The line of the value at ``path``; for JSON, found by reading the text as YAML
        (JSON is YAML) only when an error needs it, and ``None`` when that fails."""
        if self.parsed is None:
            try:
                self.parsed = safe_yaml.load(self.text, max_nodes=REGISTRY_MAX_NODES)
            except (safe_yaml.YamlLimitError, ValueError):
                return None
        return self.parsed.line_of(path)


def _check(path: Path, document: _Document) -> None:
    """The registry against the shipped schema, then each tool's ``parameters``."""
    data = document.value
    prefix: schemas.DocPath = ("tools",) if isinstance(data, dict) else ()
    error = schemas.first_error(schemas.shipped("tool_registry"), data, document.line_of)
    if error is not None:
        where, message = schemas.explain(error)
        if len(where) <= len(prefix):
            raise ConfigError(f"{path}: {_SHAPE}")
        raise _tool_error(path, document, prefix, where, message)
    for index, item in enumerate(_items(data)):
        tool = _unwrapped(item)
        at: schemas.DocPath = (*prefix, index, *(("function",) if tool is not item else ()))
        parameters = tool.get("parameters")
        if parameters is None:
            continue
        try:
            _validator_for(parameters).check_schema(parameters)
        except _schema_error() as exc:
            inner, message = schemas.explain(exc)
            raise _tool_error(
                path, document, prefix, (*at, "parameters", *inner), message
            ) from None


def _tool_error(
    path: Path,
    document: _Document,
    prefix: schemas.DocPath,
    where: schemas.DocPath,
    message: str,
) -> ConfigError:
    """``tools.json:12: tools[1] 'get_forecast': parameters.type: ...``."""
    data = document.value
    index = where[len(prefix)]
    tool = _unwrapped(_items(data)[index]) if isinstance(index, int) else None
    name = tool.get("name") if isinstance(tool, dict) else None
    label = f"tools[{index}]" + (f" {name!r}" if isinstance(name, str) and name else "")
    line = document.line_of(where)
    located = f"{path}:{line}" if line else str(path)
    field = schemas.field_name(where[len(prefix) + 1 :])
    return ConfigError(f"{located}: {label}: {field + ': ' if field else ''}{message}")


def _items(data: Any) -> list[Any]:
    """The tool entries of a registry that fits the schema."""
    return list(data["tools"] if isinstance(data, dict) else data)


def _unwrapped(item: Any) -> Any:
    """The tool inside OpenAI's ``{"type": "function", "function": {...}}`` wrapper, or the
    item itself."""
    if isinstance(item, dict) and item.get("type") == "function" and "function" in item:
        return item["function"]
    return item


def _tool(path: Path, index: int, item: Any) -> ToolSpec:
    item = _unwrapped(item)
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


def _validator_for(schema: dict[str, Any]) -> Any:
    """The validator class ``jsonschema`` picks for a tool's ``parameters`` (its ``$schema``,
    else the latest draft); imported on first use, as every ``jsonschema`` use here is."""
    from jsonschema.validators import validator_for

    return validator_for(schema)


def _schema_error() -> type[SchemaError]:
    from jsonschema.exceptions import SchemaError

    return SchemaError
