"""The data every part of pytest-llmeval exchanges: cases, transcripts, scores, results.

All models are pydantic; everything that crosses a process boundary (xdist, run dir, cassettes)
is JSON through ``model_dump(mode="json")``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import ConfigDict, Field, InstanceOf, PrivateAttr

from pytest_llmeval.core.model_base import Usage, _Model, _Quiet
from pytest_llmeval.core.packed import (
    PACKED_FIELDS,
    SHOWN,
    Packed,
    pack,
    packable,
    shared_containers,
    shared_usage,
    unpack,
)

__all__ = [
    "BfclTask",
    "BudgetSkip",
    "CaseResult",
    "CaseScore",
    "ChoiceTask",
    "EvalCase",
    "JudgeTask",
    "Judgement",
    "Loglik",
    "LoglikRequest",
    "Message",
    "Outcome",
    "Packed",
    "ToolCall",
    "ToolCallRecord",
    "ToolMode",
    "ToolSpec",
    "Transcript",
    "Usage",
    "unpack",
]

Outcome = Literal["passed", "failed", "error", "skipped"]
ToolMode = Literal["broker", "stubs", "routing"]


class ToolSpec(_Quiet):
    """A tool offered to the model, in OpenAI function form."""

    _QUIET = ("extra",)

    name: str
    """The tool's name as the model must call it (``get_weather``, ``web.search``)."""
    description: str = ""
    """What the tool does; models route on it."""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    """JSON schema of the arguments."""
    version: str | None = None
    """The tool's version, when a registry gives one (tool-forge staleness checks)."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Other keys of the function doc, sent beside ``name``, ``description`` and
    ``parameters`` as they are (a BFCL doc's ``response``)."""


class ToolCall(_Model):
    """A tool call the model asked for."""

    id: str = ""
    """The call id the model gave (OpenAI ``tool_call_id``); empty when the model gives none."""
    name: str
    """The tool's name."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The parsed arguments."""
    arguments_error: str | None = None
    """The raw argument text when it was not a JSON object; ``arguments`` is then empty."""


class Message(_Quiet):
    """One chat message."""

    _QUIET = ("raw",)

    role: Literal["system", "user", "assistant", "tool"]
    """Who speaks."""
    content: str | None = None
    """The text; ``None`` for an assistant turn that only calls tools."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Tool calls of an assistant turn."""
    tool_call_id: str | None = None
    """For ``role="tool"``: the call this message answers."""
    name: str | None = None
    """For ``role="tool"``: the tool's name."""
    raw: dict[str, Any] | None = None
    """The message exactly as an OpenAI-compatible runner must send it, when it must go out
    verbatim (a BFCL assistant echo keeps every key the server sent, ``refusal: null``
    included); ``None``: built from the fields above."""


class LoglikRequest(_Model):
    """Score ``continuation`` given ``context`` (lm-eval's loglikelihood request)."""

    context: str
    """The text the model is conditioned on (not scored)."""
    continuation: str
    """The text whose log-probability is summed."""


class Loglik(_Model):
    """The log-likelihood of one :class:`LoglikRequest`'s continuation."""

    logprob_sum: float
    """Sum of the natural-log probabilities of the continuation's tokens."""
    token_count: int
    """How many tokens the continuation was scored over (for per-token normalisation)."""
    is_greedy: bool | None = None
    """Whether every continuation token was the model's top choice; ``None`` when unknown."""
    char_length: int
    """``len(continuation)`` in characters."""
    byte_length: int
    """Length of the continuation in UTF-8 bytes (for per-byte normalisation)."""
    truncated: int | None = None
    """Tokens cut from the left of context + continuation to fit the model's length (lm-eval's
    rule); ``None`` when the backend does not say (an HTTP endpoint)."""


class ToolCallRecord(_Model):
    """What happened to one tool call in a transcript (a superset of tool-forge's record)."""

    name: str
    """The tool's name."""
    params: dict[str, Any] = Field(default_factory=dict)
    """The arguments the model passed, as it passed them."""
    success: bool = True
    """Whether the tool produced a result (``False`` for a fixture miss or a tool error)."""
    duration_ms: float = 0.0
    """Time spent serving the call."""
    result: Any = None
    """The result handed back to the model (``None`` in routing-only mode)."""
    source: Literal["stub", "fixture", "miss", "routing", "endpoint"] = "routing"
    """Where the result came from: a case stub, a fixture file, nothing (a miss), no execution
    (routing-only), or the user's agent endpoint."""
    arguments_error: str | None = None
    """Raw argument text the model sent that was not a JSON object."""


