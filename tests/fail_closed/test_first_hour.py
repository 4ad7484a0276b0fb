"""Fail closed, the first hour: what a new user meets after ``init`` names its fix, and never
takes the user's own tests down with it.

Each entry drives the commands a user types, in subprocesses, from an empty project folder:
``python -m pytest_llmeval init``, then ``pytest`` from the project's root or ``pytest evals``,
and asserts the exit status, the one line that says what to do, and that the command that line
names really works.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.commands.test_init import init, pytest_run

UNIT_TEST = "def test_unit():\n    assert 1 + 1 == 2\n"
LEFT_OUT = (
    "llmeval: 1 eval file(s) in evals/ left out: that folder has its own pytest.ini, read only "
    "when pytest starts there; run them with `pytest evals`"
)


def _project(tmp_path: Path) -> Path:
    """A project with a unit test of its own, after ``init``."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_unit.py").write_text(UNIT_TEST)
    done = init(tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path


# -- 6. a bare `pytest` after `init` -------------------------------------------------------


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_bare_pytest_after_init_runs_the_users_tests_and_names_pytest_evals(
    tmp_path: Path, workers: list[str]
) -> None:
    if workers:
        pytest.importorskip("xdist")
    project = _project(tmp_path)
    done = pytest_run(project, *workers)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert done.stdout.count(LEFT_OUT) == 1, done.stdout
    assert "no cassette folder" not in done.stdout + done.stderr
    assert not (project / ".llmeval").exists()  # no eval case ran: no run dir
    assert not (project / "evals" / ".llmeval").exists()
    named = pytest_run(project, "evals")  # the command the line names is right
    assert named.returncode == 0, named.stdout + named.stderr
    assert "4 passed" in named.stdout


def test_the_folders_keys_in_the_roots_configuration_take_it_in(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / "pytest.ini").write_text(
        "[pytest]\nllmeval_cassettes = evals/cassettes\nllmeval_fixtures = evals/fixtures\n"
        "llmeval_tool_registry = evals/tools.json\n"
    )
    done = pytest_run(project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6 passed" in done.stdout  # the unit test, the four eval cases and the gate
    assert "left out" not in done.stdout
    assert (project / ".llmeval" / "runs").is_dir()


def test_a_session_started_in_the_eval_folder_is_unchanged(tmp_path: Path) -> None:
    project = _project(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"],
        cwd=project / "evals", capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout and "left out" not in done.stdout


# -- 8. a replay miss names the exact command ----------------------------------------------

NEW_CASE = '{"id": "new-case", "input": "What is 3 times 7?", "expected_output": "21"}\n'


def _record_line(project: Path) -> str:
    """The command ``init``'s closing text gives for recording a new case."""
    done = init(project)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Add a case"))
    return lines[at + 2].strip()


@pytest.mark.parametrize("where", ["root", "folder"])
def test_a_replay_miss_names_the_command_that_records_it(tmp_path: Path, where: str) -> None:
    shown = _record_line(tmp_path)  # init's closing text says how a new case gets recorded
    assert shown == "pytest evals --llmeval-runner tiny-model --llmeval-record new"
    with (tmp_path / "evals" / "data" / "golden.jsonl").open("a") as data:
        data.write(NEW_CASE)
    cwd, args = (tmp_path, ["evals"]) if where == "root" else (tmp_path / "evals", [])
    command = "pytest evals" if where == "root" else "pytest"

    def run(*more: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args, *more],
            cwd=cwd, capture_output=True, text=True, timeout=300,
        )  # fmt: skip

    missed = run()
    assert missed.returncode == 1, missed.stdout + missed.stderr
    hint = f"record it with: {command} --llmeval-runner tiny-model --llmeval-record new"
    assert hint in missed.stdout, missed.stdout
    assert "running once with a live runner" not in missed.stdout
    recorded = run("--llmeval-runner", "tiny-model", "--llmeval-record", "new")  # as named
    assert "no cassette" not in recorded.stdout, recorded.stdout
    again = run()  # replayed offline now: judged, not an error
    assert "no cassette" not in again.stdout, again.stdout
    assert "1 failed, 5 passed" in again.stdout  # the tiny model's answer is judged a miss


# -- 9. a gate on a metric the protocol does not produce -----------------------------------


@pytest.mark.parametrize(
    "gate",
    [None, "when2call.acc_norm>=0.5 optional", "when2call.acc_tokens_stderr<=0.2"],
    ids=["manifest", "command-line-optional", "command-line"],
)
def test_a_gate_on_a_metric_the_protocol_does_not_produce_stops_at_the_start(
    tmp_path: Path, gate: str | None
) -> None:
    assert init(tmp_path, "--suite", "when2call").returncode == 0
    manifest = tmp_path / "evals" / "when2call.llmeval.yaml"
    text = manifest.read_text().replace("protocol: mcq-loglik ", "protocol: mcq-string ")
    if gate is not None:  # the manifest's own gate is one it can judge
        text = text.replace("  - acc_norm >= 0.5", "  - acc >= 0.5")
    manifest.write_text(text)
    done = pytest_run(tmp_path, "evals", *(["--llmeval-gate", gate] if gate else []))
    assert done.returncode == 4, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(errors) == 1, done.stderr
    metric = gate.split(".")[1].split(">")[0].split("<")[0] if gate else "acc_norm"
    source = f"--llmeval-gate '{gate}'" if gate else "when2call.llmeval.yaml:14: gates[0]"
    assert errors[0].startswith(f"ERROR: {source}"), errors[0]
    assert (
        f"suite 'when2call' gives no '{metric}' under protocol: mcq-string "
        "(when2call.llmeval.yaml): gate on acc (one pick per case), or use protocol: mcq-loglik "
        "(its metrics under protocol: mcq-string: acc, acc_stderr, " in errors[0]
    )
    assert "optional" not in errors[0].replace(gate or "", "")  # never the hint to turn it off
    assert "acc_norm," not in errors[0].split("its metrics")[1]
    assert not (tmp_path / "evals" / ".llmeval").exists()  # before any case: nothing written
