"""Inputs a hostile reviewer fed the plugin and its commands: run dirs with a manifest field of
the wrong type, a stdout closed early, files that are FIFOs, duplicate keys. Each is one line
naming what is wrong and a non-zero exit, never a traceback or a hang."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_llmeval.inputs import loading, safe_read, safe_yaml
from tests.commands.history import ROOT, command, echo_run, no_traceback

# -- a run dir's manifest.json with settings.shard of the wrong type ---------------------------


@pytest.mark.parametrize("shard", ['"xy"', "[1]", "5", '["a", "b"]', "[2, 2]"])
def test_a_run_dir_with_a_bad_shard_is_one_line_in_runs_and_compare(
    pytester: pytest.Pytester, shard: str
) -> None:
    good = echo_run(pytester, {"a": True})
    bad = echo_run(pytester, {"a": False})
    body = json.loads((bad / "manifest.json").read_text(encoding="utf-8"))
    body["settings"]["shard"] = json.loads(shard)
    (bad / "manifest.json").write_text(json.dumps(body), encoding="utf-8")

    done = command(pytester.path, "runs")
    no_traceback(done)
    assert done.returncode == 1
    assert "manifest.json: settings.shard: expected [K, N]" in done.stdout
    assert good.name in done.stdout

    done = command(pytester.path, "compare", str(good), str(bad))
    no_traceback(done)
    assert done.returncode != 0
    assert "settings.shard: expected [K, N]" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


# -- stdout closed early (| head -1) -----------------------------------------------------------


def test_a_closed_stdout_ends_every_command_quietly(pytester: pytest.Pytester) -> None:
    echo_run(pytester, {"a": True, "b": False})
    run_dir = sorted((pytester.path / ROOT).glob("2*"))[0]
    for args in (["runs"], ["compare", str(run_dir), str(run_dir)], ["summarize", str(run_dir)]):
        read, write = os.pipe()
        os.close(read)  # the reader went away before a line was written: every write fails
        try:
            done = subprocess.run(
                [sys.executable, "-m", "pytest_llmeval", *args],
                stdout=write,
                stderr=subprocess.PIPE,
                text=True,
                cwd=pytester.path,
                timeout=120,
            )
        finally:
            os.close(write)
        assert "Traceback" not in done.stderr, done.stderr
        assert "BrokenPipeError" not in done.stderr, done.stderr
        assert done.returncode != 0, args


# -- a FIFO where a file is expected -----------------------------------------------------------


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A real pytest session in ``cwd``; the timeout turns a hang into a failure."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def _fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def _init(where: Path, suite: str) -> Path:
    done = command(where, "init", "ev", "--suite", suite)
    assert done.returncode == 0, done.stderr
    return where / "ev"


@pytest.mark.parametrize("name", ["report.json", "manifest.json", "results.jsonl"])
def test_a_fifo_in_a_run_dir_is_one_line_in_runs_and_compare(
    pytester: pytest.Pytester, name: str
) -> None:
    good = echo_run(pytester, {"a": True})
    bad = echo_run(pytester, {"a": False})
    _fifo(bad / name)
    done = command(pytester.path, "runs")
    no_traceback(done)
    assert done.returncode == 1
    assert f"{name}: not a regular file" in done.stdout
    done = command(pytester.path, "compare", str(good), str(bad))
    no_traceback(done)
    assert done.returncode != 0
    assert f"{name}: not a regular file" in done.stderr


def test_a_fifo_tool_registry_is_a_usage_error_at_the_start(tmp_path: Path) -> None:
    ev = _init(tmp_path, "toolforge")
    _fifo(ev / "tools.json")
    done = _pytest(ev)
    assert done.returncode == 4, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if "not a regular file" in line]
    assert len(lines) == 1 and "tools.json: " in lines[0], done.stderr
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    "suite,data", [("golden", "golden.jsonl"), ("toolforge", "toolforge.json")]
)
def test_a_fifo_data_file_is_one_error_saying_so(tmp_path: Path, suite: str, data: str) -> None:
    ev = _init(tmp_path, suite)
    _fifo(ev / "data" / data)
    done = _pytest(ev)
    assert done.returncode == 4, done.stdout
    assert done.stderr.strip().splitlines() == [
        f"ERROR: {suite}.llmeval.yaml: data: data file 'data/{data}' is not a regular file"
    ]


def test_every_reader_refuses_a_fifo_without_opening_it(tmp_path: Path) -> None:
    fifo = tmp_path / "cases.jsonl"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer: these return at once
    (record,) = loading.iter_jsonl(fifo, "cases.jsonl")
    assert str(record.error) == "cases.jsonl: not a regular file"
    (record,) = loading.read_json_document(fifo, "cases.jsonl").records()
    assert str(record.error) == "cases.jsonl: not a regular file"
    assert loading.sniff(fifo) == b""
    with pytest.raises(safe_read.SupportFileError, match=r"cases.jsonl: not a regular file$"):
        safe_read.read_json(fifo, "cases.jsonl")
    with pytest.raises(safe_yaml.YamlLimitError, match="not a regular file"):
        safe_yaml.read_limited(fifo)


# -- a key named twice --------------------------------------------------------------------------


def test_a_manifest_naming_gates_twice_is_one_error_not_a_green_run(tmp_path: Path) -> None:
    ev = _init(tmp_path, "golden")
    manifest = ev / "golden.llmeval.yaml"
    manifest.write_text(
        manifest.read_text().replace(">= 0.75", ">= 1.0") + "gates: []\n", encoding="utf-8"
    )
    line = len(manifest.read_text().splitlines())
    done = _pytest(ev)
    assert done.returncode == 1, done.stdout + done.stderr  # was 0: the gate was dropped
    assert f"golden.llmeval.yaml:{line}: duplicate key 'gate" in done.stdout


def test_a_data_row_naming_a_key_twice_is_that_rows_error_and_the_rest_runs(
    tmp_path: Path,
) -> None:
    rows = [
        '{"id": "dup", "input": "say x", "expected_output": "WRONG", "expected_output": "say x"}',
        '{"id": "ok", "input": "say y", "expected_output": "say y"}',
    ]
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "qa.golden.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "qa.golden.json").write_text(
        "[\n" + rows[1] + ",\n" + rows[0] + "\n]\n", encoding="utf-8"
    )
    for folder, where in (("a", "qa.golden.jsonl:1"), ("b", "qa.golden.json:3")):
        name = where.split(":")[0]
        done = _pytest(tmp_path / folder, name, "--llmeval-runner", "echo")
        assert done.returncode == 1, done.stdout
        assert "1 passed, 1 error" in done.stdout, done.stdout
        assert f"{where}: expected_output: duplicate key 'expected_output'" in done.stdout


def test_support_files_refuse_a_key_named_twice(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text('{\n  "m": {"input": 1,\n        "input": 2}\n}\n', encoding="utf-8")
    with pytest.raises(safe_read.SupportFileError) as caught:
        safe_read.read_json(path, "prices.json")
    assert str(caught.value) == "prices.json:3: duplicate key 'input'"
    path = tmp_path / "prices.yaml"
    path.write_text("m:\n  input: 1\n  output: 2\n  input: 3\n", encoding="utf-8")
    with pytest.raises(safe_read.SupportFileError, match=r"prices.yaml:4: duplicate key 'input'"):
        safe_read.read_json_or_yaml(path, "prices.yaml")
    assert safe_yaml.load("a: 1\nTrue: 2\n").value == {"a": 1, True: 2}
    with pytest.raises(safe_yaml.YamlLimitError, match="duplicate key True"):
        safe_yaml.load("true: 1\nTrue: 2\n")
    base = "base: &b {x: 1}\none: {<<: *b, y: 2}\ntwo: {<<: *b, <<: *b}\n"
    assert safe_yaml.load(base).value["one"] == {"x": 1, "y": 2}  # merge keys may repeat


def test_json_inside_a_when2call_row_refuses_a_key_named_twice() -> None:
    from pytest_llmeval.core.errors import CaseFileError
    from pytest_llmeval.suites import when2call
    from pytest_llmeval.suites.fields import RowReader

    read = RowReader("w2c.jsonl", 4, {})
    text = '{"name": "get_weather", "name": "delete_all"}'
    with pytest.raises(CaseFileError, match=r"w2c.jsonl:4: tools\[0\]: .*duplicate key 'name'"):
        when2call._json_object(read, "tools[0]", text)


def test_the_depth_cap_walks_only_a_value_that_could_break_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A value with at most ``MAX_DEPTH`` opening brackets cannot be nested deeper than the
    cap, so it is not walked (a cassette is read per case); one with more is walked, and one
    nested too deeply is still refused, brackets inside strings or not."""
    cap = safe_read.MAX_DEPTH
    walked: list[object] = []
    real = safe_read._within_depth

    def counted(value: object, depth: int = 1) -> bool:
        if depth == 1:  # a walk, not its recursion
            walked.append(value)
        return real(value, depth)

    monkeypatch.setattr(safe_read, "_within_depth", counted)
    small = tmp_path / "small.json"
    small.write_text(json.dumps({"request": {"tools": [{"a": [1, {"b": "[[[{{{"}]}]}}))
    assert safe_read.read_json(small)["request"]["tools"][0]["a"][1] == {"b": "[[[{{{"}
    assert walked == []
    wide = tmp_path / "wide.json"
    wide.write_text(json.dumps([[i] for i in range(cap)]))
    assert len(safe_read.read_json(wide)) == cap
    assert len(walked) == 1
    deep = tmp_path / "deep.json"
    deep.write_text("[" * (cap + 1) + "]" * (cap + 1))
    with pytest.raises(safe_read.SupportFileError, match=f"nested more than {cap} levels deep"):
        safe_read.read_json(deep)
    assert real([[]] * 3) and real(json.loads("[" * cap + "]" * cap))
    assert not real(json.loads("[" * (cap + 1) + "]" * (cap + 1)))
