"""Building a run's report from case results and writing the run dir, with or without pytest.

The session reporter uses :class:`RunWriter` at the end of a session; ``summarize`` and
``merge`` use it to write a run dir from results read back. Every file goes through the
redactor and is written atomically (a verdict written again after the run dir's folder stopped
taking new files is written over in place); the file names come from
:class:`~pytest_llmeval.rundir.layout.RunLayout`.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.errors import ConfigError
from pytest_llmeval.core.fingerprint import file_sha256
from pytest_llmeval.core.models import CaseResult, unpack
from pytest_llmeval.core.packed import Packed
from pytest_llmeval.core.redact import Redactor
from pytest_llmeval.core.version import __version__
from pytest_llmeval.report import console
from pytest_llmeval.report.build import build_report
from pytest_llmeval.report.html import html_pieces
from pytest_llmeval.report.html.header import RunFacts
from pytest_llmeval.rundir.files import dumps, rewrite_text, write_json, write_jsonl, write_text
from pytest_llmeval.rundir.layout import REPORT_FILES, RunLayout
from pytest_llmeval.rundir.models import (
    Interrupted,
    MergedFrom,
    Report,
    RunManifest,
    RunVerdict,
)
from pytest_llmeval.suites.base import CaseSource, SuiteBase, SuiteContext, SuiteRegistry, path_tag
from pytest_llmeval.tools.broker import ToolBroker

if TYPE_CHECKING:
    from pytest_llmeval.report.verdict import GateProblem

__all__ = ["RunWriter", "events"]


@dataclass
class RunWriter:
    """What a run dir's reports are built from and written with."""

    run_dir: Path
    run_id: str
    context: SuiteContext
    suites: SuiteRegistry
    redactor: Redactor

    @property
    def layout(self) -> RunLayout:
        return RunLayout(self.run_dir)

    def build(self, results: Sequence[CaseResult], runners: dict[str, Any]) -> Report:
        """The report of ``results`` (sorted by node id): aggregates and fingerprints."""
        settings = self.context.settings
        registry = self.context.registry
        report = build_report(
            results,
            self.suites,
            self.dataset_hashes(results),
            runners,
            {
                "tool_registry_sha256": registry.fingerprint() if len(registry) else None,
                "fixtures_sha256": _fixtures_fingerprint(settings.fixtures),
            },
        )
        changed = self.context.collected.changed
        report.datasets_changed = dict(sorted(changed.items())) if changed else None
        return report

    def dataset_hashes(self, results: Sequence[CaseResult]) -> dict[str, str]:
        """Each data file's sha256: of the bytes collected when this session collected it (the
        bytes its cases were judged on), else of the file as it is now (``summarize``). A file
        whose bytes are no longer those collected is noted in ``context.collected.changed``."""
        rootdir = self.context.settings.rootdir
        collected = self.context.collected
        hashes: dict[str, str] = {}
        for name in sorted({r.file for r in results}):
            now = file_sha256(rootdir / name) if (rootdir / name).is_file() else None
            seen = collected.hashes.get(name)
            if seen is not None and seen != now:
                collected.changed.setdefault(
                    name, "changed on disk after it was collected" if now else "is gone"
                )
            if seen or now:
                hashes[name] = seen or now  # type: ignore[assignment]
        return hashes

    def suite_artifacts(self, results: Sequence[CaseResult]) -> list[tuple[str, Any]]:
        """Per-file artifacts of the suites (``toolforge/<stem>.json`` ...), one name per data
        file: files whose artifacts would share a name (``v1/x.golden.json`` and
        ``v2/x.golden.json``, ``a/x.jsonl`` and ``a_x.jsonl``, or names that differ only in
        case, which meet on a case-insensitive disk) are made again with a short hash of their
        path in it (:attr:`CaseSource.tag`); every other name stays as it is."""
        rootdir = self.context.settings.rootdir
        by_file: dict[tuple[str, str], list[CaseResult]] = {}
        for result in results:
            by_file.setdefault((result.suite, result.file), []).append(result)
        made: list[tuple[SuiteBase, CaseSource, list[CaseResult], dict[str, Any]]] = []
        for (suite_name, file), rows in sorted(by_file.items()):
            suite = self.suites.get(suite_name)
            if suite is None or not (rootdir / file).exists():  # a file, or a data folder
                continue
            source = CaseSource(path=rootdir / file, display=file)
            made.append((suite, source, rows, self._file_artifacts(suite, source, rows)))
        # names that differ only in case meet on a case-insensitive disk (macOS, Windows)
        taken = Counter(name.casefold() for *_, artifacts in made for name in artifacts)
        out: list[tuple[str, Any, str]] = []
        for suite, source, rows, artifacts in made:
            if any(taken[name.casefold()] > 1 for name in artifacts):  # again, with a tag
                tag = path_tag(source.display)
                again = self._file_artifacts(suite, replace(source, tag=tag), rows)
                # a suite that does not name its artifacts by the tag gets it put in
                artifacts = {_tagged(k, tag) if k in artifacts else k: v for k, v in again.items()}
            out += [(name, value, source.display) for name, value in sorted(artifacts.items())]
        return _unique(out)

    def _file_artifacts(
        self, suite: SuiteBase, source: CaseSource, rows: Sequence[CaseResult]
    ) -> dict[str, Any]:
        return dict(suite.file_artifacts(source, rows, self.context, self.run_id))

    def write(
        self,
        results: Sequence[CaseResult],
        report: Report,
        file_artifacts: Sequence[tuple[str, Any]],
        summary_extra: str = "",
        redacted: Callable[[CaseResult], bool] = lambda result: False,
        gate_problems: Sequence[GateProblem] = (),
        facts: RunFacts | None = None,
    ) -> list[str]:
        """Write every report file through the redactor; returns the names written.

        ``redacted(result)`` says whether this writer's redactor already redacted a result
        (a session's own, made in this process); its line and events are written as they
        are. Every other result gets a second pass: ``merge`` and ``summarize`` write
        journals from other sessions, whose secrets this one may know.
        """
        redact = self.redactor
        layout = self.layout
        for name, value in file_artifacts:
            write_json(layout.file(name), redact.value(value))
        # Rows are dumped, redacted and written one at a time: at 100,000 cases holding them
        # all (and a second copy for the page) was most of the session's peak memory.
        write_jsonl(layout.results, (self._row(r, redacted(r)) for r in results))
        write_jsonl(layout.errors, (self._error(r) for r in results if r.outcome == "error"))
        write_jsonl(layout.events, _redacted_events(results, redact, redacted))
        write_jsonl(layout.audit, (redact.value(e) for e in _audit_events(results)))
        body = redact.value(report.dump())
        write_json(layout.report, body)
        # summary.md shows the report as written: its names and messages redacted
        written = Report.model_validate(body)
        summary = console.summary_markdown(written, results, gate_problems)
        summary += self._suite_markdown(file_artifacts)
        summary += summary_extra
        write_text(layout.summary, redact.text(summary))
        self._write_page(body, results, facts)
        return sorted([*REPORT_FILES, *(name for name, _ in file_artifacts)])

    def _write_page(
        self, body: dict[str, Any], results: Sequence[CaseResult], facts: RunFacts | None
    ) -> None:
        """report.html of the redacted report ``body``. Results are redacted where they are
        made (and in the journals they are read from); the page gets a text pass on top, as
        every other file does, piece by piece (no piece splits a text): the page is streamed,
        never held whole."""
        write_text(self.layout.html, self._page(body, results, facts))

    def _page(
        self, body: dict[str, Any], results: Sequence[CaseResult], facts: RunFacts | None
    ) -> Iterator[str]:
        """The page's pieces, each through the redactor's text pass."""
        return (self.redactor.text(piece) for piece in html_pieces(body, results, facts=facts))

    def rewrite_verdict(
        self,
        manifest: RunManifest,
        verdict: RunVerdict,
        results: Sequence[CaseResult],
        report: Report,
        facts: RunFacts,
    ) -> RunManifest:
        """``manifest.json`` and report.html again, with ``verdict``: a fault found after they
        were written (a leaked secret, an MLflow failure, another plugin or a signal) changed
        how the run ended."""
        manifest = manifest.model_copy(update={"verdict": verdict})
        # the record runs and compare read first (it is small); both over the old files, in
        # place when the folder takes no new file: neither may stay greener than the run
        text = dumps(manifest.dump())
        rewrite_text(self.layout.manifest, lambda: [text])
        body = self.redactor.value(report.dump())
        rewrite_text(self.layout.html, lambda: self._page(body, results, facts))
        return manifest

    def write_manifest(
        self,
        *,
        settings: Settings,
        invocation: Sequence[str],
        started: str | None,
        finished: str | None,
        duration_s: float,
        git: dict[str, Any] | None,
        environment: dict[str, Any] | None,
        attempt: int,
        artifacts: list[str],
        merged_from: list[MergedFrom] | None = None,
        interrupted: Interrupted | None = None,
        verdict: RunVerdict | None = None,
    ) -> RunManifest:
        """``manifest.json``, after every other file (it lists them): this plugin's and
        this interpreter's versions, and the settings, invocation and environment redacted."""
        redact = self.redactor
        manifest = RunManifest(
            run_id=self.run_id,
            plugin_version=__version__,
            python=sys.version.split()[0],
            pytest=_pytest_version(),
            started=started,
            finished=finished,
            duration_s=duration_s,
            settings=redact.value(settings.public_dict()),
            invocation=redact.value(list(invocation)),
            git=git,
            environment=redact.value(environment),
            attempt=attempt,
            shard=list(settings.shard) if settings.shard else None,
            artifacts=artifacts,
            merged_from=merged_from,
            interrupted=interrupted,
            verdict=verdict,
        )
        write_json(self.layout.manifest, manifest.dump())
        return manifest

    def _suite_markdown(self, file_artifacts: Sequence[tuple[str, Any]]) -> str:
        """The sections suites add to ``summary.md`` for their per-file artifacts."""
        lines: list[str] = []
        for name, value in file_artifacts:
            suite = self.suites.get(name.split("/", 1)[0])
            section = suite.markdown_lines(value) if suite is not None else None
            if section is not None:
                lines += ["", *section]
        return "\n".join(lines)

    def _row(self, result: CaseResult, redacted: bool = False) -> dict[str, Any]:
        """A case's line of ``results.jsonl``: the result without its events (nor an error's
        phase and traceback, which ``errors.jsonl`` has), redacted (unless it was)."""
        row = result.model_dump(mode="json", exclude={"events", "phase", "traceback"})
        return row if redacted else self.redactor.value(row)

    def _error(self, result: CaseResult) -> dict[str, Any]:
        """An error's line of ``errors.jsonl``: which case, in which phase, the one-line
        message and the traceback, then the rest of its ``results.jsonl`` line; redacted."""
        row = {
            "nodeid": result.nodeid,
            "case_id": result.case_id,
            "phase": result.phase,
            "message": result.error,
            "traceback": result.traceback,
            **result.model_dump(mode="json", exclude={"events", "phase", "traceback"}),
        }
        return self.redactor.value(row)  # type: ignore[no-any-return]