class ChoiceTask(_Model):
    """Multiple choice by log-likelihood: score each continuation of one shared context."""

    context: str
    """The prompt every option continues (not scored)."""
    continuations: list[str]
    """The options as scored text (delimiter included), in the suite's fixed order."""
    fallback: list[Message] | None = None
    """Chat messages asking for the option's number (0, 1, ...), sent to the same runner's
    chat endpoint when the scores are not all finite (audited); ``None``: that is an error."""


class BfclTask(_Model):
    """A BFCL item, run the way the official client runs it (``engine/bfcl_agent.py``): one
    request for a single-turn item, the official turn loop over the simulated backends for a
    multi-turn one."""

    mode: Literal["fc", "prompt"]
    """``fc``: the API's tool calling; ``prompt``: the function docs in the system prompt."""
    item: dict[str, Any]
    """The BFCL item (``suites.bfcl_rows.BfclItem`` as JSON)."""
    _parsed: Any = PrivateAttr(default=None)
    """The suite's model of :attr:`item` when this process built the case (never dumped;
    ``None`` once read back): ``suites.bfcl_conversation.task_item`` reads it."""


class JudgeTask(_Model):
    """What a judge model is asked about a case's answer
    (:mod:`pytest_llmeval.engine.judge_model`)."""

    kind: Literal["rubric", "when2call"]
    """``rubric``: one score in [0, 1] per criterion, and a reason; ``when2call``: which of
    the four behaviours the answer shows (the official LLM-as-judge protocol)."""
    question: str
    """The user's request the answer is for."""
    criteria: dict[str, float] = Field(default_factory=dict)
    """Criterion -> weight (a golden case's ``rubric``)."""
    reference: str | None = None
    """A reference answer the judge may compare with (``expected_output``)."""
    fallback: dict[str, Any] | None = None
    """A verdict applied (and audited) when the judge gives none; ``None``: that is an error."""
    tools: list[str] = Field(default_factory=list)
    """The tools the model was offered, as the dataset gives them (When2Call)."""


class Judgement(_Model):
    """The judge's verdict on one answer, and how it was reached."""

    verdict: dict[str, Any] | None = None
    """The validated verdict (``None`` on a judge error)."""
    stage: Literal["ok", "repaired", "fallback", "error"] = "ok"
    """``ok`` first time, ``repaired`` after the repair turn, ``fallback`` the manifest's
    configured verdict, ``error`` no verdict."""
    error: str | None = None
    usage: Usage = Field(default_factory=Usage)
    """The judge's tokens (reported apart from the model's)."""
    fingerprint: str = ""
    """sha256 of the judge runner's fingerprint and the prompt template."""
    samples: list[dict[str, Any]] = Field(default_factory=list)
    """With ``--llmeval-judge-repeats J``: the J verdicts on this one answer (``verdict`` is
    the first), to tell the judge's variance from the model's."""


