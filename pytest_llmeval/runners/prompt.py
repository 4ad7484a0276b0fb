"""Prompt wrappers: reshape the system and user message before a runner sends them.

``--llmeval-prompt-wrapper PATH`` names a template file; its kind comes from its suffix.

``.j2`` (Jinja2, ``pip install 'pytest-llmeval-harness[templates]'``)
    Renders to a JSON object ``{"system": ..., "user": ...}``::

        {"system": "{{ system }} Answer in one sentence.",
         "user": "Question: {{ user }}"}

    Every ``{{ expression }}`` is written JSON-escaped, so ``"{{ user }}"`` stays valid JSON
    whatever quotes or newlines the text holds; a list or an object (``{{ tools }}``) is
    written as JSON, and ``{{ x | tojson }}`` writes a complete JSON value. Undefined
    variables are errors. ``user`` must render to a string; ``system`` to a string, ``null``
    or be left out (an empty or missing ``system`` sends no system message).

``.tmpl`` (:class:`string.Template`)
    Flat text with ``$system``, ``$user`` and ``$tools`` (``$$`` is a literal ``$``)::

        [SYS] $system
        [USER] $user

    The rendered text becomes the user message and no system message is sent: the template
    decides where the system text goes (leave ``$system`` out to drop it).

Variables: ``system`` is the text of the request's first system message (``""`` when there is
none), ``user`` the text of its first user message, ``tools`` the tools offered, as a list of
``{"name", "description", "parameters"}`` objects (``.tmpl``: that list as JSON text).

How a runner applies a wrapper (:meth:`PromptWrapper.apply`), on every request: only the
*first* system message and the *first* user message are rewritten. With a ``.j2`` wrapper the
first system message takes the rendered ``system`` (it is removed when that is empty, and one
is put first when there was none and it is not); with ``.tmpl`` the first system message is
removed. The first user message takes the rendered user text. Later user turns, assistant
turns and tool results are sent as they are, so in a multi-turn case every request wraps the
same opening exchange the same way. A request without a user message is sent unchanged.

:attr:`PromptWrapper.sha256` is the sha256 of the file's bytes; runners put it in their
fingerprint, so editing the wrapper changes the fingerprint (and the cassette folder).
"""

from __future__ import annotations

import hashlib
import json
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pytest_llmeval.core.clip import clip
from pytest_llmeval.core.errors import ConfigError
from pytest_llmeval.core.models import Message, ToolSpec

__all__ = ["PromptWrapper", "RenderedPrompt"]

WrapperKind = Literal["j2", "tmpl"]
_SUFFIXES: dict[str, WrapperKind] = {".j2": "j2", ".tmpl": "tmpl"}
_JINJA_HINT = (
    ".j2 prompt wrappers need Jinja2: pip install 'pytest-llmeval-harness[templates]' "
    "(or pip install jinja2), or use a .tmpl wrapper"
)


@dataclass(frozen=True)
class RenderedPrompt:
    """What a wrapper made of one request's system and user text."""

    system: str | None
    """The system message to send; ``None`` for none (always ``None`` for ``.tmpl``)."""
    user: str
    """The user message to send."""


