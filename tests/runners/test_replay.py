"""Cassettes: RecordingRunner, ReplayRunner, the repeat index, concurrent writers; echo."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.core.case_context import begin_case, case_scope, end_case
from pytest_llmeval.core.errors import CassetteMiss, ConfigError, RunnerError
from pytest_llmeval.core.fingerprint import fingerprint
from pytest_llmeval.core.models import Message, ToolCall, ToolSpec, Usage
from pytest_llmeval.runners.base import Completion, GenerateRequest, Loglik, LoglikRequest, Runner
from pytest_llmeval.runners.echo import EchoRunner
from pytest_llmeval.runners.replay import (
    CassetteStore,
    RecordingRunner,
    ReplayRunner,
    cassette_key,
    runner_slug,
)


class ScriptedRunner:
    """A fake live runner: answers "<label> #<n>" and counts its calls."""

    def __init__(self, name: str = "Scripted LLM", model: str = "m1", label: str = "live") -> None:
        self.name = name
        self.model = model
        self.label = label
        self.calls = 0
        self.closed = False

    def fingerprint(self) -> dict[str, Any]:
        return {"type": "scripted", "model": self.model, "temperature": 0.0}

    async def generate(self, request: GenerateRequest) -> Completion:
        self.calls += 1
        await asyncio.sleep(0)
        return Completion(
            text=f"{self.label} #{self.calls}",
            tool_calls=[ToolCall(id="c1", name="web.search", arguments={"q": "x"})],
            finish_reason="tool_calls",
            usage=Usage(prompt_tokens=3, completion_tokens=2, total_tokens=5),
            latency_ms=123.5 + self.calls,
        )

    async def aclose(self) -> None:
        self.closed = True


def make_request(text: str = "hello", **params: Any) -> GenerateRequest:
    return GenerateRequest(
        messages=[Message(role="system", content="be brief"), Message(role="user", content=text)],
        tools=[ToolSpec(name="web.search")],
        params=params,
    )


def generate(runner: Runner, *requests: GenerateRequest) -> list[Completion]:
    """Run requests one after another inside one case scope."""

    async def main() -> list[Completion]:
        with case_scope():
            return [await runner.generate(request) for request in requests]

    return asyncio.run(main())


def cassette_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.json") if p.name != "runner.json")


# ---------------------------------------------------------------- recording runner


def test_new_records_then_replays_without_calling_inner(tmp_path: Path) -> None:
    store = CassetteStore(tmp_path / "cassettes")
    live = ScriptedRunner()
    runner = RecordingRunner(live, store, mode="new")
    assert isinstance(runner, Runner)
    assert runner.name == live.name
    assert runner.fingerprint() == live.fingerprint()

    [first] = generate(runner, make_request())
    assert live.calls == 1
    [again] = generate(runner, make_request())
    assert live.calls == 1  # replayed
    assert again == first  # every field, latency_ms included

    folder = store.folder(live.name, live.fingerprint())
    assert folder.name == f"scripted-llm-{fingerprint(live.fingerprint())[:12]}"
    assert json.loads((folder / "runner.json").read_text()) == live.fingerprint()
    [path] = cassette_files(store.root)
    key = cassette_key(live.fingerprint(), make_request(), 0)
    assert path == folder / key[:2] / f"{key}.json"
    text = path.read_text(encoding="utf-8")
    assert text.endswith("}\n")
    assert text.startswith('{\n  "completion": {')  # pretty, sorted keys
    data = json.loads(text)
    assert data["key"] == key
    assert data["repeat"] == 0
    assert data["request"] == make_request().model_dump(mode="json", exclude_defaults=True)
    assert data["completion"]["latency_ms"] == first.latency_ms

    # mode none replays the recording too
    replayed = generate(RecordingRunner(ScriptedRunner(), store, mode="none"), make_request())
    assert replayed == [first]


def test_none_mode_miss_raises_with_hint(tmp_path: Path) -> None:
    store = CassetteStore(tmp_path / "cassettes")
    live = ScriptedRunner()
    runner = RecordingRunner(live, store, mode="none")
    with pytest.raises(CassetteMiss) as excinfo:
        generate(runner, make_request())
    message = str(excinfo.value)
    assert str(store.folder(live.name, live.fingerprint())) in message
    assert cassette_key(live.fingerprint(), make_request(), 0)[:12] in message
    assert "--llmeval-record new" in message
    assert excinfo.value.kind == "cassette"
    assert live.calls == 0
    assert not store.root.exists()


def test_all_mode_rerecords(tmp_path: Path) -> None:
    store = CassetteStore(tmp_path / "cassettes")
    generate(RecordingRunner(ScriptedRunner(label="old"), store, mode="new"), make_request())
    live = ScriptedRunner(label="new")
    [fresh] = generate(RecordingRunner(live, store, mode="all"), make_request())
    assert live.calls == 1
    assert fresh.text == "new #1"
    replayer = RecordingRunner(ScriptedRunner(), store, mode="none")
    assert generate(replayer, make_request())[0].text == "new #1"
    assert len(cassette_files(store.root)) == 1


def test_different_request_or_runner_is_a_different_cassette(tmp_path: Path) -> None:
    store = CassetteStore(tmp_path / "cassettes")
    generate(RecordingRunner(ScriptedRunner(), store, mode="new"), make_request())
    with pytest.raises(CassetteMiss):
        generate(RecordingRunner(ScriptedRunner(), store, mode="none"), make_request("other"))
    with pytest.raises(CassetteMiss):
        generate(RecordingRunner(ScriptedRunner(), store, mode="none"), make_request(seed=1))
    with pytest.raises(CassetteMiss):
        generate(RecordingRunner(ScriptedRunner(model="m2"), store, mode="none"), make_request())


def test_aclose_closes_inner(tmp_path: Path) -> None:
    live = ScriptedRunner()
    asyncio.run(RecordingRunner(live, CassetteStore(tmp_path), mode="new").aclose())
    assert live.closed


def test_bad_mode_and_corrupt_cassette(tmp_path: Path) -> None:
    store = CassetteStore(tmp_path / "cassettes")
    with pytest.raises(ConfigError, match="record mode"):
        RecordingRunner(ScriptedRunner(), store, mode="sometimes")  # type: ignore[arg-type]
    generate(RecordingRunner(ScriptedRunner(), store, mode="new"), make_request())
    [path] = cassette_files(store.root)
    path.write_text("<<<<<<< HEAD\n", encoding="utf-8")
    with pytest.raises(RunnerError, match="corrupt cassette") as excinfo:
        generate(RecordingRunner(ScriptedRunner(), store, mode="none"), make_request())
    assert str(path) in str(excinfo.value)


# ---------------------------------------------------------------- repeat index


def test_repeat_index_within_and_across_case_scopes(tmp_path: Path) -> None:
    store = CassetteStore(tmp_path / "cassettes")
    live = ScriptedRunner()
    recorder = RecordingRunner(live, store, mode="new")
    first, second = generate(recorder, make_request(), make_request())
    assert (first.text, second.text) == ("live #1", "live #2")
    assert len(cassette_files(store.root)) == 2
    repeats = sorted(json.loads(p.read_text())["repeat"] for p in cassette_files(store.root))
    assert repeats == [0, 1]

    # replay in order; a new case scope starts at 0 again
    replayer = RecordingRunner(ScriptedRunner(), store, mode="none")
    assert [c.text for c in generate(replayer, make_request(), make_request())] == [
        "live #1",
        "live #2",
    ]
    assert [c.text for c in generate(replayer, make_request())] == ["live #1"]
    # a third identical call in one case was never recorded
    with pytest.raises(CassetteMiss, match="repeat 2"):
        generate(replayer, make_request(), make_request(), make_request())


def test_repeat_index_is_zero_outside_a_case_scope(tmp_path: Path) -> None:
    store = CassetteStore(tmp_path / "cassettes")
    live = ScriptedRunner()
    recorder = RecordingRunner(live, store, mode="new")

    async def main() -> list[str]:
        return [(await recorder.generate(make_request())).text for _ in range(3)]

    assert asyncio.run(main()) == ["live #1", "live #1", "live #1"]
    assert live.calls == 1


def test_repeat_index_is_shared_by_tasks_of_one_case(tmp_path: Path) -> None:
    store = CassetteStore(tmp_path / "cassettes")
    recorder = RecordingRunner(ScriptedRunner(), store, mode="new")

    async def one_case() -> list[str]:
        token = begin_case()
        try:
            first = await asyncio.create_task(recorder.generate(make_request()))
            second = await asyncio.create_task(recorder.generate(make_request()))
            return [first.text, second.text]
        finally:
            end_case(token)

    async def two_cases_at_once() -> list[list[str]]:
        return list(await asyncio.gather(one_case(), one_case()))

    assert asyncio.run(one_case()) == ["live #1", "live #2"]
    # Concurrent cases each count from 0 in their own scope, so both replay the recording.
    assert asyncio.run(two_cases_at_once()) == [["live #1", "live #2"]] * 2


# ---------------------------------------------------------------- concurrent writers


def _record_in_process(root: str, texts: list[str]) -> None:
    store = CassetteStore(Path(root))
    runner = RecordingRunner(ScriptedRunner(), store, mode="all")
    for _ in range(5):
        generate(runner, *(make_request(text) for text in texts))


def _assert_clean(root: Path, expected: int) -> None:
    files = cassette_files(root)
    assert len(files) == expected
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        Completion.model_validate(data["completion"])
    assert [p for p in root.rglob("*") if p.is_file() and p.suffix != ".json"] == []
    assert [p for p in root.rglob(".*")] == []


def test_concurrent_threads_leave_only_valid_files(tmp_path: Path) -> None:
    root = tmp_path / "cassettes"
    workers = [
        threading.Thread(target=_record_in_process, args=(str(root), ["same", f"own {i}"]))
        for i in range(8)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    _assert_clean(root, expected=1 + 8)


def test_concurrent_processes_leave_only_valid_files(tmp_path: Path) -> None:
    root = tmp_path / "cassettes"
    context = multiprocessing.get_context("spawn")
    processes = [
        context.Process(target=_record_in_process, args=(str(root), ["same", f"own {i}"]))
        for i in range(4)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [p.exitcode for p in processes] == [0] * 4
    _assert_clean(root, expected=1 + 4)


# ---------------------------------------------------------------- replay runner


def record(store: CassetteStore, runner: ScriptedRunner, text: str = "hello") -> None:
    generate(RecordingRunner(runner, store, mode="new"), make_request(text))


def test_replay_runner_uses_the_only_folder(tmp_path: Path) -> None:
    store = CassetteStore(tmp_path / "cassettes")
    live = ScriptedRunner()
    record(store, live)
    replay = ReplayRunner(store)
    assert isinstance(replay, Runner)
    assert replay.name == "replay"
    assert replay.fingerprint() == live.fingerprint()
    assert replay.recorded_name == "scripted-llm"
    assert [c.text for c in generate(replay, make_request())] == ["live #1"]
    with pytest.raises(CassetteMiss, match="--llmeval-record new"):
        generate(replay, make_request("never recorded"))
    asyncio.run(replay.aclose())


def test_replay_runner_needs_select_with_two_folders(tmp_path: Path) -> None:
    store = CassetteStore(tmp_path / "cassettes")
    alpha, beta = ScriptedRunner("alpha", label="a"), ScriptedRunner("beta", "m2", label="b")
    record(store, alpha)
    record(store, beta)
    with pytest.raises(ConfigError) as excinfo:
        ReplayRunner(store)
    message = str(excinfo.value)
    assert "--llmeval-replay-from" in message
    for runner in (alpha, beta):
        assert store.folder(runner.name, runner.fingerprint()).name in message

    beta_folder = store.folder(beta.name, beta.fingerprint())
    for select in (beta_folder.name, "bet", "beta", str(beta_folder)):
        chosen = ReplayRunner(store, select=select)
        assert chosen.folder == beta_folder
        assert chosen.fingerprint() == beta.fingerprint()
        assert generate(chosen, make_request())[0].text == "b #1"
    with pytest.raises(ConfigError, match="matches none"):
        ReplayRunner(store, select="gamma")


def test_replay_runner_ambiguous_select(tmp_path: Path) -> None:
    store = CassetteStore(tmp_path / "cassettes")
    record(store, ScriptedRunner("same", "m1"))
    record(store, ScriptedRunner("same", "m2"))
    with pytest.raises(ConfigError, match="matches several") as excinfo:
        ReplayRunner(store, select="same")
    assert "--llmeval-replay-from" in str(excinfo.value)


def test_replay_runner_without_recordings(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no cassette folder") as excinfo:
        ReplayRunner(CassetteStore(tmp_path / "missing"))
    assert "--llmeval-record new" in str(excinfo.value)
    (tmp_path / "empty" / "stray").mkdir(parents=True)
    with pytest.raises(ConfigError, match="no recorded runner") as excinfo:
        ReplayRunner(CassetteStore(tmp_path / "empty"))
    assert "--llmeval-record new" in str(excinfo.value)


def test_runner_slug() -> None:
    assert runner_slug("OpenAI HTTP/gpt-4o_mini") == "openai-http-gpt-4o-mini"
    assert runner_slug("###") == "runner"


# ---------------------------------------------------------------- echo


def test_echo_runner() -> None:
    echo = EchoRunner()
    assert isinstance(echo, Runner)
    assert echo.name == "echo"
    assert echo.fingerprint() == {"type": "echo"}
    request = GenerateRequest(
        messages=[
            Message(role="system", content="you are  terse"),
            Message(role="user", content="first"),
            Message(role="assistant", content="ok"),
            Message(role="user", content="what is  RoPE ?"),
        ],
        tools=[ToolSpec(name="web.search")],
    )
    completion = asyncio.run(echo.generate(request))
    assert completion.text == "what is  RoPE ?"
    assert completion.tool_calls == []
    assert completion.finish_reason == "stop"
    assert completion.latency_ms == 0
    assert completion.usage == Usage(prompt_tokens=9, completion_tokens=4, total_tokens=13)
    empty = asyncio.run(echo.generate(GenerateRequest(messages=[])))
    assert (empty.text, empty.usage.total_tokens) == ("", 0)
    asyncio.run(echo.aclose())


class ScoringRunner:
    """A fake model that scores continuations by length, counting what it was asked."""

    name = "scorer"

    def __init__(self) -> None:
        self.asked: list[str] = []

    def fingerprint(self) -> dict[str, Any]:
        return {"type": "scorer"}

    async def generate(self, request: GenerateRequest) -> Completion:
        raise AssertionError("not used")

    async def loglikelihood(self, requests: list[LoglikRequest]) -> list[Loglik]:
        self.asked += [r.continuation for r in requests]
        return [
            Loglik(logprob_sum=-float(len(r.continuation)), token_count=len(r.continuation),
                   char_length=len(r.continuation), byte_length=len(r.continuation.encode()))
            for r in requests
        ]  # fmt: skip

    async def aclose(self) -> None:
        pass


def test_loglikelihoods_record_and_replay(tmp_path: Path) -> None:
    store = CassetteStore(tmp_path)
    requests = [LoglikRequest(context="Q: 2+2? A:", continuation=c) for c in (" 4", " five")]

    async def score(runner: Any) -> list[Loglik]:
        with case_scope():
            return list(await runner.loglikelihood(requests))

    live = ScoringRunner()
    first = asyncio.run(score(RecordingRunner(live, store, "new")))
    assert live.asked == [" 4", " five"]
    again = asyncio.run(score(RecordingRunner(live, store, "new")))
    assert again == first and live.asked == [" 4", " five"]  # replayed, not asked again
    assert asyncio.run(score(ReplayRunner(store))) == first
    with pytest.raises(CassetteMiss):
        asyncio.run(
            RecordingRunner(live, store, "none").loglikelihood(
                [LoglikRequest(context="x", continuation="y")]
            )
        )


# ---------------------------------------------------------------- keys, encoded once


def _keyed_requests() -> list[GenerateRequest]:
    doc = {
        "type": "object",
        "properties": {"q": {"type": "string", "description": 'Zürich, 東京, "quoted" \\ ok'}},
        "required": ["q"],
    }
    return [
        make_request(),
        make_request("non-ASCII: é 東京 \u2028 and a lone surrogate \ud800", max_tokens=5),
        GenerateRequest(
            messages=[Message(role="user", content="[#7]")],
            tools=[ToolSpec(name="a_b", description="d", parameters=doc, extra={"k": [1, 2.5]})],
            keep_message=True,
        ),
    ]


def test_request_keys_are_the_cassette_keys_byte_for_byte() -> None:
    """A request's id and keys, built around its canonical JSON encoded once, are the
    ``fingerprint`` of the dicts they always were: recorded cassettes still replay."""
    from pytest_llmeval.core.case_context import case_run
    from pytest_llmeval.runners.replay import RequestKeys, canonical_request

    runner_fp = {"type": "openai", "model": "gpt-é", "temperature": 0.0, "seed": None}
    for request in _keyed_requests():
        keys = RequestKeys(runner_fp, request)
        body = {"runner": runner_fp, "request": canonical_request(request)}
        assert keys.request_id() == fingerprint(body)
        for repeat in (0, 1, 12):
            assert keys.key(repeat) == fingerprint({**body, "repeat": repeat})
            assert keys.key(repeat) == cassette_key(runner_fp, request, repeat)
        with case_run("c", None, repeat=2):  # a case's third run (--llmeval-repeats)
            assert keys.key(1) == fingerprint({**body, "repeat": [2, 1]})


def test_replay_encodes_a_request_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Replaying a request dumps and encodes it once (its id and its key share that JSON):
    a BFCL request carries its function docs, and each encoding of them is paid per case."""
    from pytest_llmeval.runners import replay

    store = CassetteStore(tmp_path / "cassettes")
    requests = _keyed_requests()
    recorded = generate(RecordingRunner(ScriptedRunner(), store, mode="new"), *requests)
    dumps: list[GenerateRequest] = []
    real = replay.canonical_request

    def counted(request: GenerateRequest) -> dict[str, Any]:
        dumps.append(request)
        return real(request)

    monkeypatch.setattr(replay, "canonical_request", counted)
    assert generate(ReplayRunner(store), *requests) == recorded
    assert len(dumps) == len(requests)
