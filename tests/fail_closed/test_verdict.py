"""Fail closed, the verdict: green only when cases were really judged.

Each entry drives a real session through pytester (or, on the shipped examples, from the project
root) and asserts the exit status, which cases are in ``results.jsonl``, every gate's status in
``report.json`` and what the terminal says:

* a configuration error is one usage error (exit 4) before any case runs, also under ``-n 2``;
* an errored case is never an expected failure, and a run in which every case errored is red
  in every ``--llmeval-exit-on`` mode;
* a gate with nothing to judge fails unless declared optional; a deselected suite's gate is
  ``partial``; every status reads as itself in the terminal, junit, summary.md, report.json and
  report.html;
* a rubric without a threshold gets one warning per session, naming the cases.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.plugin.gate_reports import gate_test_reports
from pytest_llmeval.report import console
from pytest_llmeval.report.gates import gates_section, make_gate, parse_gate, parse_gate_spec
from pytest_llmeval.report.html.gate_rows import gates as html_gates
from pytest_llmeval.report.verdict import Verdict
from pytest_llmeval.rundir.models import GateResult, GateStatus, Report
from tests.conftest import answering_runner, down_runner, read_jsonl, write_json, write_jsonl
from tests.engine.test_judge import JUDGE_CONFTEST, RUBRIC
from tests.suites.test_integration import FIXTURES, ITEMS, MODEL_CONFTEST, SCRIPTS, TOOLS

ROOT = Path(__file__).resolve().parents[2]

CASES = [
    {"id": "a", "input": "same", "expected_output": "same"},
    {"id": "b", "input": "again", "expected_output": "again"},
]
MISSING = [
    {"id": "hit", "input": "same", "expected_output": "same"},
    {"id": "miss", "input": "this", "expected_output": "that"},
]

DOWN = down_runner("connection")
"""A runner whose backend refuses every call (a dead backend, a wrong base URL)."""

OWN_AGENT = """
import pytest


class Agent:
    def run(self, case, broker):
        return case.messages[-1].content


@pytest.fixture(scope="session")
def llmeval_agent():
    return Agent()
