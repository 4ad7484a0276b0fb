"""report.html: a self-contained page; its data block cannot be broken out of; it stays usable
at 10,000 cases and under 20 MB at 20,000; its header, headline numbers, expected misses, file
column and failures-first order (checked in headless Chromium when it is installed)."""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import html
import json
import random
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from pytest_llmeval.core.models import CaseResult, Outcome, ToolCallRecord, Usage
from pytest_llmeval.report.build import build_report
from pytest_llmeval.report.gates import (
    evaluate_gates,
    gates_section,
    parse_gate,
    suite_gate_results,
)
from pytest_llmeval.report.html import DATA_ELEMENT_ID, MAX_CHARS, latency_buckets, render_html
from pytest_llmeval.report.html.header import RunFacts
from pytest_llmeval.report.html.render import assets
from pytest_llmeval.rundir.models import RunVerdict
from pytest_llmeval.suites.base import SuiteRegistry

BREAKOUT = '</script><script>document.body.dataset.pwned = "1"</script><!--'
IMG = '<img src=x onerror="document.body.dataset.pwned=1">'
DATA_BLOCK = re.compile(
    rf'<script type="application/json" id="{DATA_ELEMENT_ID}">(.*?)</script>', re.DOTALL
)


def make_results(n: int, seed: int = 0) -> list[CaseResult]:
    """``n`` synthetic cases over three suites; the interesting ones sit at fixed indexes."""
    rng = random.Random(seed)
    suites = [("golden", ["chat", "weather", "search"]), ("toolforge", ["routing", "args"]),
              ("when2call", ["tool_call", "request_info", "cannot_answer", "direct"])]  # fmt: skip
    out = []
    for i in range(n):
        suite, categories = suites[i % 3]
        category = categories[(i // 3) % len(categories)]
        roll = rng.random()
        outcome: Outcome = (
            "passed" if roll < 0.8 else "failed" if roll < 0.93 else "error" if roll < 0.97
            else "skipped"
        )  # fmt: skip
        case_id = f"case-{i:05d}"
        calls = [
            ToolCallRecord(
                name="get_weather", params={"city": "Paris", "day": i % 7}, source="fixture",
                result={"temp_c": 18 + i % 5, "conditions": "cloudy"}, duration_ms=3.5,
            )
        ] if i % 2 else []  # fmt: skip
        response = f"Answer for {case_id}: it is {18 + i % 5}C and cloudy in Paris today."
        error = None
        if outcome == "failed":
            error = f"exact_match: expected 'It is 18C', got '{response[:20]}'"
        elif outcome == "error":
            error = "timeout: the agent did not answer within 30 s"
        out.append(
            CaseResult(
                case_id=case_id,
                suite=suite,
                file=f"evals/{suite}.jsonl",
                line=i + 1,
                nodeid=f"evals/{suite}.jsonl::{case_id}",
                category=category,
                outcome=outcome,
                passed=outcome == "passed",
                error=error,
                scores={"exact_match": 1.0 if outcome == "passed" else 0.0},
                duration_ms=0.0 if outcome == "skipped" else rng.lognormvariate(6.5, 0.6),
                response="" if outcome == "skipped" else response,
                tool_calls=calls,
                usage=Usage(prompt_tokens=120, completion_tokens=30, total_tokens=150),
                fixture_hits=len(calls),
            )
        )
    # The hostile and the huge, on cases the tests know.
    out[7] = out[7].model_copy(update={"response": f"Sure! {BREAKOUT} and {IMG}"})
    out[8] = out[8].model_copy(
        update={
            "response": "See https://example.org/docs and http://example.com/x",
            "tool_calls": [
                ToolCallRecord(
                    name="web.search",
                    params={"q": "</script>"},
                    result={"url": "https://example.org"},
                )
            ],
        }
    )
    out[9] = out[9].model_copy(update={"response": "x" * 10_000, "error": "e" * 5_000})
    # A case's input, expectation and conversation, as results.jsonl keeps them (hostile too).
    out[1] = out[1].model_copy(update=CONVERSATION)
    out[7] = out[7].model_copy(
        update={
            "input": [{"role": "user", "content": f"Say {IMG}"}],
            "transcript": [
                {"role": "assistant", "tool_calls": [{"name": "web.search",
                                                      "arguments": {"q": BREAKOUT}}]},
                {"role": "tool", "name": "web.search", "content": BREAKOUT},
                {"omitted": 12},
                {"role": "assistant", "content": IMG},
            ],
        }
    )  # fmt: skip
    return out


CONVERSATION: dict[str, Any] = {
    "input": [
        {"role": "system", "content": "You are a weather bot."},
        {"role": "user", "content": "Weather in Paris?"},
    ],
    "expected": {"toolsCalled": ["get_weather"], "responseContains": ["18C"]},
    "transcript": [
        {"role": "assistant", "tool_calls": [
            {"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather",
         "content": '{"temp_c": 18}'},
        {"role": "assistant", "content": "It is 18C in Paris."},
    ],
}  # fmt: skip


def make_report(results: list[CaseResult], **extra: Any) -> dict[str, Any]:
    report = build_report(results, SuiteRegistry(), {}, {}, {}).dump()
    report.update(extra)
    return report


def data_block(page: str) -> str:
    match = DATA_BLOCK.search(page)
    assert match is not None
    return match.group(1)


def without_data(page: str) -> str:
    return DATA_BLOCK.sub("", page)


@pytest.fixture(scope="module")
def small() -> tuple[dict[str, Any], list[CaseResult]]:
    results = make_results(30)
    return make_report(results), results


# -- unit ------------------------------------------------------------------------------------


def test_no_external_references_outside_the_data(
    small: tuple[dict[str, Any], list[CaseResult]],
) -> None:
    report, results = small
    page = render_html(report, results)
    rest = without_data(page)
    assert len(rest) < len(page)
    assert "http://" not in rest and "https://" not in rest
    assert "https://example.org" in data_block(page)
    # nothing that would fetch: no src= or href= except in-page fragments, no @import/url()
    assert re.findall(r"\bsrc\s*=", rest) == []
    assert all(h.startswith("#") for h in re.findall(r'href="([^"]*)"', rest))
    assert "@import" not in rest and "url(" not in rest
    assert "default-src 'none'" in rest  # and the CSP forbids fetching anyway


def test_data_block_round_trips(small: tuple[dict[str, Any], list[CaseResult]]) -> None:
    report, results = small
    raw = data_block(render_html(report, results))
    assert "<" not in raw and ">" not in raw  # so neither `</script` nor `<!--` can appear
    data = json.loads(raw)  # \u003c escapes are plain JSON: json.loads undoes them
    assert [c["id"] for c in data["cases"]] == [r.case_id for r in results]
    first, hostile = data["cases"][1], data["cases"][7]
    assert first["nodeid"] == results[1].nodeid and first["outcome"] == results[1].outcome
    assert json.loads(first["tools"][0]["args"]) == {"city": "Paris", "day": 1}
    assert json.loads(first["tools"][0]["result"]) == {"temp_c": 19, "conditions": "cloudy"}
    assert hostile["response"] == f"Sure! {BREAKOUT} and {IMG}"
    assert json.loads(data["cases"][8]["tools"][0]["args"]) == {"q": "</script>"}


def test_script_close_in_a_response_cannot_break_out(
    small: tuple[dict[str, Any], list[CaseResult]],
) -> None:
    report, results = small
    page = render_html(report, results)
    assert page.lower().count("</script") == 2  # the data block's own end and the code's
    assert page.count("<!--") == 0
    assert "pwned" not in without_data(page)
    assert "onerror" not in without_data(page)


def test_long_texts_are_truncated(small: tuple[dict[str, Any], list[CaseResult]]) -> None:
    report, results = small
    data = json.loads(data_block(render_html(report, results)))
    big = data["cases"][9]
    assert big["response"] == "x" * MAX_CHARS + "… [clipped: 10000 characters in all]"
    assert big["error"].endswith("… [clipped: 5000 characters in all]")
    data = json.loads(data_block(render_html(report, results, max_chars=50)))
    assert data["cases"][9]["response"].startswith("x" * 50 + "… [clipped: 10000")


def test_sections_follow_the_optional_keys(
    small: tuple[dict[str, Any], list[CaseResult]],
) -> None:
    report, results = small
    bare = render_html(report, results, title="Nightly <evals>")
    assert "<title>Nightly &lt;evals&gt;</title>" in bare
    for sid in ("overview", "gates", "pass-rates", "latency", "cases"):
        assert f'<section id="{sid}">' in bare
    for sid in ("confusion-matrix", "levels", "baseline"):
        assert f'<section id="{sid}">' not in bare
    assert 'id="no-gates">no gates<' in bare

    suites = json.loads(json.dumps(report["suites"]))
    suites["when2call"]["confusion_matrix"] = {
        "labels": ["tool_call", "request_info", "cannot_answer", "direct"],
        "matrix": [[40, 3, 1, 6], [2, 30, 5, 3], [0, 4, 28, 8], [5, 2, 1, 42]],
    }
    levels = {
        "level2": {"accuracy": 0.5, "correct": 1, "questions": 2},
        "level1": {"accuracy": 1.0, "correct": 1, "questions": 1},
    }
    suites["gaia"] = {"total": 3, "passed": 2, "failed": 1, "errors": 0, "skipped": 0,
                      "pass_rate": 0.667, "levels": levels}  # fmt: skip
    full = render_html(
        {
            **report,
            "suites": suites,
            "gates": [
                {
                    "name": "golden floor",
                    "metric": "golden.pass_rate",
                    "op": ">=",
                    "threshold": 0.9,
                    "value": 0.81,
                    "passed": False,
                },
                {
                    "name": "<b>no errors</b>",
                    "metric": "errors",
                    "op": "<=",
                    "threshold": 0,
                    "value": 0,
                    "passed": True,
                },
            ],
            "baseline": {
                "flips": {
                    "pass->fail": ["case-00003", "a&b"],
                    "fail->pass": ["case-00004"],
                    "new": [],
                    "removed": ["gone"],
                },
                "mcnemar": {"b": 2, "c": 1, "p_value": 1.0},
            },
        },
        results,
    )
    for sid in ("confusion-matrix", "levels", "baseline", "gates"):
        assert f'<section id="{sid}">' in full
    assert "no gates" not in full
    assert "1/2 gates passed" in full and "&lt;b&gt;no errors&lt;/b&gt;" in full
    assert "<b>" not in without_data(full)
    matrix = full.split('<section id="confusion-matrix">')[1].split("</section>")[0]
    assert matrix.count('class="cell diag"') == 4 and ">42</td>" in matrix
    level_html = full.split('<section id="levels">')[1].split("</section>")[0]
    assert level_html.index("level1") < level_html.index("level2") and "50.0%" in level_html
    baseline = full.split('<section id="baseline">')[1].split("</section>")[0]
    assert "McNemar: b = 2" in baseline and "p = 1" in baseline
    assert '<a href="#q=a%26b">a&amp;b</a>' in baseline

    broken = {**report, "suites": {"x": {"total": 1, "confusion_matrix": {"labels": ["a"]}}}}
    assert "malformed confusion matrix" in render_html(broken, results)
    assert "<section" in render_html({"suites": {}}, [])  # a bare report still renders


def test_odd_values_keep_the_data_parseable() -> None:
    odd = make_results(10)
    odd[0] = odd[0].model_copy(
        update={
            "scores": {"f1": float("nan"), "z": float("inf")},
            "duration_ms": float("inf"),
            "details": {1: "int key", "b": float("nan"), "when": {1, 2}},
            "tool_calls": [ToolCallRecord(name="t", result={2: "x", "a": "y"})],
            "response": "lone surrogate \ud800 and \u2028 line separator",
        }
    )
    page = render_html(make_report(odd), odd)
    page.encode("utf-8")  # writable as UTF-8
    case = json.loads(data_block(page))["cases"][0]
    assert case["scores"] == {"f1": "nan", "z": "inf"} and case["ms"] == 0.0
    assert '"1": "int key"' in case["details"] or '"1":"int key"' in case["details"]
    assert case["response"] == "lone surrogate ? and \u2028 line separator"


def test_render_is_deterministic(small: tuple[dict[str, Any], list[CaseResult]]) -> None:
    report, results = small
    assert render_html(report, results) == render_html(report, results)


def test_latency_buckets() -> None:
    assert latency_buckets([]) == []
    assert latency_buckets([0.0, 0.0]) == [(0.0, 0.0, 2)]
    values = [float(v) for v in range(1, 1001)] + [50_000.0]
    buckets = latency_buckets(values)
    assert sum(n for _, _, n in buckets) == len(values)
    # p99 is 991 ms: twenty 50 ms buckets up to 1000, then one for 1000 and the 50 s outlier
    assert buckets[0] == (0.0, 50.0, 49) and buckets[-1] == (1000.0, 50_000.0, 2)
    widths = {round(high - low, 6) for low, high, _ in buckets[:-1]}
    assert widths == {50.0} and len(buckets) <= 22


def test_the_csp_allows_exactly_the_inlined_script(
    small: tuple[dict[str, Any], list[CaseResult]],
) -> None:
    report, results = small
    page = render_html(report, results)
    (script,) = re.findall(r"<script>(.*?)</script>", page, re.DOTALL)
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    csp = re.findall(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', page)
    assert csp == [
        f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; "
        "base-uri 'none'; form-action 'none'"
    ]
    assert script == assets().script  # the page's whole script, as shipped


def test_the_templates_are_package_data() -> None:
    """Every file under report/html/templates/ is matched by pyproject's package-data, so a
    wheel ships it."""
    tomllib = pytest.importorskip("tomllib")
    root = Path(__file__).resolve().parents[2]
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    globs = config["tool"]["setuptools"]["package-data"]["pytest_llmeval"]
    package = root / "pytest_llmeval"
    files = sorted((package / "report" / "html" / "templates").iterdir())
    assert {f.name for f in files} >= {"report.html.j2", "report.css", "report.js"}
    for file in files:
        name = file.relative_to(package).as_posix()
        assert any(fnmatch.fnmatch(name, glob) for glob in globs), name


def gated_report(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` with a session's gates section as ``report.json`` holds it: a command-line
    gate that passes and one that fails, one on a suite that did not run, and the integration
    suite's own gates (one of them inconclusive)."""
    report = json.loads(json.dumps(report))
    report["suites"]["golden"]["pass_rate"] = 0.75
    report["suites"]["integration"] = {
        "total": 0, "passed": 0, "failed": 0, "errors": 0, "skipped": 0, "pass_rate": None,
        "gates": {
            "controls_with_integration": {
                "metric": "controls_with_integration", "kind": "zero", "threshold": 0.0,
                "value": 0.0, "status": "pass", "message": "controls_with_integration = 0",
            },
            "integration_coverage": {
                "metric": "integration_coverage", "kind": "count", "threshold": 0.8,
                "value": 0.5, "status": "inconclusive",
                "message": "inconclusive: integration_coverage = 0.5 (threshold 0.8)",
            },
        },
    }  # fmt: skip
    cli = [parse_gate(g) for g in ("golden.pass_rate>=0.9", "*.total==30", "x.m>=0.5")]
    results = evaluate_gates(cli, report) + suite_gate_results(report)
    report["gates"] = gates_section(results)
    return report


GATE_ROWS = [  # gate, metric, op, threshold, value, status
    ["*.total==30", "*.total", "==", "30", "30", "passed"],
    ["golden.pass_rate>=0.9", "golden.pass_rate", ">=", "0.9", "0.75", "failed"],
    ["integration.controls_with_integration==0", "integration.controls_with_integration", "==",
     "0", "0", "passed"],
    ["integration.integration_coverage>=0.8", "integration.integration_coverage", ">=", "0.8",
     "0.5", "inconclusive"],
    ["x.m>=0.5", "x.m", ">=", "0.5", "–", "failed"],
]  # fmt: skip


def test_each_gate_shows_its_numbers_and_status(
    small: tuple[dict[str, Any], list[CaseResult]],
) -> None:
    report, results = small
    page = render_html(gated_report(report), results)
    section = page.split('<section id="gates">')[1].split("</section>")[0]
    assert '<p class="gate-summary failed">2/5 gates passed</p>' in section
    rows = re.findall(r'<tr class="gate-row" data-status="([^"]*)">(.*?)</tr>', section)
    cells = [[html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", r)] for _, r in rows]
    assert [status for status, _ in rows] == [row[5] for row in GATE_ROWS]
    assert [c[:5] for c in cells] == [row[:5] for row in GATE_ROWS]
    assert [re.sub(r"<[^>]+>", "", c[5]) for c in cells] == [row[5] for row in GATE_ROWS]
    assert cells[1][6] == "golden.pass_rate = 0.75, needs >= 0.9"
    assert "suite 'x' has no results" in cells[4][6]

    # a gate result may carry its own status, and older reports say "actual" for the value
    report = gated_report(report)
    report["gates"]["results"][0].update(status="warn", actual=31.0)
    del report["gates"]["results"][0]["value"]
    first = render_html(report, results).split('<tr class="gate-row"')[1]
    assert 'data-status="warn"' in first and '<td class="gate-value">31</td>' in first


# -- browser -----------------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium")
browser = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
N_BIG = 10_000


@pytest.fixture(scope="module")
def big_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[CaseResult]]:
    results = make_results(N_BIG)
    report = make_report(
        results,
        gates=[{"name": "floor", "metric": "pass_rate", "op": ">=", "threshold": 0.8,
                "value": 0.83, "passed": True}],
        baseline={"flips": {"pass->fail": ["case-00003"], "fail->pass": [], "new": [],
                            "removed": []}, "mcnemar": {"b": 1, "c": 0, "p_value": 1.0}},
    )  # fmt: skip
    report["suites"]["when2call"]["confusion_matrix"] = {
        "labels": ["tool_call", "request_info", "cannot_answer", "direct"],
        "matrix": [[700, 40, 10, 83], [30, 750, 33, 20], [5, 60, 700, 68], [90, 12, 6, 726]],
    }
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(render_html(report, results), encoding="utf-8")
    size = path.stat().st_size
    print(f"report.html for {N_BIG} cases: {size} bytes ({size / 2**20:.2f} MiB)")
    assert size < 8 * 2**20
    return path, results


def chromium(tmp_path: Path, url: str, *args: str) -> str:
    assert CHROMIUM is not None
    cmd = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-extensions", "--no-first-run", "--no-default-browser-check",
        "--hide-scrollbars", f"--user-data-dir={tmp_path / 'chromium-profile'}",
        "--virtual-time-budget=5000", *args, url,
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def dom(tmp_path: Path, page: Path) -> str:
    """The DOM after the page's script ran, without the (huge) data block."""
    out = chromium(tmp_path, page.as_uri(), "--dump-dom")
    assert 'data-ready="1"' in out, out[:2000]  # the script ran to its end
    return without_data(out)


VIEWS_DRIVER = """<!DOCTYPE html><html><body><pre id="log"></pre>
<script type="application/json" id="fragments">FRAGMENTS</script>
<script>
(async () => {
  const fragments = JSON.parse(document.getElementById("fragments").textContent);
  const views = {};
  for (const fragment of fragments) {
    const frame = document.createElement("iframe");
    await new Promise((done) => {
      frame.addEventListener("load", done);
      frame.src = "report.html" + fragment;
      document.body.appendChild(frame);
    });
    const d = frame.contentDocument;
    views[fragment] = {
      ready: d.body.dataset.ready || null,
      pwned: d.body.dataset.pwned || null,
      images: d.querySelectorAll("img").length,
      pager: d.getElementById("pager-info").textContent,
      ids: Array.from(d.querySelectorAll("tr.case-row td.case-id"), (td) => td.textContent),
      empty: d.querySelectorAll("tr.empty").length,
      details: Array.from(d.querySelectorAll("tr.case-detail"), (tr) => tr.innerHTML),
    };
    frame.remove();
  }
  document.getElementById("log").textContent = JSON.stringify(views);
  document.body.dataset.done = "1";
})();
</script></body></html>
"""

FRAGMENTS = [
    "#q=case-00042",
    "#q=timeout",
    "#outcome=failed&suite=golden&page=2",
    "#q=nothing-matches-this",
    "#open=evals/toolforge.jsonl::case-00007&q=case-0000",
    "#open=evals/golden.jsonl::case-00009&page=1",
    "#open=evals/toolforge.jsonl::case-00001",
]


@pytest.fixture(scope="module")
def views(
    tmp_path_factory: pytest.TempPathFactory, big_page: tuple[Path, list[CaseResult]]
) -> dict[str, dict[str, Any]]:
    """What the page shows when opened with each of FRAGMENTS (one browser run for all)."""
    page, _ = big_page
    driver = page.parent / "views.html"
    driver.write_text(VIEWS_DRIVER.replace("FRAGMENTS", json.dumps(FRAGMENTS)), encoding="utf-8")
    tmp = tmp_path_factory.mktemp("views")
    out = chromium(tmp, driver.as_uri(), "--allow-file-access-from-files", "--dump-dom")
    assert 'data-done="1"' in out, out[:2000]
    found: dict[str, dict[str, Any]] = json.loads(
        html.unescape(out.split('<pre id="log">')[1].split("</pre>")[0])
    )
    for view in found.values():
        assert view["ready"] == "1"  # the script ran to its end
        assert view["pwned"] is None and view["images"] == 0  # hostile data stayed text
    return found


RANK = {"failed": 0, "error": 1, "passed": 3, "skipped": 4}


def shown(results: list[CaseResult]) -> list[CaseResult]:
    """The cases in the order the page lists them with no column sorted: failures first
    (failed, error, expected misses, passed, skipped), each in run order."""
    return sorted(results, key=lambda r: 2 if r.xfailed else RANK[r.outcome])


def row_ids(dom_text: str) -> list[str]:
    return re.findall(r'<tr class="case-row"[^>]*>.*?<td class="case-id"[^>]*>([^<]*)<', dom_text)


def pager(dom_text: str) -> str:
    match = re.search(r'<span id="pager-info"[^>]*>([^<]*)</span>', dom_text)
    assert match is not None
    return html.unescape(match.group(1))


@browser
def test_browser_first_page(tmp_path: Path, big_page: tuple[Path, list[CaseResult]]) -> None:
    page, results = big_page
    out = dom(tmp_path, page)
    assert row_ids(out) == [r.case_id for r in shown(results)[:100]]
    assert pager(out) == f"1–100 of {N_BIG}"
    suites_table = out.split('class="num suites-table"')[1].split("</table>")[0]
    for name in ("golden", "toolforge", "when2call", "all"):
        assert f">{name}<" in suites_table
    assert 'id="confusion-matrix"' in out and 'id="baseline"' in out
    assert "pwned" not in out.split("<body")[1].split(">")[0]  # the hostile case did nothing
    assert "<img" not in out
    options = re.findall(r'<select id="case-suite".*?</select>', out, re.DOTALL)[0]
    assert re.findall(r'<option value="(\w*)"', options) == ["", "golden", "toolforge",
                                                             "when2call"]  # fmt: skip


@browser
def test_browser_search_filter_and_paging(
    views: dict[str, dict[str, Any]], big_page: tuple[Path, list[CaseResult]]
) -> None:
    _, results = big_page
    view = views["#q=case-00042"]
    assert (view["ids"], view["pager"]) == (["case-00042"], f"1–1 of 1 (filtered from {N_BIG})")

    view = views["#q=timeout"]  # search reaches the error text
    errors = [r.case_id for r in results if r.outcome == "error"]
    assert view["pager"] == f"1–100 of {len(errors)} (filtered from {N_BIG})"
    assert view["ids"] == errors[:100]

    failed = [r.case_id for r in results if r.outcome == "failed" and r.suite == "golden"]
    view = views["#outcome=failed&suite=golden&page=2"]
    assert view["pager"] == f"101–200 of {len(failed)} (filtered from {N_BIG})"
    assert view["ids"] == failed[100:200]

    view = views["#q=nothing-matches-this"]
    assert (view["ids"], view["empty"], view["pager"]) == ([], 1, f"0 of 0 (filtered from {N_BIG})")


@browser
def test_browser_transcript_is_text(views: dict[str, dict[str, Any]]) -> None:
    (detail,) = views["#open=evals/toolforge.jsonl::case-00007&q=case-0000"]["details"]
    assert "Final response" in detail
    assert "&lt;/script&gt;&lt;script&gt;" in detail and "&lt;img src=x" in detail

    (detail,) = views["#open=evals/golden.jsonl::case-00009&page=1"]["details"]
    assert "[clipped: 10000 characters in all]" in detail

    (detail,) = views["#open=evals/toolforge.jsonl::case-00001"]["details"]
    assert "get_weather" in detail and "[fixture, ok, 3.5 ms]" in detail
    assert '"city": "Paris"' in html.unescape(detail)  # arguments pretty-printed


@browser
def test_browser_case_detail_shows_input_expected_and_transcript(
    views: dict[str, dict[str, Any]],
) -> None:
    (detail,) = views["#open=evals/toolforge.jsonl::case-00001"]["details"]
    text = html.unescape(re.sub(r"<[^>]+>", "\n", detail))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    at = lines.index("Input")
    assert lines[at : at + 5] == [
        "Input", "system", "You are a weather bot.", "user", "Weather in Paris?"
    ]  # fmt: skip
    at = lines.index("Expected")
    assert "".join(lines[at + 1 : lines.index("Transcript")]).replace(" ", "") == (
        '{"responseContains":["18C"],"toolsCalled":["get_weather"]}'
    )
    at = lines.index("Transcript")
    assert lines[at + 1 : at + 4] == ["assistant", "calls get_weather", "{"]
    assert '"city": "Paris"' in text  # arguments pretty-printed
    assert lines[lines.index("tool") + 1] == "[get_weather, call call_1]"
    assert '"temp_c": 18' in text  # the tool result, pretty-printed
    assert "It is 18C in Paris." in lines
    # the sections come in reading order, before the tool-call table and the final answer
    order = [lines.index(h) for h in ("Input", "Expected", "Transcript", "Final response")]
    assert order == sorted(order)

    # hostile messages stay text (the views fixture also checks that no script ran)
    (detail,) = views["#open=evals/toolforge.jsonl::case-00007&q=case-0000"]["details"]
    assert "Transcript" in detail and "… 12 messages left out" in detail
    assert detail.count("&lt;/script&gt;&lt;script&gt;") == 3  # response, argument, result
    assert detail.count("&lt;img src=x") == 3  # response, input, last message
    assert "<img" not in detail and "<script" not in detail


INTERACTION_DRIVER = """<!DOCTYPE html><html><body><pre id="log"></pre>
<iframe id="report" src="report.html" width="1280" height="900"></iframe>
<script>
const lines = [];
const log = (key, value) => lines.push(key + "=" + value);
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
document.getElementById("report").addEventListener("load", async () => {
  const w = document.getElementById("report").contentWindow;
  const d = w.document;
  const info = () => d.getElementById("pager-info").textContent;
  const rows = () => Array.from(d.querySelectorAll("tr.case-row"));
  const ids = () => rows().map((tr) => tr.querySelector("td.case-id").textContent);
  try {
    d.getElementById("page-next").click();
    log("next", info() + " " + ids()[0] + " " + w.location.hash);
    const box = d.getElementById("case-search");
    box.value = "CASE-000";
    box.dispatchEvent(new w.Event("input"));
    await sleep(500);
    log("search", info() + " " + ids().join(","));
    rows()[0].click();
    const detail = d.querySelector("tr.case-detail");
    log("open", d.querySelectorAll("tr.case-detail").length + " "
        + (detail !== null && detail.textContent.includes("Final response")) + " "
        + w.location.hash);
    rows()[0].click();
    log("closed", d.querySelectorAll("tr.case-detail").length);
    d.querySelector('th[data-sort="ms"]').click();
    d.querySelector('th[data-sort="ms"]').click();
    log("sorted", rows().map((tr) => tr.dataset.index).join(","));
    d.getElementById("case-outcome").value = "passed";
    d.getElementById("case-outcome").dispatchEvent(new w.Event("change"));
    log("outcome", info());
    d.querySelector('nav a[href="#latency"]').click();
    await sleep(200);
    log("anchor", info());
    d.querySelector("#baseline details a").click();
    await sleep(200);
    log("flip", info() + " " + ids().join(","));
  } catch (error) {
    log("error", error);
  }
  document.getElementById("log").textContent = lines.join("\\n");
  document.body.dataset.done = "1";
});
</script></body></html>
"""


@browser
def test_browser_interaction(tmp_path: Path, big_page: tuple[Path, list[CaseResult]]) -> None:
    """Paging, typing, opening a row, sorting and in-page links, driven from a frame."""
    page, results = big_page
    driver = page.parent / "driver.html"
    driver.write_text(INTERACTION_DRIVER, encoding="utf-8")
    out = chromium(tmp_path, driver.as_uri(), "--allow-file-access-from-files", "--dump-dom")
    assert 'data-done="1"' in out, out
    text = html.unescape(out.split('<pre id="log">')[1].split("</pre>")[0])
    log = dict(line.split("=", 1) for line in text.splitlines())
    assert "error" not in log, log["error"]
    assert log["next"] == f"101–200 of {N_BIG} {shown(results)[100].case_id} #page=2"
    matching = shown(results[:100])  # the search ignores case; failures first
    ids = ",".join(r.case_id for r in matching)
    assert log["search"] == f"1–100 of 100 (filtered from {N_BIG}) " + ids
    assert log["open"] == f"1 true #q=CASE-000&open={quote(matching[0].nodeid, safe='')}"
    assert log["closed"] == "0"
    by_time = sorted(range(100), key=lambda i: (-round(results[i].duration_ms, 1), i))
    assert log["sorted"] == ",".join(map(str, by_time))
    passed = sum(r.outcome == "passed" for r in results[:100])
    assert 0 < passed < 100
    assert log["outcome"] == f"1–{passed} of {passed} (filtered from {N_BIG})"
    assert log["anchor"] == log["outcome"]  # a section link keeps the filters
    assert log["flip"] == f"1–1 of 1 (filtered from {N_BIG}) case-00003"


@browser
def test_browser_screenshots(tmp_path: Path, big_page: tuple[Path, list[CaseResult]]) -> None:
    """The summary at the top, and a filtered case list with an open transcript."""
    page, _ = big_page
    shots = {
        tmp_path / "html-report.png": ("", 2000),
        tmp_path / "html-report-cases.png": ("#q=case-0000&open=evals/toolforge.jsonl::case-00001"
                                             "&open=evals/toolforge.jsonl::case-00007", 3600),
    }  # fmt: skip
    for shot, (fragment, height) in shots.items():
        url = page.as_uri() + fragment
        chromium(tmp_path, url, f"--screenshot={shot}", f"--window-size=1280,{height}")
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
        print(f"screenshot: {shot}")


def test_a_sessions_gates_and_a_suites_own_matrix_are_shown(
    small: tuple[dict[str, Any], list[CaseResult]],
) -> None:
    report, results = small
    gates = {
        "passed": False,
        "results": [
            {"gate": {"name": "golden.pass_rate>=0.9", "suite": "golden", "metric": "pass_rate",
                      "op": ">=", "threshold": 0.9, "source": "cli"},
             "value": 0.75, "passed": False, "message": "0.75 < 0.9"},
            {"gate": {"name": "integration.controls_with_integration==0", "suite": "integration",
                      "metric": "controls_with_integration", "op": "==", "threshold": 0.0,
                      "source": "header"},
             "value": 0.0, "passed": True, "message": "ok"},
        ],
    }  # fmt: skip
    suites = json.loads(json.dumps(report["suites"]))
    suites["when2call"]["labels"] = ["direct", "tool_call", "request_for_info", "cannot_answer"]
    suites["when2call"]["confusion_matrix"] = [
        [0, 0, 0, 0],
        [1, 7, 1, 1],
        [0, 2, 6, 2],
        [0, 5, 1, 4],
    ]
    page = render_html({**report, "gates": gates, "suites": suites}, results)
    assert 'id="no-gates"' not in page
    assert '<p class="gate-summary failed">1/2 gates passed</p>' in page
    assert "integration.controls_with_integration" in page
    assert '<section id="confusion-matrix">' in page and "malformed" not in page
    assert html.escape("request_for_info") in page


GATES_DRIVER = """<!DOCTYPE html><html><body><pre id="log"></pre>
<iframe id="report" src="gates.html" width="1280" height="900"></iframe>
<script>
document.getElementById("report").addEventListener("load", () => {
  const d = document.getElementById("report").contentWindow.document;
  const rows = Array.from(d.querySelectorAll("#gates tr.gate-row"));
  document.getElementById("log").textContent = JSON.stringify({
    ready: d.body.dataset.ready || null,
    summary: d.querySelector("#gates .gate-summary").innerText,
    head: Array.from(d.querySelectorAll("#gates th"), (th) => th.innerText),
    rows: rows.map((tr) => Array.from(tr.cells, (td) => td.innerText.trim())),
    shown: rows.map((tr) => tr.getBoundingClientRect().height > 0),
  });
  document.body.dataset.done = "1";
});
</script></body></html>
"""


@browser
def test_browser_gates(tmp_path: Path, small: tuple[dict[str, Any], list[CaseResult]]) -> None:
    """The Gates section of a session's report shows each gate's name, numbers and status."""
    report, results = small
    (tmp_path / "gates.html").write_text(
        render_html(gated_report(report), results), encoding="utf-8"
    )
    driver = tmp_path / "driver.html"
    driver.write_text(GATES_DRIVER, encoding="utf-8")
    out = chromium(tmp_path, driver.as_uri(), "--allow-file-access-from-files", "--dump-dom")
    assert 'data-done="1"' in out, out[:2000]
    shown = json.loads(html.unescape(out.split('<pre id="log">')[1].split("</pre>")[0]))
    assert shown["ready"] == "1"
    assert shown["summary"] == "2/5 gates passed"
    assert shown["head"] == ["gate", "metric", "op", "threshold", "value", "status", "message"]
    assert [row[:6] for row in shown["rows"]] == GATE_ROWS
    assert all(row[6] for row in shown["rows"])  # every gate says why
    assert shown["shown"] == [True] * len(GATE_ROWS)


# -- what a reader looks for first -----------------------------------------------------------

SYSTEM = "You are the travel desk's assistant. " * 60  # a long system prompt, in every case
TOOL_SCHEMA = json.dumps({"name": "get_weather", "parameters": {"city": "string " * 300}})


def rich_results(n: int) -> list[CaseResult]:
    """``n`` agent cases as a real run keeps them: the same system prompt and tool schema in
    each, a tool call with one of a few results, a transcript, an expectation."""
    out = []
    for i in range(n):
        result = json.dumps({"city": f"city-{i % 10}", "forecast": ["cloudy"] * 80})
        out.append(
            CaseResult(
                case_id=f"trip-{i:05d}", suite="golden", file="evals/trips.golden.json",
                line=i + 1, nodeid=f"evals/trips.golden.json::trip-{i:05d}",
                outcome="passed" if i % 4 else "failed", passed=bool(i % 4),
                error=None if i % 4 else f"exact_match: expected 'city-{i}', got 'cloudy'",
                response=f"The forecast for city-{i % 10} is cloudy all week ({i}).",
                duration_ms=12.5, scores={"exact_match": float(bool(i % 4))},
                input=[{"role": "system", "content": SYSTEM},
                       {"role": "user", "content": f"Weather for trip {i}?"}],
                expected={"expected_output": f"city-{i}", "tools_called": ["get_weather"]},
                transcript=[{"role": "assistant", "tool_calls": [
                                {"name": "get_weather", "arguments": {"city": f"city-{i % 10}"}}]},
                            {"role": "tool", "name": "get_weather", "content": result}],
                tool_calls=[ToolCallRecord(name="get_weather", params={"city": f"city-{i % 10}"},
                                           result=result, source="fixture")],
                details={"tools": TOOL_SCHEMA},
                usage=Usage(prompt_tokens=900, completion_tokens=40, total_tokens=940),
            )
        )  # fmt: skip
    return out


N_HUGE = 20_000


@pytest.fixture(scope="module")
def huge_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 20,000-case page of agent cases; each repeated text is stored once."""
    path = tmp_path_factory.mktemp("huge") / "report.html"
    results = rich_results(N_HUGE)
    path.write_text(render_html(make_report(results), results), encoding="utf-8")
    return path


def test_a_20000_case_page_stays_under_20_mb(huge_page: Path) -> None:
    size = huge_page.stat().st_size
    print(f"report.html for {N_HUGE} agent cases: {size} bytes ({size / 2**20:.2f} MiB)")
    assert size < 20 * 2**20
    block = json.loads(data_block(huge_page.read_text(encoding="utf-8")))
    prompts = [i for i, text in enumerate(block["strings"]) if text.startswith(SYSTEM[:200])]
    assert len(prompts) == 1  # the system prompt once, not 20,000 times
    assert all(case["input"][0]["content"] == prompts[0] for case in block["cases"])


@browser
def test_browser_a_huge_page_renders_a_detail_when_opened(tmp_path: Path, huge_page: Path) -> None:
    out = dom(tmp_path, huge_page)
    assert pager(out) == f"1–100 of {N_HUGE}" and '<tr class="case-detail"' not in out
    opened = huge_page.as_uri() + "#open=evals/trips.golden.json::trip-00005"
    out = without_data(chromium(tmp_path, opened, "--dump-dom"))
    (detail,) = re.findall(r'<tr class="case-detail">.*?</tr>', out, re.DOTALL)
    text = html.unescape(detail)
    assert SYSTEM[:200] in text  # the shared text is put back
    assert '"forecast": [' in text and "Weather for trip 5?" in text


OTHER = "evals/other.golden.json"


def header_page() -> tuple[dict[str, Any], list[CaseResult]]:
    """Two same-named cases from two files, an expected miss, a failure, passes."""
    base = make_results(10)
    results = [
        base[0].model_copy(update={"outcome": "passed", "passed": True, "error": None}),
        base[0].model_copy(
            update={"file": OTHER, "nodeid": f"{OTHER}::case-00000", "outcome": "passed",
                    "passed": True, "error": None}
        ),
        base[3].model_copy(update={"suite": "golden", "outcome": "failed", "passed": False,
                                   "xfailed": True, "error": "a known miss"}),
        base[4].model_copy(update={"suite": "golden", "outcome": "failed", "passed": False,
                                   "error": "a real miss"}),
    ]  # fmt: skip
    report = make_report(results)
    report["runners"] = {"abc": {"type": "openai", "model": "gpt-4o-mini"}}
    report["totals"]["cost_usd"] = 0.0123
    return report, results


def test_the_header_shows_the_run_and_each_suites_headline() -> None:
    report, results = header_page()
    failed = RunVerdict(status="failed", exit_status=1, reasons=["1 case(s) failed"])
    facts = RunFacts(
        started="2026-11-26T11:24:05+00:00", duration_s=83.4, runner="openai", verdict=failed
    )
    page = without_data(render_html(report, results, facts=facts))
    shown_facts = dict(re.findall(r'data-fact="([^"]+)"><dt>[^<]*</dt><dd[^>]*>([^<]*)</dd>', page))
    assert shown_facts == {
        "runner": "openai: gpt-4o-mini", "date": "2026-11-26 11:24 UTC",
        "plugin": report["plugin_version"], "tokens": "600", "cost": "$0.0123",
        "duration": "1 min 23 s", "verdict": "failed",
    }  # fmt: skip
    row = re.search(r'<tr class="headline-row" data-suite="golden">(.*?)</tr>', page)
    assert row is not None  # 2 of 4 judged passed: 50.0% with its Wilson interval
    assert '<span class="headline">pass rate 50.0% [15.0-85.0]</span>' in row.group(1)
    # with no prices there is no cost; the verdict is the writer's record, as it says
    del report["totals"]["cost_usd"]
    passed = RunVerdict(status="passed", exit_status=0, reasons=[])
    page = render_html(report, results, facts=facts.model_copy(update={"verdict": passed}))
    assert 'data-fact="cost"' not in page
    assert '<dd class="verdict passed">passed</dd>' in page
    # a page written with no verdict (a test's, a caller's) claims none
    assert 'data-fact="verdict"' not in render_html(report, results)


@browser
def test_browser_expected_misses_files_and_failures_first(tmp_path: Path) -> None:
    report, results = header_page()
    path = tmp_path / "report.html"
    path.write_text(render_html(report, results), encoding="utf-8")
    out = dom(tmp_path, path)
    rows = re.findall(r'<tr class="case-row".*?</tr>', out, re.DOTALL)
    cells = [re.findall(r"<td[^>]*>(?:<span[^>]*>)?([^<]*)", row)[1:3] for row in rows]
    assert cells == [
        ["case-00004", "evals/toolforge.jsonl"],  # the failure first
        ["case-00003", "evals/golden.jsonl"],  # the expected miss after it
        ["case-00000", "evals/golden.jsonl"],  # two cases of one name, told apart by file
        ["case-00000", "evals/other.golden.json"],
    ]
    badges = [re.findall(r'<span class="badge ([^"]+)">([^<]*)', row)[0] for row in rows]
    assert badges == [("failed", "failed"), ("xfailed", "expected miss"),
                      ("passed", "passed"), ("passed", "passed")]  # fmt: skip
