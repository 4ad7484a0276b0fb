"""``prompt_format: auto`` from a conftest's agent fixture, attacked: a first case whose
fixtures fail, an agent per case, an xdist worker per model. None may end quieter than the
same run without ``auto`` would (a broken row stays an error), nor mix formats silently."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import read_jsonl, write_jsonl
from tests.suites.test_when2call import SCORER_CONFTEST
from tests.suites.test_when2call_auto_runner import AUTO, NAMED
from tests.suites.test_when2call_routing import _rows

LLAMA = "meta-llama/Llama-3.2-1B-Instruct"
QWEN = "Qwen/Qwen2.5-7B-Instruct"


def _setup(pytester: pytest.Pytester, fixture: str, rows: list[dict[str, Any]]) -> None:
    pytester.makeini("[pytest]\n")
    head = "\nimport pytest\nfrom pytest_llmeval.engine.agent import default_agent\n"
    pytester.makeconftest(SCORER_CONFTEST + NAMED + head + fixture)
    write_jsonl(pytester, "data/rows.jsonl", rows)
    (pytester.path / "auto.llmeval.yaml").write_text(AUTO)


def _outcomes(pytester: pytest.Pytester) -> dict[str, tuple[str, str]]:
    return {
        r["case_id"]: (r["outcome"], r.get("error") or "")
        for r in read_jsonl(pytester.path / "run" / "results.jsonl")
    }


def _copies(n: int) -> list[dict[str, Any]]:
    return [dict(row, uuid=f"{row['uuid']}-{i}") for i in range(n) for row in _rows()]


@pytest.mark.parametrize("outcome", ["skip", "raise"])
def test_a_broken_first_row_stays_an_error_when_its_fixture_fails(
    pytester: pytest.Pytester, outcome: str
) -> None:
    # the first case's fixtures are set up before its case is built (its agent names the
    # model): a fixture that skips must not make the broken row read skipped
    bad = dict(_rows()[0], uuid="000-broken", tools=["{not json"])
    body = 'pytest.skip("no gpu here")' if outcome == "skip" else 'raise RuntimeError("down")'
    _setup(
        pytester,
        f'@pytest.fixture(scope="session")\ndef llmeval_runner():\n    {body}\n',
        [bad, *_rows()],
    )
    result = pytester.runpytest("--llmeval-run-dir=run", "-p", "no:cacheprovider")
    assert result.ret not in (0, 5), result.stdout.str()[-2000:]
    state, error = _outcomes(pytester)["000-broken"]
    assert state == "error" and "rows.jsonl:1: tools[0]: not valid JSON" in error


def test_a_first_case_whose_fixture_fails_once_leaves_the_model_to_the_next(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUNNER_MODEL", QWEN)
    _setup(
        pytester,
        "N = [0]\n@pytest.fixture\ndef llmeval_agent():\n    N[0] += 1\n"
        '    if N[0] == 1:\n        raise RuntimeError("flaky")\n'
        "    return default_agent(Named())\n",
        _copies(2),
    )
    result = pytester.runpytest("--llmeval-run-dir=run", "-p", "no:cacheprovider")
    assert result.ret == 1, result.stdout.str()[-2000:]
    formats = {
        r["details"]["prompt_format"]
        for r in read_jsonl(pytester.path / "run" / "results.jsonl")
        if r["outcome"] != "error"
    }
    assert formats == {"qwen2_5"}


def test_an_agent_per_case_naming_another_model_is_that_cases_error(
    pytester: pytest.Pytester,
) -> None:
    # a function-scoped agent: the first names llama (the format of every case), the others
    # qwen; their cases were built in a format their model did not pick
    _setup(
        pytester,
        "N = [0]\n@pytest.fixture\ndef llmeval_agent():\n    N[0] += 1\n"
        f"    os.environ['RUNNER_MODEL'] = {LLAMA!r} if N[0] == 1 else {QWEN!r}\n"
        "    return default_agent(Named())\n",
        _copies(2),
    )
    result = pytester.runpytest("--llmeval-run-dir=run", "-p", "no:cacheprovider")
    assert result.ret == 1, result.stdout.str()[-2000:]
    outcomes = _outcomes(pytester)
    first = min(outcomes)
    assert outcomes[first][0] != "error"
    others = [v for k, v in outcomes.items() if k != first]
    assert others and all(state == "error" for state, _ in others)
    assert all(f"its own agent names {QWEN!r}" in error for _, error in others)


def test_xdist_workers_whose_agents_name_different_models_stop_the_run(
    pytester: pytest.Pytester,
) -> None:
    pytest.importorskip("xdist")
    _setup(
        pytester,
        '@pytest.fixture(scope="session")\ndef llmeval_runner():\n'
        "    first = os.environ.get('PYTEST_XDIST_WORKER', 'gw0') == 'gw0'\n"
        f"    os.environ['RUNNER_MODEL'] = {LLAMA!r} if first else {QWEN!r}\n"
        "    return Named()\n",
        _copies(4),
    )
    result = pytester.runpytest_subprocess(
        "--llmeval-run-dir=run", "-p", "no:cacheprovider", "-n", "2"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    result.stdout.fnmatch_lines(["*the xdist workers' agents name different models*"])


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


def test_a_first_case_skipped_by_a_mark_leaves_the_model_to_the_next(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pytest skips it before its setup: its report (which reads its case) must not settle
    # the model as "none" for the cases after it, nor stop a run that is no resume
    monkeypatch.setenv("RUNNER_MODEL", QWEN)
    _setup(
        pytester,
        '@pytest.fixture(scope="session")\ndef llmeval_runner():\n    return Named()\n'
        "def pytest_collection_modifyitems(items):\n"
        '    items[0].add_marker(pytest.mark.skip(reason="flaky today"))\n',
        _copies(2),
    )
    result = pytester.runpytest("--llmeval-run-dir=run", "-p", "no:cacheprovider")
    assert result.ret in (0, 1), result.stdout.str()[-2000:]
    results = read_jsonl(pytester.path / "run" / "results.jsonl")
    assert sorted(r["outcome"] for r in results)[-1] == "skipped"
    ran = [r for r in results if r["outcome"] != "skipped"]
    assert len(ran) == 3 and {r["details"]["prompt_format"] for r in ran} == {"qwen2_5"}
