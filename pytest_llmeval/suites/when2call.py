"""The When2Call suite: should the model answer, call a tool, ask, or decline?

Rows are the upstream files as they are (``uuid``, ``question``, ``answers`` with the four
candidate responses, ``correct_answer``, ``tools`` as JSON strings). One row is one case;
the case id is its ``uuid`` and its category (so its ``-m`` marker) is ``correct_answer``. A
manifest chooses the protocol::

    suite: when2call
    data: data/when2call_test_llm_judge.jsonl
    protocol: mcq-loglik     # mcq-loglik (default) | mcq-string | judge
    prompt_format: default   # default | hermes | qwen2_5 | llama3_2 | xlam | functionary
                             # | harmony (extension) | auto (from the model's name)
    score: acc_norm          # acc_norm (default) | acc | acc_bytes | acc_tokens
    target_delimiter: ""     # between the prompt and each option, as the official YAML
    judge_fallback: cannot_answer   # judge only: the label of a judge reply left unreadable
    loglik_fallback: mcq-string     # mcq-loglik only: ask non-finite scores in chat

Without a manifest, a file whose rows have that shape is claimed with these defaults.

* **mcq-loglik** (the official protocol, lm-evaluation-harness's multiple choice): the four
  options, always in the order :data:`LABELS`, are scored as continuations of the format's
  prompt (:mod:`~pytest_llmeval.suites.when2call_prompts`) by the runner's
  ``loglikelihood``. ``acc`` takes the arg-max of the summed log-likelihoods; ``acc_norm``
  of LL / option length in characters (lm-eval's ``acc_norm``); first index on ties. Named
  extensions: ``acc_bytes`` (UTF-8 bytes) and ``acc_tokens`` (continuation tokens). A case
  whose four scores are not all finite and at most 0 (a log-probability) is an error, never
  a pick, unless ``loglik_fallback: mcq-string``: the question is then asked through the
  mcq-string messages on the same runner's chat endpoint, and that label is every rule's
  pick (audited, counted in ``fallbacks.mcq_string``; a reply without a digit is
  ``unparsed``).
* **mcq-string** (an extension from the third-party API suite): a chat prompt lists the
  options as 0-3; the first digit 0-3 of the reply is the choice, and a reply without one is
  ``unparsed`` (counted; the case fails; the reply is kept).
* **judge** (the official LLM-as-judge protocol; needs ``--llmeval-judge-runner``): the model
  answers the bare question with the row's tools offered natively (rewritten as the official
  generation rewrites them); its first tool call (as ``{name, arguments}``) or its text goes to
  the judge, which classifies it as ``direct_answer``, ``tool_call``, ``request_for_info`` or
  ``cannot_answer`` (``direct_answer`` is the suite's ``direct``). With
  ``judge_fallback: cannot_answer``, a judge reply still unreadable after the repair turn is
  labelled ``cannot_answer`` (audited, counted in ``fallbacks.judge``); a judge that cannot be
  reached stays an error.

``prompt_format: auto`` picks the format from the model's name
(:mod:`~pytest_llmeval.suites.when2call_routing`): ``--llmeval-model``, else the ``model`` the
plugin's runner's fingerprint names (:attr:`SuiteContext.runner_model`; ``default`` when it
names none); the chosen one is in every case's metadata and fingerprint.

A case passes iff the prediction of the ``score`` rule is the gold label. Dataset metrics are
in :mod:`~pytest_llmeval.suites.when2call_metrics`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal, cast

from pydantic import BaseModel, ConfigDict, ValidationError

from pytest_llmeval.core.errors import CaseFileError, ConfigError
from pytest_llmeval.core.models import (
    CaseResult,
    CaseScore,
    ChoiceTask,
    EvalCase,
    JudgeTask,
    Message,
    ToolSpec,
    Transcript,
)
from pytest_llmeval.inputs.manifest import COMMON_OPTIONS
from pytest_llmeval.inputs.unique_keys import unique_object
from pytest_llmeval.suites.base import (
    AbsentMetrics,
    CaseSource,
    LoadItem,
    SuiteBase,
    SuiteContext,
    artifact_name,
    display_stem,
    row_fingerprint,
)
from pytest_llmeval.suites.fields import RowReader
from pytest_llmeval.suites.row_reading import head_rows, iter_cases, read_records
from pytest_llmeval.suites.when2call_harmony import load_encoding
from pytest_llmeval.suites.when2call_metrics import (
    LABELS,
    When2CallSection,
    aggregate,
    console,
    markdown,
)
from pytest_llmeval.suites.when2call_prompts import (
    ALL_FORMATS,
    PromptFormat,
    build_prompt,
    tool_call_option,
)
from pytest_llmeval.suites.when2call_routing import model_stem, route
from pytest_llmeval.suites.when2call_scoring import score_judged, score_loglik, score_string

Protocol = Literal["mcq-loglik", "mcq-string", "judge"]
ScoreRule = Literal["acc_norm", "acc", "acc_bytes", "acc_tokens"]
PROTOCOLS: tuple[Protocol, ...] = ("mcq-loglik", "mcq-string", "judge")
SCORE_RULES: tuple[ScoreRule, ...] = ("acc_norm", "acc", "acc_bytes", "acc_tokens")
OPTIONS = (
    "protocol",
    "prompt_format",
    "score",
    "target_delimiter",
    "judge_fallback",
    "loglik_fallback",
)
"""When2Call's own manifest options, besides the keys every suite takes
(:data:`pytest_llmeval.inputs.manifest.COMMON_OPTIONS`)."""

MCQ_STRING_SYSTEM = (
    "You judge how an AI assistant should respond to a user, given the tools it can use. "
    "Read the assistant's prompt and the candidate responses, then pick the most appropriate "
    "response. Reply with its number only: one digit, 0, 1, 2 or 3."
)
"""The system message of the mcq-string protocol (this project's text, not the official's)."""


class When2CallOptions(BaseModel):
    """The manifest's options (the defaults are the official default task)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    protocol: Protocol = "mcq-loglik"
    """Which protocol scores the cases."""
    prompt_format: PromptFormat | Literal["auto"] = "default"
    """The prompt format; ``auto``: picked from the model's name (resolved by
    :func:`read_options` from ``--llmeval-model``, else by :func:`resolve_auto` from the
    runner's fingerprint)."""
    score: ScoreRule = "acc_norm"
    """The prediction rule that decides pass or fail."""
    target_delimiter: str = ""
    """Between the prompt and each option."""
    judge_fallback: Literal["cannot_answer"] | None = None
    """``judge``: the label of a judge reply still unreadable after the repair turn (audited);
    ``None``: that reply is the case's judge error."""
    loglik_fallback: Literal["mcq-string"] | None = None
    """``mcq-loglik``: scores not all finite are asked through the mcq-string messages on the
    same runner's chat endpoint (audited); ``None``: they are the case's error."""

    def fingerprinted(self) -> dict[str, Any]:
        """The options as the case fingerprint takes them (an unset fallback left out, so
        fingerprints from before the fallbacks existed still hold)."""
        return self.model_dump(mode="json", exclude_none=True)


