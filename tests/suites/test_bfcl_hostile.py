"""The bfcl suite under attack: hostile model output, a hostile data folder, fail-closed rules.

Each test drives one class of attack the way it reaches the suite, and requires that nothing
is run, nothing hangs or exhausts memory, and nothing passes that was not judged.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.scoring.bfcl import DecodeError, decode_prompt_python
from tests.suites.test_bfcl_suite import MT_DATA, _project, needs_official_backends


@pytest.mark.parametrize(
    "value",
    [
        "['a' * 10**7] * 10**7",  # shared references: writing it out would not end
        "[[0] * 10**6] * 10**6",
        " * ".join(["10**249999"] * 60),  # a product of huge ints: the multiplications hang
        "'%.999999999f' % 1.0",  # printf-style width builds a gigabyte string
        "'%*d' % (999999999, 1)",
        "[" + ", ".join(["[0] * 9999999"] * 50) + "]",  # many large results in one reply
    ],
)
def test_prompt_arithmetic_that_would_explode_is_a_decode_failure_at_once(value: str) -> None:
    started = time.monotonic()
    with pytest.raises(DecodeError, match=r"too (large|long) to evaluate"):
        decode_prompt_python(f"[f(x={value})]")
    assert time.monotonic() - started < 5


def _math_session() -> Any:
    """A fresh official MathAPI behind the safe executor (skips without bfcl-eval)."""
    backends = pytest.importorskip("pytest_llmeval.tools.bfcl_backends")
    from pytest_llmeval.tools.bfcl_execute import BackendSession

    try:
        instances = backends.new_instances(["MathAPI"], {}, long_context=False)
    except backends.BackendsMissing:
        pytest.skip("needs `pip install --no-deps bfcl-eval==2026.3.23`")
    return BackendSession(instances, label="m", entry_id="multi_turn_base_0")


@pytest.mark.parametrize(
    "call",
    [
        "power(base=10, exponent=1000000000000000000)",  # 10**(10**18): an endless C loop
        "logarithm(value=10, base=2, precision=1000000000)",  # mpmath at 10**9 digits
        "square_root(number=2, precision=1000000000)",  # decimal at 10**9 digits
        "multiply(a=0x" + "f" * 500_000 + ", b=0x" + "f" * 500_000 + ")",  # hex is not capped
    ],
)
def test_a_backend_call_that_would_compute_without_end_is_that_calls_error(call: str) -> None:
    session = _math_session()
    started = time.monotonic()
    [result] = session.execute([call])
    assert result.text.startswith("Error during execution: ")
    assert "not run" in result.text
    assert time.monotonic() - started < 5
    [fine] = session.execute(["power(base=2, exponent=10)", "add(a=1, b=2)"])[:1]
    assert fine.text == '{"result": 1024}'


def test_a_backend_result_that_cannot_be_written_is_that_calls_error_as_officially() -> None:
    """``power(base=10, exponent=5000)`` returns an int of 5,001 digits, past Python's limit
    for ``str``: the official executor formats inside its ``try``, so the call's result is
    ``Error during execution: Exceeds the limit ...``, never a crashed case."""
    session = _math_session()
    [result] = session.execute(["power(base=10, exponent=5000)"])
    assert result.text.startswith("Error during execution: Exceeds the limit (4300 digits)")


# -------------------------------------------------------------- multi-turn under stress

TRUTHFUL = """
import ast, json, os
from pathlib import Path

from pytest_llmeval.core.models import ToolCall, Usage
from pytest_llmeval.runners.base import Completion

DATA = Path(__file__).parent / "bfcl_data"
NAME = "BFCL_v4_multi_turn_base.json"


def _truths():
    answers = [json.loads(l) for l in (DATA / "possible_answer" / NAME).read_text().splitlines()]
    by_id = {a["id"]: a["ground_truth"] for a in answers}
    rows = [json.loads(l) for l in (DATA / NAME).read_text().splitlines()]
    return {r["question"][0][0]["content"]: (r["id"], by_id[r["id"]]) for r in rows}


def _call(text):
    node = ast.parse(text, mode="eval").body
    args = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
    return ToolCall(name=node.func.id, arguments=dict(reversed(list(args.items()))))


class Truthful:
    '''Each turn: the ground truth's calls in one reply (no server message: the reply is
    rebuilt), then text; logs the tool results it is sent; os._exit mid-item on request.'''

    name = "truthful"

    def fingerprint(self):
        return {"type": "truthful"}

    async def generate(self, request):
        users = [m for m in request.messages if m.role == "user"]
        item_id, truth = _truths()[users[0].content]
        usage = Usage(prompt_tokens=1, completion_tokens=1, total_tokens=2)
        if request.messages[-1].role != "tool":
            return Completion(tool_calls=[_call(c) for c in truth[len(users) - 1]], usage=usage)
        results = [m.content for m in request.messages if m.role == "tool"]
        with open(os.environ["LLMEVAL_TEST_LOG"], "a") as log:
            log.write(json.dumps([item_id, results]) + "\\n")
        kill = Path(os.environ.get("LLMEVAL_TEST_KILL") or "/nonexistent/none")
        if kill.name == item_id and not kill.exists():
            kill.write_text("killed once")
            os._exit(1)
        return Completion(text="done", usage=usage)

    async def aclose(self):
        return None


