"""The package's shape: imports flow one way (import-linter contracts in pyproject.toml) and
no module grows past about 500 lines without saying why."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_llmeval"
MAX_LINES = 520
""""About 500": a module longer than this states its reason in a ``Size:`` paragraph."""


def test_import_contracts_hold() -> None:
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if lint is None:
        pytest.skip("import-linter is not installed (it is in the dev extra)")
    done = subprocess.run(
        [lint, "--config", str(PACKAGE.parent / "pyproject.toml")],
        cwd=PACKAGE.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "BROKEN" not in done.stdout


def test_long_modules_say_why() -> None:
    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").count("\n")
        if lines <= MAX_LINES:
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        if "Size:" not in doc:
            unexplained.append(f"{path.relative_to(PACKAGE.parent)} ({lines} lines)")
    assert not unexplained, "modules over ~500 lines without a 'Size:' reason: " + ", ".join(
        unexplained
    )


def test_base_layer_imports_without_pytest() -> None:
    """The settings model, the run-dir layer and the suites load in a process without pytest."""
    code = (
        "import sys; sys.modules['pytest'] = None; sys.modules['_pytest'] = None\n"
        "import pytest_llmeval.config.settings, pytest_llmeval.rundir\n"
        "import pytest_llmeval.suites.builtin\n"
        "import pytest_llmeval.scoring.toolforge, pytest_llmeval.runners.registry\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
