"""The ``hf`` runner on a tiny random Llama built in the session (no download, CPU).

Everything here needs the ``hf`` extra; without torch and transformers the module is skipped.
The model is random, so its text is gibberish: the tests check determinism, shapes, batching
equivalence and log-likelihoods against a plain torch computation, and tool-call handling
through a scripted decode.
"""

from __future__ import annotations

import asyncio
import json
import math
import shutil
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pytest_llmeval.core.errors import ConfigError, RunnerError
from pytest_llmeval.core.fingerprint import fingerprint
from pytest_llmeval.core.models import Message, ToolCall, ToolSpec
from pytest_llmeval.runners.base import (
    Completion,
    GenerateRequest,
    Loglik,
    LoglikRequest,
    Runner,
)
from pytest_llmeval.runners.hf_local import (
    HFRunner,
    model_files_sha256,
    tokenizer_files_sha256,
)
from pytest_llmeval.testing.tiny import build_tiny_model
from tests.conftest import read_jsonl, write_json
from tests.runners.serve import transformers_serve, weather_tool

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.hf

T = TypeVar("T")
MAX_NEW = 12

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)
SEARCH = ToolSpec(name="web.search", description="Search the web")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def user(text: str, tools: list[ToolSpec] | None = None, **params: Any) -> GenerateRequest:
    return GenerateRequest(
        messages=[Message(role="user", content=text)], tools=tools or [], params=params
    )


def same(a: Completion, b: Completion) -> bool:
    """Equal apart from the wall-clock latency."""
    return a.model_dump(exclude={"latency_ms"}) == b.model_dump(exclude={"latency_ms"})


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "seed0", seed=0)


@pytest.fixture(scope="session")
def runner(tiny_dir: Path) -> HFRunner:
    return HFRunner(tiny_dir, device="cpu", dtype="auto", max_new_tokens=MAX_NEW, seed=0)


@pytest.fixture(scope="session")
def reference_model(tiny_dir: Path) -> Any:
    """The same checkpoint loaded with plain transformers, for reference computations."""
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_dir, local_files_only=True)
    return model.eval()


# -- loading and fingerprints -------------------------------------------------------------------


def test_is_a_runner_on_cpu_float32(runner: HFRunner) -> None:
    assert isinstance(runner, Runner)
    assert runner.name == "hf"
    assert (runner.device, runner.dtype) == ("cpu", "float32")
    params = sum(p.numel() for p in runner.model.parameters())
    assert 10_000 < params < 100_000


def test_fingerprint_has_no_machine_path(runner: HFRunner, tiny_dir: Path) -> None:
    fp = runner.fingerprint()
    assert fp == {
        "type": "hf",
        "model_sha256": model_files_sha256(tiny_dir),
        "tokenizer_sha256": tokenizer_files_sha256(tiny_dir),
        "dtype": "float32",
        "device": "cpu",
        "decoding": {"do_sample": False, "max_new_tokens": MAX_NEW, "seed": 0},
    }
    text = json.dumps(fp)
    assert str(tiny_dir) not in text
    assert tiny_dir.name not in text


def test_same_seed_same_fingerprint_other_seed_other_model(
    tmp_path: Path, tiny_dir: Path, runner: HFRunner
) -> None:
    again = build_tiny_model(tmp_path / "again", seed=0)
    other = build_tiny_model(tmp_path / "other", seed=1)
    for name in sorted(p.name for p in tiny_dir.iterdir()):
        assert (again / name).read_bytes() == (tiny_dir / name).read_bytes(), name
    assert HFRunner(again, device="cpu", max_new_tokens=MAX_NEW).fingerprint() == (
        runner.fingerprint()
    )
    assert model_files_sha256(other) != model_files_sha256(tiny_dir)
    assert tokenizer_files_sha256(other) == tokenizer_files_sha256(tiny_dir)
    changed = HFRunner(other, device="cpu", max_new_tokens=MAX_NEW + 1).fingerprint()
    assert changed["model_sha256"] != runner.fingerprint()["model_sha256"]
    assert changed["decoding"]["max_new_tokens"] == MAX_NEW + 1


