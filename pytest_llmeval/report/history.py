"""Run history: one run dir at a glance (date, runner and model, headline numbers, verdict),
and the lines ``python -m pytest_llmeval runs`` prints for a whole output root.

The verdict is the one the session recorded in ``manifest.json``
(:class:`~pytest_llmeval.rundir.models.RunVerdict`): ``failed``, ``partial`` or ``passed``,
with its reasons.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Literal

from pydantic import BaseModel, ConfigDict

from pytest_llmeval.report.headlines import Headline, format_headline, headlines
from pytest_llmeval.report.run_verdict import decide
from pytest_llmeval.rundir.models import Interrupted, VerdictStatus
from pytest_llmeval.rundir.outcomes import RunOutcomes

__all__ = [
    "EntryKind",
    "ListedEntry",
    "RunSummary",
    "history_lines",
    "reasons_text",
    "run_summary",
    "run_verdict",
    "runner_text",
    "started_text",
]

EntryKind = Literal["foreign", "broken", "unfinished", "in use", "unreadable"]


class RunSummary(BaseModel):
    """One run dir at a glance."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """The run dir's folder name."""
    path: str
    """The run dir, as it was given or found."""
    run_id: str
    started: str | None
    """When the session started (ISO 8601, UTC), from ``manifest.json``."""
    runner: str
    """The runner asked for (``--llmeval-runner``)."""
    models: list[str]
    """What answered: each runner fingerprint's model, or its type when that is not the runner
    asked for (``replay`` of cassettes recorded from ``example-router``)."""
    cases: int
    """Eval cases with a result."""
    suites: dict[str, list[Headline]]
    """Each suite's headline numbers."""
    verdict: VerdictStatus
    reasons: list[str]
    """Why the verdict is not ``passed`` (a gate, errored cases, a regression ...)."""
    interrupted: Interrupted | None
    """Present when the run was cut short (Ctrl-C, SIGTERM, ``-x``, a budget)."""
    note: str | None = None
    """A shard of a split run, or a merge of shards."""


class ListedEntry(BaseModel):
    """Something under the output root that is not a readable run dir."""

    model_config = ConfigDict(extra="forbid")

    name: str
    kind: EntryKind
    """``foreign``: not a run dir (no tag); ``broken``: a run dir whose files cannot be read;
    ``unfinished``: a run dir without ``manifest.json`` (its session was killed); ``in use``:
    a session is writing it now; ``unreadable``: an entry that cannot even be looked at (a
    folder without read permission, an I/O error)."""
    message: str
    """One line: what is wrong, and what to do."""


def run_summary(run: RunOutcomes) -> RunSummary:
    """A finished run dir (:func:`~pytest_llmeval.rundir.outcomes.read_outcomes`) at a
    glance."""
    manifest, report = run.manifest, run.report
    verdict, reasons = run_verdict(run)
    runner = str(manifest.settings.get("runner") or "?")
    return RunSummary(
        name=run.path.name,
        path=str(run.path),
        run_id=manifest.run_id,
        started=manifest.started,
        runner=runner,
        models=_models(run, runner),
        cases=report.totals.total,
        suites=headlines(report),
        verdict=verdict,
        reasons=reasons,
        interrupted=report.interrupted or manifest.interrupted,
        note=_note(run),
    )


_RANK: dict[VerdictStatus, int] = {"passed": 0, "partial": 1, "failed": 2}


def run_verdict(run: RunOutcomes) -> tuple[VerdictStatus, list[str]]:
    """The run's verdict and the reasons for it: as its session (or ``merge``, or
    ``summarize``) recorded it in ``manifest.json``, which knows what the files cannot show;
    judged from the files with the same rule
    (:func:`~pytest_llmeval.report.run_verdict.decide`) for a run dir written before it was
    recorded, and whenever the files read redder than the record (a hand-edited ``passed``
    never shows a red run green)."""
    status, reasons = _files_verdict(run)
    recorded = run.manifest.verdict
    if recorded is not None and _RANK[recorded.status] >= _RANK[status]:
        return recorded.status, list(recorded.reasons)
    return status, reasons


