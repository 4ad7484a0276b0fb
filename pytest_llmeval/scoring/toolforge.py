"""tool-forge eval scoring: tokens, the twelve assertion checks, staleness, suite result.

Pure functions only, and no presentation: the console summary is in
:mod:`pytest_llmeval.suites.toolforge_console`. The rules are the tool-forge eval runner's
contract: checks run in a fixed order, the verdict stops at the first failing unit, and units
are counted as run or skipped.
"""

from __future__ import annotations

import enum
import hashlib
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from pydantic import BaseModel, Field

from pytest_llmeval.core.models import ToolCallRecord, Transcript

# ---------------------------------------------------------------------------------------------
# JS-flavoured stringification and template tokens
# ---------------------------------------------------------------------------------------------


class _Unresolved(enum.Enum):
    TOKEN = 0

    def __repr__(self) -> str:
        return "UNRESOLVED"


UNRESOLVED: Final = _Unresolved.TOKEN
"""What a path or token that leads to undefined/null resolves to."""

_TOKEN = re.compile(r"\{\{(seed|snapshot):([^{}]*)\}\}")
_INDEXED = re.compile(r"^(\w+)\[(\d+)\]$", re.ASCII)


def _js_number(value: float) -> str:
    """``String(number)`` as JavaScript writes it (shortest round-trip digits)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    raw = whole + fraction
    digits = raw.lstrip("0")
    point = len(whole) + int(exponent or 0) - (len(raw) - len(digits))
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= point <= 21:
        text = digits + "0" * (point - k)
    elif 0 < point <= 21:
        text = f"{digits[:point]}.{digits[point:]}"
    elif -6 < point <= 0:
        text = "0." + "0" * -point + digits
    else:
        exp = point - 1
        head = digits[0] + (f".{digits[1:]}" if k > 1 else "")
        text = f"{head}e{'+' if exp >= 0 else '-'}{abs(exp)}"
    return sign + text


def _js_json(value: Any) -> str:
    """Compact ``JSON.stringify``: no spaces, keys in the order given, non-ASCII kept."""
    if isinstance(value, Mapping):
        items = (f"{_js_json(str(k))}:{_js_json(v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_js_json(v) for v in value) + "]"
    if isinstance(value, float) and not math.isfinite(value):
        return "null"
    if value is None or isinstance(value, (bool, int, float)):
        return js_string(value)
    return json.dumps(str(value), ensure_ascii=False)


def js_string(value: Any) -> str:
    """JS ``String(value)``, except that arrays and objects become compact JSON (a ``[object
    Object]`` would match nothing)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, str):
        return value
    if isinstance(value, (Mapping, list, tuple)):
        return _js_json(value)
    return str(value)


def resolve_path(data: Any, path: str) -> Any:
    """Walk ``path`` (``a.b[0].c``) through ``data``; ``UNRESOLVED`` on undefined or null.

    A segment ``name[N]`` is the key then the index; any other segment is a plain key, so
    ``matrix[1][0]`` is UNRESOLVED. As in JS, a canonical number (``items.0``) also indexes a list.
    ``0``, ``False`` and ``""`` are values.
    """
    current = data
    for segment in path.split("."):
        indexed = _INDEXED.match(segment)
        steps: list[str | int] = [indexed.group(1), int(indexed.group(2))] if indexed else [segment]
        for step in steps:
            current = _step(current, step)
            if current is None or current is UNRESOLVED:
                return UNRESOLVED
    return current


def _step(current: Any, step: str | int) -> Any:
    if isinstance(current, Mapping) and isinstance(step, str):
        return current.get(step, UNRESOLVED)
    if isinstance(current, list):
        if isinstance(step, str) and step.isascii() and step.isdigit() and str(int(step)) == step:
            step = int(step)
        if isinstance(step, int) and step < len(current):
            return current[step]
    return UNRESOLVED


def tokens_in(value: str) -> list[str]:
    """The raw ``{{seed:...}}`` / ``{{snapshot:...}}`` tokens in ``value``, in order."""
    return [match.group(0) for match in _TOKEN.finditer(value)]


def _substitute(value: Any, seed: Any, snapshot: Any) -> tuple[str, list[str]]:
    """``value`` with its tokens replaced, and the raw tokens that did not resolve."""
    unresolved: list[str] = []

    def replace(match: re.Match[str]) -> str:
        source = seed if match.group(1) == "seed" else snapshot
        resolved = resolve_path(source, match.group(2))
        if resolved is UNRESOLVED:
            unresolved.append(match.group(0))
            return ""
        return js_string(resolved)

    return _TOKEN.sub(replace, js_string(value)), unresolved