class PromptWrapper:
    """A loaded ``.j2`` or ``.tmpl`` wrapper; build it with :meth:`load`."""

    def __init__(self, path: Path, kind: WrapperKind, source: bytes) -> None:
        self.path = path
        self.kind: WrapperKind = kind
        self.sha256 = hashlib.sha256(source).hexdigest()
        """sha256 of the file's bytes (hex)."""
        try:
            self.text = source.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self._error(f"not UTF-8 text ({exc})") from None
        self._jinja: Any = self._compile_jinja() if kind == "j2" else None
        self._template = string.Template(self.text) if kind == "tmpl" else None
        # Render once with plain values so a broken template fails at load, not per case.
        self.render("system", "user", [])

    @classmethod
    def load(cls, path: Path | str) -> PromptWrapper:
        """Read and check the wrapper at ``path``; ConfigError when it cannot be used."""
        path = Path(path)
        kind = _SUFFIXES.get(path.suffix.lower())
        if kind is None:
            raise ConfigError(
                f"prompt wrapper {path}: the file name must end in .j2 (Jinja2) or .tmpl "
                "(string.Template)"
            )
        try:
            source = path.read_bytes()
        except OSError as exc:
            raise ConfigError(f"prompt wrapper {path}: cannot read it: {exc}") from None
        return cls(path, kind, source)

    def render(self, system: str, user: str, tools: list[dict[str, Any]]) -> RenderedPrompt:
        """Fill the template with the three variables; ConfigError when it cannot be."""
        if self._template is not None:
            try:
                text = self._template.substitute(
                    system=system, user=user, tools=json.dumps(tools, ensure_ascii=False)
                )
            except KeyError as exc:
                raise self._error(
                    f"unknown variable ${exc.args[0]} (known: $system, $user, $tools; "
                    "write $$ for a literal $)"
                ) from None
            except ValueError as exc:
                raise self._error(f"{exc} (write $$ for a literal $)") from None
            return RenderedPrompt(system=None, user=text)
        return self._render_jinja(system, user, tools)

    def apply(self, messages: list[Message], tools: list[ToolSpec]) -> list[Message]:
        """The messages to send: see the module docs for exactly what changes."""
        first_user = next((i for i, m in enumerate(messages) if m.role == "user"), None)
        if first_user is None:
            return list(messages)
        first_system = next((i for i, m in enumerate(messages) if m.role == "system"), None)
        rendered = self.render(
            messages[first_system].content or "" if first_system is not None else "",
            messages[first_user].content or "",
            [
                {"name": t.name, "description": t.description, "parameters": t.parameters}
                for t in tools
            ],
        )
        out: list[Message | None] = list(messages)
        out[first_user] = messages[first_user].model_copy(update={"content": rendered.user})
        if first_system is not None:
            out[first_system] = (
                messages[first_system].model_copy(update={"content": rendered.system})
                if rendered.system
                else None
            )
        elif rendered.system:
            out.insert(0, Message(role="system", content=rendered.system))
        return [m for m in out if m is not None]

    # -- internals ----------------------------------------------------------------------------

    def _error(self, what: str) -> ConfigError:
        return ConfigError(f"prompt wrapper {self.path}: {what}")

    def _compile_jinja(self) -> Any:
        try:
            import jinja2
        except ImportError:
            raise self._error(_JINJA_HINT) from None
        env = jinja2.Environment(
            undefined=jinja2.StrictUndefined,
            keep_trailing_newline=True,
            autoescape=False,
            finalize=_json_finalize,
        )
        try:
            return env.from_string(self.text)
        except jinja2.TemplateSyntaxError as exc:
            raise self._error(f"line {exc.lineno}: {exc.message}") from None

    def _render_jinja(self, system: str, user: str, tools: list[dict[str, Any]]) -> RenderedPrompt:
        import jinja2

        try:
            text = self._jinja.render(system=system, user=user, tools=tools)
        except jinja2.TemplateError as exc:
            raise self._error(f"cannot render: {exc}") from None
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise self._error(
                f'must render to a JSON object {{"system", "user"}}: {exc}; got {clip(text, 80)!r}'
            ) from None
        if not isinstance(data, dict):
            raise self._error('must render to a JSON object {"system", "user"}')
        unknown = sorted(set(data) - {"system", "user"})
        if unknown:
            raise self._error(f"rendered unknown key(s) {unknown}; only system and user exist")
        rendered_user = data.get("user")
        rendered_system = data.get("system")
        if not isinstance(rendered_user, str):
            raise self._error('"user" must render to a string')
        if rendered_system is not None and not isinstance(rendered_system, str):
            raise self._error('"system" must render to a string or null')
        return RenderedPrompt(system=rendered_system or None, user=rendered_user)


def _json_finalize(value: Any) -> Any:
    """How a ``{{ expression }}`` is written: JSON-escaped text, or JSON for other values.

    ``| tojson`` output (markupsafe ``Markup``) is already JSON and is written as is.
    """
    from jinja2 import Undefined
    from markupsafe import Markup

    if isinstance(value, (Markup, Undefined)):
        return value  # an Undefined raises when it is written (StrictUndefined)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)[1:-1]
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
