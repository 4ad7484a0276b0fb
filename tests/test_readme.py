"""The README's first screen is true: its sample output is what a real run prints, its
everyday commands are green on the shipped examples, the commands it calls red are red, and
``.ci/run`` runs the install and test commands the README and CONTRIBUTING.md show.

``LLMEVAL_UPDATE_README=1`` writes the real output into the README's sample instead of
comparing (after an intended change of the terminal output).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
UPDATE = os.environ.get("LLMEVAL_UPDATE_README") == "1"
OUTPUT_MARK = "<!-- the output of `pytest evals` on a fresh init"
EVERYDAY_MARK = "<!-- everyday commands:"
RED_MARK = "<!-- expected red:"
HEADER = ("platform ", "rootdir: ", "configfile: ", "plugins: ", "cachedir: ", "=====")
"""Lines of pytest's header that name the machine: neither shown nor compared."""


def fenced_after(text: str, mark: str) -> tuple[int, int]:
    """Start and end offsets of the body of the first fenced block after ``mark``."""
    at = text.index(mark)
    start = text.index("\n", text.index("```", at)) + 1
    return start, text.index("```", start)


def commands(mark: str) -> list[str]:
    """The commands of the bash block after ``mark``, comments dropped."""
    text = README.read_text(encoding="utf-8")
    start, end = fenced_after(text, mark)
    lines = [line.split("  #")[0].strip() for line in text[start:end].splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def shown(output: str) -> str:
    """A run's output as the README shows it: from ``collected``, without pytest's header
    lines, the run dir relative to the project."""
    lines = output.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("collected "))
    kept = [line.rstrip() for line in lines[first:]]
    return "\n".join(kept).replace(str(Path.cwd()), "") + "\n"


def normalised(text: str) -> str:
    """Timings, run dir names and the width of ``=`` rules taken out."""
    text = re.sub(r"\S*\.llmeval/runs/\d{8}T\d{6}Z_[0-9a-f]+", "<run dir>", text)
    text = re.sub(r"\b\d+(\.\d+)?m?s\b", "<time>", text)
    return re.sub(r"^=+ (.*?) =+$", r"== \1 ==", text, flags=re.M)


