"""The ``openai`` runner against a real server nobody here wrote: ``transformers serve``.

One server per module (:func:`served`), on 127.0.0.1, serving the tiny random model built from
a config, a ``tokenizers`` BPE and a chat template. It generates one request at a time and
cannot give prompt log-probabilities (``max_tokens: 0`` is an HTTP 500, ``echo`` and
``logprobs`` are ignored): the tests pin what a user then reads, rather than skip.

The runs go through pytest in a subprocess, as a user's would; the model is random, so a case
may pass or fail, but it is never an error unless the test says which and why.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.testing.tiny import build_tiny_model
from tests.conftest import read_jsonl, write_json
from tests.runners.serve import transformers_serve, weather_tool

pytest.importorskip("torch")
pytest.importorskip("transformers")

pytestmark = [pytest.mark.hf, pytest.mark.slow]

TEMPLATES = Path(__file__).resolve().parents[2] / "pytest_llmeval" / "commands" / "templates"
WHEN2CALL_ROWS = TEMPLATES / "when2call" / "data" / "when2call.jsonl"
GOLDEN = [
    {"id": "greet", "input": "hello", "expected_output": "Hello there!"},
    {
        "id": "weather",
        "input": "What is the weather in Paris?",
        "keywords": ["cloudy"],
        "min_scores": {"contains_keywords": 1.0},
    },
]


class Served:
    """The module's server: its ``/v1`` URL and the model name it serves."""

    def __init__(self, base_url: str, model: Path) -> None:
        self.base_url = base_url
        self.model = model


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    model = build_tiny_model(tmp_path_factory.mktemp("tiny") / "seed0", seed=0)
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    with transformers_serve(model, log) as base_url:
        yield Served(base_url, model)


def _run(pytester: pytest.Pytester, served: Served, *args: str, base_url: str | None = None) -> Any:
    return pytester.runpytest_subprocess(
        "--llmeval-runner",
        "openai",
        f"--llmeval-model={served.model}",  # spaced, a folder elsewhere moves pytest's rootdir
        "--llmeval-base-url",
        base_url or served.base_url,
        "-p",
        "no:cacheprovider",
        *args,
        timeout=300,
    )


