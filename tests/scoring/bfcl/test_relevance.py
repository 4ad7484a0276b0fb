"""Relevance and irrelevance: what counts as "a call" (from the spec)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_llmeval.scoring.bfcl import has_call, score_relevance


@pytest.mark.parametrize(
    ("output", "mode", "called"),
    [
        ([("get_weather", '{"city": "x"}')], "fc", True),
        ([("no_such_function", "{}")], "fc", True),
        ("", "fc", False),
        (None, "fc", False),
        ("I cannot help.", "fc", False),
        ([("f", "{city: 1}")], "fc", False),
        ([("f", "null")], "fc", False),
        ([("f", "[]")], "fc", False),
        ("[get_weather(city='x')]", "prompt", True),
        ("[no_such_function()]", "prompt", True),
        ("[]", "prompt", False),
        ("[{}]", "prompt", False),
        ("", "prompt", False),
        ("None", "prompt", False),
        ("I cannot help.", "prompt", False),
        ("[get_weather(city='x']", "prompt", False),
        ("```python\nget_weather(city='x')\n```", "prompt", False),
        ("```\nget_weather(city='x')\n```", "prompt", True),
    ],
)
def test_has_call(output: Any, mode: Any, called: bool) -> None:
    assert has_call(output, mode) is called


def test_irrelevance_passes_without_a_call_and_relevance_with_one() -> None:
    call, prose = "[get_weather(city='x')]", "No function fits."
    for category in ("irrelevance", "live_irrelevance"):
        assert score_relevance(category, prose, "prompt").valid
        verdict = score_relevance(category, call, "prompt")
        assert (verdict.valid, verdict.error_type) == (False, "irrelevance_error:decoder_success")
    assert score_relevance("live_relevance", "[made_up(x=1)]", "prompt").valid
    verdict = score_relevance("live_relevance", prose, "prompt")
    assert (verdict.valid, verdict.error_type) == (False, "relevance_error:decoder_failed")
