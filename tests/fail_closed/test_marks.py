"""Fail closed, pytest's own marks and modes: a mark never hides an error, a skipped case is a
case left out, and a session that runs no test writes no run.

Each entry drives a real session through pytester and asserts the exit status, the cases in
``results.jsonl``, every gate's status, the recorded verdict and what junit, ``--json-report``
and ``summary.md`` say:

* a user's ``xfail`` (a mark a conftest adds, ``strict=True``, ``raises=...``, one a fixture
  applies with ``request.applymarker``, ``--runxfail``) never turns an errored case into an
  expected failure; a scored miss under it stays xfailed and counts in the pass rate;
* a case skipped by a fixture's ``pytest.skip`` (the README's missing key), a ``skip`` or
  ``skipif`` mark or ``xfail(run=False)`` is left out as a budget's skip is: gates that held
  are ``partial`` and fail the run, the run is never blessed as a baseline, and a resume runs
  the case again; a deselection (``-k``, ``-m``, ``--deselect``) stays ``partial`` and green;
* ``--setup-plan`` and ``--setup-only`` run no agent and write nothing, as ``--collect-only``.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import read_jsonl, write_json

CASES = [
    {"id": "ok", "input": "same", "expected_output": "same"},
    {"id": "boom", "input": "boom", "expected_output": "boom"},
    {"id": "miss", "input": "this", "expected_output": "that"},
]
"""A case that passes, one whose runner raises (``boom``), one that is scored and misses."""
SKIP_CASES = [*CASES[:2], {"id": "also", "input": "again", "expected_output": "again"}]
"""Two cases that pass and ``boom``, which the tests of skips skip."""

RUNNER = """
import os
from pathlib import Path

import pytest
from pytest_llmeval.core.errors import RunnerError
from pytest_llmeval.core.models import Usage
from pytest_llmeval.runners.base import Completion

CALLS = Path(__file__).parent / "calls.txt"


class Flaky:
    name = "flaky"

    def fingerprint(self):
        return {"type": "flaky"}

    async def generate(self, request):
        text = request.messages[-1].content or ""
        with CALLS.open("a") as calls:  # every call the agent made, from any process
            calls.write(text + "\\n")
        if text == "boom":
            raise RunnerError("POST http://127.0.0.1:9/v1: connection refused", kind="connection")
        return Completion(text=text, usage=Usage(total_tokens=1))

    async def aclose(self):
        return None


def pytest_llmeval_register_runners(registry):
    registry.register("flaky", lambda settings: Flaky())
