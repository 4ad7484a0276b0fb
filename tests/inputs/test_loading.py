from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.core.errors import CaseFileError
from pytest_llmeval.inputs.loading import (
    JsonDocument,
    Record,
    first_record,
    head_records,
    iter_json_document,
    iter_jsonl,
    json_type,
    lone_surrogate,
    read_json_document,
    sniff,
)


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


def jsonl(tmp_path: Path, content: str | bytes) -> list[Record]:
    return list(iter_jsonl(write(tmp_path, "cases.jsonl", content), "evals/cases.jsonl"))


def document(
    tmp_path: Path, content: str | bytes, array_key: str | None = "cases"
) -> tuple[dict[str, Any] | None, list[Record]]:
    path = write(tmp_path, "cases.json", content)
    header, records = iter_json_document(path, "evals/cases.json", array_key)
    return header, list(records)


def summary(records: list[Record]) -> list[tuple[int | None, int, object]]:
    """(line, index, value or error text) per record."""
    return [(r.line, r.index, str(r.error) if r.error else r.value) for r in records]


# ----------------------------------------------------------------------------------- Record


def test_record_is_frozen() -> None:
    record = Record(line=1, index=0, value={"a": 1}, error=None)
    assert record.ok
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.line = 2  # type: ignore[misc]


def test_json_type_names() -> None:
    values: list[Any] = [{}, [], "s", 1, 1.5, True, None]
    names = [json_type(v) for v in values]
    assert names == ["object", "array", "string", "number", "number", "boolean", "null"]


# ------------------------------------------------------------------------------------ JSONL


def test_jsonl_line_numbers_count_blank_lines_and_crlf(tmp_path: Path) -> None:
    content = '\r\n{"id": "a"}\r\n   \r\n\t\r\n{"id": "b"}\r\n\r\n{"id": "c"}'
    records = jsonl(tmp_path, content)
    assert summary(records) == [(2, 0, {"id": "a"}), (5, 1, {"id": "b"}), (7, 2, {"id": "c"})]


def test_jsonl_tolerates_a_bom(tmp_path: Path) -> None:
    records = jsonl(tmp_path, b'\xef\xbb\xbf{"id": "a"}\n{"id": "b"}\n')
    assert summary(records) == [(1, 0, {"id": "a"}), (2, 1, {"id": "b"})]


def test_jsonl_bom_only_first_line_is_blank(tmp_path: Path) -> None:
    records = jsonl(tmp_path, b'\xef\xbb\xbf\n{"id": "a"}\n')
    assert summary(records) == [(2, 0, {"id": "a"})]


def test_jsonl_invalid_json_is_one_error_and_the_rest_loads(tmp_path: Path) -> None:
    content = '{"id": "a"}\n{"id": "b" "x": 1}\n{"id": "c"}\n'
    records = jsonl(tmp_path, content)
    assert [r.line for r in records] == [1, 2, 3]
    assert [r.index for r in records] == [0, 1, 2]
    assert records[0].value == {"id": "a"}
    assert records[2].value == {"id": "c"}
    broken = records[1]
    assert broken.value is None
    assert isinstance(broken.error, CaseFileError)
    assert broken.error.path == "evals/cases.jsonl"
    assert broken.error.line == 2
    assert broken.error.field is None
    assert str(broken.error) == (
        "evals/cases.jsonl:2: invalid JSON: Expecting ',' delimiter (column 12)"
    )


def test_jsonl_column_of_truncated_line(tmp_path: Path) -> None:
    records = jsonl(tmp_path, '{"id": "a"\r\n')
    assert str(records[0].error) == (
        "evals/cases.jsonl:1: invalid JSON: Expecting ',' delimiter (column 11)"
    )


