"""A judge's prompt, its verdict schema, and reading a verdict out of a reply (pure).

The verdict of a rubric judge (``RUBRIC_VERDICT``)::

    {"scores": {"<criterion>": <number in [0, 1]>, ...}, "reason": "<one or two sentences>"}

with exactly the case's criteria as keys. :func:`extract_verdict` is the tolerant reading of
a reply: ``<think>...</think>`` blocks and code fences are dropped and the *last* JSON object
in what is left is the verdict; :func:`validate` checks it against the schema with
``jsonschema`` and returns the first problem in words (a number that is not finite, ``NaN``
or ``Infinity``, which Python's ``json`` reads, is a problem too).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from pytest_llmeval.core.finite import first_non_finite
from pytest_llmeval.core.models import JudgeTask, Transcript

RUBRIC_TEMPLATE = """\
You are grading an AI assistant's answer. Score each criterion from 0 (not met at all) to 1
(fully met); do not reward length or style beyond what a criterion asks.

Criteria:
{criteria}

The user's request:
<request>
{question}
</request>
{reference}
The assistant's answer:
<answer>
{answer}
</answer>

Reply with a JSON object only, in this form:
{form}
"""
WHEN2CALL_TEMPLATE = """\
You are an expert at classifying how an AI model responded to a user. You are shown the tools
the model could use, the user's question and the model's response. Put the response in exactly
one category:

- direct_answer: the model answered from its own knowledge, without using a tool and without
  asking the user for anything;
- tool_call: the model called (or wrote a call to) one of the available tools;
- request_for_info: the model asked the user for more information;
- cannot_answer: the model said it cannot answer, because it lacks a capability or a tool.

Classify the kind of response only: do NOT judge whether it is accurate or helpful.

<AVAILABLE_TOOLS>
{tools}
</AVAILABLE_TOOLS>

<USER_QUESTION>
{question}
</USER_QUESTION>

<AI_MODEL_RESPONSE>
{answer}
</AI_MODEL_RESPONSE>

Reply with only this JSON object: {{"classification": "<direct_answer | tool_call | \
request_for_info | cannot_answer>"}}
"""
WHEN2CALL_CLASSES = ("direct_answer", "tool_call", "request_for_info", "cannot_answer")
REFERENCE = """
A reference answer (a correct answer, not the only one):
<reference>
{reference}
</reference>
"""
REPAIR = (
    "Your reply could not be used: {problem}. Answer again with the JSON object only, valid "
    "and complete, and nothing else."
)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[a-zA-Z]*\n?|```")


def template_sha256() -> str:
    """The prompt template's sha256: part of a judged case's scorer fingerprint."""
    text = RUBRIC_TEMPLATE + REFERENCE + WHEN2CALL_TEMPLATE + REPAIR
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def schema(task: JudgeTask) -> dict[str, Any]:
    """The verdict's JSON Schema (strict: every key required, no others)."""
    if task.kind == "when2call":
        return {
            "type": "object",
            "properties": {"classification": {"type": "string", "enum": list(WHEN2CALL_CLASSES)}},
            "required": ["classification"],
            "additionalProperties": False,
        }
    criteria = sorted(task.criteria)
    return {
        "type": "object",
        "properties": {
            "scores": {
                "type": "object",
                "properties": {c: {"type": "number", "minimum": 0, "maximum": 1} for c in criteria},
                "required": criteria,
                "additionalProperties": False,
            },
            "reason": {"type": "string"},
        },
        "required": ["scores", "reason"],
        "additionalProperties": False,
    }


def answer_of(task: JudgeTask, transcript: Transcript) -> str:
    """What the judge is shown: for When2Call, the model's first tool call as
    ``{"name", "arguments"}`` JSON when it made one (the official rule), else its text."""
    if task.kind == "when2call" and transcript.tool_calls:
        first = transcript.tool_calls[0]
        return json.dumps({"name": first.name, "arguments": first.params})
    return transcript.response


def prompt(task: JudgeTask, answer: str) -> str:
    """The judge's user message for ``answer``."""
    if task.kind == "when2call":
        tools = repr([json.loads(t) for t in task.tools])  # Python's repr, as the official
        return WHEN2CALL_TEMPLATE.format(tools=tools, question=task.question, answer=answer)
    criteria = "\n".join(f"- {name} (weight {weight:g})" for name, weight in task.criteria.items())
    form = json.dumps(
        {"scores": {name: "<0..1>" for name in sorted(task.criteria)}, "reason": "<why>"}
    )
    reference = REFERENCE.format(reference=task.reference) if task.reference else ""
    return RUBRIC_TEMPLATE.format(
        criteria=criteria, question=task.question, reference=reference, answer=answer, form=form
    )


def extract_verdict(text: str) -> Any | None:
    """The last JSON object of ``text`` once ``<think>`` blocks and code fences are dropped."""
    cleaned = _FENCE.sub("\n", _THINK.sub("", text))
    decoder = json.JSONDecoder()
    found = None
    at = cleaned.find("{")
    while at >= 0:
        try:
            value, end = decoder.raw_decode(cleaned, at)
        except (ValueError, RecursionError):  # not JSON, or nested too deeply to be a verdict
            at = cleaned.find("{", at + 1)
            continue
        if isinstance(value, dict):
            found = value
        at = cleaned.find("{", end)
    return found


def validate(value: Any, verdict_schema: Mapping[str, Any]) -> str | None:
    """The first problem of ``value`` against the schema, in words; ``None`` when valid."""
    try:
        return _validate(value, verdict_schema)
    except RecursionError:  # a reply that parsed, but nests too deeply to be walked
        return "the JSON object is nested too deeply to be a verdict"


def _validate(value: Any, verdict_schema: Mapping[str, Any]) -> str | None:
    if value is None:
        return "no JSON object found in the reply"
    found = first_non_finite(value)
    if found is not None:  # json reads NaN and Infinity; NaN passes every minimum
        where, number = found
        return f"{where}: {number!r} is not a finite number"
    import jsonschema  # on first use: it costs a session ~40 ms to import

    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(verdict_schema).iter_errors(value)
    )
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


def rubric_scores(task: JudgeTask, verdict: Mapping[str, Any]) -> dict[str, float]:
    """``rubric.<criterion>`` per criterion and ``rubric``, the weighted mean."""
    scores = {f"rubric.{c}": float(verdict["scores"][c]) for c in sorted(task.criteria)}
    total = sum(task.criteria.values())
    weighted = sum(w * float(verdict["scores"][c]) for c, w in task.criteria.items())
    scores["rubric"] = weighted / total if total else 0.0
    return scores


def agreement(task: JudgeTask, samples: list[dict[str, Any]]) -> float | None:
    """How much J verdicts on one answer agree, 1 = all the same: for a label (When2Call) the
    share of verdicts equal to the most common one; for a rubric 1 minus the spread (max - min)
    of the weighted ``rubric`` score. ``None`` with fewer than two verdicts."""
    if len(samples) < 2:
        return None
    if task.kind == "when2call":
        labels = [str(s.get("classification")) for s in samples]
        return max(labels.count(x) for x in set(labels)) / len(labels)
    values = [rubric_scores(task, s)["rubric"] for s in samples]
    return 1.0 - (max(values) - min(values))
