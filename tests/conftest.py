from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["pytester"]

SCRIPTED_CONFTEST = """
from pytest_llmeval.testing.scripted import Rule, ScriptedModel

RULES = [
    Rule("weather", tool="get_weather", arguments={"city": "Paris"},
         answer="It is {result[temp_c]}C and {result[conditions]} in {args[city]}."),
    Rule("search", tool="web.search", arguments={"q": "  ROPE  Precision "},
         answer="Top hit: {result[hits][0][title]}"),
    Rule("hello", answer="Hello there!"),
]

def pytest_llmeval_register_runners(registry):
    registry.register("scripted", lambda settings: ScriptedModel(RULES))
"""

WEATHER_FIXTURES = [
    {
        "name": "get_weather",
        "key": {"city": "Paris"},
        "result": {"temp_c": 18, "conditions": "cloudy"},
    },
    {
        "name": "web.search",
        "key": {"q": "rope precision", "top_k": 3},
        "result": {
            "ok": True,
            "hits": [{"title": "RoPE precision notes", "url": "https://example.org"}],
        },
    },
]


def write_json(pytester: pytest.Pytester, name: str, value: Any) -> Path:
    path = pytester.path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
    return path


def write_jsonl(pytester: pytest.Pytester, name: str, rows: list[Any]) -> Path:
    path = pytester.path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@pytest.fixture
def scripted(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester dir with the scripted model registered and weather/search fixtures."""
    pytester.makeconftest(SCRIPTED_CONFTEST)
    write_jsonl(pytester, "fixtures/tools/weather.jsonl", WEATHER_FIXTURES)
    return pytester
