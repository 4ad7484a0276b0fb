"""The BFCL backends and the call executor: official results, never ``eval``, never shared.

``tests/scoring/bfcl/multi_turn_call_vectors.jsonl`` holds call texts with the results the
official ``execute_multi_turn_func_call`` gave them (``make_multi_turn_vectors.py``): unknown
names, syntax errors, blocked names, positional arguments, the method-name rewrite inside
strings. The backends come from ``pip install --no-deps bfcl-eval==2026.3.23``; without it the
tests that need them skip, and the loader's own error is tested with the package hidden.
"""

from __future__ import annotations

import builtins
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.tools import bfcl_backends
from pytest_llmeval.tools.bfcl_backends import (
    INSTALL_HINT,
    BackendsMissing,
    backend_class,
    new_instances,
)
from pytest_llmeval.tools.bfcl_execute import BackendSession, UnsupportedCall, format_result

HAVE_BACKENDS = (
    importlib.util.find_spec("bfcl_eval") is not None
    and importlib.util.find_spec("mpmath") is not None
)
needs_backends = pytest.mark.skipif(
    not HAVE_BACKENDS, reason=f"needs the BFCL backends: {INSTALL_HINT} mpmath"
)
CALL_VECTORS = Path(__file__).parents[1] / "scoring" / "bfcl" / "multi_turn_call_vectors.jsonl"


def _session(label: str = "m", config: dict[str, Any] | None = None) -> BackendSession:
    instances = new_instances(
        ["GorillaFileSystem", "TwitterAPI", "MathAPI"], config or {}, long_context=False
    )
    return BackendSession(instances, label=label, entry_id="multi_turn_base_0")


@needs_backends
def test_call_texts_give_the_official_results() -> None:
    for line in CALL_VECTORS.read_text(encoding="utf-8").splitlines():
        vector = json.loads(line)
        instances = new_instances(vector["classes"], vector["initial_config"], long_context=False)
        session = BackendSession(instances, label=vector["label"], entry_id=vector["id"])
        ours = [result.text for result in session.execute(vector["calls"])]
        for call, mine, official in zip(vector["calls"], ours, vector["results"], strict=True):
            assert (call, mine) == (call, official)


@needs_backends
@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('touch pwned')",
        "open(file='pwned', mode='w')",
        "print(x=1)",
        "json.dumps(obj=1)",
        "m_multi_turn_base_0_GorillaFileSystem_instance.__init__()",
        "ls(a=(lambda: 1)())",
        "ls(a=1 + 1)",
        "ls(a=[x for x in range(3)])",
        "pwd().__class__()",
    ],
)
def test_code_in_call_text_is_never_run(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("eval/exec called")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(builtins, "eval", refuse)
    monkeypatch.setattr(builtins, "exec", refuse)
    (result,) = _session().execute([text])
    assert isinstance(result.error, UnsupportedCall | NameError), result
    assert result.text.startswith("Error during execution: ")
    assert not (tmp_path / "pwned").exists()


@needs_backends
def test_every_session_has_its_own_instances() -> None:
    first, second = _session(), _session()
    first.execute(["mkdir(dir_name='only_in_first')"])
    (listing,) = second.execute(["ls()"])
    assert "only_in_first" not in listing.text
    assert first.instances["GorillaFileSystem"] is not second.instances["GorillaFileSystem"]


@needs_backends
def test_the_backends_load_without_the_model_handlers() -> None:
    code = (
        "import sys\n"
        "from pytest_llmeval.tools.bfcl_backends import BACKEND_MODULES, backend_class\n"
        "for name in BACKEND_MODULES: backend_class(name)\n"
        "heavy = [m for m in sys.modules if m.startswith(('bfcl_eval.constants',"
        " 'bfcl_eval.model_handler', 'openai', 'numpy'))]\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_missing_package_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def hide(name: str, *args: Any) -> Any:
        return None if name == "bfcl_eval" else real(name, *args)

    monkeypatch.setattr(bfcl_backends.importlib.util, "find_spec", hide)
    backend_class.cache_clear()
    try:
        with pytest.raises(BackendsMissing, match=re.escape(INSTALL_HINT)):
            new_instances(["GorillaFileSystem"], {}, long_context=False)
    finally:
        backend_class.cache_clear()


def test_a_backend_importing_something_else_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "gorilla_file_system.py"
    source = "import json\nfrom bfcl_eval.constants.model_config import MODEL_CONFIG_MAPPING\n"
    with pytest.raises(BackendsMissing, match="model_config"):
        bfcl_backends._check_imports(path, source)
    bfcl_backends._check_imports(path, "import json, random\nimport mpmath\n")


def test_an_unknown_class_is_named() -> None:
    with pytest.raises(BackendsMissing, match="WebSearchAPI"):
        backend_class("WebSearchAPI")


def test_results_are_formatted_the_official_way() -> None:
    assert format_result("text") == "text"
    assert format_result({"a": "é"}) == '{"a": "\\u00e9"}'
    assert format_result({"a": {1, 2}}) == "{'a': {1, 2}}"
    assert format_result(None) == "None"
    assert format_result(["NVDA", "AAPL"]) == "['NVDA', 'AAPL']"
    assert format_result(780.0) == "780.0"
