"""One tool-integration item scored from its answer and its trace, purely.

:func:`score_item` returns the item's ``details`` (what ``results.jsonl`` keeps and what the
suite's aggregate reads): the spans, lax and strict P/R/F1 with the fact grounding each span,
fact recall, eligibility, control contamination, multi-call parity, argument validity,
branching recovery, locale-probe and negative-control verdicts, and privacy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_llmeval.scoring import integration_compat as compat
from pytest_llmeval.scoring.grounding import (
    STRICT_KEYS,
    Fact,
    Spans,
    SpanText,
    any_hit_prf,
    dates_in,
    extract_spans,
    facts_of,
    first_match,
    iso_date,
    normalize_text,
    number_appears,
    numbers_in,
    successful,
)
from pytest_llmeval.tools.broker import normalize_args

CONTROLS = frozenset({"no_tool", "decline"})
RECOVERY_COMPLEXITY = "branching_error_recovery"
ABSENCE_PHRASES = (
    "no results",
    "no result",
    "couldn't find",
    "could not find",
    "not found",
    "nothing found",
    "found nothing",
    "no information",
    "no matching",
)
"""Default phrases by which an answer acknowledges that a tool found nothing."""
_PROPER = re.compile(r"(?<![\w])[A-Z][a-z]+(?:[A-Z][a-z]+)*")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
_PHONE = re.compile(r"(?<![\w.])\+?\(?\d[\d().\- ]{7,}\d(?![\w])")
_KEYLIKE = re.compile(r"\b(?:sk|pk|api|key|token)[-_][A-Za-z0-9]{16,}\b|\b[A-Za-z0-9]{32,}\b")


@dataclass(frozen=True)
class ItemConfig:
    """What the dataset's header (or the manifest) sets for every item."""

    span_cap: int = 3
    strict_keys: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Per-tool strict allowlists (a tool not named uses :data:`STRICT_KEYS`)."""
    max_retries: int = 2
    alternatives: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Tools a failed call may be retried with instead of the same tool."""
    absence_phrases: Sequence[str] = ABSENCE_PHRASES
    allowlist: Sequence[str] = ()
    """Numbers and proper nouns a negative control's spans may name without the prompt."""
    item_pass: str = "all_grounded"
    mode: str = "precise"
    """``precise`` (:mod:`.grounding`) or ``compat`` (the reference harness,
    :mod:`.integration_compat`)."""


@dataclass(frozen=True)
class Call:
    """One observed call with its result."""

    name: str
    arguments: dict[str, Any]
    result: Any
    arguments_error: str | None = None


def keys_for(tool: str, config: ItemConfig) -> frozenset[str]:
    return config.strict_keys.get(tool, STRICT_KEYS)


def score_item(
    text: str,
    calls: Sequence[Call],
    meta: Mapping[str, Any],
    schemas: Mapping[str, Any],
    config: ItemConfig,
) -> dict[str, Any]:
    """The item's details (see the module docstring); ``schemas`` maps tool name to its JSON
    Schema (registered tools only)."""
    if config.mode == "compat":
        return _score_compat(text, calls, meta, schemas, config)
    text = normalize_text(text)
    locale = str(meta.get("locale") or "en")
    spans = extract_spans(text, config.span_cap)
    views = [SpanText(text[a:b], locale) for a, b in spans.kept]
    facts: list[Fact] = []
    failed_facts: list[Fact] = []
    for i, call in enumerate(calls):
        (facts if successful(call.result) else failed_facts).extend(
            facts_of(call.result, call.name, i)
        )
    lax_hits = [first_match(facts, view, strict=False) for view in views]
    strict_hits = [_strict_hit(facts, view, config) for view in views]
    n = len(views)
    lax = any_hit_prf(sum(h is not None for h in lax_hits), n)
    strict = any_hit_prf(sum(h is not None for h in strict_hits), n)
    keyed = [f for f in facts if f.keyed(keys_for(f.tool, config))]
    found = [f for f in keyed if any(_strict_hit([f], view, config) for view in views)]
    item = _Meta.of(meta)
    eligible = not item.control and not item.negative and bool(item.expected)
    details: dict[str, Any] = {
        **_common(text, calls, item, schemas, spans, eligible),
        "lax": lax.as_dict(),
        "strict": strict.as_dict(),
        "lax_grounded": sum(h is not None for h in lax_hits),
        "strict_grounded": sum(h is not None for h in strict_hits),
        "grounded": [h.describe() if h else None for h in lax_hits],
        "grounded_strict": [h.describe() if h else None for h in strict_hits],
        "facts": len(facts),
        "keyed_facts": len(keyed),
        "keyed_facts_found": len(found),
        "fact_recall": len(found) / len(keyed) if keyed else None,
        "eligible": eligible,
        "parity_ok": _parity(calls, item.expected) if len(item.expected) > 1 else None,
        "args_valid": None,  # from args_problems, below
        "recovered": _recovered(calls, views, facts, failed_facts, config)
        if meta.get("complexity") == RECOVERY_COMPLEXITY or item.behaviour == "retry"
        else None,
        "locale": locale if meta.get("locale_probe") else None,
        "locale_ok": _locale_ok(views, facts, locale, config) if meta.get("locale_probe") else None,
        "negative_ok": _negative_ok(text, views, calls, meta, config)
        if meta.get("negative_control")
        else None,
        "mode": "precise",
        # what each dataset rate counts this item in, and whether it counts as a hit
        "in_coverage": eligible,
        "in_grounded": eligible and bool(facts),
        "grounded_ok": any(h is not None for h in lax_hits),
        "strict_grounded_ok": any(h is not None for h in strict_hits),
    }
    details["args_valid"] = not details["args_problems"] if calls else None
    details["passed"], details["why"] = _verdict(details, [h is not None for h in lax_hits], config)
    return details