"""
"""Runner ``flaky``: echoes each message, refuses ``boom``, and notes every call."""


def _marking(mark: str, names: tuple[str, ...]) -> str:
    """``RUNNER`` plus a conftest hook adding ``mark`` to the cases named ``names``."""
    return RUNNER + (
        "\n\ndef pytest_collection_modifyitems(items):\n"
        "    for item in items:\n"
        f"        if item.name in {names!r}:\n"
        f"            item.add_marker({mark})\n"
    )


def _rows(run: Path) -> dict[str, dict[str, Any]]:
    return {r["case_id"]: r for r in read_jsonl(run / "results.jsonl")}


def _report(run: Path) -> dict[str, Any]:
    return json.loads((run / "report.json").read_text(encoding="utf-8"))


def _verdict(run: Path) -> dict[str, Any]:
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    return manifest["verdict"]  # type: ignore[no-any-return]


def _gates(run: Path) -> dict[str, str]:
    section = _report(run).get("gates") or {"results": []}
    return {r["gate"]["name"]: r["status"] for r in section["results"]}


def _junit(path: Path) -> dict[str, ET.Element]:
    root = ET.parse(path).getroot()
    return {str(case.get("name")): case for case in root.iter("testcase")}


# -- A.1: a user's xfail mark never hides an error -------------------------------------------

XFAILS = {
    "xfail": ("pytest.mark.xfail(reason='known')", ()),
    "strict": ("pytest.mark.xfail(strict=True, reason='known')", ()),
    "raises": ("pytest.mark.xfail(raises=RunnerError, reason='known')", ()),
    "runxfail": ("pytest.mark.xfail(reason='known')", ("--runxfail",)),
}


@pytest.mark.parametrize("exit_on", ["all", "gates"])
@pytest.mark.parametrize("how", sorted(XFAILS))
def test_a_users_xfail_never_hides_an_error(
    pytester: pytest.Pytester, how: str, exit_on: str
) -> None:
    """A conftest marks two cases ``xfail``: the one whose runner raises is an error in every
    report and the run is red; the scored miss stays an expected failure in the pass rate."""
    pytester.makeini("[pytest]\n")
    mark, extra = XFAILS[how]
    pytester.makeconftest(_marking(mark, ("boom", "miss")))
    write_json(pytester, "qa.golden.json", CASES)
    result = pytester.runpytest(
        "--llmeval-runner", "flaky", "--llmeval-run-dir", "run", "--llmeval-exit-on", exit_on,
        "--llmeval-gate", "golden.pass_rate>=0.3", "--junitxml", "junit.xml",
        "--json-report", "--json-report-file", "pytest-report.json", *extra,
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    run = pytester.path / "run"
    rows = _rows(run)
    assert {k: r["outcome"] for k, r in rows.items()} == {
        "ok": "passed", "boom": "error", "miss": "failed",
    }  # fmt: skip
    # a scored miss keeps the mark (which raises=RunnerError does not expect of a miss)
    assert rows["miss"]["xfailed"] is (how not in ("raises", "runxfail"))
    report = _report(run)
    assert report["totals"]["errors"] == 1
    golden = report["suites"]["golden"]
    assert (golden["failed"], golden["errors"], golden["skipped"]) == (1, 1, 0)  # the miss counts
    assert golden["pass_rate"] == pytest.approx(1 / 3)
    assert _gates(run) == {"golden.pass_rate>=0.3": "passed"}
    verdict = _verdict(run)
    assert verdict["status"] == "failed" and "1 case(s) errored" in verdict["reasons"]
    assert _junit(pytester.path / "junit.xml")["boom"].find("error") is not None
    tests = json.loads((pytester.path / "pytest-report.json").read_text())["tests"]
    boom = next(t for t in tests if t["nodeid"].endswith("::boom"))
    assert boom["outcome"] == "error" and boom["setup"]["outcome"] == "failed"
    result.stdout.fnmatch_lines(["ERROR qa.golden.json::boom - *connection error*"])


APPLIED_XFAIL = """
import pytest
from pytest_llmeval.suites.golden import SCORERS

# a user's scorer: NaN for the answer "nan", else 1
SCORERS["odd"] = lambda response, expect: float("nan") if response == "nan" else 1.0


@pytest.fixture(autouse=True)
def known_flaky(request):
    request.applymarker(pytest.mark.xfail(reason="known flaky"))
"""


def test_an_xfail_a_fixture_applies_never_hides_a_scoring_error(
    pytester: pytest.Pytester,
) -> None:
    """``request.applymarker(xfail)`` in a fixture reaches the call phase, where a case is
    scored: a scorer's NaN is the case's error there, never an expected failure."""
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(APPLIED_XFAIL)
    cases = [{"id": word, "input": word, "min_scores": {"odd": 0.9}} for word in ("ok", "nan")]
    write_json(pytester, "s.golden.json", cases)
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-run-dir", "run", "--llmeval-exit-on", "gates",
        "--llmeval-gate", "golden.total==2",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    rows = _rows(pytester.path / "run")
    assert {k: r["outcome"] for k, r in rows.items()} == {"ok": "passed", "nan": "error"}
    assert _verdict(pytester.path / "run")["status"] == "failed"
    result.stdout.fnmatch_lines(["ERROR s.golden.json::nan - *score error*"])
    assert "xfailed" not in result.stdout.lines[-1]


# -- A.2: a skipped eval case is a case left out ---------------------------------------------

KEY_FIXTURE = """
import os
import pytest


@pytest.fixture(autouse=True)
def needs_key(request):
    # the README's missing key, for the cases that need it
    if request.node.name == "boom" and not os.environ.get("BOOM_KEY"):
        pytest.skip("BOOM_KEY not set")