def test_chat_template_change_changes_the_tokenizer_fingerprint(
    tmp_path: Path, tiny_dir: Path
) -> None:
    copy = Path(shutil.copytree(tiny_dir, tmp_path / "copy"))
    assert tokenizer_files_sha256(copy) == tokenizer_files_sha256(tiny_dir)
    template = copy / "chat_template.jinja"
    template.write_text(template.read_text(encoding="utf-8") + " ", encoding="utf-8")
    assert tokenizer_files_sha256(copy) != tokenizer_files_sha256(tiny_dir)
    assert model_files_sha256(copy) == model_files_sha256(tiny_dir)


def test_bad_model_and_device_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="neither a local checkpoint folder nor"):
        HFRunner(tmp_path / "missing")
    with pytest.raises(ConfigError, match="--llmeval-dtype"):
        HFRunner(tmp_path, dtype="float64")
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="no CUDA device"):
            HFRunner(tmp_path, device="cuda")


def test_missing_extra_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_llmeval.runners import hf_local

    monkeypatch.setitem(__import__("sys").modules, "transformers", None)
    with pytest.raises(ConfigError) as info:
        hf_local._require()
    assert "pip install 'pytest-llmeval-harness[hf]'" in str(info.value)
    assert "install torch first" in str(info.value)


# -- generation -------------------------------------------------------------------------------


def test_generation_is_deterministic_with_sane_usage(runner: HFRunner) -> None:
    request = user("What is the weather in Paris?")
    first = run(runner.generate(request))
    second = run(runner.generate(request))
    assert same(first, second)
    prompt = runner.render(request)
    assert prompt.startswith("<|startoftext|><|im_start|>user\nWhat is the weather in Paris?")
    assert prompt.endswith("<|im_start|>assistant\n")
    assert first.usage.prompt_tokens == len(runner._encode(prompt))
    assert 1 <= first.usage.completion_tokens <= MAX_NEW
    assert first.usage.total_tokens == first.usage.prompt_tokens + first.usage.completion_tokens
    assert first.finish_reason in ("stop", "length", "tool_calls")
    assert first.text or first.tool_calls


def test_tools_are_rendered_by_the_chat_template(runner: HFRunner) -> None:
    plain = user("What is the weather in Paris?")
    with_tools = user("What is the weather in Paris?", tools=[WEATHER, SEARCH])
    prompt = runner.render(with_tools)
    assert "<tools>" in prompt
    assert '"name": "get_weather"' in prompt
    assert '"name": "web.search"' in prompt
    assert "<tools>" not in runner.render(plain)
    a, b = run(runner.generate(with_tools)), run(runner.generate(with_tools))
    assert same(a, b)
    assert a.usage.prompt_tokens > run(runner.generate(plain)).usage.prompt_tokens


def test_multi_turn_with_tool_results_renders_through_the_template(runner: HFRunner) -> None:
    request = GenerateRequest(
        messages=[
            Message(role="system", content="You are a weather bot."),
            Message(role="user", content="What is the weather in Paris?"),
            Message(
                role="assistant",
                content=None,
                tool_calls=[ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})],
            ),
            Message(
                role="tool",
                tool_call_id="c1",
                name="get_weather",
                content='{"conditions": "cloudy", "temp_c": 18}',
            ),
        ],
        tools=[WEATHER],
    )
    prompt = runner.render(request)
    assert prompt.index("You are a weather bot.") < prompt.index("<tools>")
    assert (
        '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", '
        '"arguments": {"city": "Paris"}}\n</tool_call><|im_end|>'
    ) in prompt
    assert (
        '<|im_start|>tool\n<tool_response>\n{"conditions": "cloudy", "temp_c": 18}\n'
        "</tool_response><|im_end|>\n<|im_start|>assistant\n"
    ) in prompt
    completion = run(runner.generate(request))
    assert same(completion, run(runner.generate(request)))


