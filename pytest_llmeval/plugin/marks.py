"""The marks eval items carry: ``llmeval``, their suite's name, their category and own marks.

One :class:`CaseMarks` per session turns a category into a ``-m`` friendly marker name, keeps
one shared mark per name (marks are immutable: 100,000 items need not build 100,000 of them),
and registers every marker it hands out, so ``--strict-markers`` accepts them. It lives as long
as its session: a second in-process session starts with none of the first one's names.
"""

from __future__ import annotations

import functools
import re

import pytest

from pytest_llmeval.suites.base import SuiteRegistry

__all__ = ["PYTEST_MARKERS", "CaseMarks"]

PYTEST_MARKERS = ("filterwarnings", "parametrize", "skip", "skipif", "usefixtures", "xfail")
"""pytest's built-in marks, which change how an item runs."""

_MARKER_CHARS = re.compile(r"\W+")


class CaseMarks:
    """The session's marker names and marks for eval items."""

    def __init__(self, config: pytest.Config, suites: SuiteRegistry) -> None:
        self.config = config
        self.suites = suites
        self._names: dict[str, str] = {}
        self._marks: dict[str, pytest.MarkDecorator] = {}
        self._registered: set[str] = set()

    def name(self, text: str) -> str:
        """A ``-m`` friendly marker name: non-word characters become ``_``."""
        found = self._names.get(text)
        if found is None:
            found = self._names[text] = _MARKER_CHARS.sub("_", text).strip("_") or "_"
        return found

    def shared(self, name: str) -> pytest.MarkDecorator:
        """One mark per marker name: ``add_marker("x")`` would look the name up and build a
        new Mark for every case."""
        found = self._marks.get(name)
        if found is None:
            found = self._marks[name] = getattr(pytest.mark, name)
        return found

    def registered(self, name: str) -> pytest.MarkDecorator:
        """:meth:`shared`, the marker registered first (before the mark is first looked up)."""
        if name not in self._registered:
            self._registered.add(name)
            self.config.addinivalue_line("markers", f"{name}: pytest-llmeval cases ({name})")
        return self.shared(name)

    @functools.cached_property
    def suite_markers(self) -> frozenset[str]:
        """Marker names a case's category or own mark must not take: those that select a
        whole suite (``-m golden``), ``llmeval`` (every case), and pytest's own, which act on
        the item (a category ``skip`` or ``xfail`` would hide a failing case). Such a
        category is marked ``category_<name>``."""
        return frozenset(["llmeval", *self.suites.names(), *PYTEST_MARKERS])

    def category(self, name: str) -> str:
        """The marker for a case's category or own mark ``name`` (already a marker name): the
        name itself, unless a suite (or ``llmeval``) owns it."""
        return f"category_{name}" if name in self.suite_markers else name
