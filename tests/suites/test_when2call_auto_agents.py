"""``prompt_format: auto`` when the cases run with a conftest's own agent (an ``llmeval_runner``
or ``llmeval_agent`` fixture that does not take the plugin's runner): its model is known only
once a case runs, so ``auto`` there needs ``--llmeval-model`` (one usage error before any case
otherwise, with xdist as without, on a resume too); a named model or a named format runs. A
user's agent that wraps the plugin's runner runs in the format that runner's model picks."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import read_jsonl, write_jsonl
from tests.suites.test_when2call import SCORER_CONFTEST
from tests.suites.test_when2call_auto_runner import AUTO, NAMED
from tests.suites.test_when2call_routing import _rows

LLAMA = "meta-llama/Llama-3.2-1B-Instruct"
QWEN = "Qwen/Qwen2.5-7B-Instruct"

SET_UP = "set_up.txt"
"""A file the conftests' fixtures below write when they are set up (an agent was asked)."""

FIXTURES = {
    "session runner": '@pytest.fixture(scope="session")\ndef llmeval_runner():\n'
    "    set_up('runner')\n    return Named()\n",
    "agent per case": "N = [0]\n@pytest.fixture\ndef llmeval_agent():\n    N[0] += 1\n"
    f"    set_up('agent')\n"
    f"    os.environ['RUNNER_MODEL'] = {LLAMA!r} if N[0] == 1 else {QWEN!r}\n"
    "    return default_agent(Named())\n",
    "runner that skips": '@pytest.fixture(scope="session")\ndef llmeval_runner():\n'
    "    set_up('skip')\n    pytest.skip('no gpu here')\n",
}
"""A conftest's own agent: a session-wide runner naming ``RUNNER_MODEL``, an agent per case
naming another model than the first's, a runner fixture that skips."""

FIX = "give --llmeval-model NAME, or name prompt_format in the manifest auto.llmeval.yaml"


def _setup(
    pytester: pytest.Pytester, fixture: str, rows: list[dict[str, Any]], manifest: str = AUTO
) -> None:
    pytester.makeini("[pytest]\n")
    head = (
        "\nimport pytest\nfrom pytest_llmeval.engine.agent import default_agent\n"
        f"def set_up(what):\n    with open({SET_UP!r}, 'a') as f:\n        f.write(what)\n"
    )
    pytester.makeconftest(SCORER_CONFTEST + NAMED + head + fixture)
    write_jsonl(pytester, "data/rows.jsonl", rows)
    (pytester.path / "auto.llmeval.yaml").write_text(manifest)


def _outcomes(pytester: pytest.Pytester) -> dict[str, tuple[str, str]]:
    return {
        r["case_id"]: (r["outcome"], r.get("error") or "")
        for r in read_jsonl(pytester.path / "run" / "results.jsonl")
    }


def _formats(pytester: pytest.Pytester) -> set[str]:
    results = read_jsonl(pytester.path / "run" / "results.jsonl")
    return {r["details"]["prompt_format"] for r in results if r["outcome"] != "error"}


def _copies(n: int) -> list[dict[str, Any]]:
    return [dict(row, uuid=f"{row['uuid']}-{i}") for i in range(n) for row in _rows()]


@pytest.mark.parametrize("fixture", list(FIXTURES))
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_auto_with_a_conftest_agent_and_no_model_is_one_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, fixture: str, workers: list[str]
) -> None:
    # the model is known only once a case's agent is set up: no case is built in a format
    # its model may not pick, whatever the agent turns out to name
    if workers:
        pytest.importorskip("xdist")
    monkeypatch.setenv("RUNNER_MODEL", QWEN)
    _setup(pytester, FIXTURES[fixture], _copies(2))
    result = pytester.runpytest_subprocess(
        "--llmeval-run-dir=run", "-p", "no:cacheprovider", *workers
    )
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-2000:]
    assert FIX in out and "conftest's own llmeval_agent or llmeval_runner fixture" in out
    assert "Traceback" not in out
    assert not (pytester.path / SET_UP).exists()  # no agent was set up, no case ran


@pytest.mark.parametrize("fixture", ["session runner", "agent per case"])
def test_a_conftest_agent_runs_in_the_format_llmeval_model_names(
    pytester: pytest.Pytester, fixture: str
) -> None:
    # the agents' own models (llama for the first, qwen for the others) are not read
    _setup(pytester, FIXTURES[fixture], _copies(2))
    result = pytester.runpytest(
        "--llmeval-run-dir=run", "-p", "no:cacheprovider", "--llmeval-model", QWEN
    )
    assert result.ret in (0, 1), result.stdout.str()[-2000:]
    assert {state for state, _ in _outcomes(pytester).values()} <= {"passed", "failed"}
    assert _formats(pytester) == {"qwen2_5"}


def test_a_conftest_agent_with_a_named_format_runs(pytester: pytest.Pytester) -> None:
    _setup(pytester, FIXTURES["agent per case"], _copies(2), AUTO.replace("auto", "llama3_2"))
    result = pytester.runpytest("--llmeval-run-dir=run", "-p", "no:cacheprovider")
    assert result.ret in (0, 1), result.stdout.str()[-2000:]
    assert {state for state, _ in _outcomes(pytester).values()} <= {"passed", "failed"}
    assert _formats(pytester) == {"llama3_2"}