def test_tool_calls_are_parsed_from_the_decoded_text(
    runner: HFRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The random model never writes a tool call, so the decode is scripted."""
    scripted = iter(
        [
            'Checking. <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}'
            '</tool_call><tool_call>{"name": "web.search", "arguments": {"q": "x"}}</tool_call>',
            '[get_weather(city="Paris")]',
            '<tool_call>{"name": "get_weather", "arguments": {"city": </tool_call>',
        ]
    )
    monkeypatch.setattr(runner.tokenizer, "decode", lambda ids, **kw: next(scripted))
    tagged = run(runner.generate(user("weather?", tools=[WEATHER, SEARCH])))
    assert tagged.text == "Checking."
    assert tagged.tool_calls == [
        ToolCall(name="get_weather", arguments={"city": "Paris"}),
        ToolCall(name="web.search", arguments={"q": "x"}),
    ]
    assert tagged.finish_reason == "tool_calls"
    pythonic = run(runner.generate(user("weather?", tools=[WEATHER])))
    assert (pythonic.text, pythonic.tool_calls) == (
        "",
        [ToolCall(name="get_weather", arguments={"city": "Paris"})],
    )
    broken = run(runner.generate(user("weather?", tools=[WEATHER])))
    assert broken.tool_calls == [
        ToolCall(
            name="get_weather", arguments_error='{"name": "get_weather", "arguments": {"city":'
        )
    ]


def test_batched_generation_equals_one_at_a_time(runner: HFRunner) -> None:
    requests = [
        user("hello"),
        user("What is the weather in Paris today? Please answer in one short sentence."),
        user("What is 17 * 23?", tools=[WEATHER]),
        user("Search the web for rope precision", tools=[WEATHER, SEARCH]),
        user("The quick brown fox", max_tokens=3),
        user("Paris is the capital of", max_tokens=7),
    ]
    one_by_one = [run(runner.generate(r)) for r in requests]

    async def together() -> list[Completion]:
        return list(await asyncio.gather(*(runner.generate(r) for r in requests)))

    before = len(runner.batch_sizes["generate"])
    batched = run(together())
    assert runner.batch_sizes["generate"][before:] == [len(requests)]
    for single, batch in zip(one_by_one, batched, strict=True):
        assert same(single, batch), (single, batch)
    assert one_by_one[4].usage.completion_tokens <= 3
    assert one_by_one[5].usage.completion_tokens <= 7
    assert len({c.usage.prompt_tokens for c in one_by_one}) > 1  # really left-padded


def test_batches_are_capped_and_a_bad_request_fails_alone(tiny_dir: Path, tmp_path: Path) -> None:
    small = HFRunner(tiny_dir, device="cpu", max_new_tokens=4, max_batch_size=2)
    requests = [user(f"hello {i}") for i in range(5)]

    async def together() -> list[Completion | BaseException]:
        return list(
            await asyncio.gather(*(small.generate(r) for r in requests), return_exceptions=True)
        )

    results = run(together())
    assert all(isinstance(r, Completion) for r in results)
    assert small.batch_sizes["generate"] == [2, 2, 1]

    # A tokenizer without a chat template: generation is a RunnerError, scoring still works.
    bare = Path(shutil.copytree(tiny_dir, tmp_path / "bare"))
    (bare / "chat_template.jinja").unlink()
    base = HFRunner(bare, device="cpu", max_new_tokens=4)
    with pytest.raises(RunnerError, match="no chat template"):
        run(base.generate(user("hello")))
    scored = run(base.loglikelihood([LoglikRequest(context="a", continuation=" b")]))
    assert scored[0].token_count >= 1
    run(base.aclose())
    run(small.aclose())


# -- log-likelihood -----------------------------------------------------------------------------


LOGLIK_REQUESTS = [
    LoglikRequest(context="What is the weather in Paris?", continuation=" It is cloudy."),
    LoglikRequest(context="17 * 23 =", continuation=" 391"),
    LoglikRequest(context="The answer is", continuation=" yes"),
    LoglikRequest(context="The answer is", continuation=" no"),
    LoglikRequest(context="Paris is the capital of", continuation=" France. Café ☕ é"),
    LoglikRequest(context="hello", continuation="!"),
]


def reference(model: Any, tokenizer: Any, request: LoglikRequest) -> tuple[float, int, bool]:
    """Plain torch: forward pass over context+continuation ids, log_softmax, gather; the ids
    as lm-eval 0.4.13 makes them (trailing whitespace moved, whole encoded then split)."""
    context_text, continuation_text = request.context, request.continuation
    spaces = len(context_text) - len(context_text.rstrip())
    if spaces:
        context_text, continuation_text = (
            context_text[:-spaces],
            context_text[-spaces:] + continuation_text,
        )
    context = tokenizer(context_text)["input_ids"]
    continuation = tokenizer(context_text + continuation_text)["input_ids"][len(context) :]
    ids = torch.tensor([context + continuation])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()
    logprobs = torch.log_softmax(logits, dim=-1)
    n = len(continuation)
    positions = torch.arange(len(context) - 1, len(context) + n - 1)
    targets = torch.tensor(continuation)
    picked = logprobs[positions, targets]
    greedy = bool((logprobs[positions].argmax(-1) == targets).all())
    return float(picked.sum()), n, greedy


def check(result: Loglik, request: LoglikRequest, expected: tuple[float, int, bool]) -> None:
    total, n, greedy = expected
    assert math.isclose(result.logprob_sum, total, abs_tol=1e-5), (result, expected)
    assert result.token_count == n
    assert result.is_greedy is greedy
    assert result.char_length == len(request.continuation)
    assert result.byte_length == len(request.continuation.encode("utf-8"))


def test_loglikelihood_equals_plain_torch_batched_and_unbatched(
    runner: HFRunner, reference_model: Any
) -> None:
    expected = [reference(reference_model, runner.tokenizer, r) for r in LOGLIK_REQUESTS]
    assert LOGLIK_REQUESTS[4].continuation.encode("utf-8") != LOGLIK_REQUESTS[4].continuation
    one_by_one = [run(runner.loglikelihood([r]))[0] for r in LOGLIK_REQUESTS]
    before = len(runner.batch_sizes["loglikelihood"])
    batched = run(runner.loglikelihood(LOGLIK_REQUESTS))
    # one queue item per context: the two options of "The answer is" share theirs
    contexts = {r.context for r in LOGLIK_REQUESTS}
    assert runner.batch_sizes["loglikelihood"][before:] == [len(contexts)]
    for request, single, batch, exp in zip(
        LOGLIK_REQUESTS, one_by_one, batched, expected, strict=True
    ):
        check(single, request, exp)
        check(batch, request, exp)
    assert all(r.logprob_sum < 0 for r in batched)


def test_loglikelihood_greedy_continuation_and_token_boundary(
    runner: HFRunner, reference_model: Any
) -> None:
    # The model's own greedy continuation is greedy by construction.
    context = "What is the weather in Paris?"
    ids = runner._encode(context)
    with torch.no_grad():
        out = reference_model.generate(
            input_ids=torch.tensor([ids]),
            attention_mask=torch.ones(1, len(ids), dtype=torch.long),
            max_new_tokens=3,
            do_sample=False,
            pad_token_id=runner.tokenizer.pad_token_id,
        )
    greedy_text = runner.tokenizer.decode(out[0, len(ids) :].tolist())
    (result,) = run(runner.loglikelihood([LoglikRequest(context=context, continuation="")]))
    assert (result.logprob_sum, result.token_count, result.is_greedy) == (0.0, 0, True)
    (greedy,) = run(
        runner.loglikelihood([LoglikRequest(context=context, continuation=greedy_text)])
    )
    if runner._encode(greedy_text) == out[0, len(ids) :].tolist():  # re-encodes the same
        assert greedy.is_greedy is True
    # Trailing whitespace of the context moves to the continuation (lm-eval-harness).
    moved = LoglikRequest(context="The answer is ", continuation="yes")
    (a,) = run(runner.loglikelihood([moved]))
    exp = reference(
        reference_model,
        runner.tokenizer,
        LoglikRequest(context="The answer is", continuation=" yes"),
    )
    assert math.isclose(a.logprob_sum, exp[0], abs_tol=1e-5)
    assert (a.token_count, a.char_length) == (exp[1], 3)
    # An empty context is the bos token.
    (b,) = run(runner.loglikelihood([LoglikRequest(context="", continuation="hello")]))
    bos = runner.tokenizer.bos_token
    exp = reference(
        reference_model, runner.tokenizer, LoglikRequest(context=bos, continuation="hello")
    )
    assert math.isclose(b.logprob_sum, exp[0], abs_tol=1e-5)


# -- through pytest -----------------------------------------------------------------------------


@pytest.mark.slow
def test_golden_file_runs_with_the_hf_runner(
    pytester: pytest.Pytester, tiny_dir: Path, runner: HFRunner
) -> None:
    pytester.makeini("[pytest]\n")
    write_json(
        pytester,
        "cases.golden.json",
        [
            {"id": "greet", "input": "hello", "expected_output": "Hello there!"},
            {"id": "math", "input": "What is 17 * 23?", "expected_output": "391"},
            {
                "id": "weather",
                "input": "What is the weather in Paris?",
                "keywords": ["cloudy"],
                "min_scores": {"contains_keywords": 1.0},
            },
        ],
    )
    weather_tool(pytester)
    result = pytester.runpytest_subprocess(
        "--llmeval-runner",
        "hf",
        f"--llmeval-model={tiny_dir}",  # spaced, a folder elsewhere moves pytest's rootdir
        "--llmeval-device",
        "cpu",
        "--llmeval-max-tokens",
        "6",
        "--llmeval-tool-registry=tools.json",
        "--llmeval-run-dir",
        "run",
        "-p",
        "no:cacheprovider",
        timeout=120,
    )
    assert result.ret in (0, 1), result.stdout.str() + result.stderr.str()
    rows = read_jsonl(pytester.path / "run" / "results.jsonl")
    assert [r["case_id"] for r in rows] == ["greet", "math", "weather"]
    assert {r["outcome"] for r in rows} <= {"passed", "failed"}
    expected = runner.fingerprint()
    expected["decoding"]["max_new_tokens"] = 6
    assert {r["runner_fingerprint"] for r in rows} == {fingerprint(expected)}
    assert all(r["usage"]["completion_tokens"] >= 1 for r in rows)
    report = json.loads((pytester.path / "run" / "report.json").read_text(encoding="utf-8"))
    assert report["runners"] == {fingerprint(expected): expected}


# -- parity with transformers serve + the openai runner -----------------------------------------


@pytest.mark.slow
def test_openai_runner_on_transformers_serve_equals_the_hf_runner(
    tiny_dir: Path, runner: HFRunner, tmp_path: Path
) -> None:
    """The same checkpoint, greedy, through ``transformers serve`` and the openai runner,
    answers exactly what the hf runner answers in process."""
    from pytest_llmeval.runners.openai_http import OpenAIRunner

    requests = [
        user("What is the weather in Paris?"),
        user("hello"),
        user("What is 17 * 23?", tools=[WEATHER, SEARCH]),
    ]
    local = [run(runner.generate(r)) for r in requests]
    with transformers_serve(tiny_dir, tmp_path / "serve.log") as base_url:

        async def remote() -> list[Completion]:
            client = OpenAIRunner(
                str(tiny_dir), base_url, temperature=0.0, max_tokens=MAX_NEW, seed=0
            )
            try:
                return [await client.generate(r) for r in requests]
            finally:
                await client.aclose()

        served = run(remote())
    for mine, theirs in zip(local, served, strict=True):
        assert (theirs.text, theirs.tool_calls) == (mine.text, mine.tool_calls)
        assert theirs.usage.prompt_tokens == mine.usage.prompt_tokens
        assert theirs.usage.completion_tokens == mine.usage.completion_tokens