"""
"""A conftest that evaluates its own agent: the runner options do not apply."""


def _report(run: Path) -> dict[str, Any]:
    return json.loads((run / "report.json").read_text(encoding="utf-8"))


def _gate_statuses(run: Path) -> dict[str, str]:
    section = _report(run).get("gates") or {"results": []}
    return {r["gate"]["name"]: r["status"] for r in section["results"]}


def _outcomes(run: Path) -> dict[str, str]:
    return {r["case_id"]: r["outcome"] for r in read_jsonl(run / "results.jsonl")}


# -- A.1: configuration errors are one usage error before any case runs ----------------------


@dataclass(frozen=True)
class Misconfigured:
    """A project whose configuration cannot work: it must stop at once with ``line``."""

    name: str
    args: tuple[str, ...]
    line: str
    """The one ``ERROR:`` line (fnmatch pattern) on stderr."""
    conftest: str = ""
    ini: str = ""
    env: tuple[tuple[str, str], ...] = ()
    files: tuple[tuple[str, str], ...] = ()


MISCONFIGURED = [
    Misconfigured(
        "unknown-runner",
        ("--llmeval-runner", "ecko", "--llmeval-exit-on", "gates"),
        "ERROR: --llmeval-runner: unknown runner 'ecko'; did you mean echo? known runners: *",
    ),
    Misconfigured(
        "unbuildable-runner",
        ("--llmeval-runner", "hf"),
        "ERROR: --llmeval-runner hf needs --llmeval-model PATH *",
    ),
    Misconfigured(
        "replay-without-cassettes",
        (),
        "ERROR: --llmeval-runner: replay: no cassette folder at *fixtures/cassettes; point "
        "--llmeval-cassettes (ini llmeval_cassettes, relative to the rootdir) at the recordings, "
        "or record them with: pytest --llmeval-runner NAME --llmeval-record new",
    ),
    Misconfigured(
        "unknown-judge-runner",
        ("--llmeval-runner", "echo", "--llmeval-judge-runner", "nope"),
        "ERROR: --llmeval-judge-runner: unknown runner 'nope'; known runners: *",
    ),
    Misconfigured(
        "embedder-without-model-folder",
        ("--llmeval-runner", "echo", "--llmeval-embedding-model", "no/such/model"),
        "ERROR: --llmeval-embedding-model no/such/model: no model folder at *no/such/model*",
    ),
    Misconfigured(
        "gate-syntax-cli",
        ("--llmeval-runner", "echo", "--llmeval-gate", "golden.pass_rate>>0.9"),
        "ERROR: --llmeval-gate: bad gate 'golden.pass_rate>>0.9': *",
    ),
    Misconfigured(
        "gate-syntax-ini",
        ("--llmeval-runner", "echo"),
        "ERROR: --llmeval-gate: bad gate 'golden.pass_rate~0.9': *",
        ini="[pytest]\nllmeval_gate = golden.pass_rate~0.9\n",
    ),
    Misconfigured(
        "gate-syntax-env",
        ("--llmeval-runner", "echo"),
        "ERROR: --llmeval-gate: bad gate 'golden.pass_rate=>0.9': *",
        env=(("PYTEST_LLMEVAL_GATE", "golden.pass_rate=>0.9"),),
    ),
    Misconfigured(
        "gate-unknown-metric",
        ("--llmeval-runner", "echo", "--llmeval-gate", "golden.pass_rte>=0.9"),
        "ERROR: --llmeval-gate 'golden.pass_rte>=0.9': suite 'golden' has no metric "
        "'pass_rte'; did you mean pass_rate*",
    ),
    Misconfigured(
        "gate-unknown-suite",
        ("--llmeval-runner", "echo", "--llmeval-gate", "goldn.pass_rate>=0.9"),
        "ERROR: --llmeval-gate 'goldn.pass_rate>=0.9': no collected suite is named 'goldn'; "
        "did you mean golden? (collected: golden; * for the totals)",
    ),
    Misconfigured(
        "gate-unknown-nested-metric",
        ("--llmeval-runner", "echo", "--llmeval-gate", "golden.categories.x.pass_rat>=0.5"),
        "*suite 'golden' has no metric 'categories.x.pass_rat'; did you mean "
        "categories.<name>.pass_rate*",
    ),
    Misconfigured(
        "manifest-gate-unknown-metric",
        ("--llmeval-runner", "echo"),
        "ERROR: m.llmeval.yaml:3: gates[[]0]: golden.pas_rate>=0.5: suite 'golden' has no metric "
        "'pas_rate'; did you mean pass_rate*",
        files=(("m.llmeval.yaml", "suite: golden\ndata: data.json\ngates: [pas_rate >= 0.5]\n"),),
    ),
]


@pytest.mark.parametrize("bad", MISCONFIGURED, ids=lambda bad: bad.name)
def test_a_configuration_error_is_one_usage_error_before_any_case(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, bad: Misconfigured
) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    write_json(pytester, "data.json", CASES[:1])
    for name, text in bad.files:
        (pytester.path / name).write_text(text, encoding="utf-8")
    if bad.ini:
        pytester.makeini(bad.ini)
    if bad.conftest:
        pytester.makeconftest(bad.conftest)
    for key, value in bad.env:
        monkeypatch.setenv(key, value)
    result = pytester.runpytest(*bad.args, "--llmeval-run-dir", "run", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1, result.stderr.str()
    result.stderr.fnmatch_lines([bad.line])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert not (pytester.path / "run").exists()  # no case ran, nothing was written


def test_a_resume_refused_for_its_configuration_leaves_the_run_dir_as_it_was(
    pytester: pytest.Pytester,
) -> None:
    """``--llmeval-resume`` of a finished run with a runner that cannot be built (the default
    ``replay``, no recordings): one usage error before any case, exit 4, and the run dir as it
    was; before, its record was written again as failed, with exit status 1."""
    write_json(pytester, "qa.golden.json", CASES[:4])
    first = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    assert first.ret == pytest.ExitCode.OK
    run = pytester.path / "run"
    before = {path: path.read_bytes() for path in sorted(run.rglob("*")) if path.is_file()}
    again = pytester.runpytest("--llmeval-resume", "run", "-p", "no:cacheprovider")
    assert again.ret == pytest.ExitCode.USAGE_ERROR
    again.stderr.fnmatch_lines(["ERROR: --llmeval-runner: replay: no cassette folder at *"])
    after = {path: path.read_bytes() for path in sorted(run.rglob("*")) if path.is_file()}
    assert after == before


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("--llmeval-runner", "ecko"), "ERROR: --llmeval-runner: unknown runner 'ecko'*"),
        (("--llmeval-runner", "echo", "--llmeval-judge-runner", "nope"), "*unknown runner 'nope'*"),
        (("--llmeval-runner", "echo", "--llmeval-gate", "golden.pass_rte>=0.9"), "*'pass_rte'*"),
    ],
    ids=["runner", "judge", "gate"],
)
def test_under_xdist_it_is_still_one_usage_error(
    pytester: pytest.Pytester, args: tuple[str, ...], line: str
) -> None:
    """The controller collects nothing; a worker hands its error over and the run stops with
    one line and exit 4, not one error per worker or per case, nor a crashed worker."""
    pytest.importorskip("xdist")
    write_json(pytester, "qa.golden.json", CASES)
    result = pytester.runpytest(
        "-n", "2", *args, "--llmeval-run-dir", "run", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1, result.stderr.str()
    result.stderr.fnmatch_lines([line])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert "crashed" not in result.stdout.str()
    assert not (pytester.path / "run").exists()


SORTED = [
    {"id": "w1", "input": "sun", "expected_output": "sun", "category": "weather"},
    {"id": "w2", "input": "rain", "expected_output": "rain", "category": "weather"},
    {"id": "m1", "input": "two", "expected_output": "two", "category": "math"},
]


@pytest.mark.parametrize(
    ("gate", "line"),
    [
        (
            "golden.categories.smoke.pass_rate>=0.9 optional",
            "ERROR: --llmeval-gate 'golden.categories.smoke.pass_rate>=0.9 optional': no "
            "collected case of suite 'golden' has the category 'smoke' (categories: math, "
            "weather)",
        ),
        (
            "golden.categories.wether.pass_rate>=0.9",
            "*has the category 'wether'; did you mean weather? (categories: math, weather)",
        ),
        (
            "golden.mean_scores.exact_matc>=0.9",
            "ERROR: --llmeval-gate 'golden.mean_scores.exact_matc>=0.9': no scorer of suite "
            "'golden' has the score 'exact_matc'; did you mean exact_match? (scores: *",
        ),
        (
            "golden.mean_scores.judgement>=0.9 optional",
            "*no scorer of suite 'golden' has the score 'judgement'*rubric.<name>)",
        ),
    ],
    ids=["optional-category", "category-typo", "score-typo", "optional-score"],
)
def test_an_optional_gate_never_hides_a_typo(
    pytester: pytest.Pytester, gate: str, line: str
) -> None:
    """``optional`` says "n/a is expected", not "any name goes": a category no collected case
    has, or a score name no scorer gives, is one usage error before any case runs."""
    write_json(pytester, "qa.golden.json", SORTED)
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-gate", gate, "--llmeval-run-dir", "run"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([line])
    assert not (pytester.path / "run").exists()


def test_gates_on_real_categories_and_scores_still_run(pytester: pytest.Pytester) -> None:
    """The names the data and the scorers do have are accepted: a category that is wholly
    deselected is ``partial``, a judged score with nothing to judge is an optional ``n/a``."""
    write_json(pytester, "qa.golden.json", SORTED)
    gates = [
        "golden.categories.weather.pass_rate>=1",
        "golden.categories.math.pass_rate>=1",
        "golden.mean_scores.exact_match>=1",
        "golden.mean_scores.rubric.correctness>=0.5 optional",
    ]
    args = [arg for gate in gates for arg in ("--llmeval-gate", gate)]
    result = pytester.runpytest(
        "--llmeval-runner", "echo", *args, "-k", "not m1", "--llmeval-run-dir", "run"
    )
    assert result.ret == pytest.ExitCode.OK
    assert _gate_statuses(pytester.path / "run") == {
        "golden.categories.weather.pass_rate>=1": "partial",
        "golden.categories.math.pass_rate>=1": "partial",
        "golden.mean_scores.exact_match>=1": "partial",
        "golden.mean_scores.rubric.correctness>=0.5": "partial",
    }


OWN_RUNNER = """
import pytest
from pytest_llmeval.runners.echo import EchoRunner


