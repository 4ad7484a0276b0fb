"""Keeping secrets out of everything a run writes, and checking that none got through.

One :class:`Redactor` per session is applied to every artifact (run dir files, cassettes,
failure messages, junit properties). It replaces with ``[REDACTED]``:

* token shapes: ``sk-…``, ``hf_…``, ``jina_…``, ``pplx-…``, ``AIza…``, ``Bearer …``;
* string values under keys whose names say secret: ``api_key``, ``apikey``, ``secret``,
  ``password``, ``authorization``, ``token`` (and ``access_token``…; not ``tokens`` or
  ``tokenizer``, which are counts and fingerprints). A bare ``key`` is not redacted: in
  fixtures and cassettes it is a lookup key or a content address, never a credential;
  A key naming an environment *variable* (``api_key_env``, ``key_env``) is not a secret: the
  variable's name is configuration and is shown, its value never is;
* URL credentials: user-info (``https://user:pass@host`` → ``https://[REDACTED]@host``) and
  the values of credential query parameters (``?api_key=``, ``key``, ``token``,
  ``access_token``, ``sig``, ``X-Amz-Signature``, ``password`` …; see :func:`secret_param`);
  a key in a URL's path (a gateway's ``https://gw/<key>/v1``) is masked where it is the
  value of a key variable (wherever it appears) or looks like a key (:func:`looks_secret`);
* extra patterns (``--llmeval-redact-pattern``) and the literal values of the session's secrets
  (:func:`pytest_llmeval.plugin.state.session_secrets`): the configured secret environment variables
  (``--llmeval-secret-env``, the runner's API key variable), secret-named environment variables
  (:func:`secret_env_values`: ``CI_JOB_TOKEN`` …), the credentials of the configured URLs
  (:func:`url_secrets`) and the secret-named values of ``--llmeval-extra-body``
  (:func:`named_secrets`). A literal value is masked wherever it appears, whatever the shape of the
  text around it. Placeholder keys (``ollama``, ``EMPTY``, ``sk-no-key-required``, well-known dummy
  passwords such as ``postgres`` or ``changeme``; :data:`PLACEHOLDER_KEYS`), values under
  :data:`MIN_SECRET_LENGTH` characters and plain numbers or dates are not secrets: they would be
  masked in, and found by the leak check in, ordinary text (a report's timestamps).

:meth:`Redactor.argv` redacts a command line the same way, and also the value given to a
secret-named option (``--token X``, ``--api-key=X``, ``-o api_key=X``).

:func:`pytest_llmeval.core.log_redaction.redact_logs` puts the session's redactor on the
loggers of the HTTP clients (httpx logs every request's full URL, query credentials included)
and on pytest's own log handlers, so captured logs, live logs and log files are redacted too.

:func:`find_leaks` then scans written files for those values, literal or encoded (the forms
of :mod:`pytest_llmeval.core.secret_forms`, which the redactor masks too); the plugin fails the
session when one is found (which only happens when something bypassed the redactor).
"""

from __future__ import annotations

import base64
import functools
import itertools
import json
import os
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

from pytest_llmeval.core.secret_forms import (
    leak_pattern,
    secret_anchors,
    secrets_pattern,
    shortest_form,
)

