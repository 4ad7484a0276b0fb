"""Human-readable summaries: terminal lines and ``summary.md``."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_llmeval.core.clip import clip
from pytest_llmeval.core.markdown import md_cell, md_code, md_plain
from pytest_llmeval.core.models import CaseResult, unpack
from pytest_llmeval.core.redact import MIN_SECRET_LENGTH
from pytest_llmeval.report.baseline.render import baseline_case_lines
from pytest_llmeval.report.error_groups import ErrorGroup, count_text, error_groups
from pytest_llmeval.rundir.models import GatesSection, Interrupted, Report, Totals

if TYPE_CHECKING:
    from pytest_llmeval.report.verdict import GateProblem, Verdict

MAX_LISTED_FAILURES = 50
MAX_LISTED_ERRORED = 10
"""How many errored node ids the terminal's ``errored:`` line names (and how many messages its
grouped ``errored: N cases: ...`` lines show)."""
MAX_GROUP_IDS = 5
"""How many of a shared message's cases ``summary.md`` names."""
NO_GATES = (
    "No gate was set: the run is judged by its cases alone (add one with `--llmeval-gate` "
    "or a manifest's `gates:`)."
)
"""``summary.md``'s Gates section for a run without gates."""


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _counts(totals: Totals) -> str:
    return (
        f"{totals.passed}/{totals.total} passed ({_rate(totals.pass_rate)}), "
        f"{totals.failed} failed, {totals.errors} errors, {totals.skipped} skipped"
    )


def summary_lines(report: Report) -> list[str]:
    """One line per suite, then one per category of that suite."""
    lines = []
    for name, section in report.suites.items():
        lines.append(f"{name}: {_counts(section)}")
        if len(section.categories) > 1:
            for category, totals in section.categories.items():
                lines.append(f"  {category}: {_counts(totals)}")
    cost = report.totals.cost_usd
    lines.append(f"all: {_counts(report.totals)}" + ("" if cost is None else f", ${cost:.4f}"))
    for name, what in (report.datasets_changed or {}).items():
        lines.append(
            f"data changed during the run: {name} {what}; report.json records the sha256 of "
            "the bytes collected"
        )
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


def rubric_warning(results: Sequence[CaseResult]) -> str | None:
    """One warning for the session: the cases scored by a rubric judge (a ``rubric`` score)
    with no threshold on any rubric score (a ``min_scores`` ``rubric`` / ``rubric.<criterion>``
    or a manifest's category threshold), whose rubric therefore never decides whether they
    pass. ``None`` when there is none."""
    ids = sorted(r.nodeid for r in results if "rubric" in r.scores and not _rubric_held(r))
    if not ids:
        return None
    shown = ", ".join(ids[:MAX_LISTED_ERRORED])
    if len(ids) > MAX_LISTED_ERRORED:
        shown += f", ... and {len(ids) - MAX_LISTED_ERRORED} more"
    return (
        f"llmeval: warning: {len(ids)} case(s) have a rubric but no rubric threshold, so the "
        f"judge's scores never decide them; add min_scores.rubric (or rubric.<criterion>) or a "
        f"manifest threshold: {shown}"
    )


def _rubric_held(result: CaseResult) -> bool:
    expected = unpack(result.expected)
    thresholds = expected.get("thresholds") if isinstance(expected, dict) else None
    return isinstance(thresholds, dict) and any(
        name == "rubric" or str(name).startswith("rubric.") for name in thresholds
    )


