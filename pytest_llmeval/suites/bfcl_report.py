"""What the BFCL suite reports: per-category accuracy and the official group scores.

``report.json`` ``suites.bfcl`` (:class:`BfclSection`), beside the usual counts:

* ``mode``: ``fc`` or ``prompt`` (``mixed`` when manifests of both modes ran);
* ``categories.<category>``: the usual counts plus ``accuracy`` = passed / (total - skipped),
  where an errored item counts as wrong (the leaderboard scores a missing answer as wrong);
* the official group scores (:func:`pytest_llmeval.scoring.bfcl.aggregate`, as ``bfcl
  evaluate`` computes them from the same per-item results), each ``{accuracy, total,
  missing}``:

  - ``non_live``: the unweighted mean of simple, ``multiple``, ``parallel`` and
    ``parallel_multiple``, where ``simple`` is the unweighted mean of the three languages;
  - ``simple``: that mean of ``simple_python``, ``simple_java`` and ``simple_javascript``;
  - ``live``: ``live_simple``, ``live_multiple``, ``live_parallel``,
    ``live_parallel_multiple``, weighted by item count;
  - ``multi_turn``: the unweighted mean of its four categories;
  - ``irrelevance``: the mean of ``irrelevance`` and ``live_irrelevance``;
  - ``relevance``: ``live_relevance``;
  - ``overall_without_agentic``: the official overall (10/10/10/30/40 over non-live, live,
    irrelevance, multi-turn and agentic) with the agentic group, which needs the network,
    counted 0, as the leaderboard counts a group not run: at most 0.6.

  A group with a category that was not run has ``accuracy: null`` (the leaderboard's N/A)
  and names it in ``missing``, so a gate on it fails rather than judging a part.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.rundir.models import Number, SuiteSection
from pytest_llmeval.scoring.bfcl.aggregate import CategoryScore, GroupScore, aggregate

__all__ = [
    "GROUPS",
    "BfclGroup",
    "BfclSection",
    "bfcl_aggregate",
    "console_lines",
    "markdown_lines",
]

GROUPS = (
    "overall_without_agentic",
    "non_live",
    "simple",
    "live",
    "multi_turn",
    "irrelevance",
    "relevance",
)
"""The group scores' names in ``suites.bfcl``, in the order they are shown."""


class BfclGroup(BaseModel):
    """One official group score."""

    model_config = ConfigDict(extra="forbid")

    accuracy: Number | None
    """The official score; ``None`` when a category of the group was not run."""
    total: int
    """Items behind it (the official count for a category not run)."""
    missing: list[str] = Field(default_factory=list)
    """Its categories that were not run."""


class BfclSection(SuiteSection):
    """``report.json`` ``suites.bfcl``."""

    mode: str | None
    overall_without_agentic: BfclGroup
    non_live: BfclGroup
    simple: BfclGroup
    live: BfclGroup
    multi_turn: BfclGroup
    irrelevance: BfclGroup
    relevance: BfclGroup


def _scores(results: Sequence[CaseResult]) -> dict[str, CategoryScore]:
    tally: dict[str, list[int]] = {}
    for result in results:
        if result.outcome == "skipped" or result.category is None:
            continue
        counts = tally.setdefault(result.category, [0, 0])
        counts[0] += result.outcome == "passed"
        counts[1] += 1
    return {name: CategoryScore(correct, total) for name, (correct, total) in tally.items()}


def _group(score: GroupScore) -> dict[str, Any]:
    accuracy = None if score.missing else round(score.accuracy, 6)
    return {"accuracy": accuracy, "total": score.total_count, "missing": list(score.missing)}


def bfcl_aggregate(results: Sequence[CaseResult]) -> dict[str, Any]:
    """The suite's own part of ``suites.bfcl`` (module docstring)."""
    scores = _scores(results)
    summary = aggregate(scores)
    modes = {r.details.get("mode") for r in results if r.details.get("mode")}
    body: dict[str, Any] = {
        "mode": modes.pop() if len(modes) == 1 else ("mixed" if modes else None),
        "categories": {
            name: {"accuracy": round(score.accuracy, 6) if score.total else None}
            for name, score in sorted(scores.items())
        },
    }
    groups = {
        "overall_without_agentic": summary.overall,
        "non_live": summary.non_live,
        "simple": summary.simple,
        "live": summary.live,
        "multi_turn": summary.multi_turn,
        "irrelevance": summary.irrelevance,
        "relevance": summary.relevance,
    }
    for name, score in groups.items():
        if name == "overall_without_agentic":  # agentic is never run: only the rest decide
            agentic = {"web_search", "memory"}
            score = GroupScore(
                score.accuracy,
                score.total_count,
                tuple(m for m in score.missing if not m.startswith(tuple(agentic))),
            )
        body[name] = _group(score)
    return body


def _percent(value: Any) -> str:
    return "n/a" if value is None else f"{float(value) * 100:.2f}%"


def console_lines(artifact: dict[str, Any]) -> list[str]:
    """The terminal lines of one manifest's artifact: the groups run, then each category."""
    groups = [
        f"{name} {_percent(artifact[name]['accuracy'])}"
        for name in GROUPS
        if isinstance(artifact.get(name), dict) and artifact[name].get("accuracy") is not None
    ]
    head = f"bfcl {artifact.get('file')} ({artifact.get('mode')})"
    lines = [f"{head}: {', '.join(groups)}" if groups else head]
    cats = artifact.get("categories") or {}
    parts = [
        f"{name} {_percent(c.get('accuracy'))} ({c.get('passed')}/{c.get('judged')})"
        for name, c in cats.items()
    ]
    if parts:
        lines.append("  " + ", ".join(parts))
    return lines


def markdown_lines(artifact: dict[str, Any]) -> list[str]:
    """A ``summary.md`` section: the group scores and a table of the categories."""
    lines = [f"### BFCL `{artifact.get('file')}` ({artifact.get('mode')})", ""]
    lines += ["| score | accuracy | missing |", "| --- | --- | --- |"]
    for name in GROUPS:
        group = artifact.get(name) or {}
        missing = ", ".join(group.get("missing") or []) or "-"
        lines.append(f"| {name} | {_percent(group.get('accuracy'))} | {missing} |")
    lines += ["", "| category | passed | accuracy |", "| --- | --- | --- |"]
    for name, c in (artifact.get("categories") or {}).items():
        lines.append(
            f"| {name} | {c.get('passed')}/{c.get('judged')} | {_percent(c.get('accuracy'))} |"
        )
    return lines


def file_artifact(file: str, results: Sequence[CaseResult]) -> dict[str, Any]:
    """One manifest's figures (``bfcl/<stem>.json``): its groups and categories."""
    body = bfcl_aggregate(results)
    counts: dict[str, dict[str, int]] = {}
    for result in results:
        if result.outcome == "skipped" or result.category is None:
            continue
        c = counts.setdefault(result.category, {"passed": 0, "judged": 0})
        c["passed"] += result.outcome == "passed"
        c["judged"] += 1
    body["categories"] = {
        name: {**counts[name], **body["categories"][name]} for name in sorted(counts)
    }
    return {"file": file, **body}
