"""``transformers serve`` on 127.0.0.1 for the tests: a real OpenAI-compatible server nobody
here wrote, serving the tiny model the tests build
(:func:`pytest_llmeval.testing.tiny.build_tiny_model`).

Needs the ``transformers[serving]`` extra (fastapi, uvicorn, openai); without it the tests that
use it are skipped. The server runs offline on a free port and is stopped on exit.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import write_json, write_jsonl

__all__ = ["transformers_serve"]


@contextlib.contextmanager
def transformers_serve(model_dir: Path, log: Path) -> Iterator[str]:
    """``transformers serve`` on 127.0.0.1, offline, preloading ``model_dir``; yields its /v1."""
    for needed in ("fastapi", "uvicorn", "openai"):
        pytest.importorskip(needed, reason="transformers serve needs transformers[serving]")
    cli = Path(sys.executable).with_name("transformers")
    if not cli.exists():
        pytest.skip("no transformers CLI next to this Python")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("TRANSFORMERS_VERBOSITY", None)
    command = [str(cli), "serve", str(model_dir), "--device", "cpu", "--dtype", "float32"]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            if server.poll() is not None:
                tail = log.read_text(encoding="utf-8", errors="replace")[-2000:]
                pytest.skip(f"transformers serve did not start here: {tail}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
                break
            if time.monotonic() > deadline:
                pytest.fail("transformers serve did not listen within 60 s")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)


def weather_tool(pytester: pytest.Pytester) -> None:
    """The tiny model's one tool, ``get_weather``: its registry entry and a recorded result."""
    write_json(
        pytester,
        "tools.json",
        {"tools": [{"name": "get_weather", "description": "weather", "version": "1.0.0"}]},
    )
    write_jsonl(
        pytester,
        "fixtures/tools/weather.jsonl",
        [{"name": "get_weather", "key": {"city": "Paris"}, "result": {"temp_c": 18}}],
    )
