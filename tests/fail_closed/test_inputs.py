"""Fail closed on inputs: every data row is collected once, secrets in a base URL stay out of
every artifact, support files are read through one capped reader, and small file shapes.

Each entry drives a real session through pytester and asserts the exit status, which cases
are in ``results.jsonl``, the gates' statuses in ``report.json`` and, where a file could be
lost, that it is still there.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
import yaml

from tests.conftest import read_jsonl

GATE = ("--llmeval-gate", "golden.pass_rate>=0.5")


def _jsonl(*rows: Any) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


def _row(case_id: Any = None, text: str = "same") -> dict[str, Any]:
    row: dict[str, Any] = {"input": text, "expected_output": text}
    if case_id is not None:
        row["id"] = case_id
    return row


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    if "--llmeval-runner" not in args:
        args = ("--llmeval-runner", "echo", *args)
    return pytester.runpytest(*args, "--llmeval-run-dir", "run", "-p", "no:cacheprovider", "-rA")


def _results(pytester: pytest.Pytester) -> list[dict[str, Any]]:
    return read_jsonl(pytester.path / "run" / "results.jsonl")


def _gates(pytester: pytest.Pytester) -> dict[str, str]:
    report = json.loads((pytester.path / "run" / "report.json").read_text(encoding="utf-8"))
    gates = (report.get("gates") or {}).get("results", [])
    return {g["gate"]["name"]: g["status"] for g in gates}


def _outcomes(rows: list[dict[str, Any]]) -> dict[str, str]:
    return {r["nodeid"]: r["outcome"] for r in rows}


# ---------------------------------------------------------------- every row collected once

ROWS_ONCE = [
    pytest.param(
        "c.eval.jsonl",
        _jsonl(_row("x@line3"), _row("x"), _row("x")),
        {"x@line3": "passed", "x": "passed", "x@line3_": "error"},
        id="a-duplicate's-name-is-a-real-id",
    ),
    pytest.param(
        "c.eval.jsonl",
        _jsonl("{not json", _row("line1")),
        {"line1": "passed", "line1_": "error"},
        id="a-broken-line's-name-is-a-later-real-id",
    ),
    pytest.param(
        "c.eval.jsonl",
        _jsonl(_row("x"), _row("x"), _row("x@line2"), _row("x@line2_")),
        {"x": "passed", "x@line2": "passed", "x@line2_": "passed", "x@line2__": "error"},
        id="suffixes-also-taken",
    ),
    pytest.param(
        "c.golden.json",
        json.dumps(["not an object", _row("line1"), _row("x"), _row("x")]),
        {"line1": "passed", "x": "passed", "line1_": "error", "x@line1": "error"},
        id="json-array-one-line",
    ),
    pytest.param(
        "c.eval.jsonl",
        _jsonl(_row(None, "no id"), _row("PLACEHOLDER", "real")),
        {"PLACEHOLDER": "passed", "PLACEHOLDER@line1": "error"},
        id="an-id-less-row's-hash-is-a-real-id",
    ),
]


@pytest.mark.parametrize(("name", "content", "expected"), ROWS_ONCE)
def test_every_row_is_collected_exactly_once(
    pytester: pytest.Pytester, name: str, content: str, expected: dict[str, str]
) -> None:
    """A name the plugin makes up (a duplicate's ``@lineN``, a broken line's ``lineN``, an
    id-less row's hash, a ``_`` suffix) never takes a real case's id: N rows, N results."""
    if "PLACEHOLDER" in content:
        from pytest_llmeval.suites.base import fallback_case_id

        hashed = fallback_case_id(_row(None, "no id"))
        content = content.replace("PLACEHOLDER", hashed)
        expected = {k.replace("PLACEHOLDER", hashed): v for k, v in expected.items()}
    (pytester.path / name).write_text(content, encoding="utf-8")
    result = _run(pytester, *GATE)
    assert result.ret == 1  # the broken or duplicate rows are errors
    rows = _results(pytester)
    assert _outcomes(rows) == {f"{name}::{k}": v for k, v in expected.items()}
    assert len(rows) == len(expected)  # one result per row, none lost
    assert _gates(pytester) == {"golden.pass_rate>=0.5": "passed"}
    nodeids = [r["nodeid"] for r in rows]
    assert nodeids == sorted(nodeids)


def test_a_gaia_row_without_an_id_never_takes_a_real_id(pytester: pytest.Pytester) -> None:
    """GAIA names an id-less row ``row<index>``; a row whose own id is that keeps it."""
    rows = [
        {"Question": "q0", "Final answer": "a", "Level": 1},
        {"task_id": "row0", "Question": "q1", "Final answer": "b", "Level": 1},
    ]
    (pytester.path / "g").mkdir()
    (pytester.path / "g" / "metadata.jsonl").write_text(_jsonl(*rows), encoding="utf-8")
    manifest = {"suite": "gaia", "data": "g/metadata.jsonl"}
    (pytester.path / "g.llmeval.yaml").write_text(yaml.safe_dump(manifest), encoding="utf-8")
    result = _run(pytester)
    assert result.ret == 1  # echo gives no FINAL ANSWER: both are scored misses
    outcomes = _outcomes(_results(pytester))
    assert outcomes == {"g.llmeval.yaml::row0": "failed", "g.llmeval.yaml::row0_": "failed"}


# ------------------------------------------------------------------------------ small ones


def test_a_golden_file_holding_an_empty_array_is_an_empty_suite(
    pytester: pytest.Pytester,
) -> None:
    (pytester.path / "empty.golden.json").write_text("[]\n", encoding="utf-8")
    (pytester.path / "blank.golden.json").write_text("  \n", encoding="utf-8")
    (pytester.path / "ok.golden.json").write_text(json.dumps([_row("ok")]), encoding="utf-8")
    result = _run(pytester)
    assert result.ret == 0, result.stdout.str()
    assert "no suite recognises" not in result.stdout.str()
    assert _outcomes(_results(pytester)) == {"ok.golden.json::ok": "passed"}


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        (
            "bad.golden.json",
            '[\n  {"id": "a", "input": "a", "expected_output": "a"},\n  {"id": "b",, }\n]\n',
            "bad.golden.json:3: invalid JSON: Expecting property name enclosed in double "
            "quotes (column 14)",
        ),
        ("bad.golden.json", '[{"id": "a", "input": ', "bad.golden.json:1: invalid JSON"),
        ("bad.golden.json", "{\n  oops\n", "bad.golden.json:2: invalid JSON"),
        ("bad.eval.jsonl", "{oops\n", "bad.eval.jsonl:1: invalid JSON"),
        (
            "bad.eval.jsonl",
            '{"x": ' + "[" * 100_000 + "\n",
            "bad.eval.jsonl:1: invalid JSON: nested too deeply",
        ),
    ],
    ids=["array-row", "cut-short", "not-an-object", "jsonl", "jsonl-too-deep-to-claim"],
)
def test_a_file_with_a_json_syntax_error_says_where(
    pytester: pytest.Pytester, name: str, content: str, message: str
) -> None:
    """A file found by its name with broken JSON reports the syntax error and its line, not
    ``no suite recognises this file``; the good file still runs and the run is red."""
    (pytester.path / name).write_text(content, encoding="utf-8")
    (pytester.path / "ok.golden.json").write_text(json.dumps([_row("ok")]), encoding="utf-8")
    result = _run(pytester, *GATE)
    out = result.stdout.str()
    assert message in out, out
    assert "no suite recognises" not in out
    assert result.ret == 1
    rows = _results(pytester)
    assert _outcomes(rows)["ok.golden.json::ok"] == "passed"
    assert [r["outcome"] for r in rows if r["file"] == name] in (["error"], ["passed", "error"])


# ------------------------------------------------------------------- secrets in a base URL

PLAIN_KEY = "gatewaykeyplantedvaluexyz"
"""A gateway key that does not look like one: known only as the key variable's value."""
RANDOM_KEY = "Gk7Qz2Lm9Xp4Rt8Wv3Yb6Nc1"
"""A key-shaped path segment, in no variable: masked by its shape."""


def _written(pytester: pytest.Pytester) -> dict[str, str]:
    root = pytester.path
    return {
        str(p.relative_to(root)): p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.suffix in (".json", ".jsonl", ".md", ".html", ".xml")
    }


@pytest.mark.parametrize(
    ("key", "key_env", "extra"),
    [
        (PLAIN_KEY, "GW_KEY", ()),
        (RANDOM_KEY, "NO_SUCH_KEY_VARIABLE", ()),
        (PLAIN_KEY, "NO_SUCH_KEY_VARIABLE", ("--llmeval-secret-env", "GW_KEY")),
    ],
    ids=["the-key-variable's-value", "a-key-shaped-segment", "a-secret-env-value"],
)
def test_a_key_in_the_base_url_path_is_masked_in_every_artifact(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    key: str,
    key_env: str,
    extra: tuple[str, ...],
) -> None:
    """``https://gw/<key>/v1``: the cassette folder's runner.json, the journal, the manifest,
    the report, results, junit and the json report never hold the key, so the leak check has
    nothing to find and the run is green."""
    from pytest_llmeval.testing.openai_server import OpenAIServer

    monkeypatch.setenv("GW_KEY", PLAIN_KEY)
    (pytester.path / "qa.golden.json").write_text(json.dumps([_row("a")]), encoding="utf-8")
    json_report = ("--json-report", "--json-report-file", "pytest-report.json")
    server_key = PLAIN_KEY if key_env == "GW_KEY" else None
    with OpenAIServer(prefix=f"/{key}/v1", api_key=server_key) as srv:
        result = _run(
            pytester,
            "--llmeval-runner", "openai", "--llmeval-model", "test-model",
            "--llmeval-base-url", srv.base_url, "--llmeval-api-key-env", key_env,
            "--llmeval-record", "new", "--llmeval-cassettes", "cassettes",
            "--junitxml", "junit.xml", *json_report, "-v",
            "--llmeval-gate", "golden.pass_rate>=1", *extra,
        )  # fmt: skip
        assert len(srv.chat_bodies()) == 1  # the key was in the URL the runner called
    out = result.stdout.str()
    assert "leak check:" not in out and key not in out
    assert result.ret == 0, out
    assert _outcomes(_results(pytester)) == {"qa.golden.json::a": "passed"}
    assert _gates(pytester) == {"golden.pass_rate>=1": "passed"}
    written = _written(pytester)
    assert {"junit.xml", "pytest-report.json", "run/manifest.json", "run/report.json"} <= set(
        written
    )
    assert any(name.startswith("run/journal/") for name in written)
    [runner_json] = [t for n, t in written.items() if n.endswith("runner.json")]
    assert json.loads(runner_json)["base_url"].endswith("/[REDACTED]/v1")
    assert [name for name, text in written.items() if key in text] == []


@pytest.mark.parametrize(
    "value", ["ollama", "OLLAMA", "EMPTY", "None", "sk-no-key-required", "k3y"]
)
def test_a_placeholder_key_is_not_a_secret(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """Ollama's documented key ``ollama`` in the file name ``ollama_smoke.golden.json``: not
    masked, not a leak; the run is green and says once that the key is not a secret."""
    monkeypatch.setenv("OPENAI_API_KEY", value)
    name = f"{value.lower()}_smoke.golden.json"
    (pytester.path / name).write_text(json.dumps([_row("a")]), encoding="utf-8")
    result = _run(pytester, "--junitxml", "junit.xml", *GATE)
    out = result.stdout.str()
    assert result.ret == 0, out
    assert "leak check:" not in out
    assert out.count("OPENAI_API_KEY holds a placeholder key") == 1
    assert _outcomes(_results(pytester)) == {f"{name}::a": "passed"}
    assert _gates(pytester) == {"golden.pass_rate>=0.5": "passed"}
    assert name in (pytester.path / "junit.xml").read_text(encoding="utf-8")


def test_a_real_key_is_still_a_secret(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The placeholder rule does not weaken the leak check: a real key in a file name is
    masked in the run dir, found in junit (which the plugin does not write), and the run is
    red."""
    key = "realkeyvalue9f3k"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    name = f"{key}.golden.json"
    (pytester.path / name).write_text(json.dumps([_row("a")]), encoding="utf-8")
    result = _run(pytester, "--junitxml", "junit.xml")
    out = result.stdout.str()
    assert "leak check: a configured secret's value is in junit.xml" in out
    assert "placeholder" not in out
    assert result.ret == 1
    assert _outcomes(_results(pytester)) == {"[REDACTED].golden.json::a": "passed"}


@pytest.mark.parametrize("value", ["2026-11-26", "20261126", "1700000000", "3.14159265"])
def test_a_date_or_number_is_not_a_secret(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """A ``--llmeval-secret-env`` variable holding a plain date or number would be found by
    the leak check in every report's timestamps (the manifest's ``started``): it is not a key
    any provider issues, so it is not treated as a secret, and the run says so once."""
    from datetime import datetime, timezone

    if value == "2026-11-26":  # the date the manifest's timestamps hold
        value = datetime.now(timezone.utc).date().isoformat()
    monkeypatch.setenv("MY_SERVICE_SECRET", value)
    (pytester.path / "qa.golden.json").write_text(json.dumps([_row("a")]), encoding="utf-8")
    result = _run(pytester, "--llmeval-secret-env", "MY_SERVICE_SECRET", *GATE)
    out = result.stdout.str()
    assert result.ret == 0, out
    assert "leak check:" not in out
    assert out.count("MY_SERVICE_SECRET holds a placeholder key") == 1
    assert "a plain number or date" in out
    assert _outcomes(_results(pytester)) == {"qa.golden.json::a": "passed"}
    assert _gates(pytester) == {"golden.pass_rate>=0.5": "passed"}
    manifest = (pytester.path / "run" / "manifest.json").read_text(encoding="utf-8")
    assert "[REDACTED]" not in manifest


def test_a_key_with_digits_and_letters_is_still_a_secret() -> None:
    from pytest_llmeval.core.redact import is_placeholder

    assert not is_placeholder("2026-11-26-a9f3k")
    assert not is_placeholder("sk-20261126")
    assert is_placeholder("2026-11-26T09:00:00Z") and is_placeholder("12345678")


def test_which_path_segments_look_like_keys() -> None:
    from pytest_llmeval.core.redact import MASK, looks_secret, public_url

    for name in [
        "claude-3-5-sonnet-20241022", "Meta-Llama-3.1-8B-Instruct", "text-embedding-3-large",
        "gpt-4o-mini-2024-07-18-deployment01", "deepseek-ai--DeepSeek-R1-Distill-Qwen-32B",
        "Qwen2.5-Coder-32B-Instruct-AWQ", "openai-gateway-production-eu", "v1",
        "2024-05-01-preview",
    ]:  # fmt: skip
        assert not looks_secret(name), name
    for key in [RANDOM_KEY, "sk-proj-abcdefghijklmnop", "hf_abcdefghijklmnopqrstuv",
                "3f8a9c2e1b7d4f6a8c0e2b4d6f8a0c2e"]:  # fmt: skip
        assert looks_secret(key), key
    url = f"https://u:p@gw.example/{PLAIN_KEY}/x/{RANDOM_KEY}/v1?api_key=q"
    assert public_url(url, [PLAIN_KEY]) == f"https://gw.example/{MASK}/x/{MASK}/v1"


# --------------------------------------------------------------- support files: one reader

DEEP = "[" * 100_000 + "]" * 100_000
"""Nested past Python's recursion limit: ``json.loads`` raises RecursionError on it."""
JUST_TOO_DEEP = "[" * 101 + "]" * 101
"""One level past the cap: it parses, but nothing downstream may walk it."""


def _deep_in(body: str) -> str:
    return '{"x": 1,\n "y": ' + body + "}\n"


@pytest.mark.parametrize("depth", [DEEP, JUST_TOO_DEEP], ids=["recursion", "cap"])
@pytest.mark.parametrize(
    ("path", "option", "shown"),
    [
        ("prices.json", "--llmeval-prices", "--llmeval-prices prices.json:2: "),
        ("tools.json", "--llmeval-tool-registry", "tools.json:2: the tool registry is not valid: "),
        ("seed.json", "--llmeval-seed-manifest", "seed.json:2: "),
        ("snap.json", "--llmeval-snapshot", "snap.json:2: "),
    ],
    ids=["prices", "registry", "seed-manifest", "snapshot"],
)
def test_a_support_file_every_case_needs_is_a_usage_error_at_the_start(
    pytester: pytest.Pytester, path: str, option: str, shown: str, depth: str
) -> None:
    """Too deep a prices, registry, seed-manifest or snapshot file: one line naming
    ``path:line`` and exit 4 before any case runs, never a RecursionError without reports."""
    target = pytester.path / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(_deep_in(depth), encoding="utf-8")
    (pytester.path / "ok.golden.json").write_text(json.dumps([_row("ok")]), encoding="utf-8")
    result = _run(pytester, option, path)
    err = result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + err
    assert f"{shown}nested more than 100 levels deep" in err.replace(str(pytester.path) + "/", "")
    assert "Traceback" not in err + result.stdout.str()
    assert "INTERNALERROR" not in err + result.stdout.str()
    assert not (pytester.path / "run" / "results.jsonl").exists()  # no case ran


DEEP_BODY = '{"a": ' + "[" * 5000 + "]" * 5000 + "}"
"""An object nested past Python's recursion limit, as an option's value."""


@pytest.mark.parametrize(
    "where", ["cli", "env", "ini", "addopts"], ids=["cli", "env", "ini", "PYTEST_ADDOPTS"]
)
def test_deep_json_in_an_option_is_one_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """``--llmeval-extra-body`` however it is given (and the scan of every argument for keys
    to mask): one line naming the option, exit 4, nothing run; never a RecursionError."""
    (pytester.path / "ok.golden.json").write_text(json.dumps([_row("ok")]), encoding="utf-8")
    args: tuple[str, ...] = ()
    if where == "cli":
        args = (f"--llmeval-extra-body={DEEP_BODY}",)
    elif where == "env":
        monkeypatch.setenv("PYTEST_LLMEVAL_EXTRA_BODY", DEEP_BODY)
    elif where == "ini":
        pytester.makeini(f"[pytest]\nllmeval_extra_body = {DEEP_BODY}\n")
    else:
        monkeypatch.setenv("PYTEST_ADDOPTS", f"--llmeval-extra-body='{DEEP_BODY}'")
    result = _run(pytester, *args)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    result.stderr.fnmatch_lines(
        ["ERROR: --llmeval-extra-body takes a JSON object, got '{*"
         "[[]clipped: 10007 characters in all]': nested more than 100 levels deep"]
    )  # fmt: skip
    assert "Traceback" not in out and "INTERNALERROR" not in out
    assert not (pytester.path / "run").exists()  # nothing ran


def test_deep_json_in_another_argument_is_only_text(pytester: pytest.Pytester) -> None:
    """Any argument holding ``{`` is scanned for secret-named keys, and redacted in the
    manifest: one that nests too deeply is plain text there, and the run goes on."""
    (pytester.path / "ok.golden.json").write_text(json.dumps([_row("ok")]), encoding="utf-8")
    result = _run(pytester, "--llmeval-model", DEEP_BODY, *GATE)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.OK, out
    assert "Traceback" not in out and "INTERNALERROR" not in out
    assert _outcomes(_results(pytester)) == {"ok.golden.json::ok": "passed"}
    assert _gates(pytester) == {"golden.pass_rate>=0.5": "passed"}
    manifest = json.loads((pytester.path / "run" / "manifest.json").read_text(encoding="utf-8"))
    assert DEEP_BODY in manifest["invocation"]


def test_a_deep_journal_line_is_one_line_naming_it(pytester: pytest.Pytester) -> None:
    """A journal line nested past the recursion limit (damaged after it was written): resume
    and ``summarize`` say ``path:line`` in one line, never a RecursionError."""
    (pytester.path / "ok.golden.json").write_text(json.dumps([_row("ok")]), encoding="utf-8")
    assert _run(pytester).ret == pytest.ExitCode.OK
    journal = next((pytester.path / "run" / "journal").rglob("*.jsonl"))
    kept = journal.read_bytes()
    journal.write_bytes(kept + b'{"result": ' + DEEP.encode() + b"}\n")
    resumed = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-resume=run")
    out = resumed.stdout.str() + resumed.stderr.str()
    assert resumed.ret == pytest.ExitCode.USAGE_ERROR, out
    resumed.stderr.fnmatch_lines([f"ERROR: {journal}:2: nested too deeply*delete that line*"])
    assert "Traceback" not in out and "INTERNALERROR" not in out
    summarized = subprocess.run(
        [sys.executable, "-m", "pytest_llmeval", "summarize", "run"],
        cwd=pytester.path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert summarized.returncode != 0
    assert "Traceback" not in summarized.stderr + summarized.stdout, summarized.stderr
    assert f"{journal.relative_to(pytester.path)}:2: nested too deeply" in summarized.stderr
    assert journal.read_bytes().startswith(kept)  # nothing was lost


@pytest.mark.parametrize("depth", [DEEP, JUST_TOO_DEEP], ids=["recursion", "cap"])
def test_a_bad_tool_fixture_file_is_each_cases_error(pytester: pytest.Pytester, depth: str) -> None:
    """Tool fixtures are read by the ``llmeval_broker`` fixture (a conftest may replace it),
    so a bad file is the one-line error of every case that asks for the broker; the reports
    are still written and the run is red, never green."""
    fixtures = pytester.path / "fixtures" / "tools"
    fixtures.mkdir(parents=True)
    (fixtures / "deep.jsonl").write_text(_deep_in(depth), encoding="utf-8")
    (pytester.path / "qa.golden.json").write_text(
        json.dumps([_row("a"), _row("b", "other")]), encoding="utf-8"
    )
    result = _run(pytester, *GATE)
    out = result.stdout.str()
    assert result.ret == 1, out
    assert "Traceback" not in out and "INTERNALERROR" not in out
    rows = _results(pytester)
    assert _outcomes(rows) == {"qa.golden.json::a": "error", "qa.golden.json::b": "error"}
    for row in rows:
        assert (
            f"fixture {fixtures / 'deep.jsonl'}:2: nested more than 100 levels deep"
            in (row["error"])
        )
    assert _gates(pytester) == {"golden.pass_rate>=0.5": "failed"}
    assert (pytester.path / "run" / "summary.md").is_file()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"completion": {"text": "ok", "usage": {"total_tokens": 1}', "ends inside a value"),
        (b'{"completion": {"text": "ok", "logprob": NaN}}', "NaN is not a JSON number"),
        (b'{"completion": {"text": "\xff\xfe"}}', "invalid UTF-8 at byte 26"),
        (b"", "the file is empty"),
        (_deep_in(DEEP).encode(), "nested more than 100 levels deep"),
    ],
    ids=["truncated", "nan", "invalid-utf8", "empty", "too-deep"],
)
def test_a_bad_cassette_is_that_cases_error_saying_what_is_wrong(
    pytester: pytest.Pytester, content: bytes, message: str
) -> None:
    """Record two cases, break one cassette: that case errors with what is wrong (not ``line 1
    column 1``), the other replays and passes, the run is red and writes every report."""
    cases = [_row("a", "first"), _row("b", "second")]
    (pytester.path / "qa.golden.json").write_text(json.dumps(cases), encoding="utf-8")
    record = _run(pytester, "--llmeval-record", "new", "--llmeval-cassettes", "cassettes")
    assert record.ret == 0, record.stdout.str()
    [folder] = [p for p in (pytester.path / "cassettes").iterdir() if p.is_dir()]
    recorded = sorted(folder.glob("*/*.json"))
    assert len(recorded) == 2
    broken = next(p for p in recorded if b"second" in p.read_bytes())
    broken.write_bytes(content)
    result = _run(pytester, "--llmeval-runner", "replay", "--llmeval-cassettes", "cassettes", *GATE)
    out = result.stdout.str()
    assert result.ret == 1, out
    assert "Traceback" not in out and "INTERNALERROR" not in out
    rows = {r["case_id"]: r for r in _results(pytester)}
    assert {k: r["outcome"] for k, r in rows.items()} == {"a": "passed", "b": "error"}
    assert f"corrupt cassette {broken}" in rows["b"]["error"]
    assert message in rows["b"]["error"], rows["b"]["error"]
    assert "line 1 column 1" not in rows["b"]["error"]
    assert _gates(pytester) == {"golden.pass_rate>=0.5": "passed"}


def test_a_broken_runner_json_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """A cassette folder's runner.json that does not parse: the replay runner cannot be built,
    so the run stops before any case with one line naming the file and line (never a pass)."""
    (pytester.path / "qa.golden.json").write_text(json.dumps([_row("a")]), encoding="utf-8")
    folder = pytester.path / "cassettes" / "echo-000000000000"
    folder.mkdir(parents=True)
    (folder / "runner.json").write_text('{"type": "echo",\n "x": NaN}\n', encoding="utf-8")
    result = _run(pytester, "--llmeval-runner", "replay", "--llmeval-cassettes", "cassettes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --llmeval-runner: cassettes: *runner.json:2: invalid JSON: NaN is not a JSON*"]
    )
    assert not list(pytester.path.glob(".llmeval/runs/*/results.jsonl"))  # nothing ran


@pytest.mark.parametrize("where", ["file", "run-dir"])
def test_a_broken_baseline_is_refused_and_the_run_is_red(
    pytester: pytest.Pytester, where: str
) -> None:
    """A baseline too deep to read: the run still writes every report, the comparison is
    refused naming ``path:line``, and the run is red, never green without a comparison."""
    (pytester.path / "ok.golden.json").write_text(json.dumps([_row("ok")]), encoding="utf-8")
    if where == "file":
        baseline = pytester.path / "base.json"
        baseline.write_text(_deep_in(DEEP), encoding="utf-8")
        shown = "base.json:2: not JSON: nested more than 100 levels deep"
    else:
        assert _run(pytester).ret == 0  # the earlier run, then one line of it broken
        baseline = (pytester.path / "run").rename(pytester.path / "old")
        rows = baseline / "results.jsonl"
        rows.write_text(rows.read_text() + _deep_in(DEEP).replace("\n", " ") + "\n")
        shown = "results.jsonl:2: not JSON: nested more than 100 levels deep"
    result = _run(pytester, "--llmeval-baseline", str(baseline))
    out = result.stdout.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out
    assert shown in out, out
    assert result.ret == 1
    assert _outcomes(_results(pytester)) == {"ok.golden.json::ok": "passed"}
    report = json.loads((pytester.path / "run" / "report.json").read_text(encoding="utf-8"))
    assert report["totals"]["passed"] == 1


def test_a_broken_row_whose_fixture_skips_first_stays_an_error(pytester: pytest.Pytester) -> None:
    """A conftest's agent fixture that skips the first case it is set up for (a resource
    warming up) must not make a broken row read skipped: the row is read before the case's
    fixtures are set up (a conftest's agent never names the model a case is built for), so it
    stays an error, and the run stays red."""
    from tests.suites.test_when2call import SCORER_CONFTEST
    from tests.suites.test_when2call_routing import _rows

    good = next(row for row in _rows() if row["uuid"].startswith("530a"))
    bad = dict(good, uuid="000-broken", tools=["{not json"])
    rows = [bad, *(dict(good, uuid=f"good-{i}") for i in range(2))]
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(
        SCORER_CONFTEST
        + "import pytest\nfrom pytest_llmeval.engine.agent import default_agent\n"
        + "CALLS = [0]\n\n@pytest.fixture\ndef llmeval_agent():\n"
        + '    CALLS[0] += 1\n    if CALLS[0] == 1:\n        pytest.skip("warming up")\n'
        + "    return default_agent(Scorer())\n"
    )
    (pytester.path / "rows.jsonl").write_text(_jsonl(*rows))
    (pytester.path / "w.llmeval.yaml").write_text("suite: when2call\ndata: rows.jsonl\n")
    result = _run(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    outcomes = {r["case_id"]: r["outcome"] for r in read_jsonl(pytester.path / "run/results.jsonl")}
    assert outcomes == {"000-broken": "error", "good-0": "skipped", "good-1": "passed"}


def test_an_agent_whose_fingerprint_fails_errs_each_case_in_one_line(
    pytester: pytest.Pytester,
) -> None:
    """A user's agent whose ``fingerprint()`` raises (read at each case's setup: the result
    carries it): each case is an error naming it, never an INTERNALERROR."""
    pytester.makeconftest(
        "import pytest\n\nclass Agent:\n    def fingerprint(self):\n"
        "        raise RuntimeError('no fingerprint today')\n"
        "    def run(self, case, broker):\n        return 'same'\n\n"
        "@pytest.fixture(scope='session')\ndef llmeval_agent():\n    return Agent()\n"
    )
    (pytester.path / "cases.golden.json").write_text(json.dumps([_row("a"), _row("b")]))
    result = _run(pytester)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    assert "INTERNALERROR" not in out
    results = read_jsonl(pytester.path / "run/results.jsonl")
    assert [r["outcome"] for r in results] == ["error", "error"]
    assert all(
        "fingerprint() failed: RuntimeError: no fingerprint today" in r["error"] for r in results
    )
