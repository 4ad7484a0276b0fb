"""Relevance and irrelevance: did the reply call a function at all?

A reply "has a call" when it decodes (prompt mode always as Python) and the result is not
empty: ``[]``, ``[{}]`` and anything that is not a list of ``{name: {arguments}}`` are empty.
Prose, ``""``, ``"None"``, broken syntax, a ```` ```python ```` fence, and FC arguments that
are not JSON object text are all "no call". The name called is never looked at: a call to a
function that does not exist counts.

``irrelevance`` and ``live_irrelevance`` pass when there is no call
(``irrelevance_error:decoder_success`` otherwise); ``live_relevance`` passes when there is one
(``relevance_error:decoder_failed`` otherwise).
"""

from __future__ import annotations

from pytest_llmeval.scoring.bfcl.calls import DecodeError, Mode, Verdict
from pytest_llmeval.scoring.bfcl.decode_fc import FcOutput, is_empty_output
from pytest_llmeval.scoring.bfcl.single_turn import decode_output


def has_call(output: FcOutput, mode: Mode) -> bool:
    """Whether the reply decodes to at least one call (module docstring)."""
    try:
        decoded = decode_output(output, mode, "python")
    except DecodeError:
        return False
    return not is_empty_output(decoded)


def is_relevance_category(category: str) -> bool:
    """Whether a category is scored by :func:`score_relevance` (the official name test)."""
    return "relevance" in category or "irrelevance" in category


def score_relevance(category: str, output: FcOutput, mode: Mode) -> Verdict:
    """The official verdict for one relevance or irrelevance item."""
    called = has_call(output, mode)
    if "irrelevance" in category:
        if not called:
            return Verdict.ok()
        return Verdict.fail(
            "irrelevance_error:decoder_success",
            "Valid syntax. Successfully decode AST when it should not.",
        )
    if called:
        return Verdict.ok()
    return Verdict.fail(
        "relevance_error:decoder_failed",
        "Invalid syntax. Failed to decode AST when it should have.",
    )
