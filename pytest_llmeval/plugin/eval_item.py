"""The pytest item of one eval case: set up, wait for the transcript, score, raise.

Setup resolves the item's fixtures and waits for the case's transcript from the run-ahead
(the dispatcher ran it); ``runtest`` has the engine score it
(:func:`~pytest_llmeval.engine.case_score.score_case`) and raises what pytest reports: a
:class:`RunnerError` for a fault, a skip, an xfail (a manifest's ``misses: xfail``) or an
:class:`EvalFailure` for a miss, which ``repr_failure`` renders in a few lines."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import pytest

from pytest_llmeval.core.errors import CaseFileError, EvalFailure, LLMEvalError, RunnerError
from pytest_llmeval.core.models import CaseResult, EvalCase, Transcript
from pytest_llmeval.engine.case_score import score_case, score_fault, transcript_fault
from pytest_llmeval.plugin.compat import skip_at_item
from pytest_llmeval.plugin.dry_sessions import runs_no_case
from pytest_llmeval.plugin.fixtures import FixtureValues, reuse_fixture_values, session_fixtures
from pytest_llmeval.plugin.resume import resume_key
from pytest_llmeval.report.case_view import failure_details
from pytest_llmeval.suites.base import LoadItem, PendingCase
from pytest_llmeval.suites.fields import check_counts
from pytest_llmeval.tools.broker import ToolBroker

if TYPE_CHECKING:
    from pytest import ExceptionInfo

    from pytest_llmeval.plugin.compat import TerminalRepr
    from pytest_llmeval.plugin.state import LLMEvalState

__all__ = ["CaseFile", "EvalItem", "case_fingerprint"]


class CaseFile(Protocol):
    """The file node an item's case came from (:class:`~pytest_llmeval.plugin.collect.
    EvalFile`), as the item reads it."""

    path: Path
    state: LLMEvalState
    suite_name: str
    data_display: str
    manifest_name: str | None
    """The manifest's name when the file is a manifest (``None`` for a data file)."""
    fixture_values: FixtureValues | None

    @property
    def misses(self) -> str:
        """``fail`` or ``xfail``: what a missed case is (the manifest's ``misses``)."""


def _run_case(llmeval_agent: Any, llmeval_broker: Any) -> None:
    """Stand-in test function: it exists so pytest resolves the item's fixtures."""


class EvalItem(pytest.Function):
    """One eval case as a pytest test. Setup resolves the fixtures and fetches the transcript
    from the dispatcher (an infrastructure fault or a broken case is an error there; in a
    session that runs no test it stops after the fixtures). ``runtest`` scores the transcript
    and raises :class:`EvalFailure` when the case misses."""

    # pytest keeps every item to the end of the session, and pytest and its plugins set
    # about twenty attributes of their own on each: the item's own nine in slots keep its
    # ``__dict__`` at the size of a plain test function's (half the bytes per case)
    __slots__ = (
        "_case",
        "_pending",
        "category",
        "eval_file",
        "line",
        "problem",
        "result",
        "state",
        "transcript",
    )

    def __init__(
        self,
        *,
        case: EvalCase | None = None,
        pending: PendingCase | None = None,
        problem: CaseFileError | None = None,
        **kwargs: Any,
    ):
        super().__init__(callobj=_run_case, **kwargs)
        parent = self.parent
        assert isinstance(parent, pytest.File) and hasattr(parent, "state")
        self.eval_file = cast(CaseFile, parent)
        """The data file this case came from (looked up for every phase: kept, not derived)."""
        self.state: LLMEvalState = self.eval_file.state
        """The session's plugin state, the file's."""
        if case is not None and problem is None:  # a suite's ready-built case (GAIA)
            try:
                check_counts(case)
            except CaseFileError as exc:
                problem = exc
        self._case = case if problem is None else None
        self._pending = pending
        self.problem = problem
        self.transcript: Transcript | None = None
        self.result: CaseResult | None = None
        known = case or pending or problem
        self.line = (known.line if known else None) or 1
        known_marks = self.state.marks
        self.add_marker(known_marks.shared("llmeval"))
        self.category = known.category if known else None
        """The case's category, known before the case is built (and if it cannot be; a broken
        row's too when its file says it, so ``-m <category>`` keeps it)."""
        if case or pending or self.category:
            marks = case.marks if case else pending.marks if pending else ()
            self.add_marker(known_marks.registered(known_marks.name(self.eval_file.suite_name)))
            for name in (self.category, *marks):
                if name:  # a category named like a suite must not select it (-m golden)
                    marker = known_marks.category(known_marks.name(name))
                    self.add_marker(known_marks.registered(marker))

    @property
    def case(self) -> EvalCase | None:
        """The case, built from its row on first use; ``None`` when the row or the record is
        broken (then :attr:`problem` says why)."""
        if self._case is None and self._pending is not None and self.problem is None:
            try:
                self._case = self._pending.build()
            except CaseFileError as exc:
                self.problem = exc
        return self._case

    @property
    def built_case(self) -> EvalCase | None:
        """The case if it is built (never builds it)."""
        return self._case

    def release(self) -> None:
        """Drop what the finished item no longer needs (pytest keeps every item to the end):
        its transcript and result, and the case when it can be built again from its row."""
        self.transcript = None
        self.result = None
        if self._pending is not None:
            self._case = None

    def holds(self, loaded: LoadItem) -> bool:
        """Whether this item was made from ``loaded`` (a case, a row or a record's error)."""
        return loaded is self._pending or loaded is self._case or loaded is self.problem

    @property
    def runnable(self) -> bool:
        """Whether the item has a case to run (as far as is known without building it)."""
        return self.problem is None and (self._case is not None or self._pending is not None)

    @property
    def suite_name(self) -> str:
        return self.eval_file.suite_name

    @property
    def data_display(self) -> str:
        return self.eval_file.data_display

    def setup(self) -> None:
        if runs_no_case(self.config):  # --setup-only, --setup-plan: its fixtures, no agent
            self._set_up_fixtures()
            return
        case = self.case
        if self.problem is not None:
            raise self.problem
        assert case is not None
        if case.skip_reason:
            _skip(case.skip_reason)
        self._set_up_fixtures()
        agent = self.funcargs["llmeval_agent"]
        self._agent_fingerprint(agent)  # the result carries it: one that fails errs here
        resume = self.config.stash.get(resume_key, None)
        if resume is not None:
            resume.check_runner(self, agent)  # the same runner as the earlier attempts
        broker = cast(ToolBroker, self.funcargs["llmeval_broker"])  # or a user's look-alike
        self.transcript = self.state.run_ahead.transcript_for(self, agent, broker)
        fault = transcript_fault(self.transcript)
        if fault is not None:
            raise fault

    def _agent_fingerprint(self, agent: Any) -> None:
        """Read the fingerprint of the case's agent (once per agent object); a
        ``fingerprint()`` of a user's agent that fails is the case's error, in one line."""
        try:
            self.state.results.fingerprint_of(agent)
        except Exception as exc:
            message = f"llmeval_agent's fingerprint() failed: {type(exc).__name__}: {exc}"
            raise RunnerError(message, kind="agent") from None

    def _set_up_fixtures(self) -> None:
        if not reuse_fixture_values(self, self.eval_file.fixture_values):
            super().setup()
            self.eval_file.fixture_values = FixtureValues.of(self)

    def session_fixtures(self) -> tuple[object, ...]:
        """What answers ``llmeval_agent`` and ``llmeval_broker`` (the run-ahead's key)."""
        return session_fixtures(self)

    @property
    def agent(self) -> Any:
        """The ``llmeval_agent`` the case ran with, once set up (``None`` before)."""
        return self.funcargs.get("llmeval_agent")

    def runtest(self) -> None:
        case, transcript = self.case, self.transcript
        assert case is not None and transcript is not None
        suite = self.state.suites.get(case.suite)
        assert suite is not None
        rule = self.state.settings.repeat_rule
        score = score_case(case, transcript, suite, self.state.context, rule)
        self.result = self.state.results.from_score(self, score)
        fault = score_fault(score)
        if fault is not None:  # a repeat errored: the case is an error, its record kept
            raise fault
        if score.skipped:
            _skip(score.skipped)
        if not score.passed:
            message = score.failure or "the case did not pass"
            if self.eval_file.misses == "xfail":
                pytest.xfail(f"{case.row_file}:{self.line}: {message}")
            shown = self.state.results.view.shown_response(case.suite, transcript.response)
            raise EvalFailure(message, failure_details(transcript, shown))

    def reportinfo(self) -> tuple[Path, int, str]:
        path = self.path
        suite = "llmeval"
        if self._case is not None or self._pending is not None:  # not built just for this
            path = self.state.settings.rootdir / self.data_display
            suite = self.suite_name
        return path, self.line - 1, f"{suite}: {self.name}"

    def repr_failure(
        self,
        excinfo: ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | TerminalRepr:
        short = self._short_repr(excinfo.value)
        return short if short is not None else super().repr_failure(excinfo)

    def _repr_failure_py(
        self, excinfo: ExceptionInfo[BaseException], style: Any = None
    ) -> TerminalRepr:
        # pytest renders setup errors through this private method, not repr_failure (see
        # compat.py); a plain string is a valid longrepr (reports print str() of anything
        # without toterminal)
        short = self._short_repr(excinfo.value)
        if short is not None:
            return cast("TerminalRepr", short)
        return super()._repr_failure_py(excinfo, style=style)

    def _short_repr(self, exc: BaseException) -> str | None:
        where = f"{self.case.row_file}:{self.line}" if self.case else self.data_display
        if isinstance(exc, EvalFailure):
            return "\n".join(x for x in (f"{where}: {exc.message}", exc.details) if x)
        if isinstance(exc, CaseFileError):
            return str(exc)
        if isinstance(exc, RunnerError):
            return f"{where}: {exc.kind} error: {exc}"
        if isinstance(exc, LLMEvalError):
            return f"{where}: {type(exc).__name__}: {exc}"
        return None


def case_fingerprint(item: pytest.Item) -> str | None:
    """An eval item's case fingerprint, for a resume to compare (the case is built from its row
    only for this: released again, it is built anew when it runs); ``None`` for a broken row
    or another kind of item."""
    if not isinstance(item, EvalItem):
        return None
    case = item.case
    fingerprint = case.fingerprint if case is not None else None
    item.release()
    return fingerprint or None


_skip = skip_at_item  # a skip that reports the case's file and line rather than this module's
