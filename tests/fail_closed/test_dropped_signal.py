"""A SIGTERM or SIGHUP whose ``Terminated`` Python dropped still stops the session, wherever
it landed: collection, a case's setup, call or teardown, the last case, ``-x``, an xdist worker
or the controller of ``-n 2``, a second signal after the dropped one. Each makes Python drop
the handler's exception as CI met it (here the signal lands inside a finalizer) and asserts
the contract: exit 2, every report written, and when cases were left out the ``interrupted``
record naming the signal and the gate ``partial``. The same contract holds for a signal pytest
did see, in the two places where one once lost the record or the exit status: inside the
``pytest_collection_finish`` hooks, and a second one while pytest handles the first."""

from __future__ import annotations

import json

import pytest

from tests.fail_closed.test_interrupt import (
    BASE,
    IDS,
    _all_written,
    _gates,
    _interrupted,
    _outcomes,
    _project,
)

DROPS = """
import os, signal

import pytest

SIG = getattr(signal, os.environ.get("LLMEVAL_TEST_SIG", "SIGTERM"))
WHEN, _, WHERE = os.environ.get("LLMEVAL_TEST_DROP_AT", "-:-").partition(":")


class Dropped:
    def __del__(self):
        os.kill(os.getpid(), SIG)
        for _ in range(100_000):  # the handler runs here: its exception is "ignored"
            pass


def _drop(when, name):
    if when == WHEN and name == WHERE:
        if os.environ.get("LLMEVAL_TEST_REAL"):  # a signal nothing drops: Terminated here
            os.kill(os.getpid(), SIG)
            for _ in range(100_000):
                pass
        Dropped()
        if os.environ.get("LLMEVAL_TEST_AGAIN"):  # a second signal, which nothing drops
            os.kill(os.getpid(), SIG)
            for _ in range(100_000):
                pass


def pytest_collection_modifyitems(items):
    _drop("collect", "-")


@pytest.hookimpl(tryfirst=True)  # before the plugins' own: the signal skips theirs
def pytest_collection_finish(session):
    _drop("collection_finish", "-")


@pytest.hookimpl(tryfirst=True)  # as a slow one before the plugin's (the terminal's traceback)
def pytest_keyboard_interrupt(excinfo):
    if os.environ.get("LLMEVAL_TEST_AGAIN_WHILE_HANDLED"):  # pytest handles the first stop
        os.kill(os.getpid(), SIG)
        for _ in range(100_000):
            pass


def pytest_runtest_setup(item):
    _drop("setup", item.name)


def pytest_runtest_call(item):
    _drop("call", item.name)


def pytest_runtest_teardown(item):
    _drop("teardown", item.name)


WORKER = []


def pytest_configure(config):
    WORKER.append(hasattr(config, "workerinput"))


def pytest_runtest_logreport(report):  # under xdist: in the controller, as a report arrives
    if not WORKER[-1] and report.when == "call":
        _drop("controller", report.nodeid.rsplit("::", 1)[-1])
"""


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    _project(pytester)
    pytester.makepyfile(conftest_drops=DROPS)
    return pytester.runpytest_subprocess(
        *BASE, "-p", "conftest_drops", "--llmeval-run-dir", "run",
        "--llmeval-gate", "golden.skipped==0", *args,
    )  # fmt: skip


def _ended_by_the_signal(
    pytester: pytest.Pytester, done: pytest.RunResult, reason: str = "sigterm"
) -> dict[str, str]:
    """Exit 2, every report written, the manifest's verdict says 2; when cases were left out,
    the ``interrupted`` record names the signal (``reason``) and the gate is ``partial`` (a
    signal during the last case leaves the reports whole: no record). The outcomes, by case."""
    run = pytester.path / "run"
    assert done.ret == pytest.ExitCode.INTERRUPTED, done.stdout.str()
    _all_written(run)
    ran = _outcomes(run)
    verdict = json.loads((run / "manifest.json").read_text())["verdict"]
    assert verdict["exit_status"] == pytest.ExitCode.INTERRUPTED
    interrupted, in_manifest = _interrupted(run)
    assert interrupted == in_manifest
    if len(ran) < len(IDS):
        assert interrupted is not None and interrupted["cases_run"] == len(ran)
        assert interrupted["reason"] == reason, interrupted
        assert _gates(run) == {"golden.skipped==0": "partial"}
    else:
        assert interrupted is None
    return ran


def _stopped(pytester: pytest.Pytester, done: pytest.RunResult, reason: str = "sigterm") -> None:
    """:func:`_ended_by_the_signal`, with cases left out."""
    assert len(_ended_by_the_signal(pytester, done, reason)) < len(IDS)


