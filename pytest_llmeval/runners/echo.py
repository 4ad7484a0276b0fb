"""The ``echo`` runner: answers every request with the last user message (smoke tests)."""

from __future__ import annotations

from typing import Any

from pytest_llmeval.core.models import Usage
from pytest_llmeval.runners.base import Completion, GenerateRequest


def _words(text: str | None) -> int:
    return len(text.split()) if text else 0


class EchoRunner:
    """Echoes the text of the last user message; never calls a tool.

    Usage counts are whitespace word counts (prompt: every message's text; completion: the
    answer), and latency is 0, so its transcripts are fully deterministic.
    """

    name = "echo"
    in_process = True
    """It answers here, with no I/O: its cases run on pytest's thread."""

    def fingerprint(self) -> dict[str, Any]:
        return {"type": "echo"}

    async def generate(self, request: GenerateRequest) -> Completion:
        text = next((m.content or "" for m in reversed(request.messages) if m.role == "user"), "")
        prompt = sum(_words(message.content) for message in request.messages)
        completion = _words(text)
        return Completion(
            text=text,
            finish_reason="stop",
            usage=Usage(
                prompt_tokens=prompt,
                completion_tokens=completion,
                total_tokens=prompt + completion,
            ),
            latency_ms=0.0,
        )

    async def aclose(self) -> None:
        return None
