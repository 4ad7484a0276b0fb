"""Eval folders that are pytest roots of their own, met from a session started above them.

``python -m pytest_llmeval init`` writes a ``pytest.ini`` into the eval folder: ``pytest
evals`` starts there, so the folder's cassettes, fixtures and tool registry are found. A bare
``pytest`` from the project's root never reads that file (pytest reads one configuration, the
root's), so the eval files would run with the root's settings: the replay runner would look
for cassettes where there are none and stop the whole session, the user's own tests with it.

So an eval file inside a folder below the rootdir that holds its own ``pytest.ini`` (or
``.pytest.ini``) is left out of such a session, with one line at the end naming the command
that runs it (``pytest evals``). The session's own configuration can take the folder in: when
its cassette folder, tool fixture folder or tool registry lies inside that folder (the keys
copied into the root's configuration with the folder's path in front, as the ``pytest.ini``
says), its eval files are collected as any other. The user's own tests are never touched.

Under xdist the workers collect: each sends the folders it left out with its
``workeroutput``, and the controller writes the line.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.config.settings import Settings
from pytest_llmeval.plugin import worker_wire as wire

__all__ = ["OWN_ROOT_FILES", "EvalRoots", "eval_roots_key", "own_root"]

OWN_ROOT_FILES = ("pytest.ini", ".pytest.ini")
"""The files that make a folder a pytest root whatever they hold (pytest's own rule)."""


def own_root(file_path: Path, rootdir: Path, inifile: Path | None) -> Path | None:
    """The folder nearest ``file_path``, below ``rootdir``, that holds its own pytest
    configuration file (not the session's ``inifile``), else ``None``: ``pytest FOLDER``
    starts a session there, with that file's settings."""
    if not file_path.is_relative_to(rootdir):
        return None
    for folder in file_path.parents:
        if folder == rootdir or not folder.is_relative_to(rootdir):
            return None
        for name in OWN_ROOT_FILES:
            candidate = folder / name
            if candidate != inifile and candidate.is_file():
                return folder
    return None


class EvalRoots:
    """Leaves out the eval files of folders that are pytest roots of their own, and says so
    in one line."""

    def __init__(self, config: pytest.Config, settings: Settings):
        self.config = config
        self.rootdir = settings.rootdir
        self.inifile = Path(config.inipath) if config.inipath is not None else None
        self.configured = tuple(
            path if path.is_absolute() else self.rootdir / path
            for path in (settings.cassettes, settings.fixtures, settings.tool_registry)
            if path is not None
        )
        """What this session's configuration points at: a folder holding one is taken in."""
        self.left_out: dict[Path, int] = {}
        """Each folder left out → how many of its eval files."""
        self._roots: dict[Path, Path | None] = {}

    def leaves_out(self, file_path: Path) -> bool:
        """Whether ``file_path``, an eval file, belongs to a folder run on its own."""
        parent = file_path.parent
        if parent not in self._roots:  # one look up the tree per folder, not per file
            self._roots[parent] = own_root(file_path, self.rootdir, self.inifile)
        root = self._roots[parent]
        if root is None or any(path.is_relative_to(root) for path in self.configured):
            return False
        self.left_out[root] = self.left_out.get(root, 0) + 1
        left_out = {str(k): v for k, v in self.left_out.items()}
        wire.worker_output(self.config).left_out = left_out
        return True

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """The folders a worker left out (the workers collect the same files: the most any
        worker counted)."""
        output = wire.node_output(node)
        for name, count in sorted(output.left_out.items() if output is not None else ()):
            root = Path(name)
            self.left_out[root] = max(self.left_out.get(root, 0), count)

    def lines(self) -> list[str]:
        """One line per folder left out, naming the command that runs it."""
        here = Path(self.config.invocation_params.dir)
        out = []
        for root, count in sorted(self.left_out.items()):
            shown = root.relative_to(here) if root.is_relative_to(here) else root
            config = next((n for n in OWN_ROOT_FILES if (root / n).is_file()), OWN_ROOT_FILES[0])
            out.append(
                f"llmeval: {count} eval file(s) in {shown}/ left out: that folder has its own "
                f"{config}, read only when pytest starts there; run them with "
                f"`pytest {shlex.quote(str(shown))}`"
            )
        return out

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if wire.is_worker(self.config):
            return
        for line in self.lines():
            terminalreporter.write_line(line, yellow=True)


eval_roots_key = pytest.StashKey[EvalRoots]()
