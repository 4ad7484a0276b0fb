"""When2Call dataset metrics (``report.json`` ``suites.when2call``) and their short forms.

From the scored cases (an error case has no prediction and is counted in ``errors`` only):

* ``n``, ``protocol``, ``prompt_format`` (the format the prompts were built in, ``auto``
  resolved), ``primary`` (the ``score`` rule deciding pass/fail);
* ``fallbacks``: ``judge`` (judge replies left unreadable, labelled by ``judge_fallback``) and
  ``mcq_string`` (questions whose scores were not all finite, asked in chat by
  ``loglik_fallback``), so a gate ``when2call.fallbacks.mcq_string <= 0`` can bound them;
* ``judge_unread_files`` and the suite's own gate ``when2call.judge_unread_files == 0``, only
  when ``judge_fallback`` labelled some case: the files whose every judged case fell back (the
  judge never answered one readably, so every label is the fallback's, not a judgement). Such a
  run fails whatever other gates say;
* ``acc``, ``acc_norm``, ``acc_bytes``, ``acc_tokens``, each with ``_stderr`` as lm-eval
  computes it (``acc``/``acc_norm`` are lm-eval's; the other two are this project's
  extensions; ``null`` under mcq-string, which has one pick);
* from the deciding prediction: ``labels``, ``confusion_matrix`` (4×4, rows gold, columns
  predicted, in :data:`LABELS` order; an unparsed reply is in no column), ``per_class``,
  ``macro_f1_3`` (over the three labels that occur as gold) and ``macro_f1_4`` (all four;
  capped at 0.75 since ``direct`` is never gold), ``tool_hallucination_rate`` over
  ``tool_hallucination_n`` (the official definition: gold ``cannot_answer`` with zero tools,
  predicted ``tool_call``), ``tool_hallucination_rate_all`` over ``tool_hallucination_all_n``
  (every gold ``cannot_answer``: the denominator the README's LLM-judge column seems to use),
  ``per_gold_accuracy`` and ``label_counts`` (per gold label, as the official judge
  aggregation prints them; ``direct`` is the judge's ``direct_answer``), ``unparsed``;
* with repeats, ``stability``: Stability@k, MeanConsistency@k, StableCorrectRate,
  StableWrongRate, ModeCorrectRate, normalised entropy, flip rate and MeanAccAcrossRuns
  (:func:`~pytest_llmeval.scoring.classification.stability`).

Rates are rounded to six decimals, like every report value; ``null`` when undefined.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from pytest_llmeval.core.markdown import md_code
from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.rundir.models import Number, SuiteSection
from pytest_llmeval.scoring.classification import (
    accuracy,
    confusion_matrix,
    macro_f1,
    mean_stderr,
    per_class,
    stability,
)
from pytest_llmeval.suites.base import base_totals

LABELS = ("direct", "tool_call", "request_for_info", "cannot_answer")
"""The options in the official fixed order: index 0..3 of every choice list."""
GOLD_LABELS = LABELS[1:]
"""The labels that occur as gold (``direct`` is always a distractor)."""
RULES = ("acc", "acc_norm", "acc_bytes", "acc_tokens")


class When2CallFallbacks(BaseModel):
    """How many cases a configured fallback labelled (each one is an ``audit.jsonl`` line)."""

    model_config = ConfigDict(extra="forbid")

    judge: int = 0
    """Judge replies still unreadable after the repair turn, labelled by ``judge_fallback``."""
    mcq_string: int = 0
    """Questions whose four scores were not all finite, asked through the mcq-string
    protocol on the same runner's chat endpoint (``loglik_fallback``)."""


