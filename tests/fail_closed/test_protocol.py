"""Fail closed, pytest's own run protocol: each eval case is judged exactly once.

Plugins and options that change how pytest runs a test must not change a verdict:

* every xdist ``--dist`` mode judges each case once, as one process does; ``--dist each``
  (every worker runs every case, one judgement kept) is one usage error before any case;
* reruns are not second chances: pytest-rerunfailures' ``--reruns``/``--force-reruns``/ini
  ``reruns`` and the flaky plugin's ``--force-flaky`` are one usage error naming
  ``--llmeval-repeats``; a ``flaky`` mark makes its eval case an error; pytest-repeat's
  ``--count`` leaves eval cases judged once; the order of the items (pytest-randomly) changes
  no result; a pytest-timeout is the case's error;
* a worker killed by an agent running ahead is blamed on that case (``worker crashed``), the
  case pytest was on runs again, and every case keeps its category.

Each plugin's test skips without it (``pytest.importorskip``). The small projects count every
call of their runner in ``calls.log``, so "judged once" is checked where the agent ran.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import read_jsonl, run_outputs, write_json

RUNNER = """
import asyncio, os, signal, time
from pathlib import Path

from pytest_llmeval.core.models import Usage
from pytest_llmeval.runners.base import Completion

CALLS = Path(__file__).parent / "calls.log"


class Counting:
    name = "counting"

    def fingerprint(self):
        return {"type": "counting"}

    async def generate(self, request):
        text = request.messages[-1].content or ""
        with CALLS.open("a") as log:  # one short line per call: whole under O_APPEND
            log.write(text + "\\n")
        if text == os.environ.get("LLMEVAL_TEST_FAIL_ONCE"):
            if sum(1 for line in CALLS.read_text().splitlines() if line == text) == 1:
                text = "first attempt misses"
        if text == os.environ.get("LLMEVAL_TEST_SLOW"):
            await asyncio.sleep(30)
        if text == os.environ.get("LLMEVAL_TEST_KILL_AHEAD"):
            Path("ahead").write_text(str(os.getpid()))
            for _ in range(300):  # until pytest is inside another case's call
                if Path("pytest_on").exists():
                    break
                await asyncio.sleep(0.05)
            os.kill(os.getpid(), signal.SIGKILL)  # the agent kills its own process
        usage = Usage(prompt_tokens=1, completion_tokens=1, total_tokens=2)
        return Completion(text=text, usage=usage)

    async def aclose(self):
        return None


def pytest_llmeval_register_runners(registry):
    registry.register("counting", lambda settings: Counting())


def pytest_runtest_call(item):
    ahead = Path("ahead")
    if ahead.exists() and ahead.read_text() == str(os.getpid()):  # this worker runs it ahead
        Path("pytest_on").write_text(item.name)
        time.sleep(60)  # pytest stays on this case until the agent ahead kills the worker