def test_jsonl_non_object_line(tmp_path: Path) -> None:
    records = jsonl(tmp_path, '[1, 2]\n"text"\nnull\n{"id": "ok"}\n')
    assert summary(records) == [
        (1, 0, "evals/cases.jsonl:1: expected a JSON object, got array"),
        (2, 1, "evals/cases.jsonl:2: expected a JSON object, got string"),
        (3, 2, "evals/cases.jsonl:3: expected a JSON object, got null"),
        (4, 3, {"id": "ok"}),
    ]


def test_jsonl_invalid_utf8(tmp_path: Path) -> None:
    records = jsonl(tmp_path, b'{"id": "a"}\n\n{"id": "\xff"}\n{"id": "caf\xc3\xa9"}\n')
    assert summary(records) == [
        (1, 0, {"id": "a"}),
        (3, 1, "evals/cases.jsonl:3: invalid UTF-8 at byte 9 of the line"),
        (4, 2, {"id": "café"}),
    ]
    assert records[1].value is None


def test_jsonl_deep_nesting_is_an_error_record(tmp_path: Path) -> None:
    records = jsonl(tmp_path, "[" * 100_000 + "\n" + '{"id": "b"}\n')
    assert records[0].error is not None
    assert str(records[0].error).startswith("evals/cases.jsonl:1: invalid JSON")
    assert records[1].value == {"id": "b"}


@pytest.mark.parametrize("content", [b"", b"\n\n  \r\n\t\n"])
def test_jsonl_empty_file(tmp_path: Path, content: bytes) -> None:
    assert jsonl(tmp_path, content) == []


def test_jsonl_unreadable_path_is_one_error(tmp_path: Path) -> None:
    records = list(iter_jsonl(tmp_path, "evals"))
    assert len(records) == 1
    (record,) = records
    assert record.line is None
    assert record.index == 0
    assert record.value is None
    assert record.error is not None
    assert record.error.line is None
    assert str(record.error).startswith("evals: cannot read the file: ")


def test_jsonl_missing_file_is_one_error(tmp_path: Path) -> None:
    records = list(iter_jsonl(tmp_path / "nope.jsonl", "nope.jsonl"))
    assert [str(r.error) for r in records] == [
        "nope.jsonl: cannot read the file: No such file or directory"
    ]


def test_jsonl_streams_a_large_file(tmp_path: Path) -> None:
    lines = 100_000
    path = tmp_path / "big.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for i in range(lines):
            if i == 50_000:
                handle.write("{broken\n")
            else:
                handle.write(json.dumps({"id": f"case-{i}", "input": "x" * 20}) + "\n")
    records = iter_jsonl(path, "big.jsonl")
    streamed = inspect.isgenerator(records)  # own name: asserting on records would narrow its type
    assert streamed
    count = 0
    errors: list[Record] = []
    last: Record | None = None
    for record in records:
        count += 1
        if record.error is not None:
            errors.append(record)
        last = record
    assert count == lines
    assert [(r.line, r.index) for r in errors] == [(50_001, 50_000)]
    assert last is not None
    assert (last.line, last.index, last.value["id"]) == (lines, lines - 1, f"case-{lines - 1}")


# ------------------------------------------------------------------------------------- JSON

PRETTY_ARRAY = """\
[
  {
    "id": "a",
    "input": "one"
  },
  {"id": "b"},

  {
    "id": "c",
    "tags": [
      "x"
    ]
  }
]
"""


def test_json_array_lines_are_the_opening_brace(tmp_path: Path) -> None:
    header, records = document(tmp_path, PRETTY_ARRAY)
    assert header is None
    assert [(r.line, r.index, r.value["id"]) for r in records] == [
        (2, 0, "a"),
        (6, 1, "b"),
        (8, 2, "c"),
    ]
    assert all(r.error is None for r in records)


def test_json_array_with_crlf_and_bom(tmp_path: Path) -> None:
    content = b"\xef\xbb\xbf" + PRETTY_ARRAY.replace("\n", "\r\n").encode()
    header, records = document(tmp_path, content)
    assert header is None
    assert [(r.line, r.value["id"]) for r in records] == [(2, "a"), (6, "b"), (8, "c")]


