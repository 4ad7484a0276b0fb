"""Runners by name: built-ins, entry points (``pytest_llmeval.runners``) and conftest hooks.

A factory takes the :class:`Settings` and returns a :class:`Runner` or an
:class:`AgentEndpoint`. Imports are lazy so that an unused runner costs nothing.

The registry carries the session's limiter (:mod:`pytest_llmeval.limits`) and hands it to the
built-in HTTP runners; a factory registered from outside keeps the one-argument form and can
close over ``registry.limiter`` to send through the same limits.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.errors import ConfigError
from pytest_llmeval.limits import NULL_LIMITER, Limiter

__all__ = [
    "RunnerFactory",
    "RunnerRegistry",
]

RunnerFactory = Callable[[Settings], Any]


def _replay(settings: Settings) -> Any:
    from pytest_llmeval.runners.replay import CassetteStore, ReplayRunner

    store = CassetteStore(settings.cassettes)
    return ReplayRunner(
        store, select=settings.replay_from, model=settings.model, command=settings.command
    )


def _echo(settings: Settings) -> Any:
    from pytest_llmeval.runners.echo import EchoRunner

    return EchoRunner()


def _http_agent(settings: Settings, limiter: Limiter) -> Any:
    from pytest_llmeval.runners.http_agent import HttpAgentRunner

    assert settings.agent_url is not None
    return HttpAgentRunner(
        settings.agent_url,
        timeout_s=settings.timeout,
        limiter=limiter,
        transport=settings.http_transport,
        deterministic=settings.deterministic,
        max_response_bytes=settings.max_response_bytes,
    )


def _openai(settings: Settings, limiter: Limiter) -> Any:
    from pytest_llmeval.runners.openai_http import OpenAIRunner

    return OpenAIRunner.from_settings(settings, limiter=limiter)


def _hf(settings: Settings) -> Any:
    from pytest_llmeval.runners.hf_local import DEFAULT_MAX_NEW_TOKENS, HFRunner

    if not settings.model:
        raise ConfigError(
            "--llmeval-runner hf needs --llmeval-model PATH (a local checkpoint folder, or the "
            "id of a model already in the Hugging Face cache)"
        )
    if settings.batch_size < 1:
        raise ConfigError(f"--llmeval-batch-size must be 1 or more, got {settings.batch_size}")
    model = settings.model
    if not Path(model).expanduser().is_absolute() and (settings.rootdir / model).is_dir():
        model = str(settings.rootdir / model)  # a checkpoint folder relative to the rootdir
    return HFRunner(
        model,
        device=settings.device,
        dtype=settings.dtype,
        max_new_tokens=settings.max_tokens or DEFAULT_MAX_NEW_TOKENS,
        seed=settings.seed if settings.seed is not None else 0,
        max_batch_size=settings.batch_size,
    )


class RunnerRegistry:
    """Factories by runner name.

    Args:
        limiter: The session's limits, given to the ``openai`` and ``http-agent`` runners it
            builds (default: no limits).
    """

    def __init__(self, limiter: Limiter | None = None) -> None:
        self.limiter: Limiter = limiter or NULL_LIMITER
        self._factories: dict[str, RunnerFactory] = {
            "replay": _replay,
            "echo": _echo,
            "http-agent": self._limited(_http_agent),
            "openai": self._limited(_openai),
            "hf": _hf,
        }
        for ep in entry_points(group="pytest_llmeval.runners"):
            self._factories.setdefault(ep.name, _lazy_entry_point(ep))

    def register(self, name: str, factory: RunnerFactory) -> None:
        """Add or replace a runner (a conftest's ``pytest_llmeval_register_runners``)."""
        self._factories[name] = factory

    def _limited(self, factory: Callable[[Settings, Limiter], Any]) -> RunnerFactory:
        """``factory`` as a one-argument factory that gets this registry's limiter."""

        def build(settings: Settings) -> Any:
            return factory(settings, self.limiter)

        return build

    def names(self) -> list[str]:
        return sorted(self._factories)

    def create(self, settings: Settings, redact: Callable[[Any], Any] | None = None) -> Any:
        """Build the runner named in the settings, wrapped for cassettes when asked.

        ``redact`` is applied to every cassette written (the session's redactor).
        """
        factory = self._factories.get(settings.runner)
        if factory is None:
            close = difflib.get_close_matches(settings.runner, self.names(), n=1, cutoff=0.75)
            hint = f"did you mean {close[0]}? " if close else ""
            raise ConfigError(
                f"unknown runner {settings.runner!r}; {hint}known runners: "
                f"{', '.join(self.names())}"
            )
        runner = factory(settings)
        if settings.record is None or settings.runner == "replay":
            if settings.runner == "replay" and settings.record in ("new", "all"):
                raise ConfigError(
                    f"--llmeval-record {settings.record} needs a live runner to record from: "
                    "add --llmeval-runner NAME"
                )
            return runner
        if not hasattr(runner, "generate"):
            raise ConfigError(
                f"runner {settings.runner!r} is an agent endpoint; cassettes record model "
                "calls only, so --llmeval-record does not apply to it"
            )
        from pytest_llmeval.runners.replay import CassetteStore, RecordingRunner

        store = CassetteStore(settings.cassettes, redact=redact)
        return RecordingRunner(runner, store, settings.record, command=settings.command)


def _lazy_entry_point(ep: Any) -> RunnerFactory:
    def factory(settings: Settings) -> Any:
        return ep.load()(settings)

    return factory
