"""BFCL v4 scoring, exactly as the official ``bfcl-eval==2026.3.23`` checker scores.

The pure, single-turn part of the Berkeley Function Calling Leaderboard, written from the
official package's rules (none of its code is copied) and checked against it with parity
vectors (``tests/scoring/bfcl/``):

* :mod:`.decode_fc`, :mod:`.decode_prompt` and :mod:`.decode_prompt_tree`: a model reply to
  ``[{name: {arguments}}]``, in FC mode (tool calls) and prompt mode (Python call text, read
  with :mod:`ast`, never run; Java and JavaScript call text, read with tree-sitter);
* :mod:`.checker` with :mod:`.values` and :mod:`.convert`: the AST checker (simple, multiple,
  parallel, parallel_multiple; Python, Java and JavaScript type rules);
* :mod:`.single_turn`: one AST item end to end; :mod:`.relevance`: the relevance and
  irrelevance decisions;
* :mod:`.aggregate`: per-category accuracies into the official group scores;
* multi-turn: :mod:`.call_text` (a reply as the official executor's call texts),
  :mod:`.multi_turn_loop` (the official turn loop over a conversation the caller supplies,
  running calls on the official backends through :mod:`pytest_llmeval.tools.bfcl_execute`,
  never ``eval``) and :mod:`.multi_turn` (the state and response checker).

Every verdict carries the official ``error_type`` string.
"""

from __future__ import annotations

from pytest_llmeval.scoring.bfcl.aggregate import (
    OFFICIAL_COUNTS,
    BfclSummary,
    CategoryScore,
    GroupScore,
    aggregate,
)
from pytest_llmeval.scoring.bfcl.call_text import decode_execute
from pytest_llmeval.scoring.bfcl.calls import DecodeError, Verdict, language_of
from pytest_llmeval.scoring.bfcl.checker import ast_check, check_call
from pytest_llmeval.scoring.bfcl.decode_fc import decode_fc, is_call_list, is_empty_output
from pytest_llmeval.scoring.bfcl.decode_prompt import decode_prompt_python
from pytest_llmeval.scoring.bfcl.decode_prompt_tree import (
    decode_prompt_java,
    decode_prompt_javascript,
)
from pytest_llmeval.scoring.bfcl.multi_turn import (
    MultiTurnItem,
    MultiTurnTranscript,
    check_multi_turn,
    score_multi_turn,
)
from pytest_llmeval.scoring.bfcl.multi_turn_loop import (
    BfclConversation,
    inference_label,
    run_multi_turn,
    transcript_from_replies,
)
from pytest_llmeval.scoring.bfcl.relevance import has_call, score_relevance
from pytest_llmeval.scoring.bfcl.single_turn import decode_output, score_ast

__all__ = [
    "OFFICIAL_COUNTS",
    "BfclConversation",
    "BfclSummary",
    "CategoryScore",
    "DecodeError",
    "GroupScore",
    "MultiTurnItem",
    "MultiTurnTranscript",
    "Verdict",
    "aggregate",
    "ast_check",
    "check_call",
    "check_multi_turn",
    "decode_execute",
    "decode_fc",
    "decode_output",
    "decode_prompt_java",
    "decode_prompt_javascript",
    "decode_prompt_python",
    "has_call",
    "inference_label",
    "is_call_list",
    "is_empty_output",
    "language_of",
    "run_multi_turn",
    "score_ast",
    "score_multi_turn",
    "score_relevance",
    "transcript_from_replies",
]
