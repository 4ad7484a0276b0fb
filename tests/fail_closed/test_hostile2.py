"""Fail closed, round 2's hostile review: what the finished round still let end green.

Each entry drives a real session through pytester and asserts the exit status and the
recorded verdict, the two things CI and ``runs`` read:

* an eval case whose teardown errors (a user's fixture) keeps its result, and the run is red
  in every mode: ``--llmeval-exit-on gates`` used to turn pytest's exit 1 into 0 and record
  ``passed``, because the teardown carries no result for the verdict to judge;
* an agent's ``pytest.xfail()`` is a case left out, and the one line that says so gives the
  agent's reason, not the whole traceback pytest keeps in the report;
* a case the baseline judged and this run skipped fails the baseline comparison, as a skip
  fails a gate it left partial: with only a baseline, a missing key compared the rest, green;
* a secret echoed with every character encoded (JSON ``\\u00xx``, percent-encoding of every
  byte, any hex case) is masked and found by the leak check, as its usual encodings are;
* a ``flaky`` mark a hook adds as a case starts (after the collection-time check) is refused
  as one added at collection: reruns kept the last attempt, a green best of two.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.core.redact import MASK, Redactor, find_leaks
from tests.conftest import read_jsonl, write_json

CASES = [
    {"id": "ok", "input": "same", "expected_output": "same"},
    {"id": "also", "input": "again", "expected_output": "again"},
]
"""Two cases the ``echo`` runner passes."""


def _verdict(run: Path) -> dict[str, Any]:
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    return manifest["verdict"]  # type: ignore[no-any-return]


# -- an eval case's teardown error --------------------------------------------------------

TEARDOWN_ERROR = """
import pytest


@pytest.fixture(autouse=True)
def cleanup(request):
    yield
    if request.node.name == "ok":
        raise RuntimeError("cleanup broke")
"""


@pytest.mark.parametrize("exit_on", ["all", "gates"])
def test_an_eval_cases_teardown_error_is_red_in_every_mode(
    pytester: pytest.Pytester, exit_on: str
) -> None:
    """A fixture's teardown raises after its case passed: the result stands, but the run is
    red (exit 1, verdict ``failed`` naming the case), also under ``--llmeval-exit-on gates``
    where the gates alone used to decide, and ``summarize`` keeps it."""
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(TEARDOWN_ERROR)
    write_json(pytester, "qa.golden.json", CASES)
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-run-dir=run", "--llmeval-exit-on", exit_on,
        "--llmeval-gate", "golden.pass_rate>=0.5",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    verdict = _verdict(pytester.path / "run")
    assert verdict["status"] == "failed"
    assert verdict["exit_status"] == 1
    assert any("teardown errored" in r and "qa.golden.json::ok" in r for r in verdict["reasons"])
    rows = read_jsonl(pytester.path / "run" / "results.jsonl")
    assert {r["case_id"]: r["outcome"] for r in rows} == {"ok": "passed", "also": "passed"}


# -- an agent's pytest.xfail() ------------------------------------------------------------

AGENT_XFAIL = """
import pytest


class Agent:
    def run(self, case, broker):
        if case.case_id == "ok":
            pytest.xfail("known bad")
        return {"response": case.messages[-1].content, "toolCalls": []}


@pytest.fixture(scope="session")
def llmeval_agent():
    return Agent()
"""


def test_an_agents_xfail_is_a_case_left_out_with_its_reason(pytester: pytest.Pytester) -> None:
    """An agent calls ``pytest.xfail()``: the case was not judged, so it is left out as a skip
    (gate ``partial``, the run red), and the verdict's one line gives the agent's reason, not
    the whole traceback pytest keeps in the report."""
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(AGENT_XFAIL)
    write_json(pytester, "qa.golden.json", CASES)
    result = pytester.runpytest("--llmeval-run-dir=run", "--llmeval-gate", "golden.pass_rate>=0.5")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    rows = {r["case_id"]: r for r in read_jsonl(pytester.path / "run" / "results.jsonl")}
    assert rows["ok"]["outcome"] == "skipped" and rows["ok"]["error"] == "known bad"
    reasons = _verdict(pytester.path / "run")["reasons"]
    assert any("(first: qa.golden.json::ok: known bad)" in r for r in reasons), reasons


# -- a skipped case under a baseline comparison -------------------------------------------

SKIP_ONE = """
import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if item.name == "ok":
            item.add_marker(pytest.mark.skip(reason="OK_KEY not set"))
