"""The tool registry file: shapes it accepts, and errors naming the file, line, tool and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.core.errors import ConfigError
from pytest_llmeval.tools.registry import ToolRegistry

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def _load(tmp_path: Path, name: str, content: Any) -> ToolRegistry:
    path = tmp_path / name
    text = content if isinstance(content, str) else json.dumps(content, indent=2)
    path.write_text(text, encoding="utf-8")
    return ToolRegistry.load(path)


def _error(tmp_path: Path, name: str, content: Any) -> str:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, name, content)
    return str(info.value).removeprefix(str(tmp_path) + "/")


def test_accepted_shapes(tmp_path: Path) -> None:
    tools = [
        {"name": "get_weather", "description": "Weather.", "version": 1.2, "parameters": CITY},
        {"type": "function", "function": {"name": "search", "strict": True}},
    ]
    for content in (tools, {"tools": tools}):
        registry = _load(tmp_path, "tools.json", content)
        assert list(registry.tools) == ["get_weather", "search"]
        assert registry.tools["get_weather"].version == "1.2"
    yaml_text = "tools:\n  - name: get_weather\n    parameters: {type: object}\n"
    assert list(_load(tmp_path, "tools.yaml", yaml_text).tools) == ["get_weather"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            {"tools": [{"name": "a"}, {"name": "b", "description": 3}]},
            "tools.json:8: tools[1] 'b': description: expected a string, got a number",
        ),
        (
            {"tools": [{"description": "no name"}]},
            "tools.json:3: tools[0]: name: missing required field (a string)",
        ),
        (
            [{"name": "a", "parameters": {"type": "object", "properties": {"n": {"type": "int"}}}}],
            "tools.json:8: tools[0] 'a': parameters.properties.n.type: 'int' is not valid",
        ),
        (
            {"tools": [{"type": "function", "function": {"name": "f", "parameters": []}}]},
            "tools.json:7: tools[0] 'f': function.parameters: expected an object, got an array",
        ),
        ({"tools": ["get_weather"]}, "tools.json:3: tools[0]: expected an object, got a string"),
        ({"tool": []}, "tools.json: expected a list of tools or an object with a 'tools' list"),
        ("3", "tools.json: expected a list of tools or an object with a 'tools' list"),
        ("{", "tools.json:1: the tool registry is not valid: invalid JSON: the file ends inside"),
        ("[" * 101 + "]" * 101, "tools.json:1: the tool registry is not valid: nested more than"),
    ],
)
def test_json_registry_errors(tmp_path: Path, content: Any, message: str) -> None:
    assert _error(tmp_path, "tools.json", content).startswith(message)


def test_yaml_registry_errors_and_limits(tmp_path: Path) -> None:
    text = "tools:\n  - name: a\n    parameters:\n      type: object\n      required: city\n"
    assert _error(tmp_path, "tools.yaml", text).startswith(
        "tools.yaml:5: tools[0] 'a': parameters.required: expected an array, got a string"
    )
    laughs = 'l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n'
    for i in range(1, 9):
        laughs += f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n"
    assert "expands to more than 1,000,000 values" in _error(
        tmp_path, "tools.yaml", laughs + "tools: *l8\n"
    )


def test_duplicate_names_are_still_an_error(tmp_path: Path) -> None:
    message = _error(tmp_path, "tools.json", [{"name": "a"}, {"name": "a"}])
    assert message == "tools.json: tool 'a' is defined twice"
