"""The tool-forge contract's console summary of one file's ``EvalSuiteResult``.

Layout only; the result it prints is built by
:func:`pytest_llmeval.scoring.toolforge.build_suite_result`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_llmeval.scoring.toolforge import js_string


def format_console_summary(suite_result: Mapping[str, Any], width: int = 67) -> str:
    """The contract's console summary of an EvalSuiteResult (no trailing newline).

    Marks: ``✓`` passed, ``✗`` failed (with a ``→ error`` line), ``○`` skipped (``skipped`` in
    the time column). Id, description and time are columns.
    """
    cases = list(suite_result.get("cases", []))
    title = f"═══ {suite_result['toolName']} — {suite_result['tier']} evals "
    lines = [title + "═" * max(3, width - len(title))]
    id_width = max((len(str(case["id"])) for case in cases), default=0)
    desc_width = max((len(str(case.get("description", ""))) for case in cases), default=0)
    for case in cases:
        skipped = bool(case.get("skipped"))
        mark = "○" if skipped else "✓" if case["passed"] else "✗"
        took = "skipped" if skipped else f"{js_string(case.get('durationMs', 0))}ms"
        case_id = str(case["id"]).ljust(id_width)
        description = str(case.get("description", "")).ljust(desc_width)
        lines.append(f"  {mark} {case_id}  {description}  {took}")
        if not skipped and not case["passed"]:
            lines.append(f"    → {case.get('error') or 'failed'}")
    lines.append("─" * width)
    summary = suite_result["summary"]
    parts = [f"{summary['passed']}/{summary['totalCases']} passed", f"{summary['failed']} failed"]
    not_run = summary["totalCases"] - summary["passed"] - summary["failed"]
    if not_run:
        parts.append(f"{not_run} skipped")
    parts += [
        f"{summary['skippedAssertions']} skipped assertions",
        f"{js_string(summary['totalDurationMs'])}ms total",
    ]
    lines.append("  " + " | ".join(parts))
    lines += [f"  ⚠ {warning}" for warning in suite_result.get("stalenessWarnings", [])]
    regressions = list(suite_result.get("regressions", []))
    if regressions:
        lines.append(f"  ⚠ REGRESSIONS ({len(regressions)}): {', '.join(regressions)}")
    new_passes = list(suite_result.get("newPasses", []))
    if new_passes:
        lines.append(f"  ✓ new passes ({len(new_passes)}): {', '.join(new_passes)}")
    return "\n".join(lines)
