"""Scoring a When2Call case from its transcript, one function per protocol (mcq-loglik with
its opt-in chat fallback, mcq-string, judge): the label picked, the per-rule accuracies and
what the report shows of the answer."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from pytest_llmeval.core.clip import clip
from pytest_llmeval.core.errors import RunnerError
from pytest_llmeval.core.models import (
    CaseScore,
    EvalCase,
    Transcript,
)
from pytest_llmeval.scoring.classification import argmax_first, choice_digit
from pytest_llmeval.scoring.judge_verdict import agreement as judge_agreement
from pytest_llmeval.suites.when2call_metrics import (
    LABELS,
)

Protocol = Literal["mcq-loglik", "mcq-string", "judge"]
ScoreRule = Literal["acc_norm", "acc", "acc_bytes", "acc_tokens"]
PROTOCOLS: tuple[Protocol, ...] = ("mcq-loglik", "mcq-string", "judge")
SCORE_RULES: tuple[ScoreRule, ...] = ("acc_norm", "acc", "acc_bytes", "acc_tokens")

RAW_REPLY_CHARS = 2000
"""How much of a chat reply a result keeps (`details.reply`), clipped past it."""


def predictions(logliks: Sequence[dict[str, Any]]) -> dict[str, int]:
    """The option each rule picks from the four scores (``loglik``, chars, bytes, tokens)."""
    ll = [float(x["logprob_sum"]) for x in logliks]
    norm = {
        "acc": [1.0] * len(ll),
        "acc_norm": [float(x["char_length"]) for x in logliks],
        "acc_bytes": [float(x["byte_length"]) for x in logliks],
        "acc_tokens": [float(x["token_count"]) for x in logliks],
    }
    return {
        rule: argmax_first([v / d if d else v for v, d in zip(ll, lengths, strict=True)])
        for rule, lengths in norm.items()
    }


def score_loglik(case: EvalCase, transcript: Transcript) -> CaseScore:
    meta = case.metadata
    gold = meta["gold"]
    scores = [x.model_dump() for x in transcript.logliks]
    details: dict[str, Any] = {
        "gold": gold,
        "loglik": [_json_score(x["logprob_sum"]) for x in scores],
        "n_tools": meta["n_tools"],
        "protocol": meta["protocol"],
        "prompt_format": meta["prompt_format"],
        "primary": meta["score"],
        "truncated": [x.get("truncated") for x in scores],
        "tokens": [x["token_count"] for x in scores],
    }
    if len(scores) != len(LABELS):
        raise ValueError(f"expected {len(LABELS)} log-likelihoods, got {len(scores)}")
    bad = [
        LABELS[i]
        for i, x in enumerate(scores)
        if not math.isfinite(x["logprob_sum"]) or x["logprob_sum"] > 0
    ]
    non_finite = [x for x in scores if not math.isfinite(x["logprob_sum"])]
    if non_finite and case.choices is not None and case.choices.fallback is not None:
        return _score_fallback(case, transcript, details)
    if bad:
        raise RunnerError(
            f"non-finite or positive log-likelihood for option(s) {', '.join(bad)}: "
            f"{details['loglik']}; the case cannot be scored",
            kind="protocol",
        )
    picks = predictions(scores)
    for rule, index in picks.items():
        details[f"pred_{rule}"] = LABELS[index]
    pred = details[f"pred_{meta['score']}"]
    details["pred"] = pred
    passed = pred == gold
    failure = None
    if not passed:
        failure = f"gold {gold}, predicted {pred} by {meta['score']}; " + _shown_scores(
            scores, meta["score"], picks[meta["score"]]
        )
    return CaseScore(
        passed=passed,
        scores={rule: float(LABELS[index] == gold) for rule, index in picks.items()},
        failure=failure,
        details=details,
    )


def _json_score(value: float) -> float | str:
    """A log-likelihood as JSON holds it: a non-finite one as text (``"-inf"``)."""
    return value if math.isfinite(value) else str(value)


def _score_fallback(case: EvalCase, transcript: Transcript, details: dict[str, Any]) -> CaseScore:
    """Scores not all finite, asked in chat (``loglik_fallback: mcq-string``): the reply's
    label is every rule's pick; a reply without a digit 0-3 is ``unparsed``."""
    gold = details["gold"]
    reply = transcript.response
    index = choice_digit(reply, len(LABELS))
    pred = LABELS[index] if index is not None else None
    details.update(
        fallback="mcq_string",
        pred=pred,
        parsed_index=index,
        unparsed=index is None,
        reply=reply[:RAW_REPLY_CHARS],
    )
    for rule in SCORE_RULES:
        details[f"pred_{rule}"] = pred
    passed = pred == gold
    failure = None
    why = "non-finite log-likelihoods, asked in chat (loglik_fallback)"
    if index is None:
        failure = f"gold {gold}, but {why}: the reply has no digit 0-3 (unparsed): {reply[:200]!r}"
    elif not passed:
        failure = f"gold {gold}, predicted {pred} ({why}: the reply chose {index}): {reply[:200]!r}"
    return CaseScore(
        passed=passed,
        scores={rule: float(passed) for rule in SCORE_RULES},
        failure=failure,
        details=details,
    )