def read_options(
    source: CaseSource, judged: bool = False, model: str | None = None
) -> When2CallOptions:
    """The manifest's When2Call options, ``prompt_format: auto`` resolved from ``model``
    (``--llmeval-model``) when it is given (else left ``auto``, for :func:`resolve_auto` once
    the runner is known); a problem is one error naming the option. ``judged``: whether the
    session has a judge (``--llmeval-judge-runner``)."""
    given = {k: v for k, v in source.options.items() if k not in COMMON_OPTIONS}
    for key in given:
        if key not in OPTIONS:
            known = ", ".join(OPTIONS)
            raise _option_error(source, key, f"unknown option; When2Call options are {known}")
    try:
        options = When2CallOptions.model_validate(given)
    except ValidationError as exc:
        problem = exc.errors()[0]
        key = str(problem["loc"][0]) if problem["loc"] else "options"
        allowed = {
            "protocol": PROTOCOLS,
            "prompt_format": (*ALL_FORMATS, "auto"),
            "score": SCORE_RULES,
            "judge_fallback": ("cannot_answer",),
            "loglik_fallback": ("mcq-string",),
        }
        if key in allowed:
            message = f"expected one of {', '.join(allowed[key])}, got {given.get(key)!r}"
        else:
            message = problem["msg"]
        raise _option_error(source, key, message) from None
    if options.protocol == "judge" and not judged:
        raise _option_error(
            source,
            "protocol",
            "the LLM-as-judge protocol needs a judge model: give --llmeval-judge-runner NAME "
            "(and --llmeval-judge-model, --llmeval-judge-base-url as it needs)",
        )
    if options.protocol in ("mcq-string", "judge") and given.get("score", "acc") != "acc":
        raise _option_error(
            source, "score", f"{options.protocol} picks one label per case: only acc applies"
        )
    if options.judge_fallback is not None and options.protocol != "judge":
        raise _option_error(source, "judge_fallback", "applies to protocol: judge only")
    if options.loglik_fallback is not None and options.protocol != "mcq-loglik":
        raise _option_error(source, "loglik_fallback", "applies to protocol: mcq-loglik only")
    if options.prompt_format == "auto" and model is not None:
        if not model_stem(model):
            raise _option_error(
                source,
                "prompt_format",
                f"auto picks the format from the model's name, and --llmeval-model {model!r} "
                "names none: give a model name, or name the format",
            )
        options = options.model_copy(update={"prompt_format": route(model)})
    _check_format(source, options)
    return options