@pytest.fixture(scope="session")
def llmeval_runner():
    return EchoRunner()
"""
"""A conftest that overrides the ``llmeval_runner`` fixture itself."""


@pytest.mark.parametrize("conftest", [OWN_AGENT, OWN_RUNNER], ids=["agent", "runner"])
def test_an_own_agent_makes_the_runner_option_irrelevant(
    pytester: pytest.Pytester, conftest: str
) -> None:
    """A conftest's ``llmeval_agent`` that does not ask for ``llmeval_runner``, or its own
    ``llmeval_runner``: an unknown runner name (or no cassettes) is no error, the cases run."""
    write_json(pytester, "qa.golden.json", CASES)
    pytester.makeconftest(conftest)
    result = pytester.runpytest("--llmeval-runner", "ecko", "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=2)
    assert _outcomes(pytester.path / "run") == {"a": "passed", "b": "passed"}


def test_a_conftest_runner_is_known_at_the_start(pytester: pytest.Pytester) -> None:
    """Runners registered by a conftest hook are in the registry the start-up check builds."""
    write_json(pytester, "qa.golden.json", CASES)
    pytester.makeconftest(answering_runner("mine", "False", "''"))
    result = pytester.runpytest("--llmeval-runner", "mine", "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.OK
    assert _outcomes(pytester.path / "run") == {"a": "passed", "b": "passed"}


def test_the_issues_example_is_now_a_usage_error(tmp_path: Path) -> None:
    """``pytest evals/tool_integration.integration.jsonl --llmeval-runner ecko
    --llmeval-exit-on gates`` printed ``7 passed, 66 xfailed`` and exited 0."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "evals/tool_integration.integration.jsonl",
         "--llmeval-runner", "ecko", "--llmeval-exit-on", "gates", "-p", "no:cacheprovider",
         "--llmeval-run-dir", str(tmp_path / "run")],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 4, done.stdout[-2000:] + done.stderr[-2000:]
    assert "unknown runner 'ecko'; did you mean echo?" in done.stderr
    assert "xfailed" not in done.stdout and "passed" not in done.stdout
    assert not (tmp_path / "run").exists()


# -- A.2: only a scored miss can be an expected failure ---------------------------------------


