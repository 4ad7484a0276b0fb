"""Collection nodes: an eval file (or a ``*.llmeval.yaml`` manifest) and one item per case.

A broken record never becomes a collection error (that would stop the whole session): it
becomes an item that errors in setup, named ``line<N>``, whose message names ``path:line``,
the field and what was expected."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from pytest_llmeval.core.clip import clip
from pytest_llmeval.core.errors import CaseFileError, EvalFailure, LLMEvalError, RunnerError
from pytest_llmeval.core.finite import non_finite_scores
from pytest_llmeval.core.models import CaseResult, CaseScore, EvalCase, Transcript
from pytest_llmeval.core.repeats import score_repeats
from pytest_llmeval.inputs.loading import lone_surrogate
from pytest_llmeval.inputs.manifest import SUFFIX, Manifest
from pytest_llmeval.inputs.regular import NOT_REGULAR, not_regular
from pytest_llmeval.plugin.compat import fixture_info, skip_at_item
from pytest_llmeval.plugin.dry_sessions import runs_no_case
from pytest_llmeval.plugin.fixtures import (
    FixtureValues,
    reuse_fixture_values,
    session_fixtures,
)
from pytest_llmeval.plugin.resume import resume_key
from pytest_llmeval.plugin.runner_model import RUNNER_MODEL_KEY, other_model
from pytest_llmeval.suites.base import (
    CaseSource,
    LoadItem,
    PendingCase,
    Suite,
    fallback_case_id,
)
from pytest_llmeval.suites.fields import check_counts
from pytest_llmeval.suites.unclaimed import EMPTY_SUITE, why_unclaimed
from pytest_llmeval.tools.broker import ToolBroker

if TYPE_CHECKING:
    from pytest import ExceptionInfo

    from pytest_llmeval.plugin.compat import TerminalRepr
    from pytest_llmeval.plugin.state import LLMEvalState

HEAD_BYTES = 65536


def display_path(path: Path, rootdir: Path) -> str:
    try:
        return path.relative_to(rootdir).as_posix()
    except ValueError:
        return path.as_posix()


class EvalFile(pytest.File):
    """A data file claimed by a suite, or a manifest that names the suite and the data file."""

    def __init__(self, *, state: LLMEvalState, **kwargs: Any):
        super().__init__(**kwargs)
        self.state = state
        self.suite_name = "unknown"
        self.data_display = display_path(self.path, state.settings.rootdir)
        self.manifest_name = self.data_display if self.path.name.endswith(SUFFIX) else None
        """This file's name (relative to the rootdir) when it is a manifest: its key in the
        session's :class:`~pytest_llmeval.inputs.manifest.ManifestIndex`, readable or not."""
        self.manifest: Manifest | None = None
        """The manifest the cases were collected through, once read (``None`` for a data file
        collected on its own, or a manifest that cannot be read)."""
        self.fixture_values: FixtureValues | None = None
        """What the last item's fixtures resolved to, when every one is session-scoped."""

    @property
    def misses(self) -> str:
        """The manifest's ``misses``: ``fail`` (a missed case fails) or ``xfail`` (it is an
        expected failure, pytest's ``x``: a benchmark's cases inform, its gates decide)."""
        return self.manifest.misses if self.manifest is not None else "fail"

    def collect(self) -> Iterator[pytest.Item]:
        try:
            suite, source = self._resolve()
        except CaseFileError as exc:
            yield EvalItem.from_parent(self, name=_error_name(exc), problem=exc)
            return
        self.suite_name, self.data_display = suite.name, source.display
        items: dict[str, EvalItem] = {}
        self._build(suite, source, items)
        for name in sorted(items):
            yield items[name]

    def _build(self, suite: Suite, source: CaseSource, items: dict[str, EvalItem]) -> None:
        """One item per loaded case (or per broken record) into ``items``, by name.

        Every record becomes exactly one item. A case named by its own id takes that name
        first; names the plugin makes up (an id-less row's hash, a broken record's
        ``line<N>``, a duplicate's ``<id>@line<N>``) are given after every real id of the file
        is known, so none of them can take a real case's name, and one already taken gets
        ``_`` appended until it is free (the same file always gives the same names)."""
        later: list[LoadItem] = []
        for loaded in _guarded(suite.load(source, self.state.context)):
            if isinstance(loaded, CaseFileError):
                if loaded.case_id and loaded.case_id not in items:
                    self._add(items, loaded.case_id, loaded)  # the broken row's own id
                else:
                    later.append(loaded)
            elif _made_up_id(loaded) or loaded.case_id in items:
                later.append(loaded)
            else:
                self._add(items, loaded.case_id, loaded)
        # id-less rows' hashes next (a real id equal to one keeps it), then the made-up names
        for loaded in later:
            if not isinstance(loaded, CaseFileError) and loaded.case_id not in items:
                self._add(items, loaded.case_id, loaded)
        for loaded in later:
            if isinstance(loaded, CaseFileError):
                base = _error_name(loaded)
                if loaded.case_id:
                    base = f"{loaded.case_id}@line{loaded.line}"
                self._add(items, _free(base, items), loaded)
            elif not items[loaded.case_id].holds(loaded):
                first = items[loaded.case_id]
                problem = CaseFileError(
                    source.display,
                    loaded.line,
                    f"duplicate case id {loaded.case_id!r} (first defined at line {first.line})",
                    field="id",
                )
                self._add(items, _free(f"{loaded.case_id}@line{loaded.line}", items), problem)

    def _add(self, items: dict[str, EvalItem], name: str, loaded: LoadItem) -> None:
        # one fixture closure for the whole file (the first item's), as pytest shares one
        # among a parametrized test's items: all items here call the same stand-in
        fixtureinfo = fixture_info(next(iter(items.values()))) if items else None
        if isinstance(loaded, CaseFileError):
            item = EvalItem.from_parent(self, name=name, problem=loaded, fixtureinfo=fixtureinfo)
        elif isinstance(loaded, PendingCase):
            item = EvalItem.from_parent(self, name=name, pending=loaded, fixtureinfo=fixtureinfo)
        else:
            item = EvalItem.from_parent(self, name=name, case=loaded, fixtureinfo=fixtureinfo)
        items[name] = item

    def _resolve(self) -> tuple[Suite, CaseSource]:
        rootdir = self.state.settings.rootdir
        if self.manifest_name is not None:
            return self._from_manifest()
        display = display_path(self.path, rootdir)
        if not_regular(self.path):  # a FIFO: opening it waits for a writer
            raise CaseFileError(display, None, NOT_REGULAR)
        try:
            with self.path.open("rb") as handle:
                head = handle.read(HEAD_BYTES)
        except OSError as exc:
            raise CaseFileError(display, None, f"cannot read the file: {exc.strerror}") from None
        source = CaseSource(path=self.path, display=display)
        if not head.strip():
            return EMPTY_SUITE, source
        try:
            suite = self.state.suites.claim(self.path, head)
        except RecursionError:  # a suite that parsed a too deeply nested head itself
            suite = None
        if suite is None:
            empty, syntax_error = why_unclaimed(self.path, display)
            if empty:
                return EMPTY_SUITE, source
            raise syntax_error or CaseFileError(
                display,
                1,
                "no suite recognises this file (known suites: "
                f"{', '.join(self.state.suites.names())}); name the suite in a "
                "*.llmeval.yaml manifest or fix the file's fields",
            )
        return suite, source

    def _from_manifest(self) -> tuple[Suite, CaseSource]:
        index = self.state.manifests
        manifest = index.read(self.path)  # read once this session, with the targets
        suite = self.state.suites.get(manifest.suite)
        if suite is None:
            raise CaseFileError(
                manifest.display,
                manifest.line("suite"),
                f"unknown suite {manifest.suite!r}; known suites: "
                f"{', '.join(self.state.suites.names())}",
                field="suite",
            )
        manifest.check_options(suite.name, suite.manifest_options)
        path = manifest.data_path(folder=suite.data_folder)
        data = index.display(path)
        index.collected(manifest, data)
        self.manifest = manifest
        return suite, CaseSource(path=path, display=data, options=dict(manifest.options))