MASK = "[REDACTED]"
TOKEN_PATTERNS = (
    r"\bsk-[A-Za-z0-9_-]{8,}",
    r"\bhf_[A-Za-z0-9]{8,}",
    r"\bjina_[A-Za-z0-9_]{8,}",
    r"\bpplx-[A-Za-z0-9_-]{8,}",
    r"\bAIza[0-9A-Za-z_-]{20,}",
    r"\bBearer\s+[A-Za-z0-9._~+/=-]{6,}",
)
TOKEN_PREFIXES = ("sk-", "hf_", "jina_", "pplx-", "AIza", "Bearer")
"""The text every :data:`TOKEN_PATTERNS` match begins with (after its ``\\b``)."""
SENSITIVE_KEY = re.compile(
    r"api[_-]?key|secret|passw(or)?d|authorization|(^|[_-])token$|access[_-]?key|private[_-]?key",
    re.IGNORECASE,
)
_NAMES_A_VARIABLE = re.compile(r"[_-]env$", re.IGNORECASE)
"""``api_key_env``, ``--llmeval-api-key-env``: the key names a variable, not a secret."""
_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s@]+@")
_QUERY_PARAM = re.compile(r"(?P<head>[?&;](?P<name>[A-Za-z0-9_.~%-]+)=)(?P<value>[^&#\s\"'<>\\]+)")
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s\"'<>]+")
_SEGMENT_CHARS = re.compile(r"[A-Za-z0-9._~+=-]+")
_TOKEN_SHAPE = re.compile("|".join(f"(?:{p})" for p in TOKEN_PATTERNS))
SECRET_PARAM_WORDS = frozenset(
    {"key", "apikey", "token", "secret", "password", "passwd", "pwd", "pass", "auth",
     "sig", "signature", "credential", "credentials", "jwt"}
)  # fmt: skip
"""A query parameter is a credential when one of the ``_.-~`` separated words of its name is
one of these (``api_key``, ``x-amz-signature``, ``access_token``, ``sig``)."""
SECRET_ENV_NAME = re.compile(
    r"(TOKEN|PASSWORD|PASSWD|SECRET|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIALS?|JWT(_V\d+)?)$"
    r"|(^|_)(KEY|PAT|AUTH|PASS)$|_PWD$",
    re.IGNORECASE,
)
"""An environment variable whose name ends like this holds a secret: ``…TOKEN``
(``HF_TOKEN``, ``GITHUB_TOKEN``, ``CI_JOB_TOKEN``), ``…PASSWORD``/``…PASSWD``, ``…SECRET``,
``…API_KEY``/``…APIKEY``, ``…ACCESS_KEY``, ``…PRIVATE_KEY``, ``…CREDENTIAL(S)``, ``…JWT``
(``CI_JOB_JWT_V2``), and, as a whole word after ``_`` (or the whole name), ``KEY``
(``AZURE_OPENAI_KEY``, ``OPENAI_KEY``, ``SERPAPI_KEY``, ``AWS_SECRET_ACCESS_KEY``), ``PAT``
(``GITHUB_PAT``), ``AUTH`` (``NPM_AUTH``), ``PASS`` (``SMTP_PASS``) and ``PWD`` (``DB_PWD``; not
``PWD`` or ``OLDPWD``, the working directory). Not ``MONKEY``, ``SSH_AUTH_SOCK``,
``GIT_ASKPASS``, ``AWS_ACCESS_KEY_ID`` (an identifier) or ``KEY_FILE`` (a path's name). The
value of such a variable is a secret unless it is harmless (:func:`secret_env_values`)."""
MIN_SECRET_LENGTH = 8
"""Shorter values of the key variables are not treated as secrets: masking a short word
everywhere would garble every report (and the leak check would find it in ordinary text)."""
MIN_FOUND_SECRET_LENGTH = 8
"""The least length of a secret found rather than configured (a URL's password, a
secret-named variable or extra-body value): masking a short word everywhere would garble
every report, while such a value is still masked where its shape shows (user-info, key)."""
DUMMY_PASSWORDS = frozenset(
    {"postgres", "password", "password1", "password123", "passw0rd", "p@ssw0rd", "p@ssword",
     "changeme", "change-me", "change_me", "changeit", "secret123", "mysecret", "supersecret",
     "admin123", "adminadmin", "rootroot", "minioadmin", "testpass", "testpassword",
     "testsecret", "example", "guestguest", "letmein1"}
)  # fmt: skip
"""The default passwords of CI service containers, tutorials and quick starts
(``POSTGRES_PASSWORD=postgres``, ``DB_PASSWORD=password``, Java's keystore ``changeit``,
MinIO's ``minioadmin``), in lower case: a value everyone knows protects nothing, and it is an
ordinary word of a project's own text and paths (``postgres_evals/``, a case about
``postgres``), which masking would garble and the leak check would find in pytest's junit."""
_LOCAL_PLACEHOLDERS = frozenset(
    {"ollama", "empty", "none", "null", "sk-no-key-required", "lm-studio", "not-needed",
     "no-key", "dummy", "placeholder", "disabled", "required", "optional", "anonymous",
     "kerberos"}
)  # fmt: skip
PLACEHOLDER_KEYS = _LOCAL_PLACEHOLDERS | DUMMY_PASSWORDS
"""Keys that local servers document as "any value works" (Ollama's ``ollama``, vLLM's
``EMPTY``, llama.cpp's ``sk-no-key-required``, LM Studio's ``lm-studio``), the switch
words a secret-named variable can hold (``NPM_AUTH=disabled``, ``PROXY_AUTH=kerberos``) and
the well-known :data:`DUMMY_PASSWORDS`, in lower case: such a value is not a secret, and it
appears in ordinary text (``ollama_smoke.golden.json``, a gate's ``optional``)."""
_TOKEN_PLACEHOLDERS = tuple(k for k in PLACEHOLDER_KEYS if re.fullmatch(TOKEN_PATTERNS[0], k))
"""The placeholders a token pattern would mask (``sk-no-key-required``)."""
MIN_SEGMENT_LENGTH = 20
"""The shortest URL path segment that can look like a key by its shape alone."""