@pytest.mark.parametrize("exit_on", ["gates", "all"])
def test_a_run_where_every_case_errored_is_red(pytester: pytest.Pytester, exit_on: str) -> None:
    """A dead backend: every case errors. Never xfailed, never green, in either mode."""
    write_json(pytester, "qa.golden.json", CASES)
    pytester.makeconftest(DOWN)
    result = pytester.runpytest(
        "--llmeval-runner", "down", "--llmeval-exit-on", exit_on, "--llmeval-run-dir", "run",
        "--junitxml", "junit.xml", "--llmeval-gate", "golden.pass_rate>=0",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(errors=2, passed=1)  # the gate item passes: the errors decide
    run = pytester.path / "run"
    assert _outcomes(run) == {"a": "error", "b": "error"}
    assert not any(r.get("xfailed") for r in read_jsonl(run / "results.jsonl"))
    assert "xfailed" not in result.stdout.str()
    junit = ET.parse(pytester.path / "junit.xml").getroot()
    assert len(junit.findall(".//testcase/error")) == 2
    assert not junit.findall(".//testcase/skipped")


SKIPPING = {
    "fixture-skips": """
import pytest

@pytest.fixture(scope="session")
def llmeval_agent():
    pytest.skip("OPENAI_API_KEY not set")
""",
    "agent-skips": """
import pytest

class Agent:
    def run(self, case, broker):
        pytest.skip("not today")

@pytest.fixture(scope="session")
def llmeval_agent():
    return Agent()
""",
    "agent-xfails": """
import pytest

class Agent:
    def run(self, case, broker):
        pytest.xfail("known broken")

@pytest.fixture(scope="session")
def llmeval_agent():
    return Agent()
""",
}


@pytest.mark.parametrize("exit_on", ["all", "gates"])
@pytest.mark.parametrize("conftest", sorted(SKIPPING))
def test_a_run_in_which_every_case_was_skipped_is_red(
    pytester: pytest.Pytester, conftest: str, exit_on: str
) -> None:
    """A conftest whose agent fixture skips when a key is missing, or an agent that skips or
    xfails every case: nothing was judged, so the run is red with one line saying so."""
    pytester.makeconftest(SKIPPING[conftest])
    write_json(pytester, "qa.golden.json", CASES)
    result = pytester.runpytest(
        "--llmeval-run-dir", "run", "--llmeval-exit-on", exit_on,
        "--llmeval-gate", "golden.pass_rate>=0.5",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert _outcomes(pytester.path / "run") == {"a": "skipped", "b": "skipped"}
    result.stdout.fnmatch_lines(["nothing was judged: all 2 eval case(s) were skipped*"])


def test_a_run_with_one_judged_case_is_not_nothing_judged(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "import pytest\n"
        "def pytest_collection_modifyitems(items):\n"
        "    items[0].add_marker(pytest.mark.skip(reason='later'))\n"
    )
    write_json(pytester, "qa.golden.json", CASES)
    result = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.OK
    assert _outcomes(pytester.path / "run") == {"a": "skipped", "b": "passed"}
    assert "nothing was judged" not in result.stdout.str()


def test_under_exit_on_gates_a_miss_is_xfailed_an_error_is_not(pytester: pytest.Pytester) -> None:
    """A scored miss informs (xfail, the gates decide); an errored case (a judge that is down)
    stays an error and fails the run, though the gate holds."""
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(JUDGE_CONFTEST)
    rows = [
        {"id": "good", "input": "answer-good", "expected_output": "answer-good",
         "rubric": RUBRIC, "min_scores": {"rubric": 0.5}},
        {"id": "low", "input": "answer-low", "expected_output": "answer-low",
         "rubric": RUBRIC, "min_scores": {"rubric": 0.5}},
        {"id": "down", "input": "answer-down", "expected_output": "answer-down",
         "rubric": RUBRIC, "min_scores": {"rubric": 0.5}},
    ]  # fmt: skip
    write_json(pytester, "j.golden.json", rows)
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-judge-runner", "scripted-judge",
        "--llmeval-exit-on", "gates", "--llmeval-gate", "golden.total==3",
        "--llmeval-run-dir", "run",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1 + 1, xfailed=1, errors=1)  # + the gate entry
    run = pytester.path / "run"
    assert _outcomes(run) == {"good": "passed", "low": "failed", "down": "error"}
    assert _gate_statuses(run) == {"golden.total==3": "passed"}
    result.stdout.fnmatch_lines(["errored: 1 case(s) could not be judged, so the run fails: *down"])


def test_with_exit_on_gates_and_only_misses_the_gates_decide(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", MISSING)
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-exit-on", "gates",
        "--llmeval-gate", "golden.pass_rate>=0.5", "--llmeval-run-dir", "run",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1 + 1, xfailed=1)
    assert _outcomes(pytester.path / "run") == {"hit": "passed", "miss": "failed"}


# -- A.3: a gate with nothing to judge is not passed ------------------------------------------

SKIPPED_ONLY = [
    {"id": "s1", "input": "x", "expected_output": "x"},
]


def test_a_gate_with_nothing_to_judge_fails_unless_optional(pytester: pytest.Pytester) -> None:
    """Every case errored: ``mean_scores.exact_match`` was never produced and the category's
    pass rate judged nothing. Such a gate fails; declared optional it is ``n/a``."""
    write_json(pytester, "qa.golden.json", CASES)
    pytester.makeconftest(DOWN)
    gates = (
        "golden.mean_scores.exact_match>=0.5",
        "golden.mean_scores.contains_keywords>=0.5 optional",
    )
    args = [arg for gate in gates for arg in ("--llmeval-gate", gate)]
    result = pytester.runpytest(
        "--llmeval-runner", "down", "--llmeval-exit-on", "gates", *args,
        "--llmeval-run-dir", "run", "--junitxml", "junit.xml",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    run = pytester.path / "run"
    assert _gate_statuses(run) == {
        "golden.mean_scores.contains_keywords>=0.5": "n/a",
        "golden.mean_scores.exact_match>=0.5": "failed",
    }
    optional = next(
        r
        for r in _report(run)["gates"]["results"]
        if r["gate"]["name"].endswith("contains_keywords>=0.5")
    )
    assert optional["gate"]["optional"] is True
    result.stdout.fnmatch_lines(
        [
            "gate golden.mean_scores.contains_keywords>=0.5: n/a (*no case that ran produced it)"
            " (optional))",
            "gate golden.mean_scores.exact_match>=0.5: FAILED (*no such metric*",
        ]
    )


def test_a_null_metric_fails_its_gate_and_optional_reads_n_a(pytester: pytest.Pytester) -> None:
    """Every case skipped: ``pass_rate`` is ``null`` (n/a) for the run and the suite."""
    rows = [{"id": "s", "input": "x", "expected_output": "x", "keywords": ["x"]}]
    write_json(pytester, "qa.golden.json", rows)
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "-k", "nothing", "--llmeval-run-dir", "run",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED  # nothing selected: no verdict
    pytester.makeconftest(
        "import pytest\n"
        "def pytest_collection_modifyitems(items):\n"
        "    for item in items:\n"
        "        item.add_marker(pytest.mark.skip(reason='not today'))\n"
    )
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-gate", "*.pass_rate>=0.5",
        "--llmeval-gate", "golden.pass_rate>=0.5 optional", "--llmeval-run-dir", "run2",
    )  # fmt: skip
    run = pytester.path / "run2"
    assert _outcomes(run) == {"s": "skipped"}
    # a skipped case is a case left out (issue 29): its gates are partial, never n/a or passed,
    # and the run is red, having judged nothing
    partial = {"*.pass_rate>=0.5": "partial", "golden.pass_rate>=0.5": "partial"}
    assert _gate_statuses(run) == partial
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["gate *.pass_rate>=0.5: partial (*n/a; partial: 1 case(s) left out)"]
    )
    result.stdout.fnmatch_lines(["nothing was judged: all 1 eval case(s) were skipped*"])


