"""Fail closed, budgets and the model replayed: a limit is never silently off.

* A resume counts what the run's earlier attempts spent (their journal): with the same
  budget it stops at once (exit 4, one line naming the option to raise); a larger one runs
  the rest within what is left; also under ``-n 2`` and for ``--llmeval-max-cost``.
* A budget that cannot be measured is an error: a cost budget whose prices file does not
  price the model known at the start (the runner's, the judge's) is a usage error (exit 4);
  a model first named by a case's agent is that case's error; a ``usage`` with only
  ``total_tokens`` is counted, and no usage at all under a token budget errs the first case.
* A replayed model is the model asked for: ``--llmeval-model`` that no recording has is a
  usage error naming the recorded models and how to record it; the header names the model
  being replayed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import read_jsonl, write_json
from tests.fail_closed.test_bounds import JUDGE_CONFTEST

ECHO = ("--llmeval-runner", "echo", "--llmeval-model", "echo-model")
BUDGET_EXIT = pytest.ExitCode.INTERRUPTED


def _say(n: int) -> list[dict[str, str]]:
    """Golden cases the echo runner passes, each 3 prompt + 3 completion tokens."""
    return [
        {"id": f"c{i:03d}", "input": f"say word{i} again", "expected_output": f"say word{i} again"}
        for i in range(n)
    ]


def _rows(run_dir: Path) -> dict[str, dict[str, Any]]:
    return {str(r["case_id"]): r for r in read_jsonl(run_dir / "results.jsonl")}


def _outcomes(run_dir: Path) -> list[str]:
    rows = _rows(run_dir)
    return [rows[k]["outcome"] for k in sorted(rows)]


# -- a resume counts what the run already spent ---------------------------------------------


def _resume(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        *ECHO, "--llmeval-concurrency", "1", "--llmeval-resume", "run", *args
    )  # fmt: skip


def test_a_resume_with_the_same_token_budget_stops_at_once(pytester: pytest.Pytester) -> None:
    """20 cases of 6 tokens under a 60-token budget: 10 run. A resume with the same budget
    runs nothing (exit 4, one line); 90 tokens run 5 more (90 - 60); 200 finish the run."""
    write_json(pytester, "qa.golden.json", _say(20))
    first = pytester.runpytest(
        *ECHO, "--llmeval-concurrency", "1", "--llmeval-max-tokens-total", "60",
        "--llmeval-run-dir", "run",
    )  # fmt: skip
    assert first.ret == BUDGET_EXIT
    assert _outcomes(pytester.path / "run").count("passed") == 10

    again = _resume(pytester, "--llmeval-max-tokens-total", "60")
    assert again.ret == pytest.ExitCode.USAGE_ERROR
    again.stderr.fnmatch_lines(
        [
            "ERROR: --llmeval-max-tokens-total: spent 60 tokens of 60 in earlier attempts of "
            "this run; raise --llmeval-max-tokens-total to run the rest"
        ]
    )
    assert _outcomes(pytester.path / "run").count("passed") == 10  # nothing ran or was written

    more = _resume(pytester, "--llmeval-max-tokens-total", "90")
    assert more.ret == BUDGET_EXIT
    rows = _rows(pytester.path / "run")
    assert [r["outcome"] for r in rows.values()].count("passed") == 15
    assert rows["c019"]["error"] == (
        "budget reached: 90 tokens (60 in earlier attempts) of --llmeval-max-tokens-total=90"
    )

    rest = _resume(pytester, "--llmeval-max-tokens-total", "200")
    assert rest.ret == pytest.ExitCode.OK
    assert _outcomes(pytester.path / "run") == ["passed"] * 20


def test_a_resume_counts_every_earlier_attempt_under_a_cost_budget(
    pytester: pytest.Pytester,
) -> None:
    """A case costs $0.006; a $0.03 budget runs 5. A resume with $0.03 stops at once; the
    spend of both earlier attempts counts, so $0.06 runs exactly 5 more."""
    write_json(pytester, "qa.golden.json", _say(12))
    pytester.makefile(".yaml", prices="echo-model: {input: 1000, output: 1000}\n")
    cost = ("--llmeval-prices", "prices.yaml")
    first = pytester.runpytest(
        *ECHO, *cost, "--llmeval-concurrency", "1", "--llmeval-max-cost", "0.03",
        "--llmeval-run-dir", "run",
    )  # fmt: skip
    assert first.ret == BUDGET_EXIT
    assert _outcomes(pytester.path / "run").count("passed") == 5
    again = _resume(pytester, *cost, "--llmeval-max-cost", "0.03")
    assert again.ret == pytest.ExitCode.USAGE_ERROR
    again.stderr.fnmatch_lines(
        [
            "ERROR: --llmeval-max-cost: spent $0.0300 of 0.03 in earlier attempts of this "
            "run; raise --llmeval-max-cost to run the rest"
        ]
    )
    more = _resume(pytester, *cost, "--llmeval-max-cost", "0.06")
    assert more.ret == BUDGET_EXIT
    assert _outcomes(pytester.path / "run").count("passed") == 10


def test_under_xdist_a_resume_counts_what_the_run_already_spent(
    pytester: pytest.Pytester,
) -> None:
    """``-n 2``: a resume with the same budget stops at once (exit 4), and a larger one runs
    within what is left, plus at most one case a worker had in hand."""
    pytest.importorskip("xdist")
    write_json(pytester, "qa.golden.json", _say(20))
    xdist = ("-n", "2", "--llmeval-concurrency", "1")
    first = pytester.runpytest(
        *ECHO, *xdist, "--llmeval-max-tokens-total", "36", "--llmeval-run-dir", "run"
    )
    assert first.ret == BUDGET_EXIT
    spent = 6 * _outcomes(pytester.path / "run").count("passed")
    assert 36 <= spent <= 42
    again = pytester.runpytest(
        *ECHO, *xdist, "--llmeval-max-tokens-total", str(spent), "--llmeval-resume", "run"
    )
    assert again.ret == pytest.ExitCode.USAGE_ERROR
    again.stderr.fnmatch_lines([f"ERROR: --llmeval-max-tokens-total: spent {spent} tokens of *"])
    more = pytester.runpytest(
        *ECHO, *xdist, "--llmeval-max-tokens-total", str(spent + 24), "--llmeval-resume", "run"
    )
    assert more.ret == BUDGET_EXIT
    ran = _outcomes(pytester.path / "run").count("passed") - spent // 6
    assert 4 <= ran <= 5, ran


# -- a budget that cannot be measured is an error ---------------------------------------------

UNSPLIT_CONFTEST = """
from pytest_llmeval.core.models import Usage
from pytest_llmeval.runners.base import Completion