def pytest_llmeval_register_runners(registry):
    registry.register("truthful", lambda settings: Truthful())
"""

MT_IDS = ["multi_turn_base_2", "multi_turn_base_14"]
"""Items the truthful runner passes (no access token: the cassette redactor masks those)."""


def _truthful_project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    needs_official_backends()
    manifest = f"suite: bfcl\ndata: bfcl_data\ncategories: [multi_turn_base]\nids: {MT_IDS}\n"
    _project(pytester, {"m": manifest}, MT_DATA)
    pytester.makeconftest(TRUTHFUL)
    log = pytester.path / "tool_results.jsonl"
    monkeypatch.setenv("LLMEVAL_TEST_LOG", str(log))
    return log


def _outcomes(run: Path) -> dict[str, dict[str, Any]]:
    lines = (run / "results.jsonl").read_text("utf-8").splitlines()
    return {r["case_id"]: r for r in map(json.loads, lines)}


BASE = ("-p", "no:cacheprovider", "-p", "no:randomly", "--llmeval-runner", "truthful")


def test_a_worker_killed_mid_multi_turn_item_is_a_bfcl_error_and_resume_runs_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xdist")
    _truthful_project(pytester, monkeypatch)
    monkeypatch.setenv("LLMEVAL_TEST_KILL", str(pytester.path / "multi_turn_base_2"))
    result = pytester.runpytest(*BASE, "-n", "2", "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    run = pytester.path / "run"
    results = _outcomes(run)
    crashed = results["multi_turn_base_2"]
    assert crashed["outcome"] == "error" and "worker crashed" in crashed["error"]
    assert (crashed["suite"], crashed["category"]) == ("bfcl", "multi_turn_base")
    assert crashed["file"] == "bfcl_data"  # the other cases' file: one artifact, one group
    assert results["multi_turn_base_14"]["outcome"] == "passed"
    section = json.loads((run / "report.json").read_text())["suites"]
    assert set(section) == {"bfcl"}
    assert section["bfcl"]["categories"]["multi_turn_base"]["passed"] == 1
    assert section["bfcl"]["categories"]["multi_turn_base"]["errors"] == 1

    resumed = pytester.runpytest(*BASE, "--llmeval-resume", str(run))
    assert resumed.ret == pytest.ExitCode.OK
    assert {r["outcome"] for r in _outcomes(run).values()} == {"passed"}


def test_repeats_and_two_manifests_of_one_item_never_share_backend_state(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each run of an item sees exactly the tool results the first run saw (a shared file
    system would answer ``mkdir`` of an existing folder, or ``cd`` twice, differently)."""
    log = _truthful_project(pytester, monkeypatch)
    manifest = (pytester.path / "m.llmeval.yaml").read_text()
    (pytester.path / "again.llmeval.yaml").write_text(manifest)
    result = pytester.runpytest(*BASE, "--llmeval-repeats", "3", "--llmeval-run-dir", "run")
    assert result.ret == pytest.ExitCode.OK
    seen: dict[str, int] = {}
    for line in log.read_text().splitlines():
        seen[line] = seen.get(line, 0) + 1
    assert seen and set(seen.values()) == {6}  # 3 repeats x 2 manifests, each identical


def test_record_then_replay_gives_the_same_verdicts_and_a_miss_names_case_and_fix(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A runner that gives no server message has its reply rebuilt; replayed, the cassette
    gives the calls' arguments back in another order: the next request must still match."""
    _truthful_project(pytester, monkeypatch)
    recorded = pytester.runpytest(*BASE, "--llmeval-record", "new", "--llmeval-run-dir", "run")
    assert recorded.ret == pytest.ExitCode.OK
    replayed = pytester.runpytest(
        "-p", "no:cacheprovider", "--llmeval-runner", "replay", "--llmeval-run-dir", "again"
    )
    assert replayed.ret == pytest.ExitCode.OK, replayed.stdout.str()
    verdicts = {k: r["outcome"] for k, r in _outcomes(pytester.path / "run").items()}
    assert verdicts == {k: r["outcome"] for k, r in _outcomes(pytester.path / "again").items()}

    path = pytester.path / "bfcl_data" / "BFCL_v4_multi_turn_base.json"
    path.write_text(path.read_text("utf-8").replace("TeamNotes.txt", "Notes.txt"))
    missed = pytester.runpytest(
        "-p", "no:cacheprovider", "--llmeval-runner", "replay", "--llmeval-run-dir", "miss"
    )
    assert missed.ret == pytest.ExitCode.TESTS_FAILED
    missed.stdout.fnmatch_lines(
        ["bfcl_data/BFCL_v4_multi_turn_base.json:2: cassette error: replay: no cassette for "
         "this request*record it with: pytest*--llmeval-runner truthful --llmeval-record new",
         "ERROR m.llmeval.yaml::multi_turn_base_2 - *"]
    )  # fmt: skip