def test_a_deselected_suites_gate_is_partial_and_the_run_stays_usable(tmp_path: Path) -> None:
    """``pytest evals/ -m toolforge`` with a gate on golden: golden was collected, all of it
    deselected: the gate is ``partial`` (not passed, not failed) and the run exits 0. The
    shipped examples stay green as a whole."""
    run = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "evals", "-m", "toolforge", "-p", "no:cacheprovider",
         "--llmeval-gate", "golden.pass_rate>=0.5", "--llmeval-run-dir", str(run),
         "--junitxml", str(tmp_path / "junit.xml")],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:]
    # the gates of the manifests whose cases were all deselected too: partial, never dropped
    assert _gate_statuses(run) == {
        "golden.pass_rate>=0.5": "partial",
        "golden.pass_rate.low>=0.5": "partial",
        "when2call.n==24": "partial",
        "when2call.tool_hallucination_n==4": "partial",
    }
    assert set(_outcomes(run).values()) == {"passed"}
    assert "gate golden.pass_rate>=0.5: partial (" in done.stdout
    junit = ET.parse(tmp_path / "junit.xml").getroot()
    (gate,) = [c for c in junit.iter("testcase") if c.get("name") == "golden.pass_rate>=0.5"]
    assert gate.find("skipped") is not None and gate.find("failure") is None
    whole = subprocess.run(
        [sys.executable, "-m", "pytest", "evals", "-p", "no:cacheprovider", "-q",
         "--llmeval-run-dir", str(tmp_path / "whole")],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert whole.returncode == 0, whole.stdout[-3000:]
    assert set(_gate_statuses(tmp_path / "whole").values()) == {"passed"}


@pytest.mark.parametrize("data", [None, []], ids=["no-eval-file", "empty-golden-file"])
@pytest.mark.parametrize("gate", ["golden.pass_rate>=0.9", "*.pass_rate>=0.9"])
def test_a_gate_when_no_eval_case_was_collected_is_a_usage_error(
    pytester: pytest.Pytester, data: list[Any] | None, gate: str
) -> None:
    """A gate over nothing is not passed by silence: one usage error, nothing written."""
    pytester.makepyfile(test_unit="def test_ok():\n    pass\n")
    if data is not None:
        write_json(pytester, "qa.golden.json", data)
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-gate", gate, "--llmeval-exit-on", "gates",
        "--llmeval-run-dir", "run",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --llmeval-gate {gate!r}: *"])
    assert not (pytester.path / "run").exists()


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_a_gate_whose_cases_were_all_deselected_is_partial_everywhere(
    pytester: pytest.Pytester, workers: tuple[str, ...]
) -> None:
    """``-k`` selecting only a python test: the CLI gate and the manifest's gate are judged on
    no case of theirs, so each is ``partial`` in the terminal, junit and report.json, never
    dropped; the run is not red."""
    if workers:
        pytest.importorskip("xdist")
    pytester.makepyfile(test_unit="def test_ok():\n    pass\n")
    write_json(pytester, "qa.golden.json", CASES)
    write_json(pytester, "data.json", MISSING)
    pytester.makefile(
        ".llmeval.yaml", m="suite: golden\ndata: data.json\ngates: [pass_rate >= 0.4]\n"
    )
    result = pytester.runpytest(
        *workers, "--llmeval-runner", "echo", "-k", "test_ok", "--llmeval-gate",
        "golden.pass_rate>=0.9", "--llmeval-run-dir", "run", "--junitxml", "junit.xml",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    run = pytester.path / "run"
    assert _outcomes(run) == {}
    statuses = {"golden.pass_rate>=0.9": "partial", "golden.pass_rate>=0.4": "partial"}
    assert _gate_statuses(run) == statuses
    assert _report(run)["deselected"] == {"golden": 4}
    result.stdout.fnmatch_lines(["gate golden.pass_rate>=0.4: partial (*"])
    result.stdout.fnmatch_lines(["gate golden.pass_rate>=0.9: partial (*"])
    junit = ET.parse(pytester.path / "junit.xml").getroot()
    gates = {
        c.get("name"): c for c in junit.iter("testcase") if c.get("classname") == "llmeval-gates"
    }
    assert set(gates) == set(statuses)
    assert all(c.find("skipped") is not None for c in gates.values())


def test_a_deselected_manifests_gate_is_still_checked_at_the_start(
    pytester: pytest.Pytester,
) -> None:
    """Judged ``partial`` rather than dropped, a manifest's gate is checked like any other:
    a typo in it is one usage error, not a partial gate that hides it."""
    pytester.makepyfile(test_unit="def test_ok():\n    pass\n")
    write_json(pytester, "data.json", MISSING)
    pytester.makefile(
        ".llmeval.yaml", m="suite: golden\ndata: data.json\ngates: [pas_rate >= 0.4]\n"
    )
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "-k", "test_ok", "--llmeval-run-dir", "run"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: m.llmeval.yaml:3: gates[[]0]: golden.pas_rate>=0.4: suite 'golden' has no metric*"]
    )
    assert not (pytester.path / "run").exists()


@pytest.mark.parametrize("optional", [False, True])
def test_a_suites_own_gate_with_nothing_to_judge(pytester: pytest.Pytester, optional: bool) -> None:
    """The integration data has no negative control: that gate of the suite judged nothing. It
    fails, unless the header names it in ``optional_gates`` (then ``n/a``); a ``warn`` stays a
    ``warn``."""
    pytester.makeini("[pytest]\nllmeval_tool_registry = tools.json\n")
    pytester.makeconftest(MODEL_CONFTEST)
    write_json(pytester, "tools.json", TOOLS)
    write_jsonl(pytester, "fixtures/tools/tools.jsonl", FIXTURES)
    write_json(pytester, "scripts.json", SCRIPTS)
    head: dict[str, Any] = {"integration_span_cap": 3, "min_eligible_for_gates": 2}
    if optional:
        head["optional_gates"] = ["negative_control_ok_rate"]
    write_jsonl(pytester, "data.integration.jsonl", [{"__header__": head}, *ITEMS])
    result = pytester.runpytest("--llmeval-runner", "steps", "--llmeval-run-dir", "run")
    run = pytester.path / "run"
    statuses = _gate_statuses(run)
    assert statuses.pop("integration.negative_control_ok_rate>=1") == (
        "n/a" if optional else "failed"
    )
    assert statuses.pop("integration.strict.macro_f1>=0.75") == "warn"
    assert set(statuses.values()) == {"passed"}
    assert _outcomes(run)["b"] == "failed" and _outcomes(run)["a"] == "passed"
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # case b misses either way
    result.stdout.fnmatch_lines(
        [
            "gate integration.negative_control_ok_rate>=1: n/a (*(optional))"
            if optional
            else "gate integration.negative_control_ok_rate>=1: FAILED (*nothing to judge (name "
            "it in the header's optional_gates*"
        ]
    )


def test_optional_is_spelled_alike_on_the_command_line_and_in_manifests() -> None:
    assert parse_gate("golden.mean_scores.judge>=0.8 optional").optional is True
    assert parse_gate("golden.mean_scores.judge >= 0.8").optional is False
    spec = [
        "mean_scores.a >= 0.5 optional",
        {"metric": "mean_scores.b", "op": ">=", "value": 0.5, "optional": True},
        {"mean_scores.c": ">= 0.5 optional", "mean_scores.d": ">= 0.5"},
    ]
    gates = parse_gate_spec(spec, "manifest", default_suite="golden")
    assert [(g.name, g.optional) for g in gates] == [
        ("golden.mean_scores.a>=0.5", True),
        ("golden.mean_scores.b>=0.5", True),
        ("golden.mean_scores.c>=0.5", True),
        ("golden.mean_scores.d>=0.5", False),
    ]
    for bad in ("golden.pass_rate>=0.5 optionally", "golden.pass_rate>=0.5 maybe"):
        with pytest.raises(ValueError, match=r"expected SUITE\.METRIC OP VALUE \[optional\]"):
            parse_gate(bad)
    with pytest.raises(ValueError, match="optional must be true or false"):
        parse_gate_spec({"metric": "pass_rate", "op": ">=", "value": 1, "optional": "yes"})
    # written only when true: reports of gates that are not optional are unchanged
    assert "optional" not in parse_gate("golden.pass_rate>=0.5").model_dump()
    assert parse_gate("golden.pass_rate>=0.5 optional").model_dump()["optional"] is True


@pytest.mark.parametrize("value", ['"0.9"', "true", "'1'"])
def test_a_manifest_gate_value_that_is_not_a_number_is_refused(
    pytester: pytest.Pytester, value: str
) -> None:
    """``value: "0.9"`` is refused as ``value: true`` is: the gate cannot be read, so the run
    stops before any case (a usage error naming the entry's line), and it is never read as a
    threshold."""
    write_json(pytester, "data.json", CASES)
    pytester.makefile(
        ".llmeval.yaml",
        m=f"suite: golden\ndata: data.json\ngates:\n"
        f"  - {{metric: pass_rate, op: '>=', value: {value}}}\n",
    )
    result = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: m.llmeval.yaml:4: gates[[]0]: bad gate value *: expected a number, unquoted*"]
    )
    assert not (pytester.path / "run").exists()


