"""One public face: what ``pytest_llmeval`` and ``pytest_llmeval.testing`` export resolves, is
documented, costs nothing until used, and is all that the README, the docs, ``examples/`` and
``evals/`` import from the package. The examples themselves run in ``tests/test_examples.py``.
"""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import pytest_llmeval
import pytest_llmeval.api
import pytest_llmeval.testing

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = {
    "pytest_llmeval": set(pytest_llmeval.__all__),
    "pytest_llmeval.api": set(pytest_llmeval.api.__all__),
    "pytest_llmeval.testing": set(pytest_llmeval.testing.__all__),
}
"""The public modules and the names each one promises."""
CHEAP = ["pytest_llmeval.core", "pytest_llmeval.core.version"]
"""All that ``import pytest_llmeval`` loads besides itself: where the version lives."""
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<lang>\w*)[ \t]*\n(?P<code>.*?)^(?P=indent)```", re.M | re.S
)


def user_facing_code() -> list[tuple[str, int, str]]:
    """(file, line where the code starts, Python source) of everything a user reads or copies:
    the Python blocks of the README and docs (not the maintainers' ``docs/architecture.md``),
    the files of ``examples/``, ``evals/`` and ``fixtures/``, and the ``conftest.py`` that
    ``python -m pytest_llmeval init`` writes."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    pages += sorted((ROOT / "examples").rglob("*.md"))
    code = []
    for page in pages:
        if page.name == "architecture.md":
            continue
        text = page.read_text(encoding="utf-8")
        for block in FENCE.finditer(text):
            if block["lang"] in ("python", "py"):
                line = text.count("\n", 0, block.start()) + 2
                code.append((str(page.relative_to(ROOT)), line, textwrap.dedent(block["code"])))
    for folder in ("examples", "evals", "fixtures"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            code.append((str(path.relative_to(ROOT)), 1, path.read_text(encoding="utf-8")))
    for path in sorted((ROOT / "pytest_llmeval" / "commands" / "templates").rglob("*.py.tmpl")):
        code.append((str(path.relative_to(ROOT)), 1, path.read_text(encoding="utf-8")))  # init's
    return code


def package_imports(file: str, first: int, source: str) -> list[tuple[str, str, str | None]]:
    """(file:line, module, name or None) of each import from pytest_llmeval in ``source``,
    whose first line is line ``first`` of ``file``."""
    found: list[tuple[str, str, str | None]] = []
    for node in ast.walk(ast.parse(source, f"{file}:{first}")):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        at = f"{file}:{first + node.lineno - 1}"
        if isinstance(node, ast.Import):
            found += [(at, a.name, None) for a in node.names if _ours(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _ours(node.module or ""):
            assert node.module is not None
            found += [(at, node.module, a.name) for a in node.names]
    return found


def _ours(module: str) -> bool:
    return module == "pytest_llmeval" or module.startswith("pytest_llmeval.")


def test_every_exported_name_resolves() -> None:
    assert pytest_llmeval.__all__ == pytest_llmeval.api.__all__
    for name in pytest_llmeval.__all__:
        assert getattr(pytest_llmeval, name) is getattr(pytest_llmeval.api, name), name
    for name in pytest_llmeval.testing.__all__:
        assert getattr(pytest_llmeval.testing, name) is not None, name
    assert set(pytest_llmeval.__all__) <= set(dir(pytest_llmeval))
    assert set(pytest_llmeval.testing.__all__) <= set(dir(pytest_llmeval.testing))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        pytest_llmeval.Nope  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        pytest_llmeval.testing.Nope  # type: ignore[attr-defined]  # noqa: B018


def test_importing_the_package_loads_none_of_the_api() -> None:
    """Every import of a part of the package runs its ``__init__`` first: it must stay cheap,
    so the names load on first use."""
    code = (
        "import sys, pytest_llmeval, pytest_llmeval.testing\n"
        "loaded = [m for m in sys.modules if m.startswith(('pytest_llmeval', 'pydantic'))]\n"
        "print(sorted(loaded))\n"
        "from pytest_llmeval import Completion\n"
        "assert 'pytest_llmeval.api' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = done.stdout.split("\n")[0]
    assert loaded == str(["pytest_llmeval", *CHEAP, "pytest_llmeval.testing"])


def test_every_exported_class_and_function_says_what_it_is_for() -> None:
    for module, names in (
        (pytest_llmeval, pytest_llmeval.__all__),
        (pytest_llmeval.testing, pytest_llmeval.testing.__all__),
    ):
        for name in names:
            value = getattr(module, name)
            if inspect.isclass(value) or inspect.isfunction(value):
                assert (value.__doc__ or "").strip(), f"{module.__name__}.{name} has no docstring"


def test_the_api_page_lists_exactly_the_exported_names() -> None:
    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    main, _, testing = page.partition("\n## `pytest_llmeval.testing`\n")
    row = re.compile(r"^\| `([\w]+)` \|", re.M)
    assert sorted(row.findall(main)) == sorted(pytest_llmeval.__all__)
    assert sorted(row.findall(testing)) == sorted(pytest_llmeval.testing.__all__)


def test_docs_examples_and_evals_import_only_public_names() -> None:
    code = user_facing_code()
    imports = [found for where in code for found in package_imports(*where)]
    assert any(where.startswith("examples/own_agent/conftest.py") for where, _, _ in imports)
    assert any(where.startswith("docs/openai.md") for where, _, _ in imports)
    internal = [
        f"{where}: {module}" + (f".{name}" if name else "")
        for where, module, name in imports
        if module not in PUBLIC or (name is not None and name not in PUBLIC[module])
    ]
    assert not internal, "imports of internal modules or names:\n" + "\n".join(internal)


def test_the_import_check_sees_internal_imports() -> None:
    source = textwrap.dedent("""
        import pytest_llmeval.core.models
        from pytest_llmeval import Completion, Packed
        from pytest_llmeval.testing import Rule
        from pytest_llmeval.testing.server import Reply

        def inside():
            from pytest_llmeval.runners.base import Runner
    """)
    found = package_imports("x.py", 1, source)
    assert [(w, m, n) for w, m, n in found if m not in PUBLIC or (n and n not in PUBLIC[m])] == [
        ("x.py:2", "pytest_llmeval.core.models", None),
        ("x.py:3", "pytest_llmeval", "Packed"),
        ("x.py:5", "pytest_llmeval.testing.server", "Reply"),
        ("x.py:8", "pytest_llmeval.runners.base", "Runner"),
    ]