def test_the_sample_output_is_what_pytest_prints_on_a_fresh_init(tmp_path: Path) -> None:
    init = [sys.executable, "-m", "pytest_llmeval", "init"]
    assert subprocess.run(init, cwd=tmp_path, capture_output=True).returncode == 0
    env = {**os.environ, "COLUMNS": "80"}
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "evals"],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    real = shown(done.stdout.replace(f"{tmp_path}/", ""))
    text = README.read_text(encoding="utf-8")
    start, end = fenced_after(text, OUTPUT_MARK)
    if UPDATE:
        README.write_text(text[:start] + real + text[end:], encoding="utf-8")
    assert normalised(text[start:end]) == normalised(real)


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the repository's example suites and configuration, so that the README's
    commands write their junit, baseline and run dirs there."""
    project = tmp_path_factory.mktemp("project")
    for folder in ("evals", "fixtures"):
        shutil.copytree(ROOT / folder, project / folder)
    shutil.copy(ROOT / "pyproject.toml", project)
    return project


def run(project: Path, command: str) -> subprocess.CompletedProcess[str]:
    args = shlex.split(command)
    if "<run>" in command:  # the newest run dir stands in for the placeholder
        newest = sorted((project / ".llmeval" / "runs").iterdir())[-1]
        args = [a.replace(".llmeval/runs/<run>", str(newest)) for a in args]
    if args[0] == "pytest":
        args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args[1:]]
    elif args[:2] == ["python", "-m"]:
        args = [sys.executable, *args[1:]]
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    return subprocess.run(args, cwd=project, capture_output=True, text=True, env=env, timeout=600)


def test_the_everyday_commands_are_green_on_the_examples(examples: Path) -> None:
    everyday = commands(EVERYDAY_MARK)
    assert len(everyday) >= 6 and everyday[0] == "pytest evals/"
    if "-n" in " ".join(everyday):
        pytest.importorskip("xdist")
    for command in everyday:
        done = run(examples, command)
        assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}{done.stderr}"


def test_the_commands_it_calls_red_are_red(examples: Path) -> None:
    red = commands(RED_MARK)
    assert red
    for command in red:
        done = run(examples, command)
        assert done.returncode == 1, f"{command}\n{done.stdout[-3000:]}{done.stderr}"
        assert "FAILED llmeval-gates::when2call.n==24" in done.stdout


def test_ci_runs_the_documented_install_and_test_commands() -> None:
    """Each command of ``.ci/run`` under a ``# README`` or ``# CONTRIBUTING.md`` comment is one
    the named page shows (``check`` is .ci/run's wrapper that names a vanished suite). CI
    installs the README's clone install without ``-e``: a real install, so that the package
    data ``init`` copies is checked as shipped."""
    pages = {"README": README, "CONTRIBUTING.md": ROOT / "CONTRIBUTING.md"}
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8").split("\n")
    checked = 0
    for i, line in enumerate(script):
        page = next((p for name, p in pages.items() if line.startswith(f"# {name}")), None)
        if page is None:
            continue
        start = next(j for j in range(i + 1, len(script)) if not script[j].startswith("#"))
        end = next(
            (j for j in range(start, len(script)) if not script[j] or script[j].startswith("#")),
            len(script),
        )
        for line in script[start:end]:
            for raw in line.removesuffix("|| exit").replace("check ", "").split("&&"):
                part = raw.strip().strip("()").strip()
                if part == "pip install .":
                    part = "pip install -e ."
                if part.startswith(("pip install", "pytest", "python -m pytest_llmeval")):
                    words = " ".join(page.read_text(encoding="utf-8").split())
                    assert part in words, (page.name, part)
                    checked += 1
    assert checked >= 5
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert "pip install -e '.[dev]' && pytest evals/" in contributing
    readme = README.read_text(encoding="utf-8")
    user_install = readme[: readme.index("## Your first eval")]
    assert "pip install pytest-llmeval-harness" in user_install
    assert "pip install -e .  " in user_install and "[dev" not in user_install


def test_the_readme_gives_the_command_that_runs_the_projects_tests_and_the_fast_one() -> None:
    """A contributor finds in the README itself the one command that sets up and runs the
    project's own tests (the one CI runs, on every core), how long it takes on 2 cores, and
    the fast subset to run while working."""
    readme = README.read_text(encoding="utf-8")
    section = readme[readme.index("\n## Working on the plugin\n") :]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.DOTALL)
    setup = blocks[0].strip()
    assert setup.startswith("python3 -m venv .venv && . .venv/bin/activate && ")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    installs = re.findall(r"^pip install (?:torch|-e '\.\[dev,|--no-deps ).*$", ci, re.MULTILINE)
    # the torch wheel, every extra, BFCL's data and backends: in one line in the README
    assert len(installs) == 3
    (tests,) = re.findall(r"^check (pytest -n auto)$", ci, re.MULTILINE)
    assert setup.endswith(" && ".join([*installs, tests]))  # what CI runs, on every core
    assert re.search(r"on 2 cores the tests take about \d+ minutes", " ".join(section.split()))
    assert blocks[1].strip() == 'pytest -n auto -m "not slow"'
    assert re.search(r"about \d+ minutes on 2 cores", " ".join(section.split()))
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert 'pytest -n auto -m "not slow"' in contributing
    assert "&& pytest -n auto " in contributing


def test_the_readme_keeps_the_sections_users_and_tests_rely_on() -> None:
    readme = README.read_text(encoding="utf-8")
    for heading in (
        "## Install",
        "## Your first eval",
        "## Everyday commands",
        "## Documentation",
        "## When is the run red?",
        "## Options",
        "## Shards across machines",
    ):
        assert f"\n{heading}\n" in readme, heading
    first_screen = readme[: readme.index("## When is the run red?")]
    assert "python -m pytest_llmeval init" in first_screen
    for doc in sorted((ROOT / "docs").glob("*.md")):
        assert f"(docs/{doc.name})" in first_screen, doc.name
