"""Fail closed, round 2's second hostile review: budgets, files, secrets and signals.

Each entry drives a real session through pytester and asserts the exit status and the
recorded verdict, the two things CI and ``runs`` read:

* a well-known dummy password in a secret-named variable (``POSTGRES_PASSWORD=postgres``,
  ``DB_PASSWORD=password``, ``…=changeme``, as every CI service container sets them) is not a
  secret: it used to be masked in case ids and paths (``[REDACTED]_evals/…``), and the leak
  check found it in pytest's own junit (the test names), so every such run was red.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.core.redact import MASK, Redactor, is_placeholder, secret_env_values
from tests.conftest import read_jsonl, write_json


def _verdict(run: Path) -> dict[str, Any]:
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    return manifest["verdict"]  # type: ignore[no-any-return]


# -- a well-known dummy password is not a secret --------------------------------------------

DUMMIES = {
    "POSTGRES_PASSWORD": "postgres",
    "DB_PASSWORD": "password",
    "ADMIN_PASSWORD": "changeme",
    "KEYSTORE_PASSWORD": "changeit",
    "MINIO_SECRET_KEY": "minioadmin",
}
"""The defaults CI service containers and tutorials set (Postgres, Java keystores, MinIO)."""


def test_a_well_known_dummy_password_is_not_a_secret(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the defaults of a CI database set, a case about ``postgres`` in a folder named
    ``postgres_evals`` keeps its id and path, and the run is green: nothing is masked and the
    leak check does not find the word in pytest's junit. A real password stays a secret."""
    for name, value in DUMMIES.items():
        monkeypatch.setenv(name, value)
    text = "connect to postgres with password changeme"
    data = pytester.mkdir("postgres_evals") / "postgres.golden.json"
    data.write_text(json.dumps([{"id": "postgres_ok", "input": text, "expected_output": text}]))
    result = pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-run-dir", "run", "--junitxml=j.xml"
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert _verdict(pytester.path / "run")["status"] == "passed"
    (row,) = read_jsonl(pytester.path / "run" / "results.jsonl")
    assert row["case_id"] == "postgres_ok"
    assert row["file"] == "postgres_evals/postgres.golden.json"
    assert row["response"] == text
    assert all(is_placeholder(value) for value in DUMMIES.values())
    assert not secret_env_values(DUMMIES)
    real = "Pq7wLk2ZsR9v"
    assert secret_env_values({"POSTGRES_PASSWORD": real}) == [real]
    assert Redactor(secrets=[real]).text(f"postgres {real}") == f"postgres {MASK}"


# -- an absurd token count is the case's error ----------------------------------------------

ABSURD_CONFTEST = """
from pytest_llmeval.core.models import Usage
from pytest_llmeval.runners.base import Completion


class Absurd:
    name = "absurd"

    def fingerprint(self):
        return {"type": "absurd", "model": "m"}

    async def generate(self, request):
        text = request.messages[-1].content or ""
        prompt = 10**400 if text == "w1" else 3
        return Completion(text=text, usage=Usage(prompt_tokens=prompt, completion_tokens=3))

    async def aclose(self):
        return None


def pytest_llmeval_register_runners(registry):
    registry.register("absurd", lambda settings: Absurd())
"""


def test_an_absurd_token_count_is_the_cases_error(pytester: pytest.Pytester) -> None:
    """``Usage(prompt_tokens=10**400)`` under a cost budget: that case errs in one line, the
    other cases are judged and priced, and the run is red (exit 1), not an INTERNALERROR."""
    pytester.makeconftest(ABSURD_CONFTEST)
    pytester.makefile(".yaml", prices="m: {input: 1.0, output: 1.0}\n")
    write_json(
        pytester,
        "qa.golden.json",
        [{"id": f"c{i}", "input": f"w{i}", "expected_output": f"w{i}"} for i in range(3)],
    )
    result = pytester.runpytest(
        "--llmeval-runner", "absurd", "--llmeval-model", "m", "--llmeval-prices", "prices.yaml",
        "--llmeval-max-cost", "100", "--llmeval-concurrency", "1", "--llmeval-run-dir", "run",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    rows = {r["case_id"]: r for r in read_jsonl(pytester.path / "run" / "results.jsonl")}
    assert {k: r["outcome"] for k, r in rows.items()} == {
        "c0": "passed", "c1": "error", "c2": "passed",
    }  # fmt: skip
    assert "less than or equal to" in str(rows["c1"]["error"])
    assert _verdict(pytester.path / "run")["status"] == "failed"


# -- per-file artifacts never meet on a case-insensitive disk ---------------------------------

TOOLFORGE = [{"id": "tf-1", "input": {"message": "hi"}, "expect": {"responseNonEmpty": True}}]


def test_artifacts_whose_names_differ_only_in_case_keep_one_each(
    pytester: pytest.Pytester,
) -> None:
    """Two toolforge files ``a/Get_Weather`` and ``b/get_weather``: their artifacts' names
    differ in more than case, so a case-insensitive disk keeps both; ``search`` keeps its."""
    write_json(pytester, "a/Get_Weather.golden.json", TOOLFORGE)
    write_json(pytester, "b/get_weather.golden.json", [{**TOOLFORGE[0], "id": "tf-2"}])
    write_json(pytester, "search.golden.json", [{**TOOLFORGE[0], "id": "tf-3"}])
    result = pytester.runpytest("--llmeval-runner", "echo", "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    names = sorted(
        p.relative_to(pytester.path / "run").as_posix()
        for p in (pytester.path / "run" / "toolforge").glob("*.json")
    )
    assert len(names) == 3
    assert len({name.casefold() for name in names}) == 3, names
    assert "toolforge/search.golden.json" in names


# -- what a test prints is masked before any report shows it ----------------------------------

PRINTING = """
import os, sys

import pytest


class Agent:
    def run(self, case, broker):
        key = os.environ["OPENAI_KEY"]
        print("backend said", key)
        print("backend warned", key, file=sys.stderr)
        return "same"


@pytest.fixture(scope="session")
def llmeval_agent():
    return Agent()
"""
KEY = "Hn3Rz8WcYq5JdT1e"


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one", "xdist"])
def test_what_a_test_prints_is_masked_in_every_report(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: tuple[str, ...]
) -> None:
    """An agent prints its key to stdout and stderr, a plain test prints it too: the run is
    green, and the key is in no file (junit with all output, the json report) nor the
    terminal, where the printed lines show ``[REDACTED]``."""
    pytest.importorskip("pytest_jsonreport")
    if workers:
        pytest.importorskip("xdist")
    monkeypatch.setenv("OPENAI_KEY", KEY)
    pytester.makeconftest(PRINTING)
    pytester.makepyfile(
        test_plain="import os\n\ndef test_plain():\n    print('plain', os.environ['OPENAI_KEY'])\n"
    )
    write_json(
        pytester, "qa.golden.json", [{"id": "a", "input": "same", "expected_output": "same"}]
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--llmeval-run-dir", "run", "--junitxml", "junit.xml",
        "-o", "junit_logging=all", "--json-report", "--json-report-file", "report.json",
        "-rA", *workers,
    )  # fmt: skip
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.OK, output
    assert _verdict(pytester.path / "run")["status"] == "passed"
    leaked = [
        str(p) for p in pytester.path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()
    ]
    assert leaked == [] and KEY not in output
    junit = (pytester.path / "junit.xml").read_text()
    assert f"backend said {MASK}" in junit and f"plain {MASK}" in junit
