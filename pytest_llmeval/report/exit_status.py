"""The run's exit status: every rule of README's "When is the run red?" that decides a number.

One function, :func:`exit_status`, turns what is known at the end of a run (:class:`ExitFacts`)
into the status the process exits with. The pytest session, ``summarize`` and ``merge`` all call
it, so a run dir judged again exits as its session did. Two small rules serve what happens
after the run dir was written: :func:`escalate` (never greener) and :func:`on_error` (the
session ends on an exception).

The rules, in the order they apply:

1. a session that refused to start (a worker refused the resume) exits 4, whatever else;
2. a resumed session counts the earlier attempts' cases: a clean or "no tests collected"
   status becomes 1 for a case that failed or errored under ``--llmeval-exit-on all``, else 0;
3. only a clean or tests-failed status is judged again (an interruption, an internal or usage
   error, "no tests collected" stand): under ``--llmeval-exit-on gates`` the verdict alone
   decides (a scored miss is an expected failure); under ``all`` a failed verdict makes it 1;
4. a run cut short is never 0: pytest's own status stands (1 after ``-x``), else 2;
5. a failed verdict or a plain test that failed never leaves it 0;
6. a journal that stopped (cases ran that no journal holds) makes it 1.

``summarize`` and ``merge`` have no pytest status: :func:`replayed_status` is the one the
session had over the same cases (1 after ``-x``/``--maxfail``, 2 after a signal or a budget).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pytest_llmeval.core.models import CaseResult

__all__ = [
    "INTERRUPTED",
    "NO_TESTS_COLLECTED",
    "OK",
    "TESTS_FAILED",
    "USAGE_ERROR",
    "ExitFacts",
    "cases_failed",
    "escalate",
    "exit_status",
    "on_error",
    "replayed_status",
]

OK = 0
"""pytest's ``ExitCode.OK``."""
TESTS_FAILED = 1
"""pytest's ``ExitCode.TESTS_FAILED``."""
INTERRUPTED = 2
"""pytest's ``ExitCode.INTERRUPTED``."""
USAGE_ERROR = 4
"""pytest's ``ExitCode.USAGE_ERROR``."""
NO_TESTS_COLLECTED = 5
"""pytest's ``ExitCode.NO_TESTS_COLLECTED`` (an empty shard)."""

MAXFAIL = "maxfail"
"""``Interrupted.reason`` of a run stopped by ``-x``/``--maxfail``."""


@dataclass(frozen=True)
class ExitFacts:
    """What the exit status of a run is decided from."""

    status: int
    """The status pytest ended the session with; for ``summarize`` and ``merge`` the one the
    session had (:func:`replayed_status`)."""
    exit_on: str = "all"
    """``--llmeval-exit-on``: ``all`` (cases and gates) or ``gates`` (the verdict alone)."""
    cases_failed: bool = False
    """An eval case failed or errored (not one of a manifest's ``misses: xfail``)."""
    verdict_failed: bool = False
    """:attr:`Verdict.failed <pytest_llmeval.report.verdict.Verdict.failed>`."""
    plain_failed: bool = False
    """A test of the session that is not an eval case failed (or an eval case's teardown)."""
    interrupted: bool = False
    """The run was cut short (``-x``, a signal, a budget, a crashed worker's cases unrun)."""
    resumed: bool = False
    """The session reused an earlier attempt's results (``--llmeval-resume``)."""
    unjournaled: bool = False
    """Cases ran that no journal holds (a full disk)."""
    refused: bool = False
    """The session refused to start (an xdist worker refused the resume)."""


def exit_status(facts: ExitFacts) -> int:
    """The status the run exits with (the module's rules, in order)."""
    if facts.refused:
        return USAGE_ERROR
    status = facts.status
    if facts.resumed and status in (OK, NO_TESTS_COLLECTED):
        status = TESTS_FAILED if facts.exit_on == "all" and facts.cases_failed else OK
    current = status
    if status in (OK, TESTS_FAILED) and (facts.exit_on == "gates" or facts.verdict_failed):
        status = TESTS_FAILED if facts.verdict_failed else OK
    if status == OK and facts.interrupted:
        status = current if current != OK else INTERRUPTED
    status = escalate(status, facts.verdict_failed or facts.plain_failed)
    return TESTS_FAILED if facts.unjournaled else status


def cases_failed(results: Iterable[CaseResult]) -> bool:
    """Whether an eval case failed or errored (a manifest's ``misses: xfail`` miss did not)."""
    return any(r.outcome in ("failed", "error") and not r.xfailed for r in results)


def replayed_status(cases_failed: bool, interrupted: str | None) -> int:
    """pytest's status of the session over a run dir's cases, for ``summarize`` and ``merge``:
    1 after ``-x``/``--maxfail``, 2 after a signal or a budget (the ``interrupted`` reason),
    else 1 when a case failed or errored."""
    if interrupted is not None:
        return TESTS_FAILED if interrupted == MAXFAIL else INTERRUPTED
    return TESTS_FAILED if cases_failed else OK


def escalate(status: int, failed: bool) -> int:
    """``status`` made 1 when the run ``failed`` and it was 0; never made greener (another
    plugin's non-zero status stands, ``--llmeval-exit-on gates`` too)."""
    return TESTS_FAILED if failed and status == OK else status


def on_error(code: object) -> int:
    """The status of a session that ends on an exception raised after its run dir was
    written: ``sys.exit()``'s non-zero integer, else 1."""
    return code if isinstance(code, int) and not isinstance(code, bool) and code else TESTS_FAILED
