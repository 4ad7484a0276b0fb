"""The official value comparisons: strings, lists, dicts and lists of dicts.

Each compares one model value with the list of values the ground truth accepts for that
argument, and returns a :class:`~pytest_llmeval.scoring.bfcl.calls.Verdict` with the official
``error_type``. The official rules, with their quirks:

* Strings are compared after :func:`standardize_string` on both sides; only string accepted
  values take part.
* A list must equal one accepted list, element by element, in order, after string elements
  are standardized. Every accepted value is read as a sequence, so an optional marker ``""``
  reads as the empty list: an optional list argument given as ``[]`` passes.
* A dict is compared with each accepted dict (``""`` skipped): every key must be accepted, its
  value (standardized when a string) must be one of the key's accepted values, and every
  accepted key left out must accept ``""``. Values are compared one level deep only. When
  every accepted value is ``""``, the result is ``dict_checker:unclear``.
* A list of dicts must have as many dicts as an accepted list, and each must pass the dict
  rule against the accepted dict at its position.
"""

from __future__ import annotations

import re
from typing import Any

from pytest_llmeval.scoring.bfcl.calls import Verdict

_IGNORED = re.compile(r"[ \,\.\/\-\_\*\^]")


def standardize_string(text: str) -> str:
    """Remove spaces and ``,./-_*^``, lower-case, and turn ``'`` into ``"``."""
    return _IGNORED.sub("", text).lower().replace("'", '"')


def _standard(value: Any) -> Any:
    return standardize_string(value) if type(value) is str else value


def _standard_sequence(values: Any) -> list[Any]:
    """Standardize the string elements of an accepted value, read by index as the official code
    reads it (a string reads as its characters; a number raises ``TypeError``)."""
    return [_standard(values[index]) for index in range(len(values))]


def check_string(param: str, value: str, accepted: list[Any]) -> Verdict:
    """``value_error:string`` unless the standardized value is a standardized accepted string."""
    wanted = [standardize_string(option) for option in accepted if type(option) is str]
    if standardize_string(value) in wanted:
        return Verdict.ok()
    return Verdict.fail(
        "value_error:string",
        f"Invalid value for parameter {param!r}: {value!r}. Expected one of {accepted}. "
        "Case insensitive.",
    )


def check_list(param: str, value: list[Any], accepted: list[Any]) -> Verdict:
    """``value_error:list/tuple`` unless the list equals an accepted one (strings standardized)."""
    got = [_standard(element) for element in value]
    if got in [_standard_sequence(option) for option in accepted]:
        return Verdict.ok()
    return Verdict.fail(
        "value_error:list/tuple",
        f"Invalid value for parameter {param!r}: {value!r}. Expected one of {accepted}.",
    )


def check_dict(param: str, value: dict[Any, Any], accepted: list[Any]) -> Verdict:
    """The official dict rule (module docstring); the last failure found is the one reported."""
    verdict = Verdict.fail("dict_checker:unclear", f"No accepted dict for parameter {param!r}.")
    for option in accepted:
        if option == "":
            continue
        verdict = _dict_against(value, option)
        if verdict.valid:
            return verdict
    return verdict


def _dict_against(value: dict[Any, Any], option: Any) -> Verdict:
    verdict = Verdict.ok()
    for key, item in value.items():
        if key not in option:
            verdict = Verdict.fail(
                "value_error:dict_key", f"Unexpected dict key parameter: {key!r}."
            )
            break
        wanted = _standard_sequence(option[key])
        if _standard(item) not in wanted:
            verdict = Verdict.fail(
                "value_error:dict_value",
                f"Invalid value for parameter {key!r}: {item!r}. Expected one of {wanted}.",
            )
            break
    for key, options in option.items():
        if key not in value and "" not in options:
            return Verdict.fail("value_error:dict_key", f"Missing dict key parameter: {key!r}.")
    return verdict


def check_list_of_dicts(param: str, value: list[Any], accepted: list[Any]) -> Verdict:
    """Each dict against the accepted dict at its position, for some accepted list."""
    verdict = Verdict.fail("list_dict_checker:unclear", f"No accepted list for {param!r}.")
    for option in accepted:
        if len(value) != len(option):
            verdict = Verdict.fail(
                "value_error:list_dict_count", "Wrong number of dictionaries in the list."
            )
            continue
        verdict = Verdict.ok()
        for index, item in enumerate(value):
            verdict = check_dict(param, item, [option[index]])
            if not verdict.valid:
                break
        if verdict.valid:
            return verdict
    return verdict
