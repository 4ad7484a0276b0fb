"""GAIA scoring, exactly as the official leaderboard does it, plus answer extraction.

:func:`question_scorer` reproduces the leaderboard's ``question_scorer(model_answer,
ground_truth) -> bool`` (``scorer.py`` of the ``gaia-benchmark/leaderboard`` Space) with the
same Python primitives: :func:`normalize_number_str` (``$ % ,`` deleted anywhere, then
``float()``, ``+inf`` when that raises ``ValueError``), :func:`split_string`
(``re.split("[,;]")``, nothing stripped, empty pieces kept) and :func:`normalize_str`
(``re.sub(r"\\s", "")``, ``str.lower``, the 32 ASCII ``string.punctuation`` characters). The
branch comes from the ground truth only: a number if ``float(truth)`` succeeds, else a list if
the truth holds ``,`` or ``;`` anywhere, else a string. Numbers compare with exact float
``==``; lists pairwise, in order, with punctuation *kept* in string pieces; a length mismatch
warns ``UserWarning("Answer lists have different lengths, returning False.")`` and is
``False``. A ``None`` answer becomes ``"None"``; a ``None`` truth raises ``TypeError``.

Deliberate differences from the official module, none of which changes a result:

* **No prints.** The official scorer prints ``Evaluating ... as a number.`` and ``String ...
  cannot be normalized to number str.``; these functions print nothing.
* **Non-string model answers.** :func:`question_scorer` keeps the official behaviour and
  raises (``AttributeError`` in the number branch, ``TypeError`` in the others), so it stays a
  drop-in replacement. :func:`score_answer`, the harness's entry point, never converts such an
  answer with ``str()`` (the leaderboard never does either: it rejects the submission) and
  scores it **wrong**, with the reason ``non-string answer (<JSON type>)``. ``None`` is not
  such an answer: it becomes ``"None"`` as officially.

The harness adds what the scorer leaves to submitters: :func:`extract_final_answer` (the text
after the last ``FINAL ANSWER:``), :data:`GAIA_SYSTEM_PROMPT`, the diagnostics of
:class:`GaiaScore` and :func:`aggregate` (leaderboard accuracy, overall and per level).
"""

from __future__ import annotations

import re
import string
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

Branch = Literal["number", "list", "string"]
Normalized = str | list[str]

LIST_LENGTH_WARNING = "Answer lists have different lengths, returning False."
"""The official warning text for lists of different lengths."""

FINAL_ANSWER_MARKER = "FINAL ANSWER:"

GAIA_SYSTEM_PROMPT = """\
You are a general AI assistant. Work out the answer to the question, using the tools you \
are given when they help, and explain your reasoning briefly. End your reply with one line \
of exactly this form:
FINAL ANSWER: <answer>
Put nothing after that line. The answer must be a number, as few words as possible, or a \
comma-separated list of numbers and/or strings.
- A number: write it with digits only, with no thousands separators and no units or signs \
such as $ or %, unless the question asks for them.
- A string: leave out articles and abbreviations (write city names in full, for example), \
and write numbers in digits unless the question asks for words.
- A list: separate the elements with commas and follow the rules above for each element."""
"""The GAIA answer-format system prompt (the paper's rules, in this project's words)."""

_MARKER = re.compile(re.escape(FINAL_ANSWER_MARKER), re.IGNORECASE | re.ASCII)
_LEVEL_CATEGORY = re.compile(r"^level(\d+)$")


# ------------------------------------------------------------------- the official helpers


def normalize_number_str(number_str: str) -> float:
    """Delete every ``$``, ``%`` and ``,``, then ``float()``; ``+inf`` on ``ValueError``."""
    for char in ["$", "%", ","]:
        number_str = number_str.replace(char, "")
    try:
        return float(number_str)
    except ValueError:
        return float("inf")


def split_string(s: str, char_list: list[str] | None = None) -> list[str]:
    """``re.split`` on the character class of ``char_list`` (default ``,`` and ``;``)."""
    chars = [",", ";"] if char_list is None else char_list
    return re.split(f"[{''.join(chars)}]", s)


def normalize_str(input_str: str, remove_punct: bool = True) -> str:
    """Delete all ``\\s`` whitespace, ``str.lower``, then optionally ASCII punctuation."""
    no_spaces = re.sub(r"\s", "", input_str)
    if remove_punct:
        translator = str.maketrans("", "", string.punctuation)
        return no_spaces.lower().translate(translator)
    return no_spaces.lower()


