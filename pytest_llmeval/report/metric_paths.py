"""Which metric paths a suite can produce, so a gate on a metric that cannot exist is a usage
error before any case runs (with a did-you-mean), not a failed gate at the end.

A suite's section of ``report.json`` is typed (:class:`~pytest_llmeval.rundir.models.SuiteSection`
or the suite's ``section_model``) and its ``aggregate()`` of no results has every key the suite
writes (with ``null`` or empty values); ``report.build`` adds ``categories`` and, for repeated
or judged cases, the repeat and judge statistics. A path is producible when it walks that shape
down to a number:

* a field typed ``dict[str, V]`` (``categories``, ``mean_scores``, ``levels``) takes any key
  (keys may hold dots), unless the empty aggregate already lists its keys (``lax``);
* an untyped extra field is known by the empty aggregate; an empty mapping there takes any key;
* a leaf must be a number, ``Number | None`` or untyped.

A suite whose empty aggregate cannot be built, or that types nothing, accepts every path: the
gate is then checked against the report as before.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Mapping
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel

from pytest_llmeval.core.repeats import suite_statistics
from pytest_llmeval.report.build import judge_statistics
from pytest_llmeval.report.gates import TOTALS
from pytest_llmeval.rundir.models import Gate, Totals
from pytest_llmeval.suites.base import AbsentMetrics, SuiteBase

__all__ = [
    "MAX_SUGGESTIONS",
    "Shape",
    "absent_metric",
    "shape_of",
    "unknown_key",
    "unknown_metric",
]

MAX_SUGGESTIONS = 3
"""How many close metric names a "did you mean" offers."""

_ANY_KEY = "<name>"
"""How a key of an open mapping is written in the listed metric paths."""


class Shape:
    """The metric paths one suite (or the totals) can produce."""

    def __init__(self, model: type[BaseModel], sample: Mapping[str, Any]):
        self.model = model
        self.sample = sample

    def produces(self, metric: str) -> bool:
        return _walk(self.model, self.sample, metric.split("."))

    def paths(self) -> list[str]:
        """Every producible metric path (an open mapping's key as ``<name>``), sorted."""
        return sorted(set(_paths(self.model, self.sample, "")))


def shape_of(suite_name: str, suite: SuiteBase | None) -> Shape | None:
    """The shape of ``suite``'s section (of the totals for ``*``); ``None`` when unknown."""
    if suite_name == TOTALS:
        return Shape(Totals, {})
    if suite is None:
        return None
    model = suite.section_model
    try:
        sample = dict(suite.aggregate([]))
    except Exception:  # a suite that cannot aggregate nothing: no shape to check against
        return None
    if not isinstance(model, type) or not issubclass(model, BaseModel):
        return None
    sample.setdefault("categories", {})
    for key, value in {**suite_statistics([]), "judge": judge_statistics([])}.items():
        sample.setdefault(key, value)
    return Shape(model, sample)


def unknown_metric(gate: Gate, shape: Shape) -> str | None:
    """Why ``gate``'s metric cannot be produced (with the closest names), or ``None``."""
    if shape.produces(gate.metric):
        return None
    known = sorted(shape.paths(), key=lambda path: (path.count("."), path))  # shallow first
    close = difflib.get_close_matches(gate.metric, known, n=MAX_SUGGESTIONS, cutoff=0.6)
    where = "the totals" if gate.suite == TOTALS else f"suite {gate.suite!r}"
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    shown = ", ".join(known[:40]) + (", ..." if len(known) > 40 else "")
    return f"{where} has no metric {gate.metric!r}{hint} (its metrics: {shown})"


def absent_metric(
    gate: Gate, suite: SuiteBase | None, absent: AbsentMetrics | None, where: str
) -> str | None:
    """Why ``gate`` can never be judged on a file whose manifest (``where``) leaves its metric
    out (``absent``, from the suite's ``absent_metrics``), naming the metrics that setting
    has and what to change; ``None`` when it can. Never "add optional": that would turn the
    gate off for good."""
    if absent is None or gate.metric not in absent.metrics:
        return None
    shape = shape_of(gate.suite, suite)
    has = [p for p in (shape.paths() if shape else []) if "." not in p]
    has = [p for p in has if p not in absent.metrics]
    shown = ", ".join(has[:40]) + (", ..." if len(has) > 40 else "")
    return (
        f"suite {gate.suite!r} gives no {gate.metric!r} under {absent.setting} ({where}): "
        f"{absent.fix} (its metrics under {absent.setting}: {shown or 'none'})"
    )


def _walk(annotation: Any, sample: Any, parts: list[str]) -> bool:
    if annotation is Any:
        return True
    arms = _arms(annotation)
    if len(arms) > 1:
        return any(_walk(arm, sample, parts) for arm in arms)
    if not parts:
        return _is_number(annotation, sample)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        fields = annotation.model_fields
        keys = list(fields) + [k for k in _keys(sample) if k not in fields]
        return any(
            _walk(
                fields[key].annotation if key in fields else None,
                _child(sample, key),
                parts[end:],
            )
            for end, key in _prefixes(parts, keys)
        )
    if get_origin(annotation) in (dict, Mapping):
        value_type = get_args(annotation)[1] if get_args(annotation) else Any
        if isinstance(sample, Mapping) and sample:  # keys already known (``lax``)
            return any(
                _walk(value_type, sample[key], parts[end:])
                for end, key in _prefixes(parts, list(sample))
            )
        return any(_walk(value_type, None, parts[end:]) for end in range(1, len(parts) + 1))
    if annotation is None:  # untyped: what the empty aggregate holds
        if not isinstance(sample, Mapping):
            return False
        if not sample:
            return True  # filled by the data (``locale``, ``per_tool_deltas``)
        return any(_walk(None, sample[key], parts[end:]) for end, key in _prefixes(parts, sample))
    return False


def _paths(annotation: Any, sample: Any, prefix: str) -> list[str]:
    arms = [a for a in _arms(annotation) if a is not type(None)]
    if annotation is Any or not arms:
        return []
    if len(arms) > 1:
        return [p for arm in arms for p in _paths(arm, sample, prefix)]
    annotation = arms[0]

    def join(key: object) -> str:
        return f"{prefix}.{key}" if prefix else str(key)

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        fields = annotation.model_fields
        out = []
        for key in list(fields) + [k for k in _keys(sample) if k not in fields]:
            child = fields[key].annotation if key in fields else None
            out += _paths(child, _child(sample, key), join(key))
        return out
    if get_origin(annotation) in (dict, Mapping):
        value_type = get_args(annotation)[1] if get_args(annotation) else Any
        if isinstance(sample, Mapping) and sample:
            return [p for key in sample for p in _paths(value_type, sample[key], join(key))]
        return _paths(value_type, None, join(_ANY_KEY))
    if annotation is None:
        if isinstance(sample, Mapping):
            if not sample:
                return [join(_ANY_KEY)]
            return [p for key in sample for p in _paths(None, sample[key], join(key))]
        return [prefix] if _is_number(None, sample) else []
    return [prefix] if _is_number(annotation, sample) else []


def _arms(annotation: Any) -> tuple[Any, ...]:
    if get_origin(annotation) in (Union, types.UnionType):
        return get_args(annotation)
    return (annotation,)


def _is_number(annotation: Any, sample: Any) -> bool:
    if annotation is None:  # untyped: a number, or null until the data fills it
        return sample is None or (isinstance(sample, int | float) and not isinstance(sample, bool))
    return isinstance(annotation, type) and annotation in (int, float)


def _keys(sample: Any) -> list[str]:
    return [str(k) for k in sample] if isinstance(sample, Mapping) else []


def _child(sample: Any, key: str) -> Any:
    return sample.get(key) if isinstance(sample, Mapping) else None


def _prefixes(parts: list[str], keys: Any) -> list[tuple[int, str]]:
    """``(end, key)`` for each leading run of ``parts`` that is one of ``keys``, longest
    first (a key may hold dots: ``pass_rate.low``)."""
    known = set(keys)
    out = []
    for end in range(len(parts), 0, -1):
        key = ".".join(parts[:end])
        if key in known:
            out.append((end, key))
    return out


def unknown_key(gate: Gate, suite: SuiteBase | None, categories: set[str] | None) -> str | None:
    """Why ``gate`` names a key its suite's report cannot hold, or ``None``: a category no
    collected case of the suite has (``categories`` known), or a score name the suite cannot
    produce (a suite with ``score_names()``, as golden's ``mean_scores``). An optional gate
    would otherwise read ``n/a`` and hide the typo."""
    head, _, rest = gate.metric.partition(".")
    if head == "categories" and categories is not None and rest:
        if any(key in categories for _, key in _prefixes(rest.split("."), categories)):
            return None
        name = rest.split(".", 1)[0]
        return _unknown(gate, "category", name, sorted(categories))
    scored = head == "mean_scores" and rest
    known = suite.score_names() if scored and suite is not None else None
    if known is not None:
        names, prefixes = known
        if rest in names or rest.startswith(tuple(prefixes)):
            return None
        shown = sorted(names) + [f"{p}<name>" for p in prefixes]
        return _unknown(gate, "score", rest, shown)
    return None


def _unknown(gate: Gate, what: str, name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=MAX_SUGGESTIONS, cutoff=0.6)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    where, plural = (
        ("no collected case of", "categories") if what == "category" else ("no scorer of", "scores")
    )
    return (
        f"{where} suite {gate.suite!r} has the {what} {name!r}{hint} "
        f"({plural}: {', '.join(known[:40]) or 'none'})"
    )