STATUSES: tuple[GateStatus, ...] = ("passed", "failed", "partial", "inconclusive", "warn", "n/a")


def _one_of_each() -> list[GateResult]:
    return [
        GateResult(
            gate=make_gate("golden", f"m{i}", ">=", 0.5),
            value=0.5 if status in ("passed", "warn") else None,
            passed=status not in ("failed", "partial", "n/a"),
            status=status,
            message=f"{status} message",
        )
        for i, status in enumerate(STATUSES)
    ]


def test_every_status_reads_as_itself_everywhere() -> None:
    """The terminal, junit (the gate's test outcome and its ``llmeval.gate.status``
    property), summary.md, report.json and report.html each show the six statuses apart."""
    results = _one_of_each()
    section = gates_section(results)
    assert [r["status"] for r in section["results"]] == list(STATUSES)  # report.json
    assert section["passed"] is False
    verdict = Verdict(gate_results=results)
    lines = console.verdict_lines(verdict)
    assert [line.split(": ", 1)[1].split(" (")[0] for line in lines] == [
        "passed", "FAILED", "partial", "inconclusive", "warn", "n/a"
    ]  # fmt: skip
    reports = gate_test_reports(verdict)
    calls = [r for r in reports if r.when == "call"]
    assert [c.outcome for c in calls] == [
        "passed", "failed", "skipped", "skipped", "passed", "skipped"
    ]  # fmt: skip
    teardowns = [r for r in reports if r.when == "teardown"]
    assert [dict(t.user_properties)["llmeval.gate.status"] for t in teardowns] == list(STATUSES)
    skipped = [c.longrepr[2] for c in calls if c.outcome == "skipped"]  # type: ignore[index]
    assert skipped == [
        "Skipped: partial: partial message",
        "Skipped: inconclusive: inconclusive message",
        "Skipped: n/a: n/a message",
    ]
    totals = {"total": 0, "passed": 0, "failed": 0, "errors": 0, "skipped": 0, "pass_rate": None}
    body = {"suites": {}, "totals": totals, "dataset_sha256": "x", "gates": section}
    header = {"plugin_version": "x", "datasets": {}, "runners": {}, "runner_fingerprint": None}
    markdown = console.summary_markdown(Report.model_validate({**header, **body}), [])
    table = markdown.split("## Gates")[1].split("\n\n")[1].splitlines()[2:]
    assert [row.split(" | ")[1] for row in table] == [
        "passed", "**failed**", "partial", "inconclusive", "warn", "n/a"
    ]  # fmt: skip
    page = html_gates(section)
    assert [row.status for row in page.rows] == list(STATUSES)
    assert page.passed == 1  # only "passed" is a pass: not warn, n/a or inconclusive
    assert page.verdict == "failed"


