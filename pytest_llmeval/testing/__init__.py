"""Test doubles for testing code that uses pytest-llmeval: a public module of its own.

They are for your own tests, not for evaluating a model, so they stay out of the package's
main face (:mod:`pytest_llmeval`) and never load unless imported. ``docs/api.md`` says what
each name is for::

    from pytest_llmeval.testing import ChatAnswer, OpenAIServer, Reply, Rule, ScriptedModel

* a scripted model (:class:`ScriptedModel` following :class:`Rule` s), a deterministic
  tool-calling runner to register from a ``conftest.py``;
* a loopback HTTP server (:class:`ScriptedServer`) that answers from routes and scripted
  :class:`Reply` queues (faults, delays, dropped connections), and :class:`OpenAIServer`, the
  same speaking the OpenAI chat and completions APIs from pluggable "brains";
* a toy agent endpoint (:func:`example_agent_handler`) for the ``http-agent`` runner;
* :func:`build_tiny_model`, a tiny random transformers checkpoint for the ``hf`` runner
  (needs the ``hf`` extra).

The submodules (``scripted``, ``server``, ``openai_server``, ``agent``, ``tiny``) stay
importable; the names below are the promise. Each is imported on first use.
"""

from __future__ import annotations

TYPE_CHECKING = False
"""``typing.TYPE_CHECKING`` without importing :mod:`typing` (type checkers read it as true)."""
if TYPE_CHECKING:
    from typing import Any

    from pytest_llmeval.testing.agent import example_agent_answer, example_agent_handler
    from pytest_llmeval.testing.openai_server import (
        ChatAnswer,
        ChatBrain,
        CompletionAnswer,
        CompletionsBrain,
        OpenAIServer,
        Token,
        echo_chat,
        tool_call,
        word_logprobs,
        word_tokens,
    )
    from pytest_llmeval.testing.scripted import Rule, ScriptedModel
    from pytest_llmeval.testing.server import Handler, Reply, Request, ScriptedServer
    from pytest_llmeval.testing.tiny import build_tiny_model

__all__ = [
    "ChatAnswer",
    "ChatBrain",
    "CompletionAnswer",
    "CompletionsBrain",
    "Handler",
    "OpenAIServer",
    "Reply",
    "Request",
    "Rule",
    "ScriptedModel",
    "ScriptedServer",
    "Token",
    "build_tiny_model",
    "echo_chat",
    "example_agent_answer",
    "example_agent_handler",
    "tool_call",
    "word_logprobs",
    "word_tokens",
]

_MODULES = {
    "agent": ("example_agent_answer", "example_agent_handler"),
    "openai_server": (
        "ChatAnswer",
        "ChatBrain",
        "CompletionAnswer",
        "CompletionsBrain",
        "OpenAIServer",
        "Token",
        "echo_chat",
        "tool_call",
        "word_logprobs",
        "word_tokens",
    ),
    "scripted": ("Rule", "ScriptedModel"),
    "server": ("Handler", "Reply", "Request", "ScriptedServer"),
    "tiny": ("build_tiny_model",),
}
"""Submodule -> the public names it defines."""
_HOME = {name: module for module, names in _MODULES.items() for name in names}

if not TYPE_CHECKING:  # type checkers see the imports above instead, so a typo is an error

    def __getattr__(name: str) -> Any:
        """A public name, imported from its submodule the first time it is asked for."""
        module = _HOME.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from importlib import import_module

        value = getattr(import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))
