"""Aggregate case results into the :class:`~pytest_llmeval.rundir.models.Report`: totals, per
suite, per category, fingerprints. Gates and the baseline are added by ``report.verdict``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from pytest_llmeval.core.errors import LLMEvalError
from pytest_llmeval.core.fingerprint import fingerprint
from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.core.repeats import suite_statistics
from pytest_llmeval.core.version import __version__
from pytest_llmeval.rundir.models import Report, SuiteSection
from pytest_llmeval.suites.base import SuiteRegistry, base_totals


def judge_statistics(judged: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A suite's judge figures: verdicts by stage, the judge's tokens (apart from the
    model's), and with ``--llmeval-judge-repeats`` its mean agreement with itself."""
    stages: dict[str, int] = {}
    for entry in judged:
        stages[entry["stage"]] = stages.get(entry["stage"], 0) + 1
    agreement = [e["agreement"] for e in judged if e.get("agreement") is not None]
    tokens = sum(int((e.get("usage") or {}).get("total_tokens", 0)) for e in judged)
    return {
        "cases": len(judged),
        "stages": dict(sorted(stages.items())),
        "tokens": tokens,
        "agreement": round(sum(agreement) / len(agreement), 6) if agreement else None,
    }


def build_report(
    results: Sequence[CaseResult],
    suites: SuiteRegistry,
    datasets: dict[str, str],
    runners: dict[str, dict[str, Any]],
    extra_fingerprints: dict[str, str | None],
) -> Report:
    """The report of ``results`` (sorted by node id); nothing here depends on timing."""
    by_suite: dict[str, list[CaseResult]] = {}
    for result in results:
        by_suite.setdefault(result.suite, []).append(result)
    suite_reports: dict[str, SuiteSection] = {}
    for name, rows in sorted(by_suite.items()):
        suite = suites.get(name)
        body = suite.aggregate(rows) if suite is not None else base_totals(rows)
        categories: dict[str, list[CaseResult]] = {}
        for row in rows:
            categories.setdefault(row.category or "(none)", []).append(row)
        own = body.get("categories")  # a suite's own per-category figures (BFCL's accuracy)
        own = own if isinstance(own, dict) else {}
        body["categories"] = {
            cat: {**base_totals(r), **own.get(cat, {})} for cat, r in sorted(categories.items())
        }
        repeated = [row.repeats for row in rows if row.repeats is not None]
        if repeated:
            body.update(suite_statistics(repeated))
        judged = [
            row.details["judge"] for row in rows if isinstance(row.details.get("judge"), dict)
        ]
        if judged:
            body["judge"] = judge_statistics(judged)
        model = suite.section_model if suite is not None else SuiteSection
        try:
            suite_reports[name] = model.model_validate(body)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"])
            raise LLMEvalError(
                f"suite {name!r}: its aggregate does not fit {model.__name__}: "
                f"{where}: {error['msg']}"
            ) from None
    runner_ids = sorted(runners)
    return Report.model_validate(
        {
            "plugin_version": __version__,
            "totals": base_totals(results),
            "suites": suite_reports,
            "datasets": dict(sorted(datasets.items())),
            "dataset_sha256": fingerprint(sorted(datasets.items())),
            "runner_fingerprint": runner_ids[0] if len(runner_ids) == 1 else None,
            "runners": {rid: runners[rid] for rid in runner_ids},
            **extra_fingerprints,
        }
    )