"""

IDS = [f"c{i:02d}" for i in range(12)]
MISSES = {"c02", "c07"}
"""Two of twelve miss, whatever runs them."""


def _cases(ids: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "id": i,
            "input": i,
            "expected_output": "other" if i in MISSES else i,
            "category": "odd" if int(i[1:]) % 2 else "even",
        }
        for i in ids
    ]


BASE = ("-p", "no:randomly", "-p", "no:cacheprovider", "--llmeval-runner", "counting")


def _project(pytester: pytest.Pytester, conftest: str = "") -> None:
    pytester.makeconftest(RUNNER + conftest)
    write_json(pytester, "a.golden.json", _cases(IDS[:6]))
    write_json(pytester, "b/b.golden.json", _cases(IDS[6:]))


def _calls(pytester: pytest.Pytester) -> Counter[str]:
    log = pytester.path / "calls.log"
    return Counter(log.read_text().splitlines() if log.exists() else [])


def _outcomes(run: Path) -> dict[str, str]:
    return {r["case_id"]: r["outcome"] for r in read_jsonl(run / "results.jsonl")}


def _one_process(pytester: pytest.Pytester) -> tuple[Any, Any]:
    """The reference: the same project judged in one process."""
    result = pytester.runpytest(*BASE, "--llmeval-run-dir", "one")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # two misses
    (pytester.path / "calls.log").unlink()
    return run_outputs(pytester.path / "one")


# -- xdist distribution modes ----------------------------------------------------------------


def test_dist_each_is_refused_before_any_case(pytester: pytest.Pytester) -> None:
    """``--dist each`` gives every case to every worker, and one of their judgements was kept
    (which one varied): one usage error naming the modes that work, before any agent ran."""
    pytest.importorskip("xdist")
    _project(pytester)
    result = pytester.runpytest(*BASE, "-n", "2", "--dist", "each", "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1, result.stderr.str()
    for named in ("--dist each", "load", "loadscope", "loadfile", "worksteal", "--llmeval-repeats"):
        assert named in errors[0]
    assert _calls(pytester) == Counter()
    assert not (pytester.path / "run" / "results.jsonl").exists()


def test_dist_each_stays_for_plain_tests(pytester: pytest.Pytester) -> None:
    """The refusal is about eval cases: a session of plain tests keeps ``--dist each``."""
    pytest.importorskip("xdist")
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = pytester.runpytest(*BASE, "-n", "2", "--dist", "each")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=2)


MODES = [
    ("load",),
    ("load", "--llmeval-hash-scheduling", "no"),
    ("loadscope",),
    ("loadfile",),
    ("loadgroup",),
    ("worksteal",),
    ("no",),  # with -n, xdist makes it load
]


@pytest.mark.parametrize("mode", MODES, ids=[" ".join(m) for m in MODES])
def test_every_other_dist_mode_judges_each_case_once_as_one_process_does(
    pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    pytest.importorskip("xdist")
    _project(pytester)
    reference = _one_process(pytester)
    result = pytester.runpytest(*BASE, "-n", "2", "--dist", *mode, "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert _calls(pytester) == Counter(IDS)  # every agent ran exactly once
    assert run_outputs(pytester.path / "run") == reference
    result.assert_outcomes(passed=10, failed=2)


# -- reruns ----------------------------------------------------------------------------------


RERUN_OPTIONS = [
    ("--reruns", "2"),
    ("--reruns", "1", "--only-rerun", "Error"),
    ("--force-reruns", "1"),
    ("-o", "reruns=2"),
]


@pytest.mark.parametrize("options", RERUN_OPTIONS, ids=[" ".join(o) for o in RERUN_OPTIONS])
def test_reruns_on_the_command_line_or_in_the_ini_are_refused(
    pytester: pytest.Pytester, options: tuple[str, ...]
) -> None:
    """A rerun reported only the last attempt: a case whose first attempt missed passed, and
    the pass rate was best of N. One usage error naming ``--llmeval-repeats``, before any
    case; under xdist as well."""
    pytest.importorskip("pytest_rerunfailures")
    _project(pytester)
    for xdist in ((), ("-n", "2")) if _has_xdist() else ((),):
        result = pytester.runpytest(*BASE, *xdist, *options, "--llmeval-run-dir", "run")
        assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
        errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
        assert len(errors) == 1 and "--llmeval-repeats" in errors[0], result.stderr.str()
        assert _calls(pytester) == Counter()


def test_reruns_stay_for_plain_tests(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_rerunfailures")
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = pytester.runpytest(*BASE, "--reruns", "2")
    assert result.ret == pytest.ExitCode.OK


FLAKY_MARK = """

import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if item.name == "c03":
            item.add_marker(pytest.mark.flaky(reruns=2))
