"""Fail closed, a manifest's gates: a gate that cannot be judged stops the run before any case.

A ``gates:`` entry of a ``*.llmeval.yaml`` manifest that does not parse, or that names a metric
no collected case can produce, is a configuration error like the same gate given as
``--llmeval-gate``: one line naming the manifest, the entry's line and the gate, exit 4, nothing
written, also under ``-n 2``. What it is not:

* a manifest that cannot be read at all (broken YAML) is broken input: its error item fails the
  run and the rest runs, whatever ``--llmeval-exit-on`` says;
* an ``optional`` gate keeps its meaning: with nothing to judge it reads ``n/a``;
* a run dir written before the check (``merge``, ``summarize``) still reads such a gate as a
  gate problem: red, in one line, without a traceback;
* ``gates: []`` declares no gate, so under ``--llmeval-exit-on gates`` it decides nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import read_jsonl, write_json

CASES = [
    {"id": "a", "input": "same", "expected_output": "same"},
    {"id": "b", "input": "again", "expected_output": "again"},
    {"id": "c", "input": "more", "expected_output": "more"},
    {"id": "d", "input": "last", "expected_output": "last"},
]
GOOD = "good.golden.json"
"""A data file collected on its own, beside the manifest's."""

ECHO = ("--llmeval-runner=echo", "-p", "no:cacheprovider")


def _project(pytester: pytest.Pytester, gates: str) -> None:
    write_json(pytester, GOOD, CASES[:1])
    write_json(pytester, "data.json", CASES)
    (pytester.path / "m.llmeval.yaml").write_text(
        f"suite: golden\ndata: data.json\n{gates}", encoding="utf-8"
    )


def _matches(text: str, pattern: str) -> bool:
    """Whether ``text`` starts with ``pattern``'s first piece and holds the rest in order
    (pieces split at ``*``; no other wildcard, so ``gates[1]`` is read as written)."""
    first, *rest = pattern.split("*")
    if not text.startswith(first):
        return False
    at = len(first)
    for piece in rest:
        found = text.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def _one_usage_error(result: pytest.RunResult, pytester: pytest.Pytester, line: str) -> None:
    """Exit 4, one ``ERROR:`` line matching ``line`` (:func:`_matches`), no traceback, no run
    dir."""
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    errors = [text for text in result.stderr.lines if text.startswith("ERROR:")]
    assert len(errors) == 1, result.stderr.str()
    assert _matches(errors[0], line), errors[0]
    out = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out and "crashed" not in out
    assert not (pytester.path / "run").exists()  # no case ran, nothing was written


def _workers(n: str) -> tuple[str, ...]:
    if n == "0":
        return ()
    pytest.importorskip("xdist")
    return ("-n", n)


UNPARSEABLE = [
    (
        'gates: ["golden.pass_rate >= 90%"]\n',
        "ERROR: m.llmeval.yaml:3: gates[0]: bad gate 'golden.pass_rate >= 90%': '90%' is not a "
        "number; expected SUITE.METRIC OP VALUE*",
    ),
    (
        "gates: [golden.pass_rate>=]\n",
        "ERROR: m.llmeval.yaml:3: gates[0]: bad gate 'golden.pass_rate>=': *",
    ),
    (
        "gates:\n  - pass_rate >= 0.5\n  - passed >= 1\n  - pass_rate >= 90\n",
        "ERROR: m.llmeval.yaml:6: gates[2]: bad gate 'pass_rate >= 90': pass_rate is a rate in "
        "[0, 1], so the threshold 90 is out of its range",
    ),
    (
        "gates: 'pass_rate ~ 1'\n",
        "ERROR: m.llmeval.yaml:3: gates: bad gate 'pass_rate ~ 1': expected SUITE.METRIC*",
    ),
    (
        "gates:\n  pass_rate: '>= 0.5'\n  passed: '=> 1'\n",
        "ERROR: m.llmeval.yaml:5: gates.passed: bad gate passed: '=> 1': expected \"OP VALUE\"*",
    ),
    (
        "gates:\n  - {metric: pass_rate, op: '>=', value: '0.9'}\n",
        "ERROR: m.llmeval.yaml:4: gates[0]: bad gate value '0.9': expected a number, unquoted*",
    ),
]

