"""Collection: node ids, markers, selection, manifests, reportinfo, help, opting out."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import read_jsonl, write_json, write_jsonl

ROOT = Path(__file__).resolve().parents[2]

GOLDEN = [
    {"id": "w-2", "category": "weather", "input": "weather please", "expected_output": "x"},
    {"id": "s-1", "category": "web search", "input": "search it", "expected_output": "x"},
    {"id": "w-1", "category": "weather", "input": "weather now", "expected_output": "x"},
]


def test_one_sorted_item_per_case(scripted: pytest.Pytester) -> None:
    write_json(scripted, "evals/qa.golden.json", GOLDEN)
    result = scripted.runpytest("--collect-only", "-q", "--llmeval-runner", "scripted")
    result.stdout.fnmatch_lines(
        [
            "evals/qa.golden.json::s-1",
            "evals/qa.golden.json::w-1",
            "evals/qa.golden.json::w-2",
            "3 tests collected*",
        ]
    )


def test_collection_reads_ids_and_builds_each_case_on_first_use(
    scripted: pytest.Pytester,
) -> None:
    """A row that parses is an item by its id at once; the rest of it is validated (and the
    case built) when the case is first needed, and a problem found there is its error."""
    rows = [*GOLDEN, {"id": "bad", "category": "weather", "input": 3, "expected_output": "x"}]
    write_jsonl(scripted, "qa.eval.jsonl", rows)
    items, _ = scripted.inline_genitems("--llmeval-runner", "echo")
    assert [item.name for item in items] == ["bad", "s-1", "w-1", "w-2"]
    assert all(item._case is None for item in items)  # nothing built by collection
    assert [m.name for m in items[0].iter_markers()] == ["llmeval", "golden", "weather"]
    assert items[1].case is not None and items[1].case.case_id == "s-1"
    assert items[0].case is None
    assert str(items[0].problem).startswith("qa.eval.jsonl:4: input:")
    result = scripted.runpytest("--llmeval-runner", "echo", "-q", "-m", "weather")
    result.stdout.fnmatch_lines(["*ERROR at setup of golden: bad*", "qa.eval.jsonl:4: input:*"])
    result.assert_outcomes(failed=2, errors=1, deselected=1)
    run_dir = next((scripted.path / ".llmeval" / "runs").iterdir())
    bad = next(r for r in read_jsonl(run_dir / "results.jsonl") if r["case_id"] == "bad")
    assert (bad["outcome"], bad["category"], bad["line"]) == ("error", "weather", 4)


def test_markers_select_suite_and_category(scripted: pytest.Pytester) -> None:
    write_json(scripted, "qa.golden.json", GOLDEN)
    result = scripted.runpytest("-m", "web_search", "--llmeval-runner", "echo", "-v")
    result.stdout.fnmatch_lines(["*qa.golden.json::s-1 *", "*1 failed, 2 deselected*"])
    result = scripted.runpytest("-m", "golden and weather", "--llmeval-runner", "echo", "-q")
    result.stdout.fnmatch_lines(["*2 failed, 1 deselected*"])
    result = scripted.runpytest("-k", "w-1", "--llmeval-runner", "echo", "-q", "--strict-markers")
    result.stdout.fnmatch_lines(["*1 failed, 2 deselected*"])


def test_a_category_named_like_a_suite_does_not_select_it(scripted: pytest.Pytester) -> None:
    """-m golden selects the golden suite only; a golden category (tool-forge's
    golden tier, or any case's category) is -m category_golden."""
    write_json(scripted, "qa.golden.json", [*GOLDEN, {**GOLDEN[0], "id": "g", "category": "gaia"}])
    items, _ = scripted.inline_genitems("--llmeval-runner", "echo")
    marks = {item.name: [m.name for m in item.iter_markers()] for item in items}
    assert marks["g"] == ["llmeval", "golden", "category_gaia"]
    assert marks["w-1"] == ["llmeval", "golden", "weather"]
    toolforge = ROOT / "evals" / "get_weather.golden.json"
    (scripted.path / "get_weather.golden.json").write_text(toolforge.read_text())
    golden = scripted.runpytest("-m", "golden", "--llmeval-runner", "echo", "--co", "-q")
    golden.stdout.fnmatch_lines(["4/* tests collected (* deselected)*"])
    assert "get_weather.golden.json" not in golden.stdout.str()
    tier = scripted.runpytest("-m", "category_golden", "--llmeval-runner", "echo", "--co", "-q")
    assert (
        "get_weather.golden.json::" in tier.stdout.str()
        and "qa.golden.json" not in tier.stdout.str()
    )
    gaia = scripted.runpytest("-m", "category_gaia", "--llmeval-runner", "echo", "--co", "-q")
    gaia.stdout.fnmatch_lines(["qa.golden.json::g", "1/* tests collected*"])


def test_a_category_named_like_a_pytest_mark_does_not_act(scripted: pytest.Pytester) -> None:
    """A category ``skip`` or ``xfail`` must not skip or xfail its failing case."""
    rows = [{"id": name, "category": name, "input": "a", "expected_output": "b"}
            for name in ("skip", "xfail", "usefixtures")]  # fmt: skip
    write_json(scripted, "qa.golden.json", rows)
    result = scripted.runpytest("--llmeval-runner", "echo", "-q", "-m", "category_xfail")
    result.assert_outcomes(failed=1, deselected=2)
    result = scripted.runpytest("--llmeval-runner", "echo", "-q")
    result.assert_outcomes(failed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_reportinfo_points_at_the_case_line(scripted: pytest.Pytester) -> None:
    write_json(scripted, "qa.golden.json", GOLDEN)
    items, _ = scripted.inline_genitems("--llmeval-runner", "echo")
    locations = {item.name: item.location for item in items}
    # the array is pretty-printed: '[' on line 1, one object per 6 lines after it
    assert locations["w-2"] == ("qa.golden.json", 1, "golden: w-2")
    assert locations["s-1"] == ("qa.golden.json", 7, "golden: s-1")


def test_manifest_names_suite_data_and_thresholds(scripted: pytest.Pytester) -> None:
    write_json(
        scripted,
        "data/qa.json",
        [
            {
                "id": "a",
                "category": "kw",
                "input": "hello big world",
                "keywords": ["hello", "moon"],
            },
            {"id": "b", "category": "kw", "input": "hello moon", "keywords": ["hello", "moon"]},
        ],
    )
    scripted.path.joinpath("qa.llmeval.yaml").write_text(
        "suite: golden\ndata: data/qa.json\nthresholds:\n  kw:\n    contains_keywords: 0.5\n"
    )
    result = scripted.runpytest("--llmeval-runner", "echo", "-v")
    result.stdout.fnmatch_lines(["qa.llmeval.yaml::a PASSED*", "qa.llmeval.yaml::b PASSED*"])
    result.assert_outcomes(passed=2)


def test_data_file_named_by_a_manifest_is_not_collected_twice(scripted: pytest.Pytester) -> None:
    write_json(scripted, "qa.golden.json", GOLDEN[:1])
    scripted.path.joinpath("qa.llmeval.yaml").write_text("suite: golden\ndata: qa.golden.json\n")
    result = scripted.runpytest("--collect-only", "-q", "--llmeval-runner", "echo")
    result.stdout.fnmatch_lines(["qa.llmeval.yaml::w-2", "1 test collected*"])


def test_an_edited_manifest_is_read_afresh_by_the_next_in_process_run(
    scripted: pytest.Pytester,
) -> None:
    write_json(scripted, "one.golden.json", GOLDEN[:1])
    write_json(scripted, "two.golden.json", GOLDEN[1:2])
    manifest = scripted.path / "qa.llmeval.yaml"
    manifest.write_text("suite: golden\ndata: one.golden.json\n")
    result = scripted.runpytest("--collect-only", "-q", "--llmeval-runner", "echo")
    result.stdout.fnmatch_lines(["qa.llmeval.yaml::w-2", "two.golden.json::s-1", "2 tests*"])
    manifest.write_text("suite: golden\ndata: two.golden.json\n")
    result = scripted.runpytest("--collect-only", "-q", "--llmeval-runner", "echo")
    result.stdout.fnmatch_lines(["one.golden.json::w-2", "qa.llmeval.yaml::s-1", "2 tests*"])


def test_manifest_with_unknown_suite_is_an_error_item(scripted: pytest.Pytester) -> None:
    write_json(scripted, "data.json", GOLDEN)
    scripted.path.joinpath("x.llmeval.yaml").write_text("# comment\nsuite: nope\ndata: data.json\n")
    write_json(scripted, "ok.golden.json", GOLDEN[:1])
    result = scripted.runpytest("--llmeval-runner", "echo", "-q")
    result.stdout.fnmatch_lines(
        [
            "x.llmeval.yaml:2: suite: unknown suite 'nope'; "
            "known suites: integration, toolforge, when2call, golden*"
        ]
    )
    result.assert_outcomes(failed=1, errors=1)


def test_ini_globs_choose_the_files(scripted: pytest.Pytester) -> None:
    write_jsonl(scripted, "cases/qa.jsonl", [{"id": "a", "input": "hi", "expected_output": "hi"}])
    scripted.makeini("[pytest]\nllmeval_files = *.jsonl\n")
    result = scripted.runpytest("--llmeval-runner", "echo", "-q")
    result.assert_outcomes(passed=1)


def test_help_documents_every_option(pytester: pytest.Pytester) -> None:
    from pytest_llmeval.config.settings import OPTIONS

    result = pytester.runpytest("--help")
    text = result.stdout.str()
    assert "pytest-llmeval-harness: runner and model" in text  # the groups: test_help_groups.py
    for spec in OPTIONS:
        assert spec.flag in text, spec.flag


def test_plugin_can_be_disabled(scripted: pytest.Pytester) -> None:
    write_json(scripted, "qa.golden.json", GOLDEN)
    scripted.makeconftest("")  # the scripted runner hook needs the plugin's hookspecs
    result = scripted.runpytest("-p", "no:llmeval", "-q")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_bad_option_values_are_usage_errors(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--llmeval-concurrency", "many")
    result.stderr.fnmatch_lines(
        ["*--llmeval-concurrency takes a whole number from 1 to 1,000, got 'many'*"]
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result = pytester.runpytest("--llmeval-runner", "http-agent")
    result.stderr.fnmatch_lines(["*--llmeval-runner http-agent needs --llmeval-agent-url*"])


def test_unknown_runner_names_the_known_ones(scripted: pytest.Pytester) -> None:
    write_json(scripted, "qa.golden.json", GOLDEN[:1])
    result = scripted.runpytest("--llmeval-runner", "gpt-9", "-q")
    result.stderr.fnmatch_lines(["*unknown runner 'gpt-9'*known runners:*echo*http-agent*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_readme_documents_every_option() -> None:
    from pathlib import Path

    from pytest_llmeval.config.settings import OPTIONS

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    missing = [spec.flag for spec in OPTIONS if f"`{spec.flag}" not in readme]
    assert missing == []