def resolve_auto(
    source: CaseSource, options: When2CallOptions, runner_model: str | None
) -> When2CallOptions:
    """``options`` with a ``prompt_format: auto`` that ``--llmeval-model`` did not settle
    resolved from the model the runner's fingerprint names (``runner_model``): its route, or
    ``default`` when it names none."""
    if options.prompt_format != "auto":
        return options
    name = runner_model if runner_model and model_stem(runner_model) else None
    resolved = options.model_copy(update={"prompt_format": route(name) if name else "default"})
    _check_format(source, resolved)
    return resolved


def _check_format(source: CaseSource, options: When2CallOptions) -> None:
    """A format that cannot be rendered here (``harmony`` without its library or vocabulary)
    is one error naming the option."""
    if options.prompt_format == "harmony":
        try:
            load_encoding()
        except ConfigError as exc:
            raise _option_error(source, "prompt_format", str(exc)) from None


def _settled(
    source: CaseSource, options: When2CallOptions, ctx: SuiteContext
) -> Callable[[], When2CallOptions]:
    """The file's options as its cases are built: an ``auto`` that ``--llmeval-model`` left
    open is resolved from the model the plugin's runner names, once, at the first case built
    (the plugin sets :attr:`SuiteContext.runner_model` before any case is built)."""
    if options.prompt_format != "auto":
        return lambda: options
    return functools.cache(lambda: resolve_auto(source, options, ctx.runner_model))


def _option_error(source: CaseSource, key: str, message: str) -> CaseFileError:
    return CaseFileError(source.display, None, message, field=f"manifest option {key}")