_ORDINARY = re.compile(r"[0-9 :./,+\-TZ]+")
"""A number, a date or a timestamp (``2026-11-26``, ``20261126``, ``2026-11-26T09:00:00Z``,
``3.14159265``): not a key any provider issues, and every report holds such text (its start
and finish times), so the leak check would fail every clean run on it."""


def is_placeholder(value: str) -> bool:
    """Whether a key variable's value is not treated as a secret: shorter than
    :data:`MIN_SECRET_LENGTH`, one of the well-known :data:`PLACEHOLDER_KEYS` (any case), or
    an ordinary number or date (:data:`_ORDINARY`). The session says so once (the values are
    then neither masked nor looked for by the leak check)."""
    value = value.strip()
    return (
        len(value) < MIN_SECRET_LENGTH
        or value.lower() in PLACEHOLDER_KEYS
        or (_ORDINARY.fullmatch(value) is not None and any(c.isdigit() for c in value))
    )


def looks_secret(segment: str) -> bool:
    """Whether a URL path segment looks like a key by its shape: a token shape (``sk-…``,
    ``hf_…``), or :data:`MIN_SEGMENT_LENGTH` or more characters of letters and digits (and
    ``-_.~+=``) that switch between lower case, upper case and digits at least every third
    character, as random keys do and model or deployment names
    (``claude-3-5-sonnet-20241022``, ``Meta-Llama-3.1-8B-Instruct``) do not."""
    if len(segment) < MIN_SEGMENT_LENGTH or _SEGMENT_CHARS.fullmatch(segment) is None:
        return False
    if _TOKEN_SHAPE.search(segment):
        return True
    kinds = [c.isdigit() + 2 * c.isupper() for c in segment if c.isalnum()]
    switches = sum(1 for a, b in itertools.pairwise(kinds) if a != b)
    letters = 0 in kinds or 2 in kinds
    return letters and 1 in kinds and switches >= max(8, 0.4 * len(kinds))


