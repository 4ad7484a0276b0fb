"""The run directory: every artifact's path, what writes it and what reads it.

One session writes one run dir (``<YYYYMMDDTHHMMSSZ>_<run_id>/``, or ``--llmeval-run-dir``).
:data:`ARTIFACTS` is the whole list; :class:`RunLayout` gives each its path. Nothing else in
the package spells an artifact's file name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = ["ARTIFACTS", "REPORT_FILES", "Artifact", "RunLayout"]

Kind = Literal["json", "jsonl", "text", "folder"]


@dataclass(frozen=True)
class Artifact:
    """One file or folder of a run dir."""

    name: str
    """Its path inside the run dir (a pattern for per-process or per-file artifacts)."""
    kind: Kind
    writer: str
    """The module that writes it."""
    readers: tuple[str, ...]
    """The modules (and commands) that read it back."""
    what: str


ARTIFACTS: tuple[Artifact, ...] = (
    Artifact(
        ".llmeval-run",
        "text",
        "rundir.files.tag_run_dir",
        ("plugin (collection skips tagged folders)", "commands.merge"),
        "the tag that marks a run dir: its files are results, not eval cases; the session "
        "writing the run dir holds an exclusive flock on it (rundir.claim)",
    ),
    Artifact(
        "manifest.json",
        "json",
        "report.writer.RunWriter.write_manifest",
        ("rundir.read", "summarize", "merge", "runs", "compare", "baseline", "mlflow"),
        "settings, fingerprints of the environment (git, python, pytest), start and end, shard, "
        "the artifacts written, and the verdict (status, exit status, reasons); once per "
        "session, at its end (its verdict written again if the leak check or MLflow changes "
        "it; summarize records the verdict it judges again)",
    ),
    Artifact(
        "journal/<attempt>/<process>-<pid>.jsonl",
        "jsonl",
        "rundir.journal.Journal",
        ("rundir.read", "--llmeval-resume", "summarize", "merge"),
        "every finished case of every process, flushed per case (resume reads it)",
    ),
    Artifact(
        "results.jsonl",
        "jsonl",
        "report.writer.RunWriter",
        ("rundir.read", "baseline", "html"),
        "one line per case, sorted by node id",
    ),
    Artifact(
        "errors.jsonl",
        "jsonl",
        "report.writer.RunWriter",
        (),
        "one line per error: nodeid, case_id, phase, message (the one line the terminal "
        "shows) and the traceback, then the case's results.jsonl fields; redacted (workers' "
        "errors travel on their results)",
    ),
    Artifact(
        "events.jsonl",
        "jsonl",
        "report.writer.RunWriter",
        (),
        "every case's event stream (context.emit), with sample_id and event_index",
    ),
    Artifact(
        "audit.jsonl",
        "jsonl",
        "report.writer.RunWriter",
        (),
        "the audit events (judge repairs, fallbacks and errors)",
    ),
    Artifact(
        "report.json",
        "json",
        "report.writer.RunWriter",
        ("rundir.read", "baseline", "merge", "mlflow"),
        "the Report model: totals, suites, fingerprints, gates, baseline comparison",
    ),
    Artifact(
        "summary.md",
        "text",
        "report.writer.RunWriter",
        ("mlflow",),
        "the Markdown summary for a pull-request comment",
    ),
    Artifact(
        "report.html",
        "text",
        "report.writer.RunWriter",
        (),
        "one self-contained page: summary, gates, cases",
    ),
    Artifact(
        "<suite>/<file>.json",
        "json",
        "report.writer.RunWriter (Suite.file_artifacts)",
        ("baseline (toolforge)",),
        "a suite's own per-file report (toolforge/<stem>.json, integration/<path>.json ...); "
        "one per data file: two files that would share a name get a short hash of their path "
        "in it (toolforge/<stem>.<hash>.json)",
    ),
    Artifact(
        "workspaces/<case>/",
        "folder",
        "dispatch (context.workspace)",
        (),
        "each case's private folder",
    ),
)
"""Every artifact of a run dir."""

REPORT_FILES: tuple[str, ...] = (
    "results.jsonl",
    "errors.jsonl",
    "events.jsonl",
    "audit.jsonl",
    "report.json",
    "summary.md",
    "report.html",
)
"""The files :class:`~pytest_llmeval.report.writer.RunWriter` writes for every run."""


@dataclass(frozen=True)
class RunLayout:
    """The paths of one run dir."""

    root: Path

    @property
    def tag(self) -> Path:
        return self.root / ".llmeval-run"

    @property
    def manifest(self) -> Path:
        return self.root / "manifest.json"

    @property
    def report(self) -> Path:
        return self.root / "report.json"

    @property
    def results(self) -> Path:
        return self.root / "results.jsonl"

    @property
    def errors(self) -> Path:
        return self.root / "errors.jsonl"

    @property
    def events(self) -> Path:
        return self.root / "events.jsonl"

    @property
    def audit(self) -> Path:
        return self.root / "audit.jsonl"

    @property
    def summary(self) -> Path:
        return self.root / "summary.md"

    @property
    def html(self) -> Path:
        return self.root / "report.html"

    @property
    def journal(self) -> Path:
        return self.root / "journal"

    @property
    def workspaces(self) -> Path:
        return self.root / "workspaces"

    def file(self, name: str) -> Path:
        """A file of the run dir by its name (a suite's ``toolforge/<stem>.json`` ...)."""
        return self.root / name
