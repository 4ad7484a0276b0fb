"""The golden suite: ``{id, category, input, expected_output, rubric, metadata, min_scores}`` rows.

Tools offered to the model: the case's ``tools`` names, else every tool of the registry.
A case passes when every threshold holds: the manifest's per-category ``thresholds`` merged
with the case's own ``min_scores`` (the case wins). A category threshold on a scorer whose
input the case lacks (``regex`` without ``pattern``) does not apply to that case. With
neither, ``exact_match >= 1`` applies when the case has an ``expected_output``. Scorers are
looked up by name in :data:`SCORERS`, which stays open for judge and similarity scorers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pytest_llmeval.core.bounds import MAX_TURNS
from pytest_llmeval.core.clip import clip
from pytest_llmeval.core.errors import CaseFileError, RunnerError
from pytest_llmeval.core.models import (
    CaseResult,
    CaseScore,
    EvalCase,
    JudgeTask,
    Message,
    Transcript,
)
from pytest_llmeval.rundir.models import Number, SuiteSection
from pytest_llmeval.scoring import judge_verdict as judge_rules
from pytest_llmeval.scoring import text
from pytest_llmeval.suites.base import (
    CaseSource,
    LoadItem,
    SuiteBase,
    SuiteContext,
    base_totals,
    fallback_case_id,
    row_fingerprint,
)
from pytest_llmeval.suites.fields import RowReader
from pytest_llmeval.suites.row_reading import head_rows, iter_cases, read_records

Scorer = Callable[[str, dict[str, Any]], float]
"""A scorer takes the response and the case's ``expect`` and returns a score in [0, 1]."""


def _expected(expect: dict[str, Any]) -> str:
    return str(expect.get("expected_output") or "")


SCORERS: dict[str, Scorer] = {
    "exact_match": lambda response, expect: text.exact_match(response, _expected(expect)),
    "contains_keywords": lambda response, expect: text.contains_keywords(
        response, expect.get("keywords") or []
    ),
    "regex": lambda response, expect: text.regex_match(response, expect.get("pattern") or ""),
    "json_valid": lambda response, expect: text.json_valid(response),
}
"""Scorers by metric name. Register more with ``SCORERS[name] = fn``."""

_FIELDS = (
    "id",
    "category",
    "input",
    "expected_output",
    "rubric",
    "metadata",
    "min_scores",
    "keywords",
    "pattern",
    "scorers",
    "tools",
    "stubs",
    "max_turns",
)
_ROLES = ("system", "user", "assistant")
_CHECKS = ("keywords", "pattern", "min_scores", "scorers", "rubric")
"""Fields besides ``expected_output`` that give a golden case something to check."""
_NEEDS = {
    "exact_match": "expected_output",
    "contains_keywords": "keywords",
    "regex": "pattern",
    "semantic_similarity": "expected_output",
}
MEASURED = ("semantic_similarity",)
"""Scores measured after the agent by a service (an embedding model), not by a function."""
"""The case field a scorer reads; a category threshold skips cases without it."""


class GoldenSection(SuiteSection):
    """``report.json`` ``suites.golden``: the counts and the mean of every per-case score."""

    mean_scores: dict[str, Number]


