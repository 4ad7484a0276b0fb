"""Identical errors once, with their count: the terminal's llmeval section, summary.md and
report.html, from a real replay session where 23 of 24 cases have no cassette."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.report.error_groups import error_groups
from tests.conftest import write_json
from tests.report.test_html import browser, chromium

RECORDED = [{"id": "c00", "input": "q0", "expected_output": "q0"}]
CASES = RECORDED + [
    {"id": f"c{i:02d}", "input": f"q{i}", "expected_output": "x"} for i in range(1, 24)
]


@pytest.fixture
def missing_cassettes(pytester: pytest.Pytester) -> tuple[pytest.RunResult, Path]:
    """One case recorded with the echo runner, then 24 replayed: 23 cassette misses, each
    with its own cassette key in the message."""
    write_json(pytester, "qa.golden.json", RECORDED)
    recorded = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-record", "new", "--llmeval-cassettes", "tapes",
        "--llmeval-run-dir", "rec",
    )  # fmt: skip
    assert recorded.ret == pytest.ExitCode.OK
    write_json(pytester, "qa.golden.json", CASES)
    result = pytester.runpytest(
        "--llmeval-runner", "replay", "--llmeval-cassettes", "tapes", "--llmeval-run-dir", "run"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    return result, pytester.path / "run"


def test_the_terminal_shows_the_shared_error_once(
    missing_cassettes: tuple[pytest.RunResult, Path],
) -> None:
    result, _ = missing_cassettes
    section = result.stdout.str().split("= llmeval =")[1].split("short test summary")[0]
    grouped = [line for line in section.splitlines() if re.match(r"errored: \d+ cases?:", line)]
    assert len(grouped) == 1, section
    assert grouped[0].startswith("errored: 23 cases: replay: no cassette for this request in ")
    assert "(key …, repeat 0)" in grouped[0]
    # pytest's own short summary still lists each case
    assert len([line for line in result.stdout.lines if line.startswith("ERROR qa.golden")]) == 23


def test_summary_md_lists_the_shared_error_once(
    missing_cassettes: tuple[pytest.RunResult, Path],
) -> None:
    _, run = missing_cassettes
    summary = (run / "summary.md").read_text(encoding="utf-8")
    listed = summary.split("## Failed and erroring cases (23)\n\n")[1].split("\n\n")[0]
    (line,) = listed.splitlines()
    assert line.startswith("- **23 cases** (error): `replay: no cassette for this request")
    assert line.endswith("`qa.golden.json::c05`, ... and 18 more")


def test_report_html_has_one_error_row_for_the_shared_error(
    missing_cassettes: tuple[pytest.RunResult, Path],
) -> None:
    _, run = missing_cassettes
    page = (run / "report.html").read_text(encoding="utf-8")
    section = page.split('<section id="errors">')[1].split("</section>")[0]
    rows = re.findall(r'<tr class="error-row" data-count="(\d+)">', section)
    assert rows == ["23"]
    assert '<td class="error-count">23 cases</td>' in section
    assert "no cassette for this request" in section
    assert '<a href="#errors">errors</a>' in page


ERRORS_DRIVER = """<!DOCTYPE html><html><body><pre id="log"></pre>
<iframe id="report" src="report.html" width="1280" height="900"></iframe>
<script>
document.getElementById("report").addEventListener("load", () => {
  const d = document.getElementById("report").contentWindow.document;
  const rows = Array.from(d.querySelectorAll("#errors tr.error-row"));
  document.getElementById("log").textContent = JSON.stringify({
    nav: Array.from(d.querySelectorAll("nav a"), (a) => a.innerText),
    head: Array.from(d.querySelectorAll("#errors th"), (th) => th.innerText),
    rows: rows.map((tr) => Array.from(tr.cells, (td) => td.innerText.trim())),
    shown: rows.map((tr) => tr.getBoundingClientRect().height > 0),
  });
  document.body.dataset.done = "1";
});
</script></body></html>
"""


@browser
def test_browser_errors_section(
    missing_cassettes: tuple[pytest.RunResult, Path], tmp_path: Path
) -> None:
    """In Chromium the Errors section shows the shared message once, with its count, the
    outcome, and its first cases."""
    _, run = missing_cassettes
    (run / "driver.html").write_text(ERRORS_DRIVER, encoding="utf-8")
    out = chromium(tmp_path, (run / "driver.html").as_uri(), "--allow-file-access-from-files",
                   "--dump-dom")  # fmt: skip
    assert 'data-done="1"' in out, out[:2000]
    shown = json.loads(html.unescape(out.split('<pre id="log">')[1].split("</pre>")[0]))
    assert shown["nav"][:3] == ["overview", "errors", "gates"]
    assert shown["head"] == ["cases", "outcome", "message", "first cases"]
    ((count, outcome, message, ids),) = shown["rows"]
    assert (count, outcome) == ("23 cases", "error")
    assert message.startswith("replay: no cassette for this request in ")
    assert ids.startswith("qa.golden.json::c01, ") and ids.endswith("... and 18 more")
    assert shown["shown"] == [True]


def test_no_errors_section_for_a_clean_run(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", RECORDED)
    result = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.OK
    page = (pytester.path / "run" / "report.html").read_text(encoding="utf-8")
    assert '<section id="errors">' not in page
    assert not [line for line in result.stdout.lines if line.startswith("errored:")]


def _result(case: str, outcome: str, error: str) -> CaseResult:
    return CaseResult(
        nodeid=f"qa.golden.json::{case}", case_id=case, suite="golden", outcome=outcome,
        error=error, file="qa.golden.json", line=1, passed=False,
    )  # fmt: skip


def test_grouping_reads_a_case_s_own_ids_as_ellipses_and_keeps_the_rest() -> None:
    results = [
        _result("a", "error", "no cassette in run-1a2b3c4d5e6f (key 0123456789ab…, repeat 0)"),
        _result("b", "error", "no cassette in run-1a2b3c4d5e6f (key fedcba987654…, repeat 0)"),
        _result("c", "error", "no cassette in run-1a2b3c4d5e6f (key fedcba987654…, repeat 1)"),
        _result("d", "failed", "digest " + "ab" * 32),
        _result("e", "failed", "digest " + "cd" * 32),
        _result("f", "error", "line one\nline two"),
    ]
    groups = error_groups(results)
    shown = [(g.count, g.outcome, g.shown) for g in groups]
    assert shown == [
        (2, "error", "no cassette in run-1a2b3c4d5e6f (key …, repeat 0)"),
        (2, "failed", "digest …"),
        (1, "error", "no cassette in run-1a2b3c4d5e6f (key fedcba987654…, repeat 1)"),
        (1, "error", "line one line two"),
    ]
