"""Scoring one case: its transcript checked, scored by its suite, its repeats reduced.

What turns a case and the transcript the dispatcher ran into a :class:`CaseScore`, with no
pytest in sight: :func:`transcript_fault` says whether the transcript can be scored at all (an
infrastructure fault, output that is not valid Unicode), :func:`score_case` scores it (every
repeat, each run's scores finite, the repeat rule over them), and :func:`score_fault` says
whether the scored case is an error all the same (a repeat errored). Each problem is a typed
:class:`RunnerError` whose ``kind`` says whose fault it was.
"""

from __future__ import annotations

from typing import Any

from pytest_llmeval.core.errors import RunnerError
from pytest_llmeval.core.finite import non_finite_scores
from pytest_llmeval.core.models import CaseScore, EvalCase, Transcript
from pytest_llmeval.core.repeats import score_repeats
from pytest_llmeval.inputs.loading import lone_surrogate
from pytest_llmeval.suites.base import Suite, SuiteContext

__all__ = ["score_case", "score_fault", "transcript_fault"]


def transcript_fault(transcript: Transcript) -> RunnerError | None:
    """Why ``transcript`` cannot be scored, or ``None``: the fault its run ended in (its
    kind), or the model's output holding text that is not valid Unicode (``protocol``)."""
    if transcript.error is not None:
        kind: Any = transcript.error_kind or "agent"  # one of RunnerErrorKind
        return RunnerError(_fault_message(transcript), kind=kind)
    invalid = _invalid_unicode(transcript)
    if invalid is not None:
        return RunnerError(invalid, kind="protocol")
    return None


def score_case(
    case: EvalCase,
    transcript: Transcript,
    suite: Suite,
    context: SuiteContext,
    repeat_rule: str,
) -> CaseScore:
    """``suite``'s score of ``case`` from ``transcript``: each run's (every repeat) scored,
    its scores finite, and one verdict by ``repeat_rule`` (``--llmeval-repeat-rule``).

    A run whose scores are not finite raises a ``score`` :class:`RunnerError` (under repeats
    that run's error becomes the verdict's, see :func:`score_fault`)."""
    source = f"the {suite.name} suite"

    def judged(run: Transcript) -> CaseScore:
        """The suite's score of one run, its scores finite (else a ``score`` error)."""
        one = suite.score(case, run, context)
        problem = non_finite_scores(one.scores, source)
        if problem is not None:
            raise RunnerError(problem, kind="score")
        return one

    if transcript.repeats:
        return score_repeats(judged, transcript.repeats, repeat_rule)
    return judged(transcript)


def score_fault(score: CaseScore) -> RunnerError | None:
    """The error of a scored case (a repeat errored: the case is an error, its record kept),
    or ``None``."""
    if score.error is None:
        return None
    kind: Any = score.error_kind or "agent"  # one of RunnerErrorKind
    return RunnerError(score.error, kind=kind)


def _fault_message(transcript: Transcript) -> str:
    """The message of a case whose transcript is a fault: under repeats every run errored
    (a case with a run that did not is scored), and the message says so."""
    assert transcript.error is not None
    runs = len(transcript.repeats)
    if runs > 1:
        return f"{runs} of {runs} repeats errored; repeat 1: {transcript.error}"
    return transcript.error


def _invalid_unicode(transcript: Transcript) -> str | None:
    """What in the model's output is not valid Unicode (a lone surrogate), or ``None``.

    Such text cannot be scored or shown as it is: the case is an error saying so, and the
    reports keep the text escaped (``\\ud800``)."""
    found = lone_surrogate(transcript.response, "response")
    for k, call in enumerate(transcript.tool_calls):
        found = found or lone_surrogate(
            {"name": call.name, "params": call.params, "arguments": call.arguments_error},
            f"tool_calls[{k}]",
        )
    for k, message in enumerate(transcript.messages):
        if message.role == "assistant":
            found = found or lone_surrogate(message.content, f"messages[{k}].content")
    return f"the model's {found[0]} is {found[1]}" if found else None