class GoldenSuite(SuiteBase):
    """Golden datasets: one case per row, passed when every threshold on its scores holds."""

    @staticmethod
    def score_names() -> tuple[frozenset[str], tuple[str, ...]]:
        """The names ``mean_scores`` can hold: the scorers (read now: a conftest may have
        registered more), the measured scores and ``rubric``; and the prefixes of the judged
        ones (``rubric.<criterion>``). A gate on another name is a typo."""
        return frozenset({*SCORERS, *MEASURED, "rubric"}), ("rubric.",)

    name = "golden"
    section_model = GoldenSection
    manifest_options: ClassVar[dict[str, dict[str, Any]]] = {
        "thresholds": {
            "type": ["object", "null"],
            "additionalProperties": {
                "type": "object",
                "additionalProperties": {"type": "number", "minimum": 0, "maximum": 1},
            },
        },
        "judge_fallback": {"type": ["object", "null"]},
    }
    """Its manifest options and the JSON Schema of each: ``thresholds`` is
    ``{category: {metric: minimum}}`` (every score is in [0, 1], so is every minimum),
    ``judge_fallback`` a verdict ``{scores, reason}``."""

    def claims(self, path: Path, head: bytes) -> bool:
        """A file whose rows (any of those in ``head``) have the golden shape: a row that
        does not fit is then that row's error, the others run."""
        return any(_golden_shaped(row) for row in head_rows(path, head))

    def load(self, source: CaseSource, ctx: SuiteContext) -> Iterator[LoadItem]:
        thresholds = _category_thresholds(source)
        fallback = source.options.get("judge_fallback")
        if fallback is not None and not isinstance(fallback, dict):
            yield CaseFileError(
                source.display, None, "expected a verdict {scores, reason}", field="judge_fallback"
            )
            return
        _, records = read_records(source)
        yield from iter_cases(
            records,
            lambda line, row: self._case(source, line, row, thresholds, ctx, fallback),
            lambda line, row: _identify(RowReader(source.display, line, row)),
        )

    def _case(
        self,
        source: CaseSource,
        line: int,
        row: dict[str, Any],
        thresholds: dict[str, dict[str, float]],
        ctx: SuiteContext,
        fallback: dict[str, Any] | None = None,
    ) -> EvalCase:
        read = RowReader(source.display, line, row)
        read.reject_unknown(_FIELDS)
        case_id, category = _identify(read)
        messages = _messages(read)
        expected = read.text("expected_output")
        keywords = read.text_list("keywords")
        pattern = read.text("pattern")
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise read.error("pattern", f"not a valid regular expression: {exc}") from None
        min_scores = read.number_map("min_scores") or {}
        for name, minimum in min_scores.items():
            if not 0 <= minimum <= 1:
                raise read.error(
                    f"min_scores.{name}",
                    f"expected a minimum in [0, 1] (scores are), got {minimum:g}",
                )
        rubric = read.number_map("rubric") or {}
        for criterion, weight in rubric.items():
            if weight < 0:
                raise read.error(f"rubric.{criterion}", f"expected a weight >= 0, got {weight:g}")
        judged = bool(rubric) and ctx.settings.judge_runner is not None
        named = read.text_list("scorers") or []
        inputs = {"expected_output": expected, "keywords": keywords, "pattern": pattern}
        for name in min_scores:
            needs = _NEEDS.get(name)
            if needs and not inputs[needs]:
                raise read.error(f"min_scores.{name}", f"the {name} scorer needs {needs!r}")
            if _is_rubric(name) and not judged:
                raise read.error(
                    f"min_scores.{name}",
                    "a rubric score needs the case's rubric and a judge (--llmeval-judge-runner)"
                    if rubric
                    else "a rubric score needs a rubric {criterion: weight}",
                )
            if _is_rubric(name) and name != "rubric" and name[7:] not in rubric:
                raise read.error(f"min_scores.{name}", f"no criterion {name[7:]!r} in the rubric")
        category_thresholds = {
            name: minimum
            for name, minimum in thresholds.get(category or "", {}).items()
            if (not _NEEDS.get(name) or inputs[_NEEDS[name]]) and (judged or not _is_rubric(name))
        }
        wanted = {**category_thresholds, **min_scores}
        if not wanted and expected is not None:
            wanted = {"exact_match": 1.0}
        metrics = list(dict.fromkeys([*_default_metrics(expected, keywords, pattern), *named]))
        metrics += [name for name in wanted if name not in metrics and not _is_rubric(name)]
        for name in metrics:
            if name not in SCORERS and name not in MEASURED:
                field = "min_scores" if name in min_scores else "scorers"
                raise read.error(
                    f"{field}.{name}" if field == "min_scores" else field,
                    f"no scorer named {name!r}; available: {', '.join([*SCORERS, *MEASURED])}",
                )
        if not wanted:
            raise read.error(
                "expected_output",
                "the case has nothing to check: give expected_output, or min_scores "
                "for keywords / pattern / scorers",
            )
        stubs = read.obj("stubs") or {}
        tool_names = read.text_list("tools") or []
        max_turns = read.count("max_turns", MAX_TURNS) or ctx.settings.max_turns
        judge = None
        if judged:
            question = next((m.content or "" for m in reversed(messages) if m.role == "user"), "")
            judge = JudgeTask(
                kind="rubric",
                question=question,
                criteria=rubric,
                reference=expected,
                fallback=fallback,
            )
            problem = (
                judge_rules.validate(fallback, judge_rules.schema(judge)) if fallback else None
            )
            if problem:
                raise read.error("rubric", f"the manifest's judge_fallback does not fit: {problem}")
        return EvalCase(
            case_id=case_id,
            suite=self.name,
            file=source.display,
            line=line,
            category=category,
            messages=messages,
            tools=ctx.registry.specs(tool_names),
            tool_mode="stubs" if stubs else "broker",
            stubs=stubs,
            max_turns=max_turns,
            judge=judge,
            similarity_reference=expected if "semantic_similarity" in metrics else None,
            expect={
                "expected_output": expected,
                "keywords": keywords,
                "pattern": pattern,
                "metrics": metrics,
                "thresholds": wanted,
            },
            metadata={"rubric": row.get("rubric") or {}, **(read.obj("metadata") or {})},
            fingerprint=row_fingerprint(self.name, row),
        )

    def score(self, case: EvalCase, transcript: Transcript, ctx: SuiteContext) -> CaseScore:
        expect = case.expect
        scores = {
            name: transcript.measures[name]
            if name in MEASURED
            else SCORERS[name](transcript.response, expect)
            for name in expect["metrics"]
        }
        details: dict[str, Any] = {}
        reason = ""
        if case.judge is not None:
            judgement = transcript.judgement
            if judgement is None or judgement.verdict is None:
                raise RunnerError("the case has a rubric but no judge verdict", kind="judge")
            scores.update(judge_rules.rubric_scores(case.judge, judgement.verdict))
            reason = str(judgement.verdict.get("reason", ""))
            details["judge"] = {
                "stage": judgement.stage,
                "reason": reason,
                "fingerprint": judgement.fingerprint,
                "usage": judgement.usage.model_dump(),
                "agreement": judge_rules.agreement(case.judge, judgement.samples),
                "samples": len(judgement.samples) or 1,
            }
        for name, minimum in expect["thresholds"].items():
            if scores[name] < minimum:
                failure = _failure(name, scores[name], minimum, expect, transcript.response)
                if _is_rubric(name):
                    failure += f" (judge: {reason})"
                return CaseScore(passed=False, scores=scores, failure=failure, details=details)
        return CaseScore(passed=True, scores=scores, details=details)

    def aggregate(self, results: Sequence[CaseResult]) -> dict[str, Any]:
        metrics: dict[str, list[float]] = {}
        for result in results:
            for name, value in result.scores.items():
                metrics.setdefault(name, []).append(value)
        return {
            **base_totals(results),
            "mean_scores": {
                name: round(sum(values) / len(values), 6)
                for name, values in sorted(metrics.items())
            },
        }


