"""Everything that crosses the xdist boundary, typed, under one key each way.

xdist hands a worker its ``workerinput`` when it starts, takes back its ``workeroutput`` when
it ends, and serializes every test report it sends the controller (pytest's
``_report_to_json`` keeps a report's plain attributes). This plugin puts one value in each:

* :class:`WorkerInput` (controller → worker, ``workerinput["llmeval"]``): where the run dir
  is, the limits server, the ``--dist`` mode, the running-marks folder, whether the controller
  schedules by hash;
* :class:`WorkerOutput` (worker → controller, ``workeroutput["llmeval"]``): what a worker
  found that the controller, which collects nothing, must know;
* :class:`ReportFacts` (on a report, ``report.llmeval``): facts about one case's report.

Nothing else of the plugin reads or writes ``workerinput``, ``workeroutput`` or a report's
attributes; :func:`is_worker` is the one test of a process's role.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

import pytest
from pydantic import BaseModel, PrivateAttr, ValidationError

from pytest_llmeval.core.held_once import HeldOnce

__all__ = [
    "Changed",
    "ReportFacts",
    "WorkerInput",
    "WorkerOutput",
    "add_facts",
    "facts",
    "is_worker",
    "node_output",
    "worker_count",
    "worker_id",
    "worker_input",
    "worker_output",
]

KEY = "llmeval"
"""The one key of this plugin in ``workerinput``, ``workeroutput`` and a report's attributes."""


def is_worker(config: pytest.Config) -> bool:
    """Whether this process is an xdist worker (its controller runs the session)."""
    return hasattr(config, "workerinput")


def worker_id(config: pytest.Config) -> str | None:
    """xdist's id of this worker (``gw0``), or ``None`` outside a worker."""
    workerinput = getattr(config, "workerinput", None)
    found = workerinput.get("workerid") if workerinput is not None else None
    return str(found) if found is not None else None


def worker_count(config: pytest.Config) -> int:
    """How many workers xdist started (1 outside a worker)."""
    workerinput = getattr(config, "workerinput", None)
    return int(workerinput.get("workercount", 1)) if workerinput is not None else 1


# -- controller -> worker --------------------------------------------------------------------


class WorkerInput(BaseModel):
    """What the controller tells each worker as it starts."""

    run_dir: str
    run_id: str
    attempt: int
    limits: tuple[str, str] | None = None
    """The address and token of the controller's limits server (limits, a breaker or a
    budget are set)."""
    dist: str = "no"
    """The controller's ``--dist`` mode (xdist sets a worker's own to ``no``)."""
    running_marks: str | None = None
    """The controller's folder of running marks."""
    hash_scheduling: bool = False
    """Whether the controller feeds the workers with the hash scheduler."""

    def hand_to(self, workerinput: dict[str, Any]) -> None:
        workerinput[KEY] = self.model_dump(mode="json")


def worker_input(config: pytest.Config) -> WorkerInput | None:
    """What the controller told this worker, or ``None`` (not a worker, or an xdist that
    started it without this plugin's hook)."""
    workerinput = getattr(config, "workerinput", None)
    sent = workerinput.get(KEY) if workerinput is not None else None
    return WorkerInput.model_validate(sent) if sent is not None else None


# -- worker -> controller --------------------------------------------------------------------


class Changed(BaseModel):
    """The cases that changed since the interrupted run a worker resumes."""

    nodeids: list[str]
    compared: int


class WorkerOutput(BaseModel):
    """What a worker tells its controller. Every field set is written through to
    ``workeroutput`` at once (a worker that dies later has said it); set a whole value,
    never change one in place."""

    refusal: str | None = None
    """Why the worker refused the resume (the session stops)."""
    changed: Changed | None = None
    datasets: dict[str, str] = {}
    """Each data file's hash as collected."""
    left_out: dict[str, int] = {}
    """Folders with their own pytest root, and how many eval files of each were left out."""
    deselected: dict[str, int] = {}
    """Eval cases deselected, by suite."""
    manifests: list[str] = []
    """The manifests of every eval item collected."""
    stop_reason: str | None = None
    """Why the worker's session stopped early."""

    _sink: dict[str, Any] | None = PrivateAttr(default=None)

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if not name.startswith("_") and self._sink is not None:
            self._sink[KEY] = self.model_dump(mode="json")


_output_key = pytest.StashKey[WorkerOutput]()


def worker_output(config: pytest.Config) -> WorkerOutput:
    """This worker's output, one per process. Outside a worker it goes nowhere, so a part of
    the plugin that tells the controller something writes it in every process alike."""
    found = config.stash.get(_output_key, None)
    if found is None:
        found = config.stash[_output_key] = WorkerOutput()
        found._sink = getattr(config, "workeroutput", None)
    return found


def node_output(node: Any) -> WorkerOutput | None:
    """The controller: what the worker ``node`` said (``None``: nothing, or a worker that
    died before it said anything readable)."""
    sent = getattr(node, "workeroutput", {}).get(KEY)
    if not isinstance(sent, dict):
        return None
    try:
        return WorkerOutput.model_validate(sent)
    except ValidationError:  # a field another plugin spoiled: every readable one still counts
        kept = {}
        for name, value in sent.items():
            try:
                WorkerOutput.model_validate({name: value})
            except ValidationError:
                continue
            kept[name] = value
        return WorkerOutput.model_validate(kept)


# -- reports -------------------------------------------------------------------------------


class ReportFacts(TypedDict, total=False):
    """Facts about one report, carried to the controller on it."""

    refusal: str
    """The session refused (a resume of another runner): the controller stops."""
    unjournaled: str
    """This process's journal stopped: why, in one line."""
    in_flight: int
    """The agents in flight in the process that made the report."""
    scored_error: bool
    """The case errored while it was scored."""
    usage_error: str
    """A worker's configuration error (on a failed collect report)."""


def facts(report: object) -> ReportFacts:
    """The facts ``report`` carries (none: an empty mapping)."""
    found = getattr(report, KEY, None)
    return cast(ReportFacts, found) if isinstance(found, dict) else ReportFacts()


def add_facts(report: object, new: ReportFacts) -> None:
    """Add ``new`` to the facts ``report`` carries (never changing the dict it carried)."""
    found = getattr(report, KEY, None)
    merged = {**found, **new} if isinstance(found, dict) else dict(new)
    setattr(report, KEY, _shared(cast(ReportFacts, merged)))


_SHARED_FACTS: HeldOnce[tuple[tuple[str, object], ...], ReportFacts] = HeldOnce(1024)
"""Facts given to reports before: the terminal reporter keeps every report to the end, and
nearly every teardown report carries only its process's agents in flight, a few values."""


def _shared(found: ReportFacts) -> ReportFacts:
    """``found``, or an equal dict given to a report before (facts are never changed in
    place: :func:`add_facts` replaces them); a fact with a text is its report's own."""
    if not all(isinstance(value, (int, bool)) for value in found.values()):
        return found
    return _SHARED_FACTS.held(tuple(sorted(found.items())), found)