def _files_verdict(run: RunOutcomes) -> tuple[VerdictStatus, list[str]]:
    """The verdict the report and case outcomes show."""
    report, outcomes = run.report, run.outcomes
    gates = report.gates.results if report.gates is not None else []
    reasons = [f"gate {g.gate.name} failed" for g in gates if g.failed]
    if report.baseline is not None and report.baseline.regressed:
        reasons.append(f"{report.baseline.pass_to_fail} regression(s) against the baseline")
    errored = sum(1 for o in outcomes if o.outcome == "error")
    if errored:
        reasons.append(f"{errored} case(s) errored")
    interrupted = report.interrupted or run.manifest.interrupted
    if outcomes and all(o.outcome == "skipped" for o in outcomes) and interrupted is None:
        reasons.append(f"nothing was judged: all {len(outcomes)} eval case(s) were skipped")
    exit_on = str(run.manifest.settings.get("exit_on") or "all")
    missed = sum(1 for o in outcomes if o.outcome == "failed" and not o.xfailed)
    if missed and exit_on == "all":
        reasons.append(f"{missed} case(s) failed")
    partial = sum(1 for g in gates if g.status == "partial")
    judged = decide(reasons, interrupted=interrupted, partial_gates=partial, exit_status=None)
    return judged.status, judged.reasons


def runner_text(summary: RunSummary) -> str:
    """``replay: example-router``, ``openai: gpt-4o-mini``, ``echo``."""
    if not summary.models:
        return summary.runner
    return f"{summary.runner}: {', '.join(summary.models)}"


REASON_WIDTH = 200
"""The most characters of one reason a listing shows: a run dir's record is not trusted to be
short (a hand-edited manifest may hold a 50 MB reason)."""


def reasons_text(reasons: Sequence[str], shown: int = 3) -> str:
    """The first ``shown`` reasons on one line, each cut to :data:`REASON_WIDTH` characters,
    control characters (a new line, a terminal escape) as spaces; ``+N more`` for the rest."""
    parts = []
    for reason in reasons[:shown]:
        text = "".join(ch if ch.isprintable() else " " for ch in reason[: REASON_WIDTH + 1])
        parts.append(text if len(text) <= REASON_WIDTH else text[: REASON_WIDTH - 3] + "...")
    if len(reasons) > shown:
        parts.append(f"+{len(reasons) - shown} more")
    return "; ".join(parts)


def started_text(started: str | None) -> str:
    """``2026-11-26 11:24 UTC`` from an ISO 8601 time; ``?`` when unknown."""
    if not started:
        return "?"
    try:
        when = datetime.fromisoformat(started)
    except ValueError:
        return started
    if when.tzinfo is not None:
        when = when.astimezone(timezone.utc)
    return when.strftime("%Y-%m-%d %H:%M UTC")


def history_lines(
    entries: Sequence[RunSummary | ListedEntry], latest: str | None = None
) -> list[str]:
    """The ``runs`` listing: per run dir one line (date, name, runner and model, cases,
    verdict; ``<- latest`` on the run dir named ``latest``), then one line per suite with its
    headline numbers; one line for anything else."""
    lines: list[str] = []
    width = max((len(name) for e in entries if isinstance(e, RunSummary) for name in e.suites),
                default=0)  # fmt: skip
    for entry in entries:
        if isinstance(entry, ListedEntry):
            lines.append(f"{entry.name}  {entry.kind}: {entry.message}")
            continue
        head = [
            started_text(entry.started),
            entry.name,
            runner_text(entry),
            f"{entry.cases} case" + ("" if entry.cases == 1 else "s"),
            entry.verdict,
        ]
        if entry.interrupted is not None:
            cut = entry.interrupted
            head.append(f"interrupted ({cut.reason}: {cut.cases_run} of {cut.cases_total} ran)")
        if entry.note:
            head.append(entry.note)
        if entry.verdict == "failed" and entry.reasons:
            head.append(f"({reasons_text(entry.reasons)})")
        if entry.name == latest:
            head.append("<- latest")
        lines.append("  ".join(head))
        for suite, rows in entry.suites.items():
            numbers = ", ".join(format_headline(h) for h in rows)
            lines.append(f"    {suite.ljust(width)}  {numbers}")
    return lines


def _models(run: RunOutcomes, runner: str) -> list[str]:
    found: set[str] = set()
    for fingerprint in run.runners.values():
        model = fingerprint.get("model")
        kind = fingerprint.get("type")
        if isinstance(model, str) and model:
            found.add(model)
        elif isinstance(kind, str) and kind and kind != runner:
            found.add(kind)
    setting = run.manifest.settings.get("model")
    if not found and isinstance(setting, str) and setting:
        found.add(setting)
    return sorted(found)


def _note(run: RunOutcomes) -> str | None:
    if run.manifest.merged_from:
        return f"merged from {len(run.manifest.merged_from)} shard run dirs"
    shard = run.shard
    return f"shard {shard[0]}/{shard[1]}" if shard else None