def test_summary_md_and_junit_show_each_gates_status(pytester: pytest.Pytester) -> None:
    rows = [{"id": "first", "input": "x", "expected_output": "x"},
            {"id": "second", "input": "y", "expected_output": "y"}]  # fmt: skip
    write_json(pytester, "qa.golden.json", rows)
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "-k", "first", "--llmeval-gate", "golden.pass_rate>=0.5",
        "--llmeval-gate", "golden.mean_scores.contains_keywords>=0.5 optional",
        "--llmeval-run-dir", "run", "--junitxml", "junit.xml",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK
    run = pytester.path / "run"
    assert _outcomes(run) == {"first": "passed"}
    statuses = {
        "golden.mean_scores.contains_keywords>=0.5": "partial",
        "golden.pass_rate>=0.5": "partial",
    }
    assert _gate_statuses(run) == statuses
    summary = (run / "summary.md").read_text(encoding="utf-8")
    for name, status in statuses.items():
        assert f"| `{name}` | {status} |" in summary
    junit = ET.parse(pytester.path / "junit.xml").getroot()
    for case in junit.iter("testcase"):
        if case.get("classname", "").startswith("llmeval-gates"):
            props = {p.get("name"): p.get("value") for p in case.iter("property")}
            assert props["llmeval.gate.status"] == statuses[str(case.get("name"))]
            assert case.find("skipped") is not None


