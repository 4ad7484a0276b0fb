"""The bad-input corpus: each entry is a small eval project with one bad input.

Every entry is run beside a good file: the bad input must give its clear error (``path:line``
and the field where it applies), the good file's cases must run and pass, and the run's
reports (``results.jsonl``, ``report.json``) must be written and parse. ``item`` names the
class of bad input an entry covers (:data:`ITEMS`; ``works`` for classes that were handled
before the corpus was written).
"""

from __future__ import annotations

import contextlib
import http.server
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import answering_runner, read_jsonl
from tests.inputs.test_bad_input import SURROGATE_CONFTEST

GOOD_FILE = "good.golden.json"
GOOD_CASES = [
    {"id": "good-1", "input": "same", "expected_output": "same"},
    {"id": "good-2", "input": "again", "expected_output": "again"},
]


ITEMS = {
    "text-encoding": "invalid UTF-8 and lone surrogates, in a row, an id or a model's answer",
    "manifest-value": "a manifest value of the wrong kind, or a data path that cannot be one",
    "yaml-size": "a manifest over the size limit, an alias bomb or an alias cycle",
    "number-range": "a threshold, gate or min-score that is NaN or outside its range",
    "huge-output": "an answer too large to quote or to read whole",
    "claimed-by-shape": "a file claimed by its rows' shape when its first row is odd",
    "markdown-injection": "Markdown in a case id reaching summary.md",
    "unknown-key": "a manifest key no suite knows",
}
"""The classes of bad input the corpus covers, each with what its entries hold."""


@dataclass(frozen=True)
class Bad:
    """One bad input: the files of the project besides the good one, and what must be said."""

    name: str
    item: str
    """The class of bad input it covers (one of :data:`ITEMS`), or ``"works"``."""
    files: dict[str, str | bytes]
    messages: tuple[str, ...]
    """Texts the terminal output must hold (each a ``path:line: field: message``)."""
    errors: int | None = 1
    """Error items the bad input makes (``None``: not counted, e.g. a gate problem)."""
    passed: int = 0
    """Cases of the bad files that still pass (beside the good file's)."""
    args: tuple[str, ...] = ()
    conftest: str = ""
    symlinks: dict[str, str] = field(default_factory=dict)
    """Links to create: name -> target."""
    server: bool = False
    """Run through the openai runner against a loopback server (:class:`_ChunkedOpenAI`)."""
    summary_absent: tuple[str, ...] = ()
    """Texts ``summary.md`` must not hold outside code spans (live Markdown or HTML)."""
    summary_holds: tuple[str, ...] = ()
    """Texts ``summary.md`` must hold (the bad case is listed, inert)."""


def _jsonl(*rows: str) -> str:
    return "".join(row + "\n" for row in rows)


def _laughs(levels: int = 9) -> str:
    text = 'l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n'
    for i in range(1, levels):
        text += f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n"
    return text + f"gates: *l{levels - 1}\n"


ROW = '{"id": "ok", "input": "ok", "expected_output": "ok"}'
DATA = {"data.json": json.dumps([{"id": "d", "input": "d", "expected_output": "d"}])}
"""A manifest's data file (its one case passes when the manifest is good)."""

