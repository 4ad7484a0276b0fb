"""``prompt_format: auto``: the When2Call prompt format picked from the model's name.

Likelihood scoring is sensitive to the prompt template, so a model is best scored in its own
family's format. The rules are one table, :data:`ROUTES`, read top to bottom; the first rule
whose pattern matches wins, and a name no rule matches gets ``default``. A pattern is matched
case-insensitively (``re.search``) on the last path segment of the model's name, so
``meta-llama/Llama-3.2-1B-Instruct`` and ``/models/llama-3.2-1b`` read as ``Llama-3.2-1B...``.
A training run's folder is passed over (:data:`CHECKPOINT_SEGMENT`: ``checkpoint-500``,
``step-1000``, ``global_step200``, ``final``), so ``/models/llama-3.2-1b/checkpoint-500`` is
read as ``llama-3.2-1b``. A name with no segment at all (``/``) is no name.
The same table is in ``docs/when2call.md``. An explicit ``prompt_format`` always wins.
"""

from __future__ import annotations

import re

from pytest_llmeval.suites.when2call_prompts import PromptFormat

__all__ = ["CHECKPOINT_SEGMENT", "ROUTES", "model_stem", "route"]

CHECKPOINT_SEGMENT = re.compile(r"checkpoint[-_]?\d+|(global[-_]?)?step[-_]?\d+|final", re.I)
"""A path segment that names a training run's save, not the model: passed over."""

ROUTES: tuple[tuple[str, str, PromptFormat], ...] = (
    ("xLAM", r"xlam", "xlam"),
    ("Hermes", r"hermes", "hermes"),
    ("Functionary", r"functionary", "functionary"),
    ("gpt-oss", r"gpt[-_ .]?oss", "harmony"),
    ("Llama 3.x", r"llama[-_ .]?3(?![0-9])", "llama3_2"),
    ("Qwen2 / Qwen2.5", r"qwen[-_ .]?2(?![0-9])", "qwen2_5"),
)
"""(family, pattern, format), first match wins; anything else is ``default``. The fine-tune
families come first: ``Hermes-3-Llama-3.1-8B`` is Hermes, ``Llama-xLAM-2-8b-fc-r`` xLAM."""


def model_stem(model: str) -> str:
    """The last path segment of a model's name (``org/name`` or a folder path) that is not a
    checkpoint folder; ``""`` when the name has no segment (``/``, spaces). A name made of
    checkpoint folders only is read as its last one."""
    segments = [part for part in re.split(r"[\\/]", model.strip()) if part.strip()]
    named = [part for part in segments if not CHECKPOINT_SEGMENT.fullmatch(part)]
    return (named or segments or [""])[-1]


def route(model: str) -> PromptFormat:
    """The format :data:`ROUTES` picks for ``model`` (``default`` when no rule matches)."""
    stem = model_stem(model)
    for _, pattern, fmt in ROUTES:
        if re.search(pattern, stem, re.IGNORECASE):
            return fmt
    return "default"
