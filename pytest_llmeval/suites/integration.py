"""The tool-integration suite: ``__header__`` JSONL datasets, scored by grounding.

A JSONL file whose first line is ``{"__header__": {...}}`` is an integration dataset
(``*.integration.jsonl`` is collected by default; a manifest may name ``suite: integration``
for any file). Every other line is an item, run through the model <-> broker loop with its
tools offered (schemas from ``--llmeval-tool-registry``) and scored deterministically by
:func:`pytest_llmeval.scoring.integration.score_item`.

Header keys: ``dataset_sha256``, ``tool_registry_sha256``, ``tokenizer_fingerprint``,
``integration_span_cap`` (3), ``min_eligible_for_gates`` (15), ``gates`` (threshold per
built-in gate name, :data:`~pytest_llmeval.suites.integration_metrics.GATES`),
``optional_gates`` (names of built-in gates that may have nothing to judge: ``n/a`` rather
than failed),
``system_prompt``, ``strict_keys`` (per-tool strict allowlists), ``alternatives``,
``max_retries`` (2), ``absence_phrases``, ``allowlist``, ``item_pass`` (``all_grounded`` or
``any_grounded``). A manifest may set ``item_pass`` and ``integration_span_cap`` too.

Item keys: ``sample_id`` (the case id; a stable hash of the row when missing), ``prompt`` or
``messages``, ``tools`` (registry names; default all), ``expected_behaviour`` (``normal``,
``no_tool``, ``decline``, ``retry``; the case's category), ``call_sequence``, ``complexity``
(a marker too), ``negative_control``, ``locale_probe``, ``locale``, ``max_turns``.

A case passes as :func:`~pytest_llmeval.scoring.integration.score_item` decides: a control iff
it is not contaminated, a negative control iff it is OK, an eligible item iff every kept span
is lax-grounded, one exists, its calls match a multi-call ``call_sequence`` in name and order,
and every call's arguments are valid.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pytest_llmeval.core.bounds import MAX_TURNS
from pytest_llmeval.core.errors import CaseFileError
from pytest_llmeval.core.models import CaseResult, CaseScore, EvalCase, Message, Transcript
from pytest_llmeval.inputs.loading import iter_jsonl
from pytest_llmeval.inputs.manifest import COMMON_OPTIONS
from pytest_llmeval.scoring.integration import (
    ABSENCE_PHRASES,
    Call,
    ItemConfig,
    mask_private,
    score_item,
)
from pytest_llmeval.suites.base import (
    CaseSource,
    LoadItem,
    SuiteBase,
    SuiteContext,
    artifact_name,
    display_stem,
    fallback_case_id,
    row_fingerprint,
)
from pytest_llmeval.suites.fields import RowReader
from pytest_llmeval.suites.integration_metrics import (
    GATES,
    IntegrationSection,
    aggregate,
    gate_line,
)
from pytest_llmeval.suites.row_reading import iter_cases

HEADER = "__header__"
BEHAVIOURS = ("normal", "no_tool", "decline", "retry")
ITEM_PASS = ("all_grounded", "any_grounded")
MODES = ("precise", "compat")
"""``precise``: this project's definitions (:mod:`~pytest_llmeval.scoring.grounding`);
``compat``: the reference harness's (:mod:`~pytest_llmeval.scoring.integration_compat`)."""
ITEM_KEYS = (
    "sample_id", "prompt", "messages", "tools", "expected_behaviour", "call_sequence",
    "complexity", "negative_control", "locale_probe", "locale", "max_turns", "metadata",
    "attempts",
)  # fmt: skip
OPTIONS = ("item_pass", "integration_span_cap", "mode")
"""The suite's own manifest options, besides the keys every suite takes
(:data:`pytest_llmeval.inputs.manifest.COMMON_OPTIONS`); the first two override the header's."""
REPORT_VERSION = "1.0.0"


