"""Repeated runs of a case: the rule that turns K outcomes into one verdict, and the
statistics that say how sure that verdict is (pure functions).

* :func:`wilson` is the Wilson score interval (95%) of ``c`` passes out of ``n``;
* a **repeat rule** (``--llmeval-repeat-rule``) decides a case from its outcomes:
  ``all``, ``any``, ``majority`` (more than half passed; the default), ``rate>=X`` (the share
  passed), ``lower>=X`` (the Wilson lower bound), over the runs that were judged; a run that
  errored (an infrastructure fault, or a score that could not be judged) makes the case an
  error, whatever the others gave: its record still lists every run's outcome;
* :func:`pass_at_k` and :func:`pass_hat_k` are the unbiased estimators over cases with ``n``
  judged repeats and ``c`` passes: pass@k = mean of ``1 - C(n-c, k) / C(n, k)`` (at least one
  of k draws passes), pass^k = mean of ``C(c, k) / C(n, k)`` (all k pass).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from pytest_llmeval.core.errors import RunnerError
from pytest_llmeval.core.models import CaseScore, Transcript

Z95 = 1.959963984540054
_RULE = re.compile(r"^(all|any|majority|(rate|lower)\s*>=\s*(\d*\.?\d+))$")


def wilson(passed: int, n: int, z: float = Z95) -> tuple[float | None, float | None]:
    """The Wilson score interval of ``passed`` out of ``n``; ``(None, None)`` for n = 0."""
    if n == 0:
        return None, None
    p = passed / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, center - half), min(1.0, center + half)


Rule = Callable[[int, int], bool]
"""``(passed, judged) -> case passed``."""


def parse_rule(text: str) -> Rule:
    """A repeat rule from its text; ``ValueError`` naming the accepted forms."""
    match = _RULE.match(text.strip())
    if match is None:
        raise ValueError(
            f"bad repeat rule {text!r}: expected all, any, majority, rate>=X or lower>=X "
            "(X between 0 and 1)"
        )
    name = match[1]
    if name == "all":
        return lambda c, n: n > 0 and c == n
    if name == "any":
        return lambda c, n: c > 0
    if name == "majority":
        return lambda c, n: 2 * c > n
    threshold = float(match[3])
    if not 0 <= threshold <= 1:
        raise ValueError(f"bad repeat rule {text!r}: X must be between 0 and 1")
    if match[2] == "rate":
        return lambda c, n: n > 0 and c / n >= threshold - 1e-12
    return lambda c, n: (wilson(c, n)[0] or 0.0) >= threshold - 1e-12


def summary(outcomes: Sequence[str]) -> dict[str, Any]:
    """``results.jsonl`` ``repeats``: n, passed, errors, pass_rate with its Wilson interval
    (low, high), outcomes in repeat order, flaky (both passed and failed)."""
    passed = outcomes.count("passed")
    failed = outcomes.count("failed")
    judged = passed + failed
    low, high = wilson(passed, judged)
    return {
        "n": len(outcomes),
        "passed": passed,
        "errors": outcomes.count("error"),
        "pass_rate": _round(passed / judged) if judged else None,
        "low": _round(low),
        "high": _round(high),
        "outcomes": list(outcomes),
        "flaky": passed > 0 and failed > 0,
    }


def score_repeats(
    score: Callable[[Transcript], CaseScore], runs: Sequence[Transcript], rule_text: str
) -> CaseScore:
    """One verdict from a case's runs: each run that did not fail is scored, the rule decides
    over the judged runs, scores are averaged over them, and the first judged run's details
    are kept with every run's scores beside them. A run that errored (its transcript, or a
    :class:`RunnerError` from ``score``) makes the verdict an error (``error``), with the
    record of the other runs kept."""
    rule = parse_rule(rule_text)
    outcomes: list[str] = []
    judged: list[CaseScore] = []
    errors: list[tuple[int, str, str]] = []
    """(repeat number from 1, kind, message) of each run that errored."""
    for number, run in enumerate(runs, 1):
        if run.error is not None:
            outcomes.append("error")
            errors.append((number, run.error_kind or "agent", run.error))
            continue
        try:
            one = score(run)
        except RunnerError as exc:
            outcomes.append("error")
            errors.append((number, exc.kind, str(exc)))
            continue
        if one.skipped:
            outcomes.append("error")
            errors.append((number, "agent", f"not judged: {one.skipped}"))
            continue
        outcomes.append("passed" if one.passed else "failed")
        judged.append(one)
    stats = summary(outcomes)
    passes = stats["passed"]
    error, error_kind = _errored(errors, len(runs))
    if not judged:
        return CaseScore(passed=False, repeats=stats, error=error, error_kind=error_kind)
    passed = rule(passes, len(judged))
    keys = sorted({k for one in judged for k in one.scores})
    scores = {k: sum(one.scores.get(k, 0.0) for one in judged) / len(judged) for k in keys}
    details = {**judged[0].details, "repeat_scores": [one.scores for one in judged]}
    if "pred" in details:  # a label-valued verdict (When2Call): every run's label, in order
        details["repeat_labels"] = [one.details.get("pred") for one in judged]
    failure = None
    if not passed:
        missed = next((one.failure for one in judged if not one.passed), None)
        failure = (
            f"repeat rule {rule_text}: {passes}/{len(judged)} runs passed "
            f"({', '.join(outcomes)})" + (f"; first miss: {missed}" if missed else "")
        )
    return CaseScore(
        passed=passed,
        scores=scores,
        failure=failure,
        details=details,
        repeats=stats,
        error=error,
        error_kind=error_kind,
    )


def _errored(errors: Sequence[tuple[int, str, str]], runs: int) -> tuple[str | None, str | None]:
    """The case's error message and kind when some of its ``runs`` errored: how many, and the
    first one's message; ``(None, None)`` when none did."""
    if not errors:
        return None, None
    number, kind, message = errors[0]
    return f"{len(errors)} of {runs} repeats errored; repeat {number}: {message}", kind


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def pass_at_k(counts: Sequence[tuple[int, int]], k: int) -> float | None:
    """Mean of ``1 - C(n-c, k) / C(n, k)`` over the cases with ``n >= k`` judged repeats."""
    values = [1 - math.comb(n - c, k) / math.comb(n, k) for n, c in counts if n >= k]
    return sum(values) / len(values) if values else None


