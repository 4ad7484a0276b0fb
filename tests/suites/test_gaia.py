"""The GAIA suite: manifests, JSONL and Parquet splits, attachments, options, per-level report."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.errors import CaseFileError
from pytest_llmeval.core.models import EvalCase
from pytest_llmeval.scoring.gaia import GAIA_SYSTEM_PROMPT
from pytest_llmeval.suites.base import CaseSource, SuiteContext
from pytest_llmeval.suites.builtin import builtin_suites
from pytest_llmeval.suites.gaia import GaiaSuite
from pytest_llmeval.suites.gaia_data import INSTALL_HINT, read_rows
from tests.conftest import read_jsonl, write_jsonl

SPLIT = "gaia/2023/validation"
ATTACHMENT = "a3.txt"


def _row(task: str, level: int, question: str, answer: str, file_name: str = "") -> dict[str, Any]:
    return {
        "task_id": task,
        "Question": question,
        "Level": level,
        "Final answer": answer,
        "file_name": file_name,
        "Annotator Metadata": {"Steps": "1. think", "Number of steps": "1", "Tools": "none"},
    }


ROWS = [
    _row("t1", 1, "How much is 17 * 23?", "391"),
    _row("t2", 1, "Capital of France?", "Paris"),
    _row("t3", 1, "What word is in the file?", "Bluebird", ATTACHMENT),
    _row("t4", 2, "Highs in Berlin, comma separated?", "12, 14"),
    _row("t5", 2, "Price in dollars?", "1023"),
    _row("t6", 3, "Name the river.", "Seine"),
]

# what the agent answers per task id: a right answer, a wrong one, or no FINAL ANSWER line
ANSWERS: dict[str, str | None] = {
    "t1": "$391",
    "t2": "paris",
    "t3": "Bluebird",
    "t4": "12; 14",
    "t5": "1024",
    "t6": None,
}

AGENT_CONFTEST = f"""
import pytest

ANSWERS = {ANSWERS!r}

class Agent:
    def run(self, case, broker):
        system = case.messages[0].content if case.messages[0].role == "system" else "(none)"
        answer = ANSWERS.get(case.case_id, "no idea")
        head = f"system: {{system[:40]}}\\nuser: {{case.user_message}}"
        return head if answer is None else f"{{head}}\\nFINAL ANSWER: {{answer}}"

@pytest.fixture(scope="session")
def llmeval_agent():
    return Agent()