CORPUS: list[Bad] = [
    # -- 1: text that is not valid Unicode
    Bad(
        "surrogate-in-a-row",
        "text-encoding",
        {"sur.eval.jsonl": _jsonl('{"id": "s", "input": "a\\ud800", "expected_output": "a"}', ROW)},
        ("sur.eval.jsonl:1: input: not valid Unicode: a lone surrogate \\ud800 at character 2",),
        passed=1,
    ),
    Bad(
        "surrogate-in-an-id",
        "text-encoding",
        {"sur.eval.jsonl": _jsonl('{"id": "\\udfff", "input": "a", "expected_output": "a"}')},
        ("sur.eval.jsonl:1: id: not valid Unicode: a lone surrogate \\udfff at character 1",),
    ),
    Bad(
        "invalid-utf8-in-a-json-array",
        "text-encoding",
        {
            "bytes.golden.json": b'[\n {"id": "a", "input": "a", "expected_output": "a"},\n'
            b' {"id": "b", "input": "\xed\xa0\x80", "expected_output": "b"}\n]\n'
        },
        ("bytes.golden.json:3: invalid UTF-8 at byte offset",),
        passed=1,
    ),
    Bad(
        "surrogate-in-a-models-answer",
        "text-encoding",
        {
            "odd.golden.json": json.dumps(
                [{"id": "o", "input": "surrogate", "expected_output": "x"}]
            )
        },
        (
            "odd.golden.json:1: protocol error: the model's response is not valid Unicode: "
            "a lone surrogate \\ud800 at character 8",
        ),
        args=("--llmeval-runner", "surrogates"),
        conftest=SURROGATE_CONFTEST,
    ),
    # -- 2: manifests that used to interrupt the session
    Bad(
        "thresholds-not-a-mapping",
        "manifest-value",
        {"t.llmeval.yaml": "suite: golden\ndata: data.json\nthresholds: 5\n", **DATA},
        ("t.llmeval.yaml:3: thresholds: expected an object or null, got a number",),
    ),
    Bad(
        "data-path-with-a-nul-byte",
        "manifest-value",
        {"nul.llmeval.yaml": 'suite: golden\ndata: "da\\0ta.json"\n'},
        ("nul.llmeval.yaml:2: data: 'da\\x00ta.json' cannot be used as a path: embedded null",),
    ),
    Bad(
        "data-path-in-a-symlink-loop",
        "manifest-value",
        {"loop.llmeval.yaml": "suite: golden\ndata: loop/x.json\n"},
        ("loop.llmeval.yaml:2: data: 'loop/x.json' cannot be used as a path: ",),
        symlinks={"loop": "loop"},
    ),
    Bad(
        "data-path-of-5000-characters",
        "manifest-value",
        {"long.llmeval.yaml": "suite: golden\ndata: " + "x" * 5000 + "\n"},
        (
            "long.llmeval.yaml:2: data: '"
            + "x" * 200
            + "… [clipped: 5000 characters in all]' cannot be used as a path: ",
        ),
    ),
    Bad(
        "data-is-a-folder",
        "manifest-value",
        {"dir.llmeval.yaml": "suite: golden\ndata: sub\n", "sub/README.txt": "not data\n"},
        ("dir.llmeval.yaml: data: data file 'sub' is a folder, not a file",),
    ),
    # -- 3: YAML that expands without bound
    Bad(
        "yaml-alias-bomb",
        "yaml-size",
        {"bomb.llmeval.yaml": "suite: golden\ndata: data.json\n" + _laughs(), **DATA},
        ("bomb.llmeval.yaml:8: the document expands to more than 100,000 values",),
    ),
    Bad(
        "yaml-alias-cycle",
        "yaml-size",
        {"cycle.llmeval.yaml": "suite: golden\ndata: data.json\ngates: &g [*g]\n", **DATA},
        ("cycle.llmeval.yaml:3: a YAML alias refers to the value that contains it",),
    ),
    Bad(
        "manifest-over-1-mib",
        "yaml-size",
        {"big.llmeval.yaml": "suite: golden\ndata: data.json\ndescription: " + "x" * (1 << 20)},
        ("big.llmeval.yaml: the file is larger than 1 MiB; at most 1 MiB is read",),
    ),
    # -- 4: NaN and out-of-range thresholds
    Bad(
        "nan-manifest-threshold",
        "number-range",
        {
            "nan.llmeval.yaml": "suite: golden\ndata: data.json\nthresholds:\n  x: {regex: .nan}\n",
            **DATA,
        },
        ("nan.llmeval.yaml:4: thresholds.x.regex: expected a finite number, got nan",),
    ),
    Bad(
        "manifest-threshold-above-1",
        "number-range",
        {
            "big.llmeval.yaml": "suite: golden\ndata: data.json\nthresholds:\n  x:\n"
            "    exact_match: 1.5\n",
            **DATA,
        },
        ("big.llmeval.yaml:5: thresholds.x.exact_match: expected a number <= 1, got 1.5",),
    ),
    Bad(
        "nan-min-score",
        "number-range",
        {
            "mins.eval.jsonl": _jsonl(
                '{"id": "n", "input": "x", "expected_output": "x",'
                ' "min_scores": {"exact_match": NaN}}'
            )
        },
        ("mins.eval.jsonl:1: min_scores.exact_match: expected a finite number, got nan",),
    ),
    Bad(
        "min-score-below-0",
        "number-range",
        {
            "mins.eval.jsonl": _jsonl(
                '{"id": "n", "input": "x", "expected_output": "x",'
                ' "min_scores": {"exact_match": -1}}'
            )
        },
        (
            "mins.eval.jsonl:1: min_scores.exact_match: expected a minimum in [0, 1] (scores are), "
            "got -1",
        ),
    ),
    Bad(
        "nan-manifest-gate",
        "number-range",
        {
            "g.llmeval.yaml": "suite: golden\ndata: data.json\n"
            "gates: {metric: pass_rate, op: '>=', value: .nan}\n",
            **DATA,
        },
        ("g.llmeval.yaml:3: gates.value: expected a finite number, got nan",),
    ),
    # a manifest gate on a rate above 1 (pass_rate >= 90) is no broken input: it stops the run
    # before any case (tests/fail_closed/test_manifest_gates.py)
    # -- 6: files claimed by the shape of their rows
    Bad(
        "golden-first-case-without-expected-output",
        "claimed-by-shape",
        {
            "kw.eval.jsonl": _jsonl(
                '{"id": "kw", "input": "hello world", "keywords": ["world"],'
                ' "min_scores": {"contains_keywords": 1}}',
                ROW,
                '{"id": "bad", "input": "x", "expected": "x"}',
            )
        },
        ("kw.eval.jsonl:3: expected: unknown field; expected one of id, category,",),
        passed=2,
    ),
    Bad(
        "golden-array-first-case-with-a-pattern",
        "claimed-by-shape",
        {
            "re.golden.json": '[{"id": "re", "input": "abc", "pattern": "b",'
            ' "min_scores": {"regex": 1}},\n {"id": "no", "input": "x"}]\n'
        },
        ("re.golden.json:2: expected_output: the case has nothing to check",),
        passed=1,
    ),
    # -- 8: a manifest key no suite knows
    Bad(
        "unknown-manifest-key",
        "unknown-key",
        {
            "typo.llmeval.yaml": "suite: golden\ndata: data.json\ntreshold:\n  x: {regex: 1}\n",
            **DATA,
        },
        ("typo.llmeval.yaml:3: treshold: unknown option; did you mean 'thresholds'?",),
    ),
    # -- classes that were already handled
    Bad(
        "broken-json-line",
        "works",
        {"c.eval.jsonl": _jsonl('{"id": "broken", "input": "hi", ', ROW)},
        ("c.eval.jsonl:1: invalid JSON: ",),
        passed=1,
    ),
    Bad(
        "missing-field",
        "works",
        {"c.eval.jsonl": _jsonl('{"id": "m", "expected_output": "x"}')},
        ("c.eval.jsonl:1: input: expected a string or a non-empty array",),
    ),
    Bad(
        "wrong-field-type",
        "works",
        {"c.eval.jsonl": _jsonl('{"id": "w", "input": "hi", "expected_output": 42}')},
        ("c.eval.jsonl:1: expected_output: expected a string, got a number",),
    ),
    Bad("empty-file", "works", {"empty.eval.jsonl": "", "blank.golden.json": " \n"}, (), errors=0),
    Bad("bom", "works", {"bom.eval.jsonl": b"\xef\xbb\xbf" + ROW.encode() + b"\n"}, (), 0, 1),
    Bad(
        "duplicate-case-id",
        "works",
        {"c.eval.jsonl": _jsonl(ROW, ROW)},
        ("c.eval.jsonl:2: id: duplicate case id 'ok' (first defined at line 1)",),
        passed=1,
    ),
    Bad(
        "unknown-field",
        "works",
        {"c.eval.jsonl": _jsonl(ROW, '{"id": "t", "input": "x", "expected_outptu": "x"}')},
        ("c.eval.jsonl:2: expected_outptu: unknown field; expected one of id, category,",),
        passed=1,
    ),
    Bad(
        "unknown-scorer",
        "works",
        {"c.eval.jsonl": _jsonl('{"id": "s", "input": "x", "min_scores": {"correctness": 0.9}}')},
        ("c.eval.jsonl:1: min_scores.correctness: no scorer named 'correctness'",),
    ),
    Bad(
        "non-object-row",
        "works",
        {"c.eval.jsonl": _jsonl(ROW, "[1, 2]")},
        ("c.eval.jsonl:2: expected a JSON object, got array",),
        passed=1,
    ),
    Bad(
        "json-array-syntax-error",
        "works",
        {
            "half.golden.json": '[\n  {"id": "a", "input": "a", "expected_output": "a"},\n'
            '  {"id": "b", "input": \n]\n'
        },
        ("half.golden.json:4: invalid JSON: ",),
        passed=1,
    ),
    Bad(
        "no-suite-claims-the-file",
        "works",
        {"mystery.eval.json": json.dumps([{"question": "?", "answer": "!"}])},
        ("mystery.eval.json:1: no suite recognises this file",),
    ),
    Bad(
        "invalid-regex",
        "works",
        {
            "c.eval.jsonl": _jsonl(
                '{"id": "r", "input": "x", "pattern": "(", "min_scores": {"regex": 1}}'
            )
        },
        ("c.eval.jsonl:1: pattern: not a valid regular expression",),
    ),
    Bad(
        "bad-input-message",
        "works",
        {
            "c.eval.jsonl": _jsonl(
                '{"id": "m", "input": [{"role": "robot", "content": "x"}], "expected_output": "x"}'
            )
        },
        ("c.eval.jsonl:1: input[0]: expected {role: system|user|assistant, content: string}",),
    ),
    Bad(
        "max-turns-zero",
        "works",
        {
            "c.eval.jsonl": _jsonl(
                '{"id": "t", "input": "x", "expected_output": "x", "max_turns": 0}'
            )
        },
        ("c.eval.jsonl:1: max_turns: expected a whole number from 1 to 500, got 0",),
    ),
    Bad(
        "deeply-nested-json",
        "works",
        {"c.eval.jsonl": ROW + "\n" + "[" * 100_000 + "\n"},
        ("c.eval.jsonl:2: invalid JSON: nested too deeply",),
        passed=1,
    ),
    Bad(
        "tool-forge-wrong-assertion-type",
        "works",
        {
            "tf.golden.json": json.dumps(
                [{"id": "t", "input": {"message": "hi"}, "expect": {"toolsCalled": "weather"}}]
            )
        },
        ("tf.golden.json:1: expect.toolsCalled: expected an array of strings, got a string",),
    ),
    Bad(
        "manifest-repeats-not-a-number",
        "works",
        {"r.llmeval.yaml": "suite: golden\ndata: data.json\nrepeats: many\n", **DATA},
        ("r.llmeval.yaml:3: repeats: expected a whole number, got a string",),
    ),
    Bad(
        "manifest-unknown-suite",
        "works",
        {"s.llmeval.yaml": "suite: nope\ndata: data.json\n", **DATA},
        ("s.llmeval.yaml:1: suite: unknown suite 'nope'; known suites: ",),
    ),
    Bad(
        "manifest-missing-data-file",
        "works",
        {"m.llmeval.yaml": "suite: golden\ndata: missing.json\n"},
        ("m.llmeval.yaml: data: data file 'missing.json' does not exist",),
    ),
    Bad(
        "manifest-not-a-mapping",
        "works",
        {"l.llmeval.yaml": "- suite\n"},
        ("l.llmeval.yaml:1: expected a mapping with 'suite' and 'data'",),
    ),
    Bad(
        "manifest-invalid-yaml",
        "works",
        {"y.llmeval.yaml": "suite: golden\ndata: [1\n"},
        ("y.llmeval.yaml:3: invalid YAML",),
    ),
    Bad(
        "manifest-bad-misses",
        "works",
        {"x.llmeval.yaml": "suite: golden\ndata: data.json\nmisses: sometimes\n", **DATA},
        ("x.llmeval.yaml:3: misses: expected one of fail, xfail, got 'sometimes'",),
    ),
    # a manifest gate that does not parse stops the run before any case, as --llmeval-gate does
    # (tests/fail_closed/test_manifest_gates.py)
]