def pass_hat_k(counts: Sequence[tuple[int, int]], k: int) -> float | None:
    """Mean of ``C(c, k) / C(n, k)`` over the cases with ``n >= k`` judged repeats."""
    values = [math.comb(c, k) / math.comb(n, k) for n, c in counts if n >= k]
    return sum(values) / len(values) if values else None


def suite_statistics(repeats: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What a suite's aggregate gains when its cases ran repeatedly: ``pass_at_k`` and
    ``pass_hat_k`` (keys ``"1"`` .. ``"K"``), the pooled pass rate of the repeats with its
    interval (``repeat_pass_rate``, ``pass_rate.low``, ``pass_rate.high``), ``flaky``."""
    counts = [(r["passed"] + (r["n"] - r["passed"] - r["errors"]), r["passed"]) for r in repeats]
    most = max((n for n, _ in counts), default=0)
    passed = sum(c for _, c in counts)
    judged = sum(n for n, _ in counts)
    low, high = wilson(passed, judged)
    return {
        "pass_at_k": {str(k): _round(pass_at_k(counts, k)) for k in range(1, most + 1)},
        "pass_hat_k": {str(k): _round(pass_hat_k(counts, k)) for k in range(1, most + 1)},
        "repeat_pass_rate": _round(passed / judged) if judged else None,
        "pass_rate.low": _round(low),
        "pass_rate.high": _round(high),
        "flaky": sum(1 for r in repeats if r["flaky"]),
        "repeats": {"cases": len(repeats), "runs": sum(r["n"] for r in repeats)},
    }
