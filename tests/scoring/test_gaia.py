"""GAIA scoring: the official question_scorer rule by rule, extraction, aggregation."""

from __future__ import annotations

import re
import string
import warnings
from typing import Any

import pytest

from pytest_llmeval.scoring import gaia
from pytest_llmeval.scoring.gaia import (
    GAIA_SYSTEM_PROMPT,
    LIST_LENGTH_WARNING,
    aggregate,
    branch_of,
    extract_final_answer,
    level_of,
    normalize_number_str,
    normalize_str,
    question_scorer,
    score_answer,
    score_response,
    split_string,
)


def _reference(model_answer: Any, ground_truth: Any) -> bool:
    """An independent transcription of the official ``question_scorer`` (prints left out), as an
    oracle."""

    def is_float(element: Any) -> bool:
        try:
            float(element)
            return True
        except ValueError:
            return False

    def number(s: str) -> float:
        for char in ["$", "%", ","]:
            s = s.replace(char, "")
        try:
            return float(s)
        except ValueError:
            return float("inf")

    def norm(s: str, remove_punct: bool = True) -> str:
        s = re.sub(r"\s", "", s).lower()
        return s.translate(str.maketrans("", "", string.punctuation)) if remove_punct else s

    if model_answer is None:
        model_answer = "None"
    if is_float(ground_truth):
        return number(model_answer) == float(ground_truth)
    if any(char in ground_truth for char in [",", ";"]):
        gt, ma = re.split("[,;]", ground_truth), re.split("[,;]", model_answer)
        if len(gt) != len(ma):
            warnings.warn(LIST_LENGTH_WARNING, UserWarning, stacklevel=2)
            return False
        return all(
            number(m) == float(g) if is_float(g) else norm(m, False) == norm(g, False)
            for m, g in zip(ma, gt)  # noqa: B905 - lengths are equal here
        )
    return norm(model_answer) == norm(ground_truth)


