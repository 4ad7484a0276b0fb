"""Fail closed on secrets: a secret's value never reaches a file the session writes.

Each entry drives a real session through pytester with fake secret values in the environment
and an agent (or a backend) that echoes them, then greps every file under the test's tmp tree,
and the terminal, for each secret in each of its common encodings:

* a variable whose name says secret is one: ``…_KEY`` (``AZURE_OPENAI_KEY``, ``OPENAI_KEY``,
  ``SERPAPI_KEY``), ``…_TOKEN``, ``…_PAT``, ``…_AUTH``, ``…_PASS``, ``…_PWD`` as well as the
  ``…_API_KEY``, ``…_SECRET``, ``…_PASSWORD`` ones, while harmless variables stay unmasked;
* a secret echoed JSON-escaped (``\\/``, ``\\u00xx``), percent-encoded, base64 (standard,
  URL-safe, with and without padding, inside a Basic ``user:key``) or HTML-escaped is masked
  and looked for like the literal value, in an agent's error and in a backend's error body;
* pytest's ``--log-file`` is masked at the source (a ``logging`` record, its arguments, its
  ``extra`` fields and its traceback) and is part of the leak check: a value that gets there
  all the same makes the run red, naming the file and never the value.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from pytest_llmeval.core.redact import MASK, Redactor, find_leaks, is_secret_env_name
from pytest_llmeval.testing.openai_server import OpenAIServer
from pytest_llmeval.testing.server import Reply, Request
from tests.conftest import read_jsonl, write_json

KEYED = {
    "AZURE_OPENAI_KEY": "q7Xv2LmR9tKw4ZpB",
    "OPENAI_KEY": "Hn3Rz8WcYq5JdT1e",
    "SERPAPI_KEY": "b9Tf4KxM2sQw7LpV",
    "GITHUB_PAT": "Gp6Wk1NzR8vXq3Ls",
    "SMTP_PASS": "Rv5Qe2Mt9LzYc7Hw",
    "DB_PWD": "Zc4Nw8Tk1QpXv6Bj",
    "PROXY_AUTH": "Lx2Hv7Qn5WrTk9Mz",
    "HF_TOKEN": "Kd8Sw3Xp6NqRz1Tf",
}
"""Secret-named variables the run never configured, each with a fake random-looking value."""
ODD = "aK3/9zQ+Lm7&Wx<Rt2>Vb\"Pq'Ny5=Ue8 Jc"
"""A fake key with every character an encoder changes (``/ + & < > " ' = `` and a space)."""
HARMLESS = {
    "PYTHONHASHSEED": "123456789",
    "SSH_AUTH_SOCK": "/tmp/ssh-agent-harmless.sock",
    "MONKEY": "HarmlessMonkeyValue1",
    "SORT_KEY": "name",
}
"""Variables that are not secrets (not secret-named, a number, a short value): never masked."""
CASES = [
    {"id": "ok", "input": "same", "expected_output": "same"},
    {"id": "echo", "input": "echo the keys", "expected_output": "same"},
]


def encodings(value: str, user: str = "llm-user") -> dict[str, str]:
    """Every form of ``value`` the session must keep out of its files."""
    raw = value.encode()
    basic = f"{user}:{value}".encode()
    forms = {
        "literal": value,
        "json": json.dumps(value)[1:-1],
        "json-slash": json.dumps(value)[1:-1].replace("/", "\\/"),
        "json-php": json.dumps(value)[1:-1]
        .replace("/", "\\/")
        .replace("&", "\\u0026")
        .replace("<", "\\u003c"),
        "repr": repr(value)[1:-1],
        "json-u": "".join(c if c.isalnum() else f"\\u{ord(c):04x}" for c in value),
        "json-U": "".join(c if c.isalnum() else f"\\u{ord(c):04X}" for c in value),
        "quote": quote(value, safe=""),
        "quote-lower": "".join(
            c.lower() if i and quote(value, safe="")[i - 1] == "%" else c
            for i, c in enumerate(quote(value, safe=""))
        ),
        "quote-plus": quote_plus(value),
        "html": html.escape(value),
        "html-noquote": html.escape(value, quote=False),
        "base64": base64.b64encode(raw).decode(),
        "base64-nopad": base64.b64encode(raw).decode().rstrip("="),
        "base64-url": base64.urlsafe_b64encode(raw).decode(),
        "base64-url-nopad": base64.urlsafe_b64encode(raw).decode().rstrip("="),
        "basic-auth": base64.b64encode(basic).decode(),
        "basic-auth-1": base64.b64encode(b"u:" + raw).decode(),
        "basic-auth-2": base64.b64encode(b"us:" + raw).decode(),
    }
    return {name: form for name, form in forms.items()}


def _found(root: Path, outputs: dict[str, str], values: dict[str, str]) -> list[str]:
    """``<secret> as <encoding> in <file>`` for every encoding of every value anywhere under
    ``root`` (bytes, every file) or in ``outputs`` (the terminal)."""
    files = {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    texts = {**files, **{name: text.encode() for name, text in outputs.items()}}
    return [
        f"{name} as {form_name} in {where}"
        for name, value in values.items()
        for form_name, form in encodings(value).items()
        for where, data in texts.items()
        if form.encode() in data
    ]


AGENT = """
import base64, html, json, logging, os
from urllib.parse import quote, quote_plus

import pytest

log = logging.getLogger("my_agent")


class Agent:
    def run(self, case, broker):
        if case.case_id == "ok":
            return "same"
        keys = [os.environ[name] for name in sorted(NAMES)]
        forms = []
        for key in keys:
            raw = key.encode()
            forms += [key, json.dumps(key).replace("/", "\\\\/"), quote(key, safe=""),
                      quote_plus(key), html.escape(key), base64.b64encode(raw).decode(),
                      base64.urlsafe_b64encode(raw).decode().rstrip("="),
                      base64.b64encode(b"llm-user:" + raw).decode(),
                      "".join(c if c.isalnum() else "\\\\u%04x" % ord(c) for c in key)]
        log.warning("calling the backend with %s", keys)
        log.info("the key", extra={"api": keys[0]})
        try:
            raise ValueError("backend said: " + " ".join(keys))
        except ValueError:
            log.exception("the call failed")
        raise RuntimeError("backend refused: " + " | ".join(forms))


@pytest.fixture(scope="session")
def llmeval_agent():
    return Agent()
"""


def _project(pytester: pytest.Pytester, names: list[str]) -> None:
    write_json(pytester, "qa.golden.json", CASES)
    pytester.makeconftest(f"NAMES = {names!r}\n" + AGENT)


def _set(monkeypatch: pytest.MonkeyPatch, values: dict[str, str]) -> None:
    for name, value in values.items():
        monkeypatch.setenv(name, value)


RUN = (
    "--llmeval-run-dir", "run", "--junitxml", "junit.xml", "-rA",
    "--log-file", "pytest.log", "--log-file-level", "DEBUG",
    "--log-file-format", "%(levelname)s %(message)s",
)  # fmt: skip


# -- C.10: secret-named variables include ..._KEY ----------------------------------------------


def test_a_key_named_variable_is_a_secret_in_every_file(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent's error echoes ``AZURE_OPENAI_KEY``, ``OPENAI_KEY``, ``SERPAPI_KEY`` and the
    other secret-named variables: each is masked in results, errors, events, the journal,
    report.html, summary.md and junit, and the leak check finds nothing left."""
    _set(monkeypatch, KEYED | HARMLESS)
    _project(pytester, sorted(KEYED))
    result = pytester.runpytest(*RUN)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the echo case errored, nothing else
    assert "leak check" not in result.stdout.str()
    outputs = {"stdout": result.stdout.str(), "stderr": result.stderr.str()}
    assert _found(pytester.path, outputs, KEYED) == []
    run = pytester.path / "run"
    echo = {r["case_id"]: r for r in read_jsonl(run / "results.jsonl")}["echo"]
    assert echo["outcome"] == "error" and MASK in echo["error"]
    for name in ("results.jsonl", "errors.jsonl", "summary.md", "report.html"):
        assert (run / name).is_file()
    assert MASK in (pytester.path / "pytest.log").read_text()


@pytest.mark.parametrize(
    "name",
    [*KEYED, "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "CLIENT_SECRET", "DB_PASSWORD",
     "GITHUB_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS", "AZURE_OPENAI_APIKEY", "CI_JOB_JWT_V2",
     "SSH_PRIVATE_KEY", "NPM_AUTH", "MY_APP_SECRET_KEY", "KEY", "FLASK_SECRET"],
)  # fmt: skip
def test_secret_named_variables(name: str) -> None:
    assert is_secret_env_name(name)


@pytest.mark.parametrize(
    "name",
    ["PYTHONHASHSEED", "SSH_AUTH_SOCK", "MONKEY", "TURKEY", "PWD", "OLDPWD", "GIT_ASKPASS",
     "AWS_ACCESS_KEY_ID", "TOKENIZERS_PARALLELISM", "KEYBOARD", "PASSENGER", "PATH",
     "KEY_FILE", "SSL_CERT_FILE", "TIKTOKEN_CACHE_DIR", "BYPASS", "COMPASS"],
)  # fmt: skip
def test_harmless_variables(name: str) -> None:
    assert not is_secret_env_name(name)


def test_harmless_values_stay_visible(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A short value of a key variable, a number or a path is not masked: the run's reports
    keep ordinary text, and the leak check does not fail a clean run on it."""
    _set(monkeypatch, HARMLESS | {"SORT_KEY": "name", "BUILD_KEY": "20261126", "A_KEY": "/tmp"})
    text = "name /tmp 123456789"
    write_json(pytester, "qa.golden.json", [{"id": "n", "input": text, "expected_output": text}])
    result = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.OK
    row = read_jsonl(pytester.path / "run" / "results.jsonl")[0]
    assert row["response"] == text


# -- C.11: encoded echoes are masked and looked for ----------------------------------------


def test_an_encoded_echo_is_masked_in_every_file(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's error quotes the keys JSON-escaped, percent-encoded, base64 (also as a
    Basic ``user:key``) and HTML-escaped: no form of any key is in any file."""
    values = {"AZURE_OPENAI_KEY": KEYED["AZURE_OPENAI_KEY"], "AWS_SECRET_ACCESS_KEY": ODD}
    _set(monkeypatch, values)
    _project(pytester, sorted(values))
    result = pytester.runpytest(*RUN)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "leak check" not in result.stdout.str()
    outputs = {"stdout": result.stdout.str(), "stderr": result.stderr.str()}
    assert _found(pytester.path, outputs, values) == []
    echo = {r["case_id"]: r for r in read_jsonl(pytester.path / "run" / "results.jsonl")}["echo"]
    assert echo["error"].count(MASK) >= 9 * len(values)


def _escaping_backend(key: str) -> object:
    def handler(request: Request) -> Reply:
        # a PHP-style JSON encoder: every "/" escaped, every non-ASCII and markup character too
        body = json.dumps({"error": {"message": f"invalid key {key}", "key": key}})
        body = body.replace("/", "\\/").replace("&", "\\u0026").replace("<", "\\u003c")
        return Reply(status=401, body=body, headers={"Content-Type": "application/json"})

    return handler


def test_a_backends_escaped_error_body_is_masked(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backend answers 401 with a JSON body quoting the key ``\\/``-escaped: the error is
    decoded before it is redacted, and nothing of the key is in any file."""
    monkeypatch.setenv("AZURE_OPENAI_KEY", ODD)
    write_json(pytester, "qa.golden.json", CASES[:1])
    with OpenAIServer() as server:
        server.route("POST", server.chat_path, _escaping_backend(ODD))
        result = pytester.runpytest(
            "--llmeval-runner", "openai", "--llmeval-model", "m",
            "--llmeval-base-url", server.base_url, "--llmeval-api-key-env", "AZURE_OPENAI_KEY",
            "--llmeval-run-dir", "run", "--junitxml", "junit.xml", "-rA",
        )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    outputs = {"stdout": result.stdout.str(), "stderr": result.stderr.str()}
    assert _found(pytester.path, outputs, {"AZURE_OPENAI_KEY": ODD}) == []
    [row] = read_jsonl(pytester.path / "run" / "results.jsonl")
    assert "invalid key" in row["error"] and "HTTP 401" in row["error"]


def test_every_encoding_is_masked_and_found(tmp_path: Path) -> None:
    """The redactor and the leak check agree on every encoding of every secret."""
    secrets = [ODD, KEYED["OPENAI_KEY"]]
    redactor = Redactor(secrets=secrets)
    for secret in secrets:
        for name, form in encodings(secret).items():
            text = f"before {form} after"
            masked = redactor.text(text)
            assert form not in masked, name
            assert masked.startswith("before ") and masked.endswith(" after"), name
            (tmp_path / "f.txt").write_text(text)
            assert find_leaks([tmp_path], secrets) == [tmp_path / "f.txt"], name
    (tmp_path / "f.txt").write_text("a clean report: " + MASK)
    assert find_leaks([tmp_path], secrets) == []


# -- C.12: the leak check covers every file the session writes ----------------------------


def test_the_log_file_is_masked_at_the_source(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent that logs a key (in the message, its arguments, an ``extra`` field and a
    traceback) leaves only masks in pytest's ``--log-file``, and the run is judged as usual."""
    monkeypatch.setenv("SERPAPI_KEY", KEYED["SERPAPI_KEY"])
    _project(pytester, ["SERPAPI_KEY"])
    result = pytester.runpytest(*RUN, "-k", "echo")
    assert "leak check" not in result.stdout.str()
    log = (pytester.path / "pytest.log").read_text()
    assert "calling the backend with" in log and "the call failed" in log
    assert "Traceback" in log and MASK in log
    assert _found(pytester.path, {}, {"SERPAPI_KEY": KEYED["SERPAPI_KEY"]}) == []


LATE_WRITER = """
import os

def pytest_sessionfinish(session):
    # a plugin of the user's writes pytest's log file itself, past any logging filter
    with open(session.config.getoption("log_file"), "a") as log:
        log.write("late: " + os.environ["SERPAPI_KEY"] + "\\n")
"""


def test_a_secret_in_the_log_file_fails_the_run_naming_the_file(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A value that reaches pytest's ``--log-file`` past the filter is a leak: red (exit 1),
    the file named, the value never shown."""
    monkeypatch.setenv("SERPAPI_KEY", KEYED["SERPAPI_KEY"])
    write_json(pytester, "qa.golden.json", CASES[:1])
    pytester.makeconftest(LATE_WRITER)
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-run-dir", "run", "--log-file", "pytest.log"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*leak check: a configured secret's value is in *pytest.log"])
    assert KEYED["SERPAPI_KEY"] not in result.stdout.str() + result.stderr.str()
    manifest = json.loads((pytester.path / "run" / "manifest.json").read_text())
    assert manifest["verdict"]["status"] == "failed"
    assert any("pytest.log" in r for r in manifest["verdict"]["reasons"])


def test_a_log_record_is_masked_whole() -> None:
    """The filter on pytest's handlers masks a record's message and arguments, its ``extra``
    fields, its traceback and its stack, before any formatter reads them."""
    import logging

    from pytest_llmeval.core.log_redaction import redact_handler, redact_logs

    key = KEYED["OPENAI_KEY"]
    written: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            written.append(self.format(record))

    handler = Keep()
    handler.setFormatter(logging.Formatter("%(message)s %(api)s"))
    redact_handler(handler)
    logger = logging.getLogger("tests.secrets.record")
    logger.addHandler(handler)
    redact_logs(Redactor(secrets=[key]))
    try:
        try:
            raise ValueError(f"refused {key}")
        except ValueError:
            logger.error("key %s", quote(key), extra={"api": key}, exc_info=True, stack_info=True)
    finally:
        redact_logs(Redactor())
        logger.removeHandler(handler)
    [text] = written
    assert key not in text and "refused" in text and "Stack (most recent call last)" in text
    assert f"key {MASK} {MASK}" in text and f"ValueError: refused {MASK}" in text


def test_the_leak_check_reads_every_file_pytest_and_its_plugins_write(
    pytester: pytest.Pytester,
) -> None:
    """junit, the log file (where pytest's handler writes it), ``--debug``'s trace, the
    report plugins' files (json-report, html, reportlog, result log), the baseline and the
    cassettes: each is in the list the leak check reads."""
    from pytest_llmeval.plugin.session_files import REPORT_FILE_OPTIONS, written_files
    from pytest_llmeval.plugin.state import state_key

    names = {option: f"{option}.out" for option in REPORT_FILE_OPTIONS}
    config = pytester.parseconfigure(
        "--log-file", "logs/pytest.log", "--llmeval-update-baseline=base.json",
        "--llmeval-record", "new", "--llmeval-cassettes=cas", "--llmeval-runner", "echo",
    )  # fmt: skip
    for name in [*names.values(), "logs/pytest.log", "base.json", "cas/c.json", "run/r.json"]:
        (pytester.path / name).parent.mkdir(parents=True, exist_ok=True)
        (pytester.path / name).write_text("x")
    for option, name in names.items():
        setattr(config.option, option, str(pytester.path / name))
    settings = config.stash[state_key].settings
    written = written_files(config, settings, pytester.path / "run")
    expected = {pytester.path / n for n in [*names.values(), "logs/pytest.log", "base.json"]}
    assert expected | {pytester.path / "cas", pytester.path / "run"} == set(written)