def _shown_scores(scores: Sequence[dict[str, Any]], rule: str, picked: int) -> str:
    key = {"acc": None, "acc_norm": "char_length", "acc_bytes": "byte_length"}.get(
        rule, "token_count"
    )
    parts = []
    for i, x in enumerate(scores):
        value = x["logprob_sum"] / (x[key] or 1) if key else x["logprob_sum"]
        parts.append(f"{LABELS[i]} {value:.4f}" + (" (picked)" if i == picked else ""))
    what = "log-likelihoods" if key is None else f"log-likelihood per {_UNIT[rule]}"
    return f"{what}: " + ", ".join(parts)


_UNIT = {"acc_norm": "character", "acc_bytes": "byte", "acc_tokens": "token"}


JUDGE_LABELS = {"direct_answer": "direct"}
"""The judge's label names that differ from the suite's."""


def score_judged(case: EvalCase, transcript: Transcript) -> CaseScore:
    meta = case.metadata
    gold = meta["gold"]
    judgement = transcript.judgement
    if judgement is None or judgement.verdict is None:
        raise RunnerError("the LLM-as-judge protocol has no judge verdict", kind="judge")
    classification = str(judgement.verdict["classification"])
    pred = JUDGE_LABELS.get(classification, classification)
    answered = "tool_call" if transcript.tool_calls else "text"
    details: dict[str, Any] = {
        "gold": gold,
        "pred": pred,
        "pred_acc": pred,
        "classification": classification,
        "answered_with": answered,
        "reply": clip(transcript.response, RAW_REPLY_CHARS),
        "tool_call": _first_call(transcript),
        "n_tools": meta["n_tools"],
        "protocol": "judge",
        "prompt_format": meta["prompt_format"],
        "primary": "acc",
        "judge": {
            "stage": judgement.stage,
            "fingerprint": judgement.fingerprint,
            "usage": judgement.usage.model_dump(),
            "agreement": judge_agreement(case.judge, judgement.samples) if case.judge else None,
            "samples": len(judgement.samples) or 1,
        },
    }
    if judgement.stage == "fallback":
        details["fallback"] = "judge"
    passed = pred == gold
    failure = None
    if not passed:
        what = details["tool_call"] or repr(clip(transcript.response, 200))
        failure = f"gold {gold}, the judge classified the answer as {classification}: {what}"
    return CaseScore(passed=passed, scores={"acc": float(passed)}, failure=failure, details=details)


def _first_call(transcript: Transcript) -> dict[str, Any] | None:
    if not transcript.tool_calls:
        return None
    first = transcript.tool_calls[0]
    return {"name": first.name, "arguments": first.params}


def score_string(case: EvalCase, transcript: Transcript) -> CaseScore:
    meta = case.metadata
    gold = meta["gold"]
    reply = transcript.response
    index = choice_digit(reply, len(LABELS))
    pred = LABELS[index] if index is not None else None
    details: dict[str, Any] = {
        "gold": gold,
        "pred": pred,
        "parsed_index": index,
        "unparsed": index is None,
        "reply": clip(reply, RAW_REPLY_CHARS),
        "n_tools": meta["n_tools"],
        "protocol": meta["protocol"],
        "prompt_format": meta["prompt_format"],
        "primary": "acc",
        "pred_acc": pred,
    }
    passed = pred == gold
    failure = None
    if index is None:
        failure = f"gold {gold}, but the reply has no digit 0-3 (unparsed): {clip(reply, 200)!r}"
    elif not passed:
        failure = f"gold {gold}, predicted {pred} (the reply chose {index}): {clip(reply, 200)!r}"
    return CaseScore(passed=passed, scores={"acc": float(passed)}, failure=failure, details=details)
