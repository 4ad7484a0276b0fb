"""Collection: an eval file (or a ``*.llmeval.yaml`` manifest) and the names of its items.

Each record of the file becomes one :class:`~pytest_llmeval.plugin.eval_item.EvalItem`, named
by its case id (or a name the plugin makes up, never one a real id takes).

A broken record never becomes a collection error (that would stop the whole session): it
becomes an item that errors in setup, named ``line<N>``, whose message names ``path:line``,
the field and what was expected."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_llmeval.core.errors import CaseFileError
from pytest_llmeval.core.models import EvalCase
from pytest_llmeval.inputs.manifest import SUFFIX, Manifest
from pytest_llmeval.inputs.regular import NOT_REGULAR, not_regular
from pytest_llmeval.plugin.compat import fixture_info
from pytest_llmeval.plugin.eval_item import EvalItem
from pytest_llmeval.plugin.fixtures import FixtureValues
from pytest_llmeval.suites.base import (
    CaseSource,
    LoadItem,
    PendingCase,
    Suite,
    fallback_case_id,
)
from pytest_llmeval.suites.unclaimed import EMPTY_SUITE, why_unclaimed

if TYPE_CHECKING:
    from pytest_llmeval.plugin.state import LLMEvalState

__all__ = ["HEAD_BYTES", "EvalFile", "display_path"]
"""``EvalItem`` and ``case_fingerprint`` live in :mod:`~pytest_llmeval.plugin.eval_item`;
named here too for the modules that import the collection nodes together."""

HEAD_BYTES = 65536


def display_path(path: Path, rootdir: Path) -> str:
    try:
        return path.relative_to(rootdir).as_posix()
    except ValueError:
        return path.as_posix()


class EvalFile(pytest.File):
    """A data file claimed by a suite, or a manifest that names the suite and the data file."""

    def __init__(self, *, state: LLMEvalState, **kwargs: Any):
        super().__init__(**kwargs)
        self.state = state
        self.suite_name = "unknown"
        self.data_display = display_path(self.path, state.settings.rootdir)
        self.manifest_name = self.data_display if self.path.name.endswith(SUFFIX) else None
        """This file's name (relative to the rootdir) when it is a manifest: its key in the
        session's :class:`~pytest_llmeval.inputs.manifest.ManifestIndex`, readable or not."""
        self.manifest: Manifest | None = None
        """The manifest the cases were collected through, once read (``None`` for a data file
        collected on its own, or a manifest that cannot be read)."""
        self.fixture_values: FixtureValues | None = None
        """What the last item's fixtures resolved to, when every one is session-scoped."""

    @property
    def misses(self) -> str:
        """The manifest's ``misses``: ``fail`` (a missed case fails) or ``xfail`` (it is an
        expected failure, pytest's ``x``: a benchmark's cases inform, its gates decide)."""
        return self.manifest.misses if self.manifest is not None else "fail"

    def collect(self) -> Iterator[pytest.Item]:
        try:
            suite, source = self._resolve()
        except CaseFileError as exc:
            yield EvalItem.from_parent(self, name=_error_name(exc), problem=exc)
            return
        self.suite_name, self.data_display = suite.name, source.display
        items: dict[str, EvalItem] = {}
        self._build(suite, source, items)
        for name in sorted(items):
            yield items[name]

    def _build(self, suite: Suite, source: CaseSource, items: dict[str, EvalItem]) -> None:
        """One item per loaded case (or per broken record) into ``items``, by name.

        Every record becomes exactly one item. A case named by its own id takes that name
        first; names the plugin makes up (an id-less row's hash, a broken record's
        ``line<N>``, a duplicate's ``<id>@line<N>``) are given after every real id of the file
        is known, so none of them can take a real case's name, and one already taken gets
        ``_`` appended until it is free (the same file always gives the same names)."""
        later: list[LoadItem] = []
        for loaded in _guarded(suite.load(source, self.state.context)):
            if isinstance(loaded, CaseFileError):
                if loaded.case_id and loaded.case_id not in items:
                    self._add(items, loaded.case_id, loaded)  # the broken row's own id
                else:
                    later.append(loaded)
            elif _made_up_id(loaded) or loaded.case_id in items:
                later.append(loaded)
            else:
                self._add(items, loaded.case_id, loaded)
        # id-less rows' hashes next (a real id equal to one keeps it), then the made-up names
        for loaded in later:
            if not isinstance(loaded, CaseFileError) and loaded.case_id not in items:
                self._add(items, loaded.case_id, loaded)
        for loaded in later:
            if isinstance(loaded, CaseFileError):
                base = _error_name(loaded)
                if loaded.case_id:
                    base = f"{loaded.case_id}@line{loaded.line}"
                self._add(items, _free(base, items), loaded)
            elif not items[loaded.case_id].holds(loaded):
                first = items[loaded.case_id]
                problem = CaseFileError(
                    source.display,
                    loaded.line,
                    f"duplicate case id {loaded.case_id!r} (first defined at line {first.line})",
                    field="id",
                )
                self._add(items, _free(f"{loaded.case_id}@line{loaded.line}", items), problem)

    def _add(self, items: dict[str, EvalItem], name: str, loaded: LoadItem) -> None:
        # one fixture closure for the whole file (the first item's), as pytest shares one
        # among a parametrized test's items: all items here call the same stand-in
        fixtureinfo = fixture_info(next(iter(items.values()))) if items else None
        if isinstance(loaded, CaseFileError):
            item = EvalItem.from_parent(self, name=name, problem=loaded, fixtureinfo=fixtureinfo)
        elif isinstance(loaded, PendingCase):
            item = EvalItem.from_parent(self, name=name, pending=loaded, fixtureinfo=fixtureinfo)
        else:
            item = EvalItem.from_parent(self, name=name, case=loaded, fixtureinfo=fixtureinfo)
        items[name] = item

    def _resolve(self) -> tuple[Suite, CaseSource]:
        rootdir = self.state.settings.rootdir
        if self.manifest_name is not None:
            return self._from_manifest()
        display = display_path(self.path, rootdir)
        if not_regular(self.path):  # a FIFO: opening it waits for a writer
            raise CaseFileError(display, None, NOT_REGULAR)
        try:
            with self.path.open("rb") as handle:
                head = handle.read(HEAD_BYTES)
        except OSError as exc:
            raise CaseFileError(display, None, f"cannot read the file: {exc.strerror}") from None
        source = CaseSource(path=self.path, display=display)
        if not head.strip():
            return EMPTY_SUITE, source
        try:
            suite = self.state.suites.claim(self.path, head)
        except RecursionError:  # a suite that parsed a too deeply nested head itself
            suite = None
        if suite is None:
            empty, syntax_error = why_unclaimed(self.path, display)
            if empty:
                return EMPTY_SUITE, source
            raise syntax_error or CaseFileError(
                display,
                1,
                "no suite recognises this file (known suites: "
                f"{', '.join(self.state.suites.names())}); name the suite in a "
                "*.llmeval.yaml manifest or fix the file's fields",
            )
        return suite, source

    def _from_manifest(self) -> tuple[Suite, CaseSource]:
        index = self.state.manifests
        manifest = index.read(self.path)  # read once this session, with the targets
        suite = self.state.suites.get(manifest.suite)
        if suite is None:
            raise CaseFileError(
                manifest.display,
                manifest.line("suite"),
                f"unknown suite {manifest.suite!r}; known suites: "
                f"{', '.join(self.state.suites.names())}",
                field="suite",
            )
        manifest.check_options(suite.name, suite.manifest_options)
        path = manifest.data_path(folder=suite.data_folder)
        data = index.display(path)
        index.collected(manifest, data)
        self.manifest = manifest
        return suite, CaseSource(path=path, display=data, options=dict(manifest.options))


def _guarded(loads: Iterator[LoadItem]) -> Iterator[LoadItem]:
    """A suite's records; a CaseFileError the suite raises instead of yielding (a bad option
    found while loading) ends the file as one more error item, not as a collection error."""
    try:
        yield from loads
    except CaseFileError as exc:
        yield exc


def _made_up_id(loaded: EvalCase | PendingCase) -> bool:
    """Whether a row's id is the hash the plugin gives a row without one (a real id of the
    same 13 characters keeps its name; the hash is worked out only for such ids)."""
    case_id = loaded.case_id
    return (
        isinstance(loaded, PendingCase)
        and len(case_id) == 13
        and case_id[0] == "h"
        and fallback_case_id(loaded.row) == case_id
    )


def _free(name: str, items: dict[str, EvalItem]) -> str:
    """``name``, with ``_`` appended until no item has it."""
    while name in items:
        name += "_"
    return name


def _error_name(exc: CaseFileError) -> str:
    if exc.case_id:
        return exc.case_id
    return f"line{exc.line}" if exc.line else "file"