class Counted:
    name = "counted"

    def fingerprint(self):
        return {"type": "counted", "model": "counted-model"}

    async def generate(self, request):
        text = request.messages[-1].content or ""
        return Completion(text=text, usage=Usage(total_tokens=6))

    async def aclose(self):
        return None


class Silent(Counted):
    name = "silent"

    async def generate(self, request):
        return Completion(text=request.messages[-1].content or "")


def pytest_llmeval_register_runners(registry):
    registry.register("counted", lambda settings: Counted())
    registry.register("silent", lambda settings: Silent())
"""


def test_a_usage_with_only_a_total_is_counted_by_a_token_budget(
    pytester: pytest.Pytester,
) -> None:
    """A runner that gives ``total_tokens`` only (6 a call): a 20-token budget runs 4 of 50
    cases (counting nothing, all 50 ran), and the terminal counts those tokens."""
    pytester.makeconftest(UNSPLIT_CONFTEST)
    write_json(pytester, "qa.golden.json", _say(50))
    result = pytester.runpytest(
        "--llmeval-runner", "counted", "--llmeval-concurrency", "1",
        "--llmeval-max-tokens-total", "20", "--llmeval-run-dir", "run",
    )  # fmt: skip
    assert result.ret == BUDGET_EXIT
    result.assert_outcomes(passed=4, skipped=46)
    result.stdout.fnmatch_lines(["llmeval: 24 tokens (0 prompt, 0 completion, 24 not split)"])


def test_a_usage_with_only_a_total_is_priced_at_the_higher_price(
    pytester: pytest.Pytester,
) -> None:
    """6 unsplit tokens a case at {input: 1000, output: 3000} cost $0.018 (the higher price):
    a $0.05 budget runs 3 cases (priced at $0, all ran)."""
    pytester.makeconftest(UNSPLIT_CONFTEST)
    write_json(pytester, "qa.golden.json", _say(10))
    pytester.makefile(".yaml", prices="counted-model: {input: 1000, output: 3000}\n")
    result = pytester.runpytest(
        "--llmeval-runner", "counted", "--llmeval-concurrency", "1", "--llmeval-prices",
        "prices.yaml", "--llmeval-max-cost", "0.05", "--llmeval-run-dir", "run",
    )  # fmt: skip
    assert result.ret == BUDGET_EXIT
    result.assert_outcomes(passed=3, skipped=7)


def test_a_runner_without_usage_under_a_token_budget_errs_its_first_case(
    pytester: pytest.Pytester,
) -> None:
    """No token count at all: the first case is an error naming the option and why, and the
    cases after it are not run (they would spend what the budget cannot count)."""
    pytester.makeconftest(UNSPLIT_CONFTEST)
    write_json(pytester, "qa.golden.json", _say(6))
    result = pytester.runpytest(
        "--llmeval-runner", "silent", "--llmeval-concurrency", "1",
        "--llmeval-max-tokens-total", "20", "--llmeval-run-dir", "run",
    )  # fmt: skip
    assert result.ret not in (pytest.ExitCode.OK, pytest.ExitCode.USAGE_ERROR)
    result.assert_outcomes(errors=1, skipped=5)
    rows = _rows(pytester.path / "run")
    assert rows["c000"]["outcome"] == "error"
    assert rows["c000"]["error"].startswith(
        "--llmeval-max-tokens-total cannot be kept: the runner reported no token usage for "
        "this case's model calls, so the budget cannot be measured"
    )
    assert all(rows[f"c{i:03d}"]["outcome"] == "skipped" for i in range(1, 6))


def test_a_cost_budget_that_cannot_price_the_model_is_a_usage_error(
    pytester: pytest.Pytester,
) -> None:
    """The prices file does not price ``--llmeval-model``: exit 4 at the start, naming the
    option and the model (before: every case ran at $0.0000, exit 0)."""
    write_json(pytester, "qa.golden.json", _say(3))
    pytester.makefile(".yaml", prices="other-model: {input: 1, output: 1}\n")
    result = pytester.runpytest(
        *ECHO, "--llmeval-prices", "prices.yaml", "--llmeval-max-cost", "0.01",
        "--llmeval-run-dir", "run",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --llmeval-max-cost cannot be measured: the --llmeval-prices file has no "
            "price for the runner's model 'echo-model' (nor a '*' entry); add one to the file"
        ]
    )
    assert not (pytester.path / "run" / "results.jsonl").exists()


def test_a_cost_budget_that_cannot_price_the_runners_model_is_a_usage_error(
    pytester: pytest.Pytester,
) -> None:
    """No ``--llmeval-model``: the model is the one the runner's fingerprint names."""
    pytester.makeconftest(UNSPLIT_CONFTEST)
    write_json(pytester, "qa.golden.json", _say(3))
    pytester.makefile(".yaml", prices="other-model: {input: 1, output: 1}\n")
    result = pytester.runpytest(
        "--llmeval-runner", "counted", "--llmeval-prices", "prices.yaml",
        "--llmeval-max-cost", "0.01", "--llmeval-run-dir", "run",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *no price for the runner's model 'counted-model'*"])


def test_a_cost_budget_that_cannot_price_the_judge_is_a_usage_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(JUDGE_CONFTEST)
    write_json(pytester, "qa.golden.json", [{**c, "rubric": {"correct": 1.0}} for c in _say(2)])
    pytester.makefile(".yaml", prices="echo-model: {input: 1, output: 1}\n")
    result = pytester.runpytest(
        *ECHO, "--llmeval-judge-runner", "judgy", "--llmeval-judge-model", "judge-model",
        "--llmeval-prices", "prices.yaml", "--llmeval-max-cost", "0.01",
        "--llmeval-run-dir", "run",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *no price for the judge's model 'judge-model'*"])


OWN_RUNNER_CONFTEST = """
import pytest

from pytest_llmeval.core.models import Usage
from pytest_llmeval.runners.base import Completion


class Mystery:
    name = "mystery"

    def fingerprint(self):
        return {"type": "mystery", "model": "mystery-model"}

    async def generate(self, request):
        text = request.messages[-1].content or ""
        return Completion(text=text, usage=Usage(prompt_tokens=3, completion_tokens=3))

    async def aclose(self):
        return None


@pytest.fixture(scope="session")
def llmeval_runner():
    return Mystery()
"""


def test_a_model_first_named_by_a_case_that_cannot_be_priced_errs_that_case(
    pytester: pytest.Pytester,
) -> None:
    """A conftest's runner names its model only when the first case runs: that case is an
    error (its cost is not $0), and no case after it runs."""
    pytester.makeconftest(OWN_RUNNER_CONFTEST)
    write_json(pytester, "qa.golden.json", _say(4))
    pytester.makefile(".yaml", prices="other-model: {input: 1, output: 1}\n")
    result = pytester.runpytest(
        "--llmeval-prices", "prices.yaml", "--llmeval-max-cost", "0.01",
        "--llmeval-concurrency", "1", "--llmeval-run-dir", "run",
    )  # fmt: skip
    assert result.ret not in (pytest.ExitCode.OK, pytest.ExitCode.USAGE_ERROR)
    result.assert_outcomes(errors=1, skipped=3)
    rows = _rows(pytester.path / "run")
    assert "no price for the runner's model 'mystery-model'" in rows["c000"]["error"]


# -- a replayed model is the model asked for ---------------------------------------------------


def _recorded(pytester: pytest.Pytester) -> None:
    """Cassettes of ``counted-model`` (a runner whose fingerprint names it), for 3 cases."""
    both = UNSPLIT_CONFTEST.replace("def pytest_llmeval_register_runners", "def _unsplit")
    both += JUDGE_CONFTEST.replace("import json\n", "import json\n_unsplit = None\n")
    both = both.replace(
        'registry.register("judgy", lambda settings: Judge())',
        'registry.register("judgy", lambda settings: Judge())\n    _register_unsplit(registry)',
    )
    pytester.makeconftest(both.replace("def _unsplit", "def _register_unsplit"))
    write_json(pytester, "qa.golden.json", _say(3))
    live = pytester.runpytest(
        "--llmeval-runner", "counted", "--llmeval-record", "new",
        "--llmeval-cassettes", "cassettes", "--llmeval-run-dir", "live",
    )  # fmt: skip
    assert live.ret == pytest.ExitCode.OK


def test_replaying_a_model_no_recording_has_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """``--llmeval-model gpt-4o`` with the default replay runner and only counted-model's
    recordings: exit 4 before any case, naming what is recorded and how to record gpt-4o
    (before: counted-model's answers were judged as gpt-4o's, exit 0)."""
    _recorded(pytester)
    result = pytester.runpytest(
        "--llmeval-model", "gpt-4o", "--llmeval-cassettes", "cassettes",
        "--llmeval-run-dir", "run",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    folder = next((pytester.path / "cassettes").iterdir()).name
    result.stderr.fnmatch_lines(
        [
            "ERROR: --llmeval-runner: replay: --llmeval-model gpt-4o: no recording of it under "
            f"*cassettes (recorded: counted-model ({folder})); record it with `pytest "
            "--llmeval-runner counted --llmeval-model gpt-4o --llmeval-record new`, or drop "
            "--llmeval-model to replay what is recorded"
        ]
    )
    assert not (pytester.path / "run" / "results.jsonl").exists()
    chosen = pytester.runpytest(
        "--llmeval-model", "gpt-4o", "--llmeval-replay-from", folder,
        "--llmeval-cassettes", "cassettes", "--llmeval-run-dir", "run",
    )  # fmt: skip
    assert chosen.ret == pytest.ExitCode.USAGE_ERROR  # chosen by name, still another model
    chosen.stderr.fnmatch_lines(["ERROR: *is a recording of model counted-model*"])


def test_the_header_names_the_model_being_replayed(pytester: pytest.Pytester) -> None:
    _recorded(pytester)
    folder = next((pytester.path / "cassettes").iterdir())
    for args in ((), ("--llmeval-model", "counted-model")):
        result = pytester.runpytest(
            *args, "--llmeval-cassettes", "cassettes", "--llmeval-run-dir", f"run{len(args)}"
        )
        assert result.ret == pytest.ExitCode.OK
        result.stdout.fnmatch_lines(
            [f"llmeval: replaying model counted-model (*cassettes/{folder.name})"]
        )


def test_a_replayed_judge_is_chosen_by_its_model_and_named(pytester: pytest.Pytester) -> None:
    """``--llmeval-judge-model`` picks the judge's recording by the model it names; one no
    recording names is a usage error; the header names the judge's model."""
    _recorded(pytester)
    write_json(pytester, "qa.golden.json", [{**c, "rubric": {"correct": 1.0}} for c in _say(2)])
    live = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-judge-runner", "judgy", "--llmeval-judge-model",
        "judge-model", "--llmeval-record", "new", "--llmeval-cassettes", "cassettes",
        "--llmeval-run-dir", "judged",
    )  # fmt: skip
    assert live.ret == pytest.ExitCode.OK
    judge = ("--llmeval-runner", "echo", "--llmeval-judge-runner", "replay")
    replayed = pytester.runpytest(
        *judge, "--llmeval-judge-model", "judge-model", "--llmeval-cassettes", "cassettes",
        "--llmeval-run-dir", "replayed",
    )  # fmt: skip
    assert replayed.ret == pytest.ExitCode.OK
    replayed.stdout.fnmatch_lines(
        ["llmeval: judge: replaying model judge-model (*cassettes/judgy-*)"]
    )
    other = pytester.runpytest(
        *judge, "--llmeval-judge-model", "gpt-4o", "--llmeval-cassettes", "cassettes",
        "--llmeval-run-dir", "other",
    )  # fmt: skip
    assert other.ret == pytest.ExitCode.USAGE_ERROR
