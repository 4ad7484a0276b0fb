"""The session's manifest index: every ``*.llmeval.yaml`` is read once, by whoever asks first.

Collection asks which data files manifests name and collects the manifest itself; preflight
checks the gates of the manifests whose cases were selected; the verdict judges them. All of
them read through one :class:`ManifestIndex`, which the session owns (nothing is cached in a
module between sessions).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_llmeval.core.errors import CaseFileError
from pytest_llmeval.inputs import manifest as manifest_module
from pytest_llmeval.inputs.manifest import Manifest, ManifestIndex
from tests.conftest import write_json

CASES = [
    {"id": "a", "input": "hello", "expected_output": "hello"},
    {"id": "b", "input": "world", "expected_output": "other"},
]


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The display name of every manifest read from now on (in this process)."""
    seen: list[str] = []
    read = manifest_module.read_manifest

    def counted(path: Path, display: str) -> Manifest:
        seen.append(display)
        return read(path, display)

    monkeypatch.setattr(manifest_module, "read_manifest", counted)
    return seen


def test_the_index_reads_a_manifest_once_and_keeps_its_error(tmp_path: Path) -> None:
    (tmp_path / "rows.json").write_text("[]")
    (tmp_path / "ok.llmeval.yaml").write_text("suite: golden\ndata: rows.json\nrepeats: 2\n")
    # no suite: a manifest every suite refuses (data may be left out: BFCL's default folder)
    (tmp_path / "bad.llmeval.yaml").write_text("data: rows.json\n")
    index = ManifestIndex(tmp_path)
    assert index.targets(tmp_path) == {(tmp_path / "rows.json").resolve()}
    assert index.is_target(tmp_path / "rows.json")
    ok = index.read(tmp_path / "ok.llmeval.yaml")
    assert index.read(tmp_path / "ok.llmeval.yaml") is ok  # the one the targets scan read
    with pytest.raises(CaseFileError) as first:
        index.read(tmp_path / "bad.llmeval.yaml")
    with pytest.raises(CaseFileError) as second:
        index.read(tmp_path / "bad.llmeval.yaml")
    assert first.value is second.value and str(first.value).startswith("bad.llmeval.yaml")
    assert index.named("gone.llmeval.yaml") is None  # a run made elsewhere
    assert [getattr(m, "display", None) for m in index.present(["ok.llmeval.yaml"])] == [
        "ok.llmeval.yaml"
    ]
    assert index.for_data("rows.json") is None
    index.collected(ok, "rows.json")
    assert index.for_data("rows.json") is ok and ok.repeats == 2


def test_a_session_reads_each_manifest_once(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Targets, collection, preflight's gate check and the verdict: one read per manifest."""
    write_json(pytester, "data/rows.json", CASES)
    pytester.path.joinpath("qa.llmeval.yaml").write_text(
        "suite: golden\ndata: data/rows.json\ngates:\n  - pass_rate >= 0.5\n"
    )
    pytester.path.joinpath("broken.llmeval.yaml").write_text("suite: golden\n")
    seen = _counting(monkeypatch)
    result = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    assert sorted(seen) == ["broken.llmeval.yaml", "qa.llmeval.yaml"]
    result.stdout.fnmatch_lines(["gate golden.pass_rate>=0.5: passed*"])
    # reported once: its error item (and that item's summary line), no gate problem
    told = [line for line in result.stdout.lines if "broken.llmeval.yaml: data:" in line]
    assert len(told) == 2 and told[1].startswith("ERROR broken.llmeval.yaml::file")
    gates = json.loads((pytester.path / "run/report.json").read_text())["gates"]
    assert [g["gate"]["source"] for g in gates["results"]] == ["manifest"]
    # a second session in the same process reads the manifests afresh
    pytester.path.joinpath("qa.llmeval.yaml").write_text(
        "suite: golden\ndata: data/rows.json\ngates:\n  - pass_rate >= 0.9\n"
    )
    result = pytester.runpytest("--llmeval-runner", "echo")
    result.stdout.fnmatch_lines(["gate golden.pass_rate>=0.9: FAILED*"])
    assert sorted(seen) == ["broken.llmeval.yaml"] * 2 + ["qa.llmeval.yaml"] * 2