def _guarded(loads: Iterator[LoadItem]) -> Iterator[LoadItem]:
    """A suite's records; a CaseFileError the suite raises instead of yielding (a bad option
    found while loading) ends the file as one more error item, not as a collection error."""
    try:
        yield from loads
    except CaseFileError as exc:
        yield exc


def _made_up_id(loaded: EvalCase | PendingCase) -> bool:
    """Whether a row's id is the hash the plugin gives a row without one (a real id of the
    same 13 characters keeps its name; the hash is worked out only for such ids)."""
    case_id = loaded.case_id
    return (
        isinstance(loaded, PendingCase)
        and len(case_id) == 13
        and case_id[0] == "h"
        and fallback_case_id(loaded.row) == case_id
    )


def _free(name: str, items: dict[str, EvalItem]) -> str:
    """``name``, with ``_`` appended until no item has it."""
    while name in items:
        name += "_"
    return name


def _error_name(exc: CaseFileError) -> str:
    if exc.case_id:
        return exc.case_id
    return f"line{exc.line}" if exc.line else "file"


def _run_case(llmeval_agent: Any, llmeval_broker: Any) -> None:
    """Stand-in test function: it exists so pytest resolves the item's fixtures."""


class EvalItem(pytest.Function):
    """One eval case as a pytest test. Setup resolves the fixtures and fetches the transcript
    from the dispatcher (an infrastructure fault or a broken case is an error there; in a
    session that runs no test it stops after the fixtures). ``runtest`` scores the transcript
    and raises :class:`EvalFailure` when the case misses."""

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
        assert isinstance(parent, EvalFile)
        self.eval_file = parent
        """The data file this case came from (looked up for every phase: kept, not derived)."""
        self.state: LLMEvalState = parent.state
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
        self.category = case.category if case else pending.category if pending else None
        """The case's category, known before the case is built (and if it cannot be)."""
        if case or pending:
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
        named = self.state.runner_model
        agent_first = not named.settled and self.runnable
        if agent_first:  # no runner of the plugin's: the first case's agent names the model
            try:
                self._set_up_fixtures()  # before any case is built (prompt_format: auto)
            except (Exception, pytest.skip.Exception, pytest.fail.Exception):
                self._own_outcome()  # a broken row's error (or the case's skip) comes first
                raise
            named.settle(self._agent_fingerprint(), from_agent=True)
        case = self.case
        if self.problem is not None:
            raise self.problem
        assert case is not None
        if case.skip_reason:
            _skip(case.skip_reason)
        if not agent_first:
            self._set_up_fixtures()
        agent = self.funcargs["llmeval_agent"]
        resume = self.config.stash.get(resume_key, None)
        if resume is not None:
            resume.check_runner(self, agent)  # the same runner as the earlier attempts
        if named.from_agent and RUNNER_MODEL_KEY in case.metadata:  # the first agent's model
            other = other_model(case.metadata, self.state.results.fingerprint_of(agent)[0])
            if other is not None:
                raise RunnerError(other, kind="agent")
        broker = cast(ToolBroker, self.funcargs["llmeval_broker"])  # or a user's look-alike
        self.transcript = self.state.runahead.transcript_for(self, agent, broker)
        if self.transcript.error is not None:
            kind: Any = self.transcript.error_kind or "agent"  # one of RunnerErrorKind
            raise RunnerError(_fault_message(self.transcript), kind=kind)
        invalid = _invalid_unicode(self.transcript)
        if invalid is not None:
            raise RunnerError(invalid, kind="protocol")

    def _agent_fingerprint(self) -> dict[str, Any]:
        """The fingerprint of the case's agent; a ``fingerprint()`` of a user's agent that
        fails is the case's error, in one line."""
        try:
            return self.state.results.fingerprint_of(self.funcargs["llmeval_agent"])[0]
        except Exception as exc:
            message = f"llmeval_agent's fingerprint() failed: {type(exc).__name__}: {exc}"
            raise RunnerError(message, kind="agent") from None

    def _own_outcome(self) -> None:
        """When the fixtures failed before the agent could name its model: the row's own
        error (a broken row), or the case's own skip, as when the case is built first. The
        case is built without settling the model, and kept for this item's report (which
        must not settle it either: the next case's agent may still name it)."""
        with self.state.runner_model.probe():
            case = self.case
        if self.problem is not None:
            raise self.problem from None
        if case is not None and case.skip_reason:
            _skip(case.skip_reason)

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
        assert self.case is not None and self.transcript is not None
        suite = self.state.suites.get(self.case.suite)
        assert suite is not None
        case, context = self.case, self.state.context

        source = f"the {suite.name} suite"

        def judged(transcript: Transcript) -> CaseScore:
            """The suite's score of one run, its scores finite (else a ``score`` error)."""
            one = suite.score(case, transcript, context)
            problem = non_finite_scores(one.scores, source)
            if problem is not None:
                raise RunnerError(problem, kind="score")
            return one

        if self.transcript.repeats:
            score = score_repeats(judged, self.transcript.repeats, self.state.settings.repeat_rule)
        else:
            score = judged(self.transcript)
        self.result = self.state.results.from_score(self, score)
        if score.error is not None:  # a repeat errored: the case is an error, its record kept
            raise RunnerError(score.error, kind=score.error_kind or "agent")  # type: ignore[arg-type]
        if score.skipped:
            _skip(score.skipped)
        if not score.passed:
            message = score.failure or "the case did not pass"
            if self.eval_file.misses == "xfail":
                pytest.xfail(f"{self.case.file}:{self.line}: {message}")
            shown = self.state.results.shown_response(self.case.suite, self.transcript.response)
            raise EvalFailure(message, _details(self.transcript, shown))

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
        where = f"{self.case.file}:{self.line}" if self.case else self.data_display
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


