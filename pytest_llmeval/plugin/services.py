"""The services a case may need after its agent: the judge and the sentence embedder.

Both are built from the settings only when used (a judge once collection found eval items, an
embedder on the first ``semantic_similarity``) and closed at the end of the session.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.config.settings import Settings, judge_settings
from pytest_llmeval.core.errors import ConfigError
from pytest_llmeval.core.redact import Redactor
from pytest_llmeval.engine.dispatch import Dispatcher
from pytest_llmeval.limits import Limiter

__all__ = ["Services"]


class Services:
    """The judge and the embedder of one process, handed to its dispatcher."""

    def __init__(
        self,
        config: pytest.Config,
        settings: Settings,
        dispatcher: Dispatcher,
        redactor: Redactor,
        limiter: Limiter,
    ):
        self.config = config
        self.settings = settings
        self.dispatcher = dispatcher
        self.redactor = redactor
        self.limiter = limiter
        dispatcher.make_embedder = self.make_embedder

    def start_judge(self) -> None:
        """Build the judge runner when ``--llmeval-judge-runner`` names one (once)."""
        if self.settings.judge_runner is None or self.dispatcher.judge is not None:
            return
        from pytest_llmeval.engine.judge import Judge
        from pytest_llmeval.runners.registry import RunnerRegistry

        registry = RunnerRegistry(limiter=self.limiter)
        self.config.hook.pytest_llmeval_register_runners(registry=registry)
        try:
            runner = registry.create(judge_settings(self.settings), redact=self.redactor.value)
        except ConfigError as exc:
            raise pytest.UsageError(f"--llmeval-judge-runner: {exc}") from None
        self.dispatcher.judge = Judge(runner)
        self.dispatcher.judge_repeats = self.settings.judge_repeats

    def check_embedder(self) -> None:
        """Fail at the start, without loading a model, when the embedder the settings name
        explicitly (``--llmeval-embedding-model`` / ``--llmeval-embedding-base-url``) cannot be
        built: a base URL without a model, a model folder that does not exist, a missing
        extra. ``ConfigError`` naming the option and what to do."""
        import importlib.util

        settings = self.settings
        if settings.embedding_base_url:
            if not settings.embedding_model:
                raise ConfigError("--llmeval-embedding-base-url needs --llmeval-embedding-model")
            return
        if not settings.embedding_model:
            return  # the packaged default, checked on first use (only if a case needs it)
        from pytest_llmeval.engine.embeddings import INSTALL_HINT

        model = Path(settings.embedding_model)
        if not model.is_absolute():
            model = settings.rootdir / model
        if not model.is_dir():
            raise ConfigError(
                f"--llmeval-embedding-model {settings.embedding_model}: no model folder at "
                f"{model}; give a local sentence-embedding checkpoint folder"
            )
        missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
        if missing:
            raise ConfigError(f"{INSTALL_HINT} (not installed: {', '.join(missing)})")

    def make_embedder(self) -> Any:
        """The ``semantic_similarity`` embedder the settings name, behind the content cache
        (``<output root>/../embeddings``, shared by workers and sessions)."""
        from pytest_llmeval.engine.embeddings import CachedEmbedder, EndpointEmbedder, LocalEmbedder

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

    def stop(self) -> None:
        """Close the embedder and the judge's runner."""
        dispatcher = self.dispatcher
        if dispatcher.has_embedder:
            dispatcher.call(dispatcher.close_embedder())
        judge, dispatcher.judge = dispatcher.judge, None
        aclose = getattr(judge.runner, "aclose", None) if judge is not None else None
        if aclose is not None:
            dispatcher.call(aclose())