def test_json_records_is_a_generator(tmp_path: Path) -> None:
    path = write(tmp_path, "cases.json", PRETTY_ARRAY)
    _, records = iter_json_document(path, "cases.json")
    lazy = inspect.isgenerator(records)
    assert lazy
    assert next(records).value["id"] == "a"


def test_json_envelope_metadata_first(tmp_path: Path) -> None:
    content = """\
{
  "name": "suite",
  "version": 2,
  "cases": [
    {"id": "a"},
    {
      "id": "b"
    }
  ]
}
"""
    header, records = document(tmp_path, content)
    assert header == {"name": "suite", "version": 2}
    assert summary(records) == [(5, 0, {"id": "a"}), (6, 1, {"id": "b"})]


def test_json_envelope_array_first_header_is_complete_before_iterating(tmp_path: Path) -> None:
    content = """\
{"cases": [
  {"id": "a", "note": "brackets ] [ in \\"strings\\" ]]"},
  {"id": "b", "nested": [[1, [2]], {"k": ["]"]}]}
],
 "name": "suite",
 "meta": {"owner": "qa", "list": [1, 2]}
}
"""
    doc = read_json_document(write(tmp_path, "cases.json", content), "cases.json")
    assert isinstance(doc, JsonDocument)
    assert doc.header == {"name": "suite", "meta": {"owner": "qa", "list": [1, 2]}}
    records = list(doc.records())
    assert [(r.line, r.index, r.value["id"]) for r in records] == [(2, 0, "a"), (3, 1, "b")]
    assert records[0].value["note"] == 'brackets ] [ in "strings" ]]'


def test_json_envelope_custom_array_key(tmp_path: Path) -> None:
    content = '{"title": "t", "items": [{"id": "a"}]}'
    header, records = document(tmp_path, content, array_key="items")
    assert header == {"title": "t"}
    assert summary(records) == [(1, 0, {"id": "a"})]


def test_json_empty_array_and_empty_envelope_array(tmp_path: Path) -> None:
    assert document(tmp_path, "[ ]\n") == (None, [])
    assert document(tmp_path, '{"cases": [], "x": 1}') == ({"x": 1}, [])


@pytest.mark.parametrize("content", [b"", b"  \n\r\n\t \n", b"\xef\xbb\xbf\n"])
def test_json_empty_file(tmp_path: Path, content: bytes) -> None:
    assert document(tmp_path, content) == (None, [])


def test_json_unreadable_path_is_one_error(tmp_path: Path) -> None:
    header, records = iter_json_document(tmp_path, "evals")
    assert header is None
    (record,) = list(records)
    assert record.line is None
    assert record.index == 0
    assert record.error is not None
    assert record.error.line is None
    assert str(record.error).startswith("evals: cannot read the file: ")


def test_json_syntax_error_mid_array_keeps_earlier_records(tmp_path: Path) -> None:
    content = """\
[
  {"id": "a"},
  {"id": "b"},
  {"id": "c" "oops": 1},
  {"id": "d"}
]
"""
    header, records = document(tmp_path, content)
    assert header is None
    assert summary(records) == [
        (2, 0, {"id": "a"}),
        (3, 1, {"id": "b"}),
        (
            4,
            2,
            "evals/cases.json:4: invalid JSON: Expecting ',' delimiter (column 14); "
            "the rest of the file was not read",
        ),
    ]


def test_json_missing_comma_between_elements(tmp_path: Path) -> None:
    content = '[\n  {"id": "a"}\n  {"id": "b"}\n]\n'
    _, records = document(tmp_path, content)
    assert summary(records) == [
        (2, 0, {"id": "a"}),
        (
            3,
            1,
            "evals/cases.json:3: invalid JSON: Expecting ',' delimiter (column 3); "
            "the rest of the file was not read",
        ),
    ]


