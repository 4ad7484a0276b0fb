"""What a run reports: run dir files, junit XML, pytest-json-report, --lf, settings sources."""

from __future__ import annotations

import hashlib
import json
import os
import xml.etree.ElementTree as ET

import pytest

from tests.conftest import read_jsonl, write_json

CASES = [
    {"id": "ok", "category": "weather", "input": "weather in Paris",
     "expected_output": "It is 18C and cloudy in Paris."},
    {"id": "bad", "category": "chat", "input": "hello", "expected_output": "Goodbye"},
    {"id": "kw", "category": "chat", "input": "search now", "keywords": ["RoPE", "notes"],
     "min_scores": {"contains_keywords": 1.0}},
]  # fmt: skip


def test_run_dir_files(scripted: pytest.Pytester) -> None:
    write_json(scripted, "qa.golden.json", CASES)
    scripted.runpytest("--llmeval-runner", "scripted", "--llmeval-run-dir", "run")
    run = scripted.path / "run"
    assert sorted(p.name for p in run.iterdir()) == [
        ".llmeval-run", "audit.jsonl", "errors.jsonl", "events.jsonl", "journal", "manifest.json",
        "report.html", "report.json", "results.jsonl", "summary.md",
    ]  # fmt: skip
    rows = read_jsonl(run / "results.jsonl")
    assert [r["case_id"] for r in rows] == ["bad", "kw", "ok"]  # sorted
    for row in rows:
        for key in ("case_id", "suite", "file", "outcome", "passed", "error", "scores",
                    "case_fingerprint"):  # fmt: skip
            assert key in row
    bad = rows[0]
    assert (bad["outcome"], bad["passed"]) == ("failed", False)
    assert bad["scores"] == {"exact_match": 0.0}
    assert len(bad["case_fingerprint"]) == 64
    report = json.loads((run / "report.json").read_text())
    golden = report["suites"]["golden"]
    assert (golden["total"], golden["passed"], golden["failed"], golden["errors"]) == (3, 2, 1, 0)
    assert golden["categories"]["chat"]["passed"] == 1
    assert golden["mean_scores"]["exact_match"] == 0.5
    file_bytes = (scripted.path / "qa.golden.json").read_bytes()
    assert report["datasets"]["qa.golden.json"] == hashlib.sha256(file_bytes).hexdigest()
    assert len(report["dataset_sha256"]) == 64
    assert report["runner_fingerprint"] == rows[0]["runner_fingerprint"]
    assert report["runners"][report["runner_fingerprint"]]["type"] == "scripted"
    summary = (run / "summary.md").read_text()
    assert "| golden | 3 | 2 | 1 | 0 | 0 | 66.7% |" in summary
    assert "- `qa.golden.json::bad` (failed): `exact_match: 0.00 < 1.00" in summary
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["settings"]["runner"] == "scripted"


def test_default_run_dir_is_new_and_timestamped(scripted: pytest.Pytester) -> None:
    write_json(scripted, "qa.golden.json", CASES[:1])
    scripted.runpytest("--llmeval-runner", "scripted")
    scripted.runpytest("--llmeval-runner", "scripted")
    root = scripted.path / ".llmeval" / "runs"
    runs = sorted(p for p in root.iterdir() if p.name != "latest")
    assert len(runs) == 2
    assert all(len(r.name.split("_")[0]) == len("20260101T000000Z") for r in runs)
    newest = max(runs, key=lambda r: json.loads((r / "manifest.json").read_text())["started"])
    assert os.readlink(root / "latest") == newest.name  # beside them: the newest


