"""The head of report.html: what a reader looks for first.

A line of run facts (runner and model, date, plugin version, tokens, cost, duration, verdict)
and each suite's headline numbers, as ``runs`` and ``compare`` show them
(:mod:`pytest_llmeval.report.headlines`). Everything is read from the ``report.json`` body and
the case results the page is made of, plus the few facts only the session knows when the page
is written (:class:`RunFacts`: ``manifest.json`` is written after it), the verdict among them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.report.headlines import format_headline, headlines
from pytest_llmeval.report.history import reasons_text, started_text
from pytest_llmeval.rundir.models import Report, RunVerdict

__all__ = ["Fact", "HeadlineRow", "RunFacts", "run_facts", "suite_headlines", "verdict_line"]


class RunFacts(BaseModel):
    """What the session knows about its run when it writes the page."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    started: str | None = None
    """When the session started (ISO 8601)."""
    duration_s: float | None = None
    """Wall-clock seconds from the start of the session to the writing of the page."""
    runner: str | None = None
    """The runner asked for (``--llmeval-runner``)."""
    model: str | None = None
    """The model asked for (``--llmeval-model``), if any."""
    verdict: RunVerdict | None = None
    """How the run ended (``manifest.json`` ``verdict``): the writer's own record, never
    judged again from the page's data, which cannot see what only the session knew."""


@dataclass(frozen=True)
class Fact:
    """One fact of the header: a label, its value and a style class (the verdict's)."""

    label: str
    value: str
    cls: str = ""


@dataclass(frozen=True)
class HeadlineRow:
    """One suite's headline numbers, each as ``label value [low-high]``."""

    suite: str
    numbers: tuple[str, ...]


def run_facts(
    report: dict[str, Any], results: Sequence[CaseResult], facts: RunFacts | None
) -> tuple[Fact, ...]:
    """The header's facts; a fact nobody knows is left out (cost without prices)."""
    facts = facts or RunFacts()
    out = [Fact("runner", _runner(report, facts))]
    if facts.started:
        out.append(Fact("date", started_text(facts.started)))
    if report.get("plugin_version") is not None:
        out.append(Fact("plugin", str(report["plugin_version"])))
    tokens = sum(r.usage.total_tokens for r in results)
    out.append(Fact("tokens", f"{tokens:,}"))
    totals = report.get("totals")
    cost = totals.get("cost_usd") if isinstance(totals, dict) else None
    if isinstance(cost, int | float):
        out.append(Fact("cost", f"${cost:,.4f}"))
    if facts.duration_s is not None:
        out.append(Fact("duration", _duration(facts.duration_s)))
    if facts.verdict is not None:
        status = facts.verdict.status
        out.append(Fact("verdict", status, status))
    return tuple(out)


def verdict_line(facts: RunFacts | None) -> Fact | None:
    """The header's verdict line, as ``runs`` gives it: ``failed: gate golden.pass_rate>=0.9
    failed; 3 case(s) errored`` (the first reasons, ``+N more``); ``passed`` alone. ``None``
    when the session's verdict is not known."""
    if facts is None or facts.verdict is None:
        return None
    verdict = facts.verdict
    why = reasons_text(verdict.reasons)
    return Fact("verdict", f"{verdict.status}: {why}" if why else verdict.status, verdict.status)


def suite_headlines(report: dict[str, Any]) -> tuple[HeadlineRow, ...]:
    """Each suite's headline numbers; none when the body is not a whole ``report.json``."""
    try:
        typed = Report.model_validate(report)
    except ValidationError:
        return ()
    return tuple(
        HeadlineRow(suite, tuple(format_headline(h) for h in rows))
        for suite, rows in headlines(typed).items()
    )


def _runner(report: dict[str, Any], facts: RunFacts) -> str:
    """``openai: gpt-4o-mini``, ``replay: example-router``, ``echo``."""
    runner = facts.runner
    models: set[str] = set()
    runners = report.get("runners")
    for fingerprint in runners.values() if isinstance(runners, dict) else ():
        if not isinstance(fingerprint, dict):
            continue
        model, kind = fingerprint.get("model"), fingerprint.get("type")
        if isinstance(model, str) and model:
            models.add(model)
        elif isinstance(kind, str) and kind and kind != runner:
            if runner is None:
                runner = kind
            else:
                models.add(kind)
    if not models and facts.model:
        models.add(facts.model)
    name = runner or "?"
    return f"{name}: {', '.join(sorted(models))}" if models else name


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {rest:02d} s"