# -- A.9: a rubric without a threshold warns once ---------------------------------------------


def test_a_rubric_without_a_threshold_warns_once_naming_the_cases(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(JUDGE_CONFTEST)
    rows = [
        {"id": "loose-1", "input": "answer-low", "expected_output": "answer-low",
         "rubric": RUBRIC},
        {"id": "loose-2", "input": "answer-good", "expected_output": "answer-good",
         "rubric": RUBRIC},
        {"id": "held", "input": "answer-good", "expected_output": "answer-good",
         "rubric": RUBRIC, "min_scores": {"rubric": 0.5}},
        {"id": "plain", "input": "x", "expected_output": "x"},
    ]  # fmt: skip
    write_json(pytester, "j.golden.json", rows)
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-judge-runner", "scripted-judge",
        "--llmeval-run-dir", "run",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK
    assert _outcomes(pytester.path / "run") == dict.fromkeys(
        ("loose-1", "loose-2", "held", "plain"), "passed"
    )
    warnings = [line for line in result.stdout.lines if "have a rubric but no rubric" in line]
    assert warnings == [
        "llmeval: warning: 2 case(s) have a rubric but no rubric threshold, so the judge's "
        "scores never decide them; add min_scores.rubric (or rubric.<criterion>) or a manifest "
        "threshold: j.golden.json::loose-1, j.golden.json::loose-2"
    ]
    # a threshold on a rubric with no judge configured stays a clear error of that case
    write_json(pytester, "j.golden.json", rows[2:3])
    again = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run2")
    again.assert_outcomes(errors=1)
    assert "min_scores.rubric: a rubric score needs the case's rubric and a judge" in (
        again.stdout.str()
    )


# -- exit on gates needs a gate ----------------------------------------------------------------

NO_GATE_LINE = (
    "ERROR: --llmeval-exit-on gates needs at least one gate (--llmeval-gate or a manifest's gates)"
)


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_exit_on_gates_without_any_gate_is_a_usage_error(
    pytester: pytest.Pytester, workers: tuple[str, ...]
) -> None:
    """Under ``--llmeval-exit-on gates`` a miss is an expected failure and the gates decide: with
    no gate at all a run whose case missed exited 0. One usage error at the start instead."""
    if workers:
        pytest.importorskip("xdist")
    write_json(pytester, "qa.golden.json", MISSING)
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-exit-on", "gates", "--llmeval-run-dir", "run",
        *workers,
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([NO_GATE_LINE])
    assert "xfailed" not in result.stdout.str()
    assert not (pytester.path / "run").exists()


def test_exit_on_gates_counts_a_manifests_and_a_suites_own_gates(
    pytester: pytest.Pytester,
) -> None:
    """A manifest's ``gates:`` and the integration suite's own gates are gates; a session with
    no eval case (``llmeval_exit_on = gates`` in the ini over unit tests) is not refused."""
    pytester.makepyfile(test_unit="def test_ok():\n    pass\n")
    plain = pytester.runpytest("--llmeval-exit-on", "gates", "-p", "no:cacheprovider")
    assert plain.ret == pytest.ExitCode.OK
    write_jsonl(pytester, "data/qa.jsonl", MISSING)
    pytester.makefile(
        ".llmeval.yaml", qa="suite: golden\ndata: data/qa.jsonl\ngates:\n  pass_rate: '>= 0.9'\n"
    )
    gated = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-exit-on", "gates", "--llmeval-run-dir", "run1",
    )  # fmt: skip
    assert gated.ret == pytest.ExitCode.TESTS_FAILED  # the manifest's gate failed: not exit 4
    assert NO_GATE_LINE not in gated.stderr.str()
    (pytester.path / "qa.llmeval.yaml").unlink()
    pytester.makeini("[pytest]\nllmeval_tool_registry = tools.json\n")
    pytester.makeconftest(MODEL_CONFTEST)
    write_json(pytester, "tools.json", TOOLS)
    write_jsonl(pytester, "fixtures/tools/tools.jsonl", FIXTURES)
    write_json(pytester, "scripts.json", SCRIPTS)
    head = {"integration_span_cap": 3, "min_eligible_for_gates": 2}
    write_jsonl(pytester, "data.integration.jsonl", [{"__header__": head}, *ITEMS])
    own = pytester.runpytest(
        "data.integration.jsonl", "--llmeval-runner", "steps", "--llmeval-exit-on", "gates",
        "--llmeval-run-dir", "run2",
    )  # fmt: skip
    assert own.ret != pytest.ExitCode.USAGE_ERROR, own.stderr.str()
    assert NO_GATE_LINE not in own.stderr.str()
    assert (pytester.path / "run2" / "report.json").exists()
