"""Keeping secrets out of everything a run writes, and checking that none got through.

One :class:`Redactor` per session is applied to every artifact (run dir files, cassettes,
failure messages, junit properties). It replaces with ``[REDACTED]``:

* token shapes (seed 001): ``sk-…``, ``hf_…``, ``jina_…``, ``pplx-…``, ``AIza…``, ``Bearer …``;
* string values under keys whose names say secret: ``api_key``, ``apikey``, ``secret``,
  ``password``, ``authorization``, ``token`` (and ``access_token``…; not ``tokens`` or
  ``tokenizer``, which are counts and fingerprints). A bare ``key`` is not redacted: in
  fixtures and cassettes it is a lookup key or a content address, never a credential;
* URL user-info (``https://user:pass@host`` → ``https://[REDACTED]@host``);
* extra patterns (``--llmeval-redact-pattern``) and the literal values of the configured secret
  environment variables (``--llmeval-secret-env``, the runner's API key variable).

:func:`find_leaks` then scans written files for those literal values; the plugin fails the
session when one is found (which only happens when something bypassed the redactor).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

MASK = "[REDACTED]"
TOKEN_PATTERNS = (
    r"\bsk-[A-Za-z0-9_-]{8,}",
    r"\bhf_[A-Za-z0-9]{8,}",
    r"\bjina_[A-Za-z0-9_]{8,}",
    r"\bpplx-[A-Za-z0-9_-]{8,}",
    r"\bAIza[0-9A-Za-z_-]{20,}",
    r"\bBearer\s+[A-Za-z0-9._~+/=-]{6,}",
)
SENSITIVE_KEY = re.compile(
    r"api[_-]?key|secret|passw(or)?d|authorization|(^|[_-])token$|access[_-]?key|private[_-]?key",
    re.IGNORECASE,
)
_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s@]+@")
MIN_SECRET_LENGTH = 4
"""Shorter environment values are not treated as secrets (they would match everywhere)."""


def public_url(url: str) -> str:
    """``url`` without user-info, query string and fragment: safe to log and to fingerprint."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def secret_values(env_names: Iterable[str], environ: dict[str, str] | None = None) -> list[str]:
    """The values of the named environment variables that are long enough to be secrets."""
    env = os.environ if environ is None else environ
    values = {env.get(name, "") for name in env_names}
    return sorted(v for v in values if len(v) >= MIN_SECRET_LENGTH)


class Redactor:
    """Replaces secrets in text and in JSON-like values."""

    def __init__(self, patterns: Iterable[str] = (), secrets: Iterable[str] = ()):
        self.secrets = sorted(set(secrets), key=len, reverse=True)
        parts = [*TOKEN_PATTERNS, *patterns, *(re.escape(s) for s in self.secrets)]
        self._pattern = re.compile("|".join(f"(?:{p})" for p in parts))

    def text(self, text: str) -> str:
        if "://" in text:  # the user-info pattern cannot match without it
            text = _USERINFO.sub(rf"\g<scheme>{MASK}@", text)
        return self._pattern.sub(MASK, text)

    def value(self, value: Any) -> Any:
        """Redact every string in a JSON-like value; mask string values of secret-named keys."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            out: dict[Any, Any] = {}
            for key, item in value.items():
                if isinstance(item, str):
                    out[key] = MASK if isinstance(key, str) and _sensitive(key) else self.text(item)
                elif item is None or isinstance(item, (int, float)):
                    out[key] = item  # what value() returns for them, without the call
                else:
                    out[key] = self.value(item)
            return out
        if isinstance(value, (list, tuple)):
            return [self.value(item) for item in value]
        return value


@functools.lru_cache(maxsize=4096)
def _sensitive(key: str) -> bool:
    """Whether a key names a secret (results repeat the same few keys for every case)."""
    return SENSITIVE_KEY.search(key) is not None


def redact_text(text: str) -> str:
    """``text`` with the user-info of every URL in it replaced (no other rules)."""
    return _USERINFO.sub(rf"\g<scheme>{MASK}@", text)


def redact_value(value: Any) -> Any:
    """URL user-info redaction over a JSON-like value."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {key: redact_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(item) for item in value]
    return value


def find_leaks(paths: Iterable[Path], secrets: Iterable[str]) -> list[Path]:
    """The files (among ``paths``, folders searched recursively) that contain a secret value."""
    needles = [s.encode("utf-8") for s in secrets if s]
    if not needles:
        return []
    leaks: list[Path] = []
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            try:
                data = file.read_bytes()
            except OSError:
                continue
            if any(needle in data for needle in needles):
                leaks.append(file)
    return leaks