"""

SKIPS = {
    "fixture": (RUNNER + KEY_FIXTURE, "BOOM_KEY not set"),
    "skip-mark": (_marking("pytest.mark.skip(reason='not now')", ("boom",)), "not now"),
    "skipif-mark": (_marking("pytest.mark.skipif(True, reason='no key')", ("boom",)), "no key"),
    "xfail-not-run": (
        _marking("pytest.mark.xfail(run=False, reason='later')", ("boom",)),
        "[NOTRUN] later",
    ),
}
"""How the ``boom`` case is skipped, and the reason its result keeps."""

GATE = "golden.pass_rate>=0.4"


def _skipped_run(pytester: pytest.Pytester, how: str, *args: str) -> pytest.RunResult:
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(SKIPS[how][0])
    write_json(pytester, "qa.golden.json", SKIP_CASES)
    return pytester.runpytest(
        "--llmeval-runner", "flaky", "--llmeval-gate", GATE, "--junitxml", "junit.xml", *args
    )


@pytest.mark.parametrize("exit_on", ["all", "gates"])
@pytest.mark.parametrize("how", sorted(SKIPS))
def test_a_skipped_case_leaves_its_gates_partial_and_the_run_red(
    pytester: pytest.Pytester, how: str, exit_on: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One case of three is skipped: the gate that held on the other two is ``partial`` and
    the run fails in every mode; the skip is shown as a skip, with its reason, everywhere."""
    monkeypatch.delenv("BOOM_KEY", raising=False)
    reason = SKIPS[how][1]
    result = _skipped_run(pytester, how, "--llmeval-run-dir", "run", "--llmeval-exit-on", exit_on)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    run = pytester.path / "run"
    rows = _rows(run)
    assert {k: r["outcome"] for k, r in rows.items()} == {
        "ok": "passed", "boom": "skipped", "also": "passed",
    }  # fmt: skip
    assert rows["boom"]["error"] == reason
    assert _gates(run) == {GATE: "partial"}
    assert _report(run)["deselected"] == {"golden": 1}
    line = (
        f"1 eval case(s) were skipped (first: qa.golden.json::boom: {reason}), so gate(s) "
        f"{GATE} judged only the rest and the run fails; let them run, or leave them out on "
        "purpose with -k, -m or --deselect"
    )
    assert line in result.stdout.lines
    verdict = _verdict(run)
    assert verdict["status"] == "failed" and line in verdict["reasons"]
    junit = _junit(pytester.path / "junit.xml")
    assert junit["boom"].find("skipped") is not None
    assert reason.removeprefix("[NOTRUN] ") in str(junit["boom"].find("skipped").get("message"))
    summary = (run / "summary.md").read_text(encoding="utf-8")
    assert "## Skipped cases (1): left out of the gates" in summary
    assert f"- `qa.golden.json::boom` (skipped): `{reason}" in summary  # a code span


