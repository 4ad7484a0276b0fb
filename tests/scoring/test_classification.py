"""Classification metrics (When2Call): hand-computed confusion matrices, F1 conventions, ties."""

from __future__ import annotations

import math

import pytest

from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.scoring.classification import (
    accuracy,
    argmax_first,
    confusion_matrix,
    macro_f1,
    mean_stderr,
    per_class,
)
from pytest_llmeval.suites.when2call_metrics import LABELS, aggregate
from pytest_llmeval.suites.when2call_scoring import predictions

D, T, R, C = LABELS


def test_confusion_matrix_is_always_square_in_label_order() -> None:
    gold = [T, T, R, C, C, C]
    pred = [T, R, R, T, C, None]  # never predicts direct; one unparsed
    assert confusion_matrix(gold, pred, LABELS) == [
        [0, 0, 0, 0],
        [0, 1, 1, 0],
        [0, 0, 1, 0],
        [0, 1, 0, 1],
    ]


def test_per_class_and_macro_f1_by_hand() -> None:
    gold = [T, T, T, R, R, C, C, C]
    pred = [T, T, R, R, D, T, C, C]
    m = confusion_matrix(gold, pred, LABELS)
    classes = per_class(m, LABELS)
    # tool_call: 2 hits of 3 predicted (one was cannot_answer), 3 gold -> P 2/3, R 2/3
    assert classes[T] == pytest.approx(
        {"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3, "support": 3}
    )
    # request_for_info: P 1/2, R 1/2; cannot_answer: P 2/2, R 2/3, F1 0.8
    assert classes[R]["f1"] == pytest.approx(0.5)
    assert classes[C] == pytest.approx({"precision": 1.0, "recall": 2 / 3, "f1": 0.8, "support": 3})
    # direct: predicted once, never gold -> precision 0, recall undefined, F1 undefined
    assert classes[D] == {"precision": 0.0, "recall": None, "f1": None, "support": 0}
    assert macro_f1(classes, LABELS[1:]) == pytest.approx((2 / 3 + 0.5 + 0.8) / 3)
    # the 4-label average counts the undefined direct F1 as 0 (sklearn zero_division=0)
    assert macro_f1(classes, LABELS) == pytest.approx((2 / 3 + 0.5 + 0.8) / 4)


def test_zero_support_and_never_predicted_classes() -> None:
    gold = [T, T, C]
    pred = [T, T, T]  # request_for_info: no gold, no prediction; cannot_answer never predicted
    classes = per_class(confusion_matrix(gold, pred, LABELS), LABELS)
    assert classes[R] == {"precision": None, "recall": None, "f1": None, "support": 0}
    assert classes[C] == {"precision": None, "recall": 0.0, "f1": None, "support": 1}
    assert classes[T]["precision"] == pytest.approx(2 / 3)
    hit_nothing = per_class(confusion_matrix([C], [T], LABELS), LABELS)
    assert hit_nothing[T] == {"precision": 0.0, "recall": None, "f1": None, "support": 0}
    both_zero = per_class(confusion_matrix([T, C], [C, T], LABELS), LABELS)
    assert both_zero[T]["f1"] == 0.0  # defined, and zero


def test_unparsed_replies_count_against_recall() -> None:
    gold, pred = [T, T], [T, None]
    m = confusion_matrix(gold, pred, LABELS)
    assert per_class(m, LABELS)[T]["recall"] == 1.0  # the matrix alone
    assert per_class(m, LABELS, supports=[0, 2, 0, 0])[T]["recall"] == 0.5


def test_ties_pick_the_first_index() -> None:
    assert argmax_first([-1.0, -1.0, -2.0, -1.0]) == 0
    assert argmax_first([-3.0, -1.0, -1.0, -2.0]) == 1
    assert argmax_first([-5.0]) == 0


def test_predictions_per_rule() -> None:
    # LL: direct -10 (10 chars), tool -12 (24 chars, 30 bytes, 3 tokens),
    # rfi -11 (11 chars, 11 bytes, 2 tokens), cannot -20 (40 chars)
    scores = [
        {"logprob_sum": -10.0, "char_length": 10, "byte_length": 10, "token_count": 5},
        {"logprob_sum": -12.0, "char_length": 24, "byte_length": 30, "token_count": 3},
        {"logprob_sum": -11.0, "char_length": 11, "byte_length": 11, "token_count": 2},
        {"logprob_sum": -20.0, "char_length": 40, "byte_length": 20, "token_count": 8},
    ]
    # acc: -10 best -> direct; per char: -1, -0.5, -1, -0.5 -> tie, first: tool_call;
    # per byte: -1, -0.4, -1, -1 -> tool_call; per token: -2, -4, -5.5, -2.5 -> direct
    assert predictions(scores) == {"acc": 0, "acc_norm": 1, "acc_bytes": 1, "acc_tokens": 0}


def test_stderr_is_lm_evals_sample_stderr() -> None:
    hits = [True, False, True, True]
    p = 0.75
    expected = math.sqrt(sum((h - p) ** 2 for h in (1, 0, 1, 1)) / 3) / math.sqrt(4)
    assert mean_stderr(hits) == pytest.approx(expected)
    assert mean_stderr([True]) is None
    assert accuracy([]) is None


def _result(i: int, gold: str, pred: str | None, n_tools: int, **extra: object) -> CaseResult:
    details = {
        "gold": gold,
        "pred": pred,
        "n_tools": n_tools,
        "protocol": "mcq-loglik",
        "primary": "acc_norm",
        "pred_acc": extra.get("acc", pred),
        "pred_acc_norm": pred,
        "pred_acc_bytes": pred,
        "pred_acc_tokens": pred,
    }
    return CaseResult(
        case_id=f"c{i}",
        suite="when2call",
        file="w.jsonl",
        line=i,
        nodeid=f"w.jsonl::c{i}",
        category=gold,
        outcome="passed" if pred == gold else "failed",
        passed=pred == gold,
        details=details,
    )


def test_aggregate_by_hand() -> None:
    results = [
        _result(1, T, T, 2),
        _result(2, T, R, 2),
        _result(3, R, R, 1, acc=T),
        _result(4, C, T, 0),  # zero tools, predicted tool_call: a hallucination
        _result(5, C, C, 0),
        _result(6, C, C, 3),
    ]
    results.append(
        CaseResult(
            case_id="broken",
            suite="when2call",
            file="w.jsonl",
            line=9,
            nodeid="w.jsonl::line9",
            outcome="error",
            passed=False,
        )
    )
    out = aggregate(results)
    assert (out["n"], out["errors"], out["total"]) == (6, 1, 7)
    assert out["acc_norm"] == pytest.approx(4 / 6, abs=1e-6)
    assert out["acc"] == pytest.approx(3 / 6, abs=1e-6)
    assert out["confusion_matrix"] == [[0, 0, 0, 0], [0, 1, 1, 0], [0, 0, 1, 0], [0, 1, 0, 2]]
    assert (out["tool_hallucination_rate"], out["tool_hallucination_n"]) == (0.5, 2)
    assert out["labels"] == list(LABELS)
    assert out["per_class"][D]["support"] == 0
    f1 = {T: 0.5, R: 2 / 3, C: 0.8}
    assert out["macro_f1_3"] == pytest.approx(sum(f1.values()) / 3, abs=1e-6)
    assert out["macro_f1_4"] == pytest.approx(sum(f1.values()) / 4, abs=1e-6)
    assert (out["protocol"], out["primary"], out["unparsed"]) == ("mcq-loglik", "acc_norm", 0)
    empty = aggregate([])
    assert empty["acc_norm"] is None and empty["tool_hallucination_rate"] is None
    assert empty["confusion_matrix"] == [[0] * 4 for _ in range(4)]


def test_stability_metrics_by_hand() -> None:
    from pytest_llmeval.scoring.classification import stability

    runs = [
        [T, T, T, T],  # stable, right
        [C, C, C, C],  # stable, wrong (gold tool_call)
        [R, C, R, C],  # tie: request_for_info before cannot_answer; 3 flips
        [T, T, R, T],  # mode tool_call, m = 3
    ]
    gold = [T, T, R, T]
    out = stability(runs, gold, LABELS)
    assert out["stability_at_k"] == 0.5
    assert out["mean_consistency_at_k"] == pytest.approx((1 + 1 + 0.5 + 0.75) / 4)
    assert (out["stable_correct_rate"], out["stable_wrong_rate"]) == (0.25, 0.25)
    assert out["mode_correct_rate"] == 0.75  # cases 1, 3 (tie goes to request_for_info), 4
    h3 = 1.0 / 2.0  # two labels half each: 1 bit of log2(4) = 2 bits
    h4 = -(0.75 * math.log2(0.75) + 0.25 * math.log2(0.25)) / 2
    assert out["normalized_entropy"] == pytest.approx((0 + 0 + h3 + h4) / 4)
    assert out["flip_rate"] == pytest.approx((0 + 0 + 1 + 2 / 3) / 4)
    assert out["mean_acc_across_runs"] == pytest.approx((1 + 0 + 0.5 + 0.75) / 4)
