"""``python -m pytest_llmeval init``: a fresh project gets an eval folder that runs green offline.

Every test starts from an empty project folder (no pyproject, no pytest.ini) and drives the
real entry points in subprocesses: ``python -m pytest_llmeval init`` and then ``pytest DIR``,
as a user types them. The templates' cassettes are checked against a fresh recording of the
template model through the real record path; ``LLMEVAL_UPDATE_TEMPLATES=1`` writes that
recording into the package instead (after changing the model or the data).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_llmeval.commands.init import INI_KEYS, SUITES, template_files

TEMPLATES = Path(__file__).resolve().parents[2] / "pytest_llmeval" / "commands" / "templates"
UPDATE = os.environ.get("LLMEVAL_UPDATE_TEMPLATES") == "1"


def init(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_llmeval", "init", *args],
        cwd=project, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def pytest_run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=project, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def cases_in(folder: Path) -> int:
    """How many eval cases the data files of an init'd folder hold."""
    count = 0
    for path in sorted((folder / "data").rglob("*")):
        if path.name.startswith("BFCL_v4_"):  # BFCL: JSON Lines; its answers are no cases
            if path.parent.name != "possible_answer":
                count += len(path.read_text().splitlines())
        elif path.suffix == ".jsonl":
            rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            count += sum("__header__" not in row for row in rows)
        elif path.suffix == ".json":
            count += len(json.loads(path.read_text())["cases"])
    return count


def snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def assert_all_judged(
    project: Path, run: Path, suites: tuple[str, ...], *, gates: bool = True
) -> None:
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert len(rows) == cases_in(project / "evals")
    assert {r["outcome"] for r in rows} <= {"passed", "failed"}, rows
    report = json.loads((run / "report.json").read_text())
    assert sorted(report["suites"]) == sorted(suites)
    statuses = {g["gate"]["name"]: g["status"] for g in report["gates"]["results"]}
    assert statuses and (not gates or set(statuses.values()) <= {"passed", "n/a"}), statuses


@pytest.mark.parametrize("suite", SUITES)
def test_a_fresh_init_runs_offline_and_judges_every_case(tmp_path: Path, suite: str) -> None:
    done = init(tmp_path, "--suite", suite)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert f"pytest_llmeval init: {suite} in evals/" in done.stdout
    assert "  pytest evals\n" in done.stdout
    assert "--llmeval-runner openai --llmeval-model MODEL" in done.stdout
    assert "--llmeval-record new" in done.stdout
    assert "  pytest evals --llmeval-replay-from openai\n" in done.stdout
    assert f"wrote evals/{suite}.llmeval.yaml" in done.stdout
    for shared in ("conftest.py", "pytest.ini", "tools.json", "fixtures/calculator.jsonl"):
        assert (tmp_path / "evals" / shared).is_file()
    run = tmp_path / "run"
    result = pytest_run(tmp_path, "evals", f"--llmeval-run-dir={run}")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert_all_judged(tmp_path, run, (suite,))


def test_every_suite_at_once_repeated_and_comma_separated(tmp_path: Path) -> None:
    done = init(tmp_path, "--suite", "gaia,when2call", "--suite", "toolforge", "--suite=golden,")
    assert done.returncode == 0, done.stderr
    done = init(tmp_path, "evals", "--suite", "integration,bfcl")  # added later, beside the others
    assert done.returncode == 0, done.stderr
    assert "skipped" in done.stdout and "evals/conftest.py" in done.stdout
    run = tmp_path / "run"
    result = pytest_run(tmp_path, "evals", "-q", f"--llmeval-run-dir={run}")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert_all_judged(tmp_path, run, SUITES)


def test_default_is_golden_in_evals(tmp_path: Path) -> None:
    done = init(tmp_path)
    assert done.returncode == 0, done.stderr
    written = {p.relative_to(tmp_path / "evals").as_posix() for p in tmp_path.rglob("*")}
    assert "golden.llmeval.yaml" in written
    assert not any(s in w for w in written for s in SUITES if s != "golden")