def _golden_project(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    write_json(pytester, "cases.golden.json", GOLDEN)
    weather_tool(pytester)


def _when2call_project(pytester: pytest.Pytester, *options: str) -> None:
    pytester.makeini("[pytest]\n")
    (pytester.path / "w2c.jsonl").write_bytes(WHEN2CALL_ROWS.read_bytes())
    manifest = ["suite: when2call", "data: w2c.jsonl", *options]
    (pytester.path / "w2c.llmeval.yaml").write_text("\n".join(manifest) + "\n", encoding="utf-8")


def _rows(run: Path) -> dict[str, dict[str, Any]]:
    return {row["case_id"]: row for row in read_jsonl(run / "results.jsonl")}


def test_golden_with_tools_records_then_replays_offline(
    pytester: pytest.Pytester, served: Served
) -> None:
    _golden_project(pytester)
    recorded = _run(
        pytester, served,
        "--llmeval-max-tokens", "8", "--llmeval-tool-registry=tools.json",
        "--llmeval-record", "new", "--llmeval-run-dir", "live",
    )  # fmt: skip
    assert recorded.ret in (0, 1), recorded.stdout.str() + recorded.stderr.str()
    live = _rows(pytester.path / "live")
    assert sorted(live) == ["greet", "weather"]
    assert {r["outcome"] for r in live.values()} <= {"passed", "failed"}
    assert all(r["usage"]["completion_tokens"] >= 1 for r in live.values())

    replayed = pytester.runpytest_subprocess(
        "--llmeval-tool-registry=tools.json",
        "--llmeval-run-dir",
        "offline",
        "-p",
        "no:cacheprovider",
        timeout=120,
    )  # fmt: skip  (the default runner: replay, no server asked)
    assert replayed.ret == recorded.ret, replayed.stdout.str()
    offline = _rows(pytester.path / "offline")
    for case_id, row in live.items():
        assert offline[case_id]["outcome"] == row["outcome"]
        assert offline[case_id]["response"] == row["response"]
        assert offline[case_id]["runner_fingerprint"] == row["runner_fingerprint"]


def test_when2call_mcq_string_runs_on_the_server(pytester: pytest.Pytester, served: Served) -> None:
    _when2call_project(pytester, "protocol: mcq-string")
    result = _run(pytester, served, "--llmeval-max-tokens", "4", "--llmeval-run-dir", "run")
    assert result.ret in (0, 1), result.stdout.str() + result.stderr.str()
    rows = _rows(pytester.path / "run")
    assert len(rows) == 4
    assert {r["outcome"] for r in rows.values()} <= {"passed", "failed"}


def test_mcq_loglik_is_one_configuration_error_naming_the_fixes(
    pytester: pytest.Pytester, served: Served
) -> None:
    """The probe at the start finds no prompt log-probabilities: exit 4 at once, no case run,
    no five retries of an HTTP 500 per case."""
    _when2call_project(pytester, "protocol: mcq-loglik")
    started = time.monotonic()
    result = _run(pytester, served, "--llmeval-run-dir", "run")
    took = time.monotonic() - started
    err = result.stderr.str()
    assert result.ret == 4, result.stdout.str() + err
    assert "the endpoint gives no prompt log-probabilities (/v1/completions with echo and " in err
    assert "logprobs), which protocol mcq-loglik needs (w2c.llmeval.yaml)" in err
    assert "set `protocol: mcq-string` or `protocol: judge` in the manifest" in err
    assert "or use --llmeval-runner hf" in err
    assert "HTTP 500" in err  # what the probe met, once
    assert "gave up after" not in err
    assert not (pytester.path / "run" / "results.jsonl").exists()
    assert took < 60


def test_mcq_loglik_with_the_fallback_is_asked_in_chat(
    pytester: pytest.Pytester, served: Served
) -> None:
    _when2call_project(pytester, "protocol: mcq-loglik", "loglik_fallback: mcq-string")
    result = _run(pytester, served, "--llmeval-max-tokens", "4", "--llmeval-run-dir", "run")
    out = result.stdout.str()
    assert result.ret in (0, 1), out + result.stderr.str()
    lines = [line for line in out.splitlines() if "gives no prompt log-probabilities" in line]
    assert len(lines) == 1, out
    assert "loglik_fallback: mcq-string asks every mcq-loglik case in chat" in lines[0]
    rows = _rows(pytester.path / "run")
    assert {r["outcome"] for r in rows.values()} <= {"passed", "failed"}
    audits = [
        e for e in read_jsonl(pytester.path / "run" / "audit.jsonl")
        if e.get("stage") == "loglik_fallback"
    ]  # fmt: skip
    assert len(audits) == 4
    assert all("no prompt log-probabilities" in a["problem"] for a in audits)


def test_a_timeout_behind_serial_generation_names_the_options_and_keeps_its_time(
    pytester: pytest.Pytester, served: Served
) -> None:
    """Two long answers at once on a server that generates one at a time: both time out, the
    message names the options and says the time may have gone to its queue, and each case
    keeps the time it took (not 0 ms)."""
    _golden_project(pytester)
    result = _run(
        pytester, served,
        "--llmeval-timeout", "0.5", "--llmeval-concurrency", "2", "--llmeval-max-tokens", "600",
        "--llmeval-tool-registry=tools.json", "--llmeval-run-dir", "run",
    )  # fmt: skip
    assert result.ret == 1, result.stdout.str() + result.stderr.str()
    rows = _rows(pytester.path / "run")
    assert {r["outcome"] for r in rows.values()} == {"error"}
    for row in rows.values():
        error = row["error"]
        assert error.startswith("timed out after 0.5s: raise --llmeval-timeout"), error
        assert "--llmeval-max-tokens" in error and "--llmeval-concurrency 2" in error
        assert "1 other case ran beside it" in error
        assert "waiting in its queue" in error
        assert row["duration_ms"] >= 450


def test_endpoint_mistakes_name_the_fix(pytester: pytest.Pytester, served: Served) -> None:
    """A base URL without /v1, and an extra-body field the server refuses (HTTP 422)."""
    _golden_project(pytester)
    root = served.base_url.removesuffix("/v1")
    no_v1 = _run(pytester, served, "--llmeval-run-dir", "a", "-k", "greet", base_url=root)
    assert no_v1.ret == 1
    error = _rows(pytester.path / "a")["greet"]["error"]
    assert "HTTP 404" in error
    assert f"did you mean {root}/v1? (--llmeval-base-url)" in error

    refused = _run(
        pytester, served,
        "--llmeval-extra-body", '{"top_k_typo": 1}', "--llmeval-run-dir", "b", "-k", "greet",
    )  # fmt: skip
    assert refused.ret == 1
    error = _rows(pytester.path / "b")["greet"]["error"]
    assert "HTTP 422" in error
    assert "field 'top_k_typo' was sent by --llmeval-extra-body" in error