"""


@pytest.mark.parametrize("exit_on", ["all", "gates"])
def test_a_skipped_case_fails_a_baseline_comparison(
    pytester: pytest.Pytester, exit_on: str
) -> None:
    """With a baseline as the only decision, a case the baseline judged and this run skipped
    cannot regress: the comparison judged only the rest, and the run is red, as a gate left
    partial by a skip is; a deselection (``-k``) stays green."""
    pytester.makeini("[pytest]\n")
    write_json(pytester, "qa.golden.json", CASES)
    blessed = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-run-dir=first", "--llmeval-update-baseline=b.json"
    )
    assert blessed.ret == pytest.ExitCode.OK
    compare = ("--llmeval-runner", "echo", "--llmeval-baseline=b.json", "--llmeval-exit-on")
    chosen = pytester.runpytest(*compare, exit_on, "--llmeval-run-dir=chosen", "-k", "not ok")
    assert chosen.ret == pytest.ExitCode.OK
    pytester.makeconftest(SKIP_ONE)
    result = pytester.runpytest(*compare, exit_on, "--llmeval-run-dir=run")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    verdict = _verdict(pytester.path / "run")
    assert verdict["status"] == "failed"
    line = (
        "1 eval case(s) the baseline judged were skipped (first: qa.golden.json::ok: "
        "OK_KEY not set), so the baseline comparison judged only the rest and the run fails; "
        "let them run, or leave them out on purpose with -k, -m or --deselect"
    )
    assert line in verdict["reasons"]
    assert line in result.stdout.lines


# -- a secret with every character encoded ------------------------------------------------

KEY = "Qm7tRz2KwX9pLv4N"
"""A fake key for ``SERVICE_KEY``."""


def _every_char(value: str) -> dict[str, str]:
    """``value`` with every character encoded, letters and digits too, in each hex case."""
    return {
        "json-lower": "".join(f"\\u{ord(c):04x}" for c in value),
        "json-upper": "".join(f"\\u{ord(c):04X}" for c in value),
        "json-mixed": "".join(f"\\u{ord(c):04{'xX'[i % 2]}}" for i, c in enumerate(value)),
        "percent-upper": "".join(f"%{b:02X}" for b in value.encode()),
        "percent-lower": "".join(f"%{b:02x}" for b in value.encode()),
    }


ECHO_ENCODED = """
import os
import pytest


class Agent:
    def run(self, case, broker):
        key = os.environ["SERVICE_KEY"]
        forms = [
            "".join(f"\\\\u{ord(c):04x}" for c in key),
            "".join(f"%{b:02X}" for b in key.encode()),
        ]
        raise RuntimeError("backend said: " + " ".join(forms))


@pytest.fixture(scope="session")
def llmeval_agent():
    return Agent()
"""


def test_a_secret_with_every_character_encoded_is_masked_and_found(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An encoder that escapes every character (JSON ``\\u00xx``, percent-encoding of every
    byte, in any hex case) echoes a key: the redactor masks it, so no file of the run holds
    it, and the leak check finds it in a file that holds it all the same."""
    redactor = Redactor(secrets=[KEY])
    for name, form in _every_char(KEY).items():
        assert redactor.text(f"said: {form}.") == f"said: {MASK}.", name
        leaked = tmp_path / f"{name}.txt"
        leaked.write_text(f"body: {form}\n", encoding="utf-8")
        assert find_leaks([leaked], [KEY]) == [leaked], name
    monkeypatch.setenv("SERVICE_KEY", KEY)
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(ECHO_ENCODED)
    write_json(pytester, "qa.golden.json", CASES)
    result = pytester.runpytest("--llmeval-run-dir=run", "--junitxml=junit.xml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert not any("leak" in r for r in _verdict(pytester.path / "run")["reasons"])
    forms = _every_char(KEY)
    for file in [*sorted((pytester.path / "run").rglob("*.*")), pytester.path / "junit.xml"]:
        text = file.read_text(encoding="utf-8", errors="replace")
        held = [name for name, form in forms.items() if form.lower() in text.lower()]
        assert not held, f"{file.name} holds the key as {held}"


# -- a flaky mark added as the case starts -------------------------------------------------

LATE_FLAKY = """
from pathlib import Path

import pytest


class Agent:
    def run(self, case, broker):
        first = Path(__file__).parent / f"{case.case_id}.tried"
        if not first.exists():  # every case errors on its first attempt only
            first.write_text("x")
            raise RuntimeError("backend down")
        return {"response": case.messages[-1].content, "toolCalls": []}


@pytest.fixture(scope="session")
def llmeval_agent():
    return Agent()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    item.add_marker(pytest.mark.flaky(reruns=2))  # after collection, before reruns read it
"""


def test_a_flaky_mark_added_as_the_case_starts_is_refused(pytester: pytest.Pytester) -> None:
    """A conftest marks each case ``flaky`` as its run starts (after the collection-time check):
    pytest-rerunfailures would run the errored first attempt again and keep only the pass, a
    green best-of-two; the mark is the case's error on every attempt, and the run is red."""
    pytest.importorskip("pytest_rerunfailures")
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(LATE_FLAKY)
    write_json(pytester, "qa.golden.json", CASES)
    result = pytester.runpytest("--llmeval-run-dir=run", "-p", "rerunfailures")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    rows = {r["case_id"]: r for r in read_jsonl(pytester.path / "run" / "results.jsonl")}
    assert {k: r["outcome"] for k, r in rows.items()} == {"ok": "error", "also": "error"}
    assert all("flaky mark" in str(r["error"]) for r in rows.values())
    assert _verdict(pytester.path / "run")["status"] == "failed"
