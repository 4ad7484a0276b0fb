"""``runs`` and ``compare`` on a hostile tree: links that loop or dangle, folders that cannot be
read, an output root that is a file, the same run name under two roots, names that try to climb
out of the roots, and a folder that is not a run dir given by name."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_llmeval.commands import run_roots
from pytest_llmeval.commands.compare import resolve_run
from pytest_llmeval.commands.run_roots import RunNameError, find_output_roots, find_run
from tests.commands.history import command, no_traceback

RUNS = Path(".llmeval/runs")
NAME = "20240101T000000Z_aaaaaaaaaaaa"


def run_dir(root: Path, name: str = NAME) -> Path:
    """A folder with the run-dir tag: enough for a name to find it."""
    path = root / RUNS / name
    path.mkdir(parents=True)
    (path / ".llmeval-run").write_text("")
    return path


def _lock_out(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Folders named ``name`` cannot be listed (mocked: the tests may run as root)."""
    real = os.scandir

    def scandir(path: object = ".") -> object:
        if str(path).endswith(name):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)


def test_a_link_loop_a_file_as_output_root_and_an_empty_runs_are_walked_past(
    tmp_path: Path,
) -> None:
    run_dir(tmp_path / "evals")
    (tmp_path / "evals" / "loop").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "file" / ".llmeval").mkdir(parents=True)
    (tmp_path / "file" / RUNS).write_text("not a folder")
    assert find_output_roots(tmp_path) == [tmp_path / "evals" / RUNS]


def test_a_dangling_latest_is_not_a_second_hit(tmp_path: Path) -> None:
    """``latest`` in another root pointing at a run dir deleted since names no run: the one
    that does exist is the answer, not an ambiguity."""
    real = run_dir(tmp_path / "a")
    (tmp_path / "a" / RUNS / "latest").symlink_to(real.name, target_is_directory=True)
    (tmp_path / "b" / RUNS).mkdir(parents=True)
    (tmp_path / "b" / RUNS / "latest").symlink_to("20990101T000000Z_deadbeef0000")
    assert find_run("latest", find_output_roots(tmp_path), tmp_path) == real


def test_a_text_latest_naming_a_place_outside_the_root_is_not_followed(tmp_path: Path) -> None:
    run_dir(tmp_path / "outside")
    (tmp_path / "a" / RUNS).mkdir(parents=True)
    (tmp_path / "a" / RUNS / "latest").write_text(f"../../../outside/{RUNS}/{NAME}\n")
    with pytest.raises(RunNameError, match="no such run dir"):
        find_run("latest", [tmp_path / "a" / RUNS], tmp_path)


@pytest.mark.parametrize("name", ["..", ".", "", f"../../../outside/{RUNS}/{NAME}", "a/b"])
def test_a_name_with_a_separator_or_dots_never_leaves_the_roots(tmp_path: Path, name: str) -> None:
    run_dir(tmp_path / "outside")
    (tmp_path / "a" / RUNS).mkdir(parents=True)
    with pytest.raises(RunNameError, match="is not a run's name"):
        find_run(name, [tmp_path / "a" / RUNS], tmp_path)


def test_the_same_name_under_two_roots_is_one_line_naming_both_and_root(tmp_path: Path) -> None:
    first, second = run_dir(tmp_path / "a"), run_dir(tmp_path / "b")
    (tmp_path / "c" / RUNS).mkdir(parents=True)  # a root without it: not named
    with pytest.raises(RunNameError) as caught:
        find_run(NAME, find_output_roots(tmp_path), tmp_path)
    message = str(caught.value)
    assert "\n" not in message
    assert str(first) in message and str(second) in message and "--root" in message
    assert str(tmp_path / "c") not in message


def test_a_folder_that_cannot_be_searched_is_named_not_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder without read permission (mocked: the tests may run as root) may hold the runs:
    ``runs`` says it could not search it, and exits 1, instead of reporting nothing found."""
    run_dir(tmp_path / "evals")
    (tmp_path / "locked").mkdir()
    _lock_out(monkeypatch, "locked")
    skipped: list[Path] = []
    assert find_output_roots(tmp_path, skipped) == [tmp_path / "evals" / RUNS]
    assert skipped == [tmp_path / "locked"]
    with pytest.raises(RunNameError) as caught:
        find_run("20990101T000000Z_000000000000", [tmp_path / "evals" / RUNS], tmp_path,
                 skipped)  # fmt: skip
    assert f"could not search {tmp_path / 'locked'}" in str(caught.value)


def test_runs_names_a_folder_it_could_not_search(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every folder; the mocked test above covers the code path")
    run_dir(tmp_path / "evals")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        done = command(tmp_path, "runs")
    finally:
        locked.chmod(0o755)
    no_traceback(done)
    assert done.returncode == 1
    assert "could not search locked" in done.stderr


def test_compare_a_folder_that_is_not_a_run_dir_says_so_and_the_fix(tmp_path: Path) -> None:
    run_dir(tmp_path / "evals")
    done = command(tmp_path, "compare", "evals", NAME, "--out", str(tmp_path / "out"))
    no_traceback(done)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "pytest_llmeval compare: evals: is a folder, not a run dir (no manifest.json, no "
        ".llmeval-run tag); give a run dir, or a run's name as `python -m pytest_llmeval "
        "runs` prints it"
    ]


def test_resolve_run_takes_the_name_of_a_run_under_an_output_root(tmp_path: Path) -> None:
    real = run_dir(tmp_path)
    assert resolve_run(NAME, tmp_path / RUNS) == real
    assert run_roots.DEFAULT_ROOT == RUNS


def test_runs_names_a_folder_it_could_not_search_mocked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_llmeval.commands import runs

    (tmp_path / RUNS).mkdir(parents=True)
    (tmp_path / "locked").mkdir()
    _lock_out(monkeypatch, "locked")
    monkeypatch.chdir(tmp_path)
    assert runs.main() == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "pytest_llmeval runs: could not search locked for .llmeval/runs: no read permission? "
        "give this user access, or give the output root: runs ROOT"
    ]
