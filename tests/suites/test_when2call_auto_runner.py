"""``prompt_format: auto`` without ``--llmeval-model``: the format from the model the plugin's
runner's fingerprint names, the same for every case, under xdist and on a resume. (A
conftest's own runner or agent fixture is known only once a case runs: there ``auto`` needs
``--llmeval-model``, see test_when2call_auto_agents.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import read_jsonl, write_jsonl
from tests.suites.test_when2call import SCORER_CONFTEST
from tests.suites.test_when2call_prompts import CHECK
from tests.suites.test_when2call_routing import _contexts, _rows, _sha16

QWEN = "Qwen/Qwen2.5-7B-Instruct"
LLAMA = "meta-llama/Llama-3.2-1B-Instruct"

# the scorer again, its fingerprint naming the model in RUNNER_MODEL (none when unset): as the
# `named` runner of the registry (--llmeval-runner named), or as a conftest's own
# llmeval_runner fixture (FIXTURE_CONFTEST)
NAMED = """
class Named(Scorer):
    name = "named"

    def fingerprint(self):
        model = os.environ.get("RUNNER_MODEL")
        return {"type": "named", **({"model": model} if model else {})}
"""

REGISTRY_CONFTEST = (
    SCORER_CONFTEST
    + NAMED
    + """
_builtin = pytest_llmeval_register_runners

def pytest_llmeval_register_runners(registry):
    _builtin(registry)
    registry.register("named", lambda settings: Named())
"""
)

FIXTURE_CONFTEST = (
    SCORER_CONFTEST
    + NAMED
    + """
import pytest

@pytest.fixture(scope="session")
def llmeval_runner():
    return Named()
"""
)

BOTH = pytest.mark.parametrize(
    "conftest", [REGISTRY_CONFTEST, FIXTURE_CONFTEST], ids=["registry", "fixture"]
)
"""The runner named on the command line (``--llmeval-runner named``), or a conftest's fixture."""

AUTO = "suite: when2call\ndata: data/rows.jsonl\nprompt_format: auto\n"


def _setup(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, conftest: str) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(conftest)
    monkeypatch.setenv("SCORER_LOG", str(pytester.path / "asked.jsonl"))
    write_jsonl(pytester, "data/rows.jsonl", _rows())
    (pytester.path / "auto.llmeval.yaml").write_text(AUTO)


def _run(pytester: pytest.Pytester, run: str, *args: str, sub: bool = False) -> Any:
    argv = (f"--llmeval-run-dir={run}", "-p", "no:cacheprovider", *args)
    if sub:
        return pytester.runpytest_subprocess(*argv)
    return pytester.runpytest(*argv)


def _formats(pytester: pytest.Pytester, run: str) -> tuple[set[str], str]:
    results = read_jsonl(pytester.path / run / "results.jsonl")
    report = json.loads((pytester.path / run / "report.json").read_text())
    return {r["details"]["prompt_format"] for r in results}, report["suites"]["when2call"][
        "prompt_format"
    ]


def _fingerprints(pytester: pytest.Pytester, run: str) -> dict[str, str]:
    return {
        r["case_id"]: r["case_fingerprint"]
        for r in read_jsonl(pytester.path / run / "results.jsonl")
    }