def _fault_message(transcript: Transcript) -> str:
    """The message of a case whose transcript is a fault: under repeats every run errored
    (a case with a run that did not is scored), and the message says so."""
    assert transcript.error is not None
    runs = len(transcript.repeats)
    if runs > 1:
        return f"{runs} of {runs} repeats errored; repeat 1: {transcript.error}"
    return transcript.error


def _invalid_unicode(transcript: Transcript) -> str | None:
    """What in the model's output is not valid Unicode (a lone surrogate), or ``None``.

    Such text cannot be scored or shown as it is: the case is an error saying so, and the
    reports keep the text escaped (``\\ud800``)."""
    found = lone_surrogate(transcript.response, "response")
    for k, call in enumerate(transcript.tool_calls):
        found = found or lone_surrogate(
            {"name": call.name, "params": call.params, "arguments": call.arguments_error},
            f"tool_calls[{k}]",
        )
    for k, message in enumerate(transcript.messages):
        if message.role == "assistant":
            found = found or lone_surrogate(message.content, f"messages[{k}].content")
    return f"the model's {found[0]} is {found[1]}" if found else None


_skip = skip_at_item  # a skip that reports the case's file and line rather than this module's


def _details(transcript: Transcript, response: str) -> str:
    calls = ", ".join(
        f"{c.name}({', '.join(f'{k}={v!r}' for k, v in c.params.items())})"
        for c in transcript.tool_calls
    )
    response = clip(response, 500)
    return f"  tool calls: {calls or '(none)'}\n  response:   {response!r}"