def test_only_the_cases_a_conftest_agent_runs_need_the_model(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the plugin's runner runs the top folder's auto cases (its model is read); a folder's
    # own conftest agent runs that folder's: its auto manifest is the one refused
    monkeypatch.setenv("RUNNER_MODEL", QWEN)
    _setup(
        pytester,
        "_registered = pytest_llmeval_register_runners\n"
        "def pytest_llmeval_register_runners(registry):\n    _registered(registry)\n"
        "    registry.register('named', lambda settings: Named())\n"
        "@pytest.fixture(scope='session')\ndef named_runner():\n    return Named()\n",
        _rows(),
    )
    own = pytester.mkdir("own")
    (own / "conftest.py").write_text(
        "import pytest\nfrom pytest_llmeval.engine.agent import default_agent\n\n"
        "@pytest.fixture\ndef llmeval_agent(named_runner):\n"
        "    return default_agent(named_runner)\n"
    )
    write_jsonl(pytester, "own/data/rows.jsonl", _rows())
    (own / "auto.llmeval.yaml").write_text(AUTO)
    argv = ("--llmeval-run-dir=run", "-p", "no:cacheprovider", "--llmeval-runner=named")
    refused = pytester.runpytest(*argv)
    out = refused.stdout.str() + refused.stderr.str()
    assert refused.ret == pytest.ExitCode.USAGE_ERROR, out[-2000:]
    assert "name prompt_format in the manifest own/auto.llmeval.yaml" in out
    (own / "auto.llmeval.yaml").write_text(AUTO.replace("auto", "hermes"))
    result = pytester.runpytest(*argv)
    assert result.ret in (0, 1), result.stdout.str()[-2000:]
    by_file = {
        (r["file"], r["details"]["prompt_format"])
        for r in read_jsonl(pytester.path / "run" / "results.jsonl")
    }
    assert by_file == {("data/rows.jsonl", "qwen2_5"), ("own/data/rows.jsonl", "hermes")}


@pytest.mark.parametrize("outcome", ["skip", "raise"])
def test_a_broken_first_row_stays_an_error_when_its_fixture_fails(
    pytester: pytest.Pytester, outcome: str
) -> None:
    # a fixture that skips must not make the broken row read skipped
    bad = dict(_rows()[0], uuid="000-broken", tools=["{not json"])
    body = 'pytest.skip("no gpu here")' if outcome == "skip" else 'raise RuntimeError("down")'
    _setup(
        pytester,
        f'@pytest.fixture(scope="session")\ndef llmeval_runner():\n    {body}\n',
        [bad, *_rows()],
    )
    result = pytester.runpytest(
        "--llmeval-run-dir=run", "-p", "no:cacheprovider", "--llmeval-model", QWEN
    )
    assert result.ret not in (0, 5), result.stdout.str()[-2000:]
    state, error = _outcomes(pytester)["000-broken"]
    assert state == "error" and "rows.jsonl:1: tools[0]: not valid JSON" in error


def test_an_agent_wrapping_the_plugins_runner_runs_in_the_runners_format(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the model is the plugin runner's (read before any case); the user's wrapper naming
    # none is not "another model"
    monkeypatch.setenv("RUNNER_MODEL", QWEN)
    _setup(
        pytester,
        "class Wrapper:\n    def __init__(self, inner):\n        self.inner = inner\n"
        "    def fingerprint(self):\n        return {'type': 'wrapper'}\n"
        "    async def run(self, case, broker):\n"
        "        return await self.inner.run(case, broker)\n"
        "_registered = pytest_llmeval_register_runners\n"
        "def pytest_llmeval_register_runners(registry):\n    _registered(registry)\n"
        "    registry.register('named', lambda settings: Named())\n"
        "@pytest.fixture(scope='session')\ndef llmeval_agent(llmeval_runner):\n"
        "    return Wrapper(default_agent(llmeval_runner))\n",
        _rows(),
    )
    result = pytester.runpytest(
        "--llmeval-run-dir=run", "-p", "no:cacheprovider", "--llmeval-runner=named"
    )
    assert result.ret in (0, 1), result.stdout.str()[-2000:]
    results = read_jsonl(pytester.path / "run" / "results.jsonl")
    assert {r["outcome"] for r in results} <= {"passed", "failed"}
    assert {r["details"]["prompt_format"] for r in results} == {"qwen2_5"}


def test_a_first_case_skipped_by_a_mark_leaves_the_format_to_the_runner(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pytest skips it before its setup: its report (which reads its case) changes nothing
    # for the cases after it
    monkeypatch.setenv("RUNNER_MODEL", QWEN)
    _setup(
        pytester,
        "_registered = pytest_llmeval_register_runners\n"
        "def pytest_llmeval_register_runners(registry):\n    _registered(registry)\n"
        "    registry.register('named', lambda settings: Named())\n"
        "def pytest_collection_modifyitems(items):\n"
        '    items[0].add_marker(pytest.mark.skip(reason="flaky today"))\n',
        _copies(2),
    )
    result = pytester.runpytest(
        "--llmeval-run-dir=run", "-p", "no:cacheprovider", "--llmeval-runner=named"
    )
    assert result.ret in (0, 1), result.stdout.str()[-2000:]
    results = read_jsonl(pytester.path / "run" / "results.jsonl")
    assert sorted(r["outcome"] for r in results)[-1] == "skipped"
    ran = [r for r in results if r["outcome"] != "skipped"]
    assert len(ran) == 3 and {r["details"]["prompt_format"] for r in ran} == {"qwen2_5"}