def _mask_path(path: str, secrets: Iterable[str]) -> str:
    """A URL path with each segment that looks like a key, and each known secret in any
    segment, replaced by :data:`MASK`."""
    known = sorted({s for s in secrets if len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True)
    segments = path.split("/")
    for index, segment in enumerate(segments):
        if looks_secret(segment) or looks_secret(unquote(segment)):
            segments[index] = MASK
            continue
        for secret in known:
            for form in {secret, quote(secret, safe="")}:
                segment = segment.replace(form, MASK)
        segments[index] = segment
    return "/".join(segments)


def public_url(url: str, secrets: Iterable[str] = ()) -> str:
    """``url`` without user-info, query string and fragment, and with every path segment
    that holds a key masked (one of ``secrets``, or a segment that :func:`looks_secret`):
    safe to log and to fingerprint (``https://gw/<key>/v1`` → ``https://gw/[REDACTED]/v1``)."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, _mask_path(parts.path, secrets), "", ""))


def secret_values(env_names: Iterable[str], environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of the named environment variables that are secrets (not a placeholder
    and not short: :func:`is_placeholder`)."""
    env = os.environ if environ is None else environ
    values = {env.get(name, "") for name in env_names}
    return sorted(v for v in values if not is_placeholder(v))


def placeholder_names(
    env_names: Iterable[str], environ: Mapping[str, str] | None = None
) -> list[str]:
    """The named environment variables that are set but whose values are not treated as
    secrets (:func:`is_placeholder`): a session says so once."""
    env = os.environ if environ is None else environ
    return sorted(n for n in set(env_names) if env.get(n, "").strip() and is_placeholder(env[n]))


def is_secret_env_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret."""
    return SECRET_ENV_NAME.search(name) is not None


def secret_env_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of every secret-named environment variable (:data:`SECRET_ENV_NAME`:
    ``CI_JOB_TOKEN``, ``AZURE_OPENAI_KEY`` …) that are secrets: not a placeholder, a switch
    word, a value under :data:`MIN_FOUND_SECRET_LENGTH` characters or a number or date
    (:func:`is_placeholder`), and not a path that exists (``SSH_KEY=/home/me/.ssh/id``)."""
    env = os.environ if environ is None else environ
    values = {
        value
        for name, value in env.items()
        if is_secret_env_name(name)
        and len(value) >= MIN_FOUND_SECRET_LENGTH
        and not is_placeholder(value)
    }
    return sorted(v for v in values if not os.path.exists(v))


def secret_param(name: str) -> bool:
    """Whether a URL query parameter's name says its value is a credential."""
    lowered = unquote(name).lower()
    words = re.split(r"[_.~-]+", lowered)
    return (
        any(word in SECRET_PARAM_WORDS for word in words)
        or lowered.endswith("token")
        or _sensitive(lowered)
    )


def url_secrets(url: str) -> list[str]:
    """The credentials in ``url``: the user-info's password (or the user-info itself when it
    has no password: ``https://TOKEN@host``), its basic-auth form, and the values of
    credential query parameters. Empty for a URL that cannot be split."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found: set[str] = set()
    userinfo = parts.netloc.rpartition("@")[0]
    if userinfo:
        user, colon, password = userinfo.partition(":")
        found.update({password, unquote(password)} if colon else {user, unquote(user)})
        basic = f"{unquote(user)}:{unquote(password)}".encode()
        found.add(base64.b64encode(basic).decode("ascii"))
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if secret_param(name):
            found.add(value)
    for match in _QUERY_PARAM.finditer("?" + parts.query):  # the raw (still quoted) values too
        if secret_param(match["name"]):
            found.add(match["value"])
    for segment in parts.path.split("/"):  # a gateway's key in the path: https://gw/<key>/v1
        found.update(s for s in {segment, unquote(segment)} if looks_secret(s))
    return sorted(v for v in found if v and v.strip().lower() not in PLACEHOLDER_KEYS)


def urls_in(text: str) -> list[str]:
    """The URL-looking words of ``text`` (``scheme://…`` up to whitespace or a quote)."""
    return _URL.findall(text) if "://" in text else []


def header_secrets(headers: Mapping[str, str]) -> list[str]:
    """The values of secret-named request headers (``Authorization``, ``X-Api-Key``), and
    their credential part (``Bearer <key>`` → ``<key>``)."""
    found = []
    for name, value in headers.items():
        if _sensitive(name):
            found += [value, value.partition(" ")[2].strip()]
    return [v for v in found if v]


def named_secrets(value: Any) -> list[str]:
    """The string values under secret-named keys anywhere in a JSON-like value (the
    ``api_key`` of ``--llmeval-extra-body``)."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str) and isinstance(key, str) and _sensitive(key):
                found.append(item)
            else:
                found += named_secrets(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            found += named_secrets(item)
    return found


def mask_named(value: Any) -> Any:
    """``value`` with every scalar under a secret-named key replaced by :data:`MASK`, and
    nothing else changed: for what is hashed as well as shown (a runner fingerprint keeps
    ``extra_body``'s settings but not its ``api_key``, so a rotated key changes nothing)."""
    if isinstance(value, dict):
        return {
            key: _masked(item) if isinstance(key, str) and _sensitive(key) else mask_named(item)
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [mask_named(item) for item in value]
    return value


def _masked(value: Any, kinds: type | tuple[type, ...] = (str, int, float)) -> Any:
    """``value`` (under a secret-named key) with every one of ``kinds`` in it masked, however
    deep it is nested (``{"password": {"v": …}}``); ``True`` and ``False`` are kept."""
    if isinstance(value, kinds) and not isinstance(value, bool):
        return MASK
    if isinstance(value, dict):
        return {key: _masked(item, kinds) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_masked(item, kinds) for item in value]
    return value


class Redactor:
    """Replaces secrets in text and in JSON-like values."""

    def __init__(self, patterns: Iterable[str] = (), secrets: Iterable[str] = ()):
        self.secrets = sorted(set(secrets), key=len, reverse=True)
        parts = [*TOKEN_PATTERNS, *patterns]
        self._pattern = re.compile("|".join(f"(?:{p})" for p in parts))
        # each secret and its encodings (core/secret_forms), behind a fast substring test
        self._secrets = re.compile(secrets_pattern(self.secrets)) if self.secrets else None
        self._anchors = secret_anchors(self.secrets)
        self._shortest = shortest_form(self.secrets)
        self._hint = None if len(parts) > len(TOKEN_PATTERNS) else _JsonHint(self._anchors)

    def may_change(self, encoded: str) -> bool:
        """Whether :meth:`value` may change the JSON-like value whose JSON is ``encoded``
        (``json.dumps`` with ``ensure_ascii``); ``False`` means it returns an equal value.

        A single scan of the text for what every rule needs to be present in some string or
        key as it is encoded: ``://`` or ``=`` (URL credentials), a token's prefix, a
        secret's anchor (JSON-escaped: escaping maps each character alone, so a string
        holding the anchor is encoded holding the anchor's encoding), a secret-named key's
        stem (a key ending in ``token`` is encoded ``…token"``), and any escaped non-ASCII
        character (case-insensitive key names match some of those). Extra patterns
        (``--llmeval-redact-pattern``) may match anything: then always ``True``.
        """
        return self._hint is None or self._hint.search(encoded)

    def text(self, text: str) -> str:
        text = redact_text(text)
        if (
            self._secrets is not None
            and len(text) >= self._shortest
            and any(anchor in text for anchor in self._anchors)
        ):
            text = self._secrets.sub(MASK, text)
        tokens = self._hint is None or any(p in text for p in TOKEN_PREFIXES)  # else no match
        return self._pattern.sub(_mask_unless_placeholder, text) if tokens else text

    def argv(self, args: Sequence[str]) -> list[str]:
        """A command line redacted: every argument as :meth:`text` (URLs, tokens, secrets),
        a JSON object argument as :meth:`value` (``--llmeval-extra-body '{"api_key": …}'``),
        and the value of a secret-named option (``--api-key X``, ``--token=X``,
        ``-o api_key=X``); an option naming a variable (``--llmeval-api-key-env``) is kept."""
        out: list[str] = []
        value_is_secret = False
        for arg in args:
            if value_is_secret:
                out.append(MASK)
                value_is_secret = False
                continue
            name, eq, _ = arg.partition("=")
            if arg.startswith("-") and _sensitive(name.lstrip("-")):
                value_is_secret = not eq
                out.append(f"{name}={MASK}" if eq else arg)
            elif eq and not arg.startswith("-") and _sensitive(name):
                out.append(f"{name}={MASK}")  # an ini override: -o api_key=X
            else:
                out.append(self._json_text(arg))
        return out

    def _json_text(self, arg: str) -> str:
        """``arg`` (or its part after ``=``) redacted as JSON when it holds a JSON object."""
        head, eq, tail = arg.partition("=") if arg.startswith("-") else ("", "", arg)
        if tail.lstrip().startswith("{"):
            try:  # nested too deeply for json or for value(): redacted as text
                parsed = json.loads(tail)
                if isinstance(parsed, dict):
                    return head + eq + self.text(json.dumps(self.value(parsed)))
            except (ValueError, RecursionError):
                pass
        return self.text(arg)

    def value(self, value: Any) -> Any:
        """Redact every string in a JSON-like value; mask string values of secret-named keys
        and every string nested under one; mask a secret or a token in a key (:meth:`_key`)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            out: dict[Any, Any] = {}
            for key, item in value.items():
                shown = self._key(key) if isinstance(key, str) else key
                if isinstance(item, str):
                    out[shown] = (
                        MASK if isinstance(key, str) and _sensitive(key) else self.text(item)
                    )
                elif item is None or isinstance(item, (int, float)):
                    out[shown] = item  # what value() returns for them, without the call
                elif isinstance(key, str) and _sensitive(key):  # {"password": {"v": …}}
                    out[shown] = _masked(self.value(item), str)
                else:
                    out[shown] = self.value(item)
            return out
        if isinstance(value, (list, tuple)):
            return [self.value(item) for item in value]
        return value

    def _key(self, key: str) -> str:
        """A key with each secret and token in it masked (arguments keyed by a secret), and
        no more: a ``--llmeval-redact-pattern`` may match a field's name (``pass_rate``)."""
        if self._secrets is not None and any(anchor in key for anchor in self._anchors):
            key = self._secrets.sub(MASK, key)
        return _TOKEN_SHAPE.sub(_mask_unless_placeholder, key) if _TOKEN_SHAPE.search(key) else key


_KEY_STEMS = ("secret", "passw", "authorization", 'token"')
_KEY_NAME = re.compile(r"(?:api|access|private)[_-]?key")
"""With :data:`_KEY_STEMS`: what every :data:`SENSITIVE_KEY` match holds, lower-cased, as
JSON encodes its key (one ending in ``token`` is encoded ``…token"``)."""


class _JsonHint:
    """What :meth:`Redactor.may_change` looks for: a superset of what any rule needs, as
    substring tests (one regex alternating them all scans the text several times slower)."""

    def __init__(self, anchors: Iterable[str]) -> None:
        literals = ["://", "=", "\\u", *TOKEN_PREFIXES]
        self.literals = tuple(literals + [json.dumps(anchor)[1:-1] for anchor in anchors])

    def search(self, encoded: str) -> bool:
        if any(literal in encoded for literal in self.literals):
            return True
        lowered = encoded.lower()  # the text is ASCII: exactly the keys' IGNORECASE
        if any(stem in lowered for stem in _KEY_STEMS):
            return True
        return "key" in lowered and _KEY_NAME.search(lowered) is not None


@functools.lru_cache(maxsize=4096)
def _sensitive(key: str) -> bool:
    """Whether a key names a secret (results repeat the same few keys for every case); a key
    naming an environment variable (``api_key_env``) does not: its value is a name. A key
    is read in its compatibility form too (a full-width ``ＡＰＩ_KEY`` is ``API_KEY``)."""
    key = key if key.isascii() else unicodedata.normalize("NFKC", key)
    return SENSITIVE_KEY.search(key) is not None and _NAMES_A_VARIABLE.search(key) is None


def _mask_unless_placeholder(match: re.Match[str]) -> str:
    """:data:`MASK`, unless the match is a placeholder key of a token's shape
    (``sk-no-key-required``, also inside a file name such as ``sk-no-key-required_smoke``)."""
    found = match[0]
    return found if found.lower().startswith(_TOKEN_PLACEHOLDERS) else MASK


def _mask_param(match: re.Match[str]) -> str:
    return match["head"] + MASK if secret_param(match["name"]) else match[0]


def redact_text(text: str) -> str:
    """``text`` with the credentials of every URL in it replaced: user-info and the values of
    credential query parameters (no other rules)."""
    if "://" in text:  # the user-info pattern cannot match without it
        text = _USERINFO.sub(rf"\g<scheme>{MASK}@", text)
    if "=" in text:
        text = _QUERY_PARAM.sub(_mask_param, text)
    return text


def redact_value(value: Any) -> Any:
    """URL credential redaction over a JSON-like value."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {key: redact_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(item) for item in value]
    return value


def find_leaks(paths: Iterable[Path], secrets: Iterable[str]) -> list[Path]:
    """The files (among ``paths``, folders searched recursively) that contain a secret value,
    literal or encoded (JSON-escaped, percent-encoded, base64, HTML-escaped: the forms the
    redactor masks, :mod:`pytest_llmeval.core.secret_forms`)."""
    pattern = leak_pattern(secrets)
    if pattern is None:
        return []
    leaks: list[Path] = []
    seen: set[Path] = set()  # a file named twice (a log file inside the run dir) is read once
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            if file in seen:
                continue
            seen.add(file)
            try:
                data = file.read_bytes()
            except OSError:
                continue
            if pattern.search(data):
                leaks.append(file)
    return leaks
