"""Real run dirs for the ``runs`` and ``compare`` tests: pytest sessions of the echo runner on
small golden files (the echo runner answers with the input, so a case passes when its
expected output is its input)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_json

ROOT = Path(".llmeval/runs")
"""The plugin's default output root, under the pytester folder (the rootdir)."""


def case(case_id: str, passes: bool, category: str = "qa") -> dict[str, Any]:
    """A golden case the echo runner passes (``passes``) or fails."""
    return {
        "id": case_id,
        "category": category,
        "input": f"say {case_id}",
        "expected_output": f"say {case_id}" if passes else f"not {case_id}",
    }


def echo_run(
    pytester: pytest.Pytester, cases: dict[str, bool], *args: str, name: str = "qa.golden.json"
) -> Path:
    """One echo session over ``cases`` (id -> passes); the run dir it wrote."""
    rows = [case(i, ok) for i, ok in cases.items()]
    return session(pytester, rows, "--llmeval-runner", "echo", *args, name=name)


def session(
    pytester: pytest.Pytester, rows: list[dict[str, Any]], *args: str, name: str = "qa.golden.json"
) -> Path:
    """One session over the golden ``rows`` (written to ``name``); the run dir it wrote."""
    write_json(pytester, name, rows)
    before = set(run_dirs(pytester))
    pytester.runpytest(name, "-p", "no:cacheprovider", *args)
    made = sorted(set(run_dirs(pytester)) - before)
    assert len(made) == 1, made
    return made[0]


def run_dirs(pytester: pytest.Pytester) -> list[Path]:
    root = pytester.path / ROOT
    if not root.is_dir():
        return []
    return [p for p in root.iterdir() if p.is_dir() and not p.is_symlink()]


def command(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m pytest_llmeval ARGS`` in ``cwd``, as a user runs it."""
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "pytest_llmeval", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stdout + done.stderr, done.stderr


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