"""


def _split(pytester: pytest.Pytester, rows: list[dict[str, Any]], folder: str = SPLIT) -> Path:
    path = write_jsonl(pytester, f"{folder}/metadata.jsonl", rows)
    (path.parent / ATTACHMENT).write_text("Bluebird\n", encoding="utf-8")
    return path


def _parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def _manifest(pytester: pytest.Pytester, name: str, data: str, **options: Any) -> Path:
    path = pytester.path / name
    path.write_text(yaml.safe_dump({"suite": "gaia", "data": data, **options}), encoding="utf-8")
    return path


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makeconftest(AGENT_CONFTEST)
    return pytester.runpytest("--llmeval-run-dir", "run", "-v", *args)


def _results(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    return {r["case_id"]: r for r in read_jsonl(pytester.path / "run" / "results.jsonl")}


def _report(pytester: pytest.Pytester) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((pytester.path / "run" / "report.json").read_text())
    return report


# ------------------------------------------------------------------------- end to end


def test_jsonl_split_scores_each_row_and_reports_levels(pytester: pytest.Pytester) -> None:
    _split(pytester, ROWS)
    _manifest(pytester, "gaia.llmeval.yaml", f"{SPLIT}/metadata.jsonl")
    result = _run(pytester)
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines_random(
        [
            "gaia.llmeval.yaml::t1 PASSED*",
            "gaia.llmeval.yaml::t5 FAILED*",
            "gaia.llmeval.yaml::t6 FAILED*",
            '*metadata.jsonl:5: expected "1023", got "1024" (number: numbers differ)',
            "gaia gaia/2023/validation/metadata.jsonl: accuracy 66.67% (4/6), "
            "level1 100.00% (3/3), level2 50.00% (1/2), level3 0.00% (0/1)",
        ]
    )
    gaia = _report(pytester)["suites"]["gaia"]
    assert (gaia["accuracy"], gaia["correct"], gaia["questions"]) == (round(4 / 6, 6), 4, 6)
    assert gaia["levels"] == {
        "level1": {"accuracy": 1.0, "correct": 3, "questions": 3},
        "level2": {"accuracy": 0.5, "correct": 1, "questions": 2},
        "level3": {"accuracy": 0.0, "correct": 0, "questions": 1},
    }
    assert set(gaia["categories"]) == {"level1", "level2", "level3"}

    rows = _results(pytester)
    assert rows["t1"]["file"] == f"{SPLIT}/metadata.jsonl"
    assert rows["t1"]["category"] == "level1"
    assert rows["t1"]["scores"] == {"correct": 1.0}
    details = rows["t4"]["details"]
    assert details["extracted_answer"] == "12; 14"
    assert details["branch"] == "list"
    assert details["reason"] == "match"
    assert details["normalized_prediction"] == ["12.0", "14.0"]
    assert details["normalized_ground_truth"] == ["12.0", "14.0"]
    assert details["level"] == 2
    assert details["raw_output"] == rows["t4"]["response"]
    assert rows["t6"]["error"] == (
        'expected "Seine", got null (string: no "FINAL ANSWER:" in the response)'
    )
    assert rows["t6"]["details"]["extracted_answer"] is None
    # the system prompt and the question reached the agent
    assert f"system: {GAIA_SYSTEM_PROMPT[:40]}" in rows["t1"]["response"]
    assert "user: How much is 17 * 23?" in rows["t1"]["response"]
    assert f"Attached file: {SPLIT}/{ATTACHMENT}" in rows["t3"]["response"]

    artifact = json.loads(
        (pytester.path / "run/gaia/gaia_2023_validation_metadata.json").read_text()
    )
    assert artifact["levels"] == gaia["levels"]
    assert {a["task_id"]: a["model_answer"] for a in artifact["answers"]}["t5"] == "1024"


def test_level_markers_select_cases(pytester: pytest.Pytester) -> None:
    _split(pytester, ROWS)
    _manifest(pytester, "gaia.llmeval.yaml", f"{SPLIT}/metadata.jsonl")
    result = _run(pytester, "-m", "gaia and level2")
    result.assert_outcomes(passed=1, failed=1)


def test_parquet_split_scores_like_the_jsonl_one(pytester: pytest.Pytester) -> None:
    jsonl = _split(pytester, ROWS)
    hub_rows = [
        {**row, "file_path": f"2023/validation/{row['file_name']}" if row["file_name"] else ""}
        for row in ROWS
    ]
    parquet = _parquet(jsonl.parent / "metadata.parquet", hub_rows)
    jsonl.unlink()
    _manifest(pytester, "gaia.llmeval.yaml", f"{SPLIT}/{parquet.name}")
    result = _run(pytester)
    result.assert_outcomes(passed=4, failed=2)
    gaia = _report(pytester)["suites"]["gaia"]
    assert gaia["levels"]["level2"] == {"accuracy": 0.5, "correct": 1, "questions": 2}
    rows = _results(pytester)
    assert rows["t1"]["file"] == f"{SPLIT}/metadata.parquet"
    assert rows["t3"]["line"] == 3  # the 1-based row number stands in for the line
    # file_path, relative to the dataset root (split_dir's grandparent), found the attachment
    assert f"Attached file: {SPLIT}/{ATTACHMENT}" in rows["t3"]["response"]


def test_missing_attachment_is_one_error_while_the_rest_run(pytester: pytest.Pytester) -> None:
    rows = [*ROWS, _row("t7", 2, "What is in the PDF?", "x", "t7.pdf")]
    _split(pytester, rows)
    _manifest(pytester, "gaia.llmeval.yaml", f"{SPLIT}/metadata.jsonl")
    result = _run(pytester)
    result.assert_outcomes(passed=4, failed=2, errors=1)
    result.stdout.fnmatch_lines(["*metadata.jsonl:7: file_name: attachment 't7.pdf' not found*"])
    gaia = _report(pytester)["suites"]["gaia"]
    # the error counts as a wrong answer; a broken row carries no level
    assert (gaia["correct"], gaia["questions"], gaia["errors"]) == (4, 7, 1)
    assert gaia["unleveled"] == {"accuracy": 0.0, "correct": 0, "questions": 1}
    assert sum(level["questions"] for level in gaia["levels"].values()) == 6


def test_missing_columns_list_the_columns_found(pytester: pytest.Pytester) -> None:
    write_jsonl(pytester, "a/metadata.jsonl", [{"task_id": "x", "prompt": "hi", "Level": 1}])
    _manifest(pytester, "a.llmeval.yaml", "a/metadata.jsonl")
    result = _run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*a/metadata.jsonl:1: no question column (one of 'question', 'Question'); "
            "columns found: 'task_id', 'prompt', 'Level'*"
        ]
    )


def test_parquet_without_a_truth_column_is_one_file_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "p").mkdir()
    _parquet(pytester.path / "p/metadata.parquet", [{"Question": "q", "Level": 1}])
    _manifest(pytester, "p.llmeval.yaml", "p/metadata.parquet")
    result = _run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*p/metadata.parquet: no truth column (one of 'final_answer', 'Final answer', "
            "'answer'); columns found: 'Question', 'Level'*"
        ]
    )


def test_hf_uris_are_refused_at_once(pytester: pytest.Pytester) -> None:
    hub = "hf://datasets/gaia-benchmark/GAIA/2023/validation/metadata.parquet"
    _manifest(pytester, "remote.llmeval.yaml", hub)
    _split(pytester, ROWS)
    _manifest(
        pytester, "local.llmeval.yaml", f"{SPLIT}/metadata.jsonl", split_dir="hf://datasets/x"
    )
    result = _run(pytester)
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines_random(
        [
            f"*remote.llmeval.yaml: data: data file '{hub}' does not exist*",
            "*metadata.jsonl: manifest option split_dir: 'hf://datasets/x' is a remote location;*",
        ]
    )


def test_limit_and_levels_options(pytester: pytest.Pytester) -> None:
    _split(pytester, ROWS)
    _manifest(pytester, "gaia.llmeval.yaml", f"{SPLIT}/metadata.jsonl", levels=[1, 3], limit=3)
    pytester.makeconftest(AGENT_CONFTEST)
    result = pytester.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "gaia.llmeval.yaml::t1",
            "gaia.llmeval.yaml::t2",
            "gaia.llmeval.yaml::t3",
            "3 tests collected*",
        ]
    )
    _manifest(pytester, "gaia.llmeval.yaml", f"{SPLIT}/metadata.jsonl", levels=[3, 2], limit=2)
    result = pytester.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(
        ["gaia.llmeval.yaml::t4", "gaia.llmeval.yaml::t5", "2 tests collected*"]
    )


def test_a_model_runner_uses_the_broker_and_the_final_answer_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(
        """
