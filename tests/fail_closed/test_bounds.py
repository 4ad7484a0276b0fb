"""Counts that multiply work are bounded, and budgets count everything that costs.

* Repeats, judge repeats, turn limits and concurrency are whole numbers in a documented range
  (:mod:`pytest_llmeval.core.bounds`) wherever they are given; a bad one is an error where it
  stands: a usage error on the command line, ini or environment (exit 4), that row's error in
  a data row, that manifest's error item in a manifest. It is never silently 1.
* The per-case timeout bounds all of a case's repeats together.
* ``--llmeval-max-tokens-total`` and ``--llmeval-max-cost`` count every repeat, judge calls and
  judge repeats; under ``-n`` they are session-wide.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpcore  # noqa: F401  (imported before any in-process run: see below)
import pytest

from pytest_llmeval.core.models import EvalCase
from pytest_llmeval.core.shards import worker_of
from pytest_llmeval.engine.case_services import CaseServices
from pytest_llmeval.engine.dispatch import Dispatcher
from pytest_llmeval.limits import LimitServer, RemoteLedger, SpendLedger
from pytest_llmeval.limits.ledger import Totals
from pytest_llmeval.testing.openai_server import OpenAIServer
from pytest_llmeval.testing.server import Reply, Request
from pytest_llmeval.tools.broker import ToolBroker
from tests.conftest import read_jsonl, write_json

ECHO = ("--llmeval-runner", "echo", "--llmeval-model", "echo-model")
# httpcore is imported above on purpose: an in-process pytester run unloads the modules first
# imported inside it, and an httpcore imported anew afterwards no longer matches the classes
# httpx maps its errors from (later tests in the session would see raw httpcore errors).
BAD_COUNTS = ["0", "-1", "3.0", "2.5", "1e9", "true", "1001", "1000000000", "many"]
"""Command-line spellings of a repeat count that must be refused (the range is 1 to 1,000)."""


def _rows(path: Path) -> dict[str, dict[str, object]]:
    return {str(r["case_id"]): r for r in read_jsonl(path / "results.jsonl")}


def _good(n: int = 2) -> list[dict[str, str]]:
    return [{"id": f"good-{i}", "input": f"w{i}", "expected_output": f"w{i}"} for i in range(n)]


# -- the command line, the ini file and the environment: a usage error -----------------------


@pytest.mark.parametrize("value", BAD_COUNTS)
def test_a_bad_repeat_count_on_the_command_line_is_a_usage_error(
    pytester: pytest.Pytester, value: str
) -> None:
    write_json(pytester, "qa.golden.json", _good())
    result = pytester.runpytest(*ECHO, f"--llmeval-repeats={value}", "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: --llmeval-repeats takes a whole number from 1 to 1,000, got '{value}'"]
    )
    assert not (pytester.path / "run").exists()  # nothing ran


@pytest.mark.parametrize(
    ("option", "value", "range_text"),
    [
        ("judge-repeats", "0", "1 to 100"),
        ("judge-repeats", "101", "1 to 100"),
        ("max-turns", "0", "1 to 500"),
        ("max-turns", "100000", "1 to 500"),
        ("concurrency", "0", "1 to 1,000"),
        ("concurrency", "1e9", "1 to 1,000"),
        ("max-connections", "0", "1 to 10,000"),
        ("max-connections", "true", "1 to 10,000"),
        ("batch-size", "2.5", "1 to 4,096"),
        ("batch-size", "5000", "1 to 4,096"),
    ],
)
def test_every_count_that_multiplies_work_is_bounded(
    pytester: pytest.Pytester, option: str, value: str, range_text: str
) -> None:
    write_json(pytester, "qa.golden.json", _good())
    result = pytester.runpytest(*ECHO, f"--llmeval-{option}={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: --llmeval-{option} takes a whole number from {range_text}, got '{value}'"]
    )


def test_a_bad_count_in_the_ini_file_or_the_environment_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_json(pytester, "qa.golden.json", _good())
    pytester.makeini("[pytest]\nllmeval_repeats = 1000000000\n")
    result = pytester.runpytest(*ECHO)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: ini llmeval_repeats (--llmeval-repeats) takes a whole number from 1 to 1,000, "
            "got '1000000000'"
        ]
    )
    (pytester.path / "tox.ini").unlink()
    monkeypatch.setenv("PYTEST_LLMEVAL_CONCURRENCY", "0")
    result = pytester.runpytest(*ECHO)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: environment variable PYTEST_LLMEVAL_CONCURRENCY (--llmeval-concurrency) takes "
            "a whole number from 1 to 1,000, got '0'"
        ]
    )


def test_the_largest_counts_are_accepted(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", _good(1))
    result = pytester.runpytest(
        *ECHO, "--llmeval-judge-repeats=100", "--llmeval-max-turns=500",
        "--llmeval-concurrency=1000", "--llmeval-repeats=3", "--llmeval-run-dir", "run",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    assert _rows(pytester.path / "run")["good-0"]["repeats"]["n"] == 3  # type: ignore[index]


BAD_FLOATS = [
    ("--llmeval-timeout=nan", (), "ERROR: --llmeval-timeout takes a finite number, got 'nan'"),
    ("--llmeval-timeout=inf", (), "ERROR: --llmeval-timeout takes a finite number, got 'inf'"),
    ("--llmeval-progress=nan", (), "ERROR: --llmeval-progress takes a finite number, got 'nan'"),
    (
        "--llmeval-temperature=nan",
        (),
        "ERROR: --llmeval-temperature takes a finite number, got 'nan'",
    ),
    (
        "--llmeval-temperature=-1",
        (),
        "ERROR: --llmeval-temperature takes a number, 0 or more; got -1.0",
    ),
    ("--llmeval-top-p=1.5", (), "ERROR: --llmeval-top-p takes a number above 0, at most 1; *"),
    (
        "--llmeval-judge-temperature=inf",
        (),
        "ERROR: --llmeval-judge-temperature takes a finite number, got 'inf'",
    ),
    (
        None,
        (("PYTEST_LLMEVAL_JUDGE_TEMPERATURE", "inf"),),
        "ERROR: environment variable PYTEST_LLMEVAL_JUDGE_TEMPERATURE takes a finite number, "
        "got 'inf'",
    ),
    (
        None,
        (("PYTEST_LLMEVAL_TIMEOUT", "NaN"),),
        "ERROR: environment variable PYTEST_LLMEVAL_TIMEOUT takes a finite number, got 'NaN'",
    ),
]


@pytest.mark.parametrize(
    ("arg", "env", "line"), BAD_FLOATS, ids=[str(b[0] or b[1]) for b in BAD_FLOATS]
)
def test_a_number_option_that_is_not_finite_or_in_range_is_a_usage_error(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    arg: str | None,
    env: tuple[tuple[str, str], ...],
    line: str,
) -> None:
    """A timeout, temperature or progress interval of NaN or infinity is never a setting
    (an endless case, a NaN sent to the backend): one usage error before any case."""
    write_json(pytester, "qa.golden.json", _good())
    for key, value in env:
        monkeypatch.setenv(key, value)
    args = (arg,) if arg else ()
    result = pytester.runpytest(*ECHO, *args, "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([line])
    assert not (pytester.path / "run").exists()


# -- a data row: that row's error, the other cases run ---------------------------------------

BAD_ROW_REPEATS = [
    ('"3"', "a string"),
    ("0", "0"),
    ("-2", "-2"),
    ("true", "a boolean"),
    ("2.5", "2.5"),
    ("3.0", "3.0"),
    ("1e9", "1000000000.0"),
    ("1000000000", "1000000000"),
    ("[3]", "an array"),
]


def test_a_bad_repeat_count_in_a_row_is_that_rows_error(pytester: pytest.Pytester) -> None:
    lines = [json.dumps(row) for row in _good()]
    for i, (value, _) in enumerate(BAD_ROW_REPEATS):
        lines.append(
            f'{{"id": "bad-{i}", "input": "x", "expected_output": "x", '
            f'"metadata": {{"repeats": {value}}}}}'
        )
    lines.append('{"id": "ok-3", "input": "x", "expected_output": "x", "metadata": {"repeats": 3}}')
    (pytester.path / "c.eval.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = pytester.runpytest(*ECHO, "--llmeval-run-dir", "run", "-rE")
    result.assert_outcomes(passed=3, errors=len(BAD_ROW_REPEATS))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    rows = _rows(pytester.path / "run")
    assert sorted(rows) == sorted(
        ["good-0", "good-1", "ok-3", *(f"bad-{i}" for i in range(len(BAD_ROW_REPEATS)))]
    )
    for i, (_, shown) in enumerate(BAD_ROW_REPEATS):
        line = 3 + i
        assert rows[f"bad-{i}"]["outcome"] == "error"
        assert rows[f"bad-{i}"]["error"] == (
            f"c.eval.jsonl:{line}: metadata.repeats: expected a whole number from 1 to 1,000, "
            f"got {shown}"
        )
    assert rows["ok-3"]["outcome"] == "passed"
    assert rows["ok-3"]["repeats"]["n"] == 3  # type: ignore[index]
    assert "INTERNALERROR" not in result.stdout.str()


@pytest.mark.parametrize(
    ("name", "row", "message"),
    [
        (
            "t.golden.json",
            [{"id": "t", "input": "x", "expected_output": "x", "max_turns": 100000}],
            "t.golden.json:1: max_turns: expected a whole number from 1 to 500, got 100000",
        ),
        (
            "t.golden.json",
            [{"id": "t", "input": "x", "expected_output": "x", "max_turns": "9"}],
            "t.golden.json:1: max_turns: expected a whole number from 1 to 500, got a string",
        ),
    ],
)
def test_a_bad_turn_limit_in_a_row_is_that_rows_error(
    pytester: pytest.Pytester, name: str, row: list[dict[str, object]], message: str
) -> None:
    write_json(pytester, "good.golden.json", _good())
    (pytester.path / name).write_text(json.dumps(row), encoding="utf-8")
    result = pytester.runpytest(*ECHO, "--llmeval-run-dir", "run", "-rE")
    result.assert_outcomes(passed=2, errors=1)
    rows = _rows(pytester.path / "run")
    assert rows["t"]["outcome"] == "error"
    assert rows["t"]["error"] == message


# -- a manifest: that manifest's error item ------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1000000000", "repeats: expected a whole number <= 1000, got 1000000000"),
        ("0", "repeats: expected a whole number >= 1, got 0"),
        ('"3"', "repeats: expected a whole number, got a string"),
        ("true", "repeats: expected a whole number, got a boolean"),
        ("2.5", "repeats: expected a whole number, got a number"),
    ],
)
def test_a_bad_repeat_count_in_a_manifest_is_that_manifests_error(
    pytester: pytest.Pytester, value: str, message: str
) -> None:
    write_json(pytester, "good.golden.json", _good())
    write_json(pytester, "data.json", [{"id": "d", "input": "d", "expected_output": "d"}])
    pytester.makefile(".llmeval.yaml", m=f"suite: golden\ndata: data.json\nrepeats: {value}\n")
    result = pytester.runpytest(*ECHO, "--llmeval-run-dir", "run", "-rE")
    result.assert_outcomes(passed=2, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    rows = list(_rows(pytester.path / "run").values())
    errors = [r for r in rows if r["outcome"] == "error"]
    assert [r["error"] for r in errors] == [f"m.llmeval.yaml:3: {message}"]
    assert sorted(r["case_id"] for r in rows if r["outcome"] == "passed") == ["good-0", "good-1"]


# -- the timeout bounds all of a case's repeats; Ctrl-C stops them ---------------------------

HANGING_CONFTEST = """
import asyncio
from pathlib import Path