def test_json_unterminated_array(tmp_path: Path) -> None:
    _, records = document(tmp_path, '[\n  {"id": "a"},\n  {"id": "b"')
    assert [r.value for r in records[:1]] == [{"id": "a"}]
    assert len(records) == 2
    assert records[1].line == 3
    assert str(records[1].error).startswith("evals/cases.json:3: invalid JSON: ")
    assert str(records[1].error).endswith("; the rest of the file was not read")


def test_json_trailing_garbage_after_array(tmp_path: Path) -> None:
    _, records = document(tmp_path, '[{"id": "a"}]\n\n  xyz\n')
    assert summary(records) == [
        (1, 0, {"id": "a"}),
        (3, 1, "evals/cases.json:3: invalid JSON: Extra data (column 3)"),
    ]


def test_json_envelope_syntax_error_in_array_keeps_header_after_it(tmp_path: Path) -> None:
    content = '{"cases": [\n  {"id": "a"},\n  {"id" "b"}\n],\n "name": "s"}\n'
    header, records = document(tmp_path, content)
    assert header == {"name": "s"}
    assert summary(records) == [
        (2, 0, {"id": "a"}),
        (
            3,
            1,
            "evals/cases.json:3: invalid JSON: Expecting ':' delimiter (column 9); "
            "the rest of the 'cases' array was not read",
        ),
    ]


def test_json_envelope_syntax_error_before_array(tmp_path: Path) -> None:
    content = '{\n  "name": "s",\n  "version" 2,\n  "cases": [{"id": "a"}]\n}\n'
    header, records = document(tmp_path, content)
    assert header == {"name": "s"}
    assert summary(records) == [
        (
            3,
            0,
            "evals/cases.json:3: invalid JSON: Expecting ':' delimiter (column 13); "
            "the rest of the file was not read",
        ),
    ]


def test_json_envelope_syntax_error_after_array_keeps_all_records(tmp_path: Path) -> None:
    content = '{\n  "cases": [{"id": "a"}, {"id": "b"}],\n  "name": s\n}\n'
    header, records = document(tmp_path, content)
    assert header == {}
    assert summary(records) == [
        (2, 0, {"id": "a"}),
        (2, 1, {"id": "b"}),
        (
            3,
            2,
            "evals/cases.json:3: invalid JSON: Expecting value (column 11); "
            "the rest of the file was not read",
        ),
    ]


@pytest.mark.parametrize(
    ("content", "got"),
    [
        ('"just a string"', "got string"),
        ("42\n", "got number"),
        ("null", "got null"),
        ('{"name": "x"}', "got an object without a 'cases' key"),
        ("{}", "got an object without a 'cases' key"),
    ],
)
def test_json_top_level_of_the_wrong_shape(tmp_path: Path, content: str, got: str) -> None:
    _, records = document(tmp_path, content)
    expected = "expected a JSON array of cases or an object with a 'cases' array"
    assert summary(records) == [(1, 0, f"evals/cases.json:1: {expected}, {got}")]


def test_json_cases_key_that_is_not_an_array(tmp_path: Path) -> None:
    header, records = document(tmp_path, '{\n  "name": "x",\n  "cases": {"id": "a"}\n}')
    assert header == {"name": "x"}
    assert summary(records) == [
        (
            3,
            0,
            "evals/cases.json:3: expected a JSON array of cases or an object with a 'cases' "
            "array, got 'cases': object",
        )
    ]


def test_json_object_when_only_bare_arrays_are_accepted(tmp_path: Path) -> None:
    header, records = document(tmp_path, '{"cases": []}', array_key=None)
    assert header is None
    assert summary(records) == [
        (1, 0, "evals/cases.json:1: expected a JSON array of cases, got object")
    ]