def _score_compat(
    text: str,
    calls: Sequence[Call],
    meta: Mapping[str, Any],
    schemas: Mapping[str, Any],
    config: ItemConfig,
) -> dict[str, Any]:
    """The reference harness's item: see :mod:`.integration_compat`."""
    spans = compat.spans(text, config.span_cap)
    fields = compat.fields([c.result for c in calls])
    segments = [text[a:b] for a, b in spans.kept]
    lax_hits = [compat.grounded(seg, fields) for seg in segments]
    strict_hits = [compat.grounded(seg, fields, compat.KEYED) for seg in segments]
    n = len(segments)
    lax = compat.prf(sum(lax_hits), n, bool(fields))
    strict = compat.prf(sum(strict_hits), n, bool(fields))
    item = _Meta.of(meta)
    eligible = not item.control and not item.negative and bool(calls) and n > 0
    contains = compat.contains_grounding(text, spans.kept, fields)
    keyed = [k for k in fields if k in compat.KEYED]
    details: dict[str, Any] = {
        **_common(text, calls, item, schemas, spans, eligible),
        "lax": lax.as_dict() if eligible else dict.fromkeys(("precision", "recall", "f1")),
        "strict": strict.as_dict() if eligible else dict.fromkeys(("precision", "recall", "f1")),
        "lax_grounded": sum(lax_hits),
        "strict_grounded": sum(strict_hits),
        "grounded": [
            _field_hit(seg, fields) if hit else None
            for seg, hit in zip(segments, lax_hits, strict=True)
        ],
        "grounded_strict": [
            _field_hit(seg, fields, compat.KEYED) if hit else None
            for seg, hit in zip(segments, strict_hits, strict=True)
        ],
        "facts": len(fields),
        "keyed_facts": len(keyed),
        "keyed_facts_found": 0,
        "fact_recall": None,
        "eligible": eligible,
        "parity_ok": _parity(calls, item.expected) if len(item.expected) > 1 else True,
        "args_valid": None,  # from args_problems, below
        "recovered": None,
        "locale": meta.get("locale") if meta.get("locale_probe") else None,
        "locale_ok": None,
        "negative_ok": (not contains) if item.negative else None,
        "contains_grounding": contains,
        "mode": "compat",
        "in_coverage": not item.control and bool(item.expected),
        "in_grounded": not item.control and bool(item.expected) and bool(fields),
        "grounded_ok": contains,
        "strict_grounded_ok": None,
    }
    details["args_valid"] = not details["args_problems"]  # the reference: over all items
    details["passed"], details["why"] = _verdict(details, lax_hits, config)
    return details


@dataclass(frozen=True)
class _Meta:
    """What an item's metadata says, read once."""

    behaviour: str
    expected: list[Any]
    control: bool
    negative: bool
    complexity: Any

    @classmethod
    def of(cls, meta: Mapping[str, Any]) -> _Meta:
        behaviour = str(meta.get("expected_behaviour") or "normal")
        return cls(
            behaviour=behaviour,
            expected=list(meta.get("call_sequence") or []),
            control=behaviour in CONTROLS,
            negative=bool(meta.get("negative_control")),
            complexity=meta.get("complexity"),
        )


