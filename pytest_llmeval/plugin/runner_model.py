"""The model the session's runner names, for a case built from the model's name.

When2Call's ``prompt_format: auto`` without ``--llmeval-model`` picks the prompt format from
the ``model`` of the runner's fingerprint, so the runner must be known before the first such
case is built, and every case must get the same answer. The answer is settled once per
process, from the runner (or agent) the cases run with:

* the plugin's own runner (``--llmeval-runner``, with its ini and environment settings): when
  the checks before any case build it, or under a resume just before the earlier results are
  compared with the cases (a comparison builds them);
* a user's ``llmeval_runner`` or ``llmeval_agent`` fixture: at the first eval case's setup,
  whose fixtures are then resolved before its case is built.

Every process of an xdist run settles it from the same runner, so a worker picks what a
session without xdist picks. A case built before it could be settled (a resume whose agent is a
user's fixture, built only when the first case runs) is noted: if that agent then names a
model, the resume stops rather than run and compare cases in a format the model did not choose.

A case built from the answer carries the name in its metadata (:data:`RUNNER_MODEL_KEY`), so
its setup can tell when the agent it is about to run with names another model (a
function-scoped fixture with a different agent per case), and an xdist controller can tell
when two workers settled on different models (a fixture that reads the worker's id or its
process): both fail rather than mix formats silently.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from pytest_llmeval.core.clip import clip
from pytest_llmeval.suites.base import RUNNER_MODEL_KEY

__all__ = ["RUNNER_MODEL_KEY", "RunnerModel", "model_named", "other_model", "workers_disagree"]


def model_named(fingerprint: Mapping[str, Any] | None) -> str | None:
    """The ``model`` a runner's fingerprint names, when it is a non-empty string."""
    model = (fingerprint or {}).get("model")
    return model if isinstance(model, str) and model.strip() else None


class RunnerModel:
    """The ``model`` of the runner's fingerprint, settled once; called by the suites (it is the
    :class:`~pytest_llmeval.suites.base.SuiteContext`'s ``runner_model``)."""

    def __init__(self) -> None:
        self.settled = False
        """Whether the answer is fixed (it never changes after)."""
        self.name: str | None = None
        """The model's name, or ``None`` when the runner's fingerprint names none."""
        self.asked_early = False
        """Whether a case asked before the runner was known (and was answered ``None``)."""
        self.from_agent = False
        """Whether the answer came from the first case's agent (a conftest's fixture), which
        the other cases' agents must then agree with (they are that fixture's too)."""
        self.told = False
        """An xdist worker's: whether its controller was told the model its cases were built
        for (once: every case of the process was built for the same one)."""
        self._probing = False

    def settle(self, fingerprint: Mapping[str, Any] | None, *, from_agent: bool = False) -> None:
        """Fix the answer from ``fingerprint`` (``None``: no runner is known), the one of the
        first case's agent when ``from_agent``; the first call wins."""
        if not self.settled:
            self.settled = True
            self.name = model_named(fingerprint)
            self.from_agent = from_agent

    def __call__(self) -> str | None:
        if self._probing:
            return self.name
        if not self.settled:
            self.asked_early = True
            self.settle(None)
        return self.name

    def missed(self, fingerprint: Mapping[str, Any] | None) -> str | None:
        """The model ``fingerprint`` names when cases were built before it could be read
        (:attr:`asked_early`) and it names one; else ``None``."""
        named = model_named(fingerprint)
        return named if self.asked_early and named != self.name else None

    @contextlib.contextmanager
    def probe(self) -> Iterator[None]:
        """Build a case without settling the answer (``None`` until it is settled): to learn
        whether its row is broken or skips when its fixtures failed before the agent could
        name its model; a case built so is built again once the answer is known."""
        self._probing = True
        try:
            yield
        finally:
            self._probing = False


def other_model(metadata: Mapping[str, Any], fingerprint: Mapping[str, Any] | None) -> str | None:
    """Why a case built from the runner's model (its ``metadata`` says which) must not run
    with the agent whose ``fingerprint`` this is: it names another model; else ``None``."""
    if RUNNER_MODEL_KEY not in metadata:
        return None
    built, named = metadata[RUNNER_MODEL_KEY], model_named(fingerprint)
    if built == named:
        return None
    return (
        f"prompt_format: auto: this case was built for the model {_shown(built)} the first "
        f"case's agent named, but its own agent names {_shown(named)} (a fixture with another "
        "agent per "
        "case?); give --llmeval-model NAME, or name the format in the manifest"
    )


def workers_disagree(models: Mapping[str, str | None]) -> str | None:
    """Why an xdist run whose workers (``models``: worker id -> the model its cases were
    built for) built cases for different models must fail; ``None`` when they agree."""
    if len(set(models.values())) < 2:
        return None
    seen = ", ".join(f"{worker}: {_shown(model)}" for worker, model in sorted(models.items()))
    return (
        "prompt_format: auto: the xdist workers' agents name different models "
        f"({seen}), so their cases were built in different prompt formats; give "
        "--llmeval-model NAME, or name the format in the manifest"
    )


def _shown(model: str | None) -> str:
    """A model's name for a message: quoted, a huge one clipped."""
    return repr(model) if model is None or len(model) <= 200 else repr(clip(model, 200))
