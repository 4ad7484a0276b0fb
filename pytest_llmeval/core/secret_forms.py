"""The forms a secret takes when something echoes it, as one regular expression.

A key a backend, a log or a page repeats is often not the value byte for byte:

* JSON escapes it: ``/`` as ``\\/`` (PHP and others), ``"`` and ``\\`` with a backslash,
  markup and non-ASCII characters as ``\\u00xx`` (any case); Python's ``repr()`` escapes
  ``'`` with a backslash (a logged list of keys);
* a URL percent-encodes it (``quote``, ``quote_plus``: ``%2F`` or ``%2f``, a space as ``+``);
* a page HTML-escapes it (``&amp;``, ``&lt;``, ``&quot;``, ``&#39;``, ``&#x27;`` …);
* a header or a token holds its base64: standard or URL-safe, with or without padding, and
  inside a longer value (``Authorization: Basic base64(user:key)``), where the secret can
  start at any of the three byte offsets of a base64 group.

:func:`secret_pattern` is one regular expression for all these forms of one secret (each
character that an encoder changes is an alternation of its encodings, so a text that mixes
them still matches). The redactor joins the patterns of every secret into one compiled
alternation (``core/redact.Redactor``), and the leak check compiles the same text as a bytes
pattern (:func:`leak_pattern`): both are built once per session, so a case pays one regex
pass as before. A base64 form inside a longer value matches by its *core*, the characters
that depend on the secret's bytes alone; the one to three characters around it carry a few
bits of the secret at most and are left as they are.

:func:`readable_body` decodes a backend's JSON error body (``\\/``, ``\\u00xx``) before it is
redacted and quoted, so what a message shows is the text the backend meant.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import html
import json
import re
from collections.abc import Iterable

MIN_BASE64_CORE = 10
"""The shortest base64 core looked for (60 bits): a secret of 8 characters has cores of 10."""
_KEPT = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
"""Characters no encoder above changes."""
_HTML_NAMES = {"&": "amp", "<": "lt", ">": "gt", '"': "quot", "'": "apos"}


def _hex(text: str) -> str:
    """``text`` as a pattern whose hexadecimal digits match in either case."""
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else re.escape(c) for c in text)


@functools.lru_cache(maxsize=512)
def _char(c: str) -> str:
    """One character of a secret: itself or any of its encodings."""
    if c in _KEPT:
        return c
    forms = {re.escape(c), re.escape(json.dumps(c)[1:-1])}
    forms.add(_hex(json.dumps(c, ensure_ascii=True)[1:-1]) if ord(c) > 0x7F else "")
    if ord(c) < 0x10000:
        forms.add(r"\\u" + _hex(f"{ord(c):04x}"))
    if c == "/":
        forms.add(r"\\/")
    if c == "'":
        forms.add(r"\\'")  # Python's repr() of a string holding both quotes
    forms.add("".join(_hex(f"%{b:02x}") for b in c.encode()))
    if c == " ":
        forms.add(r"\+")
    forms.add(f"&#0*{ord(c)};")
    forms.add("&#[xX]0*" + _hex(f"{ord(c):x}") + ";")
    if c in _HTML_NAMES:
        forms.add(f"&{_HTML_NAMES[c]};")
    forms.discard("")
    return "(?:" + "|".join(sorted(forms, key=lambda f: (-len(f), f))) + ")"


def _escaped(text: str) -> str:
    """``text`` as a pattern that matches it with any of its characters encoded."""
    return "".join(_char(c) for c in text)


def base64_forms(secret: str) -> list[str]:
    """The base64 texts that show ``secret``: its whole encoding (padded, unpadded) and the
    cores of the three alignments inside a longer value, standard and URL-safe, each once,
    longest first (a whole encoding is matched before the core it starts with)."""
    raw = secret.encode()
    whole = base64.b64encode(raw).decode("ascii")
    forms = [whole, whole.rstrip("=")]
    for offset, start in ((0, 0), (1, 2), (2, 3)):  # leading bytes of the group, first char
        encoded = base64.b64encode(b"\0" * offset + raw).decode("ascii")
        core = encoded[start : (8 * (offset + len(raw))) // 6]
        if len(core) >= MIN_BASE64_CORE:
            forms.append(core)
    forms += [f.replace("+", "-").replace("/", "_") for f in forms]
    return list(dict.fromkeys(f for f in forms if f and f != secret))


def _uniform_forms(secret: str) -> list[str]:
    """``secret`` with every character encoded, letters and digits too: JSON ``\\u00xx``
    escapes (an encoder that escapes all) and percent-encoding (an encoder that encodes every
    byte), in lower-case hex (:func:`_uniform_pattern` matches either case)."""
    forms = ["".join(f"%{b:02x}" for b in secret.encode())]
    if all(ord(c) < 0x10000 for c in secret):
        forms.append("".join(f"\\u{ord(c):04x}" for c in secret))
    return forms


def _uniform_pattern(form: str) -> str:
    """A :func:`_uniform_forms` form as a pattern whose hex digits match in either case."""
    return _hex(form)


_STABLE = re.compile(r"[0-9%\\u]+")
"""Characters of a :func:`_uniform_forms` form that no choice of hex case changes."""


@functools.lru_cache(maxsize=256)
def secret_pattern(secret: str) -> str:
    """One regular expression for ``secret`` and each of its encoded forms (see the module)."""
    forms = [_escaped(secret)]
    if len(secret) >= 4:
        forms += [_escaped(f) for f in base64_forms(secret)]
        forms += [_uniform_pattern(f) for f in _uniform_forms(secret)]
    return "(?:" + "|".join(forms) + ")"


def secrets_pattern(secrets: Iterable[str]) -> str:
    """The alternation of :func:`secret_pattern` for each secret, longest secret first (a
    secret that holds another is masked whole); empty for no secrets."""
    ordered = sorted({s for s in secrets if s}, key=lambda s: (-len(s), s))
    return "|".join(secret_pattern(s) for s in ordered)


_RUN = re.compile(r"[A-Za-z0-9]+")


@functools.lru_cache(maxsize=256)
def _anchors(secret: str) -> frozenset[str]:
    """The longest run of characters no encoder changes of each form of ``secret``: every
    text that shows the secret, in any form, holds one of these as it is."""
    found = set()
    for form in (secret, *base64_forms(secret)):
        runs = _RUN.findall(form)
        found.add(max(runs, key=len) if runs else "")
    if len(secret) >= 4:  # every character encoded: the longest run whatever the hex case
        for form in _uniform_forms(secret):
            found.add(max(_STABLE.findall(form), key=len, default=""))
    return frozenset(found)


def secret_anchors(secrets: Iterable[str]) -> tuple[str, ...]:
    """The :func:`_anchors` of every secret: a text holding none of them holds no secret, so
    the redactor and the leak check skip the pattern (a fast substring test first)."""
    return tuple(sorted({a for s in secrets if s for a in _anchors(s)}, key=len))


def shortest_form(secrets: Iterable[str]) -> int:
    """The fewest characters any form of any secret takes: a shorter text holds none."""
    lengths = [len(f) for s in secrets if s for f in (s, *base64_forms(s))]
    return min(lengths, default=0)


class LeakPattern:
    """:func:`secrets_pattern` as a bytes pattern, to search files as they are on disk, behind
    the :func:`secret_anchors` test."""

    def __init__(self, secrets: Iterable[str]) -> None:
        secrets = list(secrets)
        self._pattern = re.compile(secrets_pattern(secrets).encode("utf-8"))
        self._anchors = tuple(a.encode("ascii") for a in secret_anchors(secrets))

    def search(self, data: bytes) -> bool:
        """Whether ``data`` holds a secret in any of its forms."""
        if not any(anchor in data for anchor in self._anchors):
            return False
        return self._pattern.search(data) is not None


def leak_pattern(secrets: Iterable[str]) -> LeakPattern | None:
    """The :class:`LeakPattern` of ``secrets``; ``None`` when there is none."""
    secrets = [s for s in secrets if s]
    return LeakPattern(secrets) if secrets else None


def readable_body(text: str) -> str:
    """A backend's body as the text it means: a JSON body decoded and written again without
    escapes (``\\/`` → ``/``, ``\\u0026`` → ``&``), HTML entities resolved; any other text as
    it is. For a message quoting the body, before it is redacted."""
    stripped = text.strip()
    if stripped[:1] in ("{", "[", '"'):
        with contextlib.suppress(ValueError, RecursionError):  # not JSON: as it is
            stripped = json.dumps(json.loads(stripped), ensure_ascii=False)
    return html.unescape(stripped) if "&" in stripped else stripped