class IntegrationSuite(SuiteBase):
    """Tool-integration datasets with a ``__header__`` line."""

    name = "integration"
    section_model = IntegrationSection
    own_gates = True
    manifest_options: ClassVar[dict[str, dict[str, Any]]] = {key: {} for key in OPTIONS}
    """Its manifest options; the suite checks their values with the header's."""

    def claims(self, path: Path, head: bytes) -> bool:
        first = head.split(b"\n", 1)[0].strip()
        if not first.startswith(b"{"):
            return False
        try:
            value = json.loads(first)
        except (ValueError, RecursionError):  # not this suite's header; loading says why
            return False
        return isinstance(value, dict) and isinstance(value.get(HEADER), dict)

    def load(self, source: CaseSource, ctx: SuiteContext) -> Iterator[LoadItem]:
        records = iter_jsonl(source.path, source.display)
        first = next(records, None)
        try:
            header = _header(source, first)
            config = _config(source, header, ctx.settings.integration_mode)
            problems = _fingerprint_problems(source, header, ctx)
        except CaseFileError as exc:
            yield exc
            return
        if problems and ctx.settings.fail_on_fingerprint_mismatch:
            yield CaseFileError(
                source.display,
                1,
                "; ".join(problems) + " (--no-llmeval-fail-on-fingerprint-mismatch to go on)",
                field=f"{HEADER}",
            )
        system = header.get("system_prompt")
        registered = set(ctx.registry.tools)
        yield from iter_cases(
            records,
            lambda line, row: self._case(source, line, row, config, system, registered, ctx),
            lambda line, row: _identify(RowReader(source.display, line, row)),
        )

    def _case(
        self,
        source: CaseSource,
        line: int,
        row: dict[str, Any],
        config: dict[str, Any],
        system: Any,
        registered: set[str],
        ctx: SuiteContext,
    ) -> EvalCase:
        read = RowReader(source.display, line, row)
        case_id, category, marks = _identify(read)
        read.reject_unknown(ITEM_KEYS)
        messages = _messages(read, system)
        names = read.text_list("tools")
        if names is not None:
            for i, name in enumerate(names):
                if name not in registered:
                    known = ", ".join(sorted(registered)) or "none: no --llmeval-tool-registry"
                    raise read.error(f"tools[{i}]", f"unknown tool {name!r}; registered: {known}")
        sequence = row.get("call_sequence") or []
        if not isinstance(sequence, list):
            raise read.error("call_sequence", "expected an array of calls")
        for i, call in enumerate(sequence):
            if not (isinstance(call, str) or (isinstance(call, dict) and "name" in call)):
                raise read.error(f"call_sequence[{i}]", "expected a tool name or {name, arguments}")
        for key in ("negative_control", "locale_probe"):
            read.flag(key)
        locale = read.text("locale")
        expect = {
            "expected_behaviour": category,
            "call_sequence": sequence,
            "complexity": read.text("complexity"),
            "negative_control": bool(row.get("negative_control")),
            "locale_probe": bool(row.get("locale_probe")),
            "locale": locale,
            "prompt_text": "\n".join(m.content or "" for m in messages if m.role == "user"),
            "config": config,
        }
        return EvalCase(
            case_id=case_id,
            suite=self.name,
            file=source.display,
            line=line,
            category=category,
            marks=marks,
            messages=messages,
            tools=ctx.registry.specs(names or ()),
            tool_mode="broker",
            max_turns=read.count("max_turns", MAX_TURNS) or ctx.settings.max_turns,
            expect=expect,
            metadata=dict(row.get("metadata") or {}),
            fingerprint=row_fingerprint(self.name, {"row": row, "config": config}),
        )

    def score(self, case: EvalCase, transcript: Transcript, ctx: SuiteContext) -> CaseScore:
        config = case.expect["config"]
        calls = [
            Call(r.name, dict(r.params), r.result, r.arguments_error) for r in transcript.tool_calls
        ]
        schemas = {t.name: t.parameters for t in ctx.registry.tools.values()}
        details = score_item(transcript.response, calls, case.expect, schemas, _item_config(config))
        details["min_eligible_for_gates"] = config["min_eligible_for_gates"]
        details["gate_thresholds"] = config["gates"]
        if config.get("optional_gates"):  # only when given: other files' details are unchanged
            details["gate_optional"] = config["optional_gates"]
        passed = bool(details.pop("passed"))
        why = mask_private(details.pop("why"))
        details["span_texts"] = [mask_private(t) for t in details["span_texts"]]
        scores = {}
        if details["eligible"]:
            scores = {"lax_f1": details["lax"]["f1"], "strict_f1": details["strict"]["f1"]}
        return CaseScore(
            passed=passed, scores=scores, failure=None if passed else why, details=details
        )

    def mask_output(self, text: str) -> str:
        """The answer as artifacts keep it: emails, phone numbers and key-like strings are
        replaced (and counted: ``privacy_ok_rate``)."""
        return mask_private(text)

    def shown_expect(self, case: EvalCase) -> dict[str, Any]:
        """What results show as the item's expectation: its own keys, without the file's
        scoring ``config`` (the same for every item) and the prompt text (the input)."""
        return {k: v for k, v in case.expect.items() if k not in ("config", "prompt_text")}

    def aggregate(self, results: Sequence[CaseResult]) -> dict[str, Any]:
        thresholds, min_eligible = _gate_settings(results)
        return aggregate(results, thresholds, min_eligible, _optional_gates(results))

    def file_artifacts(
        self, source: CaseSource, results: Sequence[CaseResult], ctx: SuiteContext, run_id: str
    ) -> dict[str, Any]:
        """``integration/<data path>.json``: the seed's own report, with its field names."""
        thresholds, min_eligible = _gate_settings(results)
        metrics = aggregate(results, thresholds, min_eligible, _optional_gates(results))
        header = _read_header(source.path)
        runners = sorted({r.runner_fingerprint for r in results if r.runner_fingerprint})
        body = {
            "file": source.display,
            "report_version": REPORT_VERSION,
            "dataset_sha256": dataset_sha256(source.path),
            "tool_registry_sha256": ctx.registry.fingerprint() if len(ctx.registry) else None,
            "tokenizer_fingerprint": header.get("tokenizer_fingerprint"),
            "runner_fingerprint": runners[0] if len(runners) == 1 else runners,
            "decoding": {
                "temperature": ctx.settings.temperature,
                "top_p": ctx.settings.top_p,
                "max_tokens": ctx.settings.max_tokens,
            },
            "seed": ctx.settings.seed,
            "integration_span_cap": header.get("integration_span_cap", 3),
            "min_eligible_for_gates": min_eligible,
            "fail_on_fingerprint_mismatch": ctx.settings.fail_on_fingerprint_mismatch,
            "avg_integration_f1_macro_lax": metrics["lax"]["macro_f1"],
            "avg_integration_f1_macro_strict": metrics["strict"]["macro_f1"],
            "avg_integration_f1_micro_lax": metrics["lax"]["micro_f1"],
            "avg_integration_f1_micro_strict": metrics["strict"]["micro_f1"],
            "privacy_ok_rate": metrics["privacy_ok_rate"],
            "multi_call_parity_rate": metrics["multi_call_parity"],
            "json_args_valid_rate": metrics["json_args_validity"],
            "num_eligible": metrics["eligible"],
            "controls_with_integration": metrics["controls_with_integration"],
            "integration_span_count_histogram": metrics["span_count_histogram"],
            "per_tool_deltas": metrics["per_tool_deltas"],
            "gates_ok": metrics["gates_ok"],
            "gates": metrics["gates"],
            "wall_time_sec": round(sum(r.duration_ms for r in results) / 1000, 3),
            "metrics": metrics,
        }
        return {artifact_name("integration", display_stem(source), source): body}

    def console_lines(self, artifacts: dict[str, Any]) -> list[str]:
        m = artifacts.get("metrics") or {}
        lax, strict = m.get("lax") or {}, m.get("strict") or {}
        lines = [
            f"integration {artifacts.get('file')}: eligible {m.get('eligible')}, "
            f"lax F1 macro {_f(lax.get('macro_f1'))} micro {_f(lax.get('micro_f1'))}, "
            f"strict F1 macro {_f(strict.get('macro_f1'))} micro {_f(strict.get('micro_f1'))}, "
            f"coverage {_f(m.get('integration_coverage'))}, "
            f"controls with integration {m.get('controls_with_integration')}"
        ]
        for name, gate in (m.get("gates") or {}).items():
            if gate["status"] != "pass":
                lines.append(f"  {name}: {gate_line(name, gate)}")
        return lines


