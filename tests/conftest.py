from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.runners import transport

pytest_plugins = ["pytester"]

if os.environ.get("PYTEST_XDIST_WORKER") and "OMP_NUM_THREADS" not in os.environ:
    # xdist's workers already fill the cores: torch's own threads in each worker, and in the
    # pytest and `transformers serve` processes its tests start, would only fight over them
    # (the torch tests took twice the CPU time, half again the wall time, under `-n 2`)
    os.environ["OMP_NUM_THREADS"] = "1"

collect_ignore = ["data"]
"""``tests/data`` holds inputs the tests read (When2Call's file matches the plugin's own
``when2call_*.jsonl`` glob), never cases for this project's own run to collect."""

W2C_FILE = Path(__file__).parent / "data" / "when2call" / "when2call_test_llm_judge.jsonl"
"""When2Call's 300-question test file, vendored with its licence note beside it."""

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


def answering_runner(name: str, trigger: str, answer: str) -> str:
    """A conftest registering runner ``name``: it echoes the last message, and answers the
    Python expression ``answer`` when the test ``trigger`` holds for that message's ``text``."""
    return f"""
from pytest_llmeval.core.models import Usage
from pytest_llmeval.runners.base import Completion


class Answering:
    name = {name!r}

    def fingerprint(self):
        return {{"type": {name!r}}}

    async def generate(self, request):
        text = request.messages[-1].content or ""
        if {trigger}:
            text = {answer}
        return Completion(text=text, usage=Usage(total_tokens=1))

    async def aclose(self):
        return None


def pytest_llmeval_register_runners(registry):
    registry.register({name!r}, lambda settings: Answering())
"""


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


TIMINGS = ("duration_ms", "elapsed_ms")
"""Fields that measure time: the only ones allowed to differ between equivalent runs."""


def strip_timings(value: Any) -> Any:
    """``value`` without any :data:`TIMINGS` key, at any depth."""
    if isinstance(value, dict):
        return {k: strip_timings(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [strip_timings(v) for v in value]
    return value


def run_outputs(run_dir: Path) -> tuple[Any, Any]:
    """A run dir's results (timings stripped) and report: what equivalent runs must share."""
    results = strip_timings(read_jsonl(run_dir / "results.jsonl"))
    return results, json.loads((run_dir / "report.json").read_text())


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@pytest.fixture(params=transport.TRANSPORTS)
def each_transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once per HTTP transport (the default the HTTP runners pick)."""
    monkeypatch.setattr(transport, "DEFAULT_TRANSPORT", request.param)
    return str(request.param)


@pytest.fixture
def no_thread_leak() -> Iterator[None]:
    """The test must leave exactly the threads it found (servers and clients shut down)."""
    before = set(threading.enumerate())
    yield
    leaked = [t.name for t in threading.enumerate() if t not in before]
    assert not leaked, f"threads left running: {leaked}"


@pytest.fixture
def scripted(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester dir with the scripted model registered and weather/search fixtures."""
    pytester.makeconftest(SCRIPTED_CONFTEST)
    write_jsonl(pytester, "fixtures/tools/weather.jsonl", WEATHER_FIXTURES)
    return pytester


def down_runner(kind: str) -> str:
    """A conftest registering runner ``down``, whose backend refuses every call with a
    :class:`~pytest_llmeval.core.errors.RunnerError` of ``kind`` (a dead backend, a wrong base
    URL): each case errors when it runs."""
    return f"""
from pytest_llmeval.core.errors import RunnerError


class Down:
    name = "down"

    def fingerprint(self):
        return {{"type": "down"}}

    async def generate(self, request):
        raise RunnerError("POST http://127.0.0.1:9/v1: connection refused", kind={kind!r})

    async def aclose(self):
        return None


def pytest_llmeval_register_runners(registry):
    registry.register("down", lambda settings: Down())
"""