"""


def test_a_flaky_mark_on_an_eval_case_is_that_cases_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """c03's first attempt misses; its rerun passed and the miss was erased from every report.
    Now the mark is c03's error, naming ``--llmeval-repeats``; the other cases are judged."""
    pytest.importorskip("pytest_rerunfailures")
    _project(pytester, FLAKY_MARK)
    monkeypatch.setenv("LLMEVAL_TEST_FAIL_ONCE", "c03")
    result = pytester.runpytest(*BASE, "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    outcomes = _outcomes(pytester.path / "run")
    assert outcomes["c03"] == "error"
    row = next(
        r for r in read_jsonl(pytester.path / "run" / "results.jsonl") if r["case_id"] == "c03"
    )
    assert "flaky mark" in row["error"] and "--llmeval-repeats" in row["error"]
    assert row["category"] == "odd"
    assert {k: v for k, v in outcomes.items() if k != "c03"} == {
        i: "failed" if i in MISSES else "passed" for i in IDS if i != "c03"
    }


def test_the_flaky_plugin_is_refused_alike(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ``flaky`` plugin reruns by the same mark, and ``--force-flaky`` makes every test
    flaky: the mark is the case's error, the option one usage error."""
    pytest.importorskip("flaky")
    _project(pytester, FLAKY_MARK)
    monkeypatch.setenv("LLMEVAL_TEST_FAIL_ONCE", "c03")
    result = pytester.runpytest(*BASE, "-p", "no:rerunfailures", "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert _outcomes(pytester.path / "run")["c03"] == "error"
    result = pytester.runpytest(*BASE, "--force-flaky", "--llmeval-run-dir", "run2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--force-flaky" in result.stderr.str() and "--llmeval-repeats" in result.stderr.str()


def test_pytest_repeat_count_judges_each_eval_case_once(pytester: pytest.Pytester) -> None:
    """pytest-repeat's ``--count`` repeats plain tests by parametrizing them; an eval case is
    no parametrized function: it is judged once, and the run dir is the one without it."""
    pytest.importorskip("pytest_repeat")
    _project(pytester)
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    reference = _one_process(pytester)
    result = pytester.runpytest(*BASE, "--count", "3", "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=13, failed=2)  # the plain test three times
    assert _calls(pytester) == Counter(IDS)
    assert run_outputs(pytester.path / "run") == reference


REVERSED = """

def pytest_collection_modifyitems(items):
    items.reverse()  # as pytest-randomly shuffles
"""


def test_the_order_of_the_items_changes_no_result(pytester: pytest.Pytester) -> None:
    """Reordered items (pytest-randomly's shuffle, here a reversal that needs no plugin):
    the same fingerprints, results.jsonl and report.json."""
    _project(pytester)
    reference = _one_process(pytester)
    pytester.makeconftest(RUNNER + REVERSED)
    result = pytester.runpytest(*BASE, "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert run_outputs(pytester.path / "run") == reference


def test_pytest_randomly_changes_no_result(pytester: pytest.Pytester) -> None:
    """With pytest-randomly installed (it is not a dev dependency: it would shuffle this
    suite), its shuffle and reseeding change no result, with or without xdist."""
    pytest.importorskip("pytest_randomly")
    _project(pytester)
    reference = _one_process(pytester)
    randomly = ("-p", "randomly", "-p", "no:cacheprovider", "--llmeval-runner", "counting")
    for seed, xdist in (("1", ()), ("7", ("-n", "2") if _has_xdist() else ())):
        run = f"run{seed}"
        args = ("--randomly-seed", seed, *xdist, "--llmeval-run-dir", run)
        result = pytester.runpytest(*randomly, *args)
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        assert run_outputs(pytester.path / run) == reference


def test_a_pytest_timeout_is_the_cases_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest-timeout stops a case whose agent blocks past ``--timeout``: an error, never a
    pass, and the run is red."""
    pytest.importorskip("pytest_timeout")
    _project(pytester)
    monkeypatch.setenv("LLMEVAL_TEST_SLOW", "c04")
    result = pytester.runpytest(*BASE, "--timeout", "2", "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    row = next(
        r for r in read_jsonl(pytester.path / "run" / "results.jsonl") if r["case_id"] == "c04"
    )
    assert row["outcome"] == "error" and "Timeout" in row["error"]
    report = json.loads((pytester.path / "run" / "report.json").read_text())
    assert report["totals"]["errors"] == 1


# -- a worker killed by an agent running ahead -----------------------------------------------


def test_a_worker_killed_by_an_agent_running_ahead_blames_that_case(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under ``-n 2`` the hash scheduler's workers run agents ahead of pytest's item. c05's
    agent kills its worker while pytest is inside another case's call: xdist blamed that case,
    and both crashed results lost their category, so a gate on c05's category passed. Now
    c05 is the error (``worker crashed``), in its category, the case pytest was on is judged
    on the replacement worker, and the category's gate fails."""
    pytest.importorskip("xdist")
    _project(pytester)
    monkeypatch.setenv("LLMEVAL_TEST_KILL_AHEAD", "c05")
    gate = "golden.categories.odd.pass_rate>=0.7"  # odd: c01..c11, c07 misses; c05 errs
    result = pytester.runpytest(
        *BASE, "-n", "2", "--llmeval-run-dir", "run", "--llmeval-gate", gate
    )
    run = pytester.path / "run"
    on = (pytester.path / "pytest_on").read_text()  # the case pytest was on: not c05
    assert on != "c05"
    rows = {r["case_id"]: r for r in read_jsonl(run / "results.jsonl")}
    assert sorted(rows) == IDS
    crashed = [i for i, r in rows.items() if r["outcome"] == "error"]
    assert crashed == ["c05"]
    assert rows["c05"]["error"].startswith("worker crashed")
    assert rows[on]["outcome"] == ("failed" if on in MISSES else "passed")
    assert {i: r["category"] for i, r in rows.items()} == {
        i: "odd" if int(i[1:]) % 2 else "even" for i in IDS
    }
    assert _calls(pytester)["c05"] == 1  # the case that kills is not run again
    report = json.loads((run / "report.json").read_text())
    odd = report["suites"]["golden"]["categories"]["odd"]
    assert (odd["passed"], odd["failed"], odd["errors"]) == (4, 1, 1)
    assert {r["gate"]["name"]: r["status"] for r in report["gates"]["results"]} == {gate: "failed"}
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*worker 'gw*' crashed while running '*::c05'*"])
    assert f"crashed while running 'a.golden.json::{on}'" not in result.stdout.str()


def _has_xdist() -> bool:
    try:
        import xdist  # noqa: F401
    except ImportError:
        return False
    return True
