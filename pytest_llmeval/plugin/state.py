"""Per-process plugin state, on the controller and on every xdist worker alike.

It places the run (run dir, run id, attempt, journal) and holds what every part of a process
shares: the settings, the suites and their context, the manifest index (each
``*.llmeval.yaml`` read once), the eval items' marks, the redactor, the dispatcher and the
session limits. The jobs are apart: :mod:`pytest_llmeval.plugin.item_feed` (the run order and
transcripts), :mod:`pytest_llmeval.plugin.services` (judge, embedder),
:mod:`pytest_llmeval.plugin.results` (every case result), and here the resume and shard deselection.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.config.settings import OPTIONS, Settings
from pytest_llmeval.core.errors import ConfigError, LLMEvalError, RunDirError
from pytest_llmeval.core.fingerprint import sha256_hex
from pytest_llmeval.core.log_redaction import redact_logs
from pytest_llmeval.core.redact import (
    MIN_FOUND_SECRET_LENGTH,
    Redactor,
    is_placeholder,
    named_secrets,
    placeholder_names,
    secret_env_values,
    secret_values,
    url_secrets,
    urls_in,
)
from pytest_llmeval.engine.dispatch import Dispatcher
from pytest_llmeval.engine.services import RepeatPolicy
from pytest_llmeval.inputs.manifest import ManifestIndex
from pytest_llmeval.inputs.safe_read import SupportFileError, first_json_value
from pytest_llmeval.limits import SessionLimits
from pytest_llmeval.plugin import scheduling as sharding
from pytest_llmeval.plugin.compat import rootdir_without
from pytest_llmeval.plugin.item_feed import RunAhead
from pytest_llmeval.plugin.marks import CaseMarks
from pytest_llmeval.plugin.phase_results import ResultBuilder
from pytest_llmeval.plugin.records import CaseRecords
from pytest_llmeval.plugin.resume_refusals import (
    files_gone,
    model_unread,
    model_unread_hint,
    not_collected,
    other_dataset,
    other_runner,
    other_scoring,
)
from pytest_llmeval.plugin.runner_model import RunnerModel
from pytest_llmeval.plugin.services import case_services
from pytest_llmeval.rundir.claim import RunDirLock, check_resume_target, check_run_dir_target
from pytest_llmeval.rundir.files import plan_run_dir, tag_run_dir
from pytest_llmeval.rundir.journal import SCORERS_VERSION, Journal, next_attempt, read_reusable
from pytest_llmeval.rundir.layout import RunLayout
from pytest_llmeval.suites.base import SuiteContext, SuiteRegistry

state_key = pytest.StashKey["LLMEvalState"]()
RUN_DIR_KEY = "llmeval_run_dir"
RUN_ID_KEY = "llmeval_run_id"
ATTEMPT_KEY = "llmeval_attempt"
REFUSAL_KEY = "llmeval_refusal"
CHANGED_KEY = "llmeval_changed"
"""``workeroutput`` keys: an xdist worker tells its controller (which collects nothing) that
the resume was refused, and which cases changed since the interrupted run."""


class RunDirRefused(LLMEvalError):
    """The run dir is not this session's to resume (made by another runner)."""


