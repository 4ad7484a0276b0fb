"""Progress lines of a run: done/total, in flight, tokens, cost, ETA; quiet
with -q, off with --llmeval-progress 0; a price table gives the cost in report.json."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_llmeval.config.pricing import Price, Spend, load_prices, price_of
from pytest_llmeval.core.errors import ConfigError
from pytest_llmeval.plugin.progress import duration, progress_line
from tests.conftest import write_json

ECHO = ("--llmeval-runner", "echo", "--llmeval-model", "echo-model")
EVERY_CASE = ("--llmeval-progress", "0.000001")
"""An interval every finished case is past: a line wherever one may be written."""
PRICES = "echo-model: {input: 1000, output: 2000}\n"
"""$0.003 per 3 prompt tokens and $0.006 per 3 completion tokens: $0.009 a case below."""


def cases(n: int) -> list[dict[str, str]]:
    """Golden cases the echo runner passes, each 3 prompt + 3 completion tokens."""
    return [
        {"id": f"c{i:03d}", "input": f"say word{i} again", "expected_output": f"say word{i} again"}
        for i in range(n)
    ]


def progress_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if re.match(r"llmeval: \d+/\d+ done", line)]


def test_verbose_run_shows_done_total_and_tokens(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", cases(3))
    result = pytester.runpytest(*ECHO, *EVERY_CASE, "-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "qa.golden.json::c000 PASSED* 33%]",
            "llmeval: 1/3 done, * in flight, 6 tokens, ETA *",
            "qa.golden.json::c001 PASSED* 66%]",
            "llmeval: 2/3 done, * in flight, 12 tokens, ETA *",
            "qa.golden.json::c002 PASSED*100%]",
        ]
    )
    # the end is in the summary, not a progress line
    assert [line.split(",")[0] for line in progress_lines(result.stdout.str())] == [
        "llmeval: 1/3 done",
        "llmeval: 2/3 done",
    ]
    result.stdout.fnmatch_lines(["llmeval: 18 tokens (9 prompt, 9 completion)"])


def test_prices_give_cost_so_far_and_in_report(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", cases(3))
    pytester.makefile(".yaml", prices=PRICES)
    result = pytester.runpytest(
        *ECHO, *EVERY_CASE, "-v", "--llmeval-prices", "prices.yaml", "--llmeval-run-dir", "run"
    )
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "llmeval: 1/3 done, * in flight, 6 tokens, $0.0090, ETA *",
            "llmeval: 2/3 done, * in flight, 12 tokens, $0.0180, ETA *",
            "all: 3/3 passed *, $0.0270",
            "llmeval: 18 tokens (9 prompt, 9 completion), $0.0270",
        ]
    )
    report = json.loads((pytester.path / "run" / "report.json").read_text())
    assert report["totals"]["cost_usd"] == pytest.approx(0.027)
    assert "cost_usd" not in report["suites"]["golden"]  # the run's total only
    manifest = json.loads((pytester.path / "run" / "manifest.json").read_text())
    assert manifest["settings"]["prices"] == {"echo-model": {"input": 1000.0, "output": 2000.0}}


def test_without_prices_report_has_no_cost(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", cases(1))
    pytester.runpytest(*ECHO, "--llmeval-run-dir", "run").assert_outcomes(passed=1)
    report = json.loads((pytester.path / "run" / "report.json").read_text())
    assert "cost_usd" not in report["totals"]


def test_quiet_and_off_print_no_progress(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", cases(3))
    quiet = pytester.runpytest(*ECHO, *EVERY_CASE, "-q")
    quiet.assert_outcomes(passed=3)
    assert progress_lines(quiet.stdout.str()) == []
    assert "tokens (" not in quiet.stdout.str()
    off = pytester.runpytest(*ECHO, "--llmeval-progress", "0", "-v")
    off.assert_outcomes(passed=3)
    assert progress_lines(off.stdout.str()) == []


def test_dots_rows_stay_whole(pytester: pytest.Pytester) -> None:
    """Without -v a line comes only where pytest ended a row of dots with its [ NN%]."""
    write_json(pytester, "qa.golden.json", cases(150))
    result = pytester.runpytest(*ECHO, *EVERY_CASE)
    result.assert_outcomes(passed=150)
    lines = result.stdout.str().splitlines()
    shown = [i for i, line in enumerate(lines) if re.match(r"llmeval: \d+/150 done", line)]
    assert shown, result.stdout.str()
    for i in shown:
        assert re.search(r"\[ *\d+%\]$", lines[i - 1]), lines[i - 1]
        assert re.fullmatch(r"\.+( +\[ *\d+%\])?", lines[i + 1]), lines[i + 1]


def test_progress_under_xdist_counts_every_worker(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    write_json(pytester, "qa.golden.json", cases(4))
    result = pytester.runpytest(*ECHO, *EVERY_CASE, "-v", "-n", "2")
    result.assert_outcomes(passed=4)
    # how many lines depends on how the two workers' events interleave (two teardowns may
    # come before either item's logfinish); each line counts both workers, never backwards
    done = [int(line.split()[1].split("/")[0]) for line in progress_lines(result.stdout.str())]
    assert 1 <= len(done) <= 3 and done == sorted(done) and all(1 <= d < 4 for d in done)
    result.stdout.fnmatch_lines(["llmeval: 24 tokens (12 prompt, 12 completion)"])


def test_bad_price_files_are_usage_errors(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", cases(1))
    pytester.makefile(".yaml", prices="echo-model: {input: 1, outptu: 2}\n")
    result = pytester.runpytest(*ECHO, "--llmeval-prices", "prices.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--llmeval-prices *prices.yaml: echo-model.output: Field required*"]
    )
    result = pytester.runpytest(*ECHO, "--llmeval-max-cost", "1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--llmeval-max-cost needs --llmeval-prices FILE*"])


# -- pure parts ------------------------------------------------------------------------------


def test_load_prices_from_json_and_yaml(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text('{"m": {"input": 0.15, "output": 0.6}, "*": {"input": 1, "output": 3}}')
    table = load_prices(path)
    assert table == {"*": Price(input=1, output=3), "m": Price(input=0.15, output=0.6)}
    assert price_of(table, "m") == Price(input=0.15, output=0.6)
    assert price_of(table, "other") == Price(input=1, output=3)
    assert price_of({"m": table["m"]}, "other") is None
    yaml = tmp_path / "p.yaml"
    yaml.write_text("m: {input: 0.15, output: 0.6}\n")
    assert load_prices(yaml) == {"m": Price(input=0.15, output=0.6)}
    yaml.write_text("m: {input: -1, output: 0.6}\n")
    with pytest.raises(ConfigError, match=r"p.yaml: m.input: .*0 or more"):
        load_prices(yaml)


def test_spend_counts_tokens_cost_and_unpriced_models() -> None:
    spend = Spend({"m": Price(input=1, output=2)}, default_model="fallback")
    spend.add({"prompt_tokens": 1_000_000, "completion_tokens": 500_000}, {"model": "m"})
    spend.add({"prompt_tokens": 10, "completion_tokens": 10}, {"type": "echo"})
    assert (spend.tokens, spend.cost_usd, spend.unpriced) == (1_500_020, 2.0, {"fallback"})


def test_progress_line_and_duration() -> None:
    spend = Spend(None)
    spend.add({"prompt_tokens": 1200, "completion_tokens": 34}, None)
    assert progress_line(10, 40, 8, spend, elapsed=20.0) == (
        "llmeval: 10/40 done, 8 in flight, 1,234 tokens, ETA 1m00s"
    )
    assert progress_line(40, 40, 0, Spend({}), elapsed=5) == (
        "llmeval: 40/40 done, 0 in flight, 0 tokens, $0.0000"
    )
    assert [duration(s) for s in (4.4, 192, 7500)] == ["4s", "3m12s", "2h05m"]
