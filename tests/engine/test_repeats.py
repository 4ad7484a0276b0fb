"""Repeats: K runs per case, one test per case, the repeat rule, Wilson intervals, pass@k and
pass^k against hand-computed values; exact replays of recorded repeats; -n 2 equals -n 0."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from pytest_llmeval.core.repeats import parse_rule, pass_at_k, pass_hat_k, summary, wilson
from tests.conftest import read_jsonl, run_outputs, write_json

# A model that answers right in its first `right` runs of a case (by the run's repeat index):
# "alpha" always, "beta" in runs 0 and 1 of 5, "gamma" never.
COUNTER_CONFTEST = """
from pytest_llmeval.core.case_context import repeat_index
from pytest_llmeval.runners.base import Completion

RIGHT = {"alpha": 99, "beta": 2, "gamma": 0}

class Counter:
    name = "counter"
    def fingerprint(self):
        return {"type": "counter"}
    async def aclose(self):
        pass
    async def generate(self, request):
        word = request.messages[-1].content
        return Completion(text=word if repeat_index() < RIGHT[word] else "wrong")

def pytest_llmeval_register_runners(registry):
    registry.register("counter", lambda settings: Counter())
"""
CASES = [{"id": w, "input": w, "expected_output": w} for w in ("alpha", "beta", "gamma")]


def test_wilson_and_the_estimators_by_hand() -> None:
    low, high = wilson(3, 4)
    assert (round(low or 0, 4), round(high or 0, 4)) == (0.3006, 0.9544)
    assert wilson(0, 0) == (None, None)
    low, high = wilson(5, 5)
    assert round(low or 0, 4) == 0.5655 and high == 1.0
    # n=5 runs, c=2 passed: pass@1 = 2/5, pass@2 = 1 - C(3,2)/C(5,2) = 0.7, pass^2 = 1/10
    assert pass_at_k([(5, 2)], 1) == pytest.approx(0.4)
    assert pass_at_k([(5, 2)], 2) == pytest.approx(0.7)
    assert pass_hat_k([(5, 2)], 2) == pytest.approx(0.1)
    assert pass_at_k([(5, 2), (5, 5), (5, 0)], 2) == pytest.approx((0.7 + 1 + 0) / 3)
    assert pass_at_k([(1, 1)], 2) is None  # no case has 2 judged runs
    s = summary(["passed", "error", "failed", "passed"])
    assert (s["n"], s["passed"], s["errors"], s["flaky"]) == (4, 2, 1, True)
    assert s["pass_rate"] == pytest.approx(2 / 3, abs=1e-6)


@pytest.mark.parametrize(
    ("rule", "passes", "n", "expected"),
    [
        ("all", 5, 5, True), ("all", 4, 5, False), ("any", 1, 5, True), ("any", 0, 5, False),
        ("majority", 3, 5, True), ("majority", 2, 4, False), ("rate>=0.4", 2, 5, True),
        ("rate>=0.5", 2, 5, False), ("lower>=0.5", 5, 5, True), ("lower>=0.5", 4, 5, False),
    ],
)  # fmt: skip
def test_repeat_rules(rule: str, passes: int, n: int, expected: bool) -> None:
    assert parse_rule(rule)(passes, n) is expected


def test_bad_rules_are_usage_errors(pytester: pytest.Pytester) -> None:
    with pytest.raises(ValueError, match="expected all, any, majority"):
        parse_rule("most")
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest("--llmeval-repeat-rule", "rate>=2")
    assert "--llmeval-repeat-rule: bad repeat rule 'rate>=2'" in result.stderr.str()


def _run(pytester: pytest.Pytester, run: str, *args: str) -> Any:
    return pytester.runpytest(
        "--llmeval-runner", "counter", "--llmeval-repeats", "5", "--llmeval-run-dir", run,
        "-p", "no:cacheprovider", *args,
    )  # fmt: skip


@pytest.fixture
def counter(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(COUNTER_CONFTEST)
    write_json(pytester, "c.golden.json", CASES)
    return pytester


def test_five_runs_per_case_one_test_each(counter: pytest.Pytester) -> None:
    result = _run(counter, "run")
    result.assert_outcomes(passed=1, failed=2)  # majority: alpha 5/5, beta 2/5, gamma 0/5
    assert "repeat rule majority: 2/5 runs passed (passed, passed, failed, failed, failed)" in (
        result.stdout.str()
    )
    rows = {r["case_id"]: r for r in read_jsonl(counter.path / "run" / "results.jsonl")}
    beta = rows["beta"]["repeats"]
    assert beta["outcomes"] == ["passed", "passed", "failed", "failed", "failed"]
    assert (beta["n"], beta["passed"], beta["errors"], beta["flaky"]) == (5, 2, 0, True)
    assert beta["pass_rate"] == 0.4
    low, high = wilson(2, 5)
    assert (beta["low"], beta["high"]) == (round(low or 0, 6), round(high or 0, 6))
    assert rows["beta"]["scores"]["exact_match"] == pytest.approx(0.4)
    assert rows["alpha"]["repeats"]["flaky"] is False
    body = json.loads((counter.path / "run" / "report.json").read_text())["suites"]["golden"]
    # pass@k over (n, c) = (5, 5), (5, 2), (5, 0)
    for k in range(1, 6):
        at = (1 + (1 - math.comb(3, k) / math.comb(5, k)) + 0) / 3
        hat = (1 + math.comb(2, k) / math.comb(5, k) + 0) / 3
        assert body["pass_at_k"][str(k)] == pytest.approx(at, abs=1e-6)
        assert body["pass_hat_k"][str(k)] == pytest.approx(hat, abs=1e-6)
    assert body["flaky"] == 1 and body["repeat_pass_rate"] == pytest.approx(7 / 15, abs=1e-6)
    low, high = wilson(7, 15)
    assert body["pass_rate.low"] == pytest.approx(low, abs=1e-6)
    events = read_jsonl(counter.path / "run" / "events.jsonl")
    assert sorted({e["repeat"] for e in events if e["sample_id"] == "beta"}) == [0, 1, 2, 3, 4]


def test_rules_and_gates_on_interval_bounds(counter: pytest.Pytester) -> None:
    any_rule = _run(counter, "any", "--llmeval-repeat-rule", "any")
    any_rule.assert_outcomes(passed=2, failed=1)
    gated = _run(counter, "gated", "--llmeval-gate", "golden.pass_rate.low>=0.5")
    assert gated.ret == 1
    assert "gate golden.pass_rate.low>=0.5: FAILED" in gated.stdout.str()


def test_recorded_repeats_replay_exactly(counter: pytest.Pytester) -> None:
    _run(counter, "live", "--llmeval-record", "new").assert_outcomes(passed=1, failed=2)
    counter.makeconftest("")  # the model is gone; its recordings answer
    replayed = counter.runpytest(
        "--llmeval-runner", "replay", "--llmeval-repeats", "5", "--llmeval-run-dir", "replayed"
    )
    replayed.assert_outcomes(passed=1, failed=2)
    live, live_report = run_outputs(counter.path / "live")
    again, again_report = run_outputs(counter.path / "replayed")
    assert [r["repeats"] for r in live] == [r["repeats"] for r in again]
    assert (
        live_report["suites"]["golden"]["pass_at_k"]
        == again_report["suites"]["golden"]["pass_at_k"]
    )


def test_xdist_gives_the_same_statistics(counter: pytest.Pytester) -> None:
    _run(counter, "serial")
    _run(counter, "workers", "-n", "2")
    serial, serial_report = run_outputs(counter.path / "serial")
    workers, workers_report = run_outputs(counter.path / "workers")
    assert serial == workers
    assert serial_report["suites"] == workers_report["suites"]


def test_a_manifest_or_a_case_sets_its_own_repeats(counter: pytest.Pytester) -> None:
    write_json(counter, "data/cases.json", [{**CASES[1], "metadata": {"repeats": 2}}])
    (counter.path / "m.llmeval.yaml").write_text(
        "suite: golden\ndata: data/cases.json\nrepeats: 3\n"
    )
    (counter.path / "c.golden.json").unlink()
    counter.runpytest("--llmeval-runner", "counter", "--llmeval-run-dir", "run")
    (row,) = read_jsonl(counter.path / "run" / "results.jsonl")
    assert row["repeats"]["outcomes"] == ["passed", "passed"]  # the case's own 2 wins


def test_baselines_under_repeats_judge_rates_with_their_intervals(
    counter: pytest.Pytester,
) -> None:
    _run(counter, "base", "--llmeval-update-baseline", "baseline.json")
    # beta 2/5 -> 1/5 and alpha 5/5: the intervals overlap, so no regression is claimed,
    # although beta's single outcome stays "failed" and a 0/5 gamma is unchanged
    counter.makeconftest(COUNTER_CONFTEST.replace('"beta": 2', '"beta": 1'))
    same = _run(counter, "same", "--llmeval-baseline", "baseline.json")
    assert "baseline: no regressions" in same.stdout.str()
    # alpha 5/5 -> 0/5: the current interval lies wholly below the baseline's
    counter.makeconftest(COUNTER_CONFTEST.replace('"alpha": 99', '"alpha": 0'))
    worse = _run(counter, "worse", "--llmeval-baseline", "baseline.json")
    assert worse.ret == 1
    diff = json.loads((counter.path / "worse" / "report.json").read_text())["baseline"]
    assert diff["flips"]["pass->fail"] == ["c.golden.json::alpha"]