def _common(
    text: str,
    calls: Sequence[Call],
    item: _Meta,
    schemas: Mapping[str, Any],
    spans: Spans,
    eligible: bool,
) -> dict[str, Any]:
    """The details both modes compute alike: the kind, the spans, controls, calls, argument
    problems, privacy."""
    return {
        "kind": "control"
        if item.control
        else "negative_control"
        if item.negative
        else "eligible"
        if eligible
        else "other",
        "spans": [[a, b] for a, b in spans.kept],
        "span_texts": [text[a:b] for a, b in spans.kept],
        "spans_total": spans.total,
        "spans_exceeded_cap": spans.exceeded_cap,
        "control": item.control,
        "contaminated": item.control and (bool(calls) or bool(spans.kept)),
        "calls": [call.name for call in calls],
        "expected_calls": [
            str(c.get("name")) if isinstance(c, dict) else str(c) for c in item.expected
        ],
        "args_problems": _args_problems(calls, schemas),
        "negative_control": item.negative,
        "privacy_ok": not _private(text),
        "tools_used": sorted({call.name for call in calls}),
        "expected_behaviour": item.behaviour,
        "complexity": item.complexity,
    }


def _field_hit(segment: str, fields: Mapping[str, str], keys: Sequence[str] | None = None) -> str:
    for key, value in sorted(fields.items()):
        if compat.grounded(segment, {key: value}, keys):
            return f"{key}={value!r}"
    return "?"


def _strict_hit(facts: Sequence[Fact], view: SpanText, config: ItemConfig) -> Fact | None:
    for fact in facts:
        if first_match([fact], view, strict=True, keys=keys_for(fact.tool, config)):
            return fact
    return None


def _parity(calls: Sequence[Call], expected: Sequence[Any]) -> bool:
    names = [c.get("name") if isinstance(c, dict) else c for c in expected]
    return len(calls) == len(names) and all(c.name == n for c, n in zip(calls, names, strict=True))


def _args_problems(calls: Sequence[Call], schemas: Mapping[str, Any]) -> list[str]:
    import jsonschema  # on first use: it costs a session ~40 ms to import

    problems = []
    for i, call in enumerate(calls):
        if call.name not in schemas:
            problems.append(f"call {i} {call.name}: not a registered tool")
        elif call.arguments_error is not None:
            problems.append(f"call {i} {call.name}: arguments are not a JSON object")
        else:
            validator = jsonschema.Draft202012Validator(schemas[call.name] or {})
            error = jsonschema.exceptions.best_match(validator.iter_errors(call.arguments))
            if error is not None:
                where = "/".join(str(p) for p in error.absolute_path)
                problems.append(
                    f"call {i} {call.name}: {where + ': ' if where else ''}{error.message}"
                )
    return problems


def _recovered(
    calls: Sequence[Call],
    views: Sequence[SpanText],
    facts: Sequence[Fact],
    failed_facts: Sequence[Fact],
    config: ItemConfig,
) -> bool:
    failing = next((j for j, c in enumerate(calls) if not successful(c.result)), None)
    if failing is None:
        return False
    first = calls[failing]
    allowed = {first.name, *config.alternatives.get(first.name, ())}
    after = [(k, c) for k, c in enumerate(calls) if k > failing and c.name in allowed]
    if len(after) > config.max_retries:
        return False
    failed_args = _canonical(normalize_args(first.name, first.arguments))
    retried = any(
        successful(c.result) and _canonical(normalize_args(c.name, c.arguments)) != failed_args
        for _, c in after
    )
    if not retried:
        return False
    good = [f for f in facts if f.call > failing or f.call != failing]
    grounded_good = [first_match(good, view, strict=False) for view in views]
    if not any(grounded_good):
        return False
    only_failed = [
        view
        for view, hit in zip(views, grounded_good, strict=True)
        if hit is None and first_match(failed_facts, view, strict=False) is not None
    ]
    return not only_failed


def _canonical(args: Any) -> str:
    return json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)


