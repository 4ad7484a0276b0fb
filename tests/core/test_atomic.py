"""The one atomic write (``core.atomic``): whole files, with the mode a plain ``open`` gives.

Each test sets the umask it needs and puts the old one back. The files a real run writes (the
run dir, the baseline, cassettes, ``compare``'s output, ``init``'s files) are checked through
pytest and ``python -m pytest_llmeval``, the way a user makes them.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.core import atomic
from pytest_llmeval.core.atomic import write_text
from tests.conftest import write_json

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX file modes and umask")


@pytest.fixture
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """Set the umask the test is parametrized with (022 unless told) and restore it."""
    mask = getattr(request, "param", 0o022)
    old = os.umask(mask)
    try:
        yield mask
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077, 0o027], indirect=True)
def test_a_new_file_gets_0666_less_the_umask(tmp_path: Path, umask: int) -> None:
    target = tmp_path / "deep" / "er" / "report.json"
    write_text(target, "{}\n")
    assert target.read_text() == "{}\n"
    assert _mode(target) == 0o666 & ~umask
    assert _mode(target) == _plain_open_mode(tmp_path / "plain.txt")
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.json"]  # no temp left


def _plain_open_mode(path: Path) -> int:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("x")
    return _mode(path)


def test_a_file_written_again_keeps_its_own_mode(tmp_path: Path, umask: int) -> None:
    """As writing it in place would: a baseline the user made private stays private, one made
    group-writable stays so."""
    for mode in (0o600, 0o664):
        target = tmp_path / f"baseline-{mode:o}.json"
        target.write_text("old\n")
        target.chmod(mode)
        write_text(target, "new\n")
        assert (target.read_text(), _mode(target)) == ("new\n", mode)


def test_a_write_that_fails_leaves_the_old_file_and_no_temp(tmp_path: Path, umask: int) -> None:
    target = tmp_path / "results.jsonl"
    write_text(target, "old\n")

    def rows() -> Iterator[str]:
        yield "half\n"
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        write_text(target, rows())
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["results.jsonl"]


def test_a_link_where_a_temp_name_would_go_is_never_written_through(
    tmp_path: Path, umask: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The temp file is created exclusively: a name that exists (a planted link included) is
    passed over for another, and what it points at is left alone."""
    outside = tmp_path / "outside.txt"
    outside.write_text("mine\n")
    folder = tmp_path / "run"
    folder.mkdir()
    names = iter(["aaaaaaaaaaaa", "bbbbbbbbbbbb"])
    monkeypatch.setattr("pytest_llmeval.core.atomic.secrets.token_hex", lambda n: next(names))
    (folder / ".report.json.aaaaaaaaaaaa.tmp").symlink_to(outside)
    write_text(folder / "report.json", "{}\n")
    assert outside.read_text() == "mine\n"
    assert (folder / "report.json").read_text() == "{}\n"
    assert _mode(folder / "report.json") == 0o644


CASES = [
    {"id": "a", "input": "same", "expected_output": "same"},
    {"id": "b", "input": "again", "expected_output": "again"},
]


def _files(folder: Path) -> dict[str, int]:
    return {
        path.relative_to(folder).as_posix(): _mode(path)
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


@pytest.mark.parametrize("umask", [0o022, 0o002], indirect=True)
def test_every_file_a_run_writes_follows_the_umask(pytester: pytest.Pytester, umask: int) -> None:
    """The run dir, the baseline, the cassettes recorded, ``compare``'s output, ``summarize``
    rewriting a run dir and ``init``'s files: each as ``open(..., "w")`` would make it."""
    want = 0o666 & ~umask
    write_json(pytester, "qa.golden.json", CASES)
    args = ("--llmeval-runner=echo", "-p", "no:cacheprovider", "--llmeval-record=new")
    result = pytester.runpytest(*args, "--llmeval-run-dir=run", "--llmeval-update-baseline=b.json")
    assert result.ret == pytest.ExitCode.OK
    pytester.runpytest(*args, "--llmeval-run-dir=again")
    run = _files(pytester.path / "run")
    assert {"report.json", "results.jsonl", "summary.md", "report.html", "manifest.json"} <= set(
        run
    )
    assert set(run.values()) == {want}, run
    assert _mode(pytester.path / "b.json") == want
    cassettes = _files(pytester.path / "fixtures" / "cassettes")
    assert cassettes and set(cassettes.values()) == {want}, cassettes
    for args_ in (("compare", "--out=cmp", "run", "again"), ("summarize", "run")):
        done = subprocess.run(
            [sys.executable, "-m", "pytest_llmeval", *args_],
            capture_output=True, text=True, cwd=pytester.path, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
    compared = _files(pytester.path / "cmp")
    assert set(compared) == {"compare.md", "compare.html"}
    assert set(compared.values()) == {want}
    assert set(_files(pytester.path / "run").values()) == {want}
    done = subprocess.run(
        [sys.executable, "-m", "pytest_llmeval", "init", "--suite", "golden"],
        capture_output=True, text=True, cwd=pytester.path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    made = _files(pytester.path / "evals")
    assert made and set(made.values()) == {want}, made


@pytest.mark.parametrize("umask", [0o022, 0o000], indirect=True)
def test_a_private_files_temp_is_never_wider_than_the_file(
    tmp_path: Path, umask: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The temp file that replaces a private file is created private: made wider and narrowed
    once open, another user could open it in between and read (under umask 000: write) it."""
    created: list[int] = []
    real_open = os.open

    def recording_open(path: Any, flags: int, mode: int = 0o777, **kw: Any) -> int:
        fd = real_open(path, flags, mode, **kw)
        created.append(stat.S_IMODE(os.fstat(fd).st_mode))
        return fd

    target = tmp_path / "baseline.json"
    target.write_text("old\n")
    target.chmod(0o600)
    monkeypatch.setattr(atomic.os, "open", recording_open)
    write_text(target, "new\n")
    assert created == [0o600]
    assert (target.read_text(), _mode(target)) == ("new\n", 0o600)