def _f(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"


# ---------------------------------------------------------------------------- header


def _header(source: CaseSource, first: Any) -> dict[str, Any]:
    if first is None:
        raise CaseFileError(source.display, 1, "empty file: no __header__ line")
    if first.error is not None:
        raise first.error
    value = first.value
    if not isinstance(value, dict) or not isinstance(value.get(HEADER), dict):
        raise CaseFileError(
            source.display, first.line, 'the first line must be {"__header__": {...}}', field=HEADER
        )
    return dict(value[HEADER])


def _read_header(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            value = json.loads(handle.readline())
        return dict(value.get(HEADER) or {})
    except (OSError, ValueError, AttributeError, RecursionError):
        return {}


def dataset_sha256(path: Path) -> str:
    """sha256 of the dataset's items: the file's bytes after its header line."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        handle.readline()
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _fingerprint_problems(
    source: CaseSource, header: dict[str, Any], ctx: SuiteContext
) -> list[str]:
    problems = []
    declared = header.get("dataset_sha256")
    if declared is not None and declared != (actual := dataset_sha256(source.path)):
        problems.append(f"__header__.dataset_sha256 is {declared}, the items hash to {actual}")
    declared = header.get("tool_registry_sha256")
    if declared is not None:
        registry = ctx.registry.fingerprint() if len(ctx.registry) else None
        if declared != registry:
            problems.append(
                f"__header__.tool_registry_sha256 is {declared}, the tool registry "
                + (
                    f"hashes to {registry}"
                    if registry
                    else "is not given (--llmeval-tool-registry)"
                )
            )
    return problems


def _config(source: CaseSource, header: dict[str, Any], mode: str) -> dict[str, Any]:
    """The scoring settings of every item: the header's, then the manifest's (its ``mode``
    wins over ``--llmeval-integration-mode``)."""
    options = source.options
    for key in options:
        if key not in COMMON_OPTIONS and key not in OPTIONS:
            raise CaseFileError(
                source.display,
                None,
                f"unknown option; integration options are {', '.join(OPTIONS)}",
                field=f"manifest option {key}",
            )
    mode = options.get("mode", mode)
    if mode not in MODES:
        raise CaseFileError(
            source.display,
            None,
            f"expected one of {', '.join(MODES)}, got {mode!r}",
            field="manifest option mode",
        )
    merged = {**header, **{k: v for k, v in options.items() if k in OPTIONS[:2]}}
    where = RowReader(source.display, 1, merged, prefix=f"{HEADER}.")
    gates = where.number_map("gates") or {}
    for name in gates:
        if name not in GATES:
            raise where.error(f"gates.{name}", f"unknown gate; gates are {', '.join(GATES)}")
    optional = where.text_list("optional_gates") or []
    for i, name in enumerate(optional):
        if name not in GATES:
            raise where.error(f"optional_gates[{i}]", f"unknown gate; gates are {', '.join(GATES)}")
    item_pass = where.text("item_pass") or "all_grounded"
    if item_pass not in ITEM_PASS:
        raise where.error("item_pass", f"expected one of {', '.join(ITEM_PASS)}")
    strict_keys = where.obj("strict_keys") or {}
    alternatives = where.obj("alternatives") or {}
    for field_name, mapping in (("strict_keys", strict_keys), ("alternatives", alternatives)):
        for tool, keys in mapping.items():
            if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
                raise where.error(f"{field_name}.{tool}", "expected an array of strings")
    return {
        "mode": mode,
        "span_cap": where.whole("integration_span_cap", minimum=1) or 3,
        "min_eligible_for_gates": where.whole("min_eligible_for_gates", minimum=0)
        if merged.get("min_eligible_for_gates") is not None
        else 15,
        "gates": gates,
        **({"optional_gates": sorted(set(optional))} if optional else {}),
        "item_pass": item_pass,
        "strict_keys": strict_keys,
        "alternatives": alternatives,
        "max_retries": where.whole("max_retries", minimum=0)
        if merged.get("max_retries") is not None
        else 2,
        "absence_phrases": where.text_list("absence_phrases") or list(ABSENCE_PHRASES),
        "allowlist": where.text_list("allowlist") or [],
    }


def _item_config(config: dict[str, Any]) -> ItemConfig:
    return ItemConfig(
        span_cap=config["span_cap"],
        strict_keys={tool: frozenset(keys) for tool, keys in config["strict_keys"].items()},
        max_retries=config["max_retries"],
        alternatives=config["alternatives"],
        absence_phrases=tuple(config["absence_phrases"]),
        allowlist=tuple(config["allowlist"]),
        item_pass=config["item_pass"],
        mode=config["mode"],
    )


def _optional_gates(results: Sequence[CaseResult]) -> frozenset[str]:
    for result in results:
        if "gate_thresholds" in result.details:
            return frozenset(result.details.get("gate_optional") or ())
    return frozenset()


def _gate_settings(results: Sequence[CaseResult]) -> tuple[dict[str, float], int]:
    for result in results:
        if "gate_thresholds" in result.details:
            return dict(result.details["gate_thresholds"]), int(
                result.details["min_eligible_for_gates"]
            )
    return {}, 15


# ---------------------------------------------------------------------------- items


def _identify(read: RowReader) -> tuple[str, str, tuple[str, ...]]:
    case_id = read.id("sample_id") or fallback_case_id(read.row)
    behaviour = read.text("expected_behaviour") or "normal"
    if behaviour not in BEHAVIOURS:
        raise read.error("expected_behaviour", f"expected one of {', '.join(BEHAVIOURS)}")
    complexity = read.text("complexity")
    return case_id, behaviour, (complexity,) if complexity else ()


def _messages(read: RowReader, system: Any) -> list[Message]:
    prompt = read.text("prompt")
    raw = read.row.get("messages")
    if (prompt is None) == (raw is None):
        raise read.error("prompt", "give exactly one of prompt (a string) or messages")
    head = [Message(role="system", content=system)] if isinstance(system, str) else []
    if prompt is not None:
        return [*head, Message(role="user", content=prompt)]
    if not isinstance(raw, list) or not raw:
        raise read.error("messages", "expected a non-empty array of {role, content}")
    out = list(head)
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or item.get("role") not in ("system", "user", "assistant"):
            raise read.error(f"messages[{i}]", "expected {role: system|user|assistant, content}")
        if not isinstance(item.get("content"), str):
            raise read.error(f"messages[{i}].content", "expected a string")
        out.append(Message(role=item["role"], content=item["content"]))
    return out