def _is_float(element: Any) -> bool:
    """The official inline ``is_float``: only ``ValueError`` is caught (``None`` raises)."""
    try:
        float(element)
        return True
    except ValueError:
        return False


# ------------------------------------------------------------------------ one judgement


@dataclass(frozen=True)
class _Verdict:
    correct: bool
    branch: Branch
    reason: str
    prediction: Normalized
    truth: Normalized
    length_mismatch: bool = False


def branch_of(ground_truth: Any) -> Branch:
    """The branch the official scorer takes for ``ground_truth`` (``None`` raises TypeError)."""
    if _is_float(ground_truth):
        return "number"
    if any(char in ground_truth for char in [",", ";"]):
        return "list"
    return "string"


def _judge(model_answer: Any, ground_truth: Any) -> _Verdict:
    """The official decision, with diagnostics; raises exactly where the official one does."""
    if model_answer is None:
        model_answer = "None"
    branch = branch_of(ground_truth)
    if branch == "number":
        got, want = normalize_number_str(model_answer), float(ground_truth)
        correct = got == want
        return _Verdict(correct, branch, _number_reason(correct, got, want), repr(got), repr(want))
    if branch == "list":
        return _judge_list(model_answer, ground_truth)
    got_s, want_s = normalize_str(model_answer), normalize_str(ground_truth)
    correct = got_s == want_s
    return _Verdict(correct, branch, "match" if correct else "strings differ", got_s, want_s)


def _number_reason(correct: bool, got: float, want: float) -> str:
    if correct:
        return "match"
    if want != want:
        return "the truth is NaN, which equals nothing"
    if got == float("inf"):
        return "numbers differ (the answer is not a number: it normalises to +inf)"
    return "numbers differ"


def _judge_list(model_answer: str, ground_truth: str) -> _Verdict:
    gt_elems = split_string(ground_truth)
    ma_elems = split_string(model_answer)
    truth = [_piece(gt, gt) for gt in gt_elems]
    if len(gt_elems) != len(ma_elems):
        prediction = [normalize_str(ma, remove_punct=False) for ma in ma_elems]
        reason = f"list lengths differ (answer {len(ma_elems)}, truth {len(gt_elems)})"
        return _Verdict(False, "list", reason, prediction, truth, length_mismatch=True)
    prediction = [_piece(ma, gt) for ma, gt in zip(ma_elems, gt_elems, strict=True)]
    comparisons = []
    for ma, gt in zip(ma_elems, gt_elems, strict=True):
        if _is_float(gt):
            comparisons.append(normalize_number_str(ma) == float(gt))
        else:
            comparisons.append(
                normalize_str(ma, remove_punct=False) == normalize_str(gt, remove_punct=False)
            )
    if all(comparisons):
        return _Verdict(True, "list", "match", prediction, truth)
    first = comparisons.index(False) + 1
    reason = f"element {first} of {len(gt_elems)} differs"
    return _Verdict(False, "list", reason, prediction, truth)


def _piece(piece: str, truth_piece: str) -> str:
    """A list piece as compared: a float's repr, or the text without whitespace, lower-cased."""
    if _is_float(truth_piece):
        return repr(normalize_number_str(piece))
    return normalize_str(piece, remove_punct=False)


# ---------------------------------------------------------------------------- public API


def question_scorer(model_answer: str, ground_truth: str) -> bool:
    """The official GAIA scorer: ``True`` when ``model_answer`` matches ``ground_truth``.

    Same branches, normalisation, warning and exceptions as the leaderboard's function; it
    only leaves out the prints (see the module docstring).
    """
    verdict = _judge(model_answer, ground_truth)
    if verdict.length_mismatch:
        warnings.warn(LIST_LENGTH_WARNING, UserWarning, stacklevel=2)
    return verdict.correct


