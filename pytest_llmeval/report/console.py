"""Human-readable summaries: terminal lines and ``summary.md``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_llmeval.clip import clip
from pytest_llmeval.markdown import md_code, md_text
from pytest_llmeval.models import CaseResult
from pytest_llmeval.report.baseline import baseline_case_lines
from pytest_llmeval.rundir.models import Interrupted

if TYPE_CHECKING:
    from pytest_llmeval.report.verdict import Verdict

MAX_LISTED_FAILURES = 50


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _counts(totals: dict[str, Any]) -> str:
    return (
        f"{totals['passed']}/{totals['total']} passed ({_rate(totals['pass_rate'])}), "
        f"{totals['failed']} failed, {totals['errors']} errors, {totals['skipped']} skipped"
    )


def summary_lines(report: dict[str, Any]) -> list[str]:
    """One line per suite, then one per category of that suite."""
    lines = []
    for name, body in report["suites"].items():
        lines.append(f"{name}: {_counts(body)}")
        categories = body.get("categories", {})
        if len(categories) > 1:
            for category, totals in categories.items():
                lines.append(f"  {category}: {_counts(totals)}")
    cost = report["totals"].get("cost_usd")
    lines.append(f"all: {_counts(report['totals'])}" + ("" if cost is None else f", ${cost:.4f}"))
    return lines


def tally_note(results: Sequence[CaseResult], earlier: int) -> str | None:
    """What tells llmeval's tallies from pytest's closing line: on a resume the tallies cover
    the whole run while pytest counts this session (``earlier`` cases had their results from
    earlier attempts), and an expected miss (``misses: xfail``) is a failed case to llmeval,
    ``xfailed`` to pytest. ``None`` when the two agree."""
    parts = []
    if earlier:
        now = len(results) - earlier
        parts.append(
            f"the tallies cover the whole run: {earlier} case(s) from earlier attempts, "
            f"{now} run in this session (pytest's line counts this session)"
        )
    xfailed = sum(1 for result in results if result.xfailed)
    if xfailed:
        parts.append(f"{xfailed} of the failed are expected misses (pytest's xfailed)")
    return f"llmeval: {'; '.join(parts)}" if parts else None


def summary_markdown(report: dict[str, Any], results: Sequence[CaseResult]) -> str:
    """``summary.md``: suite table, category table, then the failing and erroring cases."""
    out = ["# pytest-llmeval summary", ""]
    interrupted = report.get("interrupted")
    if isinstance(interrupted, dict):
        out += [f"**{md_text(interrupted_line(interrupted))}**", ""]
    out += [
        "| suite | cases | passed | failed | errors | skipped | pass rate |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, body in report["suites"].items():
        out.append(_row(md_text(name), body))
    out.append(_row("**all**", report["totals"]))
    out += ["", "## By category", ""]
    out += [
        "| suite | category | cases | passed | failed | errors | skipped | pass rate |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, body in report["suites"].items():
        for category, totals in body.get("categories", {}).items():
            out.append(_row(f"{md_text(name)} | {md_text(category)}", totals))
    bad = [r for r in results if r.outcome in ("failed", "error")]
    if bad:
        out += ["", f"## Failed and erroring cases ({len(bad)})", ""]
        for result in bad[:MAX_LISTED_FAILURES]:
            message = clip(" ".join((result.error or "").splitlines()), 200)
            out.append(f"- {md_code(result.nodeid)} ({result.outcome}): {md_text(message)}")
        if len(bad) > MAX_LISTED_FAILURES:
            out.append(f"- ... and {len(bad) - MAX_LISTED_FAILURES} more (see results.jsonl)")
    out += [
        "",
        f"runner: {md_text(report.get('runner_fingerprint'))}",
        f"dataset: {md_text(report['dataset_sha256'])}",
        "",
    ]
    return "\n".join(out)


def interrupted_line(interrupted: Interrupted | Mapping[str, Any]) -> str:
    """What a run cut short says (the terminal, ``summary.md``)."""
    body = interrupted.model_dump() if isinstance(interrupted, Interrupted) else interrupted
    return (
        f"interrupted ({body['reason']}): {body['cases_run']} of {body['cases_total']} cases "
        "ran; gates judged only those (a gate that held is partial), and "
        "--llmeval-resume RUN_DIR runs the rest"
    )


def _row(label: str, totals: dict[str, Any]) -> str:
    return (
        f"| {label} | {totals['total']} | {totals['passed']} | {totals['failed']} | "
        f"{totals['errors']} | {totals['skipped']} | {_rate(totals['pass_rate'])} |"
    )


def verdict_lines(verdict: Verdict) -> list[str]:
    """One line per gate, then the baseline comparison."""
    lines = [
        f"gate {g.gate.name}: {'FAILED' if g.failed else g.status} ({g.message})"
        for g in verdict.gate_results
    ]
    lines += [f"gate problem: {problem}" for problem in verdict.gate_problems]
    diff = verdict.baseline_diff
    if verdict.baseline_refusal is not None:
        lines.append(f"baseline: not compared: {verdict.baseline_refusal}")
    elif diff is not None:
        counts = ", ".join(f"{len(ids)} {kind}" for kind, ids in diff.flips.items())
        decision = "REGRESSED" if diff.regressed else "no regressions"
        lines.append(
            f"baseline: {decision}: {counts}; exact McNemar p={diff.mcnemar_p:.4g} "
            f"(b={diff.pass_to_fail}, c={diff.fail_to_pass})"
        )
        lines += baseline_case_lines(diff)
    return lines
