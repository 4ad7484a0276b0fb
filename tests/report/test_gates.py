"""Gates and baselines: parsing, evaluation, baseline files, flip table, McNemar, markdown."""

from __future__ import annotations

import json
from fractions import Fraction
from math import comb
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.core.errors import ConfigError, FingerprintMismatch, LLMEvalError
from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.report.baseline.diff import diff, mcnemar_exact_p
from pytest_llmeval.report.baseline.file import (
    BASELINE_VERSION,
    Baseline,
    BaselineCase,
    BaselineError,
    load_baseline,
    write_baseline,
)
from pytest_llmeval.report.baseline.render import diff_markdown
from pytest_llmeval.report.gates import (
    evaluate_gates,
    flatten_metrics,
    gates_section,
    lookup_metric,
    parse_gate,
    parse_gate_spec,
)
from pytest_llmeval.rundir.baseline_diff import BaselineDiff

RUNNER = "f" * 64
DATASET = "d" * 64


def sample_report(**overrides: Any) -> dict[str, Any]:
    report: dict[str, Any] = {
        "report_version": "1.0.0",
        "runner_fingerprint": RUNNER,
        "dataset_sha256": DATASET,
        "totals": {
            "total": 20,
            "passed": 18,
            "failed": 1,
            "errors": 1,
            "skipped": 0,
            "pass_rate": 0.9,
        },
        "suites": {
            "golden": {
                "total": 10,
                "passed": 9,
                "failed": 1,
                "errors": 0,
                "skipped": 0,
                "pass_rate": 0.9,
                "mean_scores": {"exact_match": 0.8, "regex": 1.0},
                "categories": {
                    "weather": {"total": 3, "passed": 3, "pass_rate": 1.0},
                    "v1.2": {"total": 2, "passed": 1, "pass_rate": 0.5},
                    "empty": {"total": 0, "passed": 0, "pass_rate": None},
                },
            },
            "toolforge": {
                "total": 10,
                "passed": 9,
                "failed": 0,
                "errors": 1,
                "skipped": 0,
                "pass_rate": 0.9,
                "assertions_run": 27,
            },
            "gaia": {"levels": {"level1": {"accuracy": 0.35}}, "ok": True, "label": "x"},
        },
    }
    report.update(overrides)
    return report


def case(
    case_id: str,
    outcome: str = "passed",
    *,
    fingerprint: str | None = None,
    file: str = "evals/a.golden.json",
    nodeid: str | None = None,
    suite: str = "golden",
) -> CaseResult:
    return CaseResult(
        case_id=case_id,
        suite=suite,
        file=file,
        line=1,
        nodeid=nodeid or f"{file}::{case_id}",
        outcome=outcome,  # type: ignore[arg-type]
        passed=outcome == "passed",
        case_fingerprint=fingerprint if fingerprint is not None else f"fp-{case_id}",
        runner_fingerprint=RUNNER,
        scores={"exact_match": 1.0 if outcome == "passed" else 0.0},
        response="long text that a baseline does not keep",
    )


def baseline_of(results: list[CaseResult], report: dict[str, Any] | None = None) -> Baseline:
    return Baseline(
        source="base.json",
        run_id="run-1",
        report=report or sample_report(),
        results=[BaselineCase.of(r) for r in results],
    )


def diff_of(
    report: dict[str, Any], results: list[CaseResult], baseline: Baseline, **options: Any
) -> BaselineDiff:
    """The diff of this run's results, made baseline cases at the edge as the session does."""
    return diff(report, [BaselineCase.of(r) for r in results], baseline, **options)


