"""A case's test reports as junit, the terminal and ``--durations`` show them.

* **Its own time.** With run-ahead the dispatcher runs cases concurrently, and an item's setup
  waits for its transcript: the first case would wait out the others' work and the later ones
  none. Each eval item's call report therefore carries the case's own measured duration (the
  transcript's), and the wait in setup is not counted.
* **Under** ``--llmeval-exit-on gates`` a case that fails its own check (or could not be judged)
  does not fail the run, so it is reported as an expected failure (``x``; junit
  ``<skipped type="pytest.xfail">``) with the reason, and only the gate entries can turn CI
  red. A broken input item (a record, data file or manifest that could not be read) has no
  case: it stays an error and fails the run (:attr:`~pytest_llmeval.report.verdict.Verdict.broken`).
* **An error found while scoring is an error.** A case can be found unjudgeable only once it
  is scored (a repeat errored, a score is not a finite number): pytest's call phase failed,
  and the terminal counts and shows it as the error it is (``E``, ``ERROR``), as
  ``results.jsonl`` does.
"""

from __future__ import annotations

import pytest

from pytest_llmeval.collect import EvalItem
from pytest_llmeval.models import Transcript

__all__ = ["adjust", "teststatus"]


def adjust(item: EvalItem, report: pytest.TestReport, transcript: Transcript | None) -> None:
    """Set ``report``'s duration to the case's own and, under ``--llmeval-exit-on gates``, turn
    a case's failure into an expected failure. Called after the result was attached."""
    _mark_scored_error(report)
    if transcript is not None:
        if report.when == "setup" and report.passed:
            report.duration = 0.0  # waiting for the transcript is not this case's time
        elif report.when == "call":
            report.duration = transcript.duration_ms / 1000
    if item.state.settings.exit_on == "gates" and report.failed and item.case is not None:
        what = "failed its own check" if report.when == "call" else "could not be judged"
        message = _first_line(report)
        report.outcome = "skipped"
        why = "--llmeval-exit-on gates: the gates decide"
        report.wasxfail = f"the case {what} ({why}): {message}"


def _first_line(report: pytest.TestReport) -> str:
    text = report.longreprtext.strip()
    return text.splitlines()[0] if text else "no message"


SCORED_ERROR_ATTR = "llmeval_scored_error"
"""Set on the call report of a case that errored while it was scored. The result itself
(``report.llmeval``) is taken off the report once collected, and pytest asks for a report's
status again when it writes its short summary."""


def _mark_scored_error(report: pytest.TestReport) -> None:
    data = getattr(report, "llmeval", None)
    scored_error = isinstance(data, dict) and data.get("outcome") == "error"
    if report.when == "call" and report.failed and scored_error:
        setattr(report, SCORED_ERROR_ATTR, True)


def teststatus(report: pytest.TestReport) -> tuple[str, str, str] | None:
    """``("error", "E", "ERROR")`` for the call report of a case that errored while it was
    scored; ``None`` (pytest's own status) for every other report."""
    if report.failed and getattr(report, SCORED_ERROR_ATTR, False):
        return "error", "E", "ERROR"
    return None
