"""The leak check, extended: one distinct secret planted through every route a credential
can take into a run, a real session against the loopback OpenAI server whose answers and
errors echo back everything they were sent, and not one planted value in any file the session
wrote (run dir, journal, cassettes, junit, json report, baseline) nor in its terminal output.

The routes: the API key variable; a password in the base URL's user-info; a
credential in its query string (also on the command line, so in the manifest's invocation);
a ``CI_*`` job token in the environment; secret-named keys of ``--llmeval-extra-body``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.config.secrets import session_secrets
from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.redact import MASK, Redactor, url_secrets
from pytest_llmeval.report.provenance import filtered_environment
from pytest_llmeval.testing.openai_server import OpenAIServer
from pytest_llmeval.testing.server import Reply, Request
from tests.conftest import write_json

API_KEY = "PLANTED-apikey-7f3k9q"
USERINFO = "PLANTED-userinfo-2x8m4w"
QUERY = "PLANTED-query-5n1r6t"
CI_TOKEN = "PLANTED-cijob-9d2h7p"
EXTRA_KEY = "PLANTED-extrakey-4b8c1v"
EXTRA_TOKEN = "PLANTED-extratoken-6j3s0z"
OVERRIDDEN = "PLANTED-overridden-8w5e2u"
"""In ``PYTEST_LLMEVAL_EXTRA_BODY``, which the command line's extra body overrides: unused, but
the manifest records the environment all the same."""
PLANTED = {
    "api key": API_KEY,
    "url user-info": USERINFO,
    "url query": QUERY,
    "CI job token": CI_TOKEN,
    "extra-body api_key": EXTRA_KEY,
    "extra-body x_token": EXTRA_TOKEN,
    "overridden extra body": OVERRIDDEN,
}
EXTRA_BODY = {"api_key": EXTRA_KEY, "x_token": EXTRA_TOKEN, "top_k": 3}
CASES = [
    {"id": "plain", "input": "say 4", "expected_output": "4"},
    {"id": "echo", "input": "echo what you were sent", "expected_output": "x"},
    {"id": "fail", "input": "fail and say why", "expected_output": "x"},
]


def _echo(request: Request) -> str:
    """What a careless backend repeats: the query, the credentials and the whole body."""
    auth = request.headers.get("authorization", "")
    return f"query {request.query}; auth {auth}; body {request.text}"


def _hostile(api_key: str | None) -> Any:
    def handler(request: Request) -> Reply:
        if api_key is not None and request.headers.get("authorization") != f"Bearer {api_key}":
            return Reply(status=401, json={"error": {"message": "no key"}})
        if "fail and say why" in request.text:
            return Reply(status=400, json={"error": {"message": f"bad request: {_echo(request)}"}})
        content = _echo(request) if "echo what" in request.text else "4"
        message = {"role": "assistant", "content": content}
        return Reply(json={"choices": [{"message": message, "finish_reason": "stop"}]})

    return handler


def _written(root: Path) -> dict[Path, str]:
    return {p: p.read_text(errors="replace") for p in sorted(root.rglob("*")) if p.is_file()}


def _leaks(texts: dict[str, str]) -> list[str]:
    """Where a planted value, or the start of one (a message clipped in mid-secret), is."""
    return [
        f"{route} in {where}"
        for where, text in texts.items()
        for route, value in PLANTED.items()
        if value[:12] in text
    ]


@pytest.mark.parametrize("auth", ["url-userinfo", "bearer"])
def test_no_planted_secret_reaches_any_artifact_or_the_terminal(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, auth: str
) -> None:
    """``url-userinfo``: the base URL carries ``user:password@`` (httpx then sends basic
    auth); ``bearer``: the server insists on the API key. Both carry the query credential."""
    monkeypatch.setenv("PLANTED_API_KEY", API_KEY)
    monkeypatch.setenv("CI_JOB_TOKEN", CI_TOKEN)
    monkeypatch.setenv("CI_COMMIT_SHA", "0123abcd")
    monkeypatch.setenv("PYTEST_LLMEVAL_EXTRA_BODY", json.dumps({"api_key": OVERRIDDEN}))
    write_json(pytester, "qa.golden.json", CASES)
    json_report = ["--json-report", "--json-report-file", "report.json"]
    try:
        import pytest_jsonreport  # noqa: F401
    except ImportError:
        json_report = []
    with OpenAIServer(api_key=API_KEY if auth == "bearer" else None) as server:
        server.route("POST", server.chat_path, _hostile(API_KEY if auth == "bearer" else None))
        host = server.base_url.removeprefix("http://")
        userinfo = f"llm-user:{USERINFO}@" if auth == "url-userinfo" else ""
        base_url = f"http://{userinfo}{host}?api_key={QUERY}"
        result = pytester.runpytest(
            "--llmeval-runner", "openai", "--llmeval-model", "test-model",
            "--llmeval-base-url", base_url, "--llmeval-api-key-env", "PLANTED_API_KEY",
            f"--llmeval-extra-body={json.dumps(EXTRA_BODY)}",
            "--llmeval-run-dir", "run", "--llmeval-record", "new",
            "--llmeval-update-baseline", "baseline.json",
            "--junitxml", "junit.xml", *json_report,
            "-rA", "-v", "--log-level", "DEBUG",
        )  # fmt: skip
        [*_, sent] = server.requests
    # the secrets went where they belong: the request
    assert sent.query == f"api_key={QUERY}"
    assert sent.json["api_key"] == EXTRA_KEY and sent.json["x_token"] == EXTRA_TOKEN
    if auth == "bearer":
        assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    result.assert_outcomes(passed=1, failed=1, errors=1)
    outputs = {"stdout": result.stdout.str(), "stderr": result.stderr.str()}
    written = _written(pytester.path)
    outputs |= {str(p.relative_to(pytester.path)): text for p, text in written.items()}
    assert _leaks(outputs) == []
    assert "leak check" not in result.stdout.str()
    # and it is not because nothing was written: the echo and the error were, masked
    run = pytester.path / "run"
    rows = (run / "results.jsonl").read_text().splitlines()
    results = {r["case_id"]: r for r in map(json.loads, rows)}
    assert MASK in results["echo"]["response"] and "top_k" in results["echo"]["response"]
    assert "HTTP 400" in results["fail"]["error"] and "***" in results["fail"]["error"]
    assert {"junit.xml", "baseline.json", "run/manifest.json", "run/report.html"} <= set(outputs)
    assert any(name.endswith("runner.json") for name in outputs)
    assert any("journal" in name for name in outputs)
    manifest = json.loads((run / "manifest.json").read_text())
    # configuration stays visible: the key variable's name, the extra body's other settings
    assert manifest["settings"]["api_key_env"] == "PLANTED_API_KEY"
    assert "PLANTED_API_KEY" in manifest["invocation"]
    assert manifest["settings"]["extra_body"] == {"api_key": MASK, "x_token": MASK, "top_k": 3}
    assert f"?api_key={MASK}" in " ".join(manifest["invocation"])
    assert manifest["environment"]["CI_COMMIT_SHA"] == "0123abcd"
    assert "CI_JOB_TOKEN" not in manifest["environment"]


def test_a_recorded_run_with_secret_extra_body_replays(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """runner.json holds the masked fingerprint, and the cassette keys are made from that
    same fingerprint: replaying needs no secret and finds every cassette."""
    write_json(pytester, "qa.golden.json", CASES[:1])
    with OpenAIServer(_hostile(None)) as server:
        server.route("POST", server.chat_path, _hostile(None))
        record = pytester.runpytest(
            "--llmeval-runner", "openai", "--llmeval-model", "test-model",
            "--llmeval-base-url", server.base_url, "--llmeval-record", "new",
            f"--llmeval-extra-body={json.dumps(EXTRA_BODY)}", "--llmeval-run-dir", "rec",
        )  # fmt: skip
    record.assert_outcomes(passed=1)
    replay = pytester.runpytest("--llmeval-runner", "replay", "--llmeval-run-dir", "rep")
    replay.assert_outcomes(passed=1)
    assert _leaks({str(p): t for p, t in _written(pytester.path).items()}) == []


def test_the_session_knows_every_planted_value(tmp_path: Path) -> None:
    """What the redactor masks literally and the built-in leak check looks for."""
    settings = Settings(
        rootdir=tmp_path, cassettes=tmp_path / "c", fixtures=tmp_path / "f",
        seed_manifest=tmp_path / "s.json", output_root=tmp_path / "runs",
        api_key_env="PLANTED_API_KEY", extra_body=EXTRA_BODY,
        base_url=f"http://u:{USERINFO}@127.0.0.1:9/v1?api_key={QUERY}",
    )  # fmt: skip
    environ = {"PLANTED_API_KEY": API_KEY, "CI_JOB_TOKEN": CI_TOKEN, "CI_JOB_ID": "12345678",
               "PYTEST_LLMEVAL_EXTRA_BODY": json.dumps({"api_key": OVERRIDDEN})}  # fmt: skip
    secrets = session_secrets(settings, ["--x", "http://h/?token=PLANTED-argv-1"], environ)
    assert set(PLANTED.values()) | {"PLANTED-argv-1"} <= set(secrets)
    assert "12345678" not in secrets and "u" not in secrets


def test_url_secrets_and_query_credentials() -> None:
    url = "https://bob:pa%24%24word@host/v1?api-version=2024&key=K123&X-Amz-Signature=abc"
    assert {"pa$$word", "pa%24%24word", "K123", "abc"} <= set(url_secrets(url))
    assert "2024" not in url_secrets(url) and "bob" not in url_secrets(url)
    assert "TOKEN1234" in url_secrets("https://TOKEN1234@github.com/x.git")
    text = Redactor().text(f"GET {url} failed; see https://x.test/a?design=blue&sig=s1")
    assert text == (
        f"GET https://{MASK}@host/v1?api-version=2024&key={MASK}&X-Amz-Signature={MASK} "
        f"failed; see https://x.test/a?design=blue&sig={MASK}"
    )


def test_argv_masks_secret_options_but_shows_variable_names() -> None:
    argv = [
        "--llmeval-api-key-env", "MY_KEY", "--api-key", "abc", "--token=xyz",
        "-o", "llmeval_api_key=qqq", "--llmeval-extra-body", '{"api_key": "e", "n": 1}',
        "--llmeval-base-url=http://u:p@h/v1?access_token=t", "-k", "weather",
    ]  # fmt: skip
    assert Redactor().argv(argv) == [
        "--llmeval-api-key-env", "MY_KEY", "--api-key", MASK, f"--token={MASK}",
        "-o", f"llmeval_api_key={MASK}", "--llmeval-extra-body", f'{{"api_key": "{MASK}", "n": 1}}',
        f"--llmeval-base-url=http://{MASK}@h/v1?access_token={MASK}", "-k", "weather",
    ]  # fmt: skip


def test_the_environment_keeps_ci_provenance_only() -> None:
    environ = {
        "CI": "true", "CI_COMMIT_SHA": "abc", "CI_PIPELINE_ID": "7", "GITHUB_RUN_ID": "9",
        "CI_JOB_TOKEN": "t0k3n-t0k3n", "CI_JOB_JWT_V2": "jwt", "CI_REGISTRY_PASSWORD": "pw",
        "CI_REPOSITORY_URL": "https://gitlab-ci-token:t0k3n@gitlab.example/x.git",
        "GITHUB_TOKEN": "ghs_x", "PYTEST_LLMEVAL_API_TOKEN": "t", "OMP_NUM_THREADS": "1",
        "HOME": "/root",
    }  # fmt: skip
    assert filtered_environment(environ) == {
        "CI": "true", "CI_COMMIT_SHA": "abc", "CI_PIPELINE_ID": "7", "GITHUB_RUN_ID": "9",
        "OMP_NUM_THREADS": "1", "PYTEST_LLMEVAL_API_TOKEN": MASK,
    }  # fmt: skip


def test_the_leak_check_fires_on_a_bypassed_route(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plugin writing the CI token and the URL password behind the redactor's back: the
    built-in check knows these values though no --llmeval-secret-env names them."""
    monkeypatch.setenv("CI_JOB_TOKEN", CI_TOKEN)
    pytester.makeconftest(
        f"""
def pytest_sessionfinish(session):
    from pytest_llmeval.plugin.state import state_key
    run_dir = session.config.stash[state_key].ensure_run_dir()
    (run_dir / "ci.txt").write_text("{CI_TOKEN}")
    (run_dir / "url.txt").write_text("{USERINFO}")
"""
    )
    write_json(pytester, "qa.golden.json", CASES[:1])
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-run-dir", "run",
        "--llmeval-agent-url", f"http://u:{USERINFO}@127.0.0.1:9/agent",
    )  # fmt: skip
    result.stdout.fnmatch_lines_random(
        [
            "llmeval: leak check: a configured secret's value is in */ci.txt",
            "llmeval: leak check: a configured secret's value is in */url.txt",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