def test_json_top_level_garbage(tmp_path: Path) -> None:
    header, records = document(tmp_path, "\n\nhello")
    assert header is None
    assert summary(records) == [
        (
            3,
            0,
            "evals/cases.json:3: invalid JSON: Expecting value (column 1); "
            "the rest of the file was not read",
        )
    ]


def test_json_element_that_is_not_an_object(tmp_path: Path) -> None:
    content = '[\n  {"id": "a"},\n  [1,\n   2],\n  "text",\n  {"id": "d"}\n]'
    _, records = document(tmp_path, content)
    assert summary(records) == [
        (2, 0, {"id": "a"}),
        (3, 1, "evals/cases.json:3: expected a JSON object, got array"),
        (5, 2, "evals/cases.json:5: expected a JSON object, got string"),
        (6, 3, {"id": "d"}),
    ]


def test_json_invalid_utf8_inside_a_record(tmp_path: Path) -> None:
    content = (
        b'[\n  {"id": "a"},\n  {\n    "id": "b",\n    "text": "bad \xff here"\n  },\n'
        b'  {"id": "c", "ok": "\xef\xbf\xbd literal replacement char"}\n]\n'
    )
    offset = content.index(b"\xff")
    header, records = document(tmp_path, content)
    assert header is None
    assert summary(records) == [
        (2, 0, {"id": "a"}),
        (3, 1, f"evals/cases.json:5: invalid UTF-8 at byte offset {offset}"),
        (7, 2, {"id": "c", "ok": "\ufffd literal replacement char"}),
    ]


def test_json_invalid_utf8_offset_counts_the_bom(tmp_path: Path) -> None:
    content = b'\xef\xbb\xbf[{"id": "a\xc3"}, {"id": "b"}]'
    _, records = document(tmp_path, content)
    offset = content.index(b"\xc3")
    assert summary(records) == [
        (1, 0, f"evals/cases.json:1: invalid UTF-8 at byte offset {offset}"),
        (1, 1, {"id": "b"}),
    ]


def test_json_invalid_utf8_outside_strings_stops_the_walk(tmp_path: Path) -> None:
    content = b'[\n  {"id": "a"},\n  \xfe{"id": "b"}\n]'
    _, records = document(tmp_path, content)
    offset = content.index(b"\xfe")
    assert summary(records) == [
        (2, 0, {"id": "a"}),
        (
            3,
            1,
            f"evals/cases.json:3: invalid UTF-8 at byte offset {offset}; "
            "the rest of the file was not read",
        ),
    ]


def test_json_invalid_utf8_in_header_value(tmp_path: Path) -> None:
    content = b'{\n  "name": "x\xff",\n  "cases": [{"id": "a"}]\n}'
    header, records = document(tmp_path, content)
    assert header == {"name": "x\ufffd"}
    offset = content.index(b"\xff")
    assert summary(records) == [
        (2, 0, f"evals/cases.json:2: name: invalid UTF-8 at byte offset {offset}"),
        (3, 1, {"id": "a"}),
    ]
    assert records[0].error is not None
    assert records[0].error.field == "name"


def test_lone_surrogates_are_the_records_error(tmp_path: Path) -> None:
    content = '{"id": "a", "input": [{"content": "x\\ud800"}]}\n{"id": "\\ud83d\\ude00"}\n'
    assert summary(jsonl(tmp_path, content)) == [
        (1, 0, "evals/cases.jsonl:1: input[0].content: not valid Unicode: a lone surrogate "
               "\\ud800 at character 2"),
        (2, 1, {"id": "\U0001f600"}),  # a valid pair is one character
    ]  # fmt: skip
    content = '{"name": "\\udfff",\n "cases": [{"id": "a"},\n  {"\\udc80": 1}]}'
    header, records = document(tmp_path, content)
    assert header == {}
    assert summary(records) == [
        (1, 0, "evals/cases.json:1: name: not valid Unicode: a lone surrogate \\udfff at "
               "character 1"),
        (2, 1, {"id": "a"}),
        (3, 2, "evals/cases.json:3: a key is not valid Unicode: a lone surrogate \\udc80 at "
               "character 1"),
    ]  # fmt: skip


