"""Pure classification metrics over a fixed label list (When2Call's decision labels).

Every function takes the labels explicitly, so a class that is never predicted (or never
gold) still has its row and column: the confusion matrix is always ``len(labels)`` square,
rows gold, columns predicted, in the given order (the official script's sklearn call drops
absent labels and then fails to name the rows).

Conventions, stated once:

* ``per_class`` reports ``precision`` / ``recall`` / ``f1`` as ``None`` when undefined (no
  prediction of the class, no gold case of it, or both).
* A macro average counts an undefined F1 as 0, as sklearn's ``f1_score(average="macro",
  labels=..., zero_division=0)`` does. That is why a 4-label macro F1 over When2Call, where
  ``direct`` is never gold, is capped at 0.75.
* :func:`mean_stderr` is lm-evaluation-harness's ``mean_stderr``: the sample standard
  deviation (``n - 1``) over ``sqrt(n)``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any


def confusion_matrix(
    gold: Sequence[str], predicted: Sequence[str | None], labels: Sequence[str]
) -> list[list[int]]:
    """``m[i][j]`` = cases of gold ``labels[i]`` predicted ``labels[j]``; pairs whose gold or
    prediction is not a label (an unparsed reply: ``None``) are left out."""
    index = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for g, p in zip(gold, predicted, strict=True):
        if g in index and p is not None and p in index:
            matrix[index[g]][index[p]] += 1
    return matrix


def per_class(
    matrix: Sequence[Sequence[int]],
    labels: Sequence[str],
    supports: Sequence[int] | None = None,
) -> dict[str, dict[str, Any]]:
    """Precision, recall, F1 and support of each label (``None`` where undefined).

    ``supports`` (gold cases per label) defaults to the matrix's row sums; give it when some
    cases are in no column (an unparsed reply still counts against recall)."""
    out: dict[str, dict[str, Any]] = {}
    for i, label in enumerate(labels):
        hit = matrix[i][i]
        support = supports[i] if supports is not None else sum(matrix[i])
        predicted = sum(row[i] for row in matrix)
        precision = hit / predicted if predicted else None
        recall = hit / support if support else None
        f1: float | None
        if precision is None or recall is None:
            f1 = None
        elif precision + recall == 0:
            f1 = 0.0
        else:
            f1 = 2 * precision * recall / (precision + recall)
        out[label] = {"precision": precision, "recall": recall, "f1": f1, "support": support}
    return out


def macro_f1(classes: dict[str, dict[str, Any]], labels: Sequence[str]) -> float | None:
    """Mean F1 over ``labels`` (an undefined F1 counts as 0); ``None`` for no labels."""
    if not labels:
        return None
    return sum(classes[label]["f1"] or 0.0 for label in labels) / len(labels)


def accuracy(hits: Sequence[bool]) -> float | None:
    """The share of hits; ``None`` when there is no case."""
    return sum(hits) / len(hits) if hits else None


def mean_stderr(hits: Sequence[bool]) -> float | None:
    """Standard error of the mean of 0/1 outcomes, as lm-eval computes it (``None`` for n<2)."""
    n = len(hits)
    if n < 2:
        return None
    mean = sum(hits) / n
    variance = sum((float(h) - mean) ** 2 for h in hits) / (n - 1)
    return math.sqrt(variance) / math.sqrt(n)


def argmax_first(values: Sequence[float]) -> int:
    """The index of the largest value; the first one on ties (``numpy.argmax``'s rule)."""
    best = 0
    for i, value in enumerate(values):
        if value > values[best]:
            best = i
    return best


def stability(
    runs: Sequence[Sequence[str | None]], gold: Sequence[str], labels: Sequence[str]
) -> dict[str, float | None]:
    """Seed-003's stability metrics over cases' labels in run order (``None``: no label).

    The modal label of a case is its most frequent one (ties: the first in ``labels``, then a
    missing label last); ``m`` its count among the case's ``k`` runs. Stability@k: share of
    cases with ``m == k``; MeanConsistency@k: mean ``m / k``; StableCorrectRate /
    StableWrongRate: ``m == k`` with the mode right / wrong; ModeCorrectRate: the mode right;
    normalised entropy: mean of ``H / log2 |labels|``; flip rate: mean share of consecutive
    runs whose labels differ; MeanAccAcrossRuns: mean share of runs right.
    """
    cases = [(list(r), g) for r, g in zip(runs, gold, strict=True) if r]
    if not cases:
        keys = ("stability_at_k", "mean_consistency_at_k", "stable_correct_rate",
                "stable_wrong_rate", "mode_correct_rate", "normalized_entropy", "flip_rate",
                "mean_acc_across_runs")  # fmt: skip
        return dict.fromkeys(keys)
    order = {label: i for i, label in enumerate(labels)}
    stats = {k: 0.0 for k in ("stable", "consistency", "stable_right", "stable_wrong",
                              "mode_right", "entropy", "flips", "acc")}  # fmt: skip
    flip_cases = 0
    for labelled, right in cases:
        k = len(labelled)
        counts: dict[str | None, int] = {}
        for label in labelled:
            counts[label] = counts.get(label, 0) + 1
        mode = min(counts, key=lambda x: (-counts[x], order.get(x, len(order)) if x else 1 << 30))
        m = counts[mode]
        stats["stable"] += m == k
        stats["consistency"] += m / k
        stats["stable_right"] += m == k and mode == right
        stats["stable_wrong"] += m == k and mode != right
        stats["mode_right"] += mode == right
        entropy = -sum((c / k) * math.log2(c / k) for c in counts.values())
        stats["entropy"] += entropy / math.log2(len(labels)) if len(labels) > 1 else 0.0
        if k > 1:
            flip_cases += 1
            stats["flips"] += sum(a != b for a, b in itertools.pairwise(labelled)) / (k - 1)
        stats["acc"] += sum(label == right for label in labelled) / k
    n = len(cases)
    return {
        "stability_at_k": stats["stable"] / n,
        "mean_consistency_at_k": stats["consistency"] / n,
        "stable_correct_rate": stats["stable_right"] / n,
        "stable_wrong_rate": stats["stable_wrong"] / n,
        "mode_correct_rate": stats["mode_right"] / n,
        "normalized_entropy": stats["entropy"] / n,
        "flip_rate": stats["flips"] / flip_cases if flip_cases else None,
        "mean_acc_across_runs": stats["acc"] / n,
    }


def choice_digit(reply: str, n_options: int) -> int | None:
    """The option a reply names by number: its first digit below ``n_options`` (at most 10
    options), ``None`` when it has none (an unparsed reply)."""
    for char in reply:
        if char.isascii() and char.isdigit() and int(char) < n_options:
            return int(char)
    return None
