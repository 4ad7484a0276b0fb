"""summary.md, the comment a pull request shows, always has a Gates section, and every status
reads as itself there and in the baseline section's gate table (``n/a`` and ``warn`` never
read ``pass``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

from pytest_llmeval.report.baseline.render import diff_markdown
from pytest_llmeval.report.console import NO_GATES
from pytest_llmeval.rundir.baseline_diff import BaselineDiff, GateChange
from pytest_llmeval.rundir.models import GateStatus
from tests.conftest import write_json

CASES = [
    {"id": "a", "input": "x", "expected_output": "x"},
    {"id": "b", "input": "y", "expected_output": "y"},
]
OPTIONAL_NA = "golden.mean_scores.contains_keywords>=0.5"
GATES = (
    "--llmeval-gate", "golden.pass_rate>=0.5",
    "--llmeval-gate", f"{OPTIONAL_NA} optional",
)  # fmt: skip


def _summary(run: Path) -> str:
    return (run / "summary.md").read_text(encoding="utf-8")


def _section(markdown: str, heading: str) -> list[str]:
    """The lines of ``heading``'s section up to the next heading (a table's rows and the
    lines after it)."""
    body = markdown.split(f"\n{heading}\n\n", 1)[1]
    return [line for line in body.split("\n#", 1)[0].splitlines() if line]


def _rows(lines: list[str]) -> list[str]:
    """A table's body rows (its first cell a gate's name)."""
    return [line for line in lines if line.startswith("| `")]


def test_a_run_without_gates_has_a_gates_section_saying_so(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    result = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.OK
    lines = _section(_summary(pytester.path / "run"), "## Gates")
    assert lines[0] == NO_GATES


def test_a_run_with_gates_and_no_baseline_has_the_table(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    result = pytester.runpytest("--llmeval-runner", "echo", *GATES, "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.OK
    rows = _rows(_section(_summary(pytester.path / "run"), "## Gates"))
    assert [row.split(" | ")[:2] for row in rows] == [
        [f"| `{OPTIONAL_NA}`", "n/a"],
        ["| `golden.pass_rate>=0.5`", "passed"],
    ]


def test_the_baseline_gate_table_shows_n_a_as_itself(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    blessed = pytester.runpytest(
        "--llmeval-runner", "echo", *GATES, "--llmeval-run-dir", "base",
        "--llmeval-update-baseline", "baseline.json",
    )  # fmt: skip
    assert blessed.ret == pytest.ExitCode.OK
    result = pytester.runpytest(
        "--llmeval-runner", "echo", *GATES, "--llmeval-run-dir", "run",
        "--llmeval-baseline", "baseline.json",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK
    summary = _summary(pytester.path / "run")
    assert "## Gates" in summary.split("## Baseline comparison")[0]
    rows = _rows(_section(summary, "### Gates"))
    assert rows == [
        f"| `{OPTIONAL_NA}` | n/a | n/a |",
        "| `golden.pass_rate>=0.5` | passed (1) | passed (1) |",
    ]


def test_every_status_reads_as_itself_in_the_baseline_gate_table(
    pytester: pytest.Pytester,
) -> None:
    """Each status on both sides of the baseline's gate table, from a real comparison's diff;
    a baseline from before statuses reads its pass/fail."""
    write_json(pytester, "qa.golden.json", CASES)
    for args in (("--llmeval-update-baseline", "b.json"), ("--llmeval-baseline", "b.json")):
        assert pytester.runpytest("--llmeval-runner", "echo", *GATES, *args).ret == 0
    runs = sorted((pytester.path / ".llmeval" / "runs").iterdir())
    report = json.loads((runs[-1] / "report.json").read_text())
    statuses = list(get_args(GateStatus))
    changes = [
        GateChange(
            name=f"golden.m{i}>=0.5",
            baseline_passed=True,
            current_passed=status != "failed",
            baseline_status=statuses[-1 - i],
            current_status=status,
        )
        for i, status in enumerate(statuses)
    ]
    changes.append(GateChange(name="golden.old>=0.5", baseline_passed=True, current_passed=False))
    diff = BaselineDiff.model_validate(report["baseline"]).model_copy(
        update={"gate_changes": changes}
    )
    rows = _rows(_section(diff_markdown(diff), "### Gates"))
    cells = [[cell.strip() for cell in row.strip("|").split("|")][1:] for row in rows]
    shown = {"failed": "**failed**"}
    expected = [[shown.get(statuses[-1 - i], statuses[-1 - i]), shown.get(status, status)]
                for i, status in enumerate(statuses)]  # fmt: skip
    assert cells == [*expected, ["passed", "**failed**"]]
    assert {"n/a", "warn", "inconclusive", "partial"} <= {cell for row in cells for cell in row}


def test_a_gate_that_could_not_be_read_is_a_failed_row(pytester: pytest.Pytester) -> None:
    """Not "no gate was set": a manifest gate that cannot be read fails the run. A session
    stops on it before any case, so it reaches summary.md when a run dir is judged again
    (``summarize``) after its manifest's gate went bad."""
    pytester.path.joinpath("data.json").write_text(json.dumps(CASES[:1]))
    manifest = pytester.path.joinpath("qa.llmeval.yaml")
    manifest.write_text("suite: golden\ndata: data.json\n")
    result = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.OK
    manifest.write_text("suite: golden\ndata: data.json\ngates: [pass rate is high]\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest_llmeval", "summarize", "run"],
        capture_output=True, text=True, cwd=pytester.path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    lines = _section(_summary(pytester.path / "run"), "## Gates")
    assert NO_GATES not in lines
    (row,) = _rows(lines)
    assert row.startswith(
        "| `qa.llmeval.yaml:3` | **failed** | `qa.llmeval.yaml:3: gates[0]: bad gate"
    )
