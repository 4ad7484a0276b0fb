"""A SIGTERM or SIGHUP whose ``Terminated`` Python dropped still stops the session, wherever
it landed: collection, a case's setup or teardown, a plain test, ``-x``, ``-n 2``, a second
signal after the dropped one. Each makes Python drop the handler's exception the way CI met
it (the signal lands inside a finalizer) and asserts the contract: exit 2, every report
written, ``interrupted.reason`` the signal's, gates ``partial``."""

from __future__ import annotations

import json

import pytest

from tests.fail_closed.test_interrupt import (
    BASE,
    DROPPED,
    IDS,
    _all_written,
    _gates,
    _interrupted,
    _outcomes,
    _project,
)

DROPS = """
import os, signal

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


def pytest_runtest_setup(item):
    _drop("setup", item.name)


def pytest_runtest_call(item):
    _drop("call", item.name)


def pytest_runtest_teardown(item):
    _drop("teardown", item.name)
"""


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    _project(pytester)
    pytester.makepyfile(conftest_drops=DROPS)
    return pytester.runpytest_subprocess(
        *BASE, "-p", "conftest_drops", "--llmeval-run-dir", "run",
        "--llmeval-gate", "golden.skipped==0", *args,
    )  # fmt: skip


def _stopped(pytester: pytest.Pytester, done: pytest.RunResult, reason: str = "sigterm") -> None:
    run = pytester.path / "run"
    assert done.ret == pytest.ExitCode.INTERRUPTED, done.stdout.str()
    _all_written(run)
    ran = _outcomes(run)
    assert len(ran) < len(IDS)
    verdict = json.loads((run / "manifest.json").read_text())["verdict"]
    assert verdict["exit_status"] == pytest.ExitCode.INTERRUPTED
    interrupted, in_manifest = _interrupted(run)
    assert interrupted == in_manifest
    assert interrupted["reason"] == reason, interrupted
    assert _gates(run) == {"golden.skipped==0": "partial"}


@pytest.mark.parametrize(
    "at", ["collect:-", "setup:c04", "teardown:c04", "teardown:c29"],
    ids=["collection", "setup", "teardown", "the last teardown"],
)  # fmt: skip
def test_a_dropped_sigterm_anywhere_in_a_case_stops_the_session(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, at: str
) -> None:
    monkeypatch.setenv("LLMEVAL_TEST_DROP_AT", at)
    done = _run(pytester)
    if at == "teardown:c29":  # every case ran: the exit status says it
        assert done.ret == pytest.ExitCode.INTERRUPTED, done.stdout.str()
        return
    _stopped(pytester, done)


def test_a_sigterm_during_collection_still_writes_whole_reports(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SIGTERM pytest saw during collection (its loop never ran): the reports the session
    then writes must not meet that signal again."""
    monkeypatch.setenv("LLMEVAL_TEST_DROP_AT", "collect:-")
    monkeypatch.setenv("LLMEVAL_TEST_REAL", "1")
    done = _run(pytester)
    assert "Traceback" not in done.stderr.str(), done.stderr.str()
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
    done = _run(pytester, "-n", "2")
    assert done.ret == pytest.ExitCode.INTERRUPTED, done.stdout.str()
    run = pytester.path / "run"
    _all_written(run)
    verdict = json.loads((run / "manifest.json").read_text())["verdict"]
    assert verdict["exit_status"] == pytest.ExitCode.INTERRUPTED
    interrupted, in_manifest = _interrupted(run)
    assert interrupted == in_manifest
    if len(_outcomes(run)) < len(IDS):
        assert interrupted["reason"] == "sigterm", interrupted


def test_a_sigterm_the_xdist_controller_dropped_is_not_taken_for_x(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under ``-n 2 -x`` the controller stops at c03's failure (xdist's ``Interrupted``, a
    ``KeyboardInterrupt``) right after the SIGTERM it dropped there: the signal, not a
    maxfail exit 1, ends the session."""
    pytest.importorskip("xdist")
    _project(pytester)
    pytester.makepyfile(conftest_drop=DROPPED)
    monkeypatch.setenv("LLMEVAL_TEST_DROP_CONTROLLER", "c03")
    done = pytester.runpytest_subprocess(
        *BASE, "-n", "2", "-x", "-p", "conftest_drop", "--llmeval-run-dir", "run",
        "--llmeval-gate", "golden.skipped==0",
    )  # fmt: skip
    _stopped(pytester, done)
