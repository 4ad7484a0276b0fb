"""Per-process plugin state, on the controller and on every xdist worker alike.

It holds the settings, the suite registry, the suite context and the dispatcher; it plans the
run-ahead order once collection is done, and it turns an item's score into the
:class:`CaseResult` that travels on the test report.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from pytest_llmeval import sharding
from pytest_llmeval.broker import ToolBroker
from pytest_llmeval.compat import fixture_closure
from pytest_llmeval.dispatch import Dispatcher, Job
from pytest_llmeval.errors import ConfigError, EvalFailure
from pytest_llmeval.limits import SessionLimits
from pytest_llmeval.models import CaseResult, CaseScore, EvalCase, Outcome, Transcript
from pytest_llmeval.report.fingerprint import fingerprint
from pytest_llmeval.report.redact import Redactor, secret_values
from pytest_llmeval.rundir.files import plan_run_dir, tag_run_dir
from pytest_llmeval.rundir.journal import Journal, next_attempt, read_final
from pytest_llmeval.rundir.layout import RunLayout
from pytest_llmeval.settings import Settings, judge_settings
from pytest_llmeval.suites.base import SuiteContext, SuiteRegistry

if TYPE_CHECKING:
    from pytest_llmeval.collect import EvalItem

state_key = pytest.StashKey["LLMEvalState"]()
RUN_DIR_KEY = "llmeval_run_dir"
RUN_ID_KEY = "llmeval_run_id"
ATTEMPT_KEY = "llmeval_attempt"


class LLMEvalState:
    def __init__(self, config: pytest.Config, settings: Settings, suites: SuiteRegistry):
        self.config = config
        self.settings = settings
        self.suites = suites
        self._markers: set[str] = set()
        self._last_fingerprint: tuple[Any, dict[str, Any], str] | None = None
        self._order: list[EvalItem] = []
        workerinput = getattr(config, "workerinput", None)
        if workerinput is not None and RUN_DIR_KEY in workerinput:
            self.run_dir, self.run_id = Path(workerinput[RUN_DIR_KEY]), workerinput[RUN_ID_KEY]
            self.attempt = int(workerinput[ATTEMPT_KEY])
        else:
            self.run_dir, self.run_id = plan_run_dir(
                settings.output_root, settings.resume or settings.run_dir
            )
            self.attempt = next_attempt(self.run_dir)
        self.finished = read_final(self.run_dir, self.attempt) if settings.resume else {}
        worker = workerinput.get("workerid", "main") if workerinput else "main"
        self.journal = Journal(self.run_dir, self.attempt, worker)
        self.secrets = secret_values(secret_env_names(settings))
        self.redactor = Redactor(settings.redact_pattern, self.secrets)
        workspaces = RunLayout(self.run_dir).workspaces
        self.dispatcher = Dispatcher(
            settings.concurrency, settings.timeout, workspace_root=workspaces
        )
        self.file_repeats: dict[str, int] = {}
        """Runs per case set by a manifest, by data file (display path)."""
        self.dispatcher.repeats_for = self.repeats_for
        self.dispatcher.make_embedder = self.make_embedder
        # the session-wide backend limits; their limiter is handed to every RunnerRegistry
        self.limits = SessionLimits(settings.max_connections, settings.rate_limit, workerinput)
        if settings.shard is not None:  # also from ini/env: the xdist scheduler reads the option
            setattr(config.option, sharding.SHARD_DEST, settings.shard)

    def ensure_run_dir(self) -> Path:
        """Create (and tag) the run dir on first use; safe from several processes."""
        tag_run_dir(self.run_dir)
        return self.run_dir

    def hand_to_worker(self, workerinput: dict[str, Any]) -> None:
        """Tell an xdist worker where this session's run dir and limits are."""
        workerinput[RUN_DIR_KEY] = str(self.run_dir)
        workerinput[RUN_ID_KEY] = self.run_id
        workerinput[ATTEMPT_KEY] = self.attempt
        self.limits.hand_to_worker(workerinput)

    def skip_finished(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """When resuming, deselect the cases that already have a final result."""
        if not self.finished:
            return
        keep = [item for item in items if item.nodeid not in self.finished]
        if len(keep) != len(items):
            config.hook.pytest_deselected(items=[i for i in items if i.nodeid in self.finished])
            items[:] = keep

    def keep_shard(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """With ``--llmeval-shard I/N``, deselect the eval items of the other shards (by the
        stable hash of the case id); other tests are not sharded."""
        if self.settings.shard is None:
            return
        from pytest_llmeval.collect import EvalItem

        keep, drop = sharding.split_shard(
            items, *self.settings.shard, lambda item: isinstance(item, EvalItem)
        )
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep

    @functools.cached_property
    def context(self) -> SuiteContext:
        return SuiteContext.from_settings(self.settings)

    def is_support_file(self, path: Path) -> bool:
        """Whether ``path`` lies in the tool-fixture or cassette folder."""
        resolved = path.resolve()
        return any(
            resolved.is_relative_to(folder.resolve())
            for folder in (self.settings.fixtures, self.settings.cassettes)
        )

    def register_marker(self, name: str) -> None:
        if name not in self._markers:
            self._markers.add(name)
            self.config.addinivalue_line("markers", f"{name}: pytest-llmeval cases ({name})")

    # -- run-ahead ---------------------------------------------------------------------------

    def repeats_for(self, case: EvalCase) -> int:
        """Runs of ``case``: its own ``metadata.repeats``, else its manifest's, else
        ``--llmeval-repeats``."""
        own = case.metadata.get("repeats")
        if isinstance(own, int) and not isinstance(own, bool) and own >= 1:
            return own
        return self.file_repeats.get(case.file, self.settings.repeats)

    def start_judge(self) -> None:
        """Build the judge runner when ``--llmeval-judge-runner`` names one (once)."""
        if self.settings.judge_runner is None or self.dispatcher.judge is not None:
            return
        from pytest_llmeval.judging import Judge
        from pytest_llmeval.runners.registry import RunnerRegistry

        registry = RunnerRegistry(limiter=self.limits.limiter)
        self.config.hook.pytest_llmeval_register_runners(registry=registry)
        try:
            runner = registry.create(judge_settings(self.settings), redact=self.redactor.value)
        except ConfigError as exc:
            raise pytest.UsageError(f"--llmeval-judge-runner: {exc}") from None
        self.dispatcher.judge = Judge(runner)
        self.dispatcher.judge_repeats = self.settings.judge_repeats

    def make_embedder(self) -> Any:
        """The ``semantic_similarity`` embedder the settings name, behind the content cache
        (``<output root>/../embeddings``, shared by workers and sessions)."""
        from pytest_llmeval.embeddings import CachedEmbedder, EndpointEmbedder, LocalEmbedder

        settings = self.settings
        if settings.embedding_base_url:
            if not settings.embedding_model:
                raise ConfigError("--llmeval-embedding-base-url needs --llmeval-embedding-model")
            inner: Any = EndpointEmbedder(
                settings.embedding_base_url,
                settings.embedding_model,
                settings.embedding_api_key_env,
            )
        else:
            model = Path(settings.embedding_model) if settings.embedding_model else None
            if model is not None and not model.is_absolute():
                model = settings.rootdir / model
            inner = LocalEmbedder(model)
        return CachedEmbedder(inner, settings.output_root.parent / "embeddings")

    def stop_judge(self) -> None:
        if self.dispatcher._embedder is not None:
            self.dispatcher.call(self.dispatcher.close_embedder())
        judge, self.dispatcher.judge = self.dispatcher.judge, None
        aclose = getattr(judge.runner, "aclose", None) if judge is not None else None
        if aclose is not None:
            self.dispatcher.call(aclose())

    def plan(self, items: list[pytest.Item]) -> None:
        """Work out which eval items this process runs, in order, for the dispatcher."""
        from pytest_llmeval.collect import EvalItem

        if hasattr(self.config, "workerinput"):
            indices = sharding.run_order(self.config, items)
            ordered = [items[i] for i in indices] if indices is not None else []
        else:
            ordered = list(items)
        self._order = [i for i in ordered if isinstance(i, EvalItem) and i.runnable]
        self.dispatcher.set_order([item.nodeid for item in self._order])

    def transcript_for(self, item: EvalItem) -> Transcript:
        assert item.case is not None
        broker = cast(ToolBroker, item.funcargs["llmeval_broker"])  # or a user's look-alike
        job: Job = (item.case, item.funcargs["llmeval_agent"], broker)
        defs = _fixture_defs(item)

        def lookup(position: int) -> Job | None:
            other = self._order[position]
            if other.case is None or other.case.skip_reason or _fixture_defs(other) != defs:
                return None
            return (other.case, job[1], job[2])

        return self.dispatcher.transcript(item.nodeid, job, lookup)

    # -- results -----------------------------------------------------------------------------

    def fingerprint_of(self, agent: Any) -> tuple[dict[str, Any], str]:
        """The agent's fingerprint and its hash, worked out once per agent object (the
        session's agent answers every case; a per-case agent is hashed per case)."""
        last = self._last_fingerprint
        if last is None or last[0] is not agent:
            fp = agent_fingerprint(agent)
            last = self._last_fingerprint = (agent, fp, runner_id(fp))
        return last[1], last[2]

    def make_result(self, item: EvalItem, score: CaseScore) -> CaseResult:
        case, transcript = item.case, item.transcript
        assert case is not None and transcript is not None
        outcome: Outcome = "skipped" if score.skipped else ("passed" if score.passed else "failed")
        return CaseResult(
            **_identity(item),
            outcome=outcome,
            passed=score.passed and not score.skipped,
            error=score.skipped or score.failure,
            scores=score.scores,
            duration_ms=round(transcript.duration_ms, 3),
            response=self.shown_response(case.suite, transcript.response),
            tool_calls=transcript.tool_calls,
            usage=transcript.usage,
            fixture_hits=transcript.fixture_hits,
            fixture_misses=transcript.fixture_misses,
            details=score.details,
            repeats=score.repeats,
            events=transcript.events,
        )

    def shown_response(self, suite_name: str, text: str) -> str:
        """A model's answer as reports and artifacts keep it: a suite may mask what it
        considers private (the integration suite: emails, phone numbers, keys)."""
        mask = getattr(self.suites.get(suite_name), "mask_output", None)
        return mask(text) if callable(mask) else text

    def result_for_report(
        self, item: EvalItem, report: pytest.TestReport, excinfo: Any
    ) -> CaseResult | None:
        """The result to attach to this phase's report, or ``None`` if the case goes on."""
        if report.when == "call" and item.result is not None:
            if report.failed and not isinstance(getattr(excinfo, "value", None), EvalFailure):
                return _with(item.result, "error", _message(excinfo))
            return item.result
        if report.when == "teardown" or (report.when == "setup" and report.passed):
            return None
        outcome: Outcome = "skipped" if report.skipped else "error"
        message = _skip_reason(report) if report.skipped else _message(excinfo)
        transcript = item.transcript
        return CaseResult(
            **_identity(item),
            outcome=outcome,
            passed=False,
            error=message,
            events=transcript.events if transcript else [],
            duration_ms=round(transcript.duration_ms, 3) if transcript else 0.0,
        )


def _identity(item: EvalItem) -> dict[str, Any]:
    """The fields that say which case a result is about (a broken record has no case)."""
    case = item.case
    return {
        "case_id": case.case_id if case else item.name,
        "suite": case.suite if case else item.suite_name,
        "file": case.file if case else item.data_display,
        "line": item.line,
        "nodeid": item.nodeid,
        "category": case.category if case else item.category,
        "case_fingerprint": case.fingerprint if case else "",
    }


def secret_env_names(settings: Settings) -> list[str]:
    """Every environment variable whose value is a secret: --llmeval-secret-env, the API key
    variable, and each provider's key variable."""
    names = [*settings.secret_env, settings.api_key_env]
    names += [p.key_env for p in settings.providers if p.key_env]
    return sorted(set(names))


def agent_fingerprint(agent: Any) -> dict[str, Any]:
    """The agent's own fingerprint, or its class name for a user agent without one."""
    method = getattr(agent, "fingerprint", None)
    if callable(method):
        return dict(method())
    kind = type(agent)
    return {"type": "agent", "class": f"{kind.__module__}.{kind.__qualname__}"}


def runner_id(fp: dict[str, Any]) -> str:
    return fingerprint(fp)


def _fixture_defs(item: EvalItem) -> tuple[Any, ...]:
    names = fixture_closure(item)
    defs = []
    for name in ("llmeval_agent", "llmeval_broker"):
        chain = names.get(name) or ()
        last = chain[-1] if chain else None
        if last is None or last.scope != "session":
            return (object(),)  # never equal: no run-ahead for non-session fixtures
        defs.append(last)
    return tuple(defs)


def _with(result: CaseResult, outcome: str, error: str) -> CaseResult:
    return result.model_copy(update={"outcome": outcome, "passed": False, "error": error})


def _message(excinfo: Any) -> str:
    exc = getattr(excinfo, "value", None)
    if exc is None:
        return "error"
    if isinstance(exc, EvalFailure):
        return exc.message
    text = str(exc)
    return text if text else type(exc).__name__


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)
