"""When2Call mcq-loglik end to end on a real tiny transformers model, checked against torch.

The 300-row file runs through ``pytest`` with ``--llmeval-runner hf``; every option's
log-likelihood in ``results.jsonl`` must equal a direct computation (one full forward pass per
(context, option) pair, no cache, lm-eval 0.4.13's tokenization and left truncation) to 1e-4.
The model reads at most 2,048 tokens, so about half the questions are cut by truncation and
the rest take the shared-context path. The same rows also go through the ``openai`` runner
against a loopback server whose ``/v1/completions`` is that model.
"""

from __future__ import annotations

import json
import math
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.suites.when2call_metrics import LABELS
from pytest_llmeval.suites.when2call_prompts import build_prompt, tool_call_option
from pytest_llmeval.testing.openai_server import CompletionAnswer, OpenAIServer, Token
from pytest_llmeval.testing.tiny import build_tiny_model
from tests.conftest import W2C_FILE, read_jsonl

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = [pytest.mark.hf, pytest.mark.slow]

MAX_POSITIONS = 2048


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(
        tmp_path_factory.mktemp("w2c") / "tiny",
        vocab_size=400,
        hidden=32,
        layers=2,
        heads=4,
        max_positions=MAX_POSITIONS,
        init_range=0.02,
    )


@pytest.fixture(scope="module")
def loaded(model_dir: Path) -> tuple[Any, Any]:
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir).eval()
    return model, tokenizer


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in W2C_FILE.read_text(encoding="utf-8").splitlines()]


def _pairs(row: dict[str, Any]) -> tuple[str, list[str]]:
    parsed = [json.loads(t) for t in row["tools"]]
    prompt = build_prompt("default", row["question"], row["tools"], parsed)
    answers = dict(row["answers"])
    call = answers["tool_call"]
    answers["tool_call"] = tool_call_option("default", call, json.loads(call))
    return prompt, [answers[label] for label in LABELS]


def direct_loglik(model: Any, tokenizer: Any, context: str, continuation: str) -> tuple[float, int]:
    """One full forward pass, no cache: lm-eval's encoding and left truncation, by hand."""
    spaces = len(context) - len(context.rstrip())
    if spaces:
        context, continuation = context[:-spaces], context[-spaces:] + continuation
    context_ids = tokenizer(context, verbose=False)["input_ids"]
    whole = tokenizer(context + continuation, verbose=False)["input_ids"]
    cont = whole[len(context_ids) :]
    joined = (context_ids + cont)[-(MAX_POSITIONS + 1) :]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([joined[:-1]])).logits[0].float()
    logprobs = torch.log_softmax(logits, dim=-1)[-len(cont) :]
    picked = logprobs.gather(-1, torch.tensor(cont)[:, None]).double().sum()
    return float(picked), len(context_ids) + len(cont) - len(joined)


