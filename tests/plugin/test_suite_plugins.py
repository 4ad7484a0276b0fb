"""A third party's suite, registered through ``pytest_llmeval_register_suites`` as the
built-in ones are: it claims its files, scores its cases and owns its typed ``report.json``
section."""

from __future__ import annotations

import json
import textwrap

import pytest

LINES_SUITE = '''
from pytest_llmeval.api import CaseScore, EvalCase, Message
from pytest_llmeval.suites.base import base_totals


class LinesSuite:
    """``*<suffix>``: one line, one case."""

    suffix = ""

    def claims(self, path, head):
        return path.name.endswith(self.suffix)

    def load(self, source, ctx):
        lines = source.path.read_text().splitlines()
        for number, text in enumerate(lines, 1):
            yield EvalCase(case_id=f"l{number}", suite=self.name, file=source.display,
                           line=number, messages=[Message(role="user", content=text)])
'''
"""A third party's suite of text files, as the two below build on it."""

SUITE_CONFTEST = (
    LINES_SUITE
    + '''
from pytest_llmeval.rundir.models import SuiteSection


class ShoutSection(SuiteSection):
    shouted: int


class ShoutSuite(LinesSuite):
    """``*.shout.txt``: it passes when the answer is upper case."""

    name = "shout"
    suffix = ".shout.txt"
    section_model = ShoutSection

    def score(self, case, transcript, ctx):
        shouted = transcript.response == transcript.response.upper()
        return CaseScore(passed=shouted, details={"shouted": shouted},
                         failure=None if shouted else "not shouted")

    def aggregate(self, results):
        return {**base_totals(results),
                "shouted": SHOUTED(sum(bool(r.details.get("shouted")) for r in results))}

    def file_artifacts(self, source, results, ctx, run_id):
        return {}

    def console_lines(self, artifacts):
        return []


def pytest_llmeval_register_suites(registry):
    registry.register(ShoutSuite())
'''
)


def _project(pytester: pytest.Pytester, shouted: str) -> None:
    pytester.makeconftest(SUITE_CONFTEST.replace("SHOUTED", shouted))
    pytester.makefile(".shout.txt", greetings="HELLO\nquiet please\n")
    pytester.makeini(
        textwrap.dedent("""
        [pytest]
        llmeval_files = *.shout.txt
    """)
    )


def test_a_registered_suite_collects_scores_and_reports(pytester: pytest.Pytester) -> None:
    _project(pytester, "int")
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-run-dir", "run", "-m", "shout"
    )
    result.assert_outcomes(passed=1, failed=1)
    report = json.loads((pytester.path / "run" / "report.json").read_text())
    section = report["suites"]["shout"]
    assert section["shouted"] == 1  # the suite's own typed field
    assert section["total"] == 2 and section["passed"] == 1


def test_an_aggregate_that_does_not_fit_its_section_is_reported(
    pytester: pytest.Pytester,
) -> None:
    _project(pytester, "'{} times'.format")  # "1 times" where the section wants a number
    result = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*could not write the run dir: suite 'shout': its aggregate does not fit "
         "ShoutSection: shouted: *"]
    )  # fmt: skip
    assert "Traceback" not in result.stdout.str()


RANKING_CONFTEST = (
    LINES_SUITE
    + '''

class RankSuite(LinesSuite):
    """``*.rank.txt``: a suite whose aggregate writes into the results it is given."""

    name = "rank"
    suffix = ".rank.txt"

    def score(self, case, transcript, ctx):
        return CaseScore(passed=True, scores={"exact_match": 1.0})

    def aggregate(self, results):
        for rank, result in enumerate(results):
            result.details["rank"] = rank
            result.scores["exact_match"] *= 100
        return base_totals(results)


def pytest_llmeval_register_suites(registry):
    registry.register(RankSuite())
'''
)


def test_a_suite_that_writes_into_its_results_changes_no_other_result(
    pytester: pytest.Pytester,
) -> None:
    """Kept results share equal scores and empty details: a suite's aggregate that writes
    into the results it is handed fails, naming the fix, and no other result (of this
    session or the next one in the process) ever shows what it wrote."""
    pytester.makeconftest(RANKING_CONFTEST)
    pytester.makefile(".rank.txt", cases="a\nb\nc\n")
    pytester.makeini("[pytest]\nllmeval_files = *.rank.txt\n")
    first = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    assert first.ret != pytest.ExitCode.OK  # its run dir is not written as if it were fine
    said = first.stdout.str() + first.stderr.str()
    assert "read-only; change a copy (dict(result.scores)" in said
    # the next session in this process, a plain golden file: its results are its own
    (pytester.path / "conftest.py").unlink()
    pytester.makeini("[pytest]\n")
    rows = [{"id": f"g{i}", "input": "hi", "expected_output": "hi"} for i in range(3)]
    pytester.makefile(".eval.jsonl", qa="\n".join(json.dumps(row) for row in rows))
    second = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run2")
    second.assert_outcomes(passed=3)
    lines = (pytester.path / "run2" / "results.jsonl").read_text().splitlines()
    for line in lines:
        result = json.loads(line)
        assert result["details"] == {} and result["scores"] == {"exact_match": 1.0}, result