def _tagged(name: str, tag: str) -> str:
    """``name`` with ``tag`` before its extension (``gaia/x.json`` -> ``gaia/x.<tag>.json``)."""
    head, dot, extension = name.rpartition(".")
    return f"{head}.{tag}.{extension}" if dot and "/" not in extension else f"{name}.{tag}"


def _unique(artifacts: Sequence[tuple[str, Any, str]]) -> list[tuple[str, Any]]:
    """The artifacts by name; a name two files still share (a file of the user's named like
    another's tagged artifact) takes its file's whole path hash."""
    taken = Counter(name.casefold() for name, _, _ in artifacts)
    return [
        (_tagged(name, path_tag(display, 64)) if taken[name.casefold()] > 1 else name, value)
        for name, value, display in artifacts
    ]


def _pytest_version() -> str:
    """pytest's version, read without importing pytest (``summarize`` runs without it)."""
    try:
        return version("pytest")
    except PackageNotFoundError:
        return "unknown"


def events(results: Sequence[CaseResult]) -> Iterator[dict[str, Any]]:
    """Every case's events in result order, each with ``sample_id`` and ``event_index``."""
    for result in results:
        yield from _case_events(result)


def _case_events(result: CaseResult) -> Iterator[dict[str, Any]]:
    """:func:`events` of one case."""
    for index, event in enumerate(unpack(result.events)):
        yield {"sample_id": result.case_id, "nodeid": result.nodeid, "event_index": index, **event}


_AUDIT = b'"type":"audit"'
"""What a packed event list holds when one of its events is an audit (:mod:`..core.packed`
writes compact JSON, as is)."""


def _audit_events(results: Sequence[CaseResult]) -> Iterator[dict[str, Any]]:
    """The audit events of :func:`events`; a case whose packed events hold none is not read
    back at all."""
    for result in results:
        held = result.events
        if isinstance(held, Packed) and held.find(_AUDIT) < 0:
            continue
        yield from (event for event in _case_events(result) if event.get("type") == "audit")


def _redacted_events(
    results: Sequence[CaseResult], redact: Redactor, redacted: Callable[[CaseResult], bool]
) -> Iterator[dict[str, Any]]:
    """:func:`events`, each redacted unless its result was."""
    for result in results:
        if redacted(result):
            yield from _case_events(result)
        else:
            yield from (redact.value(event) for event in _case_events(result))


def _fixtures_fingerprint(folder: Path) -> str | None:
    """The tool fixtures' fingerprint; ``None`` when they cannot be read (each case that
    needed them is already an error saying why): the reports are still written."""
    try:
        return ToolBroker.from_dir(folder).fingerprint()
    except ConfigError:
        return None