# -- parse_gate ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "suite", "metric", "op", "threshold", "name"),
    [
        ("golden.pass_rate>=0.9", "golden", "pass_rate", ">=", 0.9, "golden.pass_rate>=0.9"),
        ("toolforge.failed==0", "toolforge", "failed", "==", 0.0, "toolforge.failed==0"),
        (
            "gaia.levels.level1.accuracy>0.3",
            "gaia",
            "levels.level1.accuracy",
            ">",
            0.3,
            "gaia.levels.level1.accuracy>0.3",
        ),
        (
            "  golden.mean_scores.exact_match <= 1e-3 ",
            "golden",
            "mean_scores.exact_match",
            "<=",
            0.001,
            "golden.mean_scores.exact_match<=0.001",
        ),
        ("*.pass_rate < 0.95", "*", "pass_rate", "<", 0.95, "*.pass_rate<0.95"),
        (
            "golden.categories.weather.pass_rate>=0.90",
            "golden",
            "categories.weather.pass_rate",
            ">=",
            0.9,
            "golden.categories.weather.pass_rate>=0.9",
        ),
        ("golden.failed <= -2", "golden", "failed", "<=", -2.0, "golden.failed<=-2"),
    ],
)
def test_parse_gate_good(
    text: str, suite: str, metric: str, op: str, threshold: float, name: str
) -> None:
    gate = parse_gate(text)
    assert (gate.suite, gate.metric, gate.op, gate.threshold) == (suite, metric, op, threshold)
    assert gate.name == name
    assert gate.source == "cli"
    assert parse_gate(gate.name) == gate


@pytest.mark.parametrize(
    "text",
    [
        "",
        "pass_rate>=0.9",  # no suite
        "golden.pass_rate",  # no op
        "golden.pass_rate>=",  # no value
        "golden.pass_rate=>0.9",
        "golden.pass_rate!=0.9",
        "golden.pass_rate>=abc",
        "golden.pass_rate>=nan",
        "golden.pass_rate>=inf",
        "golden..pass_rate>=0.9",
        ".pass_rate>=0.9",
        "golden.>=0.9",
        "golden.pass_rate>=0.9 0.8",
    ],
)
def test_parse_gate_bad(text: str) -> None:
    with pytest.raises(ValueError, match=r"SUITE\.METRIC OP VALUE|finite"):
        parse_gate(text)


def test_parse_gate_error_names_the_form() -> None:
    with pytest.raises(ValueError) as info:
        parse_gate("golden.pass_rate ~ 0.9")
    assert "SUITE.METRIC OP VALUE" in str(info.value)
    assert "golden.pass_rate>=0.9" in str(info.value)


def test_parse_gate_spec_forms() -> None:
    assert parse_gate_spec("golden.pass_rate>=0.9") == [
        parse_gate("golden.pass_rate>=0.9", source="manifest")
    ]
    structured = parse_gate_spec({"metric": "golden.pass_rate", "op": ">=", "value": 0.9})
    assert [g.name for g in structured] == ["golden.pass_rate>=0.9"]
    assert structured[0].source == "manifest"
    as_int = parse_gate_spec({"metric": "golden.failed", "op": "==", "value": 0})
    assert as_int[0].name == "golden.failed==0"
    mapping = parse_gate_spec(
        {"golden.pass_rate": ">= 0.9", "toolforge.failed": "==0"}, source="header"
    )
    assert [g.name for g in mapping] == ["golden.pass_rate>=0.9", "toolforge.failed==0"]
    assert {g.source for g in mapping} == {"header"}
    listed = parse_gate_spec(["golden.pass_rate>=0.9", {"toolforge.failed": "== 0"}])
    assert [g.name for g in listed] == ["golden.pass_rate>=0.9", "toolforge.failed==0"]


def test_parse_gate_spec_default_suite() -> None:
    header = parse_gate_spec(
        {"controls_with_integration": "== 0", "coverage.grounded": ">= 0.97"},
        source="header",
        default_suite="integration",
    )
    assert [(g.suite, g.metric, g.name) for g in header] == [
        ("integration", "controls_with_integration", "integration.controls_with_integration==0"),
        ("integration", "coverage.grounded", "integration.coverage.grounded>=0.97"),
    ]
    qualified = parse_gate_spec(
        ["golden.pass_rate>=0.9", "*.failed==0", "categories.x.pass_rate>0.5"],
        default_suite="golden",
    )
    assert [(g.suite, g.metric) for g in qualified] == [
        ("golden", "pass_rate"),
        ("*", "failed"),
        ("golden", "categories.x.pass_rate"),
    ]