class LLMEvalState:
    def __init__(self, config: pytest.Config, settings: Settings, suites: SuiteRegistry):
        self.config = config
        self.settings = settings
        self.suites = suites
        self.marks = CaseMarks(config, suites)
        """The eval items' marker names and shared marks."""
        workerinput = getattr(config, "workerinput", None)
        if workerinput is not None and RUN_DIR_KEY in workerinput:
            self.run_dir, self.run_id = Path(workerinput[RUN_DIR_KEY]), workerinput[RUN_ID_KEY]
            self.attempt = int(workerinput[ATTEMPT_KEY])
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
        self.refusal: str | None = None
        """Why the session stopped before running anything (nothing is written then)."""
        self.resume_notes: list[str] = []
        """Lines for the terminal about what a resume reuses and runs again."""
        self._runner_checked = False
        self.resume_notes_changed = False
        self.rescore: set[str] = set()
        """Node ids whose final result was judged by other scorers (another plugin version)."""
        self.scorings: dict[str, Any] = {}
        """The scoring fingerprint each reusable result was judged under, by node id."""
        try:
            if settings.resume:
                self.finished, self.rescore, self.scorings = read_reusable(
                    self.run_dir, self.attempt
                )
            else:
                self.finished = {}
        except RunDirError as exc:
            raise pytest.UsageError(str(exc)) from None
        worker = workerinput.get("workerid", "main") if workerinput else "main"
        # a fresh session in a run dir used before starts it afresh: never mixed with the last
        fresh = not settings.resume and self.attempt > 1
        self.journal = Journal(self.run_dir, self.attempt, worker, fresh=fresh)
        self.manifests = ManifestIndex(settings.rootdir)
        """Every manifest this process reads, each once: collection, preflight and the verdict
        ask it."""
        self._scoring: dict[str, str] = {}
        self.journal.scoring = self.scoring_of
        self.secrets = session_secrets(settings, config.invocation_params.args)
        self.redactor = Redactor(settings.redact_pattern, self.secrets)
        self.placeholders = placeholder_names(secret_env_names(settings))
        """Key variables that are set to a placeholder or a short value: not masked."""
        redact_logs(self.redactor)
        workspaces = RunLayout(self.run_dir).workspaces
        # the session-wide backend limits; their limiter is handed to every RunnerRegistry
        self.limits = SessionLimits(
            settings.max_connections,
            settings.rate_limit,
            workerinput,
            breaker_threshold=settings.breaker_threshold,
            budget=settings.max_tokens_total is not None or settings.max_cost is not None,
        )
        self.repeats = RepeatPolicy(settings.repeats, self._manifest_repeats)
        """Runs per case: its own, its manifest's, the session's."""
        self.services = case_services(
            config, settings, self.redactor, self.limits.limiter, self.repeats
        )
        self.dispatcher = Dispatcher(
            settings.concurrency, settings.timeout, workspaces, self.services
        )
        self.runahead = RunAhead(config, settings, self.dispatcher)
        self.records = CaseRecords()
        """The case result of the report being made or logged (registered as a plugin: it
        carries a worker's results to the xdist controller)."""
        self.results = ResultBuilder(suites, self.redactor, self.journal, self.records)
        self.runner_model = RunnerModel()
        """The model the runner names, settled once for the suites (``prompt_format: auto``)."""
        if settings.shard is not None:  # also from ini/env: the xdist scheduler reads the option
            setattr(config.option, sharding.SHARD_DEST, settings.shard)

    def _manifest_repeats(self, file: str) -> int | None:
        """The ``repeats`` of the manifest that collected data file ``file``, if any."""
        manifest = self.manifests.for_data(file)
        return manifest.repeats if manifest is not None else None

    def scoring_of(self, file: str) -> str:
        """The fingerprint of everything besides the row and the runner that decides a case
        verdict in ``file``: its manifest's options (thresholds, repeats, misses, suite
        options; not its gates, judged after the cases) and the session's scoring settings
        (repeats, repeat rule, judge, embedder, integration mode, max turns)."""
        found = self._scoring.get(file)
        if found is None:
            manifest = self.manifests.for_data(file)
            written = manifest.options if manifest is not None else {}
            options = {k: v for k, v in written.items() if k != "gates"}
            found = self._scoring[file] = scoring_fingerprint(self.settings, options)
        return found

    def ensure_run_dir(self) -> Path:
        """Create (and tag) the run dir on first use; safe from several processes."""
        tag_run_dir(self.run_dir)
        return self.run_dir

    def claim_run_dir(self) -> None:
        """Create, tag and lock the run dir for this session (the controller only; xdist
        workers belong to its session). A run dir another session holds, or one that cannot
        be written, is a usage error before anything runs."""
        if self.lock is not None or hasattr(self.config, "workerinput"):
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
            self.refusal = str(exc)
            raise pytest.UsageError(str(exc)) from None
        self.lock = lock
        self.created = created

    def journal_stopped(self) -> str | None:
        """Why this process's journal stopped (a full disk), as one line saying what to do;
        ``None`` while it writes."""
        error = self.journal.error
        if error is None:
            return None
        return (
            f"llmeval: could not write the journal {self.journal.path}: "
            f"{error.strerror or error}; free some space (or make the run dir writable), then "
            f"finish the run with --llmeval-resume={self.run_dir}"
        )

    def release_run_dir(self) -> None:
        if self.lock is not None:
            self.lock.release()
            self.lock = None
            if self.created and _only_the_tag(self.run_dir):
                remove_unused(self.run_dir, self.created)

    def hand_to_worker(self, workerinput: dict[str, Any]) -> None:
        """Tell an xdist worker where this session's run dir and limits are."""
        workerinput[RUN_DIR_KEY] = str(self.run_dir)
        workerinput[RUN_ID_KEY] = self.run_id
        workerinput[ATTEMPT_KEY] = self.attempt
        self.limits.hand_to_worker(workerinput)

    def skip_finished(
        self,
        config: pytest.Config,
        items: list[pytest.Item],
        case_fingerprint: Callable[[pytest.Item], str | None],
        collected: Collection[str] | None = None,
    ) -> None:
        """When resuming, deselect the cases whose final result can be reused: same node id
        and same case fingerprint (the data row, expectations included). A changed case runs
        again and the terminal says how many did. A run dir from another dataset (no case in
        common, or every one changed) is a usage error unless
        ``--llmeval-resume-allow-mismatch``. ``case_fingerprint`` reads an item's case
        fingerprint (``None`` for another kind of item, or a broken row).

        ``collected``: the node id of every eval item collected now (before any deselection).
        Earlier final results of cases not among them (their file or manifest renamed, moved
        or deleted) would be counted beside the cases collected now, and a deleted manifest's
        results without its gates: a usage error unless ``--llmeval-resume-allow-mismatch``."""
        if self.rescore and not hasattr(config, "workerinput"):
            self.resume_notes.append(
                f"{len(self.rescore)} cases were judged by other scorers than pytest-llmeval "
                f"{SCORERS_VERSION}'s; running them again"
            )
        if not self.finished:
            return
        gone = not_collected(self.finished, collected, self.settings.rootdir)
        if gone and not self.settings.resume_allow_mismatch:
            self.refusal = files_gone(self.run_dir, gone)
            output = getattr(config, "workeroutput", None)
            if output is None:
                raise pytest.UsageError(self.refusal)
            output[REFUSAL_KEY] = self.refusal  # the controller stops; nothing runs here
            config.hook.pytest_deselected(items=list(items))
            items[:] = []
            return
        reused: list[pytest.Item] = []
        changed: list[str] = []
        rescored = 0
        for item in items:
            entry = self.finished.get(item.nodeid)
            if entry is None:
                continue
            same_row = case_fingerprint(item) == entry[0].case_fingerprint
            same_scoring = self.scorings.get(item.nodeid) == self.scoring_of(entry[0].file)
            if same_row and same_scoring:
                reused.append(item)
            else:
                changed.append(item.nodeid)
                rescored += same_row
        output = getattr(config, "workeroutput", None)
        if not reused and not self.settings.resume_allow_mismatch:
            self.refusal = other_dataset(self.run_dir, len(self.finished), len(changed))
            self.refusal += model_unread_hint(self.runner_model.asked_early and bool(changed))
            if changed and rescored == len(changed):
                self.refusal = other_scoring(self.run_dir, rescored)
            if output is None:
                raise pytest.UsageError(self.refusal)
            output[REFUSAL_KEY] = self.refusal  # the controller stops; nothing runs here
            config.hook.pytest_deselected(items=list(items))
            items[:] = []
            return
        self.drop_changed(changed, len(reused) + len(changed))
        if output is not None:
            output[CHANGED_KEY] = {"nodeids": changed, "compared": len(reused) + len(changed)}
        if reused:
            config.hook.pytest_deselected(items=reused)
            drop = {id(item) for item in reused}
            items[:] = [item for item in items if id(item) not in drop]

    def drop_changed(self, changed: Sequence[str], compared: int) -> None:
        """Forget the earlier results of cases that changed since (they run again), and say
        how many did."""
        for nodeid in changed:
            self.finished.pop(nodeid, None)  # neither reused nor reported
        if changed and not self.resume_notes_changed:
            self.resume_notes_changed = True
            self.resume_notes.append(
                f"{len(changed)} of {compared} cases changed since the interrupted run; "
                "running them again"
            )

    def from_worker(self, output: Mapping[str, Any]) -> None:
        """What an xdist worker found at collection (the controller collects nothing): a
        refused resume, the cases that changed."""
        refusal = output.get(REFUSAL_KEY)
        if isinstance(refusal, str) and self.refusal is None:
            self.refusal = refusal
        changed = output.get(CHANGED_KEY)
        if isinstance(changed, dict):
            self.drop_changed(list(changed.get("nodeids", ())), int(changed.get("compared", 0)))

    def check_runner(self, item: pytest.Item, agent: Any) -> None:
        """When resuming, the runner (or agent) must be the one that made the run dir's
        results, unless ``--llmeval-resume-allow-mismatch``; checked once per process, at the
        first case set up, before it runs; and the model it names must be the one the cases
        were built for (see :mod:`~pytest_llmeval.plugin.runner_model`), whatever
        ``--llmeval-resume-allow-mismatch`` says. The session stops with a usage error; an xdist
        worker fails that case with :class:`RunDirRefused` and stops, and its controller,
        told on the report, exits the same way."""
        if self._runner_checked or not (self.finished or self.runner_model.asked_early):
            return
        self._runner_checked = True
        fp, runner_id = self.results.fingerprint_of(agent)
        earlier = {r.runner_fingerprint for r, _ in self.finished.values() if r.runner_fingerprint}
        missed = self.runner_model.missed(fp)  # cases built before this agent's model was read
        if missed is not None:
            self.refusal = model_unread(self.run_dir, missed)
        elif not earlier or earlier == {runner_id} or self.settings.resume_allow_mismatch:
            return
        else:
            self.refusal = other_runner(self.run_dir, earlier, runner_id)
        if not hasattr(self.config, "workerinput"):
            pytest.exit(self.refusal, returncode=pytest.ExitCode.USAGE_ERROR)
        item.session.shouldstop = self.refusal
        raise RunDirRefused(self.refusal)

    def keep_shard(
        self,
        config: pytest.Config,
        items: list[pytest.Item],
        is_eval: Callable[[pytest.Item], bool],
    ) -> None:
        """With ``--llmeval-shard I/N``, deselect the eval items of the other shards (by the
        stable hash of the case id); other tests are not sharded."""
        if self.settings.shard is None:
            return
        keep, drop = sharding.split_shard(items, *self.settings.shard, is_eval)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep

    @functools.cached_property
    def context(self) -> SuiteContext:
        context = SuiteContext.from_settings(self.settings)
        context.runner_model = self.runner_model
        return context

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