class When2CallSection(SuiteSection):
    """``report.json`` ``suites.when2call``; the rest (per-class figures, label
    counts, stability under repeats) stays as extra fields."""

    n: int
    protocol: str | None
    prompt_format: str | None = None
    """The prompt format of the cases (``auto`` resolved; comma-joined when they differ)."""
    fallbacks: When2CallFallbacks = When2CallFallbacks()
    """Cases a configured fallback labelled, by kind."""
    primary: str | None
    acc: Number | None
    acc_stderr: Number | None
    acc_norm: Number | None
    acc_norm_stderr: Number | None
    labels: list[str]
    confusion_matrix: list[list[int]]
    macro_f1_3: Number | None
    macro_f1_4: Number | None
    tool_hallucination_rate: Number | None
    tool_hallucination_n: int
    unparsed: int


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def aggregate(results: Sequence[CaseResult]) -> dict[str, Any]:
    """The suite's metrics over ``results`` (see the module docstring)."""
    scored = [r for r in results if r.outcome in ("passed", "failed") and "gold" in r.details]
    rows = [r.details for r in scored]
    gold = [d["gold"] for d in rows]
    pred = [d.get("pred") for d in rows]
    protocols = sorted({d["protocol"] for d in rows})
    primaries = sorted({d["primary"] for d in rows})
    formats = sorted({str(d.get("prompt_format")) for d in rows if d.get("prompt_format")})
    out: dict[str, Any] = {
        **base_totals(results),
        "n": len(rows),
        "protocol": protocols[0] if len(protocols) == 1 else ",".join(protocols) or None,
        "primary": primaries[0] if len(primaries) == 1 else ",".join(primaries) or None,
        "prompt_format": ",".join(formats) or None,
        "fallbacks": {
            "judge": sum(1 for d in rows if d.get("fallback") == "judge"),
            "mcq_string": sum(1 for d in rows if d.get("fallback") == "mcq_string"),
        },
    }
    for rule in RULES:
        picks = [d.get(f"pred_{rule}") for d in rows]
        if rule == "acc" or (rows and all(p is not None for p in picks)):
            hits = [p == g for p, g in zip(picks, gold, strict=True)]
            out[rule] = _round(accuracy(hits))
            out[f"{rule}_stderr"] = _round(mean_stderr(hits))
        else:
            out[rule], out[f"{rule}_stderr"] = None, None
    matrix = confusion_matrix(gold, pred, LABELS)
    classes = per_class(matrix, LABELS, supports=[gold.count(label) for label in LABELS])
    hallucination = [d for d in rows if d["gold"] == "cannot_answer" and d["n_tools"] == 0]
    cannot = [d for d in rows if d["gold"] == "cannot_answer"]
    out.update(
        labels=list(LABELS),
        confusion_matrix=matrix,
        per_class={
            label: {k: _round(v) if k != "support" else v for k, v in body.items()}
            for label, body in classes.items()
        },
        macro_f1_3=_round(macro_f1(classes, GOLD_LABELS)) if rows else None,  # n=0: n/a
        macro_f1_4=_round(macro_f1(classes, LABELS)) if rows else None,
        tool_hallucination_rate=_round(
            accuracy([d.get("pred") == "tool_call" for d in hallucination])
        ),
        tool_hallucination_n=len(hallucination),
        tool_hallucination_rate_all=_round(
            accuracy([d.get("pred") == "tool_call" for d in cannot])
        ),
        tool_hallucination_all_n=len(cannot),
        per_gold_accuracy={
            label: _round(accuracy([d.get("pred") == label for d in rows if d["gold"] == label]))
            for label in GOLD_LABELS
        },
        label_counts={
            label: {
                p: sum(1 for d in rows if d["gold"] == label and d.get("pred") == p) for p in LABELS
            }
            for label in GOLD_LABELS
        },
        unparsed=sum(1 for d in rows if d.get("unparsed")),
    )
    if out["fallbacks"]["judge"]:
        out.update(_unread_gate(scored))
    repeated = [d for d in rows if d.get("repeat_labels")]
    if repeated:
        block = stability(
            [d["repeat_labels"] for d in repeated], [d["gold"] for d in repeated], LABELS
        )
        out["stability"] = {k: _round(v) for k, v in block.items()}
    return out