def _golden_shaped(row: dict[str, Any]) -> bool:
    """An ``expected_output``, or a text ``input`` with something else to check by."""
    if "expected_output" in row:
        return True
    return isinstance(row.get("input"), str | list) and any(k in row for k in _CHECKS)


def _identify(read: RowReader) -> tuple[str, str | None]:
    """The case id (or the row's hash) and category: all collection needs of a row."""
    return read.id() or fallback_case_id(read.row), read.text("category")


def _messages(read: RowReader) -> list[Message]:
    value = read.row.get("input")
    if isinstance(value, str):
        return [Message(role="user", content=value)]
    if not isinstance(value, list) or not value:
        raise read.error(
            "input", "expected a string or a non-empty array of {role, content} messages"
        )
    messages = []
    for i, item in enumerate(value):
        ok = (
            isinstance(item, dict)
            and item.get("role") in _ROLES
            and isinstance(item.get("content"), str)
        )
        if not ok:
            raise read.error(
                f"input[{i}]", f"expected {{role: {'|'.join(_ROLES)}, content: string}}"
            )
        messages.append(Message(role=item["role"], content=item["content"]))
    return messages


def _is_rubric(name: str) -> bool:
    return name == "rubric" or name.startswith("rubric.")


def _default_metrics(expected: str | None, keywords: Any, pattern: str | None) -> list[str]:
    names = []
    if expected is not None:
        names.append("exact_match")
    if keywords:
        names.append("contains_keywords")
    if pattern is not None:
        names.append("regex")
    return names


def _category_thresholds(source: CaseSource) -> dict[str, dict[str, float]]:
    raw = source.options.get("thresholds") or {}
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        raise CaseFileError(
            source.display, None, "expected {category: {metric: minimum}}", field="thresholds"
        )
    return {str(cat): {str(k): float(v) for k, v in m.items()} for cat, m in raw.items()}


QUOTED_CHARS = 120
"""The most characters of the reply (or the expected output) a failure message quotes: the
terminal shows the reply itself under the message (``response:``), so a long one is printed
once, not twice, and ``summary.md`` and ``errors.jsonl`` keep a line, not a page."""


def _json(text: str) -> str:
    """A quoted text as JSON writes it, its non-ASCII letters (and the clip marker) as they
    are rather than ``\\u`` escapes."""
    return json.dumps(text, ensure_ascii=False)


def _failure(name: str, got: float, minimum: float, expect: dict[str, Any], response: str) -> str:
    head = f"{name}: {got:.2f} < {minimum:.2f}"
    response = clip(response, QUOTED_CHARS)
    if name == "exact_match":
        expected = clip(_expected(expect), QUOTED_CHARS)
        return f"{head} (expected {_json(expected)}, got {_json(response)})"
    if name == "contains_keywords":
        missing = [k for k in expect["keywords"] or [] if k.lower() not in response.lower()]
        return f"{head} (missing {json.dumps(missing)})"
    if name == "regex":
        return f"{head} (/{expect['pattern']}/ not found in {_json(response)})"
    return head