def test_existing_files_are_skipped_listed_and_left_byte_identical(tmp_path: Path) -> None:
    folder = tmp_path / "my evals"
    folder.mkdir()
    (folder / "conftest.py").write_text("# mine\n")
    (folder / "data").mkdir()
    (folder / "data" / "golden.jsonl").write_bytes(b"not yours\n")
    done = init(tmp_path, "my evals")
    assert done.returncode == 0, done.stderr
    listed = done.stdout.split("skipped 2 existing file(s), left as they are:\n")[1]
    assert listed.startswith("  my evals/conftest.py\n  my evals/data/golden.jsonl\n")
    assert "wrote my evals/conftest.py" not in done.stdout
    assert (folder / "conftest.py").read_text() == "# mine\n"
    assert (folder / "data" / "golden.jsonl").read_bytes() == b"not yours\n"
    assert "pytest 'my evals'" in done.stdout  # the commands to run are quoted for the shell
    before = snapshot(folder)
    again = init(tmp_path, "my evals")
    assert again.returncode == 0, again.stderr
    assert "wrote" not in again.stdout
    assert f"skipped {len(before)} existing file(s)" in again.stdout
    assert snapshot(folder) == before


def test_it_runs_from_a_project_with_its_own_pytest_configuration(tmp_path: Path) -> None:
    """``pytest evals`` finds the folder's pytest.ini before the project's pyproject.toml, so
    the eval folder runs as written; the project's own ``pytest`` is left as it was."""
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "app"\nversion = "0"\n'
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\naddopts = "--strict-markers"\n'
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_app.py").write_text("def test_app():\n    pass\n")
    assert init(tmp_path, "--suite", "golden,toolforge").returncode == 0
    result = pytest_run(tmp_path, "evals", "-q", f"--llmeval-run-dir={tmp_path / 'run'}")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert_all_judged(tmp_path, tmp_path / "run", ("golden", "toolforge"))
    own = pytest_run(tmp_path, "-q")
    assert own.returncode == 0 and "1 passed" in own.stdout, own.stdout


def test_a_pytest_ini_of_the_users_is_kept_and_named_with_the_keys_it_needs(
    tmp_path: Path,
) -> None:
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "pytest.ini").write_text("[pytest]\n")
    done = init(tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"  (evals/pytest.ini was yours: it needs {', '.join(INI_KEYS)})" in done.stdout
    assert (tmp_path / "evals" / "pytest.ini").read_text() == "[pytest]\n"
    shipped = (TEMPLATES / "common" / "pytest.ini").read_text().splitlines()
    assert [line for line in shipped if line.startswith("llmeval_")] == list(INI_KEYS)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["a-file"], "pytest_llmeval init: a-file is a file, not a folder: name another DIR"),
        (["a-file/evals"], "pytest_llmeval init: a-file is a file, not a folder"),
        (["--suite", "golden,gaai"], "pytest_llmeval init: unknown suite 'gaai'; choose from"),
    ],
)
def test_a_bad_dir_or_suite_is_one_line_and_a_failing_exit(
    tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "a-file").write_text("x")
    done = init(tmp_path, *args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith(message), done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]  # nothing written


def test_replay_without_cassettes_stops_at_the_start_with_one_line(tmp_path: Path) -> None:
    assert init(tmp_path, "--suite", "golden,toolforge").returncode == 0
    shutil.rmtree(tmp_path / "evals" / "cassettes")
    result = pytest_run(tmp_path, "evals")
    assert result.returncode == 4, result.stdout[-2000:] + result.stderr
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and "--llmeval-record new" in errors[0], result.stderr
    assert "no cassette folder" in errors[0]
    assert "Traceback" not in result.stdout + result.stderr
    assert not (tmp_path / "evals" / ".llmeval").exists()  # nothing ran, nothing written