SCORING_SETTINGS = (
    "repeats", "repeat_rule", "max_turns", "judge_runner", "judge_model", "judge_base_url",
    "judge_temperature", "judge_repeats", "embedding_model", "embedding_base_url",
    "integration_mode", "fail_on_fingerprint_mismatch",
)  # fmt: skip
"""The settings that decide a case's verdict beside its row and its runner."""


def scoring_fingerprint(settings: Settings, options: Mapping[str, Any]) -> str:
    """sha256 of the scoring settings and a manifest's options (see
    :meth:`LLMEvalState.scoring_of`)."""
    body = {name: getattr(settings, name) for name in SCORING_SETTINGS}
    text = json.dumps({"settings": body, "manifest": options}, sort_keys=True, default=str)
    return sha256_hex(text)


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


def secret_env_names(settings: Settings) -> list[str]:
    """Every environment variable whose value is a secret: --llmeval-secret-env, the API key
    variable, and each provider's key variable."""
    names = [*settings.secret_env, settings.api_key_env]
    names += [p.key_env for p in settings.providers if p.key_env]
    return sorted(set(names))


def session_secrets(
    settings: Settings, args: Sequence[str] = (), environ: Mapping[str, str] | None = None
) -> list[str]:
    """Every literal value the session's redactor masks and its leak check looks for: the
    values of :func:`secret_env_names`, of secret-named environment variables
    (``CI_JOB_TOKEN``), the credentials of every configured URL and of every URL on the
    command line (a user-info password, ``?api_key=``), and the secret-named values of
    ``--llmeval-extra-body``. Values found rather than configured count from
    :data:`~pytest_llmeval.core.redact.MIN_FOUND_SECRET_LENGTH` characters."""
    env = os.environ if environ is None else environ
    found = set(secret_env_values(env))
    for url in [*_configured_urls(settings), *(u for arg in args for u in urls_in(arg))]:
        found.update(url_secrets(url))
    found.update(named_secrets(settings.extra_body))
    # an extra body given but overridden (an environment variable under a command-line option,
    # a repeated option) is recorded all the same (manifest environment, invocation)
    llmeval_env = (value for name, value in env.items()
                   if name.startswith("PYTEST_LLMEVAL_") or name == "PYTEST_ADDOPTS")  # fmt: skip
    for text in (*args, *llmeval_env):
        found.update(named_secrets(_json_object(text)))
    configured = secret_values(secret_env_names(settings), env)
    found = {v for v in found if len(v) >= MIN_FOUND_SECRET_LENGTH and not is_placeholder(v)}
    return sorted({*configured, *found})


def _json_object(text: str) -> Any:
    """The first JSON object in an argument or variable (``--llmeval-extra-body={...}``,
    ``{...}``, ``--llmeval-extra-body '{...}' -q``), or ``None`` (none there, or nested
    too deeply: not the JSON of an option the plugin reads)."""
    start = text.find("{")
    if start < 0:
        return None
    try:  # within the safe reader's depth cap: deep nesting is no RecursionError
        return first_json_value(text, start)
    except SupportFileError:
        return None


def _configured_urls(settings: Settings) -> Iterator[str]:
    urls = (settings.base_url, settings.judge_base_url, settings.embedding_base_url,
            settings.agent_url, settings.mlflow)  # fmt: skip
    yield from (url for url in urls if url)
    yield from (provider.base_url for provider in settings.providers)