from pytest_llmeval.core.models import Usage
from pytest_llmeval.runners.base import Completion


class Hanging:
    name = "hanging"

    def fingerprint(self):
        return {"type": "hanging"}

    async def generate(self, request):
        text = request.messages[-1].content or ""
        if text == "hang":
            Path("started").touch()
            await asyncio.sleep(3600)
        return Completion(text=text, usage=Usage(total_tokens=1))

    async def aclose(self):
        return None


def pytest_llmeval_register_runners(registry):
    registry.register("hanging", lambda settings: Hanging())
"""

HANGING_ROWS = [
    {"id": "hangs", "input": "hang", "expected_output": "x", "metadata": {"repeats": 1000}},
    {"id": "quick", "input": "ok", "expected_output": "ok"},
]


def test_the_timeout_covers_all_of_a_cases_repeats(pytester: pytest.Pytester) -> None:
    """1,000 repeats of a case that never answers, one at a time, end after one timeout, not
    after 1,000 of them; the case is an error and the next case runs."""
    pytester.makeconftest(HANGING_CONFTEST)
    write_json(pytester, "h.golden.json", HANGING_ROWS)
    result = pytester.runpytest_subprocess(
        "--llmeval-runner", "hanging", "--llmeval-timeout", "1", "--llmeval-concurrency", "1",
        "--llmeval-run-dir", "run", "-p", "no:cacheprovider", timeout=120,
    )  # fmt: skip
    result.assert_outcomes(passed=1, errors=1)
    rows = _rows(pytester.path / "run")
    assert rows["quick"]["outcome"] == "passed"
    assert rows["hangs"]["outcome"] == "error"
    assert rows["hangs"]["error"].startswith(
        "1000 of 1000 repeats errored; repeat 1: timed out after 1s "
        "(the timeout covers all 1000 repeats): raise --llmeval-timeout"
    )
    events = read_jsonl(pytester.path / "run" / "events.jsonl")
    errors = [e for e in events if e.get("sample_id") == "hangs" and e.get("type") == "error"]
    assert len(errors) == 1000
    assert len({e["message"] for e in errors}) == 1
    assert errors[0]["message"].startswith(
        "timed out after 1s (the timeout covers all 1000 repeats): raise --llmeval-timeout"
    )


def test_ctrl_c_stops_a_case_with_the_most_repeats(pytester: pytest.Pytester) -> None:
    """SIGINT while 1,000 repeats of a case hang: the session ends (no hang, no traceback)."""
    pytester.makeconftest(HANGING_CONFTEST)
    write_json(pytester, "h.golden.json", HANGING_ROWS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "--llmeval-runner", "hanging",
         "--llmeval-timeout", "3600", "--llmeval-concurrency", "1000",
         "--llmeval-run-dir", "run", "-p", "no:cacheprovider"],
        cwd=pytester.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        for _ in range(600):  # the first repeat has reached the backend
            if (pytester.path / "started").exists() or proc.poll() is not None:
                break
            subprocess.run(["sleep", "0.1"], check=True)
        assert (pytester.path / "started").exists()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = out.decode("utf-8", "replace")
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, text
    assert "INTERNALERROR" not in text


# -- budgets count every repeat, the judge, and the whole session under -n -------------------

BUDGET_EXIT = pytest.ExitCode.INTERRUPTED


def _say(n: int, prefix: str = "c") -> list[dict[str, str]]:
    """Golden cases the echo runner passes, each run 3 prompt + 3 completion tokens."""
    return [
        {
            "id": f"{prefix}{i:03d}",
            "input": f"say word{i} again",
            "expected_output": f"say word{i} again",
        }
        for i in range(n)
    ]


def _outcomes(run_dir: Path) -> dict[str, tuple[object, object]]:
    return {k: (r["outcome"], r["error"]) for k, r in _rows(run_dir).items()}


def test_a_token_budget_counts_every_repeat(pytester: pytest.Pytester) -> None:
    """3 repeats of 6 tokens are 18 tokens a case: a 36-token budget runs exactly 2 cases
    (counting the first run only, it ran 6)."""
    write_json(pytester, "qa.golden.json", _say(8))
    result = pytester.runpytest(
        *ECHO, "--llmeval-repeats", "3", "--llmeval-concurrency", "1",
        "--llmeval-max-tokens-total", "36", "--llmeval-run-dir", "run",
    )  # fmt: skip
    assert result.ret == BUDGET_EXIT
    result.assert_outcomes(passed=2, skipped=6)
    found = _outcomes(pytester.path / "run")
    assert [found[f"c{i:03d}"][0] for i in range(8)] == ["passed"] * 2 + ["skipped"] * 6
    assert found["c007"][1] == "budget reached: 36 tokens of --llmeval-max-tokens-total=36"
    usage = _rows(pytester.path / "run")["c000"]["usage"]
    assert usage == {"prompt_tokens": 9, "completion_tokens": 9, "total_tokens": 18}
    result.stdout.fnmatch_lines(["llmeval: 36 tokens (18 prompt, 18 completion)"])


JUDGE_CONFTEST = """
import json