def _unread_gate(scored: Sequence[CaseResult]) -> dict[str, Any]:
    """``judge_unread_files`` and its gate: the files whose every judged case was labelled by
    ``judge_fallback`` (none readable), which fail the run."""
    by_file: dict[str, list[bool]] = {}
    for result in scored:
        if result.details.get("protocol") == "judge":
            by_file.setdefault(result.file, []).append(result.details.get("fallback") == "judge")
    unread = sorted(name for name, fell in by_file.items() if fell and all(fell))
    if unread:
        message = (
            f"the judge answered no case readably in {len(unread)} file(s): every judged case "
            f"was labelled by judge_fallback ({', '.join(unread[:5])}"
            + (", ..." if len(unread) > 5 else "")
            + ")"
        )
    else:
        message = "the judge answered some case of every file readably"
    gate = {
        "metric": "judge_unread_files",
        "kind": "zero",
        "value": len(unread),
        "threshold": 0,
        "status": "fail" if unread else "pass",
        "message": message,
    }
    return {"judge_unread_files": len(unread), "gates": {"judge_unread_files": gate}}


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def headline(metrics: dict[str, Any]) -> str:
    """One line: protocol, the deciding accuracy, both accuracies, F1s and Tool-Hall."""
    primary = metrics.get("primary") or "acc"
    parts = [
        f"{metrics.get('protocol') or 'no case scored'}, n={metrics.get('n')}",
        f"{primary} {_pct(metrics.get(primary))}",
    ]
    parts += [
        f"{rule} {_pct(metrics.get(rule))}" for rule in ("acc", "acc_norm") if rule != primary
    ]
    parts += [
        f"macro-F1 {_pct(metrics.get('macro_f1_3'))} (3 labels) / "
        f"{_pct(metrics.get('macro_f1_4'))} (4)",
        f"tool hallucination {_pct(metrics.get('tool_hallucination_rate'))} "
        f"(n={metrics.get('tool_hallucination_n')})",
    ]
    if metrics.get("unparsed"):
        parts.append(f"unparsed {metrics['unparsed']}")
    if metrics.get("prompt_format"):
        parts.append(f"prompt format {metrics['prompt_format']}")
    fallbacks = metrics.get("fallbacks") or {}
    used = [f"{kind} {count}" for kind, count in fallbacks.items() if count]
    if used:
        parts.append("fallbacks: " + ", ".join(used))
    return ", ".join(parts)


def _matrix_rows(metrics: dict[str, Any]) -> list[tuple[str, list[int]]]:
    labels = metrics.get("labels") or list(LABELS)
    return list(zip(labels, metrics.get("confusion_matrix") or [], strict=False))


def console(metrics: dict[str, Any]) -> list[str]:
    """Terminal lines: the headline and the confusion matrix (gold rows, predicted columns)."""
    lines = [f"when2call {metrics.get('file')}: {headline(metrics)}"]
    labels = metrics.get("labels") or list(LABELS)
    width = max(len(label) for label in labels)
    lines.append("  " + "gold \\ predicted".ljust(width) + "".join(f"{x:>18}" for x in labels))
    for label, row in _matrix_rows(metrics):
        lines.append("  " + label.ljust(width) + "".join(f"{v:>18}" for v in row))
    return lines


def markdown(metrics: dict[str, Any]) -> list[str]:
    """``summary.md`` section: the headline and the confusion matrix as a table."""
    labels = metrics.get("labels") or list(LABELS)
    out = [f"## When2Call {md_code(metrics.get('file'))}", "", headline(metrics), ""]
    out.append("| gold \\ predicted | " + " | ".join(labels) + " |")
    out.append("|---|" + "---:|" * len(labels))
    for label, row in _matrix_rows(metrics):
        out.append(f"| {label} | " + " | ".join(str(v) for v in row) + " |")
    return [*out, ""]