class When2CallSuite(SuiteBase):
    """NVIDIA When2Call test files (``when2call_test_llm_judge.jsonl``, ``..._mcq.jsonl``)."""

    name = "when2call"
    section_model = When2CallSection
    manifest_options: ClassVar[dict[str, dict[str, Any]]] = {key: {} for key in OPTIONS}
    """Its manifest options; :func:`read_options` checks their values."""

    def claims(self, path: Path, head: bytes) -> bool:
        return any(_when2call_shaped(row) for row in head_rows(path, head))

    def absent_metrics(self, options: Mapping[str, Any]) -> AbsentMetrics | None:
        """mcq-string and judge pick one label per case: only ``acc`` of the four rules."""
        protocol = options.get("protocol", "mcq-loglik")
        if protocol not in ("mcq-string", "judge"):
            return None
        rules = [rule for rule in SCORE_RULES if rule != "acc"]
        return AbsentMetrics(
            setting=f"protocol: {protocol}",
            metrics=frozenset(rules + [f"{rule}_stderr" for rule in rules]),
            fix="gate on acc (one pick per case), or use protocol: mcq-loglik",
        )

    def load(self, source: CaseSource, ctx: SuiteContext) -> Iterator[LoadItem]:
        try:
            options = read_options(
                source, judged=ctx.settings.judge_runner is not None, model=ctx.settings.model
            )
        except CaseFileError as exc:
            yield exc
            return
        _, records = read_records(source, array_key=None)
        settled = _settled(source, options, ctx)
        yield from iter_cases(
            records,
            lambda line, row: self._case(source, line, row, settled()),
            lambda line, row: _identify(RowReader(source.display, line, row)),
        )

    def _case(
        self,
        source: CaseSource,
        line: int,
        row: dict[str, Any],
        options: When2CallOptions,
    ) -> EvalCase:
        read = RowReader(source.display, line, row)
        case_id, gold = _identify(read)
        question = read.text("question", required=True) or ""
        tools = read.text_list("tools")
        if tools is None:
            raise read.error("tools", "missing required field (an array of JSON strings)")
        parsed = [_tool(read, i, text) for i, text in enumerate(tools)]
        answers = _answers(read)
        fmt = cast(PromptFormat, options.prompt_format)
        prompt = build_prompt(fmt, question, tools, parsed)
        call = _json_object(read, "answers.tool_call", answers["tool_call"])
        shown = {**answers, "tool_call": tool_call_option(fmt, answers["tool_call"], call)}
        options_text = [shown[label] for label in LABELS]
        metadata = {
            "gold": gold,
            "n_tools": len(tools),
            "protocol": options.protocol,
            "prompt_format": fmt,
            "score": options.score,
            "source": row.get("source"),
        }
        common: dict[str, Any] = {
            "case_id": case_id,
            "suite": self.name,
            "file": source.display,
            "line": line,
            "category": gold,
            "tool_mode": "routing",
            "max_turns": 1,
            "expect": {"label": gold},
            "metadata": metadata,
            "fingerprint": row_fingerprint(
                self.name, {"row": row, "options": options.fingerprinted()}
            ),
        }
        if options.protocol == "mcq-string":
            return EvalCase(messages=_mcq_string_messages(prompt, options_text), **common)
        if options.protocol == "judge":
            specs = [_openai_tool(read, i, text) for i, text in enumerate(tools)]
            fallback = options.judge_fallback
            judge = JudgeTask(
                kind="when2call",
                question=question,
                tools=list(tools),
                fallback=None if fallback is None else {"classification": fallback},
            )
            return EvalCase(
                messages=[Message(role="user", content=question)],
                tools=specs,
                judge=judge,
                **common,
            )
        delimiter = options.target_delimiter
        asked = options.loglik_fallback is not None
        return EvalCase(
            messages=[Message(role="user", content=question)],
            choices=ChoiceTask(
                context=prompt,
                continuations=[delimiter + t for t in options_text],
                fallback=_mcq_string_messages(prompt, options_text) if asked else None,
            ),
            **common,
        )

    # -- scoring -----------------------------------------------------------------------------

    def score(self, case: EvalCase, transcript: Transcript, ctx: SuiteContext) -> CaseScore:
        meta = case.metadata
        if meta["protocol"] == "mcq-string":
            return score_string(case, transcript)
        if meta["protocol"] == "judge":
            return score_judged(case, transcript)
        return score_loglik(case, transcript)

    def aggregate(self, results: Sequence[CaseResult]) -> dict[str, Any]:
        return aggregate(results)

    def file_artifacts(
        self, source: CaseSource, results: Sequence[CaseResult], ctx: SuiteContext, run_id: str
    ) -> dict[str, Any]:
        """``when2call/<data path>.json``: the file's metrics."""
        return {
            artifact_name("when2call", display_stem(source), source): {
                "file": source.display,
                **aggregate(results),
            }
        }

    def console_lines(self, artifacts: dict[str, Any]) -> list[str]:
        return console(artifacts)

    def markdown_lines(self, artifacts: dict[str, Any]) -> list[str]:
        return markdown(artifacts)


