"""``pytest --help`` shows the ``--llmeval-*`` options in groups a user can scan, in the order
of what a user sets first: runner and model, run dir and reports, gates and baselines, budgets
and limits, judges and embeddings, sharding, secrets; every option in one, with its help."""

from __future__ import annotations

import re

import pytest

from pytest_llmeval.config.settings import NEGATABLE, OPTIONS

TITLES = [
    "pytest-llmeval-harness: runner and model (recordings, tools, datasets):",
    "pytest-llmeval-harness: run dir and reports:",
    "pytest-llmeval-harness: gates and baselines (what makes the run red):",
    "pytest-llmeval-harness: budgets and limits:",
    "pytest-llmeval-harness: judges and embeddings:",
    "pytest-llmeval-harness: sharding:",
    "pytest-llmeval-harness: secrets:",
]

IN_GROUP = {
    "runner": 0, "model": 0, "base-url": 0, "cassettes": 0, "record": 0, "tool-registry": 0,
    "run-dir": 1, "output-root": 1, "resume": 1, "mlflow": 1, "progress": 1,
    "gate": 2, "baseline": 2, "update-baseline": 2, "exit-on": 2,
    "timeout": 3, "concurrency": 3, "max-cost": 3, "rate-limit": 3, "limit": 3,
    "judge-model": 4, "judge-max-tokens": 4, "embedding-model": 4,
    "shard": 5, "hash-scheduling": 5,
    "secret-env": 6, "redact-pattern": 6,
}  # fmt: skip
"""Where a user looks for an option: a sample, each in the group its name says."""


def _blocks(text: str) -> dict[str, list[str]]:
    """Each help section's heading -> the long options it lists, in order."""
    blocks: dict[str, list[str]] = {}
    heading = ""
    for line in text.splitlines():
        if line and not line[0].isspace() and line.endswith(":"):
            heading = line
            blocks[heading] = []
        else:
            blocks.setdefault(heading, []).extend(re.findall(r"^  (--[\w-]+)", line))
    return blocks


def test_help_lists_every_option_once_in_groups_in_the_order_a_user_needs_them(
    pytester: pytest.Pytester,
) -> None:
    result = pytester.runpytest("--help")
    assert result.ret == 0
    blocks = _blocks(result.stdout.str())
    ours = [heading for heading in blocks if heading.startswith("pytest-llmeval-harness")]
    assert ours == TITLES  # in this order, and no other group of ours
    listed = {flag: TITLES.index(h) for h in ours for flag in blocks[h]}
    flags = [flag for h in ours for flag in blocks[h]]
    expected = {spec.flag for spec in OPTIONS} | {f"--no-llmeval-{n}" for n in NEGATABLE}
    assert sorted(flags) == sorted(expected)  # every option, each once, nothing else
    elsewhere = [f for h, fs in blocks.items() if h not in ours for f in fs if "llmeval" in f]
    assert elsewhere == []
    for noun, group in IN_GROUP.items():
        assert listed[f"--llmeval-{noun}"] == group, noun
    for noun in NEGATABLE:
        assert listed[f"--no-llmeval-{noun}"] == listed[f"--llmeval-{noun}"]
    text = " ".join(result.stdout.str().split())
    for spec in OPTIONS:  # every help text is still there, in full
        assert " ".join(spec.help.split()) in text, spec.flag
