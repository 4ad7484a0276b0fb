"""Readable everywhere (issue 32, item 10): what a run writes reads right in the terminal, in
a CI log (summary.md as plain text), in report.html (in headless Chromium) and in ``runs``:
no Python ``None``, a rate over no case reads ``n/a``, no backslash escapes or ``&gt;``, the
page's header says why the run failed, its latency axis labels are the bucket edges, a
timed-out case shows the time it took, and a long bad reply is printed once."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.report.html.latency import latency
from tests.conftest import W2C_FILE, write_json, write_jsonl
from tests.engine.test_timeouts import SLOW_CONFTEST
from tests.report.test_html import browser, chromium


def _run_dir(pytester: pytest.Pytester) -> Path:
    return pytester.path / "run"


def test_a_when2call_run_whose_every_case_errored_reads_n_a_everywhere(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\n")
    rows = [json.loads(line) for line in W2C_FILE.read_text(encoding="utf-8").splitlines()[:3]]
    write_jsonl(pytester, "when2call_rows.jsonl", rows)
    result = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    result.assert_outcomes(errors=3)
    (line,) = [ln for ln in result.outlines if ln.startswith("when2call when2call_rows.jsonl:")]
    assert line == (
        "when2call when2call_rows.jsonl: no case scored, n=0, acc n/a, acc_norm n/a, macro-F1 "
        "n/a (3 labels) / n/a (4), tool hallucination n/a (n=0)"
    )
    summary = (_run_dir(pytester) / "summary.md").read_text(encoding="utf-8")
    section = summary.split("## When2Call", 1)[1]
    assert "None" not in section and "0.0%" not in section
    assert "macro-F1 n/a (3 labels) / n/a (4)" in section
    listed = subprocess.run(
        [sys.executable, "-m", "pytest_llmeval", "runs", str(pytester.path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "    when2call  acc n/a, acc_norm n/a, macro-F1 (3) n/a, macro-F1 (4) n/a, tool " \
        "hallucination n/a" in listed.stdout  # fmt: skip
    page = (_run_dir(pytester) / "report.html").read_text(encoding="utf-8")
    (row,) = re.findall(r'<tr class="headline-row" data-suite="when2call">.*?</tr>', page)
    assert "macro-F1 (3) n/a" in row and "0.0%" not in row and "None" not in row


GOLDEN = [
    {"id": "plain", "category": "small_talk", "input": "hi", "expected_output": "hi"},
    {"id": "wrong", "category": "small_talk", "input": "say (a) <b> & c_d",
     "expected_output": "something else"},
]  # fmt: skip


def test_summary_md_reads_as_plain_text_in_a_ci_log(pytester: pytest.Pytester) -> None:
    write_json(pytester, "qa.golden.json", GOLDEN)
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-run-dir", "run",
        "--llmeval-gate", "golden.pass_rate>=0.9",
    )  # fmt: skip
    assert result.ret == 1
    summary = (_run_dir(pytester) / "summary.md").read_text(encoding="utf-8")
    assert "&gt;" not in summary and "&lt;" not in summary and "&amp;" not in summary
    assert not re.search(r"\\[()\[\]_<>&#*]", summary), summary  # no backslash escapes
    assert "| golden | small_talk | 2 | 1 | 1 | 0 | 0 | 50.0% |" in summary
    assert "| `golden.pass_rate>=0.9` | **failed** | `golden.pass_rate = 0.5, needs >= 0.9` |" in (
        summary
    )
    assert (
        '- `qa.golden.json::wrong` (failed): `exact_match: 0.00 < 1.00 (expected "something '
        'else", got "say (a) <b> & c_d")`'
    ) in summary


def test_a_long_bad_reply_is_printed_once(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the failure's section (pytest's short summary repeats a failure's whole text on CI,
    as pytest does for every test there: this checks the terminal a user reads)."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("BUILD_NUMBER", raising=False)
    reply = " ".join(f"w{i}" for i in range(300))
    write_json(pytester, "qa.golden.json", [{"id": "long", "input": reply, "expected_output": "x"}])
    result = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    stretch = " ".join(f"w{i}" for i in range(40, 60))  # past the message's short quote
    assert text.count(stretch) == 1, text
    assert 'got "w0 w1 w2' in text and "[clipped: " in text


def _result(ms: float, n: int = 0) -> CaseResult:
    return CaseResult(
        case_id=f"c{n}", suite="golden", file="f.json", line=n + 1, nodeid=f"f.json::c{n}",
        outcome="passed", passed=True, duration_ms=ms,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("durations", "unit"),
    [
        ([0.01 * i for i in range(1, 21)], "ms"),  # sub-millisecond cases (echo, replay)
        ([12.5 * i for i in range(1, 21)], "ms"),  # 12.5 ms buckets
        ([250.0 * i for i in range(1, 41)], "s"),  # seconds
    ],
    ids=["sub-ms", "12.5-ms", "seconds"],
)
def test_the_latency_axis_labels_are_the_bucket_edges(durations: list[float], unit: str) -> None:
    shown = latency([_result(ms, n) for n, ms in enumerate(durations)])
    labels = [label.text for label in shown.labels]
    assert len(set(labels)) == len(labels), labels  # no two edges read the same
    scale = 1000.0 if unit == "s" else 1.0
    edges = [float(bin_.title.split("–")[0].split()[0]) * scale for bin_ in shown.bins]
    values = [float(text.split()[0]) * scale for text in labels]
    assert all(text.endswith(f" {unit}") for text in labels), labels
    step = edges[1] - edges[0]
    for value in values:  # each label is an edge exactly, not a rounded neighbour
        assert abs(value / step - round(value / step)) < 1e-6, (value, step, labels)


@browser
def test_report_html_header_gives_the_reason_and_a_timed_out_case_its_time(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makeconftest(SLOW_CONFTEST)
    rows = [{"id": f"fast-{n:03d}", "input": "hi", "expected_output": "hi"} for n in range(120)]
    rows.append({"id": "stuck", "input": "slow", "expected_output": "slow"})
    write_json(pytester, "qa.golden.json", rows)
    result = pytester.runpytest(
        "--llmeval-runner", "slow", "--llmeval-timeout", "1.5", "--llmeval-run-dir", "run",
        "-p", "no:cacheprovider",
    )  # fmt: skip
    result.assert_outcomes(passed=120, errors=1)
    page = _run_dir(pytester) / "report.html"
    out = chromium(tmp_path, page.as_uri() + "#q=stuck", "--dump-dom")
    assert 'data-ready="1"' in out
    (verdict,) = re.findall(r'<p class="verdict-line verdict failed" id="verdict">(.*?)</p>', out)
    assert html.unescape(verdict) == "failed: 1 case(s) errored"
    (row,) = re.findall(r'<tr class="case-row[^"]*"[^>]*>.*?</tr>', out, re.DOTALL)
    assert "stuck" in row
    (shown_ms,) = re.findall(r'<td class="ms">([^<]*)</td>', row)
    assert shown_ms in ("1.5 s", "1.6 s", "1.7 s"), shown_ms  # the time it took, not 0 ms
    histogram = out.split('<svg class="histogram"', 1)[1].split("</svg>", 1)[0]
    ticks = re.findall(r'<text class="axis" x="[^"]*" y="[^"]*">([^<]*)</text>', histogram)
    assert len(set(ticks)) == len(ticks) >= 2, ticks
    assert ticks[-1].startswith("≥"), ticks  # the timed-out case is the slow outlier