def summary_markdown(
    report: Report, results: Sequence[CaseResult], gate_problems: Sequence[GateProblem] = ()
) -> str:
    """``summary.md``: suite table, category table, the gates (always: a run without any says
    so), then the failing and erroring cases, those with one message once.

    It reads as plain text in a CI log as well as rendered: names are as they are when no
    Markdown can come of them, and gates, messages and values are code spans, never
    backslash escapes or HTML entities (:func:`~pytest_llmeval.core.markdown.md_plain`).

    ``report`` is the report as written (redacted: its names and messages come from the
    run's data); ``gate_problems`` are the gates that could not be read (``source: why``),
    failed rows of the Gates table."""
    out = ["# pytest-llmeval-harness summary", ""]
    if report.interrupted is not None:
        out += [f"**{interrupted_line(report.interrupted, code=md_code)}**", ""]
    out += [
        "| suite | cases | passed | failed | errors | skipped | pass rate |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, section in report.suites.items():
        out.append(_row(md_plain(name), section))
    out.append(_row("**all**", report.totals))
    out += ["", "## By category", ""]
    out += [
        "| suite | category | cases | passed | failed | errors | skipped | pass rate |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, section in report.suites.items():
        for category, totals in section.categories.items():
            out.append(_row(f"{md_cell(md_plain(name))} | {md_cell(md_plain(category))}", totals))
    out += _gates_markdown(report.gates, gate_problems)
    out += _failures_markdown(results)
    out += _skipped_markdown(results)
    out += [
        "",
        f"runner: {md_plain(report.runner_fingerprint)}",
        f"dataset: {md_plain(report.dataset_sha256)}",
        "",
    ]
    return "\n".join(out)


def interrupted_line(
    interrupted: Interrupted,
    run_dir: Path | None = None,
    *,
    code: Callable[[str], str] | None = None,
) -> str:
    """What a run cut short says (the terminal, ``summary.md``, the page), with the resume
    command for ``run_dir`` when it is known (written with ``=``: a spaced path moves pytest's
    rootdir). ``code`` (``summary.md``'s :func:`~pytest_llmeval.core.markdown.md_code`) makes
    the reason and the option code spans."""
    reason, option = interrupted.reason, resume_option(run_dir)
    if code is not None:
        reason, option = md_plain(reason), code(option)
    return (
        f"interrupted ({reason}): {interrupted.cases_run} of "
        f"{interrupted.cases_total} cases "
        "ran; gates judged only those (a gate that held is partial), and "
        f"{option} runs the rest"
    )


def resume_option(run_dir: Path | None) -> str:
    """``--llmeval-resume=PATH`` for ``run_dir`` (shell-quoted), or with ``RUN_DIR``."""
    return f"--llmeval-resume={shlex.quote(str(run_dir)) if run_dir else 'RUN_DIR'}"


def _failures_markdown(results: Sequence[CaseResult]) -> list[str]:
    """The failing and erroring cases, those with one message once: ``- `id` (failed): why``
    for a message of its own, ``- 24 cases (error): why: `a`, `b`, ...`` for a shared one."""
    bad = sum(1 for r in results if r.outcome in ("failed", "error"))
    if not bad:
        return []
    return ["", f"## Failed and erroring cases ({bad})", "", *_grouped(error_groups(results))]


def _skipped_markdown(results: Sequence[CaseResult]) -> list[str]:
    """The skipped cases with their reasons (a fixture's ``pytest.skip``, a mark, a budget):
    left out of every gate, listed as the failing ones are."""
    skipped = sum(1 for r in results if r.outcome == "skipped")
    if not skipped:
        return []
    groups = error_groups(results, ("skipped",))
    return ["", f"## Skipped cases ({skipped}): left out of the gates", "", *_grouped(groups)]


def _grouped(groups: Sequence[ErrorGroup]) -> list[str]:
    """One line per group of cases with one message (``- `id` (outcome): why``, or
    ``- **N cases** (outcome): why: `a`, `b`, ...``), at most :data:`MAX_LISTED_FAILURES`."""
    out: list[str] = []
    for group in groups[:MAX_LISTED_FAILURES]:
        message = md_code(group.shown) if group.shown else "(no message)"
        if group.count == 1:
            out.append(f"- {md_code(group.nodeids[0])} ({group.outcome}): {message}")
            continue
        ids = ", ".join(md_code(nodeid) for nodeid in group.nodeids[:MAX_GROUP_IDS])
        more = group.count - MAX_GROUP_IDS
        ids += f", ... and {more} more" if more > 0 else ""
        out.append(f"- **{count_text(group.count)}** ({group.outcome}): {message}: {ids}")
    left = sum(group.count for group in groups[MAX_LISTED_FAILURES:])
    if left:
        out.append(f"- ... and {count_text(left)} more (see results.jsonl)")
    return out


def error_lines(results: Sequence[CaseResult]) -> list[str]:
    """The terminal's errors shared by several cases, each message once with its count
    (``errored: 300 cases: no cassette for this request``), at most
    :data:`MAX_LISTED_ERRORED` messages. A message of one case's own is not repeated: pytest's
    error section and short summary show it, and the ``errored:`` line names the case."""
    groups = [group for group in error_groups(results, ("error",)) if group.count > 1]
    lines = [
        f"errored: {count_text(group.count)}: {group.shown or '(no message)'}"
        for group in groups[:MAX_LISTED_ERRORED]
    ]
    left = groups[MAX_LISTED_ERRORED:]
    if left:
        cases = count_text(sum(group.count for group in left))
        lines.append(f"errored: ... and {cases} sharing {len(left)} other messages")
    return lines


def _gates_markdown(
    section: GatesSection | None, problems: Sequence[GateProblem] = ()
) -> list[str]:
    """``summary.md``'s Gates table: each gate with its status as itself (``passed``,
    ``failed``, ``partial``, ``inconclusive``, ``warn``, ``n/a``) and its message, and each
    gate that could not be read, failed. Always there (the comment a pull request shows says
    so when no gate was set)."""
    rows = section.results if section is not None else []
    if not rows and not problems:
        return ["", "## Gates", "", NO_GATES]
    out = ["", "## Gates", "", "| gate | status | message |", "|---|---|---|"]
    for problem in problems:
        source = problem.source
        message = clip(" ".join(problem.splitlines()), 200)
        out.append(f"| {md_cell(md_code(source))} | **failed** | {md_cell(md_code(message))} |")
    for row in rows:
        shown = "**failed**" if row.status == "failed" else md_cell(md_plain(row.status))
        message = clip(" ".join(row.message.splitlines()), 200)
        name = md_cell(md_code(row.gate.name))
        out.append(f"| {name} | {shown} | {md_cell(md_code(message))} |")
    return out


def _row(label: str, totals: Totals) -> str:
    return (
        f"| {label} | {totals.total} | {totals.passed} | {totals.failed} | "
        f"{totals.errors} | {totals.skipped} | {_rate(totals.pass_rate)} |"
    )


def verdict_lines(verdict: Verdict) -> list[str]:
    """One line per gate, then the baseline comparison."""
    lines = [
        f"gate {g.gate.name}: {'FAILED' if g.failed else g.status} ({g.message})"
        for g in verdict.gate_results
    ]
    lines += [f"gate problem: {problem}" for problem in verdict.gate_problems]
    if verdict.errored:
        shown = ", ".join(verdict.errored[:MAX_LISTED_ERRORED])
        more = len(verdict.errored) - MAX_LISTED_ERRORED
        lines.append(
            f"errored: {len(verdict.errored)} case(s) could not be judged, so the run fails: "
            + shown
            + (f", ... and {more} more" if more > 0 else "")
        )
    lines += [fault.message for fault in verdict.faults if fault.kind in ("crash", "unjudged")]
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


def placeholder_notice(names: list[str]) -> str:
    """The one line saying which key variables hold a value that is not treated as a secret."""
    return (
        f"llmeval: {', '.join(names)} holds a placeholder key (ollama, EMPTY, none, "
        f"sk-no-key-required, ...), one under {MIN_SECRET_LENGTH} characters, or a plain "
        "number or date: not treated as a secret (not masked in the reports, not looked for "
        "by the leak check)"
    )
