"""The bfcl suite under a hostile data folder, driven as a user drives it: a ``suite: bfcl``
manifest over a copy of the vendored rows, the ``openai`` runner against a loopback model.

Every attack must end in an error that names where and what to fix, never in a case that
passes, vanishes, or hides in the wrong category's figures.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.suites.test_bfcl_suite import _body, _project, _run, needs_official_backends

NO_CALL = _body({"role": "assistant", "content": "I cannot help."})


def _answer(body: dict[str, Any]) -> dict[str, Any]:
    return NO_CALL


def _results(pytester: pytest.Pytester) -> list[dict[str, Any]]:
    text = (pytester.path / "run" / "results.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines()]


def _data(pytester: pytest.Pytester) -> Path:
    return pytester.path / "bfcl_data"


def _append(path: Path, *lines: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(line + "\n" for line in lines))


def test_a_failure_names_the_bfcl_data_file_and_line_not_the_folder(
    pytester: pytest.Pytester,
) -> None:
    _project(pytester, {"m": "suite: bfcl\ndata: bfcl_data\ncategories: [parallel]\n"})
    result = _run(pytester, _answer)
    result.stdout.fnmatch_lines(["bfcl_data/BFCL_v4_parallel.json:2: ast_decoder:decoder_failed*"])
    assert "bfcl_data:2:" not in result.stdout.str()


def test_categories_as_an_empty_list_is_an_error_not_an_empty_green_run(
    pytester: pytest.Pytester,
) -> None:
    _project(pytester, {"m": "suite: bfcl\ndata: bfcl_data\ncategories: []\n"})
    result = _run(pytester, _answer)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*manifest key `categories:` is an empty list*`all`*"])


def test_a_duplicate_id_is_its_rows_error_naming_the_first_and_the_first_still_runs(
    pytester: pytest.Pytester,
) -> None:
    _project(pytester, {"m": "suite: bfcl\ndata: bfcl_data\ncategories: [multiple, parallel]\n"})
    parallel = _data(pytester) / "BFCL_v4_parallel.json"
    first = parallel.read_text("utf-8").splitlines()[0]
    _append(parallel, first)  # the same row again, line 6
    _append(_data(pytester) / "BFCL_v4_multiple.json", first)  # a parallel id in multiple
    result = _run(pytester, _answer)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    by_node = {r["nodeid"].split("::")[1]: r for r in _results(pytester)}
    assert by_node["parallel_14"]["outcome"] == "failed"  # the real row is judged
    duplicate = by_node["parallel_14@line6"]
    assert duplicate["outcome"] == "error"
    assert duplicate["error"] == (
        "bfcl_data/BFCL_v4_parallel.json:6: id: duplicate id 'parallel_14' (first at "
        "bfcl_data/BFCL_v4_parallel.json:1); BFCL ids are unique"
    )
    misplaced = by_node["line8"]
    assert misplaced["error"].startswith("bfcl_data/BFCL_v4_multiple.json:8: id: 'parallel_14'")


def test_a_broken_row_counts_as_wrong_in_its_category_and_group(
    pytester: pytest.Pytester,
) -> None:
    """Four parallel rows answered right and one broken: parallel is 4/5, not 4/4."""
    manifest = (
        "suite: bfcl\ndata: bfcl_data\ncategories: [parallel]\n"
        "gates:\n  - categories.parallel.accuracy >= 0.9\n"
    )
    _project(pytester, {"m": manifest})
    parallel = _data(pytester) / "BFCL_v4_parallel.json"
    _append(parallel, '["not", "an", "object"]')
    result = _run(pytester, _answer, "-m", "parallel")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    broken = next(r for r in _results(pytester) if r["outcome"] == "error")
    assert broken["category"] == "parallel"  # kept by -m parallel, counted there
    assert broken["error"].startswith("bfcl_data/BFCL_v4_parallel.json:6: ")
    report = json.loads((pytester.path / "run" / "report.json").read_text())
    section = report["suites"]["bfcl"]
    assert section["categories"]["parallel"]["total"] == 6
    assert section["categories"]["parallel"]["errors"] == 1
    assert "(none)" not in section["categories"]


def test_unknown_ids_name_the_rows_that_could_not_be_read(pytester: pytest.Pytester) -> None:
    manifest = "suite: bfcl\ndata: bfcl_data\ncategories: [parallel]\nids: [parallel_999]\n"
    _project(pytester, {"m": manifest})
    _append(_data(pytester) / "BFCL_v4_parallel.json", '{"id": "parallel_999", ')
    result = _run(pytester, _answer)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*`ids:`*'parallel_999'; 1 row(s) could not be read (first: "
         "bfcl_data/BFCL_v4_parallel.json:6: *): fix them, or check `ids:` and `categories:`"]
    )  # fmt: skip


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"GorillaFileSystem": "not a dict"}, "initial_config.GorillaFileSystem"),
        ({"GorillaFileSystem": {"root": 5}}, "initial_config.GorillaFileSystem"),
    ],
)
def test_a_hostile_initial_config_is_that_rows_error_naming_the_field(
    pytester: pytest.Pytester, config: dict[str, Any], field: str
) -> None:
    needs_official_backends()
    manifest = "suite: bfcl\ndata: bfcl_data\ncategories: [multi_turn_base]\n"
    _project(pytester, {"m": manifest})
    path = _data(pytester) / "BFCL_v4_multi_turn_base.json"
    row = json.loads(path.read_text("utf-8").splitlines()[0])
    assert "GorillaFileSystem" in row["involved_classes"]
    row["initial_config"] = {**row["initial_config"], **config}
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    result = _run(pytester, _answer)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (only,) = _results(pytester)
    assert only["outcome"] == "error"
    assert field in only["error"]
    result.stdout.fnmatch_lines([f"bfcl_data/BFCL_v4_multi_turn_base.json:1: *{field}*"])


def test_a_gate_on_a_group_whose_categories_did_not_run_fails_naming_them(
    pytester: pytest.Pytester,
) -> None:
    manifest = (
        "suite: bfcl\ndata: bfcl_data\ncategories: [simple_python]\n"
        "gates:\n  - simple.accuracy >= 0.0\n"
    )
    _project(pytester, {"m": manifest})
    result = _run(pytester, _answer, "--llmeval-exit-on", "gates")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # never passed on a part of the group
    result.stdout.fnmatch_lines(
        ["gate bfcl.simple.accuracy>=0: FAILED (bfcl.simple.accuracy >= 0: n/a (simple_java, "
         "simple_javascript did not run): nothing to judge (add 'optional' *"]
    )  # fmt: skip


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ("bfcl_data/BFCL_v4_parallel.json", "is not a folder"),
        ("no_such_folder", "does not exist"),
        ("loop", "cannot be used as a path"),
    ],
)
def test_data_that_is_not_a_usable_folder_is_the_manifests_error_naming_data(
    pytester: pytest.Pytester, data: str, says: str
) -> None:
    _project(pytester, {"m": f"suite: bfcl\ndata: {data}\n"})
    (pytester.path / "loop").symlink_to("loop")
    result = _run(pytester, _answer)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (only,) = _results(pytester)
    assert only["outcome"] == "error"
    assert only["error"].startswith("m.llmeval.yaml") and "data: " in only["error"]
    assert says in only["error"]
