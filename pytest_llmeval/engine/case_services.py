"""What the dispatcher needs besides the agent: the judge, the embedder and the repeat policy.

:class:`CaseServices` is handed to the :class:`~pytest_llmeval.engine.dispatch.Dispatcher` when
it is built and is the one place that owns those services: the judge is built once collection
found eval items (:meth:`CaseServices.start_judge`, which needs the pytest side's runner
registry, so it is given as a factory), the embedder on the first ``semantic_similarity``, and
both are closed by :meth:`CaseServices.aclose` on the dispatcher's loop at the end of the
session. :class:`RepeatPolicy` says how many times a case runs.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.errors import ConfigError, RunnerError
from pytest_llmeval.core.models import EvalCase

if TYPE_CHECKING:
    from pytest_llmeval.engine.embeddings import CachedEmbedder
    from pytest_llmeval.engine.judge_model import Judge

__all__ = ["CaseServices", "RepeatPolicy", "check_embedder", "make_embedder"]


class RepeatPolicy:
    """How many times a case runs: its own ``metadata.repeats``, else its manifest's, else
    the session's ``--llmeval-repeats``."""

    def __init__(
        self, default: int = 1, file_repeats: Callable[[str], int | None] = lambda file: None
    ) -> None:
        self.default = default
        """Runs of a case that neither it nor its manifest sets."""
        self.file_repeats = file_repeats
        """Runs per case set by the manifest of a data file (display path), or ``None``."""

    def __call__(self, case: EvalCase) -> int:
        own = case.metadata.get("repeats")
        if isinstance(own, int) and not isinstance(own, bool) and own >= 1:
            return own
        found = self.file_repeats(case.file)
        return self.default if found is None else found


class CaseServices:
    """The judge, the embedder and the repeat policy of one process's dispatcher."""

    def __init__(
        self,
        *,
        repeats_for: Callable[[EvalCase], int] = lambda case: 1,
        judge_repeats: int = 1,
        make_judge: Callable[[], Judge] | None = None,
        make_embedder: Callable[[], CachedEmbedder] | None = None,
    ) -> None:
        self.repeats_for = repeats_for
        """How many times a case runs (``--llmeval-repeats``, a manifest's, a case's own)."""
        self.judge_repeats = judge_repeats
        """Verdicts asked per answer (``--llmeval-judge-repeats``)."""
        self._make_judge = make_judge
        self._make_embedder = make_embedder
        self._judge: Judge | None = None
        self._embedder: CachedEmbedder | None = None
        self._embedder_lock: asyncio.Lock | None = None

    @property
    def judge(self) -> Judge | None:
        """Asked for a verdict after the agent, on cases that carry a judge task; ``None``
        until :meth:`start_judge`, or when no judge runner is configured."""
        return self._judge

    def start_judge(self) -> None:
        """Build the judge (once), when a judge runner is configured."""
        if self._judge is None and self._make_judge is not None:
            self._judge = self._make_judge()

    async def embedder(self) -> CachedEmbedder:
        """The session's embedder, built once (off the loop: it may load a model)."""
        if self._embedder_lock is None:
            self._embedder_lock = asyncio.Lock()
        async with self._embedder_lock:
            if self._embedder is None:
                if self._make_embedder is None:
                    raise RunnerError("no embedder is configured", kind="agent")
                try:
                    self._embedder = await asyncio.to_thread(self._make_embedder)
                except ConfigError as exc:
                    raise RunnerError(f"semantic_similarity: {exc}", kind="agent") from None
        return self._embedder

    @property
    def open(self) -> bool:
        """Whether a judge or an embedder was built (and needs closing on the loop)."""
        return self._judge is not None or self._embedder is not None

    async def aclose(self) -> None:
        """Close the embedder and the judge's runner (on the loop they were used on)."""
        embedder, self._embedder = self._embedder, None
        if embedder is not None:
            await embedder.aclose()
        judge, self._judge = self._judge, None
        aclose = getattr(judge.runner, "aclose", None) if judge is not None else None
        if aclose is not None:
            await aclose()


def check_embedder(settings: Settings) -> None:
    """Fail at the start, without loading a model, when the embedder the settings name
    explicitly (``--llmeval-embedding-model`` / ``--llmeval-embedding-base-url``) cannot be
    built: a base URL without a model, a model folder that does not exist, a missing extra.
    ``ConfigError`` naming the option and what to do."""
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


def make_embedder(settings: Settings) -> CachedEmbedder:
    """The ``semantic_similarity`` embedder the settings name, behind the content cache
    (``<output root>/../embeddings``, shared by workers and sessions)."""
    from pytest_llmeval.engine.embeddings import CachedEmbedder, EndpointEmbedder, LocalEmbedder

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
