"""Manifest reading without pytester: safe YAML limits, the shipped schema, suite options."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_llmeval.core.errors import CaseFileError
from pytest_llmeval.inputs import safe_yaml
from pytest_llmeval.inputs.manifest import COMMON_OPTIONS, Manifest, read_manifest
from pytest_llmeval.inputs.schemas import strict_validator
from pytest_llmeval.suites.builtin import builtin_suites
from pytest_llmeval.suites.golden import GoldenSuite
from pytest_llmeval.suites.when2call import When2CallSuite


def _manifest(tmp_path: Path, text: str) -> Manifest:
    path = tmp_path / "m.llmeval.yaml"
    path.write_text(text)
    return read_manifest(path, "m.llmeval.yaml")


def _error(tmp_path: Path, text: str) -> CaseFileError:
    with pytest.raises(CaseFileError) as info:
        _manifest(tmp_path, text)
    return info.value


def test_a_manifest_reads_as_its_mapping_with_a_line_per_key(tmp_path: Path) -> None:
    manifest = _manifest(
        tmp_path,
        "# comment\nsuite: golden\ndata: d.json\nrepeats: 3\ngates:\n  - pass_rate >= 0.5\n",
    )
    assert (manifest.suite, manifest.data, manifest.repeats, manifest.misses) == (
        "golden",
        "d.json",
        3,
        "fail",
    )
    assert manifest.suite == "golden" and manifest.gates == ["pass_rate >= 0.5"]
    assert manifest.lines == {"suite": 2, "data": 3, "repeats": 4, "gates": 5}
    assert manifest.line_of(("gates", 0)) == 6
    assert manifest.line_of(("misses",)) is None


def test_common_keys_come_from_the_shipped_schema() -> None:
    assert sorted(COMMON_OPTIONS) == ["data", "description", "gates", "misses", "repeats", "suite"]


@pytest.mark.parametrize(
    ("text", "line", "field", "message"),
    [
        ("suite: 3\ndata: d.json\n", 1, "suite", "expected a string, got a number"),
        ("suite: golden\ndata: d.json\nrepeats: 2.0\n", 3, "repeats", "expected a whole number"),
        ("suite: golden\ndata: d.json\nrepeats: true\n", 3, "repeats", "expected a whole number"),
        (
            "suite: golden\ndata: d.json\ngates: 3\n",
            3,
            "gates",
            "expected a string, an array or an object, got a number",
        ),
        ("suite: golden\ndata: d.json\ndescription: [a]\n", 3, "description", "expected a string"),
        ("- suite\n", 1, None, "expected a mapping with 'suite' and 'data'"),
        ("suite: golden\ndata: [1\n", 3, None, "invalid YAML"),
        ("suite: golden\ndata: 2024-01-01\n", 2, "data", "expected a string, got a date"),
        ("suite: !!python/object:os.system x\n", 1, None, "invalid YAML: could not determine"),
    ],
)
def test_common_key_errors_name_line_and_field(
    tmp_path: Path, text: str, line: int | None, field: str | None, message: str
) -> None:
    error = _error(tmp_path, text)
    assert (error.line, error.field) == (line, field)
    assert error.message.startswith(message), error.message


def test_data_is_required_of_a_file_suite_and_optional_for_a_folder_suite(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path, "suite: golden\n")
    with pytest.raises(CaseFileError) as info:
        manifest.data_path()
    assert (info.value.field, info.value.message) == ("data", "missing required field (a string)")
    assert manifest.data_path(folder=True) == manifest.path.resolve()  # the suite's default
    assert manifest.target() is None
    (tmp_path / "folder").mkdir()
    folder = _manifest(tmp_path, "suite: bfcl\ndata: folder\n")
    assert folder.data_path(folder=True) == (tmp_path / "folder").resolve()
    with pytest.raises(CaseFileError, match="is a folder, not a file"):
        folder.data_path()


def test_suite_options_are_checked_once_the_suite_is_known(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path, "suite: when2call\ndata: d.jsonl\nrepeats: 2\nprotocl: x\n")
    with pytest.raises(CaseFileError) as info:
        manifest.check_options("when2call", When2CallSuite.manifest_options)
    assert (info.value.line, info.value.field) == (4, "protocl")
    assert "did you mean 'protocol'?" in info.value.message
    manifest = _manifest(tmp_path, "suite: golden\ndata: d.json\nthresholds: {kw: {regex: x}}\n")
    with pytest.raises(CaseFileError) as info:
        manifest.check_options("golden", GoldenSuite.manifest_options)
    assert (info.value.line, info.value.field) == (3, "thresholds.kw.regex")
    # a suite that declares no options (a plugin's) is handed whatever its manifest holds
    manifest.check_options("plugin", None)


def test_every_suite_declares_valid_option_schemas_apart_from_the_common_keys() -> None:
    suites = builtin_suites()
    for name in suites.names():
        declared = suites.get(name).manifest_options
        assert not set(declared) & COMMON_OPTIONS, name
        strict_validator().check_schema({"type": "object", "properties": declared})


def test_anchors_within_the_limits_are_fine(tmp_path: Path) -> None:
    manifest = _manifest(
        tmp_path,
        "suite: golden\ndata: d.json\nthresholds:\n  a: &t {regex: 1.0}\n  b: *t\n"
        "  c:\n    <<: *t\n    exact_match: 0.5\n",
    )
    assert manifest.options["thresholds"] == {
        "a": {"regex": 1.0},
        "b": {"regex": 1.0},
        "c": {"regex": 1.0, "exact_match": 0.5},
    }


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            "a: &a 1\n" + "".join(f"k{i}: *a\n" for i in range(101)),
            102,
            "more than 100 YAML aliases",
        ),
        ("a: " + "[" * 101 + "]" * 101 + "\n", 1, "nested more than 100 levels deep"),
        ("a: &a {b: *a}\n", 1, "a YAML alias refers to the value that contains it"),
        ("a: 1\n---\nb: 2\n", 2, "invalid YAML: expected a single document"),
    ],
)
def test_yaml_limits(text: str, line: int, message: str) -> None:
    with pytest.raises(safe_yaml.YamlLimitError) as info:
        safe_yaml.load(text)
    assert info.value.line == line
    assert info.value.message.startswith(message), info.value.message


def test_an_oversized_file_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(b"a: 1\n" * 1000)
    assert safe_yaml.read_limited(path, 5000) == "a: 1\n" * 1000
    with pytest.raises(safe_yaml.YamlLimitError, match="larger than 4,999 bytes"):
        safe_yaml.read_limited(path, 4999)