class GaiaScore(BaseModel):
    """The verdict on one answer, with what the scorer compared."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    correct: bool
    """What the official ``question_scorer`` returns (``False`` for a non-string answer)."""
    score: float
    """1.0 when correct, else 0.0."""
    reason: str
    """``match``, or why not: ``numbers differ``, ``list lengths differ (...)``, ..."""
    branch: Branch
    """The branch the ground truth selects."""
    normalized_prediction: Normalized | None
    """The answer as compared: a float's repr, the normalised text, or one entry per list
    piece; ``None`` when the answer was not scored (not a string, or not given)."""
    normalized_ground_truth: Normalized
    """The ground truth as compared, in the same form."""


def score_answer(model_answer: Any, ground_truth: Any) -> GaiaScore:
    """Score one answer as the leaderboard does, with diagnostics and without warnings.

    ``None`` becomes ``"None"``; any other non-string answer is wrong (see the module
    docstring). A ``None`` ground truth raises ``TypeError`` as officially.
    """
    if model_answer is not None and not isinstance(model_answer, str):
        reason = f"non-string answer ({_json_type(model_answer)}): the official scorer raises"
        return _wrong(ground_truth, reason)
    verdict = _judge(model_answer, ground_truth)
    return GaiaScore(
        correct=verdict.correct,
        score=1.0 if verdict.correct else 0.0,
        reason=verdict.reason,
        branch=verdict.branch,
        normalized_prediction=verdict.prediction,
        normalized_ground_truth=verdict.truth,
    )


def score_response(response: str, ground_truth: Any) -> tuple[str | None, GaiaScore]:
    """Extract the final answer from a whole response, then score it.

    A response without a ``FINAL ANSWER:`` line is **wrong** (reason ``no "FINAL ANSWER:" in
    the response``): the scorer is not run on the raw text, which would credit answers that
    ignored the format, nor on ``None``, which the official guard would turn into ``"None"``.
    Returns the extracted answer (``None`` when absent) and the score.
    """
    answer = extract_final_answer(response)
    if answer is None:
        return None, _wrong(ground_truth, f'no "{FINAL_ANSWER_MARKER}" in the response')
    return answer, score_answer(answer, ground_truth)


def _wrong(ground_truth: Any, reason: str) -> GaiaScore:
    """A wrong verdict without scoring an answer; the truth is still normalised."""
    branch = branch_of(ground_truth)
    if branch == "number":
        truth: Normalized = repr(float(ground_truth))
    elif branch == "list":
        truth = [_piece(piece, piece) for piece in split_string(ground_truth)]
    else:
        truth = normalize_str(ground_truth)
    return GaiaScore(
        correct=False,
        score=0.0,
        reason=reason,
        branch=branch,
        normalized_prediction=None,
        normalized_ground_truth=truth,
    )


def extract_final_answer(text: str) -> str | None:
    """The text after the **last** ``FINAL ANSWER:``, with surrounding whitespace stripped.

    The marker matches in any ASCII case (``Final Answer:`` too) but must be spelled with one
    space and a colon right after ``ANSWER``. Everything after it is the answer, across lines;
    nothing else is removed (no Markdown, quotes or trailing full stop): the scorer decides.
    ``None`` when the marker is absent; ``""`` when nothing follows it.
    """
    matches = list(_MARKER.finditer(text))
    if not matches:
        return None
    return text[matches[-1].end() :].strip()


def level_of(category: str | None) -> int | None:
    """The GAIA level of a ``levelN`` category, else ``None``."""
    match = _LEVEL_CATEGORY.match(category or "")
    return int(match.group(1)) if match else None


def aggregate(rows: Iterable[tuple[int | None, bool]]) -> dict[str, Any]:
    """Leaderboard accuracy of ``(level, correct)`` rows, one per question asked.

    ``accuracy`` is the micro-average ``correct / questions`` over all rows (not the mean of
    the levels); ``levels`` holds, per level in order (``level1`` ...), the plain
    ``correct / questions`` of that level. Rows without a level count in the overall figures
    and in ``unleveled``. Accuracies are fractions rounded to 6 places, ``None`` for no rows.
    """
    total = _Tally()
    by_level: dict[int, _Tally] = {}
    unleveled = _Tally()
    for level, correct in rows:
        total.add(correct)
        (by_level.setdefault(level, _Tally()) if level is not None else unleveled).add(correct)
    return {
        **total.as_dict(),
        "levels": {f"level{level}": by_level[level].as_dict() for level in sorted(by_level)},
        "unleveled": unleveled.as_dict(),
    }


@dataclass
class _Tally:
    questions: int = 0
    correct: int = 0

    def add(self, correct: bool) -> None:
        self.questions += 1
        self.correct += int(correct)

    def as_dict(self) -> dict[str, Any]:
        accuracy = round(self.correct / self.questions, 6) if self.questions else None
        return {"accuracy": accuracy, "correct": self.correct, "questions": self.questions}


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