def test_300_rows_under_mcq_loglik_equal_a_direct_torch_computation(
    pytester: pytest.Pytester, model_dir: Path, loaded: tuple[Any, Any]
) -> None:
    rows = _rows()
    pytester.makeini("[pytest]\n")
    shutil.copy(W2C_FILE, pytester.path / "when2call_test_llm_judge.jsonl")
    (pytester.path / "w2c.llmeval.yaml").write_text(
        "suite: when2call\ndata: when2call_test_llm_judge.jsonl\n", encoding="utf-8"
    )
    result = pytester.runpytest_subprocess(
        # one argument: pytest would take a separate existing path into its rootdir
        "--llmeval-runner", "hf", f"--llmeval-model={model_dir}", "--llmeval-run-dir", "run",
        "-p", "no:cacheprovider",
    )  # fmt: skip
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 300, result.stdout.str()
    run_dir = pytester.path / "run"
    results = {r["case_id"]: r["details"] for r in read_jsonl(run_dir / "results.jsonl")}
    model, tokenizer = loaded
    worst, cut_cases, shared_cases = 0.0, 0, 0
    hits = {"acc": 0, "acc_norm": 0}
    for row in rows:
        details = results[row["uuid"]]
        context, options = _pairs(row)
        expected = [direct_loglik(model, tokenizer, context, option) for option in options]
        for got, (value, _) in zip(details["loglik"], expected, strict=True):
            worst = max(worst, abs(got - value))
        assert details["truncated"] == [cut for _, cut in expected]
        if any(details["truncated"]):
            cut_cases += 1
        else:
            shared_cases += 1
        lls = [value for value, _ in expected]
        acc = max(range(4), key=lambda i: (lls[i], -i))
        norm = max(range(4), key=lambda i: (lls[i] / len(options[i]), -i))
        assert details["pred_acc"] == LABELS[acc] and details["pred_acc_norm"] == LABELS[norm]
        hits["acc"] += LABELS[acc] == row["correct_answer"]
        hits["acc_norm"] += LABELS[norm] == row["correct_answer"]
    assert worst <= 1e-4, worst
    assert cut_cases > 20 and shared_cases > 100, (cut_cases, shared_cases)
    body = json.loads((run_dir / "report.json").read_text())["suites"]["when2call"]
    assert body["acc"] == pytest.approx(hits["acc"] / 300, abs=1e-6)
    assert body["acc_norm"] == pytest.approx(hits["acc_norm"] / 300, abs=1e-6)


def model_completions(model: Any, tokenizer: Any) -> Any:
    """A ``/v1/completions`` brain that is the model: the echoed prompt's tokens with their
    log-probabilities (the first token has none), as an OpenAI-compatible server returns."""
    lock = threading.Lock()

    def brain(body: dict[str, Any]) -> CompletionAnswer:
        prompt = body["prompt"]
        encoded = tokenizer(prompt, return_offsets_mapping=True, verbose=False)
        ids, spans = encoded["input_ids"], encoded["offset_mapping"]
        with lock, torch.no_grad():
            logits = model(input_ids=torch.tensor([ids])).logits[0].float()
        logprobs = torch.log_softmax(logits, dim=-1)
        tokens = []
        for i, (start, _) in enumerate(spans):
            end = spans[i + 1][0] if i + 1 < len(spans) else len(prompt)
            value = None if i == 0 else float(logprobs[i - 1, ids[i]])
            tokens.append(Token(prompt[start:end], value))
        return CompletionAnswer(prompt_tokens=tokens)

    return brain


def test_the_openai_runner_scores_the_same_through_completions(
    pytester: pytest.Pytester, model_dir: Path, loaded: tuple[Any, Any]
) -> None:
    rows = [r for r in _rows() if len(r["tools"]) <= 1][:8]  # short prompts: no truncation
    pytester.makeini("[pytest]\n")
    (pytester.path / "when2call_short.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    model, tokenizer = loaded
    with OpenAIServer(completions=model_completions(model, tokenizer)) as server:
        result = pytester.runpytest(
            "--llmeval-runner", "openai", "--llmeval-base-url", server.base_url,
            "--llmeval-model", "test-model",
        )  # fmt: skip
        bodies = server.completions_bodies()
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 8, result.stdout.str()
    probe, *scored = bodies  # one probe for prompt log-probabilities before any case
    assert probe["echo"] is True and probe["logprobs"]
    assert len(scored) == 32 and all(b["echo"] is True for b in scored)
    (run_dir,) = [p for p in (pytester.path / ".llmeval" / "runs").iterdir() if p.name != "latest"]
    results = {r["case_id"]: r["details"] for r in read_jsonl(run_dir / "results.jsonl")}
    for row in rows:
        context, options = _pairs(row)
        expected = [direct_loglik(model, tokenizer, context, option)[0] for option in options]
        got = results[row["uuid"]]["loglik"]
        assert all(math.isclose(a, b, abs_tol=1e-4) for a, b in zip(got, expected, strict=True))
