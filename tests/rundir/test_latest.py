"""``<output root>/latest``: a relative link, or a text pointer where links cannot be made;
only a pointer of ours is ever replaced."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_llmeval.rundir import latest
from pytest_llmeval.rundir.latest import is_ours, point_latest, resolve_latest


def make_runs(root: Path, *names: str) -> list[Path]:
    out = []
    for name in names:
        (root / name).mkdir(parents=True)
        (root / name / ".llmeval-run").write_text("")
        out.append(root / name)
    return out


def test_a_link_replaces_the_last_one(tmp_path: Path) -> None:
    one, two = make_runs(tmp_path, "20260101T000000Z_a", "20260102T000000Z_b")
    assert point_latest(tmp_path, one) is None
    assert os.readlink(tmp_path / "latest") == one.name
    assert point_latest(tmp_path, two) is None
    assert os.readlink(tmp_path / "latest") == two.name
    assert resolve_latest(tmp_path / "latest") == two
    assert sorted(p.name for p in tmp_path.iterdir()) == [one.name, two.name, "latest"]


def test_a_text_pointer_where_links_cannot_be_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(*args: object, **kwargs: object) -> None:
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(latest.os, "symlink", no_links)
    one, two = make_runs(tmp_path, "20260101T000000Z_a", "20260102T000000Z_b")
    assert point_latest(tmp_path, one) is None
    pointer = tmp_path / "latest"
    assert pointer.read_text() == f"{one.name}\n" and not pointer.is_symlink()
    assert point_latest(tmp_path, two) is None  # its own text pointer is replaced
    assert resolve_latest(pointer) == two
    assert sorted(p.name for p in tmp_path.iterdir()) == [one.name, two.name, "latest"]


@pytest.mark.parametrize(
    "make",
    [
        lambda p: p.write_text("two\nlines\n"),
        lambda p: p.write_text("no-newline"),
        lambda p: p.write_text("x" * 600 + "\n"),
        lambda p: p.write_text("../outside\n"),
        lambda p: p.mkdir(),
        lambda p: p.symlink_to("/somewhere/else"),
        lambda p: p.write_text("keep-this-note\n"),
        lambda p: p.symlink_to("notes"),
        lambda p: (p.parent / "mine").mkdir() or p.symlink_to("mine"),
        lambda p: (p.parent / "mine").mkdir() or p.write_text("mine\n"),
        lambda p: (p.parent / "20260101T000000Z_b").mkdir() or p.write_text("20260101T000000Z_b\n"),
    ],
    ids=[
        "two lines",
        "no newline",
        "large",
        "a path",
        "folder",
        "absolute link",
        "a one-word note",
        "a dangling link of the user's",
        "a link to a folder of the user's",
        "a text naming a folder of the user's",
        "a stamp-named folder without the tag",
    ],
)
def test_what_is_not_ours_is_left_alone(tmp_path: Path, make: object) -> None:
    (run,) = make_runs(tmp_path, "20260101T000000Z_a")
    pointer = tmp_path / "latest"
    make(pointer)  # type: ignore[operator]
    before = (pointer.is_symlink(), pointer.is_dir(), pointer.is_file() and pointer.read_text())
    assert not is_ours(pointer)
    warning = point_latest(tmp_path, run)
    assert warning is not None and "left as it is" in warning
    assert (pointer.is_symlink(), pointer.is_dir(), pointer.is_file() and pointer.read_text()) == (
        before
    )
    assert resolve_latest(pointer) is None


def test_a_run_dir_outside_the_root_is_not_pointed_at(tmp_path: Path) -> None:
    (run,) = make_runs(tmp_path / "elsewhere", "run")
    (tmp_path / "root").mkdir()
    assert point_latest(tmp_path / "root", run) is None
    assert not (tmp_path / "root" / "latest").exists()


def test_a_pointer_at_a_deleted_run_dir_is_still_ours(tmp_path: Path) -> None:
    """A run dir deleted since leaves a pointer naming nothing: ours when the name has the
    run-dir stamp form, so the next run replaces it."""
    (run,) = make_runs(tmp_path, "20260102T000000Z_b")
    pointer = tmp_path / "latest"
    pointer.symlink_to("20260101T000000Z_0a1b")
    assert is_ours(pointer)
    assert point_latest(tmp_path, run) is None
    assert os.readlink(pointer) == run.name
    pointer.unlink()
    pointer.write_text("20260101T000000Z_0a1b\n")
    assert point_latest(tmp_path, run) is None and resolve_latest(pointer) == run