UNPARSEABLE_IDS = ["percent", "no-value", "rate", "string", "mapping", "quoted"]


@pytest.mark.parametrize("n", ["0", "2"])
@pytest.mark.parametrize(("gates", "line"), UNPARSEABLE, ids=UNPARSEABLE_IDS)
def test_a_manifest_gate_that_does_not_parse_stops_the_run_before_any_case(
    pytester: pytest.Pytester, gates: str, line: str, n: str
) -> None:
    """As ``--llmeval-gate`` with the same text is: a configuration error, not a gate problem
    found after every case ran."""
    _project(pytester, gates)
    result = pytester.runpytest(*_workers(n), *ECHO, "--llmeval-run-dir=run")
    _one_usage_error(result, pytester, line)


@pytest.mark.parametrize("n", ["0", "2"])
@pytest.mark.parametrize(
    ("gates", "line"),
    [
        (
            "gates: [pass_rate >= 0.5, pas_rate >= 0.5]\n",
            "ERROR: m.llmeval.yaml:3: gates[1]: golden.pas_rate>=0.5: suite 'golden' has no "
            "metric 'pas_rate'; did you mean pass_rate*",
        ),
        (
            "gates: [categories.smoke.pass_rate >= 0.5 optional]\n",
            "ERROR: m.llmeval.yaml:3: gates[0]: golden.categories.smoke.pass_rate>=0.5: no "
            "collected case of suite 'golden' has the category 'smoke'*",
        ),
        (
            "gates: {mean_scores.exact_matc: '>= 0.5'}\n",
            "ERROR: m.llmeval.yaml:3: gates: golden.mean_scores.exact_matc>=0.5: no scorer of "
            "suite 'golden' has the score 'exact_matc'; did you mean exact_match?*",
        ),
        (
            "gates: ['*.nope >= 1']\n",
            "ERROR: m.llmeval.yaml:3: gates[0]: *.nope>=1: the totals has no metric 'nope'*",
        ),
    ],
    ids=["metric", "category", "score", "totals"],
)
def test_a_manifest_gate_no_collected_case_can_produce_stops_the_run(
    pytester: pytest.Pytester, gates: str, line: str, n: str
) -> None:
    """Optional or not: ``optional`` covers a metric with nothing to judge, never a typo."""
    _project(pytester, gates)
    result = pytester.runpytest(*_workers(n), *ECHO, "--llmeval-run-dir=run")
    _one_usage_error(result, pytester, line)


def _report(run: Path) -> dict[str, Any]:
    return json.loads((run / "report.json").read_text(encoding="utf-8"))


def _gate_statuses(run: Path) -> dict[str, str]:
    section = _report(run).get("gates") or {"results": []}
    return {r["gate"]["name"]: r["status"] for r in section["results"]}


@pytest.mark.parametrize("optional", [True, False])
def test_an_optional_manifest_gate_keeps_its_meaning(
    pytester: pytest.Pytester, optional: bool
) -> None:
    """A score some scorer gives but no case of this run produced: the cases run, and the gate
    reads ``n/a`` when optional (green), ``failed`` when not (red)."""
    word = " optional" if optional else ""
    _project(pytester, f"gates: [pass_rate >= 0.5, mean_scores.rubric >= 0.5{word}]\n")
    result = pytester.runpytest(*ECHO, "--llmeval-run-dir=run")
    run = pytester.path / "run"
    assert len(read_jsonl(run / "results.jsonl")) == 5
    statuses = _gate_statuses(run)
    assert statuses == {
        "golden.pass_rate>=0.5": "passed",
        "golden.mean_scores.rubric>=0.5": "n/a" if optional else "failed",
    }
    assert result.ret == (pytest.ExitCode.OK if optional else pytest.ExitCode.TESTS_FAILED)