def default_token_estimate(text: str) -> int:
    """Token estimate for ``maxTokens``: ``ceil(len(text) / 4)``."""
    return math.ceil(len(text) / 4)


# ---------------------------------------------------------------------------------------------
# The twelve checks
# ---------------------------------------------------------------------------------------------


class ToolForgeOutcome(BaseModel):
    """The verdict of :func:`check_case` on one transcript."""

    passed: bool
    """No unit failed."""
    error: str | None = None
    """The first failing unit, as ``"<field>: ..."``; the verdict stops there."""
    failures: list[str] = Field(default_factory=list)
    """Every failing unit's message, computed without the stop (diagnostics only)."""
    assertions_run: int = 0
    """Units evaluated up to and including the first failure."""
    assertions_skipped: int = 0
    """Units before the first failure not evaluated (unresolved token, tool not called)."""
    skipped_tokens: list[str] = Field(default_factory=list)
    """Raw unresolved tokens met before the stop, without repeats."""
    warnings: list[str] = Field(default_factory=list)
    """Why units (or group members) were skipped, before the stop."""


@dataclass(frozen=True)
class _Unit:
    status: Literal["pass", "fail", "skip"]
    message: str = ""
    tokens: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


_PASS: Final = _Unit("pass")


@dataclass(frozen=True)
class _Context:
    response: str
    calls: list[ToolCallRecord]
    names: list[str]
    stubs: Mapping[str, Any] | None
    seed: Any
    snapshot: Any
    duration_ms: float
    estimate_tokens: Callable[[str], int]

    def resolve(self, value: Any) -> tuple[str, list[str]]:
        return _substitute(value, self.seed, self.snapshot)

    def resolve_group(self, members: Any) -> tuple[list[str], list[str]]:
        """The members that resolved, and the unresolved tokens of those that did not."""
        resolved: list[str] = []
        tokens: list[str] = []
        for member in members:
            if member is None:
                continue
            text, missing = self.resolve(member)
            tokens += missing
            if not missing:
                resolved.append(text)
        return resolved, tokens


def _quoted(text: str) -> str:
    return f"'{text}'"


def _dropped(tokens: list[str]) -> list[str]:
    return [f"unresolved {token}, dropped from its group" for token in tokens]


def _unresolved_unit(tokens: list[str]) -> _Unit:
    return _Unit("skip", tokens=tokens, warnings=[f"unresolved {t}, skipped" for t in tokens])


def _tools_called(ctx: _Context, expected: Any) -> Iterator[_Unit]:
    if ctx.names == list(expected):
        yield _PASS
    else:
        yield _Unit("fail", f"expected {_js_json(expected)} but got {_js_json(ctx.names)}")


def _tools_acceptable(ctx: _Context, sets: Any) -> Iterator[_Unit]:
    actual = set(ctx.names)
    if any(set(group) == actual or ("__none__" in group and not ctx.names) for group in sets):
        yield _PASS
    else:
        yield _Unit("fail", f"expected one of {_js_json(sets)} but got {_js_json(ctx.names)}")


def _tools_not_called(ctx: _Context, names: Any) -> Iterator[_Unit]:
    for name in names:
        if name in ctx.names:
            yield _Unit("fail", f"expected {_js_json(name)} not to be called but it was")
        else:
            yield _PASS


