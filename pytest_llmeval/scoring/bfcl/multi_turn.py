"""The official multi-turn checker: an item's transcript against its ground truth, by execution.

What is compared (the official ``multi_turn_checker``), after the turn count:

1. The transcript must have as many turns as the ground truth; otherwise the item was cut
   short (or ran long) and fails as ``multi_turn:force_terminated``.
2. Every call step of every turn is run again, in order, on a fresh set of backends; each
   turn's ground-truth calls run on a second fresh set. Steps that did not decode, or decoded
   to no calls, are left out.
3. For each turn whose ground truth is not empty:

   * the model's turn must have a call step (``multi_turn:empty_turn_model_response``);
   * **state**: every public attribute (name not starting with ``_``) of each ground-truth
     instance must equal the model instance's (``multi_turn:instance_state_mismatch``);
   * **responses**: each ground-truth result must appear among *all* the model's results so
     far, across turns, as a multiset (``multi_turn:execution_response_mismatch``).

   Turns whose ground truth is empty are run but not checked. So doing a later turn's calls
   early fails that later turn (the state moved on), doing them twice can pass, and an extra
   call that draws from a backend's seeded RNG changes later results and fails.

Instances are never reused: each scoring builds its own (the official code keeps them in a
module global keyed by model name and item, so scoring twice under one name goes wrong).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pytest_llmeval.scoring.bfcl.calls import Verdict
from pytest_llmeval.tools.bfcl_backends import is_long_context, new_instances
from pytest_llmeval.tools.bfcl_execute import BackendSession

__all__ = [
    "DEFAULT_MODEL_LABEL",
    "MAXIMUM_STEP_LIMIT",
    "CallStep",
    "MultiTurnItem",
    "MultiTurnTranscript",
    "TurnTranscript",
    "check_multi_turn",
    "new_session",
    "score_multi_turn",
]

MAXIMUM_STEP_LIMIT = 20
"""Call steps one turn may take; the official client force-terminates the item on the next."""

DEFAULT_MODEL_LABEL = "model"
"""The model name written into the backends' global names when none is given (it only shows
where a call's text names a backend method inside a string)."""


class MultiTurnItem(BaseModel):
    """What the loop and the checker read from a multi-turn data row."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str
    """The BFCL id (``multi_turn_base_0``); its category part picks ``long_context``."""
    question: list[list[dict[str, Any]]]
    """The user messages of each turn (a held-out turn of ``miss_func`` is empty)."""
    initial_config: dict[str, Any] = Field(default_factory=dict)
    """Each backend's starting state, by class name."""
    involved_classes: list[str]
    """The backends the item uses, in order (later classes own a shared method name)."""
    missed_function: dict[str, Any] = Field(default_factory=dict)
    """``miss_func``: turn index (as text) → the functions held out until that turn."""


class CallStep(BaseModel):
    """One model reply within a turn."""

    model_config = ConfigDict(frozen=True)

    calls: list[str]
    """The reply's calls as the official executor's text (empty when it had none)."""
    results: list[str] = Field(default_factory=list)
    """Each call's official result text, in order (empty when nothing ran)."""
    executed: bool
    """Whether the calls ran; a reply that did not decode or had no calls ends the turn."""
    error: str | None = None
    """Why the reply did not decode, if it did not."""


class TurnTranscript(BaseModel):
    """One turn: the model's replies in order."""

    model_config = ConfigDict(frozen=True)

    steps: list[CallStep]
    """Every reply of the turn, the one that ended it included."""
    force_terminated: bool = False
    """Whether the turn hit the step limit (the item stops after it)."""


class MultiTurnTranscript(BaseModel):
    """What the multi-turn loop produced for one item."""

    model_config = ConfigDict(frozen=True)

    turns: list[TurnTranscript]
    """The turns asked, in order (fewer than the item's when force-terminated)."""

    @property
    def force_terminated(self) -> bool:
        """Whether the step limit stopped the item."""
        return any(turn.force_terminated for turn in self.turns)

    def decoded(self) -> list[list[list[str]]]:
        """Per turn, the call texts of each step that ran (the official checker's input)."""
        return [[step.calls for step in turn.steps if step.executed] for turn in self.turns]


def new_session(item: MultiTurnItem, label: str) -> BackendSession:
    """A fresh set of the item's backends, loaded with its initial state."""
    instances = new_instances(
        item.involved_classes, item.initial_config, long_context=is_long_context(item.id)
    )
    return BackendSession(instances, label=label, entry_id=item.id)


def score_multi_turn(
    item: MultiTurnItem,
    ground_truth: list[list[str]],
    transcript: MultiTurnTranscript,
    *,
    model_name: str = DEFAULT_MODEL_LABEL,
) -> Verdict:
    """The official verdict for one multi-turn item (module docstring)."""
    if len(transcript.turns) != len(ground_truth):
        return Verdict.fail(
            "multi_turn:force_terminated",
            "Model was force-terminated during inference phase. The length of the model "
            f"result turns ({len(transcript.turns)}) does not match the length of the ground "
            f"truth turns ({len(ground_truth)}).",
        )
    return check_multi_turn(item, ground_truth, transcript.decoded(), model_name=model_name)


def check_multi_turn(
    item: MultiTurnItem,
    ground_truth: list[list[str]],
    decoded: list[list[list[str]]],
    *,
    model_name: str = DEFAULT_MODEL_LABEL,
) -> Verdict:
    """Steps 2 and 3 of the module docstring, for turns of equal count."""
    model = new_session(item, f"{model_name}_eval")
    truth = new_session(item, f"{model_name}_ground_truth_eval")
    so_far: list[str] = []
    for turn_index, expected in enumerate(ground_truth):
        steps = decoded[turn_index]
        for step in steps:
            so_far.extend(result.text for result in model.execute(step))
        expected_results = [result.text for result in truth.execute(expected)]
        if not expected:
            continue
        if not steps or (len(steps) == 1 and not steps[0]):
            return Verdict.fail(
                "multi_turn:empty_turn_model_response",
                f"Model response list is empty for turn {turn_index}",
            )
        for class_name, truth_instance in truth.instances.items():
            if not _same_state(model.instances[class_name], truth_instance):
                return Verdict.fail(
                    "multi_turn:instance_state_mismatch",
                    f"Model instance for {class_name} does not match the state with ground "
                    "truth instance.",
                )
        if _missing(expected_results, so_far):
            return Verdict.fail(
                "multi_turn:execution_response_mismatch",
                "Model response execution results so far does not contain all the ground "
                f"truth response execution results for turn {turn_index}.",
            )
    return Verdict.ok()


def _same_state(model: object, truth: object) -> bool:
    """Every public attribute of the ground-truth instance equals the model instance's."""
    missing = object()
    for name, expected in vars(truth).items():
        if name.startswith("_"):
            continue
        actual = getattr(model, name, missing)
        if actual is missing or actual != expected:
            return False
    return True


def _missing(expected: list[str], actual: list[str]) -> list[str]:
    """The expected results not found in ``actual``, each match used once."""
    pool = list(actual)
    missing = []
    for result in expected:
        try:
            pool.remove(result)
        except ValueError:
            missing.append(result)
    return missing