# ---------------------------------------------------------------------------- rows


def _when2call_shaped(row: dict[str, Any]) -> bool:
    """A When2Call row: the file is claimed by any such row of its head, and a row that is not
    one is that row's error (not the whole file's)."""
    answers = row.get("answers")
    return (
        {"uuid", "question", "correct_answer", "tools"} <= row.keys()
        and isinstance(answers, dict)
        and set(LABELS) <= answers.keys()
    )


def _identify(read: RowReader) -> tuple[str, str]:
    case_id = read.id("uuid")
    if case_id is None:
        raise read.error("uuid", "missing required field (the case id)")
    gold = read.text("correct_answer", required=True)
    if gold not in LABELS:
        raise read.error("correct_answer", f"expected one of {', '.join(LABELS)}, got {gold!r}")
    return case_id, str(gold)


def _answers(read: RowReader) -> dict[str, str]:
    answers = read.obj("answers", required=True) or {}
    out = {}
    for label in LABELS:
        value = answers.get(label)
        if not isinstance(value, str):
            what = "missing" if value is None else f"expected a string, got {type(value).__name__}"
            raise read.error(f"answers.{label}", what)
        out[label] = value
    return out


def _tool(read: RowReader, index: int, text: str) -> dict[str, Any]:
    tool = _json_object(read, f"tools[{index}]", text)
    if not isinstance(tool.get("name"), str):
        raise read.error(f"tools[{index}]", "a tool needs a string 'name'")
    return tool


def _json_object(read: RowReader, field: str, text: str) -> dict[str, Any]:
    try:
        value = json.loads(text, object_pairs_hook=unique_object)  # a key twice: not valid
    except ValueError as exc:
        raise read.error(field, f"not valid JSON: {exc}") from None
    except RecursionError:
        raise read.error(field, "not valid JSON: nested too deeply") from None
    if not isinstance(value, dict):
        raise read.error(field, "expected a JSON object in the string")
    return value


def _openai_tool(read: RowReader, index: int, text: str) -> ToolSpec:
    """A BFCL tool rewritten as the official LLM-as-judge generation does before sending it:
    a raw text replace of float/integer -> string and dict/tuple -> object over the whole JSON
    (descriptions included), dots in the name -> underscores, ``parameters.type`` object, and
    every top-level property typed string."""
    rewritten = text
    for old, new in (("float", "string"), ("integer", "string"), ("dict", "object"),
                     ("tuple", "object")):  # fmt: skip
        rewritten = rewritten.replace(old, new)
    spec = _json_object(read, f"tools[{index}]", rewritten)
    given = spec.get("parameters")
    params: dict[str, Any] = {**(given if isinstance(given, dict) else {}), "type": "object"}
    properties = params.get("properties")
    if isinstance(properties, dict):
        params["properties"] = {
            key: {**value, "type": "string"} if isinstance(value, dict) else {"type": "string"}
            for key, value in properties.items()
        }
    return ToolSpec(
        name=str(spec.get("name", "")).replace(".", "_"),
        description=str(spec.get("description") or ""),
        parameters=params,
    )


def _mcq_string_messages(prompt: str, options: Sequence[str]) -> list[Message]:
    listed = "\n".join(f"{i}. {text}" for i, text in enumerate(options))
    user = (
        "The assistant's prompt:\n<prompt>\n" + prompt + "\n</prompt>\n\n"
        "Candidate responses:\n" + listed + "\n\n"
        "Which response is the most appropriate? Reply with one digit: 0, 1, 2 or 3."
    )
    return [Message(role="system", content=MCQ_STRING_SYSTEM), Message(role="user", content=user)]


# ---------------------------------------------------------------------------- scores
