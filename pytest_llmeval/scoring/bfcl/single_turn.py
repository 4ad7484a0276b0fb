"""One single-turn AST item, end to end: decode the reply, check its format, check the calls.

This is the official per-item pipeline for the AST categories (``simple_*``, ``multiple``,
``parallel``, ``parallel_multiple`` and their ``live_`` versions): a reply that does not decode
is ``ast_decoder:decoder_failed``; one that decodes to something other than a list of
``{name: {arguments}}`` is ``ast_decoder:decoder_wrong_output_format``; the rest goes to
:func:`~pytest_llmeval.scoring.bfcl.checker.ast_check`.

Prompt mode is decoded as Python calls, and in the Java and JavaScript categories with the
official tree-sitter readers (:mod:`.decode_prompt_tree`, the ``bfcl`` extra).
"""

from __future__ import annotations

from typing import Any

from pytest_llmeval.scoring.bfcl.calls import (
    DecodeError,
    FunctionDoc,
    GroundTruthCall,
    Language,
    Mode,
    Verdict,
    language_of,
)
from pytest_llmeval.scoring.bfcl.checker import ast_check
from pytest_llmeval.scoring.bfcl.decode_fc import FcOutput, decode_fc, is_call_list
from pytest_llmeval.scoring.bfcl.decode_prompt import decode_prompt_python
from pytest_llmeval.scoring.bfcl.decode_prompt_tree import (
    decode_prompt_java,
    decode_prompt_javascript,
)


def decode_output(output: FcOutput, mode: Mode, language: Language = "python") -> list[Any]:
    """Decode a reply by mode; raise :class:`DecodeError` where the official decoder raises.

    In FC mode ``output`` is the tool calls as ``(name, arguments text)`` pairs, or the text
    when there are none; in prompt mode it is the text."""
    if mode == "fc":
        return decode_fc(output)
    if not isinstance(output, str):
        raise DecodeError("a prompt-mode reply must be text")
    if language == "java":
        return decode_prompt_java(output)  # type: ignore[no-any-return]
    if language == "javascript":
        return decode_prompt_javascript(output)  # type: ignore[no-any-return]
    return decode_prompt_python(output)


def score_ast(
    category: str,
    functions: list[FunctionDoc],
    ground_truth: list[GroundTruthCall],
    output: FcOutput,
    mode: Mode,
) -> Verdict:
    """The official verdict for one AST item (module docstring)."""
    language = language_of(category)
    try:
        decoded = decode_output(output, mode, language)
    except DecodeError as exc:
        return Verdict.fail(
            "ast_decoder:decoder_failed", f"Invalid syntax. Failed to decode AST. {exc}"
        )
    if not is_call_list(decoded):
        return Verdict.fail(
            "ast_decoder:decoder_wrong_output_format",
            "Did not output in the specified format.",
        )
    return ast_check(functions, decoded, ground_truth, language, category, mode)
