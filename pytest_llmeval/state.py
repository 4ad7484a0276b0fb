"""Per-process plugin state, on the controller and on every xdist worker alike.

It places the run (run dir, run id, attempt, journal) and holds what every part of a process
shares: the settings, the suites and their context, the redactor, the dispatcher and the
session limits. The jobs are apart: :mod:`pytest_llmeval.runahead` (the run order and
transcripts), :mod:`pytest_llmeval.services` (judge, embedder),
:mod:`pytest_llmeval.results` (every case result), and here the resume and shard deselection.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_llmeval import sharding
from pytest_llmeval.dispatch import Dispatcher
from pytest_llmeval.limits import SessionLimits
from pytest_llmeval.redact import (
    MIN_FOUND_SECRET_LENGTH,
    Redactor,
    named_secrets,
    redact_logs,
    secret_env_values,
    secret_values,
    url_secrets,
    urls_in,
)
from pytest_llmeval.results import ResultBuilder
from pytest_llmeval.runahead import RunAhead
from pytest_llmeval.rundir.files import plan_run_dir, tag_run_dir
from pytest_llmeval.rundir.journal import Journal, next_attempt, read_final
from pytest_llmeval.rundir.layout import RunLayout
from pytest_llmeval.services import Services
from pytest_llmeval.settings import Settings
from pytest_llmeval.suites.base import SuiteContext, SuiteRegistry

if TYPE_CHECKING:
    pass

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
        self.secrets = session_secrets(settings, config.invocation_params.args)
        self.redactor = Redactor(settings.redact_pattern, self.secrets)
        redact_logs(self.redactor)
        workspaces = RunLayout(self.run_dir).workspaces
        self.dispatcher = Dispatcher(
            settings.concurrency, settings.timeout, workspace_root=workspaces
        )
        self.runahead = RunAhead(config, settings, self.dispatcher)
        self.results = ResultBuilder(suites, self.redactor, self.journal)
        # the session-wide backend limits; their limiter is handed to every RunnerRegistry
        self.limits = SessionLimits(
            settings.max_connections,
            settings.rate_limit,
            workerinput,
            breaker_threshold=settings.breaker_threshold,
            budget=settings.max_tokens_total is not None or settings.max_cost is not None,
        )
        self.services = Services(
            config, settings, self.dispatcher, self.redactor, self.limits.limiter
        )
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

    @functools.cached_property
    def suite_markers(self) -> frozenset[str]:
        """Marker names a case's category or own mark must not take: those that select a
        whole suite (``-m golden``), ``llmeval`` (every case), and pytest's own, which act on
        the item (a category ``skip`` or ``xfail`` would hide a failing case). Such a
        category is marked ``category_<name>``."""
        return frozenset(["llmeval", *self.suites.names(), *PYTEST_MARKERS])

    def category_marker(self, name: str) -> str:
        """The marker for a case's category or own mark ``name`` (already a marker name): the
        name itself, unless a suite (or ``llmeval``) owns it."""
        return f"category_{name}" if name in self.suite_markers else name


PYTEST_MARKERS = ("filterwarnings", "parametrize", "skip", "skipif", "usefixtures", "xfail")
"""pytest's built-in marks, which change how an item runs."""


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
    :data:`~pytest_llmeval.redact.MIN_FOUND_SECRET_LENGTH` characters."""
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
    return sorted({*configured, *(v for v in found if len(v) >= MIN_FOUND_SECRET_LENGTH)})


def _json_object(text: str) -> Any:
    """The first JSON object in an argument or variable (``--llmeval-extra-body={...}``,
    ``{...}``, ``--llmeval-extra-body '{...}' -q``), or ``None``."""
    start = text.find("{")
    if start < 0:
        return None
    try:
        return json.JSONDecoder().raw_decode(text[start:])[0]
    except ValueError:
        return None


def _configured_urls(settings: Settings) -> Iterator[str]:
    urls = (settings.base_url, settings.judge_base_url, settings.embedding_base_url,
            settings.agent_url, settings.mlflow)  # fmt: skip
    yield from (url for url in urls if url)
    yield from (provider.base_url for provider in settings.providers)
