"""Reading a BFCL data folder: items, categories, ids, broken rows, the installed package."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.core.errors import ConfigError
from pytest_llmeval.suites import bfcl_data, bfcl_prompts
from pytest_llmeval.suites.bfcl_data import (
    CATEGORIES,
    default_data_dir,
    package_dir,
    read_data,
    select_categories,
)

DATA = Path(__file__).parents[1] / "data" / "bfcl"


def test_the_vendored_folder_reads_every_category_present_without_an_error() -> None:
    categories = select_categories(DATA, None)
    assert categories == [c for c in CATEGORIES if (DATA / f"BFCL_v4_{c}.json").exists()]
    assert len(categories) == 17
    data = read_data(DATA, categories)
    assert data.errors == []
    assert {item.category for item in data.items} == set(categories)
    first = data.items[0]
    assert (first.path, first.line) == (str(DATA / "BFCL_v4_simple_python.json"), 1)
    relevance = [i for i in data.items if "relevance" in i.category]
    assert relevance and all(i.ground_truth is None for i in relevance)


def test_a_multi_turn_item_has_its_classes_docs_and_the_held_out_ones_apart() -> None:
    data = read_data(DATA, ["multi_turn_miss_func"], ids=["multi_turn_miss_func_41"])
    (item,) = data.items
    assert item.involved_classes == ["MessageAPI", "GorillaFileSystem"]
    assert set(item.initial_config) <= set(item.involved_classes)
    held = [doc["name"] for doc in item.missed_function["1"]]
    assert held == ["get_user_id", "list_users"]
    names = [doc["name"] for doc in item.functions]
    assert not set(held) & set(names)
    docs = DATA / "multi_turn_func_doc"
    lines = (docs / "message_api.json").read_text().splitlines()
    message_api = [json.loads(line)["name"] for line in lines]
    assert names[: len(message_api) - 2] == [n for n in message_api if n not in held]
    assert len(item.ground_truth or []) == len(item.question)


def test_categories_all_a_list_and_the_refusals_name_the_manifest_key(tmp_path: Path) -> None:
    assert select_categories(DATA, "all") == list(CATEGORIES)
    assert select_categories(DATA, ["parallel", "simple_java"]) == ["simple_java", "parallel"]
    shutil.copy(DATA / "BFCL_v4_parallel.json", tmp_path)
    assert select_categories(tmp_path, None) == ["parallel"]
    with pytest.raises(ConfigError, match=r"categories:.*BFCL_v4_multiple\.json"):
        select_categories(tmp_path, "all")
    with pytest.raises(ConfigError, match=r"categories:.*unknown category 'simple'"):
        select_categories(DATA, ["simple"])
    with pytest.raises(ConfigError, match=r"categories:.*'web_search_base' is agentic"):
        select_categories(DATA, ["web_search_base"])
    with pytest.raises(ConfigError, match="`data:`"):
        select_categories(tmp_path / "empty", None)


def test_ids_select_items_and_an_unknown_id_is_a_configuration_error() -> None:
    data = read_data(DATA, ["simple_python", "parallel"], ids=["parallel_178"])
    assert [item.id for item in data.items] == ["parallel_178"]
    with pytest.raises(ConfigError, match=r"ids:.*'parallel_9999'"):
        read_data(DATA, ["parallel"], ids=["parallel_178", "parallel_9999"])


def _row(row_id: str, **changes: Any) -> str:
    row: dict[str, Any] = {
        "id": row_id,
        "question": [[{"role": "user", "content": "q"}]],
        "function": [
            {
                "name": "f",
                "description": "d",
                "parameters": {"type": "dict", "properties": {}, "required": []},
            }
        ],
    }
    row.update(changes)
    return json.dumps({k: v for k, v in row.items() if v is not None})


def test_a_broken_row_is_its_own_error_with_path_line_and_field(tmp_path: Path) -> None:
    lines = [
        _row("simple_python_0"),
        "{not json",
        _row("simple_python_2", question=None),
        _row("simple_python_3"),
        _row("parallel_4"),
        _row("simple_python_5", function=[{"name": "g"}]),
        _row("simple_python_6"),
    ]
    (tmp_path / "BFCL_v4_simple_python.json").write_text("\n".join(lines) + "\n")
    (tmp_path / "possible_answer").mkdir()
    truths = [{"id": f"simple_python_{k}", "ground_truth": [{"f": {}}]} for k in (0, 2, 5, 6)]
    (tmp_path / "possible_answer" / "BFCL_v4_simple_python.json").write_text(
        "".join(json.dumps(t) + "\n" for t in truths)
    )
    data = read_data(tmp_path, ["simple_python"], display_root=tmp_path)
    assert [item.id for item in data.items] == ["simple_python_0", "simple_python_6"]
    found = {(e.line, e.field) for e in data.errors}
    assert found == {
        (2, None),
        (3, "question"),
        (4, "ground_truth"),
        (5, "id"),
        (6, "function[0]"),
    }
    assert all(e.path == "BFCL_v4_simple_python.json" for e in data.errors)
    assert "BFCL_v4_simple_python.json:4: ground_truth: no row with this id" in str(
        next(e for e in data.errors if e.line == 4)
    )


def test_a_multi_turn_row_with_an_unknown_class_is_its_error(tmp_path: Path) -> None:
    row = json.loads((DATA / "BFCL_v4_multi_turn_base.json").read_text().splitlines()[0])
    row["involved_classes"] = ["NoSuchAPI"]
    (tmp_path / "BFCL_v4_multi_turn_base.json").write_text(json.dumps(row) + "\n")
    shutil.copytree(DATA / "possible_answer", tmp_path / "possible_answer")
    data = read_data(tmp_path, ["multi_turn_base"])
    (error,) = data.errors
    assert (error.line, error.field, error.case_id) == (1, "involved_classes", row["id"])
    assert "unknown class 'NoSuchAPI'" in error.message


def test_without_the_package_the_error_names_the_install_line_and_data_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigError) as caught:
        default_data_dir()
    assert "pip install --no-deps bfcl-eval==2026.3.23" in str(caught.value)
    assert "`data:`" in str(caught.value)
    monkeypatch.setattr(bfcl_prompts, "package_dir", lambda: None)
    bfcl_prompts.installed_texts.cache_clear()
    try:
        with pytest.raises(ConfigError, match="pip install --no-deps bfcl-eval"):
            bfcl_prompts.installed_texts()
    finally:
        bfcl_prompts.installed_texts.cache_clear()


@pytest.mark.skipif(package_dir() is None, reason="needs `pip install --no-deps bfcl-eval`")
def test_the_installed_package_is_found_and_read_without_importing_it() -> None:
    was_imported = "bfcl_eval" in sys.modules
    folder = default_data_dir()
    assert (folder / "BFCL_v4_simple_python.json").is_file()
    texts = bfcl_prompts.installed_texts()
    assert texts.persona.startswith("You are an expert")
    assert texts.additional_functions_prompting.startswith("{functions}\n")
    assert texts.additional_functions_prompting.endswith(texts.additional_functions_fc)
    assert ("bfcl_eval" in sys.modules) == was_imported
    assert bfcl_data.PACKAGE_PIN == "bfcl-eval==2026.3.23"
