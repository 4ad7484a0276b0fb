"""ToolBroker: normalisation, fixtures, stubs, misses, accounting, fingerprints."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.core.errors import ConfigError
from pytest_llmeval.tools.broker import ToolBroker, normalize_args

SEARCH_RESULT = {"ok": True, "hits": [{"title": "RoPE", "url": "https://example.org/rope"}]}


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture
def fixtures_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "fixtures"
    folder.mkdir()
    rope = {"q": "rope precision", "top_k": 3}
    gemma = {"q": "embedding gemma pooling fp16", "top_k": 5}
    write_jsonl(
        folder / "web.search.jsonl",
        [
            {"name": "web.search", "key": rope, "result": SEARCH_RESULT},
            {"name": "web.search", "key": gemma, "result": {"ok": True, "hits": []}},
        ],
    )
    # The seed's read_file example is a pretty-printed object in a .jsonl file.
    (folder / "read_file.jsonl").write_text(
        json.dumps(
            {"name": "read_file", "key": {"path": "README.md"}, "result": {"ok": True}}, indent=2
        )
        + "\n",
        encoding="utf-8",
    )
    return folder


@pytest.fixture
def broker(fixtures_dir: Path) -> ToolBroker:
    return ToolBroker.from_dir(fixtures_dir)


# ---------------------------------------------------------------- normalisation


def test_seed_examples_all_hit_the_same_fixture(broker: ToolBroker) -> None:
    calls = [
        {"q": "  ROPE  Precision  "},
        {"q": "rope precision"},
        {"q": "ROPE PRECISION", "top_k": None},
        {"q": "rope precision"},
    ]
    for args in calls:
        record = broker.call("web.search", args)
        assert record.source == "fixture", args
        assert record.success
        assert record.result == SEARCH_RESULT
        assert record.params == args  # as the model passed them
    assert (broker.hits, broker.misses) == (4, 0)


def test_none_values_dropped_at_top_level_only() -> None:
    args = {"path": "a", "limit": None, "opts": {"x": None}}
    assert normalize_args("read_file", args) == {"path": "a", "opts": {"x": None}}
    assert args == {"path": "a", "limit": None, "opts": {"x": None}}  # pure


def test_top_k_default_only_for_web_search_tools() -> None:
    assert normalize_args("web.search", {"q": "x"}) == {"q": "x", "top_k": 3}
    assert normalize_args("web.search_news", {"q": "x"})["top_k"] == 3
    assert normalize_args("web.search", {"q": "x", "top_k": 7}) == {"q": "x", "top_k": 7}
    assert normalize_args("docs.search", {"q": "x"}) == {"q": "x"}
    assert normalize_args("search", {"query": "x"}) == {"query": "x"}


def test_query_fields_lowercased_and_whitespace_collapsed() -> None:
    args = {"query": "\tHello \n  WORLD ", "q": " A  B ", "title": "  Keep  Me  "}
    assert normalize_args("kb", args) == {
        "query": "hello world",
        "q": "a b",
        "title": "  Keep  Me  ",
    }
    assert normalize_args("kb", {"q": 5}) == {"q": 5}  # non-strings untouched


# ---------------------------------------------------------------- misses, stubs, modes


def test_miss_record_carries_normalized_args_and_nearest(broker: ToolBroker) -> None:
    record = broker.call("web.search", {"q": "  Rope  Scaling", "top_k": 5})
    assert record.source == "miss"
    assert not record.success
    assert record.result == {
        "error": "fixture_miss",
        "tool": "web.search",
        "normalized_args": {"q": "rope scaling", "top_k": 5},
        "nearest": {"q": "embedding gemma pooling fp16", "top_k": 5},  # shares top_k=5
    }
    assert record.duration_ms >= 0


def test_miss_nearest_is_null_for_tool_without_fixtures(broker: ToolBroker) -> None:
    record = broker.call("calculator", {"expr": "1+1"})
    assert record.result["nearest"] is None
    assert record.result["normalized_args"] == {"expr": "1+1"}


def test_nearest_ties_are_deterministic() -> None:
    entries = [
        {"name": "t", "key": {"a": 1, "b": 2}, "result": 1},
        {"name": "t", "key": {"a": 1, "b": 3}, "result": 2},
    ]
    for order in (entries, entries[::-1]):
        result = ToolBroker(order).call("t", {"a": 1, "b": 9}).result
        assert result["nearest"] == {"a": 1, "b": 2}


def test_stubs_take_precedence_over_fixtures_in_broker_mode(broker: ToolBroker) -> None:
    stubs = {"web.search": {"stubbed": True}}
    record = broker.call("web.search", {"q": "rope precision"}, stubs=stubs)
    assert (record.source, record.result, record.success) == ("stub", {"stubbed": True}, True)
    record = broker.call("read_file", {"path": "README.md"}, stubs=stubs)
    assert record.source == "fixture"


def test_stubs_mode_ignores_fixtures(broker: ToolBroker) -> None:
    record = broker.call("read_file", {"path": "README.md"}, stubs={}, mode="stubs")
    assert record.source == "miss"
    assert record.result["error"] == "fixture_miss"
    record = broker.call("read_file", {"path": "x"}, stubs={"read_file": [1, 2]}, mode="stubs")
    assert (record.source, record.result) == ("stub", [1, 2])
    assert broker.call("read_file", {}, stubs=None, mode="stubs").source == "miss"


def test_routing_mode_executes_nothing(broker: ToolBroker) -> None:
    record = broker.call(
        "web.search", {"q": "rope precision"}, stubs={"web.search": 1}, mode="routing"
    )
    assert (record.source, record.result, record.success) == ("routing", None, True)
    assert record.params == {"q": "rope precision"}
    assert (broker.hits, broker.misses) == (0, 0)


def test_results_are_copies(broker: ToolBroker) -> None:
    first = broker.call("read_file", {"path": "README.md"}).result
    first["ok"] = False
    assert broker.call("read_file", {"path": "README.md"}).result == {"ok": True}


# ---------------------------------------------------------------- accounting


def test_hit_and_miss_counts_per_tool(broker: ToolBroker) -> None:
    broker.call("web.search", {"q": "rope precision"})
    broker.call("web.search", {"q": "nothing"})
    broker.call("read_file", {"path": "README.md"})
    broker.call("write_file", {"path": "x"}, stubs={"write_file": "ok"})
    assert (broker.hits, broker.misses) == (3, 1)
    assert broker.stats() == {
        "read_file": {"hits": 1, "misses": 0},
        "web.search": {"hits": 1, "misses": 1},
        "write_file": {"hits": 1, "misses": 0},
    }


def test_counts_are_exact_from_many_threads(broker: ToolBroker) -> None:
    per_thread, threads = 200, 8
    barrier = threading.Barrier(threads)

    def work() -> None:
        barrier.wait()
        for i in range(per_thread):
            args = {"q": "rope precision"} if i % 2 else {"q": f"miss {i}"}
            broker.call("web.search", args)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    total = per_thread * threads
    assert (broker.hits, broker.misses) == (total // 2, total // 2)
    assert broker.stats()["web.search"] == {"hits": total // 2, "misses": total // 2}


# ---------------------------------------------------------------- fixture files


def test_missing_or_none_dir_gives_empty_broker(tmp_path: Path) -> None:
    for path in (None, tmp_path / "nope"):
        empty = ToolBroker.from_dir(path)
        assert len(empty) == 0
        assert empty.call("web.search", {"q": "x"}).source == "miss"


def test_only_top_level_jsonl_files_are_loaded(fixtures_dir: Path) -> None:
    (fixtures_dir / "cassettes").mkdir()
    write_jsonl(fixtures_dir / "cassettes" / "x.jsonl", [{"bad": True}])
    (fixtures_dir / "notes.json").write_text("not json", encoding="utf-8")
    broker = ToolBroker.from_dir(fixtures_dir)
    assert len(broker) == 3
    assert broker.tools == ["read_file", "web.search"]


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"name": "t", "key": {}}', "result"),
        ('{"name": "", "key": {}, "result": 1}', "name"),
        ('{"name": "t", "key": [1], "result": 1}', "key"),
        ('{"key": {}, "result": 1}', "name"),
        ('{"name": "t", "key": {}, "result": 1, "reslt": 2}', "reslt"),
    ],
)
def test_malformed_line_names_path_line_and_field(tmp_path: Path, line: str, field: str) -> None:
    path = tmp_path / "tools.jsonl"
    good = '{"name": "t", "key": {"a": 1}, "result": 1}'
    path.write_text(f"{good}\n\n{line}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as excinfo:
        ToolBroker.from_dir(tmp_path)
    assert f"{path}:3: {field}:" in str(excinfo.value)


def test_invalid_json_names_path_and_line(tmp_path: Path) -> None:
    path = tmp_path / "tools.jsonl"
    path.write_text('{"name": "t", "key": {}, "result": 1}\n{"name": "t", \n', encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape(f"{path}:2: invalid JSON")):
        ToolBroker.from_dir(tmp_path)


def test_conflicting_duplicates_name_both_lines(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            {"name": "web.search", "key": {"q": "Rope"}, "result": 1},
            {"name": "other", "key": {}, "result": 0},
            {"name": "web.search", "key": {"q": " rope ", "top_k": 3}, "result": 2},
        ],
    )
    with pytest.raises(ConfigError) as excinfo:
        ToolBroker.from_dir(tmp_path)
    assert f"{path}:3" in str(excinfo.value)
    assert f"{path}:1" in str(excinfo.value)


def test_identical_duplicates_are_harmless(tmp_path: Path) -> None:
    row = {"name": "t", "key": {"a": 1}, "result": {"x": 1}}
    write_jsonl(tmp_path / "a.jsonl", [row])
    write_jsonl(tmp_path / "b.jsonl", [row])
    broker = ToolBroker.from_dir(tmp_path)
    assert len(broker) == 1
    assert broker.fingerprint() == ToolBroker([row]).fingerprint()


# ---------------------------------------------------------------- fingerprint


def test_fingerprint_covers_content_not_file_order(tmp_path: Path) -> None:
    rows = [
        {"name": "a", "key": {"x": 1}, "result": 1},
        {"name": "b", "key": {"y": 2}, "result": 2},
        {"name": "web.search", "key": {"q": "Z"}, "result": 3},
    ]
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    write_jsonl(one / "all.jsonl", rows)
    write_jsonl(two / "z.jsonl", rows[::-1][:1])
    write_jsonl(two / "a.jsonl", rows[::-1][1:])
    fp = ToolBroker.from_dir(one).fingerprint()
    assert ToolBroker.from_dir(two).fingerprint() == fp
    assert ToolBroker(rows[::-1]).fingerprint() == fp
    # Keys are fingerprinted normalised: an equivalent spelling changes nothing ...
    respelled = [*rows[:2], {"name": "web.search", "key": {"q": " z ", "top_k": 3}, "result": 3}]
    assert ToolBroker(respelled).fingerprint() == fp
    # ... a different result does.
    changed = [*rows[:2], {"name": "web.search", "key": {"q": "Z"}, "result": 4}]
    assert ToolBroker(changed).fingerprint() != fp
    assert ToolBroker().fingerprint() != fp
