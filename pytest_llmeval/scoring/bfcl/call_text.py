"""A multi-turn reply as the official executor's call texts (its ``decode_execute``).

Multi-turn calls are run from Python call text, one string per call, written from the decoded
reply the official way:

* **FC**: ``name(k1=repr(v1),k2=repr(v2))``, with no spaces. A call's arguments must decode to
  a JSON object; a text reply decodes only when empty (to no calls).
* **Prompt**: the reply decoded as Python calls (:func:`decode_prompt_python`, positional
  arguments dropped), then ``name(k1=V1, k2=V2)``, where ``V`` is ``repr(value)`` except for
  dicts: a dict whose values are all dicts is written as a *call* of its first key (so ``{}``
  fails to decode, and ``{'a': {'b': 1}}`` becomes ``a(b=1)``), and any other dict as
  ``{'k': V, ...}`` with each key put in single quotes as it is.

:func:`decode_execute` raises :class:`DecodeError` where the official one raises; the
multi-turn loop and checker treat such a step, and a step with no calls, as "no calls".
"""

from __future__ import annotations

from typing import Any

from pytest_llmeval.scoring.bfcl.calls import DOUBLE_STAR, DecodeError, Mode
from pytest_llmeval.scoring.bfcl.decode_fc import FcOutput, decode_fc
from pytest_llmeval.scoring.bfcl.decode_prompt import decode_prompt_python

__all__ = ["decode_execute", "is_empty_step"]


def decode_execute(output: FcOutput, mode: Mode) -> list[str]:
    """The call texts of one reply (module docstring); raise :class:`DecodeError`."""
    if mode == "fc":
        texts = []
        for call in decode_fc(output):
            for name, arguments in call.items():
                if type(arguments) is not dict:
                    raise DecodeError(f"the arguments of {name!r} are not a JSON object")
                written = ",".join(f"{key}={value!r}" for key, value in arguments.items())
                texts.append(f"{name}({written})")
        return texts
    if not isinstance(output, str):
        raise DecodeError("a prompt-mode reply must be text")
    return [_prompt_call(name, arguments) for name, arguments in _pairs(output)]


def _pairs(text: str) -> list[tuple[str, dict[str, Any]]]:
    return [pair for call in decode_prompt_python(text) for pair in call.items()]


def _prompt_call(name: str, arguments: dict[str, Any]) -> str:
    written = ", ".join(f"{_key(key)}={_nested(value)}" for key, value in arguments.items())
    return f"{name}({written})"


def _key(key: str) -> str:
    return "None" if key == DOUBLE_STAR else key  # the official decoder keeps Python's None


def _nested(value: Any) -> str:
    if not isinstance(value, dict):
        return repr(value)
    if all(isinstance(inner, dict) for inner in value.values()):
        if not value:
            raise DecodeError("an empty dict argument (the official writer fails on it)")
        name = next(iter(value))
        arguments = value[name]
        return _prompt_call(name, arguments)
    return "{" + ", ".join(f"'{key}': {_nested(inner)}" for key, inner in value.items()) + "}"


def is_empty_step(calls: list[str]) -> bool:
    """The official "no calls" test for a decoded step: ``[]``, or one empty call text."""
    return len(calls) == 0 or (len(calls) == 1 and len(calls[0]) == 0)
