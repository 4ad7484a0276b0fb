"""Cases of an in-process agent (echo, replay, a runner saying ``in_process = True``) run on
pytest's thread: what a user meets through pytest when a signal lands inside such an agent, when
sessions follow one another in one process, and when its runner is closed."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator

import pytest

from tests.conftest import write_jsonl

ROWS = [{"id": f"c{i}", "input": f"m{i}", "expected_output": f"m{i}"} for i in range(4)]

STOPS = [s for s in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, s)]


@pytest.fixture
def handlers() -> Iterator[dict[str, object]]:
    """The signal handlers as the test found them, put back whatever it leaves."""
    found = {name: signal.getsignal(getattr(signal, name)) for name in STOPS}
    yield found
    for name, handler in found.items():
        signal.signal(getattr(signal, name), handler)  # type: ignore[arg-type]


def test_in_process_sessions_one_after_another_leave_the_signal_handlers_as_found(
    pytester: pytest.Pytester, handlers: dict[str, object], no_thread_leak: None
) -> None:
    """pytester's runs, or a script calling ``pytest.main`` twice: each session puts back
    what it wrapped, and a Ctrl-C after them is a ``KeyboardInterrupt`` again."""
    write_jsonl(pytester, "qa.eval.jsonl", ROWS)
    for run in ("one", "two"):
        result = pytester.runpytest_inprocess(
            "--llmeval-runner", "echo", "--llmeval-run-dir", run,
            "-p", "no:cacheprovider", "-p", "no:rerunfailures",  # its own server thread stays
        )  # fmt: skip
        result.assert_outcomes(passed=4)
        now = {name: signal.getsignal(getattr(signal, name)) for name in STOPS}
        assert now == handlers
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)


SIGNALLING = """
import os, signal
from pytest_llmeval.core.models import Usage
from pytest_llmeval.runners.base import Completion


class Signalling:
    \"\"\"Answers in this process; the signal arrives while it answers m1.\"\"\"

    name = "signalling"
    in_process = True

    def fingerprint(self):
        return {"type": "signalling"}

    async def generate(self, request):
        text = request.messages[-1].content or ""
        if text == "m1":
            signal.raise_signal(getattr(signal, os.environ["SIGNAL"]))
        return Completion(text=text, usage=Usage(total_tokens=1))

    async def aclose(self):
        return None


def pytest_llmeval_register_runners(registry):
    registry.register("signalling", lambda settings: Signalling())
"""


@pytest.mark.parametrize("name", STOPS)
def test_a_stopping_signal_landing_inside_an_in_process_agent_stops_the_session(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    handlers: dict[str, object],
    name: str,
) -> None:
    """SIGTERM and SIGHUP stop a session as Ctrl-C does (``interrupted.reason``, exit 2),
    wherever they land, as they would if the agent ran on the background loop: not the
    agent's fault, the cases after it not run."""
    monkeypatch.setenv("SIGNAL", name)
    pytester.makeconftest(SIGNALLING)
    write_jsonl(pytester, "qa.eval.jsonl", ROWS)
    result = pytester.runpytest_inprocess(
        "--llmeval-runner", "signalling", "--llmeval-run-dir", "run", "-p", "no:cacheprovider",
        no_reraise_ctrlc=True,  # pytester's own re-raise of a Ctrl-C, not the session's
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.INTERRUPTED
    report = json.loads((pytester.path / "run" / "report.json").read_text())
    reason = {"SIGINT": "keyboard_interrupt"}.get(name, name.lower())
    assert report["interrupted"]["reason"] == reason
    assert report["interrupted"]["cases_run"] == 1
    assert "the agent raised" not in result.stdout.str()


LOCAL_SERVER = """
import asyncio, socket, threading
from pytest_llmeval.core.models import Usage
from pytest_llmeval.runners.base import Completion


def _serve():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def accept():
        conn, _ = server.accept()
        with conn:
            while data := conn.recv(1024):
                conn.sendall(data)
        server.close()

    threading.Thread(target=accept, daemon=True).start()
    return server.getsockname()[1]


class Local:
    \"\"\"One connection to a local echo server, opened by its first case and closed by
    aclose(): it says it answers in this process (nothing a background loop could overlap).\"\"\"

    name = "local"
    in_process = True

    def __init__(self):
        self.port = _serve()
        self.connection = None

    def fingerprint(self):
        return {"type": "local"}

    async def generate(self, request):
        if self.connection is None:
            self.connection = await asyncio.open_connection("127.0.0.1", self.port)
        reader, writer = self.connection
        writer.write((request.messages[-1].content or "").encode() + b"\\n")
        await writer.drain()
        line = await reader.readline()
        return Completion(text=line.decode().strip(), usage=Usage(total_tokens=1))

    async def aclose(self):
        if self.connection is not None:
            self.connection[1].close()
            await self.connection[1].wait_closed()


def pytest_llmeval_register_runners(registry):
    registry.register("local", lambda settings: Local())
"""


def test_an_in_process_runner_is_closed_on_the_loop_its_cases_ran_on(
    pytester: pytest.Pytester, handlers: dict[str, object]
) -> None:
    """Its connection, opened on pytest's thread's loop, is closed there too: closing it on
    the background loop failed the last case's teardown (a run whose cases all passed, red)."""
    pytester.makeconftest(LOCAL_SERVER)
    write_jsonl(pytester, "qa.eval.jsonl", ROWS)
    result = pytester.runpytest_inprocess("--llmeval-runner", "local", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    assert result.ret == pytest.ExitCode.OK


STUBBORN = """
import asyncio, os, signal, threading
from pytest_llmeval.core.models import Usage
from pytest_llmeval.engine import dispatch
from pytest_llmeval.runners.base import Completion

dispatch.CLOSE_WAIT_S = 0.5


class Stubborn:
    \"\"\"Waits on its answer; its clean-up waits on a server that never answers, cancelled
    or not.\"\"\"

    name = "stubborn"
    in_process = bool(os.environ["IN_PROCESS"])

    def fingerprint(self):
        return {"type": "stubborn"}

    async def generate(self, request):
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()  # Ctrl-C
        try:
            await asyncio.sleep(30)
        finally:
            for _ in range(3):
                try:
                    await asyncio.sleep(30)
                except asyncio.CancelledError:
                    pass
        return Completion(text="late", usage=Usage(total_tokens=1))

    async def aclose(self):
        return None


def pytest_llmeval_register_runners(registry):
    registry.register("stubborn", lambda settings: Stubborn())
"""


@pytest.mark.parametrize("in_process", [True, False], ids=["in-process", "background"])
def test_a_session_interrupted_in_an_agent_ends_though_it_ignores_being_cancelled(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, in_process: bool
) -> None:
    """Ctrl-C while the agent waits: the session ends with its reports, as interrupted,
    and the process too, however the agent's task answers being cancelled (the wait for it
    is bounded, on either loop)."""
    monkeypatch.setenv("IN_PROCESS", "1" if in_process else "")
    pytester.makeconftest(STUBBORN)
    write_jsonl(pytester, "qa.eval.jsonl", ROWS[:1])
    args = ("--llmeval-runner", "stubborn", "--llmeval-run-dir", "run", "-p", "no:cacheprovider")
    result = pytester.runpytest_subprocess(*args, timeout=60)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    report = json.loads((pytester.path / "run" / "report.json").read_text())
    assert report["interrupted"]["reason"] == "keyboard_interrupt"
