"""OpenAI-compatible providers, and which one serves a model (routing by model-name prefix).

``llmeval_providers`` (ini, or ``--llmeval-providers`` / ``PYTEST_LLMEVAL_PROVIDERS``) lists
providers, one per line (or separated by ``;``), each as four whitespace-separated fields::

    NAME  BASE_URL  KEY_ENV  PREFIX[,PREFIX...]

    [pytest]
    llmeval_providers =
        gemini  https://generativelanguage.googleapis.com/v1beta/openai  GEMINI_API_KEY  gemini-
        local   http://127.0.0.1:8000/v1  -  llama-,qwen-

``KEY_ENV`` names the environment variable holding the provider's API key (``-``: send no
key). Blank lines and lines starting with ``#`` are ignored. A model whose name starts with
one of a provider's prefixes goes to that provider; when several match, the longest prefix
wins; when none does, ``--llmeval-base-url`` and ``--llmeval-api-key-env`` apply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, field_serializer

from pytest_llmeval.core.redact import public_url

__all__ = ["Provider", "Route", "parse_providers", "route_model"]

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
FORMAT = "NAME BASE_URL KEY_ENV PREFIX[,PREFIX...] (KEY_ENV '-' for no key)"


class Provider(BaseModel):
    """One OpenAI-compatible endpoint and the model names it serves."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    """A label for messages (``gemini``)."""
    base_url: str
    """The API root, e.g. ``https://host/v1`` (``/chat/completions`` is appended)."""
    key_env: str | None = None
    """The environment variable holding the API key; ``None``: no key is sent."""
    model_prefixes: tuple[str, ...]
    """Model names starting with one of these go to this provider."""

    @field_serializer("base_url", when_used="json")
    def _public_base_url(self, value: str) -> str:
        return public_url(value)


@dataclass(frozen=True)
class Route:
    """Where one model's calls go."""

    base_url: str
    key_env: str | None
    provider: str | None
    """The provider's name; ``None`` for the default endpoint."""


def parse_providers(raw: str | list[str] | tuple[str, ...]) -> tuple[Provider, ...]:
    """Parse the providers setting; ValueError with the entry and the expected format."""
    text = "\n".join(raw) if isinstance(raw, (list, tuple)) else raw
    entries = [e.strip() for line in text.splitlines() for e in line.split(";")]
    providers: list[Provider] = []
    owners: dict[str, str] = {}
    for entry in entries:
        if not entry or entry.startswith("#"):
            continue
        fields = entry.split()
        if len(fields) != 4:
            raise ValueError(f"provider entry {entry!r}: expected 4 fields, {FORMAT}")
        name, base_url, key_env, prefixes = fields
        if not _NAME.match(name):
            raise ValueError(f"provider entry {entry!r}: bad name {name!r}")
        if any(p.name == name for p in providers):
            raise ValueError(f"provider {name!r} is listed twice")
        _check_url(base_url, name)
        if key_env != "-" and not _ENV_NAME.match(key_env):
            raise ValueError(
                f"provider {name!r}: KEY_ENV must be an environment variable name or '-', "
                f"got {key_env!r}"
            )
        prefix_list = tuple(p for p in prefixes.split(",") if p)
        if not prefix_list:
            raise ValueError(f"provider {name!r}: give at least one model-name prefix")
        for prefix in prefix_list:
            if prefix in owners:
                raise ValueError(
                    f"model prefix {prefix!r} is claimed by providers {owners[prefix]!r} "
                    f"and {name!r}"
                )
            owners[prefix] = name
        providers.append(
            Provider(
                name=name,
                base_url=base_url,
                key_env=None if key_env == "-" else key_env,
                model_prefixes=prefix_list,
            )
        )
    return tuple(providers)


def route_model(
    model: str,
    providers: tuple[Provider, ...] | list[Provider],
    default_base_url: str,
    default_key_env: str | None,
) -> Route:
    """The provider whose longest prefix starts ``model``, else the default endpoint."""
    best: tuple[int, Provider] | None = None
    for provider in providers:
        for prefix in provider.model_prefixes:
            if model.startswith(prefix) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), provider)
    if best is None:
        return Route(base_url=default_base_url, key_env=default_key_env, provider=None)
    provider = best[1]
    return Route(base_url=provider.base_url, key_env=provider.key_env, provider=provider.name)


def _check_url(url: str, name: str) -> None:
    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        _ = parts.port
    except ValueError:
        ok = False
    if not ok:
        try:
            shown = public_url(url)
        except ValueError:
            shown = "<unparsable url>"
        raise ValueError(
            f"provider {name!r}: BASE_URL must be an absolute http(s) URL, got {shown!r}"
        )