def _check(answer: Any, truth: Any, expected: bool, branch: str) -> None:
    """question_scorer, score_answer and the oracle all agree, on the expected branch."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _reference(answer, truth) is expected
        assert question_scorer(answer, truth) is expected
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # score_answer never warns
        verdict = score_answer(answer, truth)
    assert verdict.correct is expected
    assert verdict.score == (1.0 if expected else 0.0)
    assert verdict.branch == branch
    assert (verdict.reason == "match") is expected


# ------------------------------------------------------------------------- number branch


@pytest.mark.parametrize(
    ("answer", "truth", "expected"),
    [
        ("391", "391", True),
        ("391.0", "391", True),
        ("3", 3, True),  # a numeric truth works, as officially
        ("3.5", 3.5, True),
        ("$1,000", "1000", True),
        ("50%", "50", True),
        ("%5$0,", "50", True),  # $ % , removed anywhere, not just at the ends
        ("1,2,3", "123", True),  # commas too: the number branch never splits
        ("1000", "1_000", True),  # float() accepts underscores between digits
        ("1_000", "1000", True),
        ("1000", "1E3", True),
        ("1e3", "1000", True),
        ("5", "+5", True),
        ("+5", "5", True),
        ("5", "5.", True),
        ("0.5", ".5", True),
        ("7", "007", True),
        ("1000", "١٠٠٠", True),  # Arabic-Indic digits in the truth
        ("١٠٠٠", "1000", True),  # ... and in the answer
        ("१०००", "1000", True),  # Devanagari
        ("１０００", "1000", True),  # full-width
        ("\u3000 42 \xa0\n", "42", True),  # float() strips Unicode whitespace
        ("inf", "Infinity", True),
        ("banana", "inf", True),  # an unparseable answer normalises to +inf ...
        ("banana", "391", False),  # ... which is wrong for any finite truth
        ("nan", "nan", False),  # NaN never equals anything
        ("NaN", "NAN", False),
        ("42 apples", "42", False),
        ("forty-two", "42", False),
        ("1__000", "1000", False),  # float() refuses doubled underscores
        ("3.1416", "3.14159", False),  # exact ==, no tolerance
        ("0.30000000000000004", "0.3", False),
        ("0.1", "1e-1", True),
        ("0.5", "50", False),  # no percent scaling
        ("", "0", False),
        (None, "0", False),  # None becomes "None"
    ],
)
def test_number_branch(answer: Any, truth: Any, expected: bool) -> None:
    _check(answer, truth, expected, "number")


def test_number_diagnostics() -> None:
    verdict = score_answer("$1,000", "1000")
    assert verdict.normalized_prediction == "1000.0"
    assert verdict.normalized_ground_truth == "1000.0"
    assert score_answer("banana", "391").reason.startswith("numbers differ (the answer is not")
    assert score_answer("nan", "nan").reason == "the truth is NaN, which equals nothing"
    assert score_answer("390", "391").reason == "numbers differ"


def test_a_percent_or_dollar_truth_is_a_string() -> None:
    # float("50%") fails, so the truth goes to the string branch, where % is punctuation
    _check("50", "50%", True, "string")
    _check("0.5", "50%", False, "string")
    _check("5", "$5", True, "string")


# --------------------------------------------------------------------------- list branch


def test_split_string_keeps_everything() -> None:
    assert split_string("a, b,") == ["a", " b", ""]
    assert split_string("a;b,c") == ["a", "b", "c"]
    assert split_string("a|b", ["|"]) == ["a", "b"]
    assert split_string("") == [""]


@pytest.mark.parametrize(
    ("answer", "truth", "expected"),
    [
        ("1,000", "1,000", True),  # a thousands separator makes a list: pieces 1 and 000
        ("1;000", "1,000", True),  # , and ; are the same separator
        ("1, 0", "1,000", True),  # 000 is the float 0
        ("smith,john", "Smith, John", True),
        ("b, a", "a, b", False),  # pairwise, in order
        ("12; $14", "12, 14", True),  # numeric pieces: $ and % stripped
        ("12, 14%", "12, 14", True),
        ("12.0,14", "12, 14", True),
        ("12, fourteen", "12, 14", False),
        ("washington,d.c.", "Washington, D.C.", True),
        ("Washington, DC", "Washington, D.C.", False),  # punctuation kept in list pieces
        ("a,\xa0b", "a, b", True),  # whitespace (NBSP too) still removed
        ("a,,b", "a,,b", True),  # empty pieces are compared too
        ("a, b, c", "a, b, c", True),
        ("a, b, x", "a, b, c", False),
        ("Straße, x", "straße, x", True),
    ],
)
def test_list_branch(answer: str, truth: str, expected: bool) -> None:
    _check(answer, truth, expected, "list")


@pytest.mark.parametrize(
    ("answer", "truth"),
    [
        ("1000", "1,000"),  # one piece against two
        ("John Smith", "Smith, John"),
        ("a,b", "a, b,"),  # the truth's trailing comma makes an empty third piece
        ("a, b, c", "a; b"),
    ],
)
def test_list_length_mismatch_warns_and_is_false(answer: str, truth: str) -> None:
    with pytest.warns(UserWarning, match=re.escape(LIST_LENGTH_WARNING)):
        assert question_scorer(answer, truth) is False
    verdict = score_answer(answer, truth)  # no warning here: the reason says it
    assert verdict.correct is False
    assert verdict.reason.startswith("list lengths differ")


def test_list_diagnostics() -> None:
    verdict = score_answer("12; $14, Paris!", "12, 14, paris!")
    assert verdict.correct is True
    assert verdict.normalized_prediction == ["12.0", "14.0", "paris!"]
    assert verdict.normalized_ground_truth == ["12.0", "14.0", "paris!"]
    assert score_answer("12, 15", "12, 14").reason == "element 2 of 2 differs"
    mismatch = score_answer("a", "a, b")
    assert mismatch.reason == "list lengths differ (answer 1, truth 2)"
    assert mismatch.normalized_prediction == ["a"]


# ------------------------------------------------------------------------- string branch


@pytest.mark.parametrize(
    ("answer", "truth", "expected"),
    [
        ("sea gull", "seagull", True),
        ("Sea\tGull\n", "seagull", True),
        ("sea\xa0gull", "seagull", True),  # NBSP
        ("sea\u3000gull", "seagull", True),  # ideographic space
        ("sea\u2003gull", "seagull", True),  # em space
        ("sea\u2028gull", "seagull", True),  # line separator
        ("sea\x1cgull", "seagull", True),  # \x1c-\x1f count as \s
        ("sea\u200bgull", "seagull", False),  # zero-width space is not \s
        ("\ufeffseagull", "seagull", False),  # nor is the BOM
        ("Straße", "straße", True),  # str.lower keeps ß ...
        ("STRASSE", "straße", False),  # ... where casefold would give ss
        ("İstanbul", "istanbul", False),  # İ lowers to i + combining dot
        ("ΟΔΟΣ", "οδος", True),  # final sigma
        ("ΟΔΟΣ", "οδοσ", False),
        ("e.g. co-op!", "eg coop", True),  # ASCII punctuation removed
        ("co,op", "coop", True),  # the truth picks the branch: the answer's comma is punct
        ("“quote”", "quote", False),  # curly quotes are not ASCII punctuation
        ("wait…", "wait", False),
        ("a–b", "ab", False),  # en dash
        ("a—b", "ab", False),  # em dash
        ("«x»", "x", False),
        ("北京。", "北京", False),  # CJK full stop
        ("25°C", "25C", False),
        ("−5 degrees", "5degrees", False),  # Unicode minus
        ("a·b", "ab", False),
        ("the Beatles", "Beatles", False),  # no article removal
        ("ＡＢＣ", "abc", False),  # no NFKC
        ("café", "cafe", False),  # no accent stripping
        ("ﬁsh", "fish", False),  # no ligature unfolding
        ("FINAL ANSWER: Paris", "Paris", False),  # no prefix removal
        (None, "None", True),  # None becomes "None"
        (None, "none", True),
        (None, "Paris", False),
    ],
)
def test_string_branch(answer: Any, truth: str, expected: bool) -> None:
    _check(answer, truth, expected, "string")


def test_normalize_str_rules() -> None:
    assert normalize_str("A b.C!") == "abc"
    assert normalize_str("A b.C!", remove_punct=False) == "ab.c!"
    assert normalize_str(string.punctuation) == ""
    assert normalize_number_str("$1,234.5%") == 1234.5
    assert normalize_number_str("n/a") == float("inf")


def test_string_diagnostics() -> None:
    verdict = score_answer("Sea Gull!", "seagull")
    assert verdict.normalized_prediction == verdict.normalized_ground_truth == "seagull"
    assert score_answer("gull", "seagull").reason == "strings differ"


# ---------------------------------------------------------------------- bad input types


def test_a_none_truth_raises_type_error_as_officially() -> None:
    with pytest.raises(TypeError):
        question_scorer("x", None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        score_answer("x", None)
    with pytest.raises(TypeError):
        branch_of(None)


@pytest.mark.parametrize(
    ("answer", "truth", "error"),
    [(3, "3", AttributeError), (3, "a, b", TypeError), (3, "abc", TypeError)],
)
def test_question_scorer_raises_on_non_string_answers_as_officially(
    answer: Any, truth: str, error: type[Exception]
) -> None:
    with pytest.raises(error):
        question_scorer(answer, truth)
    with pytest.raises(error):
        _reference(answer, truth)


@pytest.mark.parametrize(
    ("answer", "kind"),
    [(3, "number"), (3.0, "number"), (True, "boolean"), ([3], "array"), ({"a": 3}, "object")],
)
def test_score_answer_scores_non_string_answers_wrong(answer: Any, kind: str) -> None:
    verdict = score_answer(answer, "3")
    assert verdict.correct is False
    assert verdict.score == 0.0
    assert verdict.reason == f"non-string answer ({kind}): the official scorer raises"
    assert verdict.branch == "number"
    assert verdict.normalized_prediction is None
    assert verdict.normalized_ground_truth == "3.0"


def test_branch_comes_from_the_truth_only() -> None:
    assert branch_of("3") == "number"
    assert branch_of(3) == "number"
    assert branch_of("1,000") == "list"
    assert branch_of("a;b") == "list"
    assert branch_of("Paris") == "string"
    assert score_answer("1, 2", "Paris").branch == "string"


# ----------------------------------------------------------------------------- extraction


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Reasoning...\nFINAL ANSWER: 391", "391"),
        ("FINAL ANSWER: 1\nthen I checked.\nFINAL ANSWER: 2\n", "2"),  # the last one wins
        ("Final Answer: Paris", "Paris"),  # any ASCII case
        ("final answer:\n\n  Paris  \n", "Paris"),
        ("FINAL ANSWER: 12,\n14", "12,\n14"),  # everything after it, across lines
        ("**FINAL ANSWER:** 42", "** 42"),  # nothing but whitespace is removed
        ("FINAL ANSWER: 42.", "42."),
        ("FINAL ANSWER:", ""),
        ("FINAL ANSWER:\xa0\u3000", ""),
        ("The answer is 391.", None),
        ("FINAL ANSWER 391", None),  # the colon is required
        ("FINAL  ANSWER: 391", None),  # one space
        ("FİNAL ANSWER: 391", None),  # ASCII case only
        ("", None),
    ],
)
def test_extract_final_answer(text: str, expected: str | None) -> None:
    assert extract_final_answer(text) == expected


def test_score_response_extracts_then_scores() -> None:
    answer, verdict = score_response("I used the calculator.\nFINAL ANSWER: $391", "391")
    assert answer == "$391"
    assert verdict.correct is True


def test_a_response_without_final_answer_is_wrong_not_raw() -> None:
    answer, verdict = score_response("391", "391")  # right text, no FINAL ANSWER line
    assert answer is None
    assert verdict.correct is False
    assert verdict.reason == 'no "FINAL ANSWER:" in the response'
    assert verdict.branch == "number"
    assert verdict.normalized_prediction is None
    assert verdict.normalized_ground_truth == "391.0"
    # never turned into the official None -> "None" guard either
    assert score_response("nothing here", "None")[1].correct is False
    assert score_response("x", "a, b")[1].normalized_ground_truth == ["a", "b"]


def test_system_prompt_states_the_answer_format() -> None:
    assert "FINAL ANSWER: <answer>" in GAIA_SYSTEM_PROMPT
    assert (extract_final_answer(GAIA_SYSTEM_PROMPT) or "").startswith("<answer>\nPut nothing")
    for rule in ("thousands separators", "$ or %", "articles", "abbreviations", "comma"):
        assert rule in GAIA_SYSTEM_PROMPT


# ---------------------------------------------------------------------------- aggregation


def test_aggregate_overall_is_micro_not_mean_of_levels() -> None:
    rows = [(1, True), (2, False), (2, False), (2, True), (3, True), (None, False)]
    result = aggregate(rows)
    assert result["questions"] == 6
    assert result["correct"] == 3
    assert result["accuracy"] == 0.5  # 3 / 6, not the mean of the level accuracies
    assert result["levels"] == {
        "level1": {"accuracy": 1.0, "correct": 1, "questions": 1},
        "level2": {"accuracy": round(1 / 3, 6), "correct": 1, "questions": 3},
        "level3": {"accuracy": 1.0, "correct": 1, "questions": 1},
    }
    assert result["unleveled"] == {"accuracy": 0.0, "correct": 0, "questions": 1}
    assert list(aggregate([(3, True), (1, False)])["levels"]) == ["level1", "level3"]


def test_aggregate_of_nothing() -> None:
    assert aggregate([]) == {
        "accuracy": None,
        "correct": 0,
        "questions": 0,
        "levels": {},
        "unleveled": {"accuracy": None, "correct": 0, "questions": 0},
    }


def test_level_of_category() -> None:
    assert level_of("level2") == 2
    assert level_of("hard") is None
    assert level_of(None) is None


def test_module_exposes_the_official_helpers() -> None:
    assert LIST_LENGTH_WARNING == "Answer lists have different lengths, returning False."
    for name in ("question_scorer", "normalize_number_str", "split_string", "normalize_str"):
        assert callable(getattr(gaia, name))
