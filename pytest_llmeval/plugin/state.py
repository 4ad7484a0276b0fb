"""Per-process plugin state, on the controller and on every xdist worker alike: the run's
place and the wiring.

It places the run (run dir, run id, attempt, journal; the controller claims the run dir) and
builds once what the parts of a process share: the settings, the suites and their context,
the manifest index (each ``*.llmeval.yaml`` read once), the eval items' marks, the redactor,
the session limits, the dispatcher and the result builder. Every job with state of its own is
a plugin beside it: :mod:`~pytest_llmeval.plugin.resume` (``--llmeval-resume``),
:mod:`~pytest_llmeval.plugin.stop` (a refused session), :mod:`~pytest_llmeval.plugin.budget`,
:mod:`~pytest_llmeval.plugin.selection` ...; the secrets and the scoring key are pure
functions of the configuration (:mod:`pytest_llmeval.config.secrets`,
:mod:`pytest_llmeval.config.scoring`).
"""

from __future__ import annotations

import contextlib
import functools
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_llmeval.config.scoring import ScoringKeys
from pytest_llmeval.config.secrets import placeholders, session_secrets
from pytest_llmeval.config.settings import OPTIONS, Settings
from pytest_llmeval.core.errors import ConfigError, RunDirError
from pytest_llmeval.core.log_redaction import redact_logs
from pytest_llmeval.core.redact import Redactor
from pytest_llmeval.engine.case_services import RepeatPolicy
from pytest_llmeval.engine.dispatch import Dispatcher
from pytest_llmeval.inputs.manifest import ManifestIndex
from pytest_llmeval.limits import SessionLimits
from pytest_llmeval.plugin import scheduling as sharding
from pytest_llmeval.plugin import worker_wire as wire
from pytest_llmeval.plugin.case_records import CaseRecords
from pytest_llmeval.plugin.compat import rootdir_without
from pytest_llmeval.plugin.judge_builder import case_services
from pytest_llmeval.plugin.marks import CaseMarks
from pytest_llmeval.plugin.phase_results import ResultBuilder
from pytest_llmeval.plugin.run_ahead import RunAhead
from pytest_llmeval.plugin.stop import Stop
from pytest_llmeval.rundir.claim import RunDirLock, check_resume_target, check_run_dir_target
from pytest_llmeval.rundir.files import plan_run_dir, tag_run_dir
from pytest_llmeval.rundir.journal import Journal, next_attempt
from pytest_llmeval.rundir.layout import RunLayout
from pytest_llmeval.suites.base import SuiteContext, SuiteRegistry

state_key = pytest.StashKey["LLMEvalState"]()