HUGE_ANSWER_CONFTEST = answering_runner("huge", 'text == "huge"', '"y" * 100_000')

HOSTILE_ID = "x | ![img](http://evil.example/p.png) <script>alert(1)</script>\n# heading"

LATER: list[Bad] = [
    # -- 5: a response over the size cap; long texts clipped with the full length
    Bad(
        "response-over-the-size-cap",
        "huge-output",
        {"big.golden.json": json.dumps([{"id": "big", "input": "huge", "expected_output": "a"}])},
        (
            "big.golden.json:1: protocol error: openai: POST ",
            "response body over the 65536-byte limit (--llmeval-max-response-bytes): "
            "stopped after reading",
        ),
        args=("--llmeval-max-response-bytes", "65536"),
        server=True,
    ),
    Bad(
        "huge-answer-clipped-in-the-failure",
        "huge-output",
        {"big.golden.json": json.dumps([{"id": "big", "input": "huge", "expected_output": "a"}])},
        ("[clipped: ",),
        errors=0,
        args=("--llmeval-runner", "huge"),
        conftest=HUGE_ANSWER_CONFTEST,
    ),
    # -- 7: case text in summary.md is inert Markdown
    Bad(
        "markdown-in-a-case-id",
        "markdown-injection",
        {
            "md.golden.json": json.dumps(
                [{"id": HOSTILE_ID, "input": "q", "expected_output": "not q"}]
            )
        },
        (),
        errors=0,
        summary_absent=("![img](", "<script>", "\n# heading"),
        summary_holds=(
            "- `md.golden.json::x | ![img](http://evil.example/p.png) <script>alert(1)</script>"
            " # heading` (failed): ",
        ),
    ),
]
"""``huge-output`` and ``markdown-injection`` inputs that reach a live runner and
``summary.md``."""


