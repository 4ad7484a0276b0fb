"""A case's test reports as junit, the terminal and ``--durations`` show them.

* **Its own time.** With run-ahead the dispatcher runs cases concurrently, and an item's setup
  waits for its transcript: the first case would wait out the others' work and the later ones
  none. Each eval item's call report therefore carries the case's own measured duration (the
  transcript's), and the wait in setup is not counted.
* **Under** ``--llmeval-exit-on gates`` a case that was scored and missed does not fail the
  run, so it is reported as an expected failure (``x``; junit ``<skipped type="pytest.xfail">``)
  with the reason, and the gate entries decide. Only a scored miss: a case that errored (its
  runner, backend, cassette, judge, protocol or agent failed, or its scoring raised) was not
  judged, so it stays an error and fails the run
  (:attr:`~pytest_llmeval.report.verdict.Verdict.errored`), as does a broken input item (a
  record, data file or manifest that could not be read:
  :attr:`~pytest_llmeval.report.verdict.Verdict.broken`).
* **A user's xfail mark never hides an error.** pytest's ``xfail`` (a mark, ``strict=True``,
  ``raises=...``, or one a fixture applies with ``request.applymarker``) turns any exception
  of any phase into an expected failure. On an eval case only a scored miss may be one: an
  error (the runner, the backend, a broken row, a fixture, a scorer) is set back to the error
  it is (:func:`unhide_error`), before its result is made, so ``results.jsonl``, junit,
  ``--json-report``, report.json and the recorded verdict all read it as an error.
* **An error found while scoring is an error.** A case can be found unjudgeable only once it
  is scored (a repeat errored, a score is not a finite number): pytest's call phase failed,
  and the terminal counts and shows it as the error it is (``E``, ``ERROR``), as
  ``results.jsonl`` does.
"""

from __future__ import annotations

import pytest

from pytest_llmeval.core.errors import EvalFailure
from pytest_llmeval.core.models import Transcript
from pytest_llmeval.plugin import worker_wire as wire
from pytest_llmeval.plugin.case_records import CaseRecord
from pytest_llmeval.plugin.eval_item import EvalItem

__all__ = ["adjust", "is_scored_miss", "teststatus", "unhide_error"]


def adjust(
    item: EvalItem,
    report: pytest.TestReport,
    transcript: Transcript | None,
    excinfo: pytest.ExceptionInfo[BaseException] | None,
    record: CaseRecord | None,
) -> None:
    """Set ``report``'s duration to the case's own and, under ``--llmeval-exit-on gates``, turn
    a scored miss (an :class:`EvalFailure` raised by ``runtest``) into an expected failure.
    ``record`` is the case result the report carries, if any."""
    _mark_scored_error(report, record)
    if transcript is not None:
        if report.when == "setup" and report.passed:
            report.duration = 0.0  # waiting for the transcript is not this case's time
        elif report.when == "call":
            report.duration = transcript.duration_ms / 1000
    if is_scored_miss(report, excinfo) and item.state.settings.exit_on == "gates":
        message = _first_line(report)
        report.outcome = "skipped"
        why = "--llmeval-exit-on gates: the gates decide"
        report.wasxfail = f"the case failed its own check ({why}): {message}"


def unhide_error(
    report: pytest.TestReport, excinfo: pytest.ExceptionInfo[BaseException] | None
) -> None:
    """Make ``report`` the error it is when pytest's xfail handling turned an error into an
    expected failure: only a scored miss (an :class:`EvalFailure`) or pytest's own
    ``xfail()``/``skip()`` (``xfail(run=False)``, an agent's or a manifest's ``pytest.xfail``)
    may read as one."""
    if not report.skipped or excinfo is None or not hasattr(report, "wasxfail"):
        return  # the common case, checked first: a report that was not xfailed
    if isinstance(excinfo.value, (EvalFailure, pytest.xfail.Exception, pytest.skip.Exception)):
        return
    report.outcome = "failed"
    del report.wasxfail


def is_scored_miss(
    report: pytest.TestReport, excinfo: pytest.ExceptionInfo[BaseException] | None
) -> bool:
    """Whether ``report`` is a case that was scored and missed: a failed call whose exception
    is the case's :class:`EvalFailure`. An error anywhere else (setup, a runner, a judge, a
    scorer that raised) is not: the case was never judged."""
    return (
        report.when == "call"
        and report.failed
        and excinfo is not None
        and isinstance(excinfo.value, EvalFailure)
        and not wire.facts(report).get("scored_error")  # found unjudgeable while scored
    )


def _first_line(report: pytest.TestReport) -> str:
    text = report.longreprtext.strip()
    return text.splitlines()[0] if text else "no message"


def _mark_scored_error(report: pytest.TestReport, record: CaseRecord | None) -> None:
    """Say on the call report of a case that errored while it was scored that it did: the
    report carries no result itself (:mod:`pytest_llmeval.plugin.case_records`), and pytest asks
    for a report's status again when it writes its short summary."""
    if report.when != "call" or report.outcome != "failed":
        return  # only a failed call can have errored while it was scored
    if record is not None and record.outcome == "error":
        wire.add_facts(report, {"scored_error": True})


def teststatus(report: pytest.TestReport) -> tuple[str, str, str] | None:
    """``("error", "E", "ERROR")`` for the call report of a case that errored while it was
    scored; ``None`` (pytest's own status) for every other report."""
    if report.outcome == "failed" and wire.facts(report).get("scored_error"):
        return "error", "E", "ERROR"
    return None  # the common case, checked first: a report that did not fail