class EvalCase(_Quiet):
    """One eval case, whatever suite it comes from."""

    _QUIET = ("bfcl",)

    model_config = ConfigDict(extra="forbid", frozen=True)

    case_id: str
    """Unique within its file; the last part of the node id."""
    suite: str
    """The suite that loaded the case (``golden``, ``toolforge``, ...)."""
    file: str
    """The case file, relative to the rootdir, with ``/`` separators."""
    line: int
    """1-based line where the case starts in ``file``."""
    category: str | None = None
    """Slice for reports and for ``-m`` selection."""
    marks: tuple[str, ...] = ()
    """Markers beyond the suite and the category (``-m branching_error_recovery``)."""
    messages: list[Message] = Field(default_factory=list)
    """The conversation handed to the agent; the last one is usually the user's."""
    tools: list[ToolSpec] = Field(default_factory=list)
    """Tools offered to the model."""
    tool_mode: ToolMode = "broker"
    """``broker``: tool calls are served from fixture files; ``stubs``: from ``stubs`` only;
    ``routing``: tool calls are recorded, never executed, and the loop stops after one turn."""
    stubs: dict[str, Any] = Field(default_factory=dict)
    """Per-case tool results by tool name (tool-forge ``stubs``)."""
    max_turns: int = 5
    """Model calls the agent loop may make."""
    expect: dict[str, Any] = Field(default_factory=dict)
    """What the suite checks, in the suite's own vocabulary."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Everything else the case carried."""
    fingerprint: str = ""
    """sha256 of the case's canonical JSON: aligns results across runs and keys resume."""
    judge: JudgeTask | None = None
    """Set when a judge model scores the answer (a golden ``rubric``)."""
    similarity_reference: str | None = None
    """Set when the answer's ``semantic_similarity`` to this text is scored."""
    choices: ChoiceTask | None = None
    """Set when the case is scored by log-likelihood instead of generation (When2Call
    ``mcq-loglik``): the agent asks the runner to score these continuations."""
    bfcl: BfclTask | None = None
    """Set for a BFCL item: the agent runs the official conversation instead of its own loop
    and keeps every reply as the server sent it (:attr:`Transcript.replies`)."""
    skip_reason: str | None = None
    """Set when the case cannot run at all (a tool-forge case without ``input.message``)."""

    @property
    def row_file(self) -> str:
        """The file of the case's row, as messages name it: :attr:`file`, or a BFCL item's
        ``BFCL_v4_<category>.json`` (its :attr:`file` is the data folder)."""
        path = self.bfcl.item.get("path") if self.bfcl is not None else None
        return path if isinstance(path, str) and path else self.file

    @property
    def user_message(self) -> str:
        """The last user message's text ('' when there is none)."""
        for message in reversed(self.messages):
            if message.role == "user":
                return message.content or ""
        return ""


class Transcript(_Quiet):
    """Everything that happened while an agent ran one case."""

    _QUIET = ("replies",)

    messages: list[Message] = Field(default_factory=list)
    """The whole conversation, input included."""
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    """Every tool call in call order, with its result."""
    response: str = ""
    """The agent's final text."""
    turns: int = 0
    """Model calls made."""
    stop_reason: Literal["final", "max_turns", "routing", "endpoint", "error"] = "final"
    """Why the loop ended."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens used over all model calls."""
    duration_ms: float = 0.0
    """Wall time of the case as the user perceives it (an endpoint's own figure when given)."""
    fixture_hits: int = 0
    """Tool calls the broker answered from a stub or fixture."""
    fixture_misses: int = 0
    """Tool calls the broker could not answer."""
    error: str | None = None
    """An infrastructure fault that kept the case from finishing (timeout, HTTP, protocol)."""
    error_kind: str | None = None
    """The fault's kind (``timeout``, ``http``, ``protocol``, ``cassette``, ...)."""
    events: list[dict[str, Any]] = Field(default_factory=list)
    """The case's event stream (model calls, tool calls, what the agent emitted)."""
    logliks: list[Loglik] = Field(default_factory=list)
    """For a :class:`ChoiceTask` case: one score per continuation, in order."""
    judgement: Judgement | None = None
    """For a case with a :class:`JudgeTask`: the judge's verdict."""
    measures: dict[str, float] = Field(default_factory=dict)
    """Scores measured by a service after the agent (``semantic_similarity``)."""
    embedding_usage: Usage = Field(default_factory=Usage)
    """Tokens the embeddings endpoint used for ``measures`` (none from the cache)."""
    replies: list[list[dict[str, Any]]] = Field(default_factory=list)
    """For a :class:`BfclTask` case: per turn, each model reply's message as the server sent
    it (``choices[0].message``; rebuilt from the completion for a runner that gives none)."""
    repeats: list[Transcript] = Field(default_factory=list)
    """With ``--llmeval-repeats K``: the K runs in repeat order (this transcript's own fields
    are those of the first run that did not fail)."""


