"""What bounds a run's cases (``plugin/budget.py``): ``--llmeval-max-tokens-total`` and
``--llmeval-max-cost`` (once reached, the remaining cases are skipped with the reason, the
reports are written, the exit status is 2, and ``--llmeval-resume`` runs the skipped cases),
and ``--llmeval-limit N`` (the first N cases of each file run; the rest are deselected the
pytest way)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.conftest import read_jsonl, write_json
from tests.engine.test_dispatch import KEYS, SlowAgent, _dispatcher, _jobs, _transcript
from tests.plugin.test_progress import ECHO, PRICES, cases

BUDGET_EXIT = pytest.ExitCode.INTERRUPTED


def outcomes(run: str, pytester: pytest.Pytester) -> dict[str, tuple[str, str | None]]:
    rows = read_jsonl(pytester.path / run / "results.jsonl")
    return {row["case_id"]: (row["outcome"], row["error"]) for row in rows}


def test_token_budget_skips_the_rest_and_writes_reports(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", cases(6))
    result = pytester.runpytest(
        *ECHO, "--llmeval-max-tokens-total", "10", "--llmeval-run-dir", "run", "-rs"
    )
    reason = "budget reached: 12 tokens of --llmeval-max-tokens-total=10"
    result.assert_outcomes(passed=2, skipped=4)
    assert result.ret == BUDGET_EXIT
    result.stdout.fnmatch_lines(
        [
            f"llmeval: {reason}; 4 cases skipped, the reports cover the rest; exit status 2",
            f"SKIPPED [[]1] qa.golden.json:27: {reason}",
        ],
        consecutive=False,
    )
    found = outcomes("run", pytester)
    assert [found[f"c{i:03d}"][0] for i in range(6)] == ["passed"] * 2 + ["skipped"] * 4
    assert found["c005"][1] == reason
    report = json.loads((pytester.path / "run" / "report.json").read_text())
    assert (report["totals"]["passed"], report["totals"]["skipped"]) == (2, 4)
    assert (pytester.path / "run" / "summary.md").is_file()


def test_gates_after_a_budget_stop_are_partial(pytester: pytest.Pytester) -> None:
    """Gates judged only the cases before the budget: a gate that holds says ``partial``."""
    write_json(pytester, "qa.golden.json", cases(6))
    result = pytester.runpytest(
        *ECHO, "--llmeval-max-tokens-total", "10", "--llmeval-run-dir", "run",
        "--llmeval-gate", "golden.pass_rate>=0.5",
    )  # fmt: skip
    result.stdout.fnmatch_lines(["gate golden.pass_rate>=0.5: partial (*4 case(s) left out)"])
    report = json.loads((pytester.path / "run" / "report.json").read_text())
    assert report["deselected"] == {"golden": 4}
    assert [g["status"] for g in report["gates"]["results"]] == ["partial"]


def test_cost_budget_skips_the_rest(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", cases(6))
    pytester.makefile(".yaml", prices=PRICES)
    result = pytester.runpytest(
        *ECHO, "--llmeval-prices", "prices.yaml", "--llmeval-max-cost", "0.02",
        "--llmeval-run-dir", "run",
    )  # fmt: skip
    result.assert_outcomes(passed=3, skipped=3)
    assert result.ret == BUDGET_EXIT
    reason = "budget reached: $0.0270 of --llmeval-max-cost=0.02"
    assert outcomes("run", pytester)["c003"] == ("skipped", reason)
    report = json.loads((pytester.path / "run" / "report.json").read_text())
    assert report["totals"]["cost_usd"] == pytest.approx(0.027)


def test_budget_not_reached_changes_nothing(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", cases(3))
    result = pytester.runpytest(*ECHO, "--llmeval-max-tokens-total", "1000")
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.OK
    assert "budget reached" not in result.stdout.str()


def test_other_tests_are_not_skipped(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", cases(3))
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest(*ECHO, "--llmeval-max-tokens-total", "1", "-p", "no:randomly")
    result.assert_outcomes(passed=2, skipped=2)  # one case, then the plain test runs


def test_resume_runs_the_cases_a_budget_skipped(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", cases(4))
    first = pytester.runpytest(*ECHO, "--llmeval-max-tokens-total", "6", "--llmeval-run-dir", "run")
    first.assert_outcomes(passed=1, skipped=3)
    second = pytester.runpytest(*ECHO, "--llmeval-resume", "run")
    second.assert_outcomes(passed=3)
    assert second.ret == pytest.ExitCode.OK
    assert {outcome for outcome, _ in outcomes("run", pytester).values()} == {"passed"}


def test_budget_under_xdist_is_shared_by_the_workers(pytester: pytest.Pytester) -> None:
    """The workers spend one session-wide budget (the controller counts); the controller
    reports and exits 2."""
    pytest.importorskip("xdist")
    write_json(pytester, "qa.golden.json", cases(8))
    result = pytester.runpytest(
        *ECHO, "-n", "2", "--llmeval-max-tokens-total", "12", "--llmeval-run-dir", "run"
    )
    assert result.ret == BUDGET_EXIT
    found = outcomes("run", pytester)
    assert len(found) == 8
    ran = [case for case, (outcome, _) in found.items() if outcome == "passed"]
    # the 2 cases (6 tokens each) the budget holds, and at most one the other worker had in hand
    assert 2 <= len(ran) <= 3
    skipped = [error for outcome, error in found.values() if outcome == "skipped"]
    assert len(skipped) == 8 - len(ran) and all(
        e
        and e.startswith("budget reached: ")
        and e.endswith(" of --llmeval-max-tokens-total=12")
        and "share" not in e
        for e in skipped
    )


def test_stop_ahead_cancels_what_runs_ahead(tmp_path: Path) -> None:
    """What the dispatcher started ahead stops when a budget is reached, and is not counted
    in flight any more."""
    agent = SlowAgent(delay_s=3600, slow={KEYS[0]: 0})
    jobs = _jobs(agent, tmp_path)
    dispatcher = _dispatcher(jobs, concurrency=2)
    try:
        assert _transcript(dispatcher, jobs, KEYS[0]) == "answer case0"
        assert dispatcher.in_flight == 2  # the next cases run ahead, two at a time
        dispatcher.stop_ahead()
        for _ in range(100):  # let the loop cancel them (a few turns of it)
            if dispatcher.in_flight == 0:
                break
            dispatcher.call(asyncio.sleep(0))
        assert dispatcher.in_flight == 0
        assert agent.finished == [KEYS[0]]
    finally:
        dispatcher.close()


def test_limit_runs_the_first_cases_of_each_file(pytester: pytest.Pytester) -> None:
    write_json(pytester, "a.golden.json", cases(6))
    write_json(pytester, "b.golden.json", cases(3))
    result = pytester.runpytest(*ECHO, "--llmeval-limit", "2", "--llmeval-run-dir", "run")
    result.assert_outcomes(passed=4, deselected=5)
    result.stdout.fnmatch_lines(["collected 9 items / 5 deselected / 4 selected"])
    rows = read_jsonl(pytester.path / "run" / "results.jsonl")
    assert [row["nodeid"] for row in rows] == [
        "a.golden.json::c000", "a.golden.json::c001",
        "b.golden.json::c000", "b.golden.json::c001",
    ]  # fmt: skip


def test_limit_goes_through_pytest_deselected(pytester: pytest.Pytester) -> None:
    """Other plugins (the partial-gates check, pytest's terminal) hear of the subset."""
    write_json(pytester, "a.golden.json", cases(3))
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    reprec = pytester.inline_run(*ECHO, "--llmeval-limit", "1")
    deselected = [
        item.nodeid for call in reprec.getcalls("pytest_deselected") for item in call.items
    ]
    assert deselected == ["a.golden.json::c001", "a.golden.json::c002"]
    reprec.assertoutcome(passed=2)  # the first case and the plain test


def test_limit_must_be_positive(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*ECHO, "--llmeval-limit", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--llmeval-limit must be 1 or more*"])
