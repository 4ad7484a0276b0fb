"""``merge`` reads the shards' reports as models: every optional section of a shard's
``report.json`` (deselected, interrupted, gates, baseline, a header fingerprint another writer
added) reaches the merged run dir, and a differing fingerprint is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.commands.merge import MergeError, merge, merge_lines
from pytest_llmeval.report import console
from pytest_llmeval.rundir.read import read_run
from tests.commands.test_shards import CASES, RUNNER, _shards
from tests.conftest import write_json

GATE = ("--llmeval-gate", "golden.pass_rate>=0.5")


def _edit_report(run_dir: Path, **sections: Any) -> None:
    path = run_dir / "report.json"
    body = json.loads(path.read_text())
    path.write_text(json.dumps({**body, **sections}))


def _sharded_run(pytester: pytest.Pytester) -> list[str]:
    """Two shards of a run with a gate, a baseline and ``-k`` leaving one case out; each
    shard's report also carries a header fingerprint this plugin does not write."""
    write_json(pytester, "qa.golden.json", CASES[:10])
    pytester.runpytest(*RUNNER, "--llmeval-update-baseline", "baseline.json")
    args = (*GATE, "--llmeval-baseline", "baseline.json", "-k", "not c01")
    shards = _shards(pytester, 2, *args)
    for name in shards:
        _edit_report(pytester.path / name, model_fingerprint="m" * 64)
    return shards


def test_merge_keeps_every_section_of_the_shards_reports(scripted: pytest.Pytester) -> None:
    shards = _sharded_run(scripted)
    first = json.loads((scripted.path / shards[0] / "report.json").read_text())
    assert {"gates", "baseline", "deselected"} <= set(first)
    cut = {"reason": "sigterm", "cases_run": 2, "cases_total": 4}
    _edit_report(scripted.path / shards[0], interrupted=cut)

    merged = merge(Path("out"), [Path(name) for name in shards])

    report = json.loads((scripted.path / "out/report.json").read_text())
    assert report["model_fingerprint"] == "m" * 64  # the shards' header fingerprint
    assert report["deselected"] == {"golden": 1}  # c01, left out by the shard it hashes to
    ran = len(merged.results)
    assert report["interrupted"] == {"reason": "sigterm", "cases_run": ran, "cases_total": ran + 2}
    assert report["gates"]["results"][0]["gate"]["name"] == "golden.pass_rate>=0.5"
    assert report["baseline"]["baseline"] == str(scripted.path / "baseline.json")
    summary = (scripted.path / "out/summary.md").read_text()
    assert summary.startswith(
        "# pytest-llmeval-harness summary\n\n"
        f"**interrupted (sigterm): {ran} of {ran + 2} cases ran;"
    )
    assert "| `golden.pass_rate>=0.5` | partial |" in summary
    lines = merge_lines(merged, 2)
    assert lines[: len(console.summary_lines(merged.report))] == [
        "golden: 7/9 passed (77.8%), 2 failed, 0 errors, 0 skipped",
        "  chat: 4/6 passed (66.7%), 2 failed, 0 errors, 0 skipped",
        "  search: 1/1 passed (100.0%), 0 failed, 0 errors, 0 skipped",
        "  weather: 2/2 passed (100.0%), 0 failed, 0 errors, 0 skipped",
        "all: 7/9 passed (77.8%), 2 failed, 0 errors, 0 skipped",
    ]
    assert any(line.startswith("baseline: ") for line in lines)
    # the merged dir reads back as the report it was written from
    read_back = read_run(scripted.path / "out").report
    assert read_back is not None and read_back.dump() == merged.report.dump() == report


def test_merge_refuses_shards_whose_header_fingerprints_differ(
    scripted: pytest.Pytester,
) -> None:
    shards = _sharded_run(scripted)
    _edit_report(scripted.path / shards[1], model_fingerprint="n" * 64)
    with pytest.raises(MergeError) as caught:
        merge(Path("out"), [Path(name) for name in shards])
    assert any(p.startswith("model_fingerprint differs: ") for p in caught.value.problems)
