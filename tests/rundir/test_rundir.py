"""The run dir's own description (``rundir.layout``) against what a run writes, and reading a
run dir back (``rundir.read``): clear errors for another version or a broken file."""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_llmeval.core.errors import RunDirError, RunDirVersionError
from pytest_llmeval.rundir import ARTIFACTS, REPORT_FILES, RunLayout, read_run
from tests.conftest import write_json

CASES = [
    {"id": "a", "category": "x", "input": "hello", "expected_output": "hello"},
    {"id": "b", "category": "y", "input": "foo", "expected_output": "bar"},
]
TOOLFORGE = [
    {
        "id": "tf-1",
        "description": "echoes",
        "input": {"message": "hi"},
        "expect": {"responseNonEmpty": True},
    }
]


def _pattern(name: str) -> str:
    """An artifact's name as a glob: ``<attempt>`` and the like match any text."""
    return re.sub(r"<[^>]+>", "*", name) + ("*" if name.endswith("/") else "")


@pytest.fixture
def run_dir(pytester: pytest.Pytester) -> Path:
    write_json(pytester, "qa.golden.json", CASES)
    write_json(pytester, "tf.golden.json", TOOLFORGE)
    pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    return pytester.path / "run"


def test_every_file_a_run_writes_is_described(run_dir: Path) -> None:
    written = sorted(p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*") if p.is_file())
    patterns = [_pattern(a.name) for a in ARTIFACTS]
    undescribed = [n for n in written if not any(fnmatch.fnmatch(n, p) for p in patterns)]
    assert not undescribed, f"files missing from rundir.layout.ARTIFACTS: {undescribed}"
    for name in REPORT_FILES:
        assert (run_dir / name).is_file(), name
    manifest = json.loads(RunLayout(run_dir).manifest.read_text())
    assert "toolforge/tf.golden.json" in manifest["artifacts"]
    assert set(REPORT_FILES) <= set(manifest["artifacts"])


def test_layout_paths_are_artifacts(run_dir: Path) -> None:
    layout = RunLayout(run_dir)
    names = {a.name.split("/")[0] for a in ARTIFACTS}
    for path in (layout.tag, layout.manifest, layout.report, layout.results, layout.errors,
                 layout.events, layout.audit, layout.summary, layout.html, layout.journal,
                 layout.workspaces):  # fmt: skip
        assert path.parent == run_dir
        assert path.name in names, path.name


def test_read_run_gives_the_report_and_results_back(run_dir: Path) -> None:
    run = read_run(run_dir)
    assert [r.case_id for r in run.results] == ["a", "b", "tf-1"]
    assert run.report is not None
    assert run.report.totals.total == 3
    assert run.report_body == json.loads((run_dir / "report.json").read_text())


def test_a_report_of_another_version_is_a_clear_error(run_dir: Path) -> None:
    path = run_dir / "report.json"
    body = json.loads(path.read_text())
    body["report_version"] = "2.0.0"
    body.pop("totals")  # what a newer layout could look like: no KeyError reaches the user
    path.write_text(json.dumps(body))
    with pytest.raises(RunDirVersionError, match=r"report_version '2\.0\.0' cannot be read"):
        read_run(run_dir)
    done = subprocess.run(
        [sys.executable, "-m", "pytest_llmeval", "summarize", str(run_dir)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "report_version '2.0.0' cannot be read by this plugin (it reads 1.x)" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_broken_report_names_the_file_and_field(run_dir: Path) -> None:
    path = run_dir / "report.json"
    body = json.loads(path.read_text())
    body["totals"]["passed"] = "many"
    path.write_text(json.dumps(body))
    with pytest.raises(RunDirError, match=r"report\.json: totals\.passed: "):
        read_run(run_dir)
    path.write_text("{not json")
    with pytest.raises(RunDirError, match=r"report\.json:1: not JSON: invalid JSON: Expecting"):
        read_run(run_dir)
