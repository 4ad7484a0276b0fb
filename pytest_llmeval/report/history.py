"""Run history: one run dir at a glance (date, runner and model, headline numbers, verdict),
and the lines ``python -m pytest_llmeval runs`` prints for a whole output root.

The verdict is read back from what the run dir holds, as the session decided it: ``failed``
when a gate failed, the baseline regressed, a case errored or nothing was judged, or (with
``--llmeval-exit-on all``, the default) a case failed that was not an expected miss;
``partial`` when the run was cut short or a gate judged only part of its cases; ``passed``
otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Literal

from pydantic import BaseModel, ConfigDict

from pytest_llmeval.report.headlines import Headline, format_headline, headlines
from pytest_llmeval.report.verdict import Fault, Verdict, is_broken, nothing_judged
from pytest_llmeval.rundir.models import Interrupted
from pytest_llmeval.rundir.read import RunRecord

__all__ = [
    "EntryKind",
    "ListedEntry",
    "RunSummary",
    "RunVerdict",
    "history_lines",
    "run_summary",
    "run_verdict",
    "runner_text",
    "started_text",
]

RunVerdict = Literal["passed", "failed", "partial"]
EntryKind = Literal["foreign", "broken", "unfinished", "in use"]


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
    verdict: RunVerdict
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
    a session is writing it now."""
    message: str
    """One line: what is wrong, and what to do."""


def run_summary(record: RunRecord) -> RunSummary:
    """A run dir read back (:func:`~pytest_llmeval.rundir.read.read_run`) at a glance; it needs
    the run's ``report.json``."""
    manifest, report = record.manifest, record.report
    assert report is not None, "run_summary needs a report"
    verdict, reasons = run_verdict(record)
    runner = str(manifest.settings.get("runner") or "?")
    return RunSummary(
        name=record.path.name,
        path=str(record.path),
        run_id=manifest.run_id,
        started=manifest.started,
        runner=runner,
        models=_models(record, runner),
        cases=report.totals.total,
        suites=headlines(report),
        verdict=verdict,
        reasons=reasons,
        interrupted=report.interrupted or manifest.interrupted,
        note=_note(record),
    )


def run_verdict(record: RunRecord) -> tuple[RunVerdict, list[str]]:
    """The run's verdict from its report and results, and the reasons for it."""
    report = record.report
    assert report is not None
    results = record.results
    judged = Verdict(
        gate_results=list(report.gates.results) if report.gates is not None else [],
        baseline_diff=report.baseline,
        broken=[r.nodeid for r in results if is_broken(r)],
        errored=[r.nodeid for r in results if r.outcome == "error" and not is_broken(r)],
    )
    unjudged = nothing_judged(results)
    if unjudged is not None and report.interrupted is None:
        judged.faults.append(Fault("unjudged", unjudged))
    reasons = [f"gate {g.gate.name} failed" for g in judged.failed_gates]
    if judged.baseline_diff is not None and judged.baseline_diff.regressed:
        reasons.append(f"{judged.baseline_diff.pass_to_fail} regression(s) against the baseline")
    if judged.errored or judged.broken:
        reasons.append(f"{len(judged.errored) + len(judged.broken)} case(s) errored")
    reasons += [fault.message for fault in judged.faults]
    exit_on = str(record.manifest.settings.get("exit_on") or "all")
    missed = sum(1 for r in results if r.outcome == "failed" and not r.xfailed)
    if missed and exit_on == "all":
        reasons.append(f"{missed} case(s) failed")
    if judged.exit_code(results, exit_on) != 0 or reasons:
        return "failed", reasons
    interrupted = report.interrupted or record.manifest.interrupted
    if interrupted is not None:
        return "partial", [f"cut short ({interrupted.reason})"]
    if judged.partial_gates:
        return "partial", [f"{len(judged.partial_gates)} gate(s) judged a subset of their cases"]
    return "passed", []


def runner_text(summary: RunSummary) -> str:
    """``replay: example-router``, ``openai: gpt-4o-mini``, ``echo``."""
    if not summary.models:
        return summary.runner
    return f"{summary.runner}: {', '.join(summary.models)}"


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


def history_lines(entries: Sequence[RunSummary | ListedEntry]) -> list[str]:
    """The ``runs`` listing: per run dir one line (date, name, runner and model, cases,
    verdict), then one line per suite with its headline numbers; one line for anything
    else."""
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
            head.append("(" + "; ".join(entry.reasons[:3]) + ")")
        lines.append("  ".join(head))
        for suite, rows in entry.suites.items():
            numbers = ", ".join(format_headline(h) for h in rows)
            lines.append(f"    {suite.ljust(width)}  {numbers}")
    return lines


def _models(record: RunRecord, runner: str) -> list[str]:
    found: set[str] = set()
    for fingerprint in record.runners.values():
        model = fingerprint.get("model")
        kind = fingerprint.get("type")
        if isinstance(model, str) and model:
            found.add(model)
        elif isinstance(kind, str) and kind and kind != runner:
            found.add(kind)
    setting = record.manifest.settings.get("model")
    if not found and isinstance(setting, str) and setting:
        found.add(setting)
    return sorted(found)


def _note(record: RunRecord) -> str | None:
    if record.manifest.merged_from:
        return f"merged from {len(record.manifest.merged_from)} shard run dirs"
    shard = record.shard
    return f"shard {shard[0]}/{shard[1]}" if shard else None