@pytest.mark.parametrize("exit_on", ["all", "gates"])
def test_a_manifest_that_cannot_be_read_stays_broken_input(
    pytester: pytest.Pytester, exit_on: str
) -> None:
    """Broken YAML: its gates cannot be known, so the manifest is its own error item, the rest
    runs and the run is red, its reports written. Under ``--llmeval-exit-on gates`` it is no
    "nothing decides" usage error either: the error item decides, and an error is never an
    expected failure."""
    write_json(pytester, GOOD, CASES[:1])
    write_json(pytester, "data.json", CASES)
    (pytester.path / "m.llmeval.yaml").write_text(
        'suite: golden\ndata: data.json\ngates: ["golden.pass_rate >= 0.9"\n', encoding="utf-8"
    )
    result = pytester.runpytest(*ECHO, "--llmeval-run-dir=run", f"--llmeval-exit-on={exit_on}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    rows = read_jsonl(pytester.path / "run/results.jsonl")
    outcomes = {(r["file"], r["outcome"]) for r in rows}
    assert outcomes == {(GOOD, "passed"), ("m.llmeval.yaml", "error")}
    result.stdout.fnmatch_lines(["*m.llmeval.yaml:4*"])
    assert _gate_statuses(pytester.path / "run") == {}


def _command(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_llmeval", *args],
        capture_output=True, text=True, cwd=cwd, timeout=300,
    )  # fmt: skip


def test_summarize_and_merge_read_an_old_run_dirs_bad_manifest_gate_as_red(
    pytester: pytest.Pytester,
) -> None:
    """Run dirs made before the check (here: the manifest's gate broken after the run) are
    judged again without a session: the gate is a gate problem, red, one line, no traceback."""
    _project(pytester, "gates: [pass_rate >= 0.5]\n")
    assert pytester.runpytest(*ECHO, "--llmeval-run-dir=run").ret == pytest.ExitCode.OK
    for i in (0, 1):  # a shard's own exit does not matter: merge judges the whole
        pytester.runpytest(*ECHO, f"--llmeval-shard={i}/2", f"--llmeval-run-dir=s{i}")
    (pytester.path / "m.llmeval.yaml").write_text(
        'suite: golden\ndata: data.json\ngates: ["golden.pass_rate >= 90%"]\n', encoding="utf-8"
    )
    problem = "gate problem: m.llmeval.yaml:3: gates[0]: bad gate 'golden.pass_rate >= 90%'"
    for args in (("summarize", "run"), ("merge", "merged", "s0", "s1")):
        done = _command(pytester.path, *args)
        out = done.stdout + done.stderr
        assert done.returncode == 1, out
        assert problem in out
        assert "Traceback" not in out
    summary = (pytester.path / "run/summary.md").read_text(encoding="utf-8")
    assert "| **failed** | `m.llmeval.yaml:3: gates[0]: bad gate" in summary  # a code span


@pytest.mark.parametrize("gates", ["gates: []\n", "gates: {}\n"])
def test_an_empty_gates_list_decides_nothing_under_exit_on_gates(
    pytester: pytest.Pytester, gates: str
) -> None:
    """``--llmeval-exit-on gates`` lets misses through: a manifest declaring no gate must not
    count as something that decides, or a run of misses would be green."""
    write_json(pytester, "data.json", [{"id": "m", "input": "this", "expected_output": "that"}])
    (pytester.path / "m.llmeval.yaml").write_text(
        f"suite: golden\ndata: data.json\n{gates}", encoding="utf-8"
    )
    result = pytester.runpytest(*ECHO, "--llmeval-run-dir=run", "--llmeval-exit-on=gates")
    _one_usage_error(result, pytester, "ERROR: --llmeval-exit-on gates needs at least one gate*")