class CaseScore(_Model):
    """A suite's verdict on one transcript."""

    passed: bool
    """Whether the case met its expectations."""
    scores: dict[str, float] = Field(default_factory=dict)
    """Named per-case metrics (``exact_match``, ``assertions_run``, ...)."""
    failure: str | None = None
    """The first failure, short, as ``field: expected ..., got ...``."""
    details: dict[str, Any] = Field(default_factory=dict)
    """Anything the suite's aggregate or report needs later (JSON-safe)."""
    skipped: str | None = None
    """Why the case was not judged at all (it then counts as skipped)."""
    repeats: dict[str, Any] | None = None
    """With repeats: :func:`pytest_llmeval.core.repeats.summary` of the runs."""
    error: str | None = None
    """Why the case is an error although it was scored (one of its repeats errored); the
    other fields are kept for its record (the runs that were judged, their scores)."""
    error_kind: str | None = None
    """The error's kind, as :attr:`Transcript.error_kind` (``cassette``, ``score``, ...)."""


@dataclass(frozen=True, slots=True)
class BudgetSkip:
    """Why a case was skipped: a spent budget (``--llmeval-max-tokens-total``,
    ``--llmeval-max-cost``). Such a skip is not a verdict: ``--llmeval-resume`` runs the case.

    A result keeps it as its skip reason, ``str(skip)``: ``budget reached: <spent> of
    <limit>``; :meth:`of` reads it back from a result's ``outcome`` and ``error``.
    """

    spent: str
    """What the session had spent (``12,345 tokens``, ``$0.1234``)."""
    limit: str
    """The limit it reached (``--llmeval-max-cost=0.1``, or an xdist worker's share of it)."""

    PREFIX: ClassVar[str] = "budget reached: "

    def __str__(self) -> str:
        return f"{self.PREFIX}{self.spent} of {self.limit}"

    @classmethod
    def of(cls, outcome: object, error: object) -> BudgetSkip | None:
        """The budget skip a result's ``outcome`` and ``error`` record, else ``None``."""
        if outcome != "skipped" or not isinstance(error, str) or not error.startswith(cls.PREFIX):
            return None
        spent, _, limit = error[len(cls.PREFIX) :].partition(" of ")
        return cls(spent, limit)


