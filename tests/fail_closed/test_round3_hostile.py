"""Fail closed, the hostile review of architecture step 3 (issue 30): the reshaped plugin, the
one end of a run, the optimised per-case result path and the public face, attacked the way a
user and a flaky machine would.

* a secret a case's tool call carries as a dict *key*, nested under a secret-named key
  (``{"password": {"v": …}}``), under a full-width secret name (``ＡＰＩ_KEY``), or under a
  secret-named argument shown in a missed case's failure text (junit, the terminal) reaches
  no file and no output: the results were walked only for values, one level deep, and the
  failure text rendered the arguments as the agent gave them;
* ``import pytest_llmeval`` stays cheap under pytest's own probes: pytest looks up
  ``_mock_name`` on every module a test file imports, which imported the whole API.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from tests.conftest import read_jsonl, write_json

# -- secrets in every field of a result -----------------------------------------------------

KEY = "Zq8Wm3Nx7Rt2Lp5V"
"""A fake configured secret (``--llmeval-secret-env``)."""
NAMED = {
    "apiKey": "plainvalue12345",
    "\uff21\uff30\uff29_KEY": "fullwidthvalue123",
    "\u017fecret": "longsvalue12345",
}
"""Values under secret-named keys (``ſecret`` case-folds to ``secret``, ``ＡＰＩ_KEY`` is
``API_KEY`` in compatibility form): secrets nobody configured."""
NESTED = "nestedpw12345"
RESULT_TOKEN = "resulttoken123"

SECRET_AGENT = f"""
import base64, os
from urllib.parse import quote
import pytest
from pytest_llmeval import AgentResponse, ToolCallRecord

KEY = os.environ["MY_EVAL_SECRET"]


class Agent:
    def fingerprint(self):
        return {{"type": "hostile", "model": "m"}}

    def run(self, case, broker):
        params = {NAMED!r}
        params.update({{
            "nested": {{"password": {{"v": {NESTED!r}, "more": [{NESTED!r}]}}}},
            "plain": KEY, "b64": base64.b64encode(KEY.encode()).decode(),
            "pct": quote(KEY, safe=""), KEY: "a secret as a key",
        }})
        call = ToolCallRecord(name="t", params=params,
                              result={{"token": {RESULT_TOKEN!r}, "echo": {{KEY: KEY}}}})
        return AgentResponse(response="said " + KEY, tool_calls=[call])


@pytest.fixture(scope="session")
def llmeval_agent():
    return Agent()
