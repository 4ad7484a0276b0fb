"""The scoring key of a case file: the fingerprint of everything besides the row and the
runner that decides a case's verdict, journaled with each result so a resume reuses a result
only when it was judged the same way."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.fingerprint import sha256_hex
from pytest_llmeval.inputs.manifest import ManifestIndex

__all__ = ["SCORING_SETTINGS", "ScoringKeys", "scoring_fingerprint"]

SCORING_SETTINGS = (
    "repeats", "repeat_rule", "max_turns", "judge_runner", "judge_model", "judge_base_url",
    "judge_temperature", "judge_repeats", "embedding_model", "embedding_base_url",
    "integration_mode", "fail_on_fingerprint_mismatch",
)  # fmt: skip
"""The settings that decide a case's verdict beside its row and its runner."""


def scoring_fingerprint(settings: Settings, options: Mapping[str, Any]) -> str:
    """sha256 of the scoring settings and a manifest's options."""
    body = {name: getattr(settings, name) for name in SCORING_SETTINGS}
    text = json.dumps({"settings": body, "manifest": options}, sort_keys=True, default=str)
    return sha256_hex(text)


class ScoringKeys:
    """The scoring key of each data file, worked out once per file: its manifest's options
    (thresholds, repeats, misses, suite options; not its gates, judged after the cases) and
    the session's scoring settings (repeats, repeat rule, judge, embedder, integration mode,
    max turns)."""

    def __init__(self, settings: Settings, manifests: ManifestIndex) -> None:
        self._settings = settings
        self._manifests = manifests
        self._keys: dict[str, str] = {}

    def __call__(self, file: str) -> str:
        found = self._keys.get(file)
        if found is None:
            manifest = self._manifests.for_data(file)
            written = manifest.options if manifest is not None else {}
            options = {k: v for k, v in written.items() if k != "gates"}
            found = self._keys[file] = scoring_fingerprint(self._settings, options)
        return found
