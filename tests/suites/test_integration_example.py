"""The tool-integration example in ``evals/``: its gates hold on the recorded run, a
contaminated copy fails the session with the control named, and the broker's normalisation
keeps the fixture hit rate of argument variants at or above 95%."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_llmeval.tools.broker import ToolBroker

ROOT = Path(__file__).resolve().parents[2]
DATASET = ROOT / "evals" / "tool_integration.integration.jsonl"


def _copy_example(pytester: pytest.Pytester) -> Path:
    pytester.makeini("[pytest]\nllmeval_tool_registry = tools.json\n")
    shutil.copy(ROOT / "evals" / "conftest.py", pytester.path / "conftest.py")
    shutil.copy(ROOT / "evals" / "tools.json", pytester.path / "tools.json")
    shutil.copytree(ROOT / "fixtures" / "tools", pytester.path / "fixtures" / "tools")
    target = pytester.path / "copy.integration.jsonl"
    shutil.copy(DATASET, target)
    return target


def test_the_recorded_example_passes_its_gates(tmp_path: Path) -> None:
    run = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(DATASET), "-p", "no:cacheprovider", "-q",
         "--llmeval-run-dir", str(run)],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:]
    body = json.loads((run / "report.json").read_text())["suites"]["integration"]
    assert body["total"] >= 60 and body["eligible"] >= 15
    assert body["gates_ok"] is True
    assert set(body["locale"]) == {"es", "de", "fr"} and body["branching_items"] >= 5
    assert body["negative_controls"] >= 5 and body["controls"] >= 5
    assert all(g["status"] == "pass" for g in body["gates"].values())


def test_a_contaminated_copy_fails_the_session_naming_the_control(
    pytester: pytest.Pytester,
) -> None:
    target = _copy_example(pytester)
    lines = target.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    for row in rows[1:]:
        if row.get("sample_id") == "control-1":
            row["prompt"] = "Say hello, and what is the weather in Oslo?"
    target.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = pytester.runpytest(
        "--llmeval-runner", "example-router", "--no-llmeval-fail-on-fingerprint-mismatch"
    )
    assert result.ret == 1
    out = result.stdout.str()
    assert "control contaminated: calls ['get_weather']" in out
    assert "integration.controls_with_integration==0" in out and "items: control-1" in out


def test_the_header_fingerprints_guard_the_copy(pytester: pytest.Pytester) -> None:
    target = _copy_example(pytester)
    with target.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"sample_id": "extra", "prompt": "Say hi."}) + "\n")
    result = pytester.runpytest("--llmeval-runner", "example-router")
    assert result.ret == 1
    assert "__header__.dataset_sha256 is " in result.stdout.str()


def test_broker_normalisation_keeps_the_fixture_hit_rate_at_95_percent() -> None:
    broker = ToolBroker.from_dir(ROOT / "fixtures" / "tools")
    variants = []
    for entry in broker.entries:
        key = dict(entry.key)
        variants.append((entry.name, key))
        for field in ("q", "query"):
            if isinstance(key.get(field), str):
                value = key[field]
                variants += [
                    (entry.name, {**key, field: value.upper()}),
                    (entry.name, {**key, field: f"  {value.replace(' ', '   ')} "}),
                ]
        if entry.name.startswith("web.search"):
            variants.append((entry.name, {k: v for k, v in key.items() if k != "top_k"}))
        variants.append((entry.name, {**key, "unused": None}))
    hits = sum(broker.lookup(name, args) is not None for name, args in variants)
    assert len(variants) >= 100
    assert hits / len(variants) >= 0.95, (hits, len(variants))


def test_two_shards_merged_give_the_unsharded_metrics_and_gates(tmp_path: Path) -> None:
    def pytest_run(run: Path, *args: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", str(DATASET), "-p", "no:cacheprovider", "-q",
             "--llmeval-run-dir", str(run), *args],
            cwd=ROOT, capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-2000:]

    pytest_run(tmp_path / "whole")
    pytest_run(tmp_path / "s1", "--llmeval-shard", "0/2")
    pytest_run(tmp_path / "s2", "--llmeval-shard", "1/2")
    merged = subprocess.run(
        [sys.executable, "-m", "pytest_llmeval", "merge", str(tmp_path / "merged"),
         str(tmp_path / "s1"), str(tmp_path / "s2")],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert merged.returncode == 0, merged.stdout + merged.stderr
    whole = json.loads((tmp_path / "whole" / "report.json").read_text())
    joined = json.loads((tmp_path / "merged" / "report.json").read_text())
    assert joined["suites"]["integration"] == whole["suites"]["integration"]
    names = sorted(g["gate"]["name"] for g in joined["gates"]["results"])
    assert names == sorted(g["gate"]["name"] for g in whole["gates"]["results"])
    assert any(n.startswith("integration.controls_with_integration") for n in names)