def _tool_param(ctx: _Context, entry: Mapping[str, Any]) -> _Unit:
    tool, param, kind = entry.get("tool"), str(entry.get("paramName")), entry.get("assertion")
    label = f"{tool}.{param}"
    call = next((c for c in ctx.calls if c.name == tool), None)
    if call is None:
        return _Unit("skip", warnings=[f"{tool} was not called, {label} skipped"])
    present = param in call.params
    actual = js_string(call.params[param]) if present else ""
    got = f"got {_quoted(actual)}" if present else "it was absent"
    if kind == "exists":
        return _PASS if present else _Unit("fail", f"expected {label} to exist but it was absent")
    if kind == "notExists":
        return _PASS if not present else _Unit("fail", f"expected {label} to be absent but {got}")
    if kind == "oneOf":
        raw = entry.get("value")
        resolved, tokens = ctx.resolve_group(raw if isinstance(raw, list) else [raw])
        if not resolved:
            return _unresolved_unit(tokens)
        if present and actual in resolved:
            return _Unit("pass", tokens=tokens, warnings=_dropped(tokens))
        message = f"expected {label} to be one of {_js_json(resolved)} but {got}"
        return _Unit("fail", message, tokens=tokens, warnings=_dropped(tokens))
    if kind not in ("equals", "contains", "matches"):
        return _Unit("fail", f"unknown assertion {_js_json(kind)} for {label}")
    if entry.get("value") is None:
        return _Unit("fail", f"{kind} on {label} needs a value")
    expected, tokens = ctx.resolve(entry["value"])
    if tokens:
        return _unresolved_unit(tokens)
    if kind == "matches":
        try:
            ok = present and re.search(expected, actual) is not None
        except re.error as exc:
            return _Unit("fail", f"invalid pattern /{expected}/ for {label}: {exc}")
        return _PASS if ok else _Unit("fail", f"expected {label} to match /{expected}/ but {got}")
    verb = "equal" if kind == "equals" else "contain"
    if present and (actual == expected if kind == "equals" else expected in actual):
        return _PASS
    return _Unit("fail", f"expected {label} to {verb} {_quoted(expected)} but {got}")


def _tool_params(ctx: _Context, entries: Any) -> Iterator[_Unit]:
    for entry in entries:
        yield _tool_param(ctx, entry)


def _no_tool_errors(ctx: _Context, flag: Any) -> Iterator[_Unit]:
    if flag is not True or not ctx.stubs:  # routing-only: a no-op, neither run nor skipped
        return
    missing = next((name for name in ctx.names if name not in ctx.stubs), None)
    if missing is None:
        yield _PASS
    else:
        yield _Unit("fail", f"called {_js_json(missing)}, which has no stub")


def _response_non_empty(ctx: _Context, flag: Any) -> Iterator[_Unit]:
    if flag is not True:
        return
    if ctx.response.strip():
        yield _PASS
    else:
        yield _Unit("fail", "expected a non-empty response but it was empty")


def _response_contains(ctx: _Context, values: Any) -> Iterator[_Unit]:
    for value in values:
        text, tokens = ctx.resolve(value)
        if tokens:
            yield _unresolved_unit(tokens)
        elif text in ctx.response:
            yield _PASS
        else:
            yield _Unit("fail", f"expected {_quoted(text)} in response but not found")


def _response_contains_any(ctx: _Context, groups: Any) -> Iterator[_Unit]:
    for group in groups:
        resolved, tokens = ctx.resolve_group(group)
        if not resolved:
            yield _unresolved_unit(tokens)
            continue
        dropped = _dropped(tokens)
        if any(text in ctx.response for text in resolved):
            yield _Unit("pass", tokens=tokens, warnings=dropped)
        else:
            message = f"expected one of {_js_json(resolved)} in response but none found"
            yield _Unit("fail", message, tokens=tokens, warnings=dropped)


def _response_not_contains(ctx: _Context, values: Any) -> Iterator[_Unit]:
    for value in values:
        text, tokens = ctx.resolve(value)
        if tokens:
            yield _unresolved_unit(tokens)
        elif text in ctx.response:
            yield _Unit("fail", f"found {_js_json(text)} in response")
        else:
            yield _PASS


def _response_matches(ctx: _Context, patterns: Any) -> Iterator[_Unit]:
    for pattern in patterns:
        try:
            found = re.search(pattern, ctx.response) is not None
        except re.error as exc:
            yield _Unit("fail", f"invalid pattern /{pattern}/: {exc}")
            continue
        yield _PASS if found else _Unit("fail", f"expected response to match /{pattern}/")


def _max_latency(ctx: _Context, budget: Any) -> Iterator[_Unit]:
    if ctx.duration_ms <= budget:
        yield _PASS
    else:
        took = js_string(float(ctx.duration_ms))
        yield _Unit("fail", f"expected at most {js_string(budget)}ms but took {took}ms")


def _max_tokens(ctx: _Context, budget: Any) -> Iterator[_Unit]:
    estimate = ctx.estimate_tokens(ctx.response)
    if estimate <= budget:
        yield _PASS
    else:
        yield _Unit("fail", f"expected at most {js_string(budget)} tokens but estimated {estimate}")