def test_no_run_dir_without_eval_cases(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain(): pass")
    pytester.runpytest().assert_outcomes(passed=1)
    assert not (pytester.path / ".llmeval").exists()


def test_junit_xml_has_cases_and_small_properties(scripted: pytest.Pytester) -> None:
    write_json(scripted, "qa.golden.json", CASES)
    scripted.runpytest("--llmeval-runner", "scripted", "--junitxml", "junit.xml")
    root = ET.parse(scripted.path / "junit.xml").getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert set(cases) == {"ok", "bad", "kw"}
    assert cases["bad"].find("failure") is not None
    props = {p.get("name"): p.get("value") for p in cases["bad"].iter("property")}
    assert props == {"llmeval.outcome": "failed", "llmeval.score.exact_match": "0.0"}


def test_json_report_plugin(scripted: pytest.Pytester) -> None:
    pytest.importorskip("pytest_jsonreport")
    write_json(scripted, "qa.golden.json", CASES)
    scripted.runpytest(
        "--llmeval-runner", "scripted", "--json-report", "--json-report-file", "r.json"
    )
    data = json.loads((scripted.path / "r.json").read_text())
    outcomes = {t["nodeid"]: t["outcome"] for t in data["tests"]}
    assert outcomes == {
        "qa.golden.json::bad": "failed",
        "qa.golden.json::kw": "passed",
        "qa.golden.json::ok": "passed",
    }


def test_last_failed_reruns_only_the_failed_case(scripted: pytest.Pytester) -> None:
    write_json(scripted, "qa.golden.json", CASES)
    scripted.runpytest("--llmeval-runner", "scripted")
    result = scripted.runpytest("--llmeval-runner", "scripted", "--lf", "-v")
    result.stdout.fnmatch_lines(
        ["*collected 1 item", "run-last-failure: rerun previous 1 failure", "*::bad FAILED*"]
    )
    result.assert_outcomes(failed=1)


def test_exitfirst_stops_the_session(scripted: pytest.Pytester) -> None:
    write_json(scripted, "qa.golden.json", CASES)
    result = scripted.runpytest("--llmeval-runner", "scripted", "-x")
    result.assert_outcomes(failed=1)


def test_settings_come_from_ini_then_environment(
    scripted: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_json(scripted, "qa.golden.json", CASES[:1])
    monkeypatch.setenv("PYTEST_LLMEVAL_RUNNER", "echo")
    scripted.runpytest("--llmeval-run-dir", "env")
    assert (
        json.loads((scripted.path / "env/manifest.json").read_text())["settings"]["runner"]
        == "echo"
    )
    scripted.makeini("[pytest]\nllmeval_runner = scripted\nllmeval_concurrency = 3\n")
    scripted.runpytest("--llmeval-run-dir", "ini")
    settings = json.loads((scripted.path / "ini/manifest.json").read_text())["settings"]
    assert (settings["runner"], settings["concurrency"]) == ("scripted", 3)
    scripted.runpytest("--llmeval-run-dir", "cli", "--llmeval-runner", "echo")
    settings = json.loads((scripted.path / "cli/manifest.json").read_text())["settings"]
    assert settings["runner"] == "echo"


def test_manifest_records_git_and_a_filtered_environment(
    scripted: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    write_json(scripted, "qa.golden.json", CASES[:1])
    subprocess.run(["git", "init", "-q"], cwd=scripted.path, check=True)
    subprocess.run(["git", "add", "qa.golden.json"], cwd=scripted.path, check=True)
    subprocess.run(
        ["git", "-c", "user.email=t@example.org", "-c", "user.name=t", "commit", "-qm", "x"],
        cwd=scripted.path,
        check=True,
    )
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("SOME_API_KEY", "hunter2hunter2")
    scripted.runpytest("--llmeval-runner", "scripted", "--llmeval-run-dir", "run")
    manifest = json.loads((scripted.path / "run/manifest.json").read_text())
    assert len(manifest["git"]["commit"]) == 40
    assert manifest["git"]["dirty"] is False
    assert manifest["environment"]["OMP_NUM_THREADS"] == "1"
    assert "SOME_API_KEY" not in manifest["environment"]
    write_json(scripted, "qa.golden.json", CASES[:2])  # a tracked file changes: dirty
    scripted.runpytest("--llmeval-runner", "scripted", "--llmeval-run-dir", "run2")
    assert json.loads((scripted.path / "run2/manifest.json").read_text())["git"]["dirty"] is True


def test_results_kept_for_the_session_share_one_field_set() -> None:
    """``CaseResult.kept`` is the validated result, holding a field-name set shared by every
    kept result; a copy with an update still gets a set of its own."""
    from pytest_llmeval.core.models import CaseResult, Packed, unpack

    full = CaseResult(
        case_id="c1", suite="golden", file="x.jsonl", line=3, nodeid="x.jsonl::c1",
        outcome="passed", passed=True, scores={"exact_match": 1.0}, response="hi",
        events=[{"type": "model_call", "turn": 1}],
    ).model_dump(mode="json")  # fmt: skip
    first, second = CaseResult.kept(full), CaseResult.kept(full)
    validated = CaseResult.model_validate(full)
    assert first.model_dump() == validated.model_dump()  # events held packed, read the same
    assert isinstance(first.events, Packed) and unpack(first.events) == validated.events
    assert first.model_dump(mode="json") == full
    assert first.model_fields_set is second.model_fields_set
    assert first.model_fields_set == set(CaseResult.model_fields)
    changed = first.model_copy(update={"outcome": "error"})
    assert (changed.outcome, first.outcome) == ("error", "passed")
    assert changed.model_fields_set is not first.model_fields_set
    partial = {k: full[k] for k in ("case_id", "suite", "file", "line", "nodeid", "outcome")}
    partial["passed"] = False
    kept = CaseResult.kept(partial)  # not every field given: its own set, as pydantic makes it
    assert kept.model_fields_set == set(partial)


def test_a_result_kept_by_copying_its_model_equals_one_kept_from_its_dump() -> None:
    """Where the redaction left a result's dump as it was, the session keeps a copy of the
    model (``CaseResult.kept_as``) instead of validating the dump again: it must be the same
    result, down to the JSON values of its ``Any`` fields and the shared field-name set."""
    from pytest_llmeval.core.models import CaseResult, ToolCallRecord

    model = CaseResult(
        case_id="c1", suite="golden", file="x.jsonl", line=3, nodeid="x.jsonl::c1",
        outcome="failed", passed=False, error="answer: expected 'a', got 'b'",
        scores={"exact_match": 0.0}, response="b", input=[{"role": "user", "content": "q"}],
        expected={"expected_output": "a"}, transcript=[{"role": "assistant", "content": "b"}],
        tool_calls=[ToolCallRecord(name="f", params={"xs": (1, 2)}, result=(3,))],
        details={"pair": (1, 2), "nested": {"t": (True, None)}},
        repeats={"n": 2, "outcomes": ("a", "b")},
        events=[{"type": "model_call"}],
    )  # fmt: skip
    data = model.model_dump(mode="json")
    data["runner_fingerprint"] = "ab" * 32
    copied, validated = CaseResult.kept_as(model, data), CaseResult.kept(data)
    assert copied.model_dump() == validated.model_dump()
    assert copied.model_dump(mode="json") == data
    assert copied.details == {"pair": [1, 2], "nested": {"t": [True, None]}}  # JSON values
    assert (copied.tool_calls[0].params, copied.tool_calls[0].result) == ({"xs": [1, 2]}, [3])
    assert copied.model_fields_set is validated.model_fields_set
    assert model.runner_fingerprint == "" and isinstance(model.input, list)  # not changed