@pytest.mark.parametrize(
    "at",
    ["collect:-", "setup:c04", "call:c04", "teardown:c04", "call:c29", "teardown:c29"],
    ids=["collection", "setup", "call", "teardown", "the last call", "the last teardown"],
)  # fmt: skip
def test_a_dropped_sigterm_anywhere_in_a_case_stops_the_session(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, at: str
) -> None:
    """Before the next test, or as the test loop ends after the last one (then every case has
    its result and the exit status says it)."""
    monkeypatch.setenv("LLMEVAL_TEST_DROP_AT", at)
    ran = _ended_by_the_signal(pytester, _run(pytester))
    if at.startswith("call:"):  # its call was over: it keeps its result, no later case ran
        assert len(ran) == IDS.index(at.partition(":")[2]) + 1


@pytest.mark.parametrize("again", [False, True], ids=["once", "again while pytest handles it"])
def test_a_sigterm_during_collection_still_writes_whole_reports(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, again: bool
) -> None:
    """A SIGTERM pytest saw during collection (its loop never ran): the reports the session
    then writes must not meet that signal again. Nor a second one while pytest handles the
    first (its terminal reporter formats the traceback before the plugin's
    ``pytest_keyboard_interrupt`` ran): it waits for the reports, never escaping pytest as an
    error (exit 1, ``incomplete``)."""
    monkeypatch.setenv("LLMEVAL_TEST_DROP_AT", "collect:-")
    monkeypatch.setenv("LLMEVAL_TEST_REAL", "1")
    if again:
        monkeypatch.setenv("LLMEVAL_TEST_AGAIN_WHILE_HANDLED", "1")
    done = _run(pytester)
    assert "Traceback" not in done.stderr.str(), done.stderr.str()
    _stopped(pytester, done)


def test_a_sigterm_in_the_collection_finish_hooks_still_writes_the_record(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SIGTERM while pytest runs ``pytest_collection_finish`` (the plugin's own does the
    preflight and a full collection of the heap there: the slow part of a large collection)
    skips the implementations after it: the run must still say what it planned and which
    cases it left out, not vanish with its run dir."""
    monkeypatch.setenv("LLMEVAL_TEST_DROP_AT", "collection_finish:-")
    monkeypatch.setenv("LLMEVAL_TEST_REAL", "1")
    done = _run(pytester)
    assert _interrupted(pytester.path / "run")[0] == {
        "cases_run": 0, "cases_total": len(IDS), "reason": "sigterm"
    }  # fmt: skip
    _stopped(pytester, done)


def test_a_dropped_sighup_stops_the_session_as_sighup(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLMEVAL_TEST_DROP_AT", "call:c04")
    monkeypatch.setenv("LLMEVAL_TEST_SIG", "SIGHUP")
    _stopped(pytester, _run(pytester), reason="sighup")


def test_a_dropped_sigterm_in_the_case_x_stops_on_is_still_a_sigterm(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-x`` stops after c03 (a miss) before the next test starts: the SIGTERM that landed
    in c03 and was dropped must not vanish into a maxfail exit 1."""
    monkeypatch.setenv("LLMEVAL_TEST_DROP_AT", "call:c03")
    _stopped(pytester, _run(pytester, "-x"))


def test_a_second_sigterm_after_a_dropped_one_still_writes_the_reports(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first SIGTERM was dropped, so pytest never began to stop: the second one (a CI
    runner's or a user's retry) is the first pytest can see, not a kill that loses every
    report."""
    monkeypatch.setenv("LLMEVAL_TEST_DROP_AT", "call:c04")
    monkeypatch.setenv("LLMEVAL_TEST_AGAIN", "1")
    _stopped(pytester, _run(pytester))


@pytest.mark.parametrize("at", ["call:c04", "call:c29"], ids=["a middle case", "the last case"])
def test_a_sigterm_an_xdist_worker_dropped_stops_the_session(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, at: str
) -> None:
    pytest.importorskip("xdist")
    monkeypatch.setenv("LLMEVAL_TEST_DROP_AT", at)
    _ended_by_the_signal(pytester, _run(pytester, "-n", "2"))


def test_a_sigterm_the_xdist_controller_dropped_stops_the_session(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where CI met it: pydantic's serializer in the controller of ``-n 2`` dropped the
    handler's exception; the next test a worker starts stops the session."""
    pytest.importorskip("xdist")
    monkeypatch.setenv("LLMEVAL_TEST_DROP_AT", "controller:c04")
    assert "c04" in _ended_by_the_signal(pytester, _run(pytester, "-n", "2"))


def test_a_sigterm_the_xdist_controller_dropped_is_not_taken_for_x(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under ``-n 2 -x`` the controller stops at c03's failure (xdist's ``Interrupted``, a
    ``KeyboardInterrupt``) right after the SIGTERM it dropped there: the signal, not a
    maxfail exit 1, ends the session."""
    pytest.importorskip("xdist")
    monkeypatch.setenv("LLMEVAL_TEST_DROP_AT", "controller:c03")
    _stopped(pytester, _run(pytester, "-n", "2", "-x"))
