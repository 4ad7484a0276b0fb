"""Secrets never reach a written file; the leak check fails the session when one does."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from pytest_llmeval.core.redact import (
    MASK,
    TOKEN_PATTERNS,
    TOKEN_PREFIXES,
    Redactor,
    find_leaks,
    secret_values,
)
from tests.conftest import write_json

SECRET = "s3cr3t-VALUE-4242"


@pytest.mark.parametrize(
    "token",
    [
        "sk-abcdefghijklmnop",
        "hf_ABCDEFGHIJKLMNOPQ",
        "jina_0123456789abcdef",
        "pplx-0123456789abcdef",
        "AIzaSyA0123456789abcdefghijkl",
        "Bearer eyJhbGciOi.J9xyz",
    ],
)
def test_token_patterns(token: str) -> None:
    assert Redactor().text(f"the key is {token} ok") == f"the key is {MASK} ok"


def test_every_token_pattern_begins_with_its_prefix() -> None:
    """:meth:`Redactor.text` tries the token patterns only on a text holding a prefix."""
    for pattern in TOKEN_PATTERNS:
        assert any(pattern.startswith(rf"\b{p}") for p in TOKEN_PREFIXES), pattern  # literal
    text = "sk-short hf_x Bearer  abc, jina_ pplx-? AIza" * 3  # prefixes, nothing to mask
    assert Redactor().text(text) == text
    assert Redactor(["short"]).text(text) == text.replace("short", MASK)


def test_secret_named_keys_but_not_counts_or_fingerprints() -> None:
    value = {
        "api_key": "abc",
        "Authorization": "Basic xyz",
        "access_token": "t",
        "password": "p",
        "usage": {"prompt_tokens": 3, "total_tokens": 5},
        "tokenizer_fingerprint": "abc123",
        "key": "0f" * 32,
        "nested": [{"client_secret": "x", "q": "weather"}],
    }
    out = Redactor().value(value)
    assert out["api_key"] == out["Authorization"] == out["access_token"] == MASK
    assert out["password"] == MASK and out["nested"][0]["client_secret"] == MASK
    assert out["usage"] == {"prompt_tokens": 3, "total_tokens": 5}
    assert out["tokenizer_fingerprint"] == "abc123"
    assert out["key"] == "0f" * 32
    assert out["nested"][0]["q"] == "weather"


def test_url_userinfo_extra_patterns_and_literal_secrets() -> None:
    redactor = Redactor(patterns=[r"ACME-\d+"], secrets=[SECRET])
    text = f"see https://bob:pw@host.example/x, ticket ACME-991, value {SECRET}."
    assert redactor.text(text) == (
        f"see https://{MASK}@host.example/x, ticket {MASK}, value {MASK}."
    )


def test_secret_values_ignore_short_and_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"A": SECRET, "B": "no", "C": ""}
    assert secret_values(["A", "B", "C", "D"], env) == [SECRET]


def test_find_leaks_scans_folders(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "clean.json").write_text("{}")
    (tmp_path / "a" / "dirty.json").write_text(f'{{"x": "{SECRET}"}}')
    assert find_leaks([tmp_path], [SECRET]) == [tmp_path / "a" / "dirty.json"]
    assert find_leaks([tmp_path], []) == []


LEAKY_AGENT = f"""
import pytest
from pytest_llmeval.core.models import ToolCallRecord
from pytest_llmeval.runners.base import AgentResponse

class Leaky:
    def run(self, case, broker):
        return AgentResponse(
            response="the secret is {SECRET} and sk-abcdefghijklmnop",
            tool_calls=[ToolCallRecord(name="login", params={{"password": "{SECRET}"}})],
        )

@pytest.fixture(scope="session")
def llmeval_agent():
    return Leaky()
"""


def _all_text(root: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in root.rglob("*") if p.is_file())


def test_a_planted_secret_reaches_no_file(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pytest_jsonreport")
    monkeypatch.setenv("MY_SECRET", SECRET)
    pytester.makeconftest(LEAKY_AGENT)
    write_json(pytester, "qa.golden.json", [{"id": "a", "input": "x", "expected_output": "y"}])
    result = pytester.runpytest(
        "--llmeval-secret-env", "MY_SECRET", "--llmeval-run-dir", "run",
        "--junitxml", "junit.xml", "--json-report", "--json-report-file", "report.json",
    )  # fmt: skip
    result.assert_outcomes(failed=1)  # the case fails; no leak, so no extra failure
    assert SECRET not in result.stdout.str()
    assert "sk-abcdefghijklmnop" not in result.stdout.str()
    written = _all_text(pytester.path / "run")
    written += (pytester.path / "junit.xml").read_text()
    written += (pytester.path / "report.json").read_text()
    assert SECRET not in written
    assert "sk-abcdefghijklmnop" not in written
    assert MASK in (pytester.path / "run" / "results.jsonl").read_text()
    assert "leak check" not in result.stdout.str()


def test_leak_check_fires_when_the_redactor_is_bypassed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SECRET", SECRET)
    pytester.makeconftest(
        f"""
def pytest_sessionfinish(session):
    # a plugin that writes into the run dir behind the redactor's back
    from pytest_llmeval.plugin.state import state_key
    run_dir = session.config.stash[state_key].ensure_run_dir()
    (run_dir / "notes.txt").write_text("oops {SECRET}")
