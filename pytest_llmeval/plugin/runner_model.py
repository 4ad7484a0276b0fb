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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["RunnerModel", "model_named"]


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

    def settle(self, fingerprint: Mapping[str, Any] | None) -> None:
        """Fix the answer from ``fingerprint`` (``None``: no runner is known); the first call
        wins."""
        if not self.settled:
            self.settled = True
            self.name = model_named(fingerprint)

    def __call__(self) -> str | None:
        if not self.settled:
            self.asked_early = True
            self.settle(None)
        return self.name

    def missed(self, fingerprint: Mapping[str, Any] | None) -> str | None:
        """The model ``fingerprint`` names when cases were built before it could be read
        (:attr:`asked_early`) and it names one; else ``None``."""
        named = model_named(fingerprint)
        return named if self.asked_early and named != self.name else None