@pytest.mark.parametrize(
    "spec",
    [
        42,
        None,
        {"metric": "golden.pass_rate", "op": ">="},
        {"metric": "golden.pass_rate", "op": "~", "value": 0.9},
        {"metric": "golden.pass_rate", "op": ">=", "value": True},
        {"metric": "golden.pass_rate", "op": ">=", "value": "high"},
        {"metric": "golden.pass_rate", "op": ">=", "value": "0.9"},
        {"metric": "golden.pass_rate", "op": ">=", "value": 0.9, "extra": 1},
        {"golden.pass_rate": 0.9},
        {"golden.pass_rate": "about 0.9"},
        ["golden.pass_rate>=0.9", "oops"],
    ],
)
def test_parse_gate_spec_bad(spec: object) -> None:
    with pytest.raises(ValueError):
        parse_gate_spec(spec)


# -- evaluate_gates --------------------------------------------------------------------------


def test_lookup_and_flatten() -> None:
    golden = sample_report()["suites"]["golden"]
    assert lookup_metric(golden, "mean_scores.exact_match") == 0.8
    assert lookup_metric(golden, "categories.v1.2.pass_rate") == 0.5
    assert lookup_metric(golden, "categories.nope.pass_rate") is None
    flat = flatten_metrics(golden)
    assert list(flat) == sorted(flat)
    assert flat["categories.v1.2.pass_rate"] == 0.5
    assert "categories.empty.pass_rate" not in flat  # null is not a metric
    assert "ok" not in flatten_metrics(sample_report()["suites"]["gaia"])  # nor a bool


def test_evaluate_gates() -> None:
    report = sample_report()
    gates = [
        parse_gate("golden.pass_rate>=0.9"),
        parse_gate("toolforge.errors==0"),
        parse_gate("gaia.levels.level1.accuracy>0.3"),
        parse_gate("golden.mean_scores.exact_match<0.8"),
        parse_gate("golden.categories.weather.pass_rate==1"),
        parse_gate("golden.categories.v1.2.pass_rate<=0.5"),
        parse_gate("*.pass_rate>=0.95"),
        parse_gate("*.failed<=1"),
    ]
    results = evaluate_gates(gates, report)
    assert [r.gate.name for r in results] == sorted(g.name for g in gates)
    by_name = {r.gate.name: r for r in results}
    assert by_name["golden.pass_rate>=0.9"].passed
    assert by_name["golden.pass_rate>=0.9"].value == 0.9
    assert by_name["golden.pass_rate>=0.9"].message == "golden.pass_rate = 0.9 >= 0.9"
    assert not by_name["toolforge.errors==0"].passed
    assert by_name["toolforge.errors==0"].message == "toolforge.errors = 1, needs == 0"
    assert by_name["gaia.levels.level1.accuracy>0.3"].passed
    assert not by_name["golden.mean_scores.exact_match<0.8"].passed  # strict
    assert by_name["golden.categories.weather.pass_rate==1"].passed
    assert by_name["golden.categories.v1.2.pass_rate<=0.5"].passed
    assert not by_name["*.pass_rate>=0.95"].passed
    assert by_name["*.failed<=1"].passed


def test_equality_tolerance() -> None:
    report = {"suites": {"s": {"x": 0.1 + 0.2, "y": 0.3 + 2e-12}}, "totals": {}}
    results = evaluate_gates(
        [
            parse_gate("s.x==0.3"),
            parse_gate("s.x>0.3"),
            parse_gate("s.x<=0.3"),
            parse_gate("s.y==0.3"),
        ],
        report,
    )
    assert {r.gate.name: r.passed for r in results} == {
        "s.x==0.3": True,
        "s.x>0.3": False,
        "s.x<=0.3": True,
        "s.y==0.3": False,
    }


def test_missing_metric_lists_available() -> None:
    [result] = evaluate_gates([parse_gate("toolforge.pass_rat>=0.9")], sample_report())
    assert not result.passed
    assert result.value is None
    assert "no such metric" in result.message
    assert "assertions_run, errors, failed, pass_rate, passed, skipped, total" in result.message
    [nested] = evaluate_gates([parse_gate("golden.bleu>0")], sample_report())
    listed = nested.message.split("metrics of 'golden': ")[1].split(", ")
    assert listed[:6] == ["errors", "failed", "pass_rate", "passed", "skipped", "total"]
    assert "categories.v1.2.pass_rate" in listed


