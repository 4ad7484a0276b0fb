"""The secrets of a session: every literal value its redactor masks and its leak check looks
for, found from the settings, the command line and the environment (a pure function of the
three)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.redact import (
    MIN_FOUND_SECRET_LENGTH,
    is_placeholder,
    named_secrets,
    placeholder_names,
    secret_env_values,
    secret_values,
    url_secrets,
    urls_in,
)
from pytest_llmeval.inputs.safe_read import SupportFileError, first_json_value

__all__ = ["placeholders", "secret_env_names", "session_secrets"]


def secret_env_names(settings: Settings) -> list[str]:
    """Every environment variable whose value is a secret: --llmeval-secret-env, the API key
    variable, and each provider's key variable."""
    names = [*settings.secret_env, settings.api_key_env]
    names += [p.key_env for p in settings.providers if p.key_env]
    return sorted(set(names))


def placeholders(settings: Settings) -> list[str]:
    """Key variables that are set to a placeholder or a short value: not masked."""
    return placeholder_names(secret_env_names(settings))


def session_secrets(
    settings: Settings, args: Sequence[str] = (), environ: Mapping[str, str] | None = None
) -> list[str]:
    """Every literal value the session's redactor masks and its leak check looks for: the
    values of :func:`secret_env_names`, of secret-named environment variables
    (``CI_JOB_TOKEN``), the credentials of every configured URL and of every URL on the
    command line (a user-info password, ``?api_key=``), and the secret-named values of
    ``--llmeval-extra-body``. Values found rather than configured count from
    :data:`~pytest_llmeval.core.redact.MIN_FOUND_SECRET_LENGTH` characters."""
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
    found = {v for v in found if len(v) >= MIN_FOUND_SECRET_LENGTH and not is_placeholder(v)}
    return sorted({*configured, *found})


def _json_object(text: str) -> Any:
    """The first JSON object in an argument or variable (``--llmeval-extra-body={...}``,
    ``{...}``, ``--llmeval-extra-body '{...}' -q``), or ``None`` (none there, or nested
    too deeply: not the JSON of an option the plugin reads)."""
    start = text.find("{")
    if start < 0:
        return None
    try:  # within the safe reader's depth cap: deep nesting is no RecursionError
        return first_json_value(text, start)
    except SupportFileError:
        return None


def _configured_urls(settings: Settings) -> Iterator[str]:
    urls = (settings.base_url, settings.judge_base_url, settings.embedding_base_url,
            settings.agent_url, settings.mlflow)  # fmt: skip
    yield from (url for url in urls if url)
    yield from (provider.base_url for provider in settings.providers)
