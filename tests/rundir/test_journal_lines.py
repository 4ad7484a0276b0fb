"""Each journal line names the runner that answered its case: the fingerprint in the line
hashes to the result's ``runner_fingerprint``, whatever the user's agent does between cases
(a per-case agent, a fingerprint that holds state the agent changes), and the run dir's
runners say the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_llmeval.plugin.phase_results import runner_id
from pytest_llmeval.rundir.journal import Journal
from tests.conftest import write_jsonl

ROWS = [{"id": f"c{i}", "input": f"m{i}", "expected_output": f"m{i}"} for i in range(3)]

AGENTS = """
import pytest

class Model:
    def __init__(self, number):
        self.settings = {{"number": number, "seen": []}}

    def run(self, case, broker):
        self.settings["seen"].append(case.case_id)  # state the fingerprint shows
        return case.user_message

    def fingerprint(self):
        return {{"model": "m", "settings": self.settings}}

COUNT = [0]

@pytest.fixture(scope="{scope}")
def llmeval_agent():
    COUNT[0] += 1
    return Model(COUNT[0])
"""


def _lines(run: Path) -> list[dict[str, object]]:
    return [json.loads(line) for path in sorted(run.glob("journal/*/*.jsonl"))
            for line in path.read_text().splitlines()]  # fmt: skip


@pytest.mark.parametrize("scope", ["session", "function"])
def test_every_line_names_the_runner_its_hash_says(pytester: pytest.Pytester, scope: str) -> None:
    pytester.makeconftest(AGENTS.format(scope=scope))
    write_jsonl(pytester, "a.eval.jsonl", ROWS)
    write_jsonl(pytester, "b.eval.jsonl", ROWS)
    result = pytester.runpytest("--llmeval-run-dir", "run", "-p", "no:randomly")
    result.assert_outcomes(passed=6)
    lines = _lines(pytester.path / "run")
    assert len(lines) == 6
    for entry in lines:
        assert runner_id(entry["runner"]) == entry["result"]["runner_fingerprint"], entry
    numbers = {entry["runner"]["settings"]["number"] for entry in lines}
    assert len(numbers) == (1 if scope == "session" else 6)  # a per-case agent: its own
    runners = json.loads((pytester.path / "run" / "report.json").read_text())["runners"]
    for key, runner in runners.items():
        assert runner_id(runner) == key, runner


def test_a_line_is_what_the_journal_makes_of_its_case_alone(tmp_path: Path) -> None:
    """The tail reused from the last line is that line's runner and file: two files taking
    turns and runners coming and going give the lines a journal new to each one gives."""
    first, second = {"model": "a"}, {"model": "b"}
    calls = [(first, "x"), (first, "y"), (first, "x"), (second, "x"), (None, "x"), (None, "y"),
             (first, "x"), (first, "x")]  # fmt: skip

    def scoring(file: str) -> str:
        return f"scoring of {file}"

    journal = Journal(tmp_path, 1, "main", scoring=scoring)
    for runner, file in calls:
        result = {"file": file, "nodeid": f"{file}::c", "scores": {"s": 1.0}}
        alone = Journal(tmp_path, 1, "main", scoring=scoring).line(result, runner)
        assert journal.line(result, runner) == alone
