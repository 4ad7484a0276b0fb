"""The verdict's gates from manifests: given read, never read from files or node ids."""

from __future__ import annotations

from pathlib import Path

from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.errors import CaseFileError
from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.inputs.manifest import Manifest
from pytest_llmeval.report.verdict import gather_gates


def _settings(tmp_path: Path) -> Settings:
    return Settings.model_construct(rootdir=tmp_path, gate=())  # all gather_gates reads


def test_manifest_gates_come_from_the_manifests_handed_in(tmp_path: Path) -> None:
    good = Manifest(
        path=tmp_path / "nowhere.llmeval.yaml",  # never opened
        display="nowhere.llmeval.yaml",
        options={"suite": "golden", "data": "rows.json", "gates": ["pass_rate >= 0.5"]},
    )
    bad_gate = Manifest(
        path=tmp_path / "typo.llmeval.yaml",
        display="typo.llmeval.yaml",
        options={"suite": "golden", "data": "rows.json", "gates": ["pass rate"]},
    )
    broken = CaseFileError("broken.llmeval.yaml", 1, "expected a mapping")
    reported = CaseFileError("told.llmeval.yaml", None, "cannot read the manifest")
    told = CaseResult(
        case_id="file", suite="unknown", file="told.llmeval.yaml", line=1,
        nodeid="told.llmeval.yaml::file", outcome="error", passed=False, error=str(reported),
    )  # fmt: skip
    gates, problems = gather_gates(
        _settings(tmp_path), [told], manifests=[good, bad_gate, broken, reported]
    )
    assert [(g.name, g.source) for g in gates] == [("golden.pass_rate>=0.5", "manifest")]
    assert problems[0].startswith("typo.llmeval.yaml: gates[0]: bad gate 'pass rate'")
    # the broken manifest is a problem; the one whose error item ran says so itself
    assert problems[1:] == ["broken.llmeval.yaml:1: expected a mapping"]
