"""The When2Call MCQ prompt formats: the six official ones, joined as the official task files
join them, and this project's ``harmony`` (rendered by openai-harmony).

The fixed text of each format is data (``data/when2call_prompt_formats.json``, from the
official task's ``utils.py``, NVIDIA/When2Call @ecc8d42, Apache-2.0; its ``source`` line says
so); how the parts are joined and how each format rewrites the ``tool_call`` option is below,
written from the protocol's description. These strings *are* the benchmark: one space off and
every log-likelihood changes, so each format is checked against hashes of known prompts.

* ``tools`` is a row's list of tool strings exactly as stored (raw JSON text); ``parsed`` the
  same tools parsed once (a name and a description are read from them).
* Only the ``tool_call`` option is rewritten; the three prose options are used as they are.
* Python's own text forms are part of the protocol: ``json.dumps`` with its default separators
  and ASCII escapes (``llama3_2``), ``repr`` of the list of tool strings (``xlam``), ``str`` of
  argument values (``llama3_2``: ``True``, ``None``, ``{'a': 1}``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from importlib import resources
from typing import Any, Literal

from pytest_llmeval.suites.when2call_harmony import harmony_prompt, harmony_tool_call

PromptFormat = Literal["default", "hermes", "qwen2_5", "llama3_2", "xlam", "functionary", "harmony"]
FORMATS: tuple[PromptFormat, ...] = (
    "default",
    "hermes",
    "qwen2_5",
    "llama3_2",
    "xlam",
    "functionary",
)
"""The six official formats (the task files of the benchmark)."""
EXTENSION_FORMATS: tuple[PromptFormat, ...] = ("harmony",)
"""This project's formats: ``harmony`` (gpt-oss), rendered by openai-harmony
(:mod:`~pytest_llmeval.suites.when2call_harmony`)."""
ALL_FORMATS: tuple[PromptFormat, ...] = FORMATS + EXTENSION_FORMATS


@functools.cache
def format_text() -> dict[str, dict[str, str]]:
    """The fixed text of every format, by format name (the shipped data file)."""
    raw = resources.files("pytest_llmeval.suites").joinpath("data/when2call_prompt_formats.json")
    data = json.loads(raw.read_text(encoding="utf-8"))
    return {name: parts for name, parts in data.items() if name != "source"}


def build_prompt(
    fmt: PromptFormat, question: str, tools: Sequence[str], parsed: Sequence[dict[str, Any]]
) -> str:
    """The prompt of one row in format ``fmt`` (the context every option continues)."""
    if fmt == "harmony":
        return harmony_prompt(question, parsed)
    f = format_text()[fmt]
    if fmt == "default":
        listed = "\n\n".join(f"<tool>{t}</tool>" for t in tools)
        return f["system"] + "\n" + f["tool_use"] + "\n\n" + listed + "\n\n" + question
    if fmt == "llama3_2":
        listed = json.dumps(list(parsed))
        return f["system_head"] + listed + f["user_head"] + question + f["assistant_head"]
    if fmt == "qwen2_5":
        listed = "".join(t + "\n" for t in tools).strip()
        return f["system_head"] + listed + f["after_tools"] + question + f["assistant_head"]
    if fmt == "xlam":
        return (
            "[BEGIN OF TASK INSTRUCTION]\n" + f["task_instruction"] + "\n[END OF TASK INSTRUCTION]"
            "\n\n[BEGIN OF AVAILABLE TOOLS]\n" + repr(list(tools)) + "\n[END OF AVAILABLE TOOLS]"
            "\n\n[BEGIN OF FORMAT INSTRUCTION]\n" + f["format_instruction"]
            + "\n[END OF FORMAT INSTRUCTION]\n\n[BEGIN OF QUERY]\n" + question
            + "\n[END OF QUERY]\n\n"
        )  # fmt: skip
    if fmt == "hermes":
        return (
            f["system_open"] + f["intro"] + f["tools_open"] + " ".join(tools) + f["tools_close"]
            + f["schema"] + f["call_example"] + f["user_open"] + question + f["user_close"]
        )  # fmt: skip
    if fmt == "functionary":
        listed = "".join(
            f"Use the function '{p.get('name', '')}' to '{p.get('description', '')}'\n{t}\n\n"
            for t, p in zip(tools, parsed, strict=True)
        )
        return (
            f["system_start"] + listed + f["system_end"] + f["user_head"] + question
            + f["assistant_head"]
        )  # fmt: skip
    raise ValueError(f"unknown When2Call prompt format {fmt!r}")


def tool_call_option(fmt: PromptFormat, call: str, parsed_call: dict[str, Any]) -> str:
    """The ``tool_call`` option in format ``fmt``'s call syntax (``call`` is the raw JSON)."""
    if fmt == "harmony":
        return harmony_tool_call(parsed_call, _arguments(parsed_call))
    f = format_text()[fmt]
    if fmt in ("default", "qwen2_5"):
        return call
    if fmt in ("hermes", "xlam"):
        return f["call_open"] + call + f["call_close"]
    name = str(parsed_call.get("name"))
    arguments = _arguments(parsed_call)
    if fmt == "llama3_2":
        shown = ", ".join(
            f'{k}="{v}"' if isinstance(v, str) else f"{k}={v}" for k, v in arguments.items()
        )
        return f"[{name}({shown})]"
    if fmt == "functionary":
        shown = ", ".join(f'"{k}": "{json.dumps(v)}"' for k, v in arguments.items())
        return f"<function={name}>{{{shown}}}</function>"
    raise ValueError(f"unknown When2Call prompt format {fmt!r}")


def _arguments(parsed_call: dict[str, Any]) -> dict[str, Any]:
    value = parsed_call.get("arguments")
    if value is None:
        value = parsed_call.get("parameters")
    return value if isinstance(value, dict) else {}