def test_not_a_number_and_missing_suite() -> None:
    results = evaluate_gates(
        [
            parse_gate("golden.categories.empty.pass_rate>=0.5"),
            parse_gate("gaia.ok==1"),
            parse_gate("gaia.label==1"),
            parse_gate("when2call.pass_rate>=0.5"),
        ],
        sample_report(),
    )
    by_name = {r.gate.name: r for r in results}
    assert all(not r.passed and r.value is None for r in results)
    assert all(r.status == "failed" for r in results)
    null = by_name["golden.categories.empty.pass_rate>=0.5"].message
    assert null.startswith("golden.categories.empty.pass_rate >= 0.5: n/a: nothing to judge")
    assert "not a number (a boolean)" in by_name["gaia.ok==1"].message
    assert "levels.level1.accuracy" in by_name["gaia.label==1"].message
    message = by_name["when2call.pass_rate>=0.5"].message
    assert "suite 'when2call' has no results" in message
    assert "gaia, golden, toolforge" in message


def test_duplicate_gates_keep_one() -> None:
    gates = [
        parse_gate("golden.pass_rate>=0.9", source="header"),
        parse_gate("golden.pass_rate >= 0.90", source="cli"),
    ]
    [result] = evaluate_gates(gates, sample_report())
    assert result.gate.source == "cli"


def test_gates_section_shape() -> None:
    results = evaluate_gates(
        [parse_gate("*.pass_rate>=0.5"), parse_gate("golden.failed==0")], sample_report()
    )
    section = gates_section(results)
    assert section["passed"] is False
    assert [r["gate"]["name"] for r in section["results"]] == [
        "*.pass_rate>=0.5",
        "golden.failed==0",
    ]
    json.dumps(section)


# -- baseline files --------------------------------------------------------------------------


def write_run_dir(path: Path, report: dict[str, Any], results: list[CaseResult]) -> Path:
    path.mkdir(parents=True)
    (path / "report.json").write_text(json.dumps(report))
    (path / "results.jsonl").write_text(
        "".join(json.dumps(r.model_dump(mode="json")) + "\n" for r in results)
    )
    (path / "manifest.json").write_text(json.dumps({"run_id": "run-7"}))
    return path


def test_round_trip_baseline_file(tmp_path: Path) -> None:
    results = [case("b", "failed"), case("a"), case("c", "error")]
    target = tmp_path / "baseline.json"
    write_baseline(target, sample_report(), map(BaselineCase.of, results), run_id="run-3")
    body = json.loads(target.read_text())
    assert body["baseline_version"] == BASELINE_VERSION
    assert [r["nodeid"] for r in body["results"]] == sorted(r.nodeid for r in results)
    assert "response" not in body["results"][0]
    assert target.read_text() == json.dumps(body, indent=2, sort_keys=True) + "\n"
    assert [p.name for p in tmp_path.iterdir()] == ["baseline.json"]  # no temp file left
    loaded = load_baseline(target)
    assert loaded.run_id == "run-3"
    assert loaded.report == sample_report()
    assert [c.case_id for c in loaded.results] == ["a", "b", "c"]
    assert loaded.results[2].outcome == "error"
    write_baseline(tmp_path / "again.json", loaded.report, loaded.results, run_id="run-3")
    assert (tmp_path / "again.json").read_text() == target.read_text()


def test_load_run_dir(tmp_path: Path) -> None:
    results = [case("a"), case("b", "skipped")]
    run = write_run_dir(tmp_path / "run", sample_report(), results)
    loaded = load_baseline(run)
    assert loaded.run_id == "run-7"
    assert loaded.source == str(run)
    assert [c.outcome for c in loaded.results] == ["passed", "skipped"]
    assert load_baseline(run / "report.json").results == loaded.results


@pytest.mark.parametrize(
    ("setup", "match"),
    [
        (lambda p: None, "no such file or directory"),
        (lambda p: p.write_text("{not json"), "not JSON"),
        (lambda p: p.write_text("[1, 2]"), "expected a JSON object"),
        (lambda p: p.write_text('{"suites": {}}'), "not a baseline file"),
        (
            lambda p: p.write_text('{"baseline_version": 9, "report": {}, "results": []}'),
            "not supported",
        ),
        (lambda p: p.write_text('{"baseline_version": 1, "report": [], "results": []}'), "report"),
        (
            lambda p: p.write_text(
                '{"baseline_version": 1, "report": {}, "results": [{"case_id": "a"}]}'
            ),
            r"results\[0\]: suite: Field required",
        ),
    ],
)
def test_load_bad_baseline_file(tmp_path: Path, setup: Any, match: str) -> None:
    target = tmp_path / "baseline.json"
    setup(target)
    with pytest.raises(BaselineError, match=match) as info:
        load_baseline(target)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, ConfigError)