def test_auto_reads_the_model_the_runners_fingerprint_names(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _setup(pytester, monkeypatch, REGISTRY_CONFTEST)
    monkeypatch.setenv("RUNNER_MODEL", QWEN)
    runner = ["--llmeval-runner", "named"]
    result = _run(pytester, "auto", *runner)
    assert result.ret in (0, 1), result.stdout.str()[-2000:]
    # the prompts are the qwen2_5 format's (the spec's check values for rows 0 and 4)
    assert {_sha16(c) for c in _contexts(pytester)} == {CHECK["qwen2_5"][0], CHECK["qwen2_5"][2]}
    assert _formats(pytester, "auto") == ({"qwen2_5"}, "qwen2_5")
    assert "prompt format qwen2_5" in result.stdout.str()  # the terminal headline

    # the same case fingerprints as the format named in the manifest
    (pytester.path / "auto.llmeval.yaml").write_text(AUTO.replace("auto", "qwen2_5"))
    _run(pytester, "named", *runner)
    assert _fingerprints(pytester, "named") == _fingerprints(pytester, "auto")


@BOTH
def test_llmeval_model_wins_over_the_runner_and_the_manifest_over_both(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, conftest: str
) -> None:
    _setup(pytester, monkeypatch, conftest)
    monkeypatch.setenv("RUNNER_MODEL", QWEN)
    runner = ["--llmeval-runner", "named"] if conftest is REGISTRY_CONFTEST else []
    _run(pytester, "llama", *runner, "--llmeval-model", LLAMA)
    assert {_sha16(c) for c in _contexts(pytester)} == {CHECK["llama3_2"][0], CHECK["llama3_2"][2]}
    assert _formats(pytester, "llama") == ({"llama3_2"}, "llama3_2")

    (pytester.path / "asked.jsonl").unlink()
    (pytester.path / "auto.llmeval.yaml").write_text(AUTO.replace("auto", "hermes"))
    _run(pytester, "hermes", *runner, "--llmeval-model", LLAMA)
    assert {_sha16(c) for c in _contexts(pytester)} == {CHECK["hermes"][0], CHECK["hermes"][2]}
    assert _formats(pytester, "hermes") == ({"hermes"}, "hermes")


def test_a_runner_that_names_no_model_gets_default_and_says_so(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _setup(pytester, monkeypatch, REGISTRY_CONFTEST)
    monkeypatch.delenv("RUNNER_MODEL", raising=False)
    runner = ["--llmeval-runner", "named"]
    result = _run(pytester, "auto", *runner)
    assert result.ret in (0, 1), result.stdout.str()[-2000:]
    assert {_sha16(c) for c in _contexts(pytester)} == {CHECK["default"][0], CHECK["default"][2]}
    assert _formats(pytester, "auto") == ({"default"}, "default")
    assert "prompt format default" in result.stdout.str()


def test_xdist_workers_pick_what_one_process_picks(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _setup(pytester, monkeypatch, REGISTRY_CONFTEST)
    monkeypatch.setenv("RUNNER_MODEL", QWEN)
    runner = ["--llmeval-runner", "named"]
    one = _run(pytester, "one", *runner, sub=True)
    two = _run(pytester, "two", *runner, "-n", "2", sub=True)
    assert one.ret == two.ret and one.ret in (0, 1), two.stdout.str()[-2000:]
    assert _formats(pytester, "two") == ({"qwen2_5"}, "qwen2_5") == _formats(pytester, "one")
    assert _fingerprints(pytester, "two") == _fingerprints(pytester, "one")
    reports = [json.loads((pytester.path / r / "report.json").read_text()) for r in ("one", "two")]
    assert reports[0]["runners"] == reports[1]["runners"]
    assert reports[0]["runner_fingerprint"] == reports[1]["runner_fingerprint"]
    assert "prompt format qwen2_5" in two.stdout.str()


def _journal_one_case_less(run: Path) -> None:
    """Make ``run`` look interrupted before its last case: that case's journal lines (the
    results a resume reads) and the reports are removed."""
    (journal,) = (run / "journal").rglob("*.jsonl")
    lines = journal.read_text(encoding="utf-8").splitlines(keepends=True)
    last = json.loads(lines[-1])["result"]["case_id"]
    kept = [line for line in lines if json.loads(line)["result"]["case_id"] != last]
    journal.write_text("".join(kept), encoding="utf-8")
    for name in ("report.json", "results.jsonl"):
        (run / name).unlink()


def test_a_resume_reads_the_runners_model_before_it_compares_the_cases(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _setup(pytester, monkeypatch, REGISTRY_CONFTEST)
    monkeypatch.setenv("RUNNER_MODEL", QWEN)
    first = _run(pytester, "run", "--llmeval-runner", "named")
    assert first.ret in (0, 1)
    before = _fingerprints(pytester, "run")
    _journal_one_case_less(pytester.path / "run")
    (pytester.path / "asked.jsonl").unlink()

    resumed = pytester.runpytest(
        "--llmeval-runner", "named", "--llmeval-resume=run", "-p", "no:cacheprovider"
    )
    out = resumed.stdout.str()
    assert resumed.ret in (0, 1), out[-2000:]
    assert "changed since" not in out  # the earlier case kept: same format, same fingerprint
    assert len(read_jsonl(pytester.path / "asked.jsonl")) == 4  # one case (four options) ran
    assert _fingerprints(pytester, "run") == before
    assert _formats(pytester, "run") == ({"qwen2_5"}, "qwen2_5")


def test_a_resume_runs_again_a_case_whose_format_changed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _setup(pytester, monkeypatch, REGISTRY_CONFTEST)
    monkeypatch.setenv("RUNNER_MODEL", QWEN)
    _run(pytester, "run", "--llmeval-runner", "named")
    _journal_one_case_less(pytester.path / "run")
    # the same runner; --llmeval-model now picks llama3_2 over the runner's qwen
    refused = pytester.runpytest(
        "--llmeval-runner", "named", "--llmeval-resume=run", "--llmeval-model", LLAMA,
        "-p", "no:cacheprovider",
    )  # fmt: skip
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert "every one of its 1 finished cases collected again has changed" in (
        refused.stdout.str() + refused.stderr.str()
    )
    again = pytester.runpytest(
        "--llmeval-runner", "named", "--llmeval-resume=run", "--llmeval-model", LLAMA,
        "--llmeval-resume-allow-mismatch", "-p", "no:cacheprovider",
    )  # fmt: skip
    assert again.ret in (0, 1), again.stdout.str()[-2000:]
    assert "1 of 1 cases changed since the interrupted run; running them again" in (
        again.stdout.str()
    )
    assert _formats(pytester, "run") == ({"llama3_2"}, "llama3_2")


def test_a_resume_whose_agent_is_a_fixture_needs_the_model_named(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _setup(pytester, monkeypatch, FIXTURE_CONFTEST)
    monkeypatch.setenv("RUNNER_MODEL", QWEN)
    first = _run(pytester, "run", "--llmeval-model", QWEN)
    assert first.ret in (0, 1), first.stdout.str()[-2000:]
    _journal_one_case_less(pytester.path / "run")
    (pytester.path / "asked.jsonl").unlink()
    # the fixture's model is known only once a case runs: refused before the cases are
    # compared, with and without --llmeval-resume-allow-mismatch
    for allow in ([], ["--llmeval-resume-allow-mismatch"]):
        resumed = pytester.runpytest("--llmeval-resume=run", "-p", "no:cacheprovider", *allow)
        out = resumed.stdout.str() + resumed.stderr.str()
        assert resumed.ret == pytest.ExitCode.USAGE_ERROR, out[-2000:]
        assert "give --llmeval-model NAME, or name prompt_format in the manifest" in out
        assert "changed since" not in out
        assert not (pytester.path / "asked.jsonl").exists()  # nothing ran in any format
    # as it says: the model named, the resume keeps the earlier case and runs the other
    resumed = pytester.runpytest(
        "--llmeval-resume=run", "--llmeval-model", QWEN, "-p", "no:cacheprovider"
    )
    assert resumed.ret in (0, 1), resumed.stdout.str()[-2000:]
    assert "changed since" not in resumed.stdout.str()
    assert len(read_jsonl(pytester.path / "asked.jsonl")) == 4
    assert _formats(pytester, "run") == ({"qwen2_5"}, "qwen2_5")


def test_a_replay_runner_reads_the_model_its_cassettes_recorded(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _setup(pytester, monkeypatch, REGISTRY_CONFTEST)
    monkeypatch.setenv("RUNNER_MODEL", QWEN)
    recorded = _run(
        pytester, "recorded", "--llmeval-runner", "named", "--llmeval-record", "new",
        "--llmeval-cassettes=cassettes",
    )  # fmt: skip
    assert recorded.ret in (0, 1), recorded.stdout.str()[-2000:]
    (runner_json,) = (pytester.path / "cassettes").rglob("runner.json")
    assert json.loads(runner_json.read_text())["model"] == QWEN
    (pytester.path / "asked.jsonl").unlink()
    monkeypatch.delenv("RUNNER_MODEL")  # the replay runner knows the model from the cassettes
    replayed = _run(
        pytester, "replayed", "--llmeval-runner", "replay", "--llmeval-cassettes=cassettes"
    )
    assert replayed.ret == recorded.ret, replayed.stdout.str()[-2000:]
    assert not (pytester.path / "asked.jsonl").exists()  # every score replayed: the same prompts
    assert _formats(pytester, "replayed") == ({"qwen2_5"}, "qwen2_5")
    assert _fingerprints(pytester, "replayed") == _fingerprints(pytester, "recorded")


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_a_resume_whose_runner_cannot_be_built_is_one_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str]
) -> None:
    _setup(pytester, monkeypatch, REGISTRY_CONFTEST)
    monkeypatch.setenv("RUNNER_MODEL", QWEN)
    _run(pytester, "run", "--llmeval-runner", "named")
    _journal_one_case_less(pytester.path / "run")
    (pytester.path / "asked.jsonl").unlink()
    result = pytester.runpytest_subprocess(
        "--llmeval-runner", "nosuch", "--llmeval-resume=run", "-p", "no:cacheprovider", *workers
    )
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-2000:]
    assert "--llmeval-runner: unknown runner 'nosuch'" in out
    assert "Traceback" not in out
    assert not (pytester.path / "asked.jsonl").exists()
