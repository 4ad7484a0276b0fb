"""Keeping secrets out of what a run writes (the first piece; the gates issue extends it).

URL user-info (``https://user:token@host``) is replaced by ``***@``; query strings of URLs
given as settings are dropped, since keys often ride there.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s@]+@")


def public_url(url: str) -> str:
    """``url`` without user-info, query string and fragment: safe to log and to fingerprint."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def redact_text(text: str) -> str:
    """``text`` with the user-info of every URL in it replaced by ``***``."""
    return _USERINFO.sub(r"\g<scheme>***@", text)


def redact_value(value: Any) -> Any:
    """Redact every string inside a JSON-like value."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {key: redact_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(item) for item in value]
    return value