_CHECKS: Final[tuple[tuple[str, Callable[[_Context, Any], Iterator[_Unit]]], ...]] = (
    ("toolsCalled", _tools_called),
    ("toolsAcceptable", _tools_acceptable),
    ("toolsNotCalled", _tools_not_called),
    ("toolParams", _tool_params),
    ("noToolErrors", _no_tool_errors),
    ("responseNonEmpty", _response_non_empty),
    ("responseContains", _response_contains),
    ("responseContainsAny", _response_contains_any),
    ("responseNotContains", _response_not_contains),
    ("responseMatches", _response_matches),
    ("maxLatencyMs", _max_latency),
    ("maxTokens", _max_tokens),
)
"""The checks in the contract's order; the order of ``expect`` keys never matters."""


def check_case(
    expect: Mapping[str, Any],
    stubs: Mapping[str, Any] | None,
    transcript: Transcript,
    seed: Any,
    snapshot: Any,
    estimate_tokens: Callable[[str], int] = default_token_estimate,
) -> ToolForgeOutcome:
    """Run the twelve checks of one case's ``expect`` against ``transcript``.

    Stub mode is ``stubs`` with at least one key. A key that is absent or null does not run.
    """
    ctx = _Context(
        response=transcript.response,
        calls=list(transcript.tool_calls),
        names=[call.name for call in transcript.tool_calls],
        stubs=stubs if isinstance(stubs, Mapping) and stubs else None,
        seed=seed,
        snapshot=snapshot,
        duration_ms=transcript.duration_ms,
        estimate_tokens=estimate_tokens,
    )
    outcome = ToolForgeOutcome(passed=True)
    for name, check in _CHECKS:
        if expect.get(name) is None:
            continue
        for unit in check(ctx, expect[name]):
            if unit.status == "fail":
                outcome.failures.append(f"{name}: {unit.message}")
            if outcome.error is not None:
                continue  # after the stop: neither run nor skipped
            outcome.skipped_tokens += [t for t in unit.tokens if t not in outcome.skipped_tokens]
            outcome.warnings += [f"{name}: {warning}" for warning in unit.warnings]
            if unit.status == "skip":
                outcome.assertions_skipped += 1
                continue
            outcome.assertions_run += 1
            if unit.status == "fail":
                outcome.error = f"{name}: {unit.message}"
    outcome.passed = outcome.error is None
    return outcome


# ---------------------------------------------------------------------------------------------
# Staleness
# ---------------------------------------------------------------------------------------------


class Staleness(BaseModel):
    """What the staleness checks found."""

    warnings: list[str] = Field(default_factory=list)
    """The contract's warnings, in check order: description hash, registry size, version."""
    stale: bool = False
    """The description hash differs: results are marked stale (the evals still run)."""


def description_hash(description: str) -> str:
    """``sha256(description)`` as hex, first 12 characters (the eval metadata's form)."""
    return hashlib.sha256(description.encode("utf-8")).hexdigest()[:12]


def _major(version: Any) -> str:
    return js_string(version).strip().lstrip("vV").split(".")[0]


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def staleness_warnings(
    metadata: Mapping[str, Any] | None,
    *,
    tool_name: str,
    description: str | None = None,
    version: str | None = None,
    registry_size: int | None = None,
) -> Staleness:
    """The contract's three staleness checks; a check whose metadata field or current value
    is missing does not run, and ``metadata=None`` (a bare-array eval file) runs none."""
    result = Staleness()
    if not metadata:
        return result
    expected_hash = metadata.get("descriptionHash")
    if expected_hash is not None and description is not None:
        current = description_hash(description)
        if current != expected_hash:
            result.stale = True
            result.warnings.append(
                f"Evals for {tool_name} generated against description hash {expected_hash}, "
                f"current is {current}. Results may not reflect current routing contract."
            )
    generated_size = _number(metadata.get("registrySize"))
    if (
        generated_size is not None
        and registry_size is not None
        and registry_size > generated_size * 1.5
    ):
        result.warnings.append(
            f"Registry has grown from {js_string(generated_size)} to {registry_size} tools. "
            "Labeled evals may have under-specified toolsAcceptable sets."
        )
    generated_version = metadata.get("toolVersion")
    if (
        generated_version is not None
        and version is not None
        and _major(generated_version)
        and _major(version) != _major(generated_version)
    ):
        result.warnings.append(
            f"Tool {tool_name} is version {version}, evals were generated for "
            f"{js_string(generated_version)}. Schema may have changed."
        )
    return result