def test_a_skip_under_xdist_is_the_same(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under ``-n 2`` the skip is left out the same way, and a run whose every case was
    skipped still judged nothing."""
    pytest.importorskip("xdist")
    monkeypatch.delenv("BOOM_KEY", raising=False)
    result = _skipped_run(
        pytester, "fixture", "-n", "2", "--llmeval-run-dir", "run",
        "--llmeval-exit-on", "gates",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    run = pytester.path / "run"
    assert _rows(run)["boom"]["outcome"] == "skipped"
    assert _gates(run) == {GATE: "partial"}
    assert _report(run)["deselected"] == {"golden": 1}
    assert _verdict(run)["status"] == "failed"
    pytester.makeconftest(RUNNER + "\nimport pytest\n\n\n@pytest.fixture(autouse=True)\n"
                          "def needs_key():\n    pytest.skip('KEY not set')\n")  # fmt: skip
    every = pytester.runpytest(
        "--llmeval-runner", "flaky", "--llmeval-gate", GATE, "-n", "2",
        "--llmeval-run-dir", "all-skipped",
    )  # fmt: skip
    assert every.ret == pytest.ExitCode.TESTS_FAILED
    every.stdout.fnmatch_lines(["nothing was judged: all 3 eval case(s) were skipped*"])


@pytest.mark.parametrize("how", ["fixture", "skip-mark"])
def test_a_run_with_a_skipped_case_is_never_blessed_as_the_baseline(
    pytester: pytest.Pytester, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BOOM_KEY", raising=False)
    kept = '{"baseline_version": "1", "kept": true}\n'  # a baseline file: replaceable
    (pytester.path / "baseline.json").write_text(kept)
    result = _skipped_run(pytester, how, "--llmeval-update-baseline", "baseline.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert (pytester.path / "baseline.json").read_text() == kept
    result.stdout.fnmatch_lines(
        ["llmeval: baseline *baseline.json not updated: this run left 1 case(s) out (*skipped*"
         "and let no case skip)"]
    )  # fmt: skip


def test_a_resume_runs_the_skipped_cases_again(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key missing in the first attempt: the resume with the key runs the skipped case (and
    only it), and judges the whole run."""
    monkeypatch.delenv("BOOM_KEY", raising=False)
    rows = [CASES[0], {"id": "boom", "input": "fine", "expected_output": "fine"}]
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(SKIPS["fixture"][0])
    write_json(pytester, "qa.golden.json", rows)
    args = ("--llmeval-runner", "flaky", "--llmeval-gate", GATE, "--llmeval-exit-on", "gates")
    first = pytester.runpytest(*args, "--llmeval-run-dir", "run")
    assert first.ret == pytest.ExitCode.TESTS_FAILED
    (pytester.path / "calls.txt").unlink()
    monkeypatch.setenv("BOOM_KEY", "set")
    resumed = pytester.runpytest(*args, "--llmeval-resume", "run")
    assert resumed.ret == pytest.ExitCode.OK
    assert (pytester.path / "calls.txt").read_text().split() == ["fine"]  # the skipped one
    run = pytester.path / "run"
    assert {k: r["outcome"] for k, r in _rows(run).items()} == {"ok": "passed", "boom": "passed"}
    assert _gates(run) == {GATE: "passed"}
    assert _verdict(run)["status"] == "passed"


@pytest.mark.parametrize(
    "leave_out",
    [("-k", "not boom"), ("-m", "not network"), ("--deselect", "qa.golden.json::boom")],
    ids=["k", "m", "deselect"],
)
def test_a_deselection_stays_partial_and_green(
    pytester: pytest.Pytester, leave_out: tuple[str, str]
) -> None:
    """Leaving a case out on purpose is the user's choice: the gate is ``partial``, the run
    exits 0 under ``--llmeval-exit-on gates``."""
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(RUNNER)
    write_json(pytester, "qa.golden.json", [*CASES[::2], {**CASES[1], "category": "network"}])
    result = pytester.runpytest(
        "--llmeval-runner", "flaky", "--llmeval-gate", GATE, "--llmeval-exit-on", "gates",
        "--llmeval-run-dir", "run", *leave_out,
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK
    run = pytester.path / "run"
    assert set(_rows(run)) == {"ok", "miss"}
    assert _gates(run) == {GATE: "partial"}
    assert _verdict(run)["status"] == "partial"


# -- A.6: setup-only sessions write no run ---------------------------------------------------


@pytest.mark.parametrize(
    "mode",
    [("--setup-plan",), ("--setup-only",), ("--setup-plan", "-n", "2"),
     ("--setup-only", "-n", "2"), ("--collect-only",)],
    ids=["setup-plan", "setup-only", "setup-plan-xdist", "setup-only-xdist", "collect-only"],
)  # fmt: skip
def test_a_session_that_runs_no_test_writes_no_run(
    pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    """No agent runs, no run dir, journal or ``latest`` is made, and pytest exits as it
    would: 0, ``no tests ran`` (a named run dir is not made either)."""
    if "-n" in mode:
        pytest.importorskip("xdist")
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(RUNNER)
    write_json(pytester, "qa.golden.json", CASES)
    for where in (("--llmeval-output-root", "out"), ("--llmeval-run-dir", "out/named")):
        result = pytester.runpytest(
            "--llmeval-runner", "flaky", "--llmeval-gate", GATE, *where, *mode
        )
        assert result.ret == pytest.ExitCode.OK
        assert not (pytester.path / "out").exists()
        assert not (pytester.path / "calls.txt").exists()  # no agent ran
        assert "llmeval: run dir" not in result.stdout.str()
