"""``ast.parse`` for every thread of a process, one at a time.

CPython before 3.11.8 and 3.12.1 keeps the AST constructor's recursion depth in state shared
by every thread (gh-106905): two threads building ASTs at once (the engine's loop decoding a
model's reply while pytest's thread scores another case) can make one of them fail with
``SystemError: AST constructor recursion depth mismatch``, a case's error that no input
explains. Every parse of the package goes through :func:`parse`, under one lock.
"""

from __future__ import annotations

import ast
import threading
from typing import Literal, overload

__all__ = ["parse"]

_LOCK = threading.Lock()


@overload
def parse(
    source: str, mode: Literal["exec"] = "exec", filename: str = "<unknown>"
) -> ast.Module: ...


@overload
def parse(source: str, mode: Literal["eval"], filename: str = "<unknown>") -> ast.Expression: ...


def parse(
    source: str, mode: Literal["exec", "eval"] = "exec", filename: str = "<unknown>"
) -> ast.Module | ast.Expression:
    """:func:`ast.parse`, one thread at a time (it never runs the code it parses)."""
    with _LOCK:
        tree = ast.parse(source, filename=filename, mode=mode)
    assert isinstance(tree, (ast.Module, ast.Expression))
    return tree
