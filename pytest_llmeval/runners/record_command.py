"""The exact command that records what a replay misses, built from the recorded runner.

A replay miss used to say "record it by running once with a live runner": true, and no help
to a user who did not record the cassettes. The recorded folder's ``runner.json`` names the
runner and what decides its answers; the session knows the command that started it
(:attr:`~pytest_llmeval.config.settings.Settings.command`, ``pytest evals``). Together they
make the command that records the missing answer into the same folder::

    pytest evals --llmeval-runner tiny-model --llmeval-record new

The options that name a fingerprint's values are added when the recording has them
(``--llmeval-model``, ``--llmeval-base-url``, sampling): a recording made with other values
would go to another folder, and the replay would not find it. A value the fingerprint masks
(a key in the base URL) is left out rather than named wrongly.
"""

from __future__ import annotations

import shlex
from typing import Any

from pytest_llmeval.core.redact import MASK

__all__ = ["GENERIC_HINT", "record_command", "record_hint"]

GENERIC_HINT = (
    "record it by running once with a live runner and `--llmeval-record new` "
    "(`--llmeval-record all` re-records everything)"
)
"""What a miss says when no recorded runner is known (no ``runner.json`` to build from)."""

_FLAGS = (
    ("model", "--llmeval-model", None),
    ("base_url", "--llmeval-base-url", None),
    ("temperature", "--llmeval-temperature", 0.0),
    ("top_p", "--llmeval-top-p", None),
    ("max_tokens", "--llmeval-max-tokens", None),
    ("seed", "--llmeval-seed", None),
)
"""A fingerprint's key → the option that sets it, and the value it needs no option for."""


def record_command(command: str, runner_fp: dict[str, Any]) -> str:
    """``command`` with the options that record ``runner_fp``'s runner again: its name (the
    fingerprint's ``type``), the values that decide its answers, and ``--llmeval-record new``."""
    runner = runner_fp.get("type")
    name = shlex.quote(runner) if isinstance(runner, str) and runner.strip() else "NAME"
    parts = [command, "--llmeval-runner", name]
    for key, flag, default in _FLAGS:
        value = runner_fp.get(key)
        if value is None or value == default or isinstance(value, (dict, list, bool)):
            continue
        if isinstance(value, str) and (not value.strip() or MASK in value):
            continue
        parts += [flag, shlex.quote(str(value))]
    return " ".join([*parts, "--llmeval-record", "new"])


def record_hint(command: str | None, runner_fp: dict[str, Any] | None) -> str:
    """The end of a miss's message: the exact command when the session's command and the
    recorded runner are known, else :data:`GENERIC_HINT`."""
    if command is None or runner_fp is None:
        return GENERIC_HINT
    return f"record it with: {record_command(command, runner_fp)}"
