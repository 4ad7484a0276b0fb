"""The pytest side of the dispatcher's services: building the judge from the settings.

The judge's runner comes from the same registry as the agent's (the runners the plugins
register through ``pytest_llmeval_register_runners``), so only the pytest side can build it;
the engine's :class:`~pytest_llmeval.engine.case_services.CaseServices` is handed
:func:`judge_factory` and calls it once collection found eval items.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from pytest_llmeval.config.settings import Settings, judge_settings
from pytest_llmeval.core.errors import ConfigError
from pytest_llmeval.core.redact import Redactor
from pytest_llmeval.engine.case_services import CaseServices, RepeatPolicy, make_embedder
from pytest_llmeval.limits import Limiter

if TYPE_CHECKING:
    from pytest_llmeval.engine.judge_model import Judge

__all__ = ["case_services", "judge_factory"]


def judge_factory(
    config: pytest.Config, settings: Settings, redactor: Redactor, limiter: Limiter
) -> Callable[[], Judge] | None:
    """What builds the judge ``--llmeval-judge-runner`` names (``None`` without one): a bad
    judge runner is a usage error naming the option."""
    if settings.judge_runner is None:
        return None

    def build() -> Judge:
        from pytest_llmeval.engine.judge_model import Judge
        from pytest_llmeval.runners.registry import RunnerRegistry

        registry = RunnerRegistry(limiter=limiter)
        config.hook.pytest_llmeval_register_runners(registry=registry)
        if settings.judge_runner == "replay":
            registry.register("replay", _judge_replay)
        try:
            runner = registry.create(judge_settings(settings), redact=redactor.value)
        except ConfigError as exc:
            raise pytest.UsageError(f"--llmeval-judge-runner: {exc}") from None
        return Judge(runner)

    return build


def _judge_replay(settings: Settings) -> Any:
    """The judge's replay runner: its recorded folder is chosen by ``--llmeval-judge-model``,
    and an error choosing it says so."""
    from pytest_llmeval.runners.replay import CassetteStore, ReplayRunner

    store = CassetteStore(settings.cassettes)
    return ReplayRunner(store, select=settings.replay_from, select_option="--llmeval-judge-model")


def case_services(
    config: pytest.Config,
    settings: Settings,
    redactor: Redactor,
    limiter: Limiter,
    repeats: RepeatPolicy,
) -> CaseServices:
    """The dispatcher's services of this process, from the settings."""
    return CaseServices(
        repeats_for=repeats,
        judge_repeats=settings.judge_repeats,
        make_judge=judge_factory(config, settings, redactor, limiter),
        make_embedder=lambda: make_embedder(settings),
    )
