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
