"""A deterministic toy agent endpoint: a test double, not an agent.

:func:`example_agent_handler` speaks the ``AgentEndpoint`` HTTP contract
(``POST /chat {"message": str}`` → ``{"response", "toolCalls", "durationMs"}``) with two
hard-wired behaviours, so tests of the ``http-agent`` runner and the suites have a real server to
talk to::

    with ScriptedServer() as srv:
        srv.route("POST", "/chat", example_agent_handler)
        # "What's the weather in paris?" → get_weather(city="Paris"), "The weather in Paris ..."
        # anything else                  → no tool calls, "Echo: <message>"

Everything it answers is a pure function of the message.
"""

from __future__ import annotations

import re
from typing import Any

from pytest_llmeval.testing.server import Reply, Request

__all__ = [
    "EXAMPLE_DURATION_MS",
    "EXAMPLE_TOOL_DURATION_MS",
    "example_agent_answer",
    "example_agent_handler",
]

EXAMPLE_DURATION_MS = 42.0
"""The ``durationMs`` every answer reports."""
EXAMPLE_TOOL_DURATION_MS = 7.0
"""The ``durationMs`` of the ``get_weather`` tool call."""

_CITY = re.compile(r"\bin\s+([A-Za-z][A-Za-z-]*)", re.IGNORECASE)


def example_agent_answer(message: str) -> dict[str, Any]:
    """The JSON body the toy agent answers ``message`` with.

    If the message mentions "weather" it calls ``get_weather`` with ``{"city": <the word after
    "in", capitalised>}`` (``"Unknown"`` when there is none); otherwise it echoes the message.
    """
    if "weather" in message.lower():
        found = _CITY.search(message)
        city = found.group(1).capitalize() if found else "Unknown"
        return {
            "response": f"The weather in {city} is sunny, 22 degrees.",
            "toolCalls": [
                {
                    "name": "get_weather",
                    "success": True,
                    "durationMs": EXAMPLE_TOOL_DURATION_MS,
                    "params": {"city": city},
                }
            ],
            "durationMs": EXAMPLE_DURATION_MS,
        }
    return {"response": f"Echo: {message}", "toolCalls": [], "durationMs": EXAMPLE_DURATION_MS}


def example_agent_handler(request: Request) -> Reply:
    """A :class:`~pytest_llmeval.testing.server.ScriptedServer` handler for ``POST /chat``.

    Answers 400 ``{"error": ...}`` when the body is not a JSON object with a string
    ``message``; otherwise 200 with :func:`example_agent_answer`.
    """
    body = request.json
    if not request.is_json or not isinstance(body, dict):
        return Reply(status=400, json={"error": "expected a JSON object body"})
    message = body.get("message")
    if not isinstance(message, str):
        return Reply(status=400, json={"error": "message: expected a string"})
    return Reply(json=example_agent_answer(message))