class LLMEvalState:
    def __init__(
        self, config: pytest.Config, settings: Settings, suites: SuiteRegistry, stop: Stop
    ):
        self.config = config
        self.settings = settings
        self.suites = suites
        self.stop = stop
        self.marks = CaseMarks(config, suites)
        """The eval items' marker names and shared marks."""
        given = wire.worker_input(config)
        if given is not None:
            self.run_dir, self.run_id = Path(given.run_dir), given.run_id
            self.attempt = given.attempt
        else:
            _check_targets(settings)
            _check_rootdir(config)
            self.run_dir, self.run_id = plan_run_dir(
                settings.output_root, settings.resume or settings.run_dir
            )
            self.attempt = next_attempt(self.run_dir)
        self.lock: RunDirLock | None = None
        """The controller's lock on the run dir, once claimed (:meth:`claim_run_dir`)."""
        self.created: list[Path] = []
        """The folders the claim created (the run dir and its missing parents), removed again
        when the session ends having written nothing in them (a usage error after the
        claim)."""
        self.manifests = ManifestIndex(settings.rootdir)
        """Every manifest this process reads, each once: collection, preflight and the verdict
        ask it."""
        self.scoring = ScoringKeys(settings, self.manifests)
        """Each data file's scoring key, journaled with its results (a resume compares it)."""
        # a fresh session in a run dir used before starts it afresh: never mixed with the last
        fresh = not settings.resume and self.attempt > 1
        process = wire.worker_id(config) or "main"
        self.journal = Journal(
            self.run_dir, self.attempt, process, fresh=fresh, scoring=self.scoring
        )
        self.secrets = session_secrets(settings, config.invocation_params.args)
        self.redactor = Redactor(settings.redact_pattern, self.secrets)
        self.placeholders = placeholders(settings)
        """Key variables that are set to a placeholder or a short value: not masked."""
        redact_logs(self.redactor)
        # the session-wide backend limits; their limiter is handed to every RunnerRegistry
        self.limits = SessionLimits(
            settings.max_connections,
            settings.rate_limit,
            getattr(config, "workerinput", None),
            breaker_threshold=settings.breaker_threshold,
            budget=settings.max_tokens_total is not None or settings.max_cost is not None,
        )
        self.repeats = RepeatPolicy(settings.repeats, self._manifest_repeats)
        """Runs per case: its own, its manifest's, the session's."""
        self.services = case_services(
            config, settings, self.redactor, self.limits.limiter, self.repeats
        )
        workspaces = RunLayout(self.run_dir).workspaces
        self.dispatcher = Dispatcher(
            settings.concurrency, settings.timeout, workspaces, self.services
        )
        self.run_ahead = RunAhead(config, settings, self.dispatcher)
        self.records = CaseRecords()
        """The case result of the report being made or logged (registered as a plugin: it
        carries a worker's results to the xdist controller)."""
        self.results = ResultBuilder(suites, self.redactor, self.journal, self.records)
        if settings.shard is not None:  # also from ini/env: the xdist scheduler reads the option
            setattr(config.option, sharding.SHARD_DEST, settings.shard)

    def _manifest_repeats(self, file: str) -> int | None:
        """The ``repeats`` of the manifest that collected data file ``file``, if any."""
        manifest = self.manifests.for_data(file)
        return manifest.repeats if manifest is not None else None

    def ensure_run_dir(self) -> Path:
        """Create (and tag) the run dir on first use; safe from several processes."""
        tag_run_dir(self.run_dir)
        return self.run_dir

    def claim_run_dir(self) -> None:
        """Create, tag and lock the run dir for this session (the controller only; xdist
        workers belong to its session). A run dir another session holds, or one that cannot
        be written, is a usage error before anything runs."""
        if self.lock is not None or wire.is_worker(self.config):
            return
        settings = self.settings
        flag = "--llmeval-resume" if settings.resume else "--llmeval-run-dir"
        if not (settings.resume or settings.run_dir):
            flag = "--llmeval-output-root"  # the new run dir goes under it
        lock = RunDirLock(self.run_dir, flag)
        created = [p for p in (self.run_dir, *self.run_dir.parents) if not p.exists()]
        try:
            lock.acquire()
        except RunDirError as exc:
            self.stop.refuse(str(exc))
            raise pytest.UsageError(str(exc)) from None
        self.lock = lock
        self.created = created

    def release_run_dir(self) -> None:
        if self.lock is not None:
            self.lock.release()
            self.lock = None
            if self.created and _only_the_tag(self.run_dir):
                remove_unused(self.run_dir, self.created)

    def worker_input(self, config: pytest.Config) -> wire.WorkerInput:
        """What an xdist worker is told of this session: its run dir, the ``--dist`` mode
        (the limits server and the scheduler tell theirs on their own)."""
        return wire.WorkerInput(
            run_dir=str(self.run_dir),
            run_id=self.run_id,
            attempt=self.attempt,
            dist=str(config.getoption("dist", "no")),
        )

    @functools.cached_property
    def context(self) -> SuiteContext:
        return SuiteContext.from_settings(self.settings)

    def check_support_files(self) -> None:
        """Read now the support files the suites need (the tool registry, the seed manifest,
        the snapshot): one that cannot be used is one usage error naming ``path:line`` before
        any case runs, not a collection error or a run without reports. (Tool fixtures are
        read by the ``llmeval_broker`` fixture, which a conftest may replace: a bad one is
        the error of each case that asks for it.)"""
        try:
            _ = self.context
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from None

    def is_support_file(self, path: Path) -> bool:
        """Whether ``path`` lies in the tool-fixture or cassette folder."""
        resolved = path.resolve()
        return any(
            resolved.is_relative_to(folder.resolve())
            for folder in (self.settings.fixtures, self.settings.cassettes)
        )


def _check_targets(settings: Settings) -> None:
    """A resume path must be a run dir; an exact run dir must be the plugin's to write."""
    try:
        if settings.resume is not None:
            check_resume_target(settings.resume)
        elif settings.run_dir is not None:
            check_run_dir_target(settings.run_dir)
    except RunDirError as exc:
        raise pytest.UsageError(str(exc)) from None


def _only_the_tag(run_dir: Path) -> bool:
    """Whether the run dir holds nothing but its tag (empty folders aside)."""
    tag = RunLayout(run_dir).tag
    try:
        return all(p == tag or p.is_dir() for p in run_dir.rglob("*"))
    except OSError:
        return False


def remove_unused(run_dir: Path, created: Sequence[Path]) -> None:
    """Remove a run dir this session created and never used, and the parents it created."""
    shutil.rmtree(run_dir, ignore_errors=True)
    for folder in created:
        with contextlib.suppress(OSError):
            folder.rmdir()  # only if empty: nothing of anyone else's goes


PATH_FLAGS = tuple(spec.flag for spec in OPTIONS if spec.type == "path")
"""Every path-valued option: each one, written with a space before an existing path, is a
path pytest looks at when it picks its rootdir and ini file."""


def _check_rootdir(config: pytest.Config) -> None:
    """Refuse a spaced path option (``--llmeval-run-dir PATH``, ``--llmeval-baseline PATH``,
    ``--llmeval-resume PATH`` ...) that moved pytest's rootdir or ini file: pytest took the
    path for a test path before the plugin's options were known. A moved rootdir renames every
    case; another ini file drops the project's settings and gates."""
    args = [str(arg) for arg in config.invocation_params.args]
    for i, arg in enumerate(args[:-1]):
        if arg not in PATH_FLAGS:
            continue
        value = args[i + 1]
        moved = rootdir_without(config, value)
        if moved is not None:
            raise pytest.UsageError(
                f"{arg} {value}: pytest takes this path for a test path, which moves its "
                f"rootdir or ini file to {moved[0]} (from {moved[1]}; xdist workers see the "
                "path once the run has made it), renames every case and can drop the "
                f"project's settings and gates; write {arg}={value}"
            )
