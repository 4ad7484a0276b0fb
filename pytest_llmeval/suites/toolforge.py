"""The tool-forge suite: envelope or bare-array eval files with ``expect`` assertions.

Loading validates every case up front (a typo in an ``expect`` key is an error, not a silently
passing case); scoring is :func:`pytest_llmeval.scoring.toolforge.check_case`; each file also
gets the contract's ``EvalSuiteResult`` as ``toolforge/<file stem>.json`` and its console
summary.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar, Literal

from pytest_llmeval.core.bounds import MAX_TURNS
from pytest_llmeval.core.clip import full_length
from pytest_llmeval.core.errors import ConfigError
from pytest_llmeval.core.fingerprint import file_sha256
from pytest_llmeval.core.models import CaseResult, CaseScore, EvalCase, Message, Transcript
from pytest_llmeval.core.redact import public_url
from pytest_llmeval.inputs.safe_read import read_json
from pytest_llmeval.rundir.models import SuiteSection
from pytest_llmeval.scoring import toolforge as tf
from pytest_llmeval.suites.base import (
    CaseSource,
    LoadItem,
    SuiteBase,
    SuiteContext,
    artifact_name,
    base_totals,
    fallback_case_id,
    row_fingerprint,
)
from pytest_llmeval.suites.fields import RowReader
from pytest_llmeval.suites.row_reading import head_rows, is_envelope, iter_cases, read_records
from pytest_llmeval.suites.toolforge_console import format_console_summary

_LIST_FIELDS = ("toolsCalled", "toolsNotCalled", "responseContains", "responseNotContains")
_GROUP_FIELDS = ("toolsAcceptable", "responseContainsAny")
_BOOL_FIELDS = ("noToolErrors", "responseNonEmpty")
_EXPECT_FIELDS = (
    *_LIST_FIELDS,
    *_GROUP_FIELDS,
    *_BOOL_FIELDS,
    "toolParams",
    "responseMatches",
    "maxLatencyMs",
    "maxTokens",
)
_PARAM_ASSERTIONS = ("equals", "contains", "oneOf", "exists", "notExists", "matches")
_TIER_SUFFIX = re.compile(r"\.(golden|labeled)$")


class ToolForgeSection(SuiteSection):
    """``report.json`` ``suites.toolforge``: the counts and the assertion units run/skipped."""

    assertions_run: int
    assertions_skipped: int


class ToolForgeSuite(SuiteBase):
    """tool-forge ``*.golden.json`` / ``*.labeled.json`` eval files."""

    name = "toolforge"
    section_model = ToolForgeSection
    manifest_options: ClassVar[dict[str, dict[str, Any]]] = {}
    """None beyond the keys every suite takes: a case file carries its own settings."""

    def claims(self, path: Path, head: bytes) -> bool:
        if is_envelope(head):
            return True
        return any(
            "expect" in row or isinstance(row.get("input"), dict) for row in head_rows(path, head)
        )

    def load(self, source: CaseSource, ctx: SuiteContext) -> Iterator[LoadItem]:
        header, records = read_records(source)
        tier = _tier(source, header)
        yield from iter_cases(
            records,
            lambda line, row: self._case(source, line, row, tier, ctx),
            lambda line, row: _identify(RowReader(source.display, line, row), tier),
        )

    def _case(
        self, source: CaseSource, line: int, row: dict[str, Any], tier: str, ctx: SuiteContext
    ) -> EvalCase:
        read = RowReader(source.display, line, row)
        case_id, category = _identify(read, tier)
        description = read.text("description") or ""
        message = read.child("input").text("message") if "input" in row else None
        expect = _expect(read)
        stubs = read.obj("stubs") or {}
        max_turns = read.count("maxTurns", MAX_TURNS) or ctx.settings.max_turns
        known = {"id", "description", "input", "expect", "stubs", "maxTurns", "category"}
        return EvalCase(
            case_id=case_id,
            suite=self.name,
            file=source.display,
            line=line,
            category=category,
            messages=[Message(role="user", content=message)] if message is not None else [],
            tools=_offered_tools(ctx, expect, stubs),
            tool_mode="stubs" if stubs else "routing",
            stubs=stubs,
            max_turns=max_turns,
            expect=expect,
            metadata={
                "description": description,
                "tier": tier,
                **{k: v for k, v in row.items() if k not in known},
            },
            fingerprint=row_fingerprint(self.name, row),
            skip_reason=None if message is not None else "no input.message: the case cannot run",
        )

    def score(self, case: EvalCase, transcript: Transcript, ctx: SuiteContext) -> CaseScore:
        outcome = tf.check_case(case.expect, case.stubs or None, transcript, ctx.seed, ctx.snapshot)
        return CaseScore(
            passed=outcome.passed,
            scores={
                "assertions_run": float(outcome.assertions_run),
                "assertions_skipped": float(outcome.assertions_skipped),
            },
            failure=outcome.error,
            details={
                "assertionsRun": outcome.assertions_run,
                "assertionsSkipped": outcome.assertions_skipped,
                "skippedTokens": outcome.skipped_tokens,
                "failures": outcome.failures,
                "warnings": outcome.warnings,
            },
        )

    def aggregate(self, results: Sequence[CaseResult]) -> dict[str, Any]:
        return {
            **base_totals(results),
            "assertions_run": sum(int(r.details.get("assertionsRun", 0)) for r in results),
            "assertions_skipped": sum(int(r.details.get("assertionsSkipped", 0)) for r in results),
        }

    def file_artifacts(
        self, source: CaseSource, results: Sequence[CaseResult], ctx: SuiteContext, run_id: str
    ) -> dict[str, Any]:
        header, records = read_records(source)
        tier = _tier(source, header)
        metadata = (header or {}).get("metadata")
        metadata = metadata if isinstance(metadata, dict) else None
        descriptions = {}
        for record in records:
            if isinstance(record.value, dict):
                row_id = record.value.get("id")
                case_id = str(row_id) if row_id is not None else fallback_case_id(record.value)
                description = record.value.get("description")
                descriptions[case_id] = description if isinstance(description, str) else ""
        tool_name = _tool_name(source, metadata)
        tool = ctx.registry.get(tool_name)
        registry_size = len(ctx.registry) if len(ctx.registry) else None
        staleness = tf.staleness_warnings(
            metadata,
            tool_name=tool_name,
            description=tool.description if tool else None,
            version=tool.version if tool else None,
            registry_size=registry_size,
        )
        ordered = sorted(results, key=lambda r: (r.line, r.case_id))
        cases = [_record(r, descriptions.get(r.case_id, "")) for r in ordered]
        name = _artifact_name(source)
        suite_result = tf.build_suite_result(
            run_id=run_id,
            timestamp=datetime.now(timezone.utc).isoformat(),
            tier=tier,
            tool_name=tool_name,
            agent_endpoint=public_url(ctx.settings.agent_url or "") or ctx.settings.runner,
            cases=cases,
            tool_version=tool.version if tool else None,
            description_hash=tf.description_hash(tool.description) if tool else None,
            registry_size=registry_size,
            eval_file_hash=ctx.collected.hashes.get(source.display) or file_sha256(source.path),
            staleness_warnings=staleness.warnings,
            baseline=_baseline(ctx, name),
        )
        return {name: suite_result}

    def console_lines(self, artifacts: dict[str, Any]) -> list[str]:
        return format_console_summary(artifacts).splitlines()


def _identify(read: RowReader, tier: str) -> tuple[str, str]:
    """The case id (or the row's hash) and category (a string ``category``, else the tier)."""
    category = read.row.get("category")
    if not isinstance(category, str) or not category:
        category = tier
    return read.id() or fallback_case_id(read.row), category


def _expect(read: RowReader) -> dict[str, Any]:
    if "expect" not in read.row:
        raise read.error("expect", "missing required field (an object of assertions)")
    expect = read.child("expect")
    expect.reject_unknown(_EXPECT_FIELDS)
    for field in _LIST_FIELDS:
        expect.text_list(field)
    for field in _GROUP_FIELDS:
        expect.text_groups(field)
    for field in _BOOL_FIELDS:
        expect.flag(field)
    for i, pattern in enumerate(expect.text_list("responseMatches") or []):
        _check_regex(expect, f"responseMatches[{i}]", pattern)
    expect.number("maxLatencyMs")
    expect.whole("maxTokens", minimum=0)
    params = expect.row.get("toolParams")
    if params is not None:
        if not isinstance(params, list):
            raise expect.error("toolParams", "expected an array of {tool, paramName, assertion}")
        for i, entry in enumerate(params):
            _check_param(
                RowReader(read.display, read.line, entry, f"expect.toolParams[{i}].")
                if isinstance(entry, dict)
                else None,
                expect,
                i,
            )
    return dict(expect.row)


def _check_param(entry: RowReader | None, expect: RowReader, index: int) -> None:
    if entry is None:
        raise expect.error(f"toolParams[{index}]", "expected an object")
    entry.text("tool", required=True)
    entry.text("paramName", required=True)
    assertion = entry.text("assertion", required=True)
    if assertion not in _PARAM_ASSERTIONS:
        raise entry.error("assertion", f"expected one of {', '.join(_PARAM_ASSERTIONS)}")
    if assertion == "oneOf":
        if not entry.text_list("value"):
            raise entry.error("value", "oneOf needs a non-empty array of strings")
    elif assertion in ("equals", "contains", "matches"):
        value = entry.text("value", required=True)
        if assertion == "matches" and value is not None:
            _check_regex(entry, "value", value)


def _check_regex(read: RowReader, field: str, pattern: str) -> None:
    if tf.tokens_in(pattern):
        return
    try:
        re.compile(pattern)
    except re.error as exc:
        raise read.error(field, f"not a valid regular expression: {exc}") from None


def _offered_tools(ctx: SuiteContext, expect: dict[str, Any], stubs: dict[str, Any]) -> list[Any]:
    if len(ctx.registry):
        return ctx.registry.specs()
    names: list[str] = [*stubs]
    names += expect.get("toolsCalled") or []
    for group in expect.get("toolsAcceptable") or []:
        names += [n for n in group if n != "__none__"]
    names += expect.get("toolsNotCalled") or []
    names += [p["tool"] for p in expect.get("toolParams") or []]
    return ctx.registry.specs(sorted(set(names)))


def _tier(source: CaseSource, header: dict[str, Any] | None) -> Literal["golden", "labeled"]:
    metadata = (header or {}).get("metadata")
    tier = metadata.get("tier") if isinstance(metadata, dict) else None
    if tier in ("golden", "labeled"):
        return tier  # type: ignore[no-any-return]
    stem = source.path.name.removesuffix(".json")
    match = _TIER_SUFFIX.search(stem)
    return "labeled" if match and match.group(1) == "labeled" else "golden"


def _tool_name(source: CaseSource, metadata: dict[str, Any] | None) -> str:
    name = (metadata or {}).get("toolName")
    if isinstance(name, str) and name:
        return name
    return _TIER_SUFFIX.sub("", source.path.name.removesuffix(".json"))


def _artifact_name(source: CaseSource) -> str:
    return artifact_name("toolforge", source.path.name.removesuffix(".json"), source)


def _baseline(ctx: SuiteContext, name: str) -> dict[str, Any] | None:
    if ctx.settings.baseline is None:
        return None
    path = ctx.settings.baseline / name
    if not path.is_file():
        return None
    try:
        value = read_json(path)
    except ConfigError:  # an unusable earlier artifact: nothing to compare with
        return None
    return value if isinstance(value, dict) else None


def _record(result: CaseResult, description: str) -> tf.CaseRecord:
    return tf.CaseRecord(
        id=result.case_id,
        description=description,
        passed=result.passed,
        skipped=result.outcome == "skipped",
        duration_ms=result.duration_ms,
        assertions_run=int(result.details.get("assertionsRun", 0)),
        assertions_skipped=int(result.details.get("assertionsSkipped", 0)),
        error=result.error if not result.passed else None,
        tools_called=[call.name for call in result.tool_calls],
        response_length=full_length(result.response),  # the answer, also when kept clipped
        skipped_tokens=list(result.details.get("skippedTokens", [])),
    )
