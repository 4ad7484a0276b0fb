"""``runs`` and ``compare`` find the runs ``init`` makes: after ``init`` and ``pytest evals``,
the runs are in ``evals/.llmeval/runs`` (the rootdir is the eval folder's), and both commands
find them from the project's root, as a user types them there."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.commands.history import command, no_traceback
from tests.commands.test_init import init, pytest_run

RUNS = Path("evals/.llmeval/runs")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A project after ``init`` and two ``pytest evals``; the run names, oldest first."""
    root = tmp_path_factory.mktemp("project")
    assert init(root).returncode == 0
    for _ in range(2):
        done = pytest_run(root, "evals")
        assert done.returncode == 0, done.stdout + done.stderr
    names = sorted(p.name for p in (root / RUNS).iterdir() if not p.is_symlink())
    assert len(names) == 2
    return root, names


def test_runs_from_the_project_root_lists_the_eval_folders_runs(
    project: tuple[Path, list[str]], tmp_path: Path
) -> None:
    root, names = project
    done = command(root, "runs")
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    assert f"  {names[1]}  " in done.stdout and f"  {names[0]}  " in done.stdout
    assert done.stdout.splitlines()[-1] == f"2 run dir(s) under {RUNS}"


def test_runs_searches_below_the_root_but_not_in_hidden_or_package_folders(
    project: tuple[Path, list[str]], tmp_path: Path
) -> None:
    root, _ = project
    shutil.copytree(root / "evals", tmp_path / "evals", symlinks=True)
    shutil.copytree(root / "evals", tmp_path / "other" / "evals", symlinks=True)
    for hidden in (".venv/lib", "node_modules/pkg", ".git/x"):
        shutil.copytree(root / RUNS, tmp_path / hidden / ".llmeval" / "runs", symlinks=True)
    (tmp_path / "link").symlink_to(tmp_path / "other", target_is_directory=True)
    done = command(tmp_path, "runs")
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    footers = [line for line in done.stdout.splitlines() if "run dir(s) under" in line]
    assert footers == [f"2 run dir(s) under {RUNS}", f"2 run dir(s) under other/{RUNS}"]


def test_runs_without_any_output_root_names_where_they_would_be(tmp_path: Path) -> None:
    done = command(tmp_path, "runs")
    no_traceback(done)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "pytest_llmeval runs: no .llmeval/runs folder here or below (pytest writes its runs "
        "under the folder of the pytest.ini it read: after init, evals/.llmeval/runs); run "
        "`pytest evals` first, or give the output root: runs ROOT"
    ]


def test_compare_takes_run_names_as_runs_prints_them_and_latest(
    project: tuple[Path, list[str]], tmp_path: Path
) -> None:
    root, names = project
    out = tmp_path / "out"
    done = command(root, "compare", names[0], "latest", "--out", str(out))
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    page = (out / "compare.md").read_text()
    assert f"`{names[0]}`" in page and f"`{names[1]}`" in page  # latest, by its own name
    elsewhere = command(tmp_path, "compare", names[0], "latest", "--root", str(root),
                        "--out", str(out))  # fmt: skip
    assert elsewhere.returncode == 0, elsewhere.stderr
    output_root = command(tmp_path, "compare", *names, "--root", str(root / RUNS),
                          "--out", str(out))  # fmt: skip
    assert output_root.returncode == 0, output_root.stderr


def test_compare_names_the_roots_it_looked_in_and_root(
    project: tuple[Path, list[str]], tmp_path: Path
) -> None:
    root, names = project
    done = command(root, "compare", names[0], "20990101T000000Z_000000000000")
    no_traceback(done)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "pytest_llmeval compare: 20990101T000000Z_000000000000: no such run dir under "
        f"{RUNS}; `python -m pytest_llmeval runs` lists them, or give the run dir's path"
    ]
    nothing = command(tmp_path, "compare", names[0], "latest")
    assert nothing.returncode == 2
    assert nothing.stderr.startswith(
        f"pytest_llmeval compare: {names[0]}: no such run dir: no .llmeval/runs folder in . "
    )
    assert "--root" in nothing.stderr
    shutil.copytree(root / "evals", tmp_path / "a" / "evals", symlinks=True)
    shutil.copytree(root / "evals", tmp_path / "b" / "evals", symlinks=True)
    twice = command(tmp_path, "compare", names[0], "latest")
    assert twice.returncode == 2
    assert "found under more than one output root" in twice.stderr and "--root" in twice.stderr
