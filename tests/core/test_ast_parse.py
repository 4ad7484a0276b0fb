"""Every parse of the package goes through core/ast_parse.py, under one lock (gh-106905)."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

from pytest_llmeval.core.ast_parse import parse

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_llmeval"


def test_no_module_calls_ast_parse_but_the_locked_one() -> None:
    callers = [
        path.relative_to(PACKAGE).as_posix()
        for path in sorted(PACKAGE.rglob("*.py"))
        if "ast.parse(" in path.read_text(encoding="utf-8")
    ]
    assert callers == ["core/ast_parse.py"]


def test_it_parses_as_ast_parse_does_from_many_threads_at_once() -> None:
    text = "[f(a=1, b=[2, {'c': -3.5}]), g(x='y')]"
    expected = ast.dump(ast.parse(text, mode="eval"))
    failures: list[BaseException] = []

    def work() -> None:
        for _ in range(300):
            try:
                assert ast.dump(parse(text, mode="eval")) == expected
            except BaseException as exc:
                failures.append(exc)
                return

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert isinstance(parse("x = 1"), ast.Module)
