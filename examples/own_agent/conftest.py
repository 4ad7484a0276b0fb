"""Evaluating your own agent: override the ``llmeval_agent`` fixture.

    pytest examples/own_agent/

The agent below is plain Python. It gets each case and the session's tool broker, calls tools
through the broker (which answers from fixture files, never the network), keeps notes in its
private workspace, reports events, and answers in the GAIA format. Replace ``CalculatorAgent``
with a call into your own framework; anything it returns as a Transcript, an AgentResponse, a
``{"response", "toolCalls", "durationMs"}`` dict or a plain string is understood.
"""

from __future__ import annotations

import re

import pytest

from pytest_llmeval import AgentResponse, EvalCase, ToolBroker, emit, workspace

EXPRESSION = re.compile(r"(-?\d+(?:\.\d+)?\s*[-+*/]\s*-?\d+(?:\.\d+)?)")


class CalculatorAgent:
    """Finds an arithmetic expression in the question and asks the calculator tool."""

    def fingerprint(self) -> dict[str, str]:
        return {"type": "example-calculator-agent", "version": "1"}

    async def run(self, case: EvalCase, broker: ToolBroker) -> AgentResponse:
        question = case.user_message
        notes = workspace() / "notes.txt"  # private to this case
        notes.write_text(f"question: {question}\n")
        match = EXPRESSION.search(question)
        if match is None:
            return AgentResponse(response="I cannot tell.\nFINAL ANSWER: unknown")
        call = broker.call("calculator", {"expression": match[1]}, case.stubs)
        emit("thought", text=f"asked the calculator for {match[1]}")
        if not call.success:
            return AgentResponse(response="The calculator failed.\nFINAL ANSWER: unknown",
                                 tool_calls=[call])  # fmt: skip
        value = call.result["value"]
        notes.write_text(notes.read_text() + f"answer: {value}\n")
        return AgentResponse(response=f"{match[1]} is {value}.\nFINAL ANSWER: {value}",
                             tool_calls=[call])  # fmt: skip


@pytest.fixture(scope="session")
def llmeval_agent() -> CalculatorAgent:
    return CalculatorAgent()
