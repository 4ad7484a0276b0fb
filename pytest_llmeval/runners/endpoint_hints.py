"""What to change when an OpenAI-compatible endpoint refuses a request: one line, the fix.

The ``openai`` runner hands :func:`refusal_hint` the status of a refused request, the
server's error text, the URL it posted to and where each field of the body came from; the
hint it returns ends the error message:

* a 404 on a base URL whose path does not end in ``/v1``: ``did you mean <base>/v1?``;
* a 404 on ``/chat/completions``: the server may not serve chat (check the base URL and that it
  runs a chat model); on ``/completions``: the server has no completions API, which
  ``mcq-loglik`` needs;
* a 400 or 422 whose text names a field the body sent (``tool_choice``, ``logprobs``, ...):
  the option or manifest key that sent it.

Pure functions: no I/O, nothing about HTTP beyond the status.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

__all__ = ["LOGLIK_FIXES", "field_sources", "refusal_hint"]

LOGLIK_FIXES = (
    "set `protocol: mcq-string` or `protocol: judge` in the manifest, or use --llmeval-runner hf"
)
"""The ways out when an endpoint cannot score prompts (When2Call ``mcq-loglik``)."""

_SETTING_FLAGS = {
    "max_tokens": "--llmeval-max-tokens",
    "seed": "--llmeval-seed",
    "top_p": "--llmeval-top-p",
    "temperature": "--llmeval-temperature",
}
_ALWAYS_SENT = frozenset({"model", "messages", "prompt"})
"""Fields every request has: naming them in an error is no hint at what to change."""


def field_sources(
    body: Mapping[str, object],
    extra_body: Iterable[str],
    params: Iterable[str] = (),
    *,
    extra_body_flag: str = "--llmeval-extra-body",
) -> dict[str, str]:
    """Where each field of a request ``body`` came from, as the thing to change: the extra
    body's keys (merged last, so they win), the request's own parameters, the runner's
    decoding settings, the case's tools, the log-likelihood fields."""
    sources: dict[str, str] = {}
    for field in body:
        if field in _ALWAYS_SENT:
            continue
        if field in _SETTING_FLAGS:
            sources[field] = _SETTING_FLAGS[field]
        elif field in ("tools", "tool_choice"):
            sources[field] = (
                "the case's tools (the server or model may not support tool calling; "
                "--llmeval-tool-registry, or a case without tools)"
            )
        elif field == "response_format":
            sources[field] = (
                "the judge's strict JSON verdict (choose a judge endpoint with structured "
                "output: --llmeval-judge-runner, --llmeval-judge-base-url)"
            )
        elif field in ("echo", "logprobs"):
            sources[field] = f"the mcq-loglik protocol's prompt scores ({LOGLIK_FIXES})"
    for field in params:
        if field in body and field not in sources:
            sources[field] = "the request's own parameters"
    for field in extra_body:
        sources[field] = extra_body_flag  # merged last: what went out is the extra body's
    return sources


def refusal_hint(
    status: int, text: str, url: str, base_url: str, sources: Mapping[str, str]
) -> str:
    """The fix for a request refused with ``status`` (``""`` when there is none to give):
    ``url`` is where it was posted, ``base_url`` the runner's API root (both without
    secrets), ``text`` the server's error body, ``sources`` :func:`field_sources`."""
    if status == 404:
        return _not_found(url, base_url)
    if status in (400, 422):
        named = [f for f in sources if re.search(rf"(?<![\w.]){re.escape(f)}(?![\w])", text)]
        if not named:
            return ""
        parts = [f"field '{f}' was sent by {sources[f]}" for f in named]
        return "; the server does not take it: " + "; ".join(parts)
    return ""


def _not_found(url: str, base_url: str) -> str:
    base_path = urlsplit(base_url).path.rstrip("/")
    if not re.search(r"/v\d+$", base_path):
        return f"; did you mean {base_url.rstrip('/')}/v1? (--llmeval-base-url)"
    if urlsplit(url).path.rstrip("/").endswith("/chat/completions"):
        return (
            "; the server may not serve chat completions at this URL: check --llmeval-base-url, "
            "and that the server runs a chat model (a completions- or embeddings-only server "
            "answers 404 here)"
        )
    if urlsplit(url).path.rstrip("/").endswith("/completions"):
        return (
            "; the server has no completions API, which the mcq-loglik protocol needs for "
            f"prompt log-probabilities: {LOGLIK_FIXES}"
        )
    return "; check --llmeval-base-url"