from pytest_llmeval.testing.scripted import Rule, ScriptedModel

RULES = [Rule("temperature", tool="get_weather", arguments={"city": "Paris"},
              answer="It is {result[temp_c]}C.\\nFINAL ANSWER: {result[temp_c]}")]

def pytest_llmeval_register_runners(registry):
    registry.register("scripted", lambda settings: ScriptedModel(RULES))
"""
    )
    write_jsonl(
        pytester,
        "fixtures/tools/weather.jsonl",
        [{"name": "get_weather", "key": {"city": "Paris"}, "result": {"temp_c": 18}}],
    )
    rows = [_row("w1", 1, "What is the temperature in Paris?", "18")]
    write_jsonl(pytester, "w/metadata.jsonl", rows)
    _manifest(pytester, "w.llmeval.yaml", "w/metadata.jsonl")
    result = pytester.runpytest("--llmeval-runner", "scripted", "--llmeval-run-dir", "run")
    result.assert_outcomes(passed=1)
    row = _results(pytester)["w1"]
    assert row["tool_calls"][0]["source"] == "fixture"
    assert row["details"]["extracted_answer"] == "18"


# ----------------------------------------------------------------- loading, case by case


def _context(rootdir: Path) -> SuiteContext:
    return SuiteContext(settings=Settings.model_construct(rootdir=rootdir, max_turns=5))


def _load(
    tmp_path: Path, rows: list[dict[str, Any]], name: str = "metadata.jsonl", **options: Any
) -> list[EvalCase | CaseFileError]:
    split = tmp_path / SPLIT
    split.mkdir(parents=True, exist_ok=True)
    (split / ATTACHMENT).write_text("Bluebird\n")
    path = split / name
    if name.endswith(".jsonl"):
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    source = CaseSource(path=path, display=f"{SPLIT}/{name}", options=options)
    return list(GaiaSuite().load(source, _context(tmp_path)))


def _cases(items: list[EvalCase | CaseFileError]) -> list[EvalCase]:
    assert all(isinstance(item, EvalCase) for item in items), items
    return [item for item in items if isinstance(item, EvalCase)]


def test_case_shape(tmp_path: Path) -> None:
    (case,) = _cases(_load(tmp_path, [ROWS[2]]))
    assert case.case_id == "t3"
    assert case.suite == "gaia"
    assert case.category == "level1"
    assert case.tool_mode == "broker"
    assert case.max_turns == 5
    assert case.expect == {"final_answer": "Bluebird"}
    assert [m.role for m in case.messages] == ["system", "user"]
    assert case.messages[0].content == GAIA_SYSTEM_PROMPT
    assert case.messages[1].content == (
        f"What word is in the file?\n\nAttached file: {SPLIT}/{ATTACHMENT}"
    )
    attachment = (tmp_path / SPLIT / ATTACHMENT).resolve()
    assert case.metadata == {
        "file_name": ATTACHMENT,
        "Annotator Metadata": ROWS[2]["Annotator Metadata"],
        "level": 1,
        "attachment": str(attachment),
    }


def test_prompt_paths_and_tools_options(tmp_path: Path) -> None:
    (case,) = _cases(
        _load(
            tmp_path,
            [ROWS[2]],
            system_prompt="Answer tersely. FINAL ANSWER: x",
            attachment_paths="absolute",
            max_turns=2,
            tools=["read_file"],
        )
    )
    assert case.messages[0].content == "Answer tersely. FINAL ANSWER: x"
    assert case.messages[1].content.endswith(  # type: ignore[union-attr]
        f"Attached file: {(tmp_path / SPLIT / ATTACHMENT).resolve().as_posix()}"
    )
    assert case.max_turns == 2
    assert [tool.name for tool in case.tools] == ["read_file"]
    (bare,) = _cases(_load(tmp_path, [ROWS[0]], system_prompt=""))
    assert [m.role for m in bare.messages] == ["user"]
    assert bare.metadata["attachment"] is None


def test_columns_ids_levels_and_truths(tmp_path: Path) -> None:
    rows = [
        {"question": "lower-case columns", "final_answer": 42, "id": 7, "Level": "2"},
        {"Question": "no id", "answer": "x", "Level": None},
        {"Question": "both", "question": "first wins", "answer": "y"},
    ]
    first, second, third = _cases(_load(tmp_path, rows))
    assert (first.case_id, first.category, first.expect) == ("7", "level2", {"final_answer": 42})
    assert (second.case_id, second.category, second.metadata["level"]) == ("row1", None, None)
    assert third.messages[-1].content == "first wins"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"Question": "q", "Final answer": None}, "Final answer: missing (null)"),
        ({"Question": "q", "Final answer": ["a"]}, 'Final answer: expected a string, got ["a"]'),
        ({"Question": 3, "Final answer": "a"}, "Question: expected a string, got a number"),
        ({"Question": "q", "Final answer": "a", "Level": "two"}, "Level: expected a whole number"),
        ({"Question": "q", "Final answer": "a", "file_path": "nope.png"}, "'nope.png' not found"),
    ],
)
def test_bad_rows_are_errors(tmp_path: Path, row: dict[str, Any], message: str) -> None:
    (item,) = _load(tmp_path, [row])
    assert isinstance(item, CaseFileError)
    assert message in str(item)
    assert str(item).startswith(f"{SPLIT}/metadata.jsonl:1: ")


def test_levels_then_shuffle_then_limit_is_deterministic(tmp_path: Path) -> None:
    ids = [row["task_id"] for row in ROWS]
    shuffled = _cases(_load(tmp_path, ROWS, shuffle=True, seed=7))
    again = _cases(_load(tmp_path, ROWS, shuffle=True, seed=7))
    expected = list(ids)
    random.Random(7).shuffle(expected)
    assert [c.case_id for c in shuffled] == [c.case_id for c in again] == expected
    other = _cases(_load(tmp_path, ROWS, shuffle=True, seed=8))
    assert [c.case_id for c in other] != expected
    picked = _cases(_load(tmp_path, ROWS, shuffle=True, seed=7, levels=[2, 3], limit=2))
    level_ids = ["t4", "t5", "t6"]
    random.Random(7).shuffle(level_ids)
    assert [c.case_id for c in picked] == level_ids[:2]
    assert [c.case_id for c in _cases(_load(tmp_path, ROWS, limit=2))] == ["t1", "t2"]
    # without shuffle, seed changes nothing
    assert [c.case_id for c in _cases(_load(tmp_path, ROWS, seed=3))] == ids


def test_broken_lines_are_kept_whatever_the_filters(tmp_path: Path) -> None:
    split = tmp_path / "s"
    split.mkdir()
    path = split / "metadata.jsonl"
    path.write_text(json.dumps(ROWS[0]) + "\n{broken\n" + json.dumps(ROWS[3]) + "\n")
    source = CaseSource(path=path, display="s/metadata.jsonl", options={"levels": [2]})
    items = list(GaiaSuite().load(source, _context(tmp_path)))
    assert [type(i).__name__ for i in items] == ["CaseFileError", "EvalCase"]
    assert isinstance(items[0], CaseFileError) and items[0].line == 2


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"level": [1]}, "manifest option level: unknown option; GAIA options are"),
        ({"limit": 0}, "manifest option limit: expected a whole number >= 1, got 0"),
        ({"limit": "5"}, "manifest option limit: expected a whole number, got a string"),
        ({"shuffle": "yes"}, "manifest option shuffle: expected true or false"),
        ({"levels": []}, "manifest option levels: expected a non-empty list"),
        ({"levels": ["1"]}, "manifest option levels: expected a non-empty list"),
        ({"tools": "calculator"}, "manifest option tools: expected a list of tool names"),
        ({"attachment_paths": "both"}, "expected one of relative, absolute, got 'both'"),
        ({"dataset_root": "s3://bucket"}, "'s3://bucket' is a remote location"),
    ],
)
def test_bad_options_are_one_file_error(
    tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    (item,) = _load(tmp_path, ROWS, **options)
    assert isinstance(item, CaseFileError)
    assert item.line is None
    assert message in str(item)


def test_relative_dirs_are_taken_from_the_data_files_folder(tmp_path: Path) -> None:
    files = tmp_path / "files"
    files.mkdir()
    (files / "x.csv").write_text("a,b\n")
    row = {**ROWS[0], "file_name": "x.csv"}
    (case,) = _cases(_load(tmp_path, [row], split_dir="../../../files"))
    assert case.metadata["attachment"] == str((files / "x.csv").resolve())
    assert case.messages[-1].content.endswith("Attached file: files/x.csv")  # type: ignore[union-attr]
    row = {**ROWS[0], "file_name": "", "file_path": "files/x.csv"}
    (case,) = _cases(_load(tmp_path, [row], dataset_root="../../.."))
    assert case.metadata["attachment"] == str((files / "x.csv").resolve())


def test_missing_pyarrow_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    path = tmp_path / "metadata.parquet"
    path.write_bytes(b"PAR1")
    (item,) = read_rows(CaseSource(path=path, display="metadata.parquet"))
    assert isinstance(item, CaseFileError)
    assert str(item) == f"metadata.parquet: reading Parquet needs pyarrow: {INSTALL_HINT}"


def test_a_corrupt_parquet_file_is_one_error(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    path = tmp_path / "metadata.parquet"
    path.write_bytes(b"not parquet at all")
    (item,) = read_rows(CaseSource(path=path, display="metadata.parquet"))
    assert isinstance(item, CaseFileError)
    assert "cannot read the Parquet file" in str(item)


def test_gaia_is_registered_and_claims_nothing(tmp_path: Path) -> None:
    suites = builtin_suites()
    # the suites that claim no file by its content come after those that do
    assert suites.names()[-2:] == ["gaia", "bfcl"]
    assert suites.get("gaia") is not None
    head = (json.dumps(ROWS[0]) + "\n").encode()
    assert GaiaSuite().claims(tmp_path / "metadata.jsonl", head) is False
