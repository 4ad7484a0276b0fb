"""The official prompt texts, read from the installed ``bfcl-eval`` at run time, never copied.

BFCL's prompt-mode system prompt and its ``miss_func`` user messages are constants in
``bfcl_eval/constants/default_prompts.py``. That module is plain assignments of literals (and
concatenations of them); it is read here as *text*, parsed with :mod:`ast`, and only literal
values are taken: nothing of the package is imported or run.

The suite sends the package's default format, ``ret_fmt=python&tool_call_tag=False&
func_doc_fmt=json&prompt_fmt=plaintext&style=classic``: the ``classic`` style's pieces in the
plaintext template, with the python output format (:func:`system_prompt`). The template's
quirks are the package's and are kept: no space between the persona and the task, and two
spaces before "You SHOULD NOT" (the empty ``param_types`` between them).
"""

from __future__ import annotations

import ast
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_llmeval.core.ast_parse import parse
from pytest_llmeval.core.errors import ConfigError
from pytest_llmeval.suites.bfcl_data import INSTALL_LINE, package_dir

PROMPTS_FILE = Path("constants") / "default_prompts.py"
"""Where the constants live inside the ``bfcl_eval`` package."""

DEFAULT_FORMAT = {
    "return_format": "python",
    "function_doc_format": "json",
    "prompt_format": "plaintext",
    "style": "classic",
}
"""The parts of ``DEFAULT_SYSTEM_PROMPT_FORMAT`` the suite uses (no tool-call tag)."""


@dataclass(frozen=True)
class PromptTexts:
    """The official texts the conversation needs."""

    persona: str
    task: str
    tool_call_no_tag: str
    multiturn_behavior: str
    available_tools: str
    template: str
    """The plaintext template (``{persona}{task}\\n\\n...``)."""
    output_format: str
    """The python output format, ``[func_name1(params_name1=params_value1, ...), ...]``."""
    param_types: str
    """The python ``param_types`` (empty)."""
    additional_functions_fc: str
    """The ``miss_func`` user message in FC mode."""
    additional_functions_prompting: str
    """The ``miss_func`` user message in prompt mode, with ``{functions}``."""


def system_prompt(texts: PromptTexts, functions: list[dict[str, Any]]) -> str:
    """The official default system prompt over ``functions`` (already language-hinted)."""
    tool_call_format = texts.tool_call_no_tag.format(
        output_format=texts.output_format, param_types=texts.param_types
    )
    available_tools = texts.available_tools.format(
        format=DEFAULT_FORMAT["function_doc_format"],
        functions=json.dumps(functions, indent=4),
    )
    return texts.template.format(
        persona=texts.persona,
        task=texts.task,
        tool_call_format=tool_call_format,
        multiturn_behavior=texts.multiturn_behavior,
        available_tools=available_tools,
    )


@functools.cache
def installed_texts() -> PromptTexts:
    """The texts of the installed package (read once per process).

    Raises :class:`ConfigError` naming the install line when the package is missing or its
    file does not hold the expected constants."""
    package = package_dir()
    if package is None or not (package / PROMPTS_FILE).is_file():
        raise ConfigError(
            f"the bfcl suite reads BFCL's prompt texts from the installed package: run "
            f"`{INSTALL_LINE}`"
        )
    return read_texts(package / PROMPTS_FILE)


def read_texts(path: Path) -> PromptTexts:
    """Parse a ``default_prompts.py`` file's literal constants into :class:`PromptTexts`."""
    try:
        constants = literal_constants(path.read_text(encoding="utf-8"))
        style = constants["PROMPT_STYLE_TEMPLATES"][DEFAULT_FORMAT["style"]]
        fmt = DEFAULT_FORMAT["return_format"]
        texts = PromptTexts(
            persona=style["persona"],
            task=style["task"],
            tool_call_no_tag=style["tool_call_no_tag"],
            multiturn_behavior=style["multiturn_behavior"],
            available_tools=style["available_tools"],
            template=constants["PROMPT_TEMPLATE_MAPPING"][DEFAULT_FORMAT["prompt_format"]],
            output_format=constants["OUTPUT_FORMAT_MAPPING"][fmt],
            param_types=constants["PARAM_TYPE_MAPPING"][fmt],
            additional_functions_fc=constants["DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC"],
            additional_functions_prompting=constants[
                "DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING"
            ],
        )
    except (OSError, SyntaxError, KeyError, TypeError) as exc:
        raise ConfigError(
            f"{path}: not the BFCL prompt constants the suite expects ({exc!r}); "
            f"reinstall with `{INSTALL_LINE}`"
        ) from exc
    if not all(isinstance(value, str) for value in vars(texts).values()):
        raise ConfigError(f"{path}: a BFCL prompt constant is not a string; `{INSTALL_LINE}`")
    return texts


def literal_constants(source: str) -> dict[str, Any]:
    """``NAME = <literal>`` assignments of a module's top level, in order.

    A value may be a literal, a container of literals, a name assigned earlier, or a ``+`` of
    those (``"{functions}\\n" + OTHER``); any other assignment is left out."""
    constants: dict[str, Any] = {}
    for node in parse(source).body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        if not isinstance(target, ast.Name):
            continue
        try:
            constants[target.id] = _literal(node.value, constants)
        except _NotLiteral:
            continue
    return constants


class _NotLiteral(Exception):
    pass


def _literal(node: ast.expr, known: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in known:
        return known[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left, known), _literal(node.right, known)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
        raise _NotLiteral
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {
            _literal(k, known): _literal(v, known)
            for k, v in zip(node.keys, node.values, strict=True)
            if k is not None
        }
    if isinstance(node, ast.List):
        return [_literal(e, known) for e in node.elts]
    raise _NotLiteral
