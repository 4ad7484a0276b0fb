"""The official group scores, from per-category results (the leaderboard's aggregation).

* A category's accuracy is correct / total. A category not evaluated counts as accuracy 0 over
  its official item count (:data:`OFFICIAL_COUNTS`), and the groups holding it name it in
  ``missing`` (the leaderboard shows such a summary as ``N/A``; the overall scores still count
  it as 0).
* Non-live: simple is the unweighted mean of ``simple_python``, ``simple_java`` and
  ``simple_javascript``; the AST summary is the unweighted mean of simple, ``multiple``,
  ``parallel`` and ``parallel_multiple``.
* Live: the mean of ``live_simple``, ``live_multiple``, ``live_parallel`` and
  ``live_parallel_multiple`` weighted by item count.
* Multi-turn: the unweighted mean of its four categories.
* Agentic: the unweighted mean of web search (mean of ``web_search_base`` and
  ``web_search_no_snippet``) and memory (mean of ``memory_kv``, ``memory_vector`` and
  ``memory_rec_sum``).
* Hallucination: irrelevance is the unweighted mean of ``irrelevance`` and
  ``live_irrelevance``; relevance is ``live_relevance``.
* Overall: non-live, live, irrelevance, multi-turn and agentic weighted 10/10/10/30/40. With
  the agentic categories not run (this suite leaves them out), that group counts 0: report it
  as the overall *without agentic*.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

OFFICIAL_COUNTS: dict[str, int] = {
    "simple_python": 400,
    "simple_java": 100,
    "simple_javascript": 50,
    "multiple": 200,
    "parallel": 200,
    "parallel_multiple": 200,
    "irrelevance": 240,
    "live_simple": 258,
    "live_multiple": 1053,
    "live_parallel": 16,
    "live_parallel_multiple": 24,
    "live_irrelevance": 884,
    "live_relevance": 16,
    "multi_turn_base": 200,
    "multi_turn_miss_func": 200,
    "multi_turn_miss_param": 200,
    "multi_turn_long_context": 200,
    "web_search_base": 100,
    "web_search_no_snippet": 100,
    "memory_kv": 155,
    "memory_vector": 155,
    "memory_rec_sum": 155,
}
"""Items per category in ``bfcl-eval==2026.3.23``: the weight of a category not evaluated."""

OVERALL_WEIGHTS = (10, 10, 10, 30, 40)
"""Weights of non-live, live, irrelevance, multi-turn and agentic in the overall score."""


@dataclass(frozen=True)
class CategoryScore:
    """One category's result: items correct out of items scored."""

    correct: int
    total: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0


@dataclass(frozen=True)
class GroupScore:
    """An accuracy with the item count behind it and the categories that were not evaluated."""

    accuracy: float
    total_count: int
    missing: tuple[str, ...] = ()


@dataclass(frozen=True)
class BfclSummary:
    """Every official group score, and each category's own."""

    overall: GroupScore
    non_live: GroupScore
    simple: GroupScore
    live: GroupScore
    multi_turn: GroupScore
    agentic: GroupScore
    web_search: GroupScore
    memory: GroupScore
    irrelevance: GroupScore
    relevance: GroupScore
    categories: dict[str, GroupScore] = field(default_factory=dict)


def _unweighted(parts: Iterable[GroupScore]) -> GroupScore:
    items = list(parts)
    return GroupScore(
        sum(part.accuracy for part in items) / len(items),
        sum(part.total_count for part in items),
        tuple(name for part in items for name in part.missing),
    )


def _weighted(parts: Iterable[GroupScore]) -> GroupScore:
    items = list(parts)
    total = sum(part.total_count for part in items)
    return GroupScore(
        sum(part.accuracy * part.total_count for part in items) / total,
        total,
        tuple(name for part in items for name in part.missing),
    )


def _percentage_weighted(parts: Iterable[GroupScore], weights: Iterable[float]) -> GroupScore:
    items, weight_list = list(parts), list(weights)
    weight_sum = sum(weight_list)
    return GroupScore(
        sum(part.accuracy * (w / weight_sum) for part, w in zip(items, weight_list, strict=True)),
        sum(part.total_count for part in items),
        tuple(name for part in items for name in part.missing),
    )


def aggregate(scores: Mapping[str, CategoryScore]) -> BfclSummary:
    """The official group scores from the categories evaluated (module docstring)."""

    def category(name: str) -> GroupScore:
        if name in scores:
            return GroupScore(scores[name].accuracy, scores[name].total)
        return GroupScore(0.0, OFFICIAL_COUNTS[name], (name,))

    cats = {name: category(name) for name in OFFICIAL_COUNTS}
    simple = _unweighted(cats[n] for n in ("simple_python", "simple_java", "simple_javascript"))
    non_live = _unweighted([simple, cats["multiple"], cats["parallel"], cats["parallel_multiple"]])
    live = _weighted(
        cats[n] for n in ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")
    )
    multi_turn = _unweighted(
        cats[f"multi_turn_{n}"] for n in ("base", "miss_func", "miss_param", "long_context")
    )
    web_search = _unweighted(cats[n] for n in ("web_search_base", "web_search_no_snippet"))
    memory = _unweighted(cats[n] for n in ("memory_kv", "memory_vector", "memory_rec_sum"))
    agentic = _unweighted([web_search, memory])
    irrelevance = _unweighted([cats["irrelevance"], cats["live_irrelevance"]])
    overall = _percentage_weighted(
        [non_live, live, irrelevance, multi_turn, agentic], OVERALL_WEIGHTS
    )
    return BfclSummary(
        overall=overall,
        non_live=non_live,
        simple=simple,
        live=live,
        multi_turn=multi_turn,
        agentic=agentic,
        web_search=web_search,
        memory=memory,
        irrelevance=irrelevance,
        relevance=cats["live_relevance"],
        categories={name: cats[name] for name in OFFICIAL_COUNTS if name in scores},
    )
