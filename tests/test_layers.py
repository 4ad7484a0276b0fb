"""The package's shape: imports flow one way (import-linter contracts in pyproject.toml) and
no module grows past about 500 lines unless :data:`LONG_MODULES` says why."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_llmeval"
MAX_LINES = 520
""""About 500": a module longer than this is listed in :data:`LONG_MODULES`."""

LONG_MODULES: dict[str, str] = {
    "config/settings.py": "most of it is the option table, one entry per option with its help "
    "text; splitting the table would only spread one list over several files",
    "inputs/loading.py": "the three record readers (JSONL, JSON array, envelope) share one "
    "line-tracking scanner, and stay together so each keeps the same path:line guarantees",
    "report/gates.py": "one gate language: its three written forms, the metric lookup, the "
    "comparison and the statuses read best side by side",
    "runners/hf_local.py": "one runner around one loaded model: generation, log-likelihood "
    "groups and their batching share the model, the tokenizer and one worker thread, and "
    "lm-eval's tokenisation rules sit beside the code that follows them",
    "runners/openai_http.py": "one runner: chat completions, tool-call parsing, completions "
    "log-likelihoods and provider routing share one client, one retry policy and one "
    "fingerprint",
    "scoring/toolforge.py": "the twelve checks of the tool-forge contract in its fixed order, "
    "with the token rules they share: one contract, one module",
}
"""The modules allowed past :data:`MAX_LINES` (paths under the package), each with its reason."""

PLUGIN_MAX_LINES = 350
"""The pytest side is a set of feature plugins, one job each, as pytest's own modules are: no
module of ``plugin/`` is longer than this, and none may be listed in :data:`LONG_MODULES`."""


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


def test_only_the_listed_modules_are_long() -> None:
    lengths = {
        path.relative_to(PACKAGE).as_posix(): path.read_text(encoding="utf-8").count("\n")
        for path in sorted(PACKAGE.rglob("*.py"))
    }
    long = {name: lines for name, lines in lengths.items() if lines > MAX_LINES}
    unlisted = [
        f"{name} ({lines} lines)" for name, lines in long.items() if name not in LONG_MODULES
    ]
    assert not unlisted, f"modules over {MAX_LINES} lines (split them, or list them with a "
    f"reason in LONG_MODULES): {', '.join(unlisted)}"
    stale = sorted(set(LONG_MODULES) - set(long))
    assert not stale, f"listed in LONG_MODULES but not (or no longer) long: {', '.join(stale)}"


def test_every_plugin_module_is_one_feature_of_at_most_350_lines() -> None:
    long = [
        f"{path.name} ({lines} lines)"
        for path in sorted((PACKAGE / "plugin").glob("*.py"))
        if (lines := path.read_text(encoding="utf-8").count("\n")) > PLUGIN_MAX_LINES
    ]
    assert not long, f"plugin/ modules over {PLUGIN_MAX_LINES} lines (split them by job): {long}"


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