from pytest_llmeval.core.models import Usage
from pytest_llmeval.runners.base import Completion


class Judge:
    name = "judgy"

    def fingerprint(self):
        return {"type": "judgy", "model": "judge-model"}

    async def generate(self, request):
        verdict = {"scores": {"correct": 1.0}, "reason": "fine"}
        return Completion(
            text=json.dumps(verdict),
            usage=Usage(prompt_tokens=10, completion_tokens=4, total_tokens=14),
        )

    async def aclose(self):
        return None


def pytest_llmeval_register_runners(registry):
    registry.register("judgy", lambda settings: Judge())
"""


def _judged(n: int) -> list[dict[str, object]]:
    return [{**case, "rubric": {"correct": 1.0}} for case in _say(n)]


JUDGE = ("--llmeval-judge-runner", "judgy", "--llmeval-judge-model", "judge-model")


def test_a_token_budget_counts_the_judge_and_its_repeats(pytester: pytest.Pytester) -> None:
    """A case costs 6 model tokens, and 2 verdicts of 14 judge tokens each: 34 tokens. A
    68-token budget runs exactly 2 cases (counting the model's tokens only, it ran 12)."""
    pytester.makeconftest(JUDGE_CONFTEST)
    write_json(pytester, "qa.golden.json", _judged(8))
    result = pytester.runpytest(
        *ECHO, *JUDGE, "--llmeval-judge-repeats", "2", "--llmeval-concurrency", "1",
        "--llmeval-max-tokens-total", "68", "--llmeval-run-dir", "run",
    )  # fmt: skip
    assert result.ret == BUDGET_EXIT
    result.assert_outcomes(passed=2, skipped=6)
    found = _outcomes(pytester.path / "run")
    assert [found[f"c{i:03d}"][0] for i in range(8)] == ["passed"] * 2 + ["skipped"] * 6
    assert found["c007"][1] == "budget reached: 68 tokens of --llmeval-max-tokens-total=68"
    report = json.loads((pytester.path / "run" / "report.json").read_text())
    assert report["suites"]["golden"]["judge"]["tokens"] == 2 * 28


def test_judge_tokens_of_every_repeat_are_counted_and_priced(pytester: pytest.Pytester) -> None:
    """3 repeats, each judged: the case's judge usage, the terminal's tokens and
    totals.cost_usd count all three verdicts, the judge's at the judge model's price."""
    pytester.makeconftest(JUDGE_CONFTEST)
    write_json(pytester, "qa.golden.json", _judged(2))
    pytester.makefile(
        ".yaml",
        prices="echo-model: {input: 1000, output: 2000}\njudge-model: {input: 100, output: 1000}\n",
    )
    result = pytester.runpytest(
        *ECHO, *JUDGE, "--llmeval-repeats", "3", "--llmeval-prices", "prices.yaml",
        "--llmeval-run-dir", "run",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    row = _rows(pytester.path / "run")["c000"]
    assert row["usage"] == {"prompt_tokens": 9, "completion_tokens": 9, "total_tokens": 18}
    judge = row["details"]["judge"]  # type: ignore[index]
    assert judge["usage"] == {"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42}
    # a case: model 9 * $0.001 + 9 * $0.002 = $0.027; judge 30 * $0.0001 + 12 * $0.001 = $0.015
    report = json.loads((pytester.path / "run" / "report.json").read_text())
    assert report["totals"]["cost_usd"] == pytest.approx(2 * 0.042)
    result.stdout.fnmatch_lines(["llmeval: 120 tokens (78 prompt, 42 completion), $0.0840"])


def _ids_on_worker(worker: int, n: int) -> list[str]:
    ids = []
    i = 0
    while len(ids) < n:
        if worker_of(f"c{i:03d}", 2) == worker:
            ids.append(f"c{i:03d}")
        i += 1
    return ids


def test_under_xdist_a_budget_is_the_sessions_not_a_share(pytester: pytest.Pytester) -> None:
    """Every case goes to one worker: it may spend the whole 30-token budget (5 cases of 6),
    not its half (3 cases), and the session stops there exactly."""
    pytest.importorskip("xdist")
    ids = _ids_on_worker(0, 10)
    write_json(
        pytester,
        "qa.golden.json",
        [{"id": i, "input": f"say {i} now", "expected_output": f"say {i} now"} for i in ids],
    )
    result = pytester.runpytest(
        *ECHO, "-n", "2", "--llmeval-concurrency", "1", "--llmeval-max-tokens-total", "30",
        "--llmeval-run-dir", "run",
    )  # fmt: skip
    assert result.ret == BUDGET_EXIT
    found = _outcomes(pytester.path / "run")
    assert sorted(found) == sorted(ids)
    assert [found[i][0] for i in ids] == ["passed"] * 5 + ["skipped"] * 5
    assert {found[i][1] for i in ids[5:]} == {
        "budget reached: 30 tokens of --llmeval-max-tokens-total=30"
    }


def test_under_xdist_the_workers_share_one_budget(pytester: pytest.Pytester) -> None:
    """Cases on both workers: the session runs the 4 cases the 24-token budget holds, and at
    most one more that the other worker had in hand when it was reached; every skip names the
    session's budget, not a worker's share of it."""
    pytest.importorskip("xdist")
    ids = sorted(_ids_on_worker(0, 6) + _ids_on_worker(1, 6))
    write_json(
        pytester,
        "qa.golden.json",
        [{"id": i, "input": f"say {i} now", "expected_output": f"say {i} now"} for i in ids],
    )
    result = pytester.runpytest(
        *ECHO, "-n", "2", "--llmeval-concurrency", "1", "--llmeval-max-tokens-total", "24",
        "--llmeval-run-dir", "run",
    )  # fmt: skip
    assert result.ret == BUDGET_EXIT
    found = _outcomes(pytester.path / "run")
    assert sorted(found) == ids
    ran = [i for i in ids if found[i][0] == "passed"]
    assert 4 <= len(ran) <= 5, found
    skipped = [error for outcome, error in found.values() if outcome == "skipped"]
    assert len(skipped) == 12 - len(ran)
    assert all(
        str(e).startswith("budget reached: ")
        and str(e).endswith(" tokens of --llmeval-max-tokens-total=24")
        for e in skipped
    )


class _CountingAgent:
    """Answers at once; remembers the most tasks alive on the loop while it ran."""

    def __init__(self) -> None:
        self.most_tasks = 0
        self.runs = 0

    async def run(self, case: object, broker: object) -> str:
        self.runs += 1
        self.most_tasks = max(self.most_tasks, len(asyncio.all_tasks()))
        await asyncio.sleep(0)
        return "ok"


def test_a_case_with_many_repeats_holds_few_tasks(tmp_path: Path) -> None:
    """1,000 repeats at concurrency 2 run as a few tasks at a time (memory stays bounded by
    the concurrency, not the repeat count), and all 1,000 run, in repeat order."""
    agent = _CountingAgent()
    case = EvalCase(case_id="many", suite="golden", file="x.jsonl", line=1)
    services = CaseServices(repeats_for=lambda case: 1000)
    dispatcher = Dispatcher(concurrency=2, timeout_s=60.0, services=services)
    try:
        job = (case, agent, ToolBroker.from_dir(tmp_path / "none"))
        transcript = dispatcher.transcript("x.jsonl::many", job)
    finally:
        dispatcher.close()
    assert agent.runs == 1000
    assert len(transcript.repeats) == 1000
    assert agent.most_tasks <= 4, agent.most_tasks


def test_a_budget_counts_the_embedding_calls(pytester: pytest.Pytester) -> None:
    """Each case's semantic_similarity asks the embeddings endpoint, which says it used 20
    tokens: with 6 model tokens a case costs 26, so a 52-token budget runs exactly 2 cases
    (counting the model's tokens only, it ran all 6); totals price the embedding model."""
    pytester.makeini("[pytest]\n")
    cases = [
        {**case, "min_scores": {"semantic_similarity": 0.5}}  # each answer embeds anew
        for case in _say(6)
    ]
    write_json(pytester, "s.golden.json", cases)

    def embeddings(request: Request) -> Reply:
        texts = request.json["input"]
        data = [{"index": i, "embedding": [1.0, float(len(t))]} for i, t in enumerate(texts)]
        usage = {"prompt_tokens": 20, "total_tokens": 20}
        return Reply(json={"object": "list", "data": data, "usage": usage})

    pytester.makefile(
        ".yaml", prices="echo-model: {input: 0, output: 0}\nemb: {input: 1000, output: 0}\n"
    )
    with OpenAIServer() as server:
        server.route("POST", "/v1/embeddings", embeddings)
        result = pytester.runpytest(
            *ECHO, "--llmeval-embedding-base-url", server.base_url,
            "--llmeval-embedding-model", "emb", "--llmeval-concurrency", "1",
            "--llmeval-max-tokens-total", "52", "--llmeval-prices", "prices.yaml",
            "--llmeval-run-dir", "run",
        )  # fmt: skip
    assert result.ret == BUDGET_EXIT
    result.assert_outcomes(passed=2, skipped=4)
    rows = _rows(pytester.path / "run")
    assert rows["c000"]["details"]["embedding"] == {  # type: ignore[index]
        "usage": {"prompt_tokens": 20, "completion_tokens": 0, "total_tokens": 20}
    }
    assert rows["c005"]["error"] == "budget reached: 52 tokens of --llmeval-max-tokens-total=52"
    report = json.loads((pytester.path / "run" / "report.json").read_text())
    assert report["totals"]["cost_usd"] == pytest.approx(2 * 20 * 1000 / 1_000_000)


def test_a_budget_counts_what_an_errored_case_spent(pytester: pytest.Pytester) -> None:
    """A judge that never gives a verdict still costs its two replies (2 x 14 tokens) besides
    the model's 6: a case that errors costs 34 tokens, so a 68-token budget stops after 2 (an
    errored case counting nothing, all 8 ran)."""
    pytester.makeconftest(JUDGE_CONFTEST.replace("json.dumps(verdict)", '"no verdict here"'))
    write_json(pytester, "qa.golden.json", _judged(8))
    result = pytester.runpytest(
        *ECHO, *JUDGE, "--llmeval-concurrency", "1", "--llmeval-max-tokens-total", "68",
        "--llmeval-run-dir", "run",
    )  # fmt: skip
    result.assert_outcomes(errors=2, skipped=6)
    rows = _rows(pytester.path / "run")
    assert [rows[f"c{i:03d}"]["outcome"] for i in range(8)] == ["error"] * 2 + ["skipped"] * 6
    assert rows["c000"]["usage"] == {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}
    assert rows["c000"]["details"] == {
        "judge": {
            "stage": "error",
            "usage": {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28},
        }
    }
    assert rows["c007"]["error"] == "budget reached: 68 tokens of --llmeval-max-tokens-total=68"


def test_the_ledger_sums_every_workers_spend_and_fails_to_a_share() -> None:
    """Two workers' ledgers add into the controller's; once the server is gone a worker's
    ledger says so (``None``), and its budget falls back to its own share of the limit."""
    ledger = SpendLedger()
    server = LimitServer(None, ledger=ledger).start()
    first, second = (RemoteLedger(server.address, server.token) for _ in range(2))
    try:
        assert first.add(3, 3, 0.5) == Totals(3, 3, 0.5)
        assert second.add(10, 0, 0.25) == Totals(13, 3, 0.75)
        assert first.add(0, 0, 0.0) == Totals(13, 3, 0.75)
        bad = RemoteLedger(server.address, "wrong-token")
        assert bad.add(1, 1, 0.0) is None and bad.broken
    finally:
        server.stop()
    assert second.add(1, 1, 0.0) is None and second.broken
    first.close()
    second.close()


def test_a_bad_turn_limit_in_a_gaia_manifest_is_that_manifests_error(
    pytester: pytest.Pytester,
) -> None:
    write_json(pytester, "good.golden.json", _good())
    row = {"task_id": "t1", "Question": "2+2?", "Level": 1, "Final answer": "4", "file_name": ""}
    (pytester.path / "g").mkdir()
    (pytester.path / "g" / "metadata.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    pytester.makefile(
        ".llmeval.yaml", gaia="suite: gaia\ndata: g/metadata.jsonl\nmax_turns: 100000\n"
    )
    result = pytester.runpytest(*ECHO, "--llmeval-run-dir", "run", "-rE")
    result.assert_outcomes(passed=2, errors=1)
    errors = [r for r in _rows(pytester.path / "run").values() if r["outcome"] == "error"]
    assert [r["error"] for r in errors] == [
        "g/metadata.jsonl: manifest option max_turns: expected a whole number from 1 to 500, "
        "got 100000"
    ]  # GAIA names its options this way (the option belongs to the split it reads)


# -- a token count that would lower what a budget counts --------------------------------------

USAGE_CONFTEST = """
from pytest_llmeval.core.models import Usage
from pytest_llmeval.runners.base import Completion


class Lying:
    name = "lying"

    def fingerprint(self):
        return {"type": "lying"}

    async def generate(self, request):
        text = request.messages[-1].content or ""
        if text == "w1":
            return Completion(text=text, usage=Usage(prompt_tokens=-1000, total_tokens=-999))
        return Completion(text=text, usage=Usage(prompt_tokens=3, completion_tokens=3))

    async def aclose(self):
        return None


def pytest_llmeval_register_runners(registry):
    registry.register("lying", lambda settings: Lying())
"""


@pytest.mark.parametrize(
    "bad", [-1000, 2.5, "7", True, None], ids=["negative", "fraction", "string", "bool", "object"]
)
def test_a_token_count_that_is_no_count_is_the_cases_protocol_error(
    pytester: pytest.Pytester, bad: object
) -> None:
    """A backend saying ``prompt_tokens: -1000`` lowered the session's count, so a budget
    never stopped; a fraction, a string, a bool, or a ``usage`` that is no object, is no count
    either. Each is that case's protocol error; the other cases are counted as before."""
    from pytest_llmeval.testing.openai_server import ChatAnswer

    def chat(body: dict[str, object]) -> ChatAnswer:
        text = str(body["messages"][-1]["content"])  # type: ignore[index]
        usage = {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}
        if text == "w1":
            usage = {"prompt_tokens": bad, "total_tokens": 5} if bad is not None else 7  # type: ignore[assignment,dict-item]
        return ChatAnswer(content=text, usage=usage)  # type: ignore[arg-type]

    write_json(pytester, "qa.golden.json", _good(4))
    with OpenAIServer(chat) as server:
        result = pytester.runpytest(
            "--llmeval-runner", "openai", "--llmeval-model", "test-model",
            "--llmeval-base-url", server.base_url, "--llmeval-concurrency", "1",
            "--llmeval-max-tokens-total", "100", "--llmeval-run-dir", "run",
            "--llmeval-gate", "golden.pass_rate>=0.5",
        )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    rows = _rows(pytester.path / "run")
    assert {k: r["outcome"] for k, r in rows.items()} == {
        "good-0": "passed", "good-1": "error", "good-2": "passed", "good-3": "passed",
    }  # fmt: skip
    field = "usage" if bad is None else "usage.prompt_tokens"
    assert f"field '{field}': expected " in str(rows["good-1"]["error"])
    assert str(rows["good-1"]["error"]).startswith("openai: POST ")
    result.stdout.fnmatch_lines([f"*protocol error: openai: POST *: field '{field}': expected *"])
    result.stdout.fnmatch_lines(["llmeval: 18 tokens (9 prompt, 9 completion)"])
    report = json.loads((pytester.path / "run" / "report.json").read_text())
    assert report["gates"]["results"][0]["status"] == "passed"


def test_a_runner_or_embedder_giving_a_negative_count_errs_its_case(
    pytester: pytest.Pytester,
) -> None:
    """A runner of the user's building ``Usage(prompt_tokens=-1000)``, or an embeddings
    endpoint saying so: that case's error, and the budget counts the others only."""
    pytester.makeconftest(USAGE_CONFTEST)
    write_json(pytester, "qa.golden.json", _good(2))

    def embeddings(request: Request) -> Reply:
        texts = request.json["input"]
        data = [{"index": i, "embedding": [1.0, float(len(t))]} for i, t in enumerate(texts)]
        usage = {"prompt_tokens": -50 if "w2" in texts else 2}
        return Reply(json={"object": "list", "data": data, "usage": usage})

    write_json(
        pytester, "s.golden.json",
        [{"id": "sim-2", "input": "w2", "expected_output": "w2",
          "min_scores": {"semantic_similarity": 0.5}}],
    )  # fmt: skip
    with OpenAIServer() as server:
        server.route("POST", "/v1/embeddings", embeddings)
        result = pytester.runpytest(
            "--llmeval-runner", "lying", "--llmeval-embedding-base-url", server.base_url,
            "--llmeval-embedding-model", "emb", "--llmeval-concurrency", "1",
            "--llmeval-max-tokens-total", "1000", "--llmeval-run-dir", "run",
        )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    rows = _rows(pytester.path / "run")
    assert {k: r["outcome"] for k, r in rows.items()} == {
        "good-0": "passed", "good-1": "error", "sim-2": "error",
    }  # fmt: skip
    assert "prompt_tokens" in str(rows["good-1"]["error"])
    assert "field 'usage.prompt_tokens': expected a whole number of tokens" in str(
        rows["sim-2"]["error"]
    )
    assert "llmeval: 12 tokens (6 prompt, 6 completion)" in result.stdout.str()
