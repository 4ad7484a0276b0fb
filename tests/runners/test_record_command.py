"""The command a replay miss names, built from the recorded runner's fingerprint."""

from __future__ import annotations

from pytest_llmeval.runners.record_command import GENERIC_HINT, record_command, record_hint


def test_a_runner_that_names_only_itself() -> None:
    command = record_command("pytest evals", {"type": "tiny-model", "version": "1"})
    assert command == "pytest evals --llmeval-runner tiny-model --llmeval-record new"


def test_the_values_that_decide_the_folder_are_named() -> None:
    fp = {
        "type": "openai", "model": "qwen2.5", "base_url": "http://127.0.0.1:8000/v1",
        "temperature": 0.0, "top_p": None, "max_tokens": 64, "seed": 7,
        "extra_body": {"api_key": "[REDACTED]"}, "prompt_wrapper_sha256": None,
    }  # fmt: skip
    assert record_command("pytest", fp) == (
        "pytest --llmeval-runner openai --llmeval-model qwen2.5 --llmeval-base-url "
        "http://127.0.0.1:8000/v1 --llmeval-max-tokens 64 --llmeval-seed 7 --llmeval-record new"
    )


def test_a_masked_url_is_left_out_and_odd_names_are_quoted() -> None:
    fp = {"type": "openai", "model": "my model", "base_url": "https://gw/[REDACTED]/v1"}
    assert record_command("pytest 'my evals'", fp) == (
        "pytest 'my evals' --llmeval-runner openai --llmeval-model 'my model' --llmeval-record new"
    )


def test_without_the_runner_or_the_command_the_hint_stays_generic() -> None:
    assert record_hint(None, {"type": "x"}) == GENERIC_HINT
    assert record_hint("pytest", None) == GENERIC_HINT
    assert (
        record_hint("pytest", {})
        == "record it with: pytest --llmeval-runner NAME --llmeval-record new"
    )