def test_lone_surrogate_names_the_field() -> None:
    assert lone_surrogate({"a": [1, {"b": "ok"}]}) is None
    assert lone_surrogate({"a": [1, {"b": "x\udc80"}]}) == (
        "a[1].b",
        "not valid Unicode: a lone surrogate \\udc80 at character 2",
    )


def test_json_duplicate_cases_key(tmp_path: Path) -> None:
    content = '{"cases": [{"id": "a"}],\n "cases": [{"id": "b"}]}'
    _, records = document(tmp_path, content)
    assert summary(records) == [
        (1, 0, {"id": "a"}),
        (2, 1, "evals/cases.json:2: cases: duplicate key 'cases'"),
    ]


def test_json_large_pretty_envelope(tmp_path: Path) -> None:
    cases = [{"id": f"c{i}", "tools": ["a", "[b]"], "msg": [{"role": "user"}]} for i in range(2000)]
    text = json.dumps({"cases": cases, "name": "big"}, indent=2)
    header, records = document(tmp_path, text)
    assert header == {"name": "big"}
    lines = text.split("\n")
    loaded = list(records)
    assert len(loaded) == 2000
    for record in loaded[::97]:
        assert lines[record.line - 1] == "    {"  # type: ignore[operator]
        assert record.value["id"] == f"c{record.index}"


# --------------------------------------------------------------------------------- sniffing


def test_sniff_reads_the_head(tmp_path: Path) -> None:
    path = write(tmp_path, "x.jsonl", "a" * 100)
    assert sniff(path, 10) == b"a" * 10
    assert sniff(path) == b"a" * 100
    assert sniff(tmp_path) == b""
    assert sniff(tmp_path / "missing") == b""


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b'{"id": "a"}\n{"id": "b"}\n', {"id": "a"}),
        (b'\xef\xbb\xbf\n\n{"id": "a"}\n{"id": "b', {"id": "a"}),
        (b'[\n  {"id": "a"},\n  {"id": "b', {"id": "a"}),
        (b'[\n  {"id": "a", "te', None),
        (b"[]", None),
        (
            b'{\n  "name": "s",\n  "cases": [\n    {"id": "a"},\n    {"id"',
            {"name": "s", "cases": [{"id": "a"}]},
        ),
        (b'{\n  "cases": [\n    {"id": "a"},\n    {"i', {"cases": [{"id": "a"}]}),
        (b'{"id": "a", "long": "xxxxxxx', {"id": "a"}),
        (b"", None),
        (b"   \n", None),
        (b"not json at all", None),
        (b"{", None),
        (b"\xff\xfe\x00", None),
    ],
)
def test_first_record(head: bytes, expected: object) -> None:
    assert first_record(head) == expected


def test_first_record_of_a_truncated_multibyte_tail() -> None:
    head = '{"id": "é"}\n{"id": "é"}'.encode()[:-3]
    assert first_record(head) == {"id": "é"}


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b'{"a": 1}\n\n{"b": 2}\n{"c"', [{"a": 1}, {"b": 2}]),
        (b'\xef\xbb\xbf[{"a": 1},\n {"b": 2}, {"c"', [{"a": 1}, {"b": 2}]),
        (b'{"meta": 1,\n "cases": [{"a": 1},\n {"b": 2}, {"c"', [{"a": 1}, {"b": 2}]),
        (b'{"cases": [{"a": 1}, {"b": 2}]}\n', [{"a": 1}, {"b": 2}]),
        (b'{"x": 1, "y": [1, 2', [{"x": 1, "y": [1, 2]}]),
        (b"nonsense", []),
        (b"", []),
    ],
)
def test_head_records_are_every_complete_record(head: bytes, expected: object) -> None:
    assert head_records(head) == expected