"""
    )
    write_json(pytester, "qa.golden.json", [{"id": "a", "input": "x", "expected_output": "x"}])
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-secret-env", "MY_SECRET", "--llmeval-run-dir", "run"
    )
    result.stdout.fnmatch_lines(
        ["llmeval: leak check: a configured secret's value is in */notes.txt"]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert SECRET not in result.stdout.str()


def test_api_key_and_provider_key_variables_are_secrets(pytester: pytest.Pytester) -> None:
    from pytest_llmeval.config.secrets import secret_env_names
    from pytest_llmeval.plugin.options import from_config

    pytester.makeini(
        "[pytest]\nllmeval_providers =\n    acme http://127.0.0.1:9/v1 ACME_KEY acme-\n"
    )
    config = pytester.parseconfigure("--llmeval-secret-env", "MINE")
    assert secret_env_names(from_config(config)) == ["ACME_KEY", "MINE", "OPENAI_API_KEY"]


def test_a_key_variable_name_is_shown_its_value_never() -> None:
    settings = {"api_key_env": "MY_KEY", "judge_api_key_env": "JUDGE_KEY", "api_key": "v4lue"}
    assert Redactor(secrets=["v4lue"]).value(settings) == {
        "api_key_env": "MY_KEY",
        "judge_api_key_env": "JUDGE_KEY",
        "api_key": MASK,
    }


def test_the_http_client_logs_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from pytest_llmeval.core.log_redaction import redact_logs

    redact_logs(Redactor(secrets=[SECRET]))
    try:
        with caplog.at_level(logging.INFO, logger="httpx"):
            logging.getLogger("httpx").info("HTTP Request: POST %s", "http://h/v1?key=K9&x=1")
            logging.getLogger("httpx").info("sent %s", SECRET)
    finally:
        redact_logs(Redactor())
    assert caplog.messages == [f"HTTP Request: POST http://h/v1?key={MASK}&x=1", f"sent {MASK}"]


_PIECES = (
    "plain", "message 7", "sk-abcdefghijklmnop", "hf_ABCDEFGHIJKLMNOPQ", "\nsk-abcdefghij12",
    "Bearer eyJhbGciOi.J9xyz", "Bearer\u00a0eyJhbGciOi", "AIzaSyA0123456789abcdefghijkl",
    "https://user:pass@host/x", "http://h/p?api_key=abc&q=1", "a=b", "see?token=xyz",
    SECRET, SECRET.upper(), "czNjcjN0LVZBTFVFLTQyNDI=", "s3cr3t%2DVALUE%2D4242",
    "\\u0073\\u0033cr3t", "\u212a", "caf\u00e9", "\"quoted\"", "back\\slash", "\x00\x1f",
)  # fmt: skip
_KEYS = (
    "content", "role", "api_key", "API-KEY", "apikey", "x_token", "token", "tokens",
    "prompt_tokens", "client_secret", "Passwd", "authorization", "privateKey", "access-key",
    "api_\u212aey", "pa\u017f\u017fword", "key", "tokenizer", "api_key_env", "keywords",
)  # fmt: skip


def _escaped_forms(secret: str) -> tuple[str, ...]:
    """A secret as JSON and JavaScript escape every character of it (the redactor masks it)."""
    return (
        "".join(f"\\u{ord(c):04x}" for c in secret),
        "".join(f"\\u{ord(c):04X}" for c in secret),
        "".join(f"%{ord(c):02X}" for c in secret),
    )


def _random_value(rng: random.Random, pieces: tuple[str, ...], depth: int = 0) -> object:
    kind = rng.randrange(6 if depth < 3 else 3)
    if kind == 0:
        return "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 3)))
    if kind == 1:
        return rng.choice([1, 2.5, None, True, "ok"])
    if kind == 2:
        return rng.choice(["x" * 40, "message 12", "golden", "0f" * 32])
    if kind == 3:
        return [_random_value(rng, pieces, depth + 1) for _ in range(rng.randrange(3))]
    return {
        rng.choice(_KEYS): _random_value(rng, pieces, depth + 1) for _ in range(rng.randrange(4))
    }


@pytest.mark.parametrize("secrets", [(), (SECRET,), ('tok"en\\value-12345',)])
def test_a_value_the_json_scan_passes_is_one_the_redactor_leaves_as_it_is(
    secrets: tuple[str, ...],
) -> None:
    """``may_change`` lets ``attach`` skip the redaction walk of a result's dump: it must
    never say "no" for a value the walk would change (thousands of random values built from
    every kind of secret shape, key and escape), and it says "no" for ordinary results."""
    redactor = Redactor(secrets=secrets)
    pieces = _PIECES + tuple(form for secret in secrets for form in _escaped_forms(secret))
    rng = random.Random(20261128)
    changed = 0
    for _ in range(4000):
        value = {"result": _random_value(rng, pieces), "usage": {"total_tokens": 3}}
        redacted = redactor.value(value)
        if redacted != value:
            changed += 1
            assert redactor.may_change(json.dumps(value, sort_keys=True)), value
    assert changed > 500  # the corpus does reach the rules
    plain = {
        "case_id": "c1",
        "input": [{"content": "message 1", "role": "user"}],
        "usage": {"prompt_tokens": 2, "total_tokens": 4},
        "expected": {"keywords": ["a"]},
    }
    assert not redactor.may_change(json.dumps(plain, sort_keys=True))
    assert Redactor(patterns=["message"]).may_change("{}")  # a user's pattern: always walked