# ---------------------------------------------------------------------------------------------
# Suite result, baseline diff
# ---------------------------------------------------------------------------------------------


class CaseRecord(BaseModel):
    """One case as the suite result reports it."""

    id: str
    """The case id."""
    description: str = ""
    """The case's description."""
    passed: bool = False
    """The verdict (``False`` for a skipped case)."""
    skipped: bool = False
    """The case did not run (no ``input.message``): counted in totalCases only."""
    duration_ms: float = 0.0
    """The case's wall time."""
    assertions_run: int = 0
    assertions_skipped: int = 0
    error: str | None = None
    """The first failure."""
    tools_called: list[str] = Field(default_factory=list)
    """Tool names in call order."""
    response_length: int = 0
    """Characters in the final response."""
    skipped_tokens: list[str] = Field(default_factory=list)
    """Raw unresolved tokens."""


def _case_json(case: CaseRecord) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": case.id,
        "description": case.description,
        "passed": case.passed and not case.skipped,
        "durationMs": round(case.duration_ms),
        "assertionsRun": case.assertions_run,
        "assertionsSkipped": case.assertions_skipped,
    }
    if case.skipped:
        entry["skipped"] = True
    elif not case.passed:
        entry["error"] = case.error or "failed"
    entry["details"] = {
        "toolsCalled": list(case.tools_called),
        "responseLength": case.response_length,
        "skippedTokens": list(case.skipped_tokens),
    }
    return entry


def _status(case: CaseRecord | Mapping[str, Any]) -> bool | None:
    """``True``/``False`` for a case that ran, ``None`` for a skipped one."""
    if isinstance(case, CaseRecord):
        return None if case.skipped else case.passed
    return None if case.get("skipped") else bool(case.get("passed"))


def diff_baseline(
    current_cases: Sequence[CaseRecord | Mapping[str, Any]],
    baseline: Mapping[str, Any] | None,
) -> tuple[list[str], list[str]]:
    """``(regressions, newPasses)`` against a baseline EvalSuiteResult, in current-run order.

    Cases new in this run, gone from it, or skipped in either run appear in neither list.
    """
    if not baseline:
        return [], []
    before = {str(case["id"]): _status(case) for case in baseline.get("cases", [])}
    regressions: list[str] = []
    new_passes: list[str] = []
    for case in current_cases:
        case_id = case.id if isinstance(case, CaseRecord) else str(case["id"])
        was, now = before.get(case_id), _status(case)
        if was is True and now is False:
            regressions.append(case_id)
        elif was is False and now is True:
            new_passes.append(case_id)
    return regressions, new_passes


def build_suite_result(
    *,
    run_id: str,
    timestamp: str,
    tier: Literal["golden", "labeled"],
    tool_name: str,
    agent_endpoint: str,
    cases: Sequence[CaseRecord],
    tool_version: str | None = None,
    description_hash: str | None = None,
    registry_size: int | None = None,
    eval_file_hash: str | None = None,
    staleness_warnings: Sequence[str] = (),
    estimated_cost_usd: float | None = None,
    baseline: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The contract's EvalSuiteResult, cases in the order given; diffed against ``baseline``
    (a previous EvalSuiteResult) when one is given. Unknown values are ``null``."""
    regressions, new_passes = diff_baseline(cases, baseline)
    ran = [case for case in cases if not case.skipped]
    return {
        "runId": run_id,
        "timestamp": timestamp,
        "tier": tier,
        "toolName": tool_name,
        "agentEndpoint": agent_endpoint,
        "metadata": {
            "toolVersion": tool_version,
            "descriptionHash": description_hash,
            "registrySize": registry_size,
            "evalFileHash": eval_file_hash,
        },
        "stalenessWarnings": list(staleness_warnings),
        "cases": [_case_json(case) for case in cases],
        "summary": {
            "totalCases": len(cases),
            "passed": sum(1 for case in ran if case.passed),
            "failed": sum(1 for case in ran if not case.passed),
            "skippedAssertions": sum(case.assertions_skipped for case in cases),
            "totalDurationMs": round(sum(case.duration_ms for case in cases)),
            "estimatedCostUsd": estimated_cost_usd,
        },
        "baselineRunId": baseline.get("runId") if baseline else None,
        "regressions": regressions,
        "newPasses": new_passes,
    }