class CaseResult(_Model):
    """The record of one case in ``results.jsonl``; travels from xdist workers on the report."""

    case_id: str
    suite: str
    file: str
    line: int
    nodeid: str
    category: str | None = None
    outcome: Outcome
    """``passed``, ``failed``, ``error`` (could not be judged) or ``skipped``."""
    xfailed: bool = False
    """The case missed under a manifest's ``misses: xfail``: pytest's expected failure, which
    does not fail the session (``merge`` and ``summarize`` exit as the session did)."""
    passed: bool
    error: str | None = None
    """The first failure or error message, or null."""
    phase: str | None = None
    """For an error: the phase it happened in (``setup``, ``call``); in ``errors.jsonl``."""
    traceback: str | None = None
    """For an error: its traceback, redacted; in ``errors.jsonl``, not ``results.jsonl``."""
    scores: dict[str, float] = Field(default_factory=dict)
    case_fingerprint: str = ""
    runner_fingerprint: str = ""
    """sha256 of the fingerprint of the runner or agent that produced the transcript."""
    duration_ms: float = 0.0
    input: Annotated[list[dict[str, Any]] | InstanceOf[Packed] | None, SHOWN] = None
    """The case's input as the agent received it, in shown messages (see ``transcript``); a
    case scored by log-likelihood adds ``{"role": "context", ...}`` and one ``{"role":
    "option", ...}`` per continuation. ``None`` when the case never ran."""
    expected: Annotated[dict[str, Any] | InstanceOf[Packed] | None, SHOWN] = None
    """What the suite checks the answer against, in the suite's own words (golden
    ``expected_output``/``keywords``/``thresholds``, tool-forge assertions, a When2Call
    ``label``, a GAIA ``final_answer``, an integration item's ``call_sequence``); empty values
    are left out, and a value whose JSON is long becomes that text, clipped. ``None`` when
    there is nothing to show."""
    transcript: Annotated[list[dict[str, Any]] | InstanceOf[Packed] | None, SHOWN] = None
    """The messages after the input (the whole conversation when the agent did not start from
    the input): ``{"role", "content", "tool_calls": [{"id", "name", "arguments",
    "arguments_error"}], "tool_call_id", "name"}``, unset keys left out; a ``role: "tool"``
    message's ``content`` is the tool result handed to the model. Texts are clipped
    (:mod:`pytest_llmeval.core.clip`), and a long conversation keeps its first and last messages
    around one ``{"omitted": N}``. ``None`` when nothing was exchanged."""
    response: str = ""
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    """The model's tokens over every run of the case (all its repeats); the judge's are in
    ``details.judge.usage`` (every verdict, every repeat). Budgets and totals count both."""
    fixture_hits: int = 0
    fixture_misses: int = 0
    details: dict[str, Any] = Field(default_factory=dict)
    repeats: dict[str, Any] | None = None
    """With repeats: ``n``, ``passed``, ``errors``, ``pass_rate``, ``low``, ``high``,
    ``outcomes``, ``flaky``."""
    events: Annotated[list[dict[str, Any]] | InstanceOf[Packed], SHOWN] = Field(
        default_factory=list
    )
    """The case's event stream; written to ``events.jsonl``, not to ``results.jsonl``."""

    @property
    def budget_skip(self) -> BudgetSkip | None:
        """Why a spent budget skipped this case, or ``None`` (it was not)."""
        return BudgetSkip.of(self.outcome, self.error)

    @classmethod
    def kept(cls, data: Any) -> CaseResult:
        """A result validated from ``data`` (a dump of one), to be held until the session ends.

        pydantic gives every instance its own set of the field names it was given: for a full
        dump that is all 23, a 2.2 KB hash table, more than half of the instance. A session
        holding 100,000 results shares one such set instead (it holds every name, so nothing
        pydantic may add to it changes it; a copy gets a set of its own). ``input``,
        ``expected``, ``transcript`` and ``events`` are held as compact JSON (:class:`Packed`,
        a tenth of the dicts' size, and no containers for the garbage collector to walk;
        equal ones once): they are only read to be written, through :func:`unpack` or a
        dump. Texts that repeat over results (suite, file, runner fingerprint ...) and equal
        token counts are held once.
        """
        if isinstance(data, dict):  # packed first: JSON values need no validating to be held
            packed = {name: pack(data[name]) for name in PACKED_FIELDS if packable(data, name)}
            data = {**data, **packed} if packed else data
        return cls.model_validate(data)._held()

    @classmethod
    def kept_as(cls, model: CaseResult, data: dict[str, Any]) -> CaseResult:
        """:meth:`kept` of ``data``, given the model it is the dump of (``data`` equals
        ``model.model_dump(mode="json")`` but for ``runner_fingerprint``): the model is copied
        instead of validated again. The fields typed ``Any`` inside (``details``, ``repeats``,
        the tool calls' arguments) are taken from ``data``, as :meth:`kept` holds them."""
        update: dict[str, Any] = {
            name: pack(data[name]) for name in PACKED_FIELDS if packable(data, name)
        }
        for name in ("runner_fingerprint", "details", "repeats"):
            update[name] = data[name]
        if data["tool_calls"]:
            update["tool_calls"] = [ToolCallRecord.model_validate(c) for c in data["tool_calls"]]
        held = model.model_copy(update=update)._held()
        object.__setattr__(held, "__pydantic_fields_set__", _EVERY_RESULT_FIELD)  # a full dump
        return held

    def _held(self) -> CaseResult:
        """This result, made compact to be held to the session's end (see :meth:`kept`)."""
        result = self
        fields = result.__dict__
        for name in PACKED_FIELDS:
            value = fields[name]
            if value is not None and not isinstance(value, Packed):
                fields[name] = pack(value)
        for name in _SHARED_TEXTS:  # the same few texts in every result: each held once
            value = fields[name]
            if type(value) is str:
                fields[name] = sys.intern(value)
        fields["usage"] = shared_usage(fields["usage"])
        shared_containers(fields)
        if result.model_fields_set == _EVERY_RESULT_FIELD:  # equal: the shared one instead
            object.__setattr__(result, "__pydantic_fields_set__", _EVERY_RESULT_FIELD)
        return result


_EVERY_RESULT_FIELD: set[str] = set(CaseResult.model_fields)
_SHARED_TEXTS = ("suite", "file", "category", "outcome", "runner_fingerprint")
"""Fields whose few distinct values repeat over a session's results."""
