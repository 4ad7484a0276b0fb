"""Every exit-status rule of README's "When is the run red?", as one table."""

from __future__ import annotations

import pytest

from pytest_llmeval.report.exit_status import (
    ExitFacts,
    escalate,
    exit_status,
    on_error,
    replayed_status,
)

# (what happened, facts, exit status)
ROWS = [
    ("green", ExitFacts(status=0), 0),
    ("a case missed its check", ExitFacts(status=1, cases_failed=True), 1),
    ("a miss under exit-on gates, gates pass", ExitFacts(1, "gates", cases_failed=True), 0),
    ("a miss under exit-on gates, a gate fails", ExitFacts(1, "gates", verdict_failed=True), 1),
    ("a gate failed", ExitFacts(status=0, verdict_failed=True), 1),
    ("a plain test failed, exit-on gates", ExitFacts(1, "gates", plain_failed=True), 1),
    ("a plain test failed, pytest said 0", ExitFacts(0, "gates", plain_failed=True), 1),
    ("-x, gates pass under exit-on gates", ExitFacts(1, "gates", interrupted=True), 1),
    ("-x, a case failed", ExitFacts(status=1, cases_failed=True, interrupted=True), 1),
    ("Ctrl-C / SIGTERM / a budget", ExitFacts(status=2, interrupted=True), 2),
    ("Ctrl-C with a failed gate", ExitFacts(status=2, verdict_failed=True, interrupted=True), 2),
    ("cut short, pytest said 0 (cases left unrun)", ExitFacts(status=0, interrupted=True), 2),
    ("an internal error stands", ExitFacts(status=3, verdict_failed=True), 3),
    ("no tests collected (an empty shard)", ExitFacts(status=5), 5),
    ("another plugin's status stands", ExitFacts(status=7), 7),
    ("resume: nothing left to run", ExitFacts(status=5, resumed=True), 0),
    ("resume: an earlier case failed", ExitFacts(5, resumed=True, cases_failed=True), 1),
    ("resume: earlier miss, exit-on gates", ExitFacts(5, "gates", True, resumed=True), 0),
    ("resume: a failed earlier gate", ExitFacts(0, resumed=True, verdict_failed=True), 1),
    ("resume: interrupted again", ExitFacts(2, resumed=True, cases_failed=True), 2),
    ("a journal stopped", ExitFacts(status=0, unjournaled=True), 1),
    ("a journal stopped after Ctrl-C", ExitFacts(status=2, unjournaled=True), 1),
    ("a worker refused the resume", ExitFacts(status=1, refused=True, unjournaled=True), 4),
]


@pytest.mark.parametrize(("facts", "expected"), [row[1:] for row in ROWS], ids=[r[0] for r in ROWS])
def test_exit_status(facts: ExitFacts, expected: int) -> None:
    assert exit_status(facts) == expected


# summarize and merge: the status their session had over the same cases (then the table above)
REPLAYED = [
    ("no case failed", False, None, 0),
    ("a case failed", True, None, 1),
    ("-x / --maxfail", False, "maxfail", 1),
    ("a signal", False, "sigterm", 2),
    ("a budget, a case failed", True, "budget", 2),
    ("a merge of shards cut short two ways", False, "budget+maxfail", 2),
]


@pytest.mark.parametrize(
    ("failed", "reason", "expected"), [r[1:] for r in REPLAYED], ids=[r[0] for r in REPLAYED]
)
def test_replayed_status(failed: bool, reason: str | None, expected: int) -> None:
    assert replayed_status(failed, reason) == expected


def test_late_changes_never_make_a_status_greener() -> None:
    assert escalate(0, failed=True) == 1
    assert escalate(2, failed=True) == 2
    assert escalate(0, failed=False) == 0
    assert (on_error(None), on_error(0), on_error(3), on_error("boom")) == (1, 1, 3, 1)