def _locale_ok(
    views: Sequence[SpanText], facts: Sequence[Fact], locale: str, config: ItemConfig
) -> bool:
    """Every keyed number or date appears in a span read in the item's locale, and no number
    read there is absent from the facts."""
    numeric = [f.value for f in facts if isinstance(f.value, float)]
    keyed = [f for f in facts if f.keyed(keys_for(f.tool, config))]
    read = []
    for view in views:
        dates = dates_in(view.raw, locale)
        taken = [(a, b) for _, a, b in dates]
        numbers = [
            n for n in numbers_in(view.raw, locale) if not any(a <= n.start < b for a, b in taken)
        ]
        read.append((numbers, {d for d, _, _ in dates}))
    for fact in keyed:
        if isinstance(fact.value, float):
            if not any(number_appears(fact.value, numbers) for numbers, _ in read):
                return False
        elif (date := iso_date(fact.value)) is not None and not any(
            date in dates for _, dates in read
        ):
            return False
    for numbers, _ in read:
        for number in numbers:
            if not any(number_appears(x, [number]) for x in numeric):
                return False
    return True


def _negative_ok(
    text: str,
    views: Sequence[SpanText],
    calls: Sequence[Call],
    meta: Mapping[str, Any],
    config: ItemConfig,
) -> bool:
    decoys = [f for i, c in enumerate(calls) for f in facts_of(c.result, c.name, i)]
    if any(first_match(decoys, view, strict=False) for view in views):
        return False
    prompt = str(meta.get("prompt_text") or "")
    allowed = {a.casefold() for a in config.allowlist}
    prompt_numbers = numbers_in(prompt, "en")
    for view in views:
        for number in view.numbers:
            shown = view.raw[number.start : number.end].casefold()
            if shown not in allowed and not number_appears(number.value, prompt_numbers):
                return False
        for match in _PROPER.finditer(view.raw):
            word = match.group()
            if match.start() == 0 or word.casefold() in allowed:
                continue
            if word.casefold() not in prompt.casefold():
                return False
    lowered = text.casefold()
    return any(phrase.casefold() in lowered for phrase in config.absence_phrases)


def _private(text: str) -> bool:
    """An email address, a phone number or a key-like string in the answer."""
    return bool(
        _EMAIL.search(text) or _KEYLIKE.search(text) or any(map(_phone, _PHONE.findall(text)))
    )


def mask_private(text: str) -> str:
    """``text`` with emails, phone numbers and key-like strings replaced by a marker."""
    text = _EMAIL.sub("[email]", text)
    text = _KEYLIKE.sub("[key]", text)
    return _PHONE.sub(lambda m: "[phone]" if _phone(m.group()) else m.group(), text)


def _phone(candidate: str) -> bool:
    """9 to 15 digits in groups, not arithmetic (`900 - 123`) or a run of spaced numbers."""
    digits = sum(c.isdigit() for c in candidate)
    return 9 <= digits <= 15 and " - " not in candidate and "  " not in candidate


def _verdict(
    details: Mapping[str, Any], lax_hits: Sequence[bool], config: ItemConfig
) -> tuple[bool, str]:
    kind = details["kind"]
    if kind == "control":
        if details["contaminated"]:
            what = f"calls {details['calls']}" if details["calls"] else ""
            spans = details["span_texts"]
            what += (" and " if what and spans else "") + (f"spans {spans}" if spans else "")
            return False, f"control contaminated: {what}"
        return True, "control: no tool call, no integration span"
    if kind == "negative_control":
        if details["negative_ok"]:
            return True, "negative control: acknowledged the absence, grounded nothing"
        return False, "negative control not OK: " + _negative_reason(details)
    if kind != "eligible":
        return True, "not eligible (no expected calls): nothing to check"
    problems = []
    if not details["spans"]:
        problems.append("no integration span")
    ungrounded = [t for t, hit in zip(details["span_texts"], lax_hits, strict=True) if not hit]
    if config.item_pass == "any_grounded":
        if details["spans"] and len(ungrounded) == len(details["spans"]):
            problems.append(f"no span is grounded: {ungrounded}")
    elif ungrounded:
        problems.append("ungrounded span(s): " + "; ".join(repr(t) for t in ungrounded))
    if details["parity_ok"] is False:
        problems.append(
            f"calls {details['calls']} do not match the expected {details['expected_calls']}"
        )
    if details["args_valid"] is False:
        problems.append("invalid arguments: " + "; ".join(details["args_problems"]))
    if problems:
        return False, "; ".join(problems)
    return True, "every span grounded, calls as expected"


def _negative_reason(details: Mapping[str, Any]) -> str:
    if any(details["grounded"]):
        grounded = [g for g in details["grounded"] if g]
        return f"a span is grounded in the decoy result ({grounded[0]})"
    if details["span_texts"]:
        return (
            "spans name what the prompt does not, or the absence is not acknowledged: "
            f"{details['span_texts']}"
        )
    return "the answer does not acknowledge that nothing was found"