def test_the_printed_endpoint_command_records_and_replays(tmp_path: Path) -> None:
    """The second command ``init`` prints, run against a loopback OpenAI-compatible server,
    records; plain replay then asks which recording (one line, exit 4), and the third command
    replays it offline with the same outcomes."""
    from pytest_llmeval.testing import OpenAIServer, echo_chat

    done = init(tmp_path, "--suite", "golden,toolforge")
    shown = [line.strip() for line in done.stdout.splitlines() if "--llmeval-r" in line]
    record, replay = (line for line in shown if "tiny-model" not in line)
    with OpenAIServer(chat=echo_chat, models=["echo-1"]) as server:
        command = record.replace("MODEL", "echo-1").replace("URL", server.base_url)
        live = pytest_run(tmp_path, *command.split()[1:], f"--llmeval-run-dir={tmp_path / 'a'}")
        assert server.chat_bodies()
    assert live.returncode in (0, 1), live.stdout[-3000:] + live.stderr
    assert_all_judged(tmp_path, tmp_path / "a", ("golden", "toolforge"), gates=False)
    both = pytest_run(tmp_path, "evals")
    assert both.returncode == 4
    errors = [line for line in both.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and "--llmeval-replay-from" in errors[0], both.stderr
    offline = pytest_run(tmp_path, *replay.split()[1:], f"--llmeval-run-dir={tmp_path / 'b'}")
    assert offline.returncode == live.returncode, offline.stdout[-3000:] + offline.stderr
    outcomes = [
        {json.loads(line)["nodeid"]: json.loads(line)["outcome"] for line in lines}
        for lines in (
            (tmp_path / run / "results.jsonl").read_text().splitlines() for run in ("a", "b")
        )
    ]
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("suite", SUITES)
def test_shipped_cassettes_are_what_the_template_model_records(tmp_path: Path, suite: str) -> None:
    """Record the template model through the real record path and compare the cassettes with
    the shipped ones, file by file (``LLMEVAL_UPDATE_TEMPLATES=1`` writes them instead)."""
    assert init(tmp_path, "--suite", suite).returncode == 0
    folder = tmp_path / "evals"
    shutil.rmtree(folder / "cassettes", ignore_errors=UPDATE)
    run = f"--llmeval-run-dir={tmp_path / 'run'}"
    record = ["--llmeval-runner", "tiny-model", "--llmeval-record", "new"]
    result = pytest_run(tmp_path, "evals", "-q", *record, run)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    recorded = {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted((folder / "cassettes").rglob("*.json"))
    }
    shipped_root = TEMPLATES / suite / "cassettes"
    if UPDATE:
        shutil.rmtree(shipped_root, ignore_errors=True)
        for rel, content in recorded.items():
            (TEMPLATES / suite / rel).parent.mkdir(parents=True, exist_ok=True)
            (TEMPLATES / suite / rel).write_bytes(content)
    shipped = {
        str(rel): content
        for rel, content in template_files([suite]).items()
        if rel.parts[0] == "cassettes" and (TEMPLATES / suite / rel).is_file()
    }
    assert sorted(recorded) == sorted(shipped)
    assert recorded == shipped


def test_a_symlinked_folder_inside_dir_is_never_written_through(tmp_path: Path) -> None:
    """``DIR/cassettes -> elsewhere``: nothing lands outside DIR; what would have is listed
    as not written with the link named, the rest is written, and the exit is 1."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "ev").mkdir()
    (tmp_path / "ev" / "cassettes").symlink_to(elsewhere)
    done = init(tmp_path, "ev")
    assert done.returncode == 1, done.stderr
    assert list(elsewhere.iterdir()) == []
    cassettes = [rel for rel in template_files(["golden"]) if rel.parts[0] == "cassettes"]
    assert f"not written {len(cassettes)} file(s):" in done.stdout
    assert "ev/cassettes is a symbolic link: not written through" in done.stdout
    assert "wrote ev/golden.llmeval.yaml" in done.stdout
    assert (tmp_path / "ev" / "golden.llmeval.yaml").is_file()
    assert len(done.stderr.splitlines()) == 1 and "not written" in done.stderr


def test_a_dangling_link_where_a_folder_goes_is_named_and_the_rest_listed(
    tmp_path: Path,
) -> None:
    (tmp_path / "ev").mkdir()
    (tmp_path / "ev" / "fixtures").symlink_to(tmp_path / "gone")
    done = init(tmp_path, "ev")
    assert done.returncode == 1
    assert "ev/fixtures is a symbolic link: not written through" in done.stdout
    assert "wrote ev/conftest.py" in done.stdout and "wrote ev/tools.json" in done.stdout
    assert not (tmp_path / "gone").exists()
    assert "File exists" not in done.stderr


def test_a_folder_that_cannot_be_made_is_named_and_init_goes_on(tmp_path: Path) -> None:
    (tmp_path / "ev").mkdir()
    (tmp_path / "ev" / "data").mkdir(mode=0o500)  # no writing into it
    if os.access(tmp_path / "ev" / "data", os.W_OK):
        pytest.skip("running as a user that writes anywhere")
    done = init(tmp_path, "ev")
    assert done.returncode == 1
    assert "ev/data/golden.jsonl: cannot write" in done.stdout
    assert "wrote ev/conftest.py" in done.stdout
