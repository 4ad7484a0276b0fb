"""``prompt_format: auto`` (the format from the model's name) and the ``harmony`` format."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

try:  # imported once here: pytester's in-process runs drop modules imported inside them, and
    import openai_harmony as oh  # a PyO3 module cannot be initialised twice in one process
except ImportError:  # the harmony extra is not installed: its tests skip
    oh = None

from pytest_llmeval.core.errors import ConfigError
from pytest_llmeval.suites.when2call_harmony import load_encoding
from pytest_llmeval.suites.when2call_prompts import build_prompt, tool_call_option
from pytest_llmeval.suites.when2call_routing import ROUTES, model_stem, route
from tests.conftest import W2C_FILE, read_jsonl, write_jsonl
from tests.suites.test_when2call import SCORER_CONFTEST
from tests.suites.test_when2call_prompts import CHECK

DOCS = Path(__file__).resolve().parents[2] / "docs" / "when2call.md"

# one model name per routing rule, as a hub id or a local folder
RULES = [
    ("meta-llama/Llama-3.2-1B-Instruct", "llama3_2"),
    ("/models/qwen2.5-7b-instruct", "qwen2_5"),
    ("Salesforce/xLAM-7b-fc-r", "xlam"),
    ("NousResearch/Hermes-3-Llama-3.1-8B", "hermes"),
    ("meetkai/functionary-small-v3.1", "functionary"),
    ("openai/gpt-oss-20b", "harmony"),
    ("mistralai/Mistral-7B-Instruct-v0.3", "default"),
]

# the prompts openai-harmony 0.0.8 renders for rows 0 (two tools) and 4 (no tools): sha256
# (16 hex) of the prompt and of the prompt + the tool_call option, as CHECK has them
HARMONY_CHECK = ("c46171e105beb983", "1fdb0fd300a7d00c", "1c11ddae4205acc2", "7f2c8947cd9e93cd")


def _sha16(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _rows() -> list[dict[str, Any]]:
    if not W2C_FILE.is_file():
        pytest.skip(f"the When2Call data file is not beside the project ({W2C_FILE})")
    lines = W2C_FILE.read_text(encoding="utf-8").splitlines()
    return [json.loads(lines[0]), json.loads(lines[4])]


def _harmony_or_skip() -> None:
    if oh is None:
        pytest.skip("the harmony extra (openai-harmony) is not installed")
    try:
        load_encoding()
    except ConfigError as exc:
        pytest.skip(f"harmony cannot render here: {exc}")


def _hashes(fmt: Any, rows: list[dict[str, Any]]) -> tuple[str, ...]:
    out = []
    for row in rows:
        prompt = build_prompt(
            fmt, row["question"], row["tools"], [json.loads(t) for t in row["tools"]]
        )
        call = row["answers"]["tool_call"]
        out += [_sha16(prompt), _sha16(prompt + tool_call_option(fmt, call, json.loads(call)))]
    return tuple(out)


@pytest.mark.parametrize(("model", "fmt"), RULES)
def test_each_rule_routes_to_its_format(model: str, fmt: str) -> None:
    assert route(model) == fmt
    assert route(model.upper()) == fmt  # case-insensitive
    assert route(model_stem(model)) == fmt


def test_only_the_last_path_segment_counts_and_fine_tunes_win() -> None:
    assert route("/srv/llama3-checkpoints/my-model") == "default"
    assert route("qwen2-org/Mistral-7B") == "default"
    assert route("Salesforce/Llama-xLAM-2-8b-fc-r") == "xlam"
    assert route("NousResearch/Hermes-2-Pro-Qwen2-7B") == "hermes"
    assert (route("Qwen/Qwen3-8B"), route("huggyllama/llama-30b")) == ("default", "default")
    assert route("C:\\models\\Meta-Llama-3.1-8B-Instruct\\") == "llama3_2"


@pytest.mark.parametrize(
    "model",
    [
        "/models/llama-3.2-1b/checkpoint-500",
        "/models/llama-3.2-1b/checkpoint_500/",
        "out/Llama-3.2-1B/step-1000",
        "out/Llama-3.2-1B/global_step200",
        "out/Llama-3.2-1B/final",
        "out/Llama-3.2-1B/checkpoint-500/final",
    ],
)
def test_a_checkpoint_folder_is_passed_over(model: str) -> None:
    assert model_stem(model).lower() == "llama-3.2-1b"
    assert route(model) == "llama3_2"


def test_a_name_without_a_segment_is_no_name() -> None:
    assert [model_stem(m) for m in ("/", "//", " ", "\\")] == ["", "", "", ""]
    assert model_stem("checkpoint-500") == "checkpoint-500"  # only checkpoints: the last one


def test_the_docs_table_is_the_code_table() -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## prompt_format: auto", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| ([^|]+?) \| `([^`]+)` \| `([^`]+)` \|$", section, re.MULTILINE)
    assert rows == list(ROUTES)
    assert "| anything else | | `default` |" in section


@pytest.fixture
def w2c(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(SCORER_CONFTEST)
    monkeypatch.setenv("SCORER_LOG", str(pytester.path / "asked.jsonl"))
    return pytester


def _contexts(pytester: pytest.Pytester) -> list[str]:
    seen: dict[str, None] = {}
    for asked in read_jsonl(pytester.path / "asked.jsonl"):
        seen.setdefault(asked["context"], None)
    return list(seen)


@pytest.mark.parametrize(("model", "fmt"), RULES)
def test_auto_builds_the_named_formats_prompt(w2c: pytest.Pytester, model: str, fmt: str) -> None:
    rows = _rows()
    if fmt == "harmony":
        _harmony_or_skip()
    write_jsonl(w2c, "data/rows.jsonl", rows)
    (w2c.path / "auto.llmeval.yaml").write_text(
        "suite: when2call\ndata: data/rows.jsonl\nprompt_format: auto\n"
    )
    result = w2c.runpytest(
        "--llmeval-runner", "scorer", "--llmeval-model", model, "--llmeval-run-dir", "run",
        "-p", "no:cacheprovider",
    )  # fmt: skip
    assert result.ret in (0, 1), result.stdout.str()[-2000:]
    asked = {c for c in _contexts(w2c)}
    expected = HARMONY_CHECK if fmt == "harmony" else CHECK[fmt]
    assert {_sha16(c) for c in asked} == {expected[0], expected[2]}  # spec §6 check values
    assert _hashes(fmt, rows) == expected
    results = read_jsonl(w2c.path / "run" / "results.jsonl")
    assert {r["details"]["prompt_format"] for r in results} == {fmt}
    report = json.loads((w2c.path / "run" / "report.json").read_text())
    assert report["suites"]["when2call"]["prompt_format"] == fmt
    assert f"prompt format {fmt}" in result.stdout.str()  # the terminal headline

    # the fingerprint is that of the format named explicitly, and differs from another's
    (w2c.path / "auto.llmeval.yaml").write_text(
        f"suite: when2call\ndata: data/rows.jsonl\nprompt_format: {fmt}\n"
    )
    w2c.runpytest(
        "--llmeval-runner", "scorer", "--llmeval-run-dir", "named", "-p", "no:cacheprovider"
    )
    named = read_jsonl(w2c.path / "named" / "results.jsonl")
    assert [r["case_fingerprint"] for r in named] == [r["case_fingerprint"] for r in results]
    other = "hermes" if fmt != "hermes" else "xlam"
    (w2c.path / "auto.llmeval.yaml").write_text(
        f"suite: when2call\ndata: data/rows.jsonl\nprompt_format: {other}\n"
    )
    w2c.runpytest(
        "--llmeval-runner", "scorer", "--llmeval-run-dir", "other", "-p", "no:cacheprovider"
    )
    fingerprints = {r["case_fingerprint"] for r in read_jsonl(w2c.path / "other" / "results.jsonl")}
    assert fingerprints.isdisjoint(r["case_fingerprint"] for r in results)


def test_an_explicit_format_wins_over_the_models_name(w2c: pytest.Pytester) -> None:
    rows = _rows()
    write_jsonl(w2c, "data/rows.jsonl", rows)
    (w2c.path / "x.llmeval.yaml").write_text(
        "suite: when2call\ndata: data/rows.jsonl\nprompt_format: hermes\n"
    )
    w2c.runpytest("--llmeval-runner", "scorer", "--llmeval-model", "meta-llama/Llama-3.2-1B")
    assert {_sha16(c) for c in _contexts(w2c)} == {CHECK["hermes"][0], CHECK["hermes"][2]}


@pytest.mark.parametrize("model", ["/", " "], ids=["only a slash", "blank"])
def test_auto_with_a_model_name_that_names_nothing_is_one_clear_error(
    w2c: pytest.Pytester, model: str
) -> None:
    write_jsonl(w2c, "data/rows.jsonl", _rows())
    (w2c.path / "x.llmeval.yaml").write_text(
        "suite: when2call\ndata: data/rows.jsonl\nprompt_format: auto\n"
    )
    result = w2c.runpytest("--llmeval-runner", "scorer", f"--llmeval-model={model}")
    result.assert_outcomes(errors=1)
    assert "auto picks the format from the model's name, and --llmeval-model" in (
        result.stdout.str()
    )
    assert not (w2c.path / "asked.jsonl").exists()


def test_auto_without_a_model_name_from_a_runner_that_names_none_is_default(
    w2c: pytest.Pytester,
) -> None:
    write_jsonl(w2c, "data/rows.jsonl", _rows())
    (w2c.path / "x.llmeval.yaml").write_text(
        "suite: when2call\ndata: data/rows.jsonl\nprompt_format: auto\n"
    )
    result = w2c.runpytest("--llmeval-runner", "scorer")  # its fingerprint: {"type": "scorer"}
    assert result.ret in (0, 1), result.stdout.str()[-2000:]
    assert {_sha16(c) for c in _contexts(w2c)} == {CHECK["default"][0], CHECK["default"][2]}
    assert "prompt format default" in result.stdout.str()


def test_harmony_prompts_are_the_librarys(w2c: pytest.Pytester) -> None:
    _harmony_or_skip()
    assert oh is not None
    rows = _rows()
    encoding = load_encoding()
    for row, (prompt_hash, _) in zip(rows, [HARMONY_CHECK[:2], HARMONY_CHECK[2:]], strict=True):
        parsed = [json.loads(t) for t in row["tools"]]
        prompt = build_prompt("harmony", row["question"], row["tools"], parsed)
        assert _sha16(prompt) == prompt_hash
        assert prompt.startswith("<|start|>system<|message|>")
        assert prompt.endswith(
            f"<|start|>user<|message|>{row['question']}<|end|><|start|>assistant"
        )
        assert ("<|start|>developer<|message|># Tools" in prompt) == bool(row["tools"])
        # the library's own rendering of the same conversation, built here without the suite
        messages = [oh.Message.from_role_and_content(oh.Role.SYSTEM, oh.SystemContent.new())]
        if row["tools"]:
            assert "(_: any)" not in prompt  # the BFCL types were mapped to JSON Schema's
            specs = [
                json.loads(t.replace('"type": "dict"', '"type": "object"')) for t in row["tools"]
            ]
            tools = [
                oh.ToolDescription.new(t["name"], t["description"], parameters=t["parameters"])
                for t in specs
            ]
            developer = oh.DeveloperContent.new().with_function_tools(tools)
            messages.append(oh.Message.from_role_and_content(oh.Role.DEVELOPER, developer))
        messages.append(oh.Message.from_role_and_content(oh.Role.USER, row["question"]))
        tokens = encoding.render_conversation_for_completion(
            oh.Conversation.from_messages(messages), oh.Role.ASSISTANT
        )
        assert prompt == encoding.decode_utf8(tokens)
    call = rows[0]["answers"]["tool_call"]
    option = tool_call_option("harmony", call, json.loads(call))
    assert option.startswith(
        " to=functions.CustomDashboardsApi.get_shareable_api_tokens<|channel|>"
    )
    assert option.endswith('<|message|>{"user_id": "12345"}<|call|>')


def test_harmony_without_its_vocabulary_is_one_clear_error(
    w2c: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    if oh is None:  # without openai-harmony the error names the extra instead
        pytest.skip("the harmony extra (openai-harmony) is not installed")
    write_jsonl(w2c, "data/rows.jsonl", _rows())
    (w2c.path / "x.llmeval.yaml").write_text(
        "suite: when2call\ndata: data/rows.jsonl\nprompt_format: auto\n"
    )
    empty = w2c.path / "no-vocab"
    empty.mkdir()
    monkeypatch.setenv("TIKTOKEN_ENCODINGS_BASE", str(empty))
    load_encoding.cache_clear()
    try:
        result = w2c.runpytest(
            "--llmeval-runner", "scorer", "--llmeval-model", "openai/gpt-oss-20b"
        )
    finally:
        load_encoding.cache_clear()
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert "manifest option prompt_format" in out and "o200k_base" in out
    assert "TIKTOKEN_ENCODINGS_BASE" in out and "Traceback" not in out