class _ChunkedOpenAI(http.server.BaseHTTPRequestHandler):
    """A loopback OpenAI-compatible endpoint that echoes the last message, and answers
    ``huge`` with a chunked body (no ``Content-Length``) of 1 MiB: the cap must stop the read."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text = body["messages"][-1]["content"]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        answer = {"choices": [{"message": {"role": "assistant", "content": text}}]}
        if text == "huge":
            answer["choices"][0]["message"]["content"] = "z" * (1 << 20)
        data = json.dumps(answer).encode()
        for start in range(0, len(data), 16384):
            chunk = data[start : start + 16384]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, format: str, *args: object) -> None:
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # the client hangs up once the cap is reached: a broken pipe here is expected


@contextlib.contextmanager
def _openai_server() -> Iterator[str]:
    server = _QuietServer(("127.0.0.1", 0), _ChunkedOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("bad", [*CORPUS, *LATER], ids=lambda bad: f"{bad.item}-{bad.name}")
def test_bad_input_gives_its_error_and_the_rest_runs(pytester: pytest.Pytester, bad: Bad) -> None:
    if bad.conftest:
        pytester.makeconftest(bad.conftest)
    for name, content in bad.files.items():
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    for name, target in bad.symlinks.items():
        (pytester.path / name).symlink_to(target)
    (pytester.path / GOOD_FILE).write_text(json.dumps(GOOD_CASES, indent=2), encoding="utf-8")
    args = bad.args if "--llmeval-runner" in bad.args else ("--llmeval-runner", "echo", *bad.args)
    with contextlib.ExitStack() as stack:
        if bad.server:
            url = stack.enter_context(_openai_server())
            args = ("--llmeval-runner", "openai", "--llmeval-base-url", url, *bad.args)
            args += ("--llmeval-model", "m", "--llmeval-api-key-env", "NO_SUCH_KEY_VARIABLE")
        result = pytester.runpytest(
            *args, "--llmeval-run-dir", "run", "-rE", "-p", "no:cacheprovider"
        )
    out = result.stdout.str()
    for message in bad.messages:
        assert message in out, message
    assert "Traceback" not in out and "INTERNALERROR" not in out
    run_dir = pytester.path / "run"
    rows = read_jsonl(run_dir / "results.jsonl")
    json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
    good = [r for r in rows if r["file"] == GOOD_FILE]
    assert [(r["case_id"], r["outcome"]) for r in good] == [
        ("good-1", "passed"),
        ("good-2", "passed"),
    ]
    outcomes = [r["outcome"] for r in rows if r["file"] != GOOD_FILE]
    assert outcomes.count("passed") == bad.passed, outcomes
    if bad.errors is not None:
        assert outcomes.count("error") == bad.errors, [r.get("error") for r in rows]
    summary = (run_dir / "summary.md").read_text(encoding="utf-8")
    rendered = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "<code>", summary)  # code spans are inert
    for text in bad.summary_absent:
        assert text not in rendered, text
    for text in bad.summary_holds:
        assert text in summary, text


def test_the_corpus_covers_every_item() -> None:
    items = [bad.item for bad in (*CORPUS, *LATER)]
    assert set(items) == {*ITEMS, "works"}
    assert items.count("works") == 22  # the classes that were handled before
    assert len({bad.name for bad in CORPUS}) == len(CORPUS)


def test_results_name_the_bad_row_by_path_and_line(pytester: pytest.Pytester) -> None:
    """Beyond the terminal: the error row in results.jsonl carries path:line and the field."""
    (pytester.path / "c.eval.jsonl").write_text(_jsonl(ROW, '{"id": "w", "input": 1}'))
    pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    rows = {r["case_id"]: r for r in read_jsonl(Path(pytester.path / "run/results.jsonl"))}
    assert rows["w"]["outcome"] == "error" and rows["w"]["line"] == 2
    assert rows["w"]["error"].startswith("c.eval.jsonl:2: input: expected a string")


def test_a_row_with_invalid_unicode_keeps_its_id(pytester: pytest.Pytester) -> None:
    """The row's error item is named by its id when the id itself is readable (JSONL and a
    JSON array alike); a row whose id is the bad text is named by its line."""
    row = '{"id": "s", "input": "a\\ud800", "expected_output": "a"}'
    (pytester.path / "c.eval.jsonl").write_text(
        _jsonl(row, '{"id": "\\udfff", "input": "a", "expected_output": "a"}')
    )
    (pytester.path / "d.golden.json").write_text(f"[{row}]")
    result = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    result.assert_outcomes(errors=3)
    rows = read_jsonl(pytester.path / "run/results.jsonl")
    assert sorted(r["nodeid"] for r in rows) == ["c.eval.jsonl::line2", "c.eval.jsonl::s",
                                                 "d.golden.json::s"]  # fmt: skip