"""


def _texts(root: Path, outputs: dict[str, str]) -> dict[str, bytes]:
    found = {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    found.pop(str(root / "conftest.py"), None)  # the test's own source holds the values
    found.pop(str(root / "qa.golden.json"), None)
    return found | {name: text.encode() for name, text in outputs.items()}


def test_a_secret_anywhere_in_a_tool_call_reaches_no_file_and_no_output(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A missed case's tool call holds the configured secret as an argument's *name*, its
    values under a full-width or case-folded secret name and nested under ``password``, and
    the tool result holds it as a key: no file the session writes (results, journal, report,
    junit) and nothing it prints holds any of them, and the leak check has nothing to find.
    Before: the results kept keys as they were and walked one level under a secret name, and
    the failure text (junit, terminal) showed every argument as the agent gave it."""
    monkeypatch.setenv("MY_EVAL_SECRET", KEY)
    write_json(pytester, "qa.golden.json", [{"id": "c", "input": "hi", "expected_output": "x"}])
    pytester.makeconftest(SECRET_AGENT)
    result = pytester.runpytest(
        "--llmeval-secret-env", "MY_EVAL_SECRET", "--llmeval-run-dir", "run",
        "--junitxml", "junit.xml", "-rA",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the case missed; nothing else
    out = result.stdout.str()
    assert "leak check" not in out
    assert "tool calls: t(" in out  # the failure text is shown, masked
    values = [KEY, base64.b64encode(KEY.encode()).decode(), NESTED, RESULT_TOKEN, *NAMED.values()]
    texts = _texts(pytester.path, {"stdout": out, "stderr": result.stderr.str()})
    leaked = [(where, v) for where, data in texts.items() for v in values if v.encode() in data]
    assert leaked == []
    (row,) = read_jsonl(pytester.path / "run" / "results.jsonl")
    params = row["tool_calls"][0]["params"]
    assert params["nested"] == {"password": {"v": "[REDACTED]", "more": ["[REDACTED]"]}}
    assert "[REDACTED]" in params  # the key that was the secret


# -- the public face stays cheap --------------------------------------------------------------


def test_pytest_probing_an_imported_package_does_not_import_the_api(
    pytester: pytest.Pytester,
) -> None:
    """A test file that imports ``pytest_llmeval`` in a project that does not load the plugin
    (``-p no:llmeval``): pytest probes every module the file holds (``_mock_name`` while it
    looks for fixtures), and the package answers without importing its API (about a second).
    A private or dunder name is never public, so it is refused at once."""
    pytester.makepyfile(
        test_probe="""
        import sys
        import pytest_llmeval

        def test_cheap():
            assert "pytest_llmeval.api" not in sys.modules
            for name in ("_mock_name", "_fixture_function_marker", "__wrapped__", "_x"):
                assert not hasattr(pytest_llmeval, name)
            assert "pytest_llmeval.api" not in sys.modules
            assert pytest_llmeval.Usage().counted == 0  # a public name still resolves
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:llmeval", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert json.dumps(result.parseoutcomes()) == json.dumps({"passed": 1})


# -- a resume after the data changed ----------------------------------------------------------


def test_a_resume_after_a_row_was_deleted_does_not_count_its_old_result(
    pytester: pytest.Pytester,
) -> None:
    """A run finished 3 cases; a row is then deleted from the data file (or its id changed)
    and the run dir resumed. Its earlier result judges a case that no longer exists: one
    usage error naming the case and ``--llmeval-resume-allow-mismatch``, nothing touched.
    Before: the stale result was counted (``3/3 passed`` over 2 cases). Node-id arguments
    (``file::case``) that choose some cases of a file still reuse the rest."""
    rows = [{"id": f"c{i}", "input": "a", "expected_output": "a"} for i in range(3)]
    write_json(pytester, "qa.golden.json", rows)
    echo = ("--llmeval-runner", "echo")
    assert pytester.runpytest(*echo, "--llmeval-run-dir=run").ret == pytest.ExitCode.OK
    before = (pytester.path / "run" / "results.jsonl").read_bytes()
    write_json(pytester, "qa.golden.json", rows[:2])
    result = pytester.runpytest(*echo, "--llmeval-resume=run")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*1 of its finished cases are no longer in their files (qa.golden.json::c2:*"
         "--llmeval-resume-allow-mismatch*"]
    )  # fmt: skip
    assert (pytester.path / "run" / "results.jsonl").read_bytes() == before
    chosen = pytester.runpytest(*echo, "--llmeval-resume=run", "qa.golden.json::c1")
    assert chosen.ret == pytest.ExitCode.OK
    kept = pytester.runpytest(*echo, "--llmeval-resume=run", "--llmeval-resume-allow-mismatch")
    assert kept.ret == pytest.ExitCode.OK


# -- a runner whose fingerprint() is broken ---------------------------------------------------

BROKEN_FINGERPRINT = """
from pytest_llmeval import Completion


class Broken:
    name = "broken"

    def fingerprint(self):
        {body}

    async def generate(self, request):
        return Completion(text=request.messages[-1].content or "")

    async def aclose(self):
        return None


def pytest_llmeval_register_runners(registry):
    registry.register("broken", lambda settings: Broken())
"""


@pytest.mark.parametrize(
    ("body", "why"),
    [("raise RuntimeError('no model file')", "RuntimeError: no model file"),
     ("return None", "TypeError: *")],
    ids=["raises", "none"],
)  # fmt: skip
def test_a_runner_whose_fingerprint_fails_is_one_usage_error(
    pytester: pytest.Pytester, body: str, why: str
) -> None:
    """The runner ``--llmeval-runner`` names answers ``fingerprint()`` with an exception or
    with no mapping: one line naming the runner and what ``fingerprint()`` must return, exit 4
    before any case, nothing written. Before: pytest's INTERNALERROR traceback (exit 3)."""
    write_json(pytester, "qa.golden.json", [{"id": "c", "input": "a", "expected_output": "a"}])
    pytester.makeconftest(BROKEN_FINGERPRINT.format(body=body))
    result = pytester.runpytest("--llmeval-runner", "broken", "--llmeval-run-dir=run")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--llmeval-runner broken: its fingerprint() failed ({why}*"])
    assert "INTERNALERROR" not in result.stdout.str()
    assert not (pytester.path / "run").exists()