def test_load_bad_run_dir(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    with pytest.raises(BaselineError, match=r"no report\.json"):
        load_baseline(run)
    (run / "report.json").write_text(json.dumps(sample_report()))
    with pytest.raises(BaselineError, match=r"no results\.jsonl"):
        load_baseline(run)
    (run / "results.jsonl").write_text(
        json.dumps(case("a").model_dump(mode="json")) + "\n\n{oops\n"
    )
    with pytest.raises(BaselineError, match=r"results\.jsonl:3: not JSON"):
        load_baseline(run)


def test_write_baseline_to_a_directory(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match="is a directory"):
        write_baseline(tmp_path, sample_report(), [])


# -- diff ------------------------------------------------------------------------------------


def test_diff_flip_table() -> None:
    before = [
        case("stay-pass"),
        case("stay-fail", "failed"),
        case("regress"),
        case("to-error"),
        case("fixed", "failed"),
        case("error-fixed", "error"),
        case("fail-to-error", "failed"),
        case("edited"),
        case("gone"),
        case("now-skipped"),
        case("was-skipped", "skipped"),
        case("both-skipped", "skipped"),
        case("moved", nodeid="evals/old.llmeval.yaml::moved"),
    ]
    after = [
        case("stay-pass"),
        case("stay-fail", "failed"),
        case("regress", "failed"),
        case("to-error", "error"),
        case("fixed"),
        case("error-fixed"),
        case("fail-to-error", "error"),
        case("edited", "failed", fingerprint="fp-new"),
        case("added", "failed"),
        case("now-skipped", "skipped"),
        case("was-skipped", "failed"),
        case("both-skipped", "skipped"),
        case("moved", "failed", nodeid="evals/new.llmeval.yaml::moved"),
    ]
    result = diff_of(sample_report(), after, baseline_of(before))
    f = "evals/a.golden.json::"
    assert result.flips == {
        "pass->fail": [f + "regress", f + "to-error", "evals/new.llmeval.yaml::moved"],
        "fail->pass": [f + "error-fixed", f + "fixed"],
        "new": [f + "added"],
        "removed": [f + "gone"],
        "changed": [f + "edited"],
        "skipped": [f + "now-skipped", f + "was-skipped"],
    }
    assert (result.pass_to_fail, result.fail_to_pass) == (3, 2)
    assert result.compared == 8  # stay x2, regress, to-error, fixed, error-fixed, f->e, moved
    assert result.mcnemar_p == float(mcnemar_exact_p(3, 2)) == 1.0
    assert result.regressed
    kinds = {c.nodeid: (c.kind, c.before, c.after) for c in result.cases}
    assert kinds[f + "to-error"] == ("pass->fail", "passed", "error")
    assert kinds[f + "added"] == ("new", None, "failed")
    assert kinds[f + "gone"] == ("removed", "passed", None)
    assert [c.kind for c in result.cases] == sorted(
        (c.kind for c in result.cases),
        key=["pass->fail", "fail->pass", "new", "removed", "changed", "skipped"].index,
    )


def test_diff_improvement_only_is_not_a_regression() -> None:
    result = diff_of(
        sample_report(), [case("a"), case("b")], baseline_of([case("a"), case("b", "failed")])
    )
    assert result.flips["fail->pass"] == ["evals/a.golden.json::b"]
    assert not result.regressed
    assert result.mcnemar_p == 1.0


def test_fallback_alignment_is_unambiguous_only() -> None:
    # Two manifests over the same data file: (file, case_id) is ambiguous, so no fallback.
    before = [
        case("x", nodeid="evals/m1.llmeval.yaml::x", file="evals/data.json"),
        case("x", nodeid="evals/m2.llmeval.yaml::x", file="evals/data.json"),
    ]
    after = [
        case("x", "failed", nodeid="evals/m3.llmeval.yaml::x", file="evals/data.json"),
        case("x", "failed", nodeid="evals/m4.llmeval.yaml::x", file="evals/data.json"),
    ]
    result = diff_of(sample_report(), after, baseline_of(before))
    assert result.flips["new"] == ["evals/m3.llmeval.yaml::x", "evals/m4.llmeval.yaml::x"]
    assert result.flips["removed"] == ["evals/m1.llmeval.yaml::x", "evals/m2.llmeval.yaml::x"]
    assert not result.regressed


def test_unknown_case_fingerprint_is_not_a_change() -> None:
    result = diff_of(
        sample_report(), [case("a", "failed", fingerprint="")], baseline_of([case("a")])
    )
    assert result.flips["pass->fail"] == ["evals/a.golden.json::a"]
    assert result.flips["changed"] == []


def test_metric_deltas() -> None:
    old = sample_report()
    new = sample_report()
    new["suites"]["golden"]["pass_rate"] = 0.8
    new["suites"]["golden"]["passed"] = 8
    new["suites"]["golden"]["mean_scores"]["bleu"] = 0.4  # only in the current run
    new["totals"]["pass_rate"] = 0.85
    del new["suites"]["toolforge"]
    result = diff_of(new, [], baseline_of([], report=old))
    golden = result.metric_deltas["golden"]
    assert golden["pass_rate"].model_dump() == {"baseline": 0.9, "current": 0.8, "delta": -0.1}
    assert golden["passed"].delta == -1 and isinstance(golden["passed"].delta, int)
    assert golden["categories.v1.2.pass_rate"].delta == 0
    assert "mean_scores.bleu" not in golden
    assert result.metric_deltas["*"]["pass_rate"].delta == -0.05
    assert "toolforge" not in result.metric_deltas
    assert list(result.metric_deltas) == ["*", "gaia", "golden"]


def gate_report(**values: float) -> dict[str, Any]:
    report = sample_report()
    for key, value in values.items():
        report["suites"]["golden"][key] = value
    gates = [parse_gate("golden.pass_rate>=0.85"), parse_gate("golden.failed==1")]
    report["gates"] = gates_section(evaluate_gates(gates, report))
    return report


def test_gate_changes_and_gate_regression() -> None:
    old = gate_report()
    new = gate_report(pass_rate=0.8)
    result = diff_of(new, [case("a")], baseline_of([case("a")], report=old))
    assert result.flips["pass->fail"] == []
    assert result.regressed
    by_name = {g.name: g for g in result.gate_changes}
    assert list(by_name) == ["golden.failed==1", "golden.pass_rate>=0.85"]
    change = by_name["golden.pass_rate>=0.85"]
    assert (change.baseline_passed, change.current_passed) == (True, False)
    assert (change.baseline_value, change.current_value, change.delta) == (0.9, 0.8, -0.1)
    assert by_name["golden.failed==1"].current_passed
    # A gate that was already failing is no new regression; gates only on one side are ignored.
    assert not diff_of(new, [], baseline_of([], report=new)).regressed
    assert diff_of(new, [], baseline_of([], report=sample_report())).gate_changes == []


# -- McNemar ---------------------------------------------------------------------------------


def test_mcnemar_hand_computed() -> None:
    assert mcnemar_exact_p(0, 0) == 1
    assert mcnemar_exact_p(5, 0) == Fraction(2, 32) == Fraction(1, 16)
    assert float(mcnemar_exact_p(5, 0)) == 0.0625
    assert mcnemar_exact_p(0, 5) == Fraction(1, 16)
    assert mcnemar_exact_p(3, 1) == Fraction(2 * (1 + 4), 16) == Fraction(5, 8)
    assert mcnemar_exact_p(1, 1) == 1  # 2 * 3/4 capped at 1
    tail = comb(12, 0) + comb(12, 1) + comb(12, 2)  # 1 + 12 + 66 = 79
    assert mcnemar_exact_p(10, 2) == Fraction(2 * tail, 4096) == Fraction(79, 2048)
    assert mcnemar_exact_p(2, 10) == mcnemar_exact_p(10, 2)
    assert float(mcnemar_exact_p(10, 2)) == pytest.approx(0.0385742, abs=1e-7)
    with pytest.raises(ValueError):
        mcnemar_exact_p(-1, 2)


def test_mcnemar_in_diff() -> None:
    before = [case(f"r{i}") for i in range(10)] + [case(f"i{i}", "failed") for i in range(2)]
    after = [case(f"r{i}", "failed") for i in range(10)] + [case(f"i{i}") for i in range(2)]
    result = diff_of(sample_report(), after, baseline_of(before))
    assert (result.pass_to_fail, result.fail_to_pass) == (10, 2)
    assert result.mcnemar_p == 79 / 2048


# -- fingerprints ----------------------------------------------------------------------------


def test_fingerprint_mismatch_refused() -> None:
    # The runner and the scorers (the plugin's version) judge every case: a change refuses.
    current = sample_report(runner_fingerprint="a" * 64, plugin_version="9.9.9")
    with pytest.raises(FingerprintMismatch) as info:
        diff_of(
            current,
            [case("a")],
            baseline_of([case("a")], report=sample_report(plugin_version="0.1.0")),
        )
    message = str(info.value)
    assert isinstance(info.value, LLMEvalError)
    assert "runner_fingerprint ffffffffffff (baseline) vs aaaaaaaaaaaa (this run)" in message
    assert "plugin_version 0.1.0 (baseline) vs 9.9.9 (this run)" in message
    assert "--llmeval-baseline-allow-mismatch" in message
    assert "f" * 13 not in message  # short hashes only
    assert info.value.differences == {
        "runner_fingerprint": (RUNNER, "a" * 64),
        "plugin_version": ("0.1.0", "9.9.9"),
    }


def test_only_the_differing_fingerprint_is_named() -> None:
    with pytest.raises(FingerprintMismatch) as info:
        diff_of(sample_report(runner_fingerprint=None), [], baseline_of([]))
    assert "runner_fingerprint ffffffffffff (baseline) vs none (this run)" in str(info.value)
    assert "dataset_sha256" not in str(info.value)
    assert "plugin_version" not in str(info.value)


def test_a_changed_data_set_is_compared_case_by_case() -> None:
    current = sample_report(dataset_sha256="b" * 64, fixtures_sha256="c" * 64)
    result = diff_of(current, [case("a", "failed")], baseline_of([case("a")]))
    assert result.fingerprint_mismatches == {}
    assert result.flips["pass->fail"] == ["evals/a.golden.json::a"]
    assert result.case_changes is not None
    assert set(result.case_changes.data_changes) == {"dataset_sha256", "fixtures_sha256"}
    assert result.case_changes.data_changes["dataset_sha256"].current == "b" * 64


def test_a_case_that_ran_under_another_runner_is_a_mismatch() -> None:
    # several runners: no report-level runner fingerprint, so each unchanged case's is checked
    other = case("a").model_copy(update={"runner_fingerprint": "e" * 64})
    no_single = {"runner_fingerprint": None}
    base = baseline_of([case("a"), case("b")], report=sample_report(**no_single))
    with pytest.raises(FingerprintMismatch) as info:
        diff_of(sample_report(**no_single), [other, case("b")], base)
    assert "case_runner_fingerprint ffffffffffff (baseline) vs eeeeeeeeeeee" in str(info.value)
    # an edited case may well have a new runner setting: it is not compared, so no mismatch
    edited = other.model_copy(update={"case_fingerprint": "fp-new"})
    result = diff_of(sample_report(**no_single), [edited, case("b")], base)
    assert result.flips["changed"] == ["evals/a.golden.json::a"]


def test_allow_mismatch() -> None:
    current = sample_report(runner_fingerprint="b" * 64)
    result = diff_of(current, [case("a", "failed")], baseline_of([case("a")]), allow_mismatch=True)
    assert list(result.fingerprint_mismatches) == ["runner_fingerprint"]
    assert result.fingerprint_mismatches["runner_fingerprint"].current == "b" * 64
    assert result.regressed
    assert "Compared despite differing fingerprints: runner_fingerprint" in diff_markdown(result)
    json.dumps(result.model_dump(mode="json"))


# -- markdown --------------------------------------------------------------------------------


def test_markdown() -> None:
    before = [case(f"r{i:02}") for i in range(60)] + [case("fixed", "failed"), case("gone")]
    after = [case(f"r{i:02}", "error" if i == 0 else "failed") for i in range(60)]
    after += [case("fixed"), case("added")]
    new_report = sample_report()
    new_report["suites"]["golden"]["pass_rate"] = 0.5
    result = diff_of(new_report, after, baseline_of(before))
    text = diff_markdown(result)
    assert text == diff_markdown(result)  # stable
    assert text.startswith("## Baseline comparison\n")
    assert (
        "**Regressed** against baseline run `run-1`: 60 pass->fail, 1 fail->pass, 1 new, "
        "1 removed, 0 changed, 0 skipped; 61 cases compared." in text
    )
    p = float(mcnemar_exact_p(60, 1))
    assert f"Exact McNemar p = {p:.4g} (b = 60 pass->fail, c = 1 fail->pass)." in text
    assert "| golden | pass_rate | 0.9 | 0.5 | -0.4 |" in text
    assert "### pass → fail (60)" in text
    assert "- `evals/a.golden.json::r00` (passed → error)" in text
    assert "- `evals/a.golden.json::r49` (passed → failed)" in text
    assert "r50" not in text
    assert "- ... and 10 more" in text
    assert "- `evals/a.golden.json::added` (- → passed)" in text
    assert "- `evals/a.golden.json::gone` (passed → -)" in text
    assert "### changed" not in text


def test_markdown_quiet_run() -> None:
    result = diff_of(sample_report(), [case("a")], baseline_of([case("a")]))
    text = diff_markdown(result)
    assert "**No regressions**" in text
    assert "Exact McNemar p = 1 (b = 0 pass->fail, c = 0 fail->pass)." in text
    assert "No metric changed." in text
    assert "###" in text and "### pass" not in text


def test_markdown_escapes_ids_and_lists_the_case_set() -> None:
    odd = "evals/a.golden.json::x`](http://evil)\n# heading"
    before = [case("x", nodeid=odd), case("kept"), case("gone")]
    after = [case("x", "failed", nodeid=odd), case("kept", fingerprint="fp-edited")]
    after.append(case("new|pipe"))
    current = sample_report(dataset_sha256="b" * 64)
    current["suites"]["golden"]["categories"]["a|b"] = {"total": 1, "pass_rate": 0.5}
    base = sample_report()
    base["suites"]["golden"]["categories"]["a|b"] = {"total": 1, "pass_rate": 1.0}
    text = diff_markdown(diff_of(current, after, baseline_of(before, report=base)))
    assert "- ``evals/a.golden.json::x`](http://evil) # heading`` (passed → failed)" in text
    assert "\n# heading" not in text
    assert "| golden | categories.a\\|b.pass_rate | 1 | 0.5 | -0.5 |" in text
    assert "Cases: 0 unchanged, 1 added, 1 removed, 1 changed; only unchanged" not in text
    assert "Cases: 1 unchanged, 1 added, 1 removed, 1 changed; only unchanged cases" in text
    assert "> The data changed (dataset_sha256 `dddddddddddd` → `bbbbbbbbbbbb`)" in text
    assert "### Metric changes on unchanged cases" in text
    assert "| * | pass_rate | 1 | 0 | -1 |" in text
    assert "- `evals/a.golden.json::new|pipe` (- → passed)" in text


def test_unchanged_metric_deltas() -> None:
    before = [case("a"), case("b"), case("c", "failed"), case("edited"), case("gone")]
    after = [case("a"), case("b", "failed"), case("c"), case("edited", "failed", fingerprint="e")]
    after.append(case("toolish", suite="toolforge"))
    result = diff_of(sample_report(), after, baseline_of(before))
    assert list(result.unchanged_metric_deltas) == ["*", "golden"]
    golden = result.unchanged_metric_deltas["golden"]
    assert golden["pass_rate"].model_dump() == {
        "baseline": 0.666667,
        "current": 0.666667,
        "delta": 0.0,
    }
    assert golden["passed"].model_dump() == {"baseline": 2, "current": 2, "delta": 0}
    assert golden["mean_scores.exact_match"].current == 0.666667
    assert result.case_changes is not None
    assert result.case_changes.counts == {"unchanged": 3, "added": 1, "removed": 1, "changed": 1}
    assert result.case_changes.data_changes == {}
