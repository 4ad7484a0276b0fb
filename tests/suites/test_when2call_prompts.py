"""The six When2Call MCQ prompt formats, against known prompts' hashes and hand-built text."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from pytest_llmeval.suites.when2call_prompts import (
    FORMATS,
    build_prompt,
    format_text,
    tool_call_option,
)
from tests.conftest import W2C_FILE

# sha256 (16 hex) of the prompt, and of prompt + tool_call option, for row 0 (two tools) and
# row 4 (no tools) of the test file, as the official task's prompt builder writes them
CHECK = {
    "default": ("c525da819b35a738", "5478761222b012d2", "d65f400aea0dfce1", "88c04bf51246b20a"),
    "hermes": ("285c5a8ee76f4675", "b569a26fd593d443", "6ad875464548c59c", "805ba9b4c4b73d2e"),
    "qwen2_5": ("90a4aeb8ea35a698", "df76b5080ce54109", "599a2eb76562658f", "903afafeaf0304ed"),
    "llama3_2": ("eb6205e92e59d216", "94f024e8508cf675", "61d2b89aaf62e233", "99f6a6fac2fd72a9"),
    "xlam": ("55bfdf9f7c8927f5", "b93c92a6fa01a6d9", "970b3580d4448083", "927d191792bc599c"),
    "functionary": (
        "a7817c2d513f2ea1",
        "d62aae0a7fd77f0f",
        "fae5dfe7300fe70a",
        "f41ce3e1c1b837c1",
    ),
}


def _sha16(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in W2C_FILE.read_text(encoding="utf-8").splitlines()]


def _prompt_and_call(fmt: Any, row: dict[str, Any]) -> tuple[str, str]:
    parsed = [json.loads(t) for t in row["tools"]]
    prompt = build_prompt(fmt, row["question"], row["tools"], parsed)
    call = row["answers"]["tool_call"]
    return prompt, tool_call_option(fmt, call, json.loads(call))


@pytest.mark.parametrize("fmt", FORMATS)
def test_prompts_match_the_check_values_on_rows_0_and_4(fmt: Any) -> None:
    rows = _rows()
    assert rows[0]["uuid"].startswith("276e4475") and rows[0]["tools"]
    assert rows[4]["uuid"].startswith("530a39ab") and rows[4]["tools"] == []
    got = []
    for row in (rows[0], rows[4]):
        prompt, option = _prompt_and_call(fmt, row)
        got += [_sha16(prompt), _sha16(prompt + option)]
    assert tuple(got) == CHECK[fmt]


# sha256 of the six formats' fixed text (sorted JSON, without ``source``) as copied from the
# official task's utils.py (NVIDIA/When2Call @ecc8d42): one changed space changes every score
FORMAT_TEXT_SHA256 = "9aa38ec332a4e91f764f7bcbc17018e79d4602d3aa50988c7b4d9eb6e8af04d4"


def test_the_shipped_format_text_is_the_official_text() -> None:
    text = json.dumps(format_text(), sort_keys=True, ensure_ascii=False)
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == FORMAT_TEXT_SHA256


# A row worked out by hand from the joining rules: one tool, a call with every kind of value.
TOOL = '{"name": "calc.add", "description": "Adds \\u00e9 numbers", "parameters": {}}'
PARSED = json.loads(TOOL)
CALL = '{"name": "calc.add", "arguments": {"a": "x", "b": 2, "c": true, "d": null, "e": [1, 2]}}'
Q = "Add them?"


def test_default_by_hand() -> None:
    f = format_text()["default"]
    assert build_prompt("default", Q, [TOOL], [PARSED]) == (
        f["system"] + "\n" + f["tool_use"] + "\n\n<tool>" + TOOL + "</tool>\n\nAdd them?"
    )
    assert build_prompt("default", Q, [], []) == f["system"] + "\n" + f["tool_use"] + "\n\n\n\n" + Q
    assert tool_call_option("default", CALL, json.loads(CALL)) == CALL


def test_llama3_2_by_hand() -> None:
    f = format_text()["llama3_2"]
    listed = '[{"name": "calc.add", "description": "Adds \\u00e9 numbers", "parameters": {}}]'
    assert build_prompt("llama3_2", Q, [TOOL], [PARSED]) == (
        f["system_head"] + listed + f["user_head"] + Q + f["assistant_head"]
    )
    assert build_prompt("llama3_2", Q, [], []).startswith(f["system_head"] + "[]<|eot_id|>")
    option = tool_call_option("llama3_2", CALL, json.loads(CALL))
    assert option == '[calc.add(a="x", b=2, c=True, d=None, e=[1, 2])]'
    nested = {"name": "f", "arguments": {"o": {"k": "v"}, "x": 2.5}}
    assert tool_call_option("llama3_2", json.dumps(nested), nested) == "[f(o={'k': 'v'}, x=2.5)]"


def test_qwen2_5_by_hand() -> None:
    f = format_text()["qwen2_5"]
    two = [TOOL, '{"name": "b"}']
    assert build_prompt("qwen2_5", Q, two, [PARSED, {"name": "b"}]) == (
        f["system_head"]
        + TOOL
        + "\n"
        + '{"name": "b"}'
        + f["after_tools"]
        + Q
        + f["assistant_head"]
    )
    assert build_prompt("qwen2_5", Q, [], []) == (
        f["system_head"] + f["after_tools"] + Q + f["assistant_head"]
    )
    assert tool_call_option("qwen2_5", CALL, json.loads(CALL)) == CALL  # no <tool_call> tags


def test_xlam_by_hand() -> None:
    f = format_text()["xlam"]
    prompt = build_prompt("xlam", Q, [TOOL], [PARSED])
    assert prompt == (
        "[BEGIN OF TASK INSTRUCTION]\n" + f["task_instruction"] + "\n[END OF TASK INSTRUCTION]\n\n"
        "[BEGIN OF AVAILABLE TOOLS]\n['" + TOOL.replace("\\", "\\\\") + "']\n"
        "[END OF AVAILABLE TOOLS]\n\n"
        "[BEGIN OF FORMAT INSTRUCTION]\n" + f["format_instruction"]
        + "\n[END OF FORMAT INSTRUCTION]\n\n[BEGIN OF QUERY]\nAdd them?\n[END OF QUERY]\n\n"
    )  # fmt: skip
    assert "[BEGIN OF AVAILABLE TOOLS]\n[]\n" in build_prompt("xlam", Q, [], [])
    option = tool_call_option("xlam", CALL, json.loads(CALL))
    assert option == '{\n\t"tool_calls": [\n\t' + CALL + "\n\t]\n}"


def test_hermes_by_hand() -> None:
    f = format_text()["hermes"]
    assert build_prompt("hermes", Q, [TOOL, "{}"], [PARSED, {}]) == (
        f["system_open"] + f["intro"] + "<tools> " + TOOL + " {}" + " </tools> " + f["schema"]
        + f["call_example"] + "<|im_start|>user\n" + Q + "<|im_end|>"
    )  # fmt: skip
    assert not build_prompt("hermes", Q, [], []).endswith("assistant\n")
    assert tool_call_option("hermes", CALL, json.loads(CALL)) == f"<tool_call>{CALL}\n</tool_call>"


def test_functionary_by_hand() -> None:
    f = format_text()["functionary"]
    assert build_prompt("functionary", Q, [TOOL], [PARSED]) == (
        f["system_start"] + "Use the function 'calc.add' to 'Adds \u00e9 numbers'\n" + TOOL
        + "\n\n" + f["system_end"] + f["user_head"] + Q + f["assistant_head"]
    )  # fmt: skip
    option = tool_call_option("functionary", CALL, json.loads(CALL))
    assert option == (
        '<function=calc.add>{"a": ""x"", "b": "2", "c": "true", "d": "null", "e": "[1, 2]"}'
        "</function>"
    )
    params = {"name": "g", "parameters": {"q": "y"}}
    assert tool_call_option("functionary", json.dumps(params), params) == (
        '<function=g>{"q": ""y""}</function>'
    )
