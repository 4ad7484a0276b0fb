"""The ``hf`` runner: a local transformers checkpoint, greedy, batched, offline.

``--llmeval-runner hf --llmeval-model PATH_OR_ID`` loads a model directory (or a model id that
is already in the local Hugging Face cache; nothing is ever downloaded: ``local_files_only``)
with ``--llmeval-device auto|cpu|cuda`` and ``--llmeval-dtype auto|float32|bfloat16|float16``
(auto: CUDA in bfloat16 when there is a GPU, else CPU in float32).

Generation renders the conversation and the tools through the tokenizer's own chat template
(``apply_chat_template(messages, tools=..., add_generation_prompt=True)``), decodes greedily
(``do_sample=False``, ``--llmeval-max-tokens`` new tokens, default 256) and parses tool calls
out of the text (:mod:`pytest_llmeval.runners.toolcall_parse`).

**Dynamic batching.** The dispatcher runs several cases at once on one event loop. Requests
that are in flight together are gathered for a few milliseconds (or until ``max_batch_size``
wait) and run as one batch on a single worker thread, so the event loop is never blocked and
the model is never used by two threads. Generation pads on the left with an attention mask
(transformers derives the position ids from it); log-likelihood requests are batched the same
way. A batch gives the same results as one request at a time (greedy decoding is exact up to
float rounding; the tests check token equality and log-probabilities to 1e-5). A batch that
fails is retried one request at a time, so one bad request (or an out-of-memory batch) only
fails itself.

**Log-likelihood** (:meth:`HFRunner.loglikelihood`) is lm-evaluation-harness's (0.4.13)
``loglikelihood`` for a causal model, token for token: trailing whitespace of the context is
moved to the front of the continuation; ``context + continuation`` is encoded whole and the
context's own encoding is split off its front (a BPE merge across the boundary then belongs
to the continuation, as in lm-eval); both use the tokenizer's default special tokens (a bos
where the tokenizer adds one) unless the text already starts with the prefix token; an empty
context is the prefix token (bos, else eos). Over-long inputs keep
``(context + continuation)[-(max_length + 1):][:-1]`` (``truncated`` counts the tokens cut),
with ``max_length`` resolved as lm-eval does (``n_positions``, ``max_position_embeddings``,
``n_ctx``, the tokenizer's ``model_max_length``, else 2048). The sum is over ``log_softmax``
of the logits (in float32) at the continuation's positions; ``is_greedy`` says whether each
continuation token was the arg-max.

Options of one context (a multiple-choice question) are one queue item: the context runs
once and every option's continuation that fits in the model runs from its cached state
(``DynamicCache``), instead of four full sequences; an option that lm-eval's left truncation
cuts has a window of its own and is scored whole. Each sequence runs unpadded (batch of
one): a padding mask takes attention off its fast causal path, which on a CPU costs more than
batching saves (measured: 2-3x slower at 3,000 tokens).

**Fingerprint**: ``type``, ``model_sha256`` (config.json, generation_config.json and the weight
files the model loads from, or their index and shards), ``tokenizer_sha256`` (every tokenizer
file, the chat template included), ``dtype``, ``device`` and the decoding parameters. JSON files
are hashed without the keys that name a path or a library version (``_name_or_path``,
``transformers_version``...), and the model's path or id is not in the fingerprint at all, so
the same checkpoint gives the same fingerprint on every machine. ``device`` is ``cpu`` or
``cuda`` (never an index or a GPU name): CPU and GPU kernels round differently, so greedy text
can differ between them. The batch size is not in it: it does not change results.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
import json
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pytest_llmeval.core.errors import ConfigError, RunnerError
from pytest_llmeval.core.fingerprint import file_sha256, fingerprint
from pytest_llmeval.core.models import Message, ToolSpec, Usage
from pytest_llmeval.runners.base import Completion, GenerateRequest, Loglik, LoglikRequest
from pytest_llmeval.runners.toolcall_parse import parse_tool_calls

__all__ = ["DEFAULT_MAX_NEW_TOKENS", "HFRunner", "model_files_sha256", "tokenizer_files_sha256"]

DEFAULT_MAX_NEW_TOKENS = 256
DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("auto", "float32", "bfloat16", "float16")
INSTALL_HINT = (
    "the hf runner needs torch and transformers: install torch first (on a machine without "
    "a GPU, the CPU-only build of torch, which is much smaller), then "
    "pip install 'pytest-llmeval-harness[hf]'"
)

_TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "chat_template.jinja",
    "chat_template.json",
    "tokenizer.model",
    "spiece.model",
    "vocab.json",
    "vocab.txt",
    "merges.txt",
)
_UNSTABLE_KEYS = frozenset(
    {"_name_or_path", "name_or_path", "transformers_version", "tokenizer_file", "_commit_hash"}
)
"""Top-level keys of JSON files that name a path or a library version: not hashed."""
_SHA256_NAME = re.compile(r"^[0-9a-f]{64}$")

T = TypeVar("T")
R = TypeVar("R")


# ---------------------------------------------------------------------------- fingerprints


def _json_or_file_sha256(path: Path) -> str:
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            return file_sha256(path)
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if k not in _UNSTABLE_KEYS}
        return fingerprint(data)
    resolved = path.resolve()
    if resolved.parent.name == "blobs" and _SHA256_NAME.match(resolved.name):
        return resolved.name  # a Hugging Face cache blob is named by its content's sha256
    return file_sha256(path)


def _weight_files(model_dir: Path) -> list[Path]:
    """The files transformers loads weights from: safetensors when present, else torch."""
    for pattern, index in (
        ("model*.safetensors", "model.safetensors.index.json"),
        ("pytorch_model*.bin", "pytorch_model.bin.index.json"),
    ):
        files = sorted(model_dir.glob(pattern))
        if files:
            return files + ([model_dir / index] if (model_dir / index).is_file() else [])
    return []


def model_files_sha256(model_dir: Path) -> str:
    """sha256 over config.json, generation_config.json and the weight files of a checkpoint."""
    names = [model_dir / "config.json", model_dir / "generation_config.json"]
    files = [p for p in names if p.is_file()] + _weight_files(model_dir)
    return fingerprint({p.name: _json_or_file_sha256(p) for p in files})


def tokenizer_files_sha256(model_dir: Path) -> str:
    """sha256 over every tokenizer file of a checkpoint (chat templates included)."""
    files = [model_dir / name for name in _TOKENIZER_FILES if (model_dir / name).is_file()]
    extra = model_dir / "additional_chat_templates"
    if extra.is_dir():
        files += sorted(extra.glob("*.jinja"))
    return fingerprint(
        {p.relative_to(model_dir).as_posix(): _json_or_file_sha256(p) for p in files}
    )


# ---------------------------------------------------------------------------- loading


def _require() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise ConfigError(f"{INSTALL_HINT} ({exc})") from exc
    return torch, transformers


def _resolve_model_dir(model: str | Path) -> Path:
    """A local checkpoint folder, or the cached snapshot of a model id (never a download)."""
    path = Path(model).expanduser()
    if path.is_dir():
        return path
    if path.exists():
        raise ConfigError(f"hf: --llmeval-model {model} is a file; give a checkpoint folder")
    try:
        from huggingface_hub import snapshot_download

        found = snapshot_download(repo_id=str(model), local_files_only=True)
    except Exception as exc:
        raise ConfigError(
            f"hf: --llmeval-model {model!r} is neither a local checkpoint folder nor a model "
            "in the local Hugging Face cache; the hf runner never downloads, so download it "
            f"beforehand or give its folder ({type(exc).__name__})"
        ) from None
    return Path(str(found))


def _pick_device(torch: Any, device: str) -> str:
    if device not in DEVICES:
        raise ConfigError(f"hf: --llmeval-device takes {', '.join(DEVICES)}, got {device!r}")
    cuda = bool(torch.cuda.is_available())
    if device == "cuda" and not cuda:
        raise ConfigError("hf: --llmeval-device cuda, but torch sees no CUDA device")
    if device == "auto":
        return "cuda" if cuda else "cpu"
    return device


def _pick_dtype(torch: Any, dtype: str, device: str) -> str:
    if dtype not in DTYPES:
        raise ConfigError(f"hf: --llmeval-dtype takes {', '.join(DTYPES)}, got {dtype!r}")
    if dtype != "auto":
        return dtype
    if device == "cuda":
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    return "float32"


_TOKENIZER_INFINITY = 1000000000000000019884624838656
"""``model_max_length`` of a tokenizer that sets none."""


def _resolve_max_length(config: Any, tokenizer: Any, default: int = 2048) -> int:
    """The model's context length as lm-evaluation-harness resolves it: ``n_positions``,
    ``max_position_embeddings`` or ``n_ctx`` of the (text) config, else the tokenizer's
    ``model_max_length``, else 2048."""
    cfg = getattr(config, "text_config", None) or config
    for attr in ("n_positions", "max_position_embeddings", "n_ctx"):
        value = getattr(cfg, attr, None)
        if value is not None:
            return int(value)
    length = getattr(tokenizer, "model_max_length", None)
    if length is not None and length != _TOKENIZER_INFINITY:
        return int(length)
    return default


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:2])


@contextlib.contextmanager
def _quiet_progress(transformers: Any) -> Iterator[None]:
    """No weight-loading progress bars in the middle of a pytest run."""
    hf_logging = transformers.utils.logging
    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()


def _hf_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Messages in the shape chat templates expect (no ``None`` values, arguments as dicts)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message.role, "content": message.content or ""}
        if message.tool_calls:
            item["tool_calls"] = [
                {
                    "type": "function",
                    **({"id": call.id} if call.id else {}),
                    "function": {
                        "name": call.name,
                        "arguments": call.arguments
                        if call.arguments_error is None
                        else call.arguments_error,
                    },
                }
                for call in message.tool_calls
            ]
        if message.tool_call_id:
            item["tool_call_id"] = message.tool_call_id
        if message.name:
            item["name"] = message.name
        out.append(item)
    return out


def _hf_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]] | None:
    if not tools:
        return None
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


# ---------------------------------------------------------------------------- batching


class _BatchQueue(Generic[T, R]):
    """Gathers items submitted together and hands them to ``run`` in batches, on ``executor``.

    ``run`` takes a list of items and returns one result or exception per item, in order.
    """

    def __init__(
        self,
        run: Callable[[list[T]], list[R | BaseException]],
        executor: concurrent.futures.Executor,
        max_batch: int,
        window_s: float,
    ) -> None:
        self._run = run
        self._executor = executor
        self.max_batch = max_batch
        self.window_s = window_s
        self._pending: list[tuple[T, asyncio.Future[R]]] = []
        self._worker: asyncio.Task[None] | None = None
        self.batch_sizes: list[int] = []
        """Size of every batch run so far (for tests and benchmarks)."""

    async def submit(self, item: T) -> R:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[R] = loop.create_future()
        self._pending.append((item, future))
        worker = self._worker
        if worker is None or worker.done() or worker.get_loop() is not loop:
            self._worker = loop.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending:
            if len(self._pending) < self.max_batch:
                await asyncio.sleep(self.window_s)
            batch = [(i, f) for i, f in self._pending[: self.max_batch] if not f.done()]
            del self._pending[: self.max_batch]
            if not batch:
                continue
            self.batch_sizes.append(len(batch))
            items = [item for item, _ in batch]
            try:
                results = await loop.run_in_executor(self._executor, self._run, items)
            except asyncio.CancelledError:
                for _, future in batch:
                    future.cancel()
                raise
            except Exception as exc:  # e.g. used after aclose(): fail the batch, go on
                results = [exc] * len(batch)
            for (_, future), result in zip(batch, results, strict=True):
                if future.done():
                    continue
                if isinstance(result, BaseException):
                    future.set_exception(result)
                else:
                    future.set_result(result)

    def cancel_pending(self) -> None:
        for _, future in self._pending:
            future.cancel()
        self._pending.clear()


@dataclass(frozen=True)
class _GenItem:
    request: GenerateRequest
    max_new_tokens: int


@dataclass(frozen=True)
class _Generated:
    text: str
    tokens: int
    prompt_tokens: int
    stopped: bool
    """Ended on an end-of-turn token (else the token limit)."""


# ---------------------------------------------------------------------------- the runner


class HFRunner:
    """A local transformers causal LM as a :class:`~pytest_llmeval.runners.base.Runner`.

    Also scores text: :meth:`loglikelihood`. Build it once per session; it loads the model
    in ``__init__`` (seconds to minutes for a large one).
    """

    name = "hf"

    def __init__(
        self,
        model: str | Path,
        *,
        device: str = "auto",
        dtype: str = "auto",
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        seed: int = 0,
        max_batch_size: int = 8,
        batch_window_ms: float = 5.0,
        max_length: int | None = None,
    ) -> None:
        torch, transformers = _require()
        if max_new_tokens < 1:
            raise ConfigError(f"hf: max new tokens must be 1 or more, got {max_new_tokens}")
        if max_batch_size < 1:
            raise ConfigError(f"hf: batch size must be 1 or more, got {max_batch_size}")
        self._torch = torch
        self._transformers = transformers
        self.model_dir = _resolve_model_dir(model)
        self.device = _pick_device(torch, device)
        self.dtype = _pick_dtype(torch, dtype, self.device)
        self.max_new_tokens = max_new_tokens
        self.seed = seed
        dtype_arg = "dtype" if _version(transformers.__version__) >= (4, 56) else "torch_dtype"
        try:
            with _quiet_progress(transformers):
                self.tokenizer = transformers.AutoTokenizer.from_pretrained(
                    self.model_dir, local_files_only=True
                )
                self.model = transformers.AutoModelForCausalLM.from_pretrained(
                    self.model_dir,
                    local_files_only=True,
                    **{dtype_arg: getattr(torch, self.dtype)},
                )
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigError(f"hf: cannot load {model}: {exc}") from exc
        self.model.to(self.device)
        self.model.eval()
        self._init_tokens()
        forward = inspect.signature(self.model.forward).parameters
        self._cache_arg = "cache" if "cache" in forward else "past_key_values"
        self._keep_arg = next(
            (a for a in ("logits_to_keep", "num_logits_to_keep") if a in forward), None
        )
        self._max_length = max_length or _resolve_max_length(self.model.config, self.tokenizer)
        self._share_prefix = True
        self._fingerprint = {
            "type": "hf",
            "model_sha256": model_files_sha256(self.model_dir),
            "tokenizer_sha256": tokenizer_files_sha256(self.model_dir),
            "dtype": self.dtype,
            "device": self.device,
            "decoding": {
                "do_sample": False,
                "max_new_tokens": self.max_new_tokens,
                "seed": self.seed,
            },
        }
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="llmeval-hf"
        )
        window_s = batch_window_ms / 1000
        self._generate_queue: _BatchQueue[_GenItem, _Generated] = _BatchQueue(
            self._generate_batch, self._executor, max_batch_size, window_s
        )
        self._tokenize_executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="llmeval-hf-tokenize"
        )
        self._loglik_queue: _BatchQueue[_Encoded, list[Loglik]] = _BatchQueue(
            self._loglik_batch, self._executor, max_batch_size, window_s
        )

    def _init_tokens(self) -> None:
        tok = self.tokenizer
        eos: set[int] = set()
        for source in (self.model.generation_config.eos_token_id, tok.eos_token_id):
            if isinstance(source, int):
                eos.add(source)
            elif isinstance(source, (list, tuple)):
                eos.update(int(i) for i in source)
        self._eos_ids = sorted(eos)
        pad = tok.pad_token_id
        if pad is None:
            pad = self.model.generation_config.pad_token_id
        if pad is None:
            pad = self._eos_ids[0] if self._eos_ids else 0
        self._pad_id = int(pad)
        prefix = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        self._prefix_id = int(prefix) if prefix is not None else self._pad_id
        self._prefix_text = tok.decode([self._prefix_id])
        # Special tokens are dropped from the answer, except tool-call tags some tokenizers
        # mark special (the parser needs them).
        special = set(tok.all_special_ids)
        for token_id, added in getattr(tok, "added_tokens_decoder", {}).items():
            if getattr(added, "special", False):
                special.add(int(token_id))
        self._drop_ids = {
            i for i in special if "tool" not in str(tok.convert_ids_to_tokens(int(i)))
        }
        self.has_chat_template = bool(getattr(tok, "chat_template", None))

    # -- protocol ----------------------------------------------------------------------------

    def fingerprint(self) -> dict[str, Any]:
        return json.loads(json.dumps(self._fingerprint))  # type: ignore[no-any-return]

    async def generate(self, request: GenerateRequest) -> Completion:
        start = time.perf_counter()
        limit = request.params.get("max_tokens")
        max_new = int(limit) if isinstance(limit, int) and limit > 0 else self.max_new_tokens
        out = await self._generate_queue.submit(_GenItem(request, max_new))
        text, calls = parse_tool_calls(out.text)
        finish = "tool_calls" if calls else "stop" if out.stopped else "length"
        return Completion(
            text=text,
            tool_calls=calls,
            finish_reason=finish,
            usage=Usage(
                prompt_tokens=out.prompt_tokens,
                completion_tokens=out.tokens,
                total_tokens=out.prompt_tokens + out.tokens,
            ),
            latency_ms=(time.perf_counter() - start) * 1000,
        )

    async def loglikelihood(self, requests: list[LoglikRequest]) -> list[Loglik]:
        """The log-likelihood of each continuation given its context, in order.

        Requests with the same context (a multiple-choice question's options) are one queue
        item, so their context is encoded and run once."""
        by_context: dict[str, list[int]] = {}
        for i, request in enumerate(requests):
            by_context.setdefault(request.context, []).append(i)
        groups = [
            _Group(context, tuple(requests[i].continuation for i in where))
            for context, where in by_context.items()
        ]
        # tokenised on a thread of its own, so it overlaps the model's work on earlier groups
        loop = asyncio.get_running_loop()
        encoded = await loop.run_in_executor(self._tokenize_executor, self._encode_groups, groups)
        scored = await asyncio.gather(*(self._loglik_queue.submit(e) for e in encoded))
        out: list[Loglik | None] = [None] * len(requests)
        for where, values in zip(by_context.values(), scored, strict=True):
            for i, value in zip(where, values, strict=True):
                out[i] = value
        return [x for x in out if x is not None]

    async def aclose(self) -> None:
        self._generate_queue.cancel_pending()
        self._loglik_queue.cancel_pending()
        self._executor.shutdown(wait=False, cancel_futures=True)
        self._tokenize_executor.shutdown(wait=False, cancel_futures=True)

    @property
    def batch_sizes(self) -> dict[str, list[int]]:
        """Sizes of the batches run so far, by kind (``generate``, ``loglikelihood``)."""
        return {
            "generate": list(self._generate_queue.batch_sizes),
            "loglikelihood": list(self._loglik_queue.batch_sizes),
        }

    # -- prompts -----------------------------------------------------------------------------

    def render(self, request: GenerateRequest) -> str:
        """The prompt text the chat template makes of a request (generation prompt added)."""
        if not self.has_chat_template:
            raise RunnerError(
                f"hf: the tokenizer of {self.model_dir.name} has no chat template "
                "(a base model?); the hf runner generates with chat models only",
                kind="protocol",
            )
        try:
            text = self.tokenizer.apply_chat_template(
                _hf_messages(request.messages),
                tools=_hf_tools(request.tools),
                add_generation_prompt=True,
                tokenize=False,
            )
        except Exception as exc:
            raise RunnerError(
                f"hf: the chat template failed on this request: {type(exc).__name__}: {exc}",
                kind="protocol",
            ) from exc
        return str(text)

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    # -- batches (worker thread) -------------------------------------------------------------

    def _one_by_one_on_failure(
        self,
        items: list[T],
        run: Callable[[list[T]], list[R | BaseException]],
        what: str,
    ) -> list[R | BaseException]:
        try:
            return run(items)
        except Exception as exc:
            if len(items) == 1:
                return [RunnerError(f"hf: {what} failed: {type(exc).__name__}: {exc}")]
        results: list[R | BaseException] = []
        for item in items:
            results += self._one_by_one_on_failure([item], run, what)
        return results

    def _generate_batch(self, items: list[_GenItem]) -> list[_Generated | BaseException]:
        results: list[_Generated | BaseException | None] = []
        batch: list[tuple[int, _GenItem, list[int]]] = []
        for k, item in enumerate(items):
            try:
                ids = self._encode(self.render(item.request))
            except RunnerError as exc:
                results.append(exc)
                continue
            results.append(None)
            batch.append((k, item, ids))
        if batch:
            done = self._one_by_one_on_failure(
                [(item, ids) for _, item, ids in batch], self._generate_ids, "generation"
            )
            for (k, _, _), result in zip(batch, done, strict=True):
                results[k] = result
        return [r if r is not None else RunnerError("hf: not generated") for r in results]

    def _generate_ids(
        self, batch: list[tuple[_GenItem, list[int]]]
    ) -> list[_Generated | BaseException]:
        torch = self._torch
        width = max(len(ids) for _, ids in batch)
        max_new = max(item.max_new_tokens for item, _ in batch)
        input_ids = torch.tensor(
            [[self._pad_id] * (width - len(ids)) + ids for _, ids in batch], dtype=torch.long
        )
        mask = torch.tensor(
            [[0] * (width - len(ids)) + [1] * len(ids) for _, ids in batch], dtype=torch.long
        )
        config = self._generation_config(max_new)
        torch.manual_seed(self.seed)
        with torch.inference_mode():
            output = self.model.generate(
                input_ids=input_ids.to(self.device),
                attention_mask=mask.to(self.device),
                generation_config=config,
            )
        results: list[_Generated | BaseException] = []
        for row, (item, ids) in enumerate(batch):
            new = [int(t) for t in output[row, width:].tolist()][: item.max_new_tokens]
            stop = next((k for k, t in enumerate(new) if t in self._eos_ids), None)
            kept = new if stop is None else new[:stop]
            text = self.tokenizer.decode(
                [t for t in kept if t not in self._drop_ids],
                skip_special_tokens=False,
                clean_up_tokenization_spaces=False,
            )
            results.append(
                _Generated(
                    text=text,
                    tokens=len(new) if stop is None else stop + 1,
                    prompt_tokens=len(ids),
                    stopped=stop is not None,
                )
            )
        return results

    def _generation_config(self, max_new_tokens: int) -> Any:
        return self._transformers.GenerationConfig(
            do_sample=False,
            num_beams=1,
            max_new_tokens=max_new_tokens,
            eos_token_id=list(self._eos_ids) or None,
            pad_token_id=self._pad_id,
            bos_token_id=self.tokenizer.bos_token_id,
        )

    def _loglik_batch(self, groups: list[_Encoded]) -> list[list[Loglik] | BaseException]:
        return self._one_by_one_on_failure(groups, self._score_groups, "log-likelihood")

    def _encode_groups(self, groups: list[_Group]) -> list[_Encoded]:
        return [self._encode_group(group) for group in groups]

    # -- log-likelihood: tokens ------------------------------------------------------------

    def _encode_lm(self, texts: list[str]) -> list[list[int]]:
        """lm-eval's ``tok_encode``: the tokenizer's own special tokens (a bos where it adds
        one), except for a text that already starts with the prefix token's text."""
        prefix = self._prefix_text
        add = not (prefix and texts[0].startswith(prefix))
        encoded = self.tokenizer(texts, add_special_tokens=add, verbose=False)["input_ids"]
        return [list(ids) for ids in encoded]

    def _encode_group(self, group: _Group) -> _Encoded:
        """lm-eval's ``_encode_pair`` for every option of one context: trailing whitespace of
        the context moves to the continuation; context + continuation is encoded whole and the
        context's own tokens are split off its front (an empty context is the prefix token)."""
        context, continuations = group.context, list(group.continuations)
        if not context:
            conts = self.tokenizer(continuations, add_special_tokens=False, verbose=False)[
                "input_ids"
            ]
            pairs = [
                (cont[:1], cont[1:])
                if cont and cont[0] == self._prefix_id
                else ([self._prefix_id], cont)
                for cont in map(list, conts)
            ]
            return _Encoded(group, pairs)
        spaces = len(context) - len(context.rstrip())
        if spaces:
            continuations = [context[-spaces:] + c for c in continuations]
            context = context[:-spaces]
        ids = self._encode_lm([context, *(context + c for c in continuations)])
        context_ids = ids[0]
        return _Encoded(group, [(context_ids, whole[len(context_ids) :]) for whole in ids[1:]])

    # -- log-likelihood: scoring (worker thread) -------------------------------------------

    def _score_groups(self, groups: list[_Encoded]) -> list[list[Loglik] | BaseException]:
        """Score every option of every group, one group at a time (see :meth:`_score_shared`
        and :meth:`_score_whole`)."""
        results: list[list[Loglik] | BaseException] = []
        for enc in groups:
            too_long = [len(c) for _, c in enc.pairs if len(c) > self._max_length]
            if too_long:
                results.append(
                    RunnerError(
                        f"hf: a continuation is {max(too_long)} tokens; the model reads at "
                        f"most {self._max_length}",
                        kind="protocol",
                    )
                )
            elif self._share_prefix and enc.shares_context:
                results.append(self._score_split(enc))
            else:
                results.append(self._score_whole(enc))
        return results

    def _score_split(self, enc: _Encoded) -> list[Loglik]:
        """The options that fit in the model from the shared context, the ones lm-eval's left
        truncation cuts (each its own window) as whole sequences; in the options' order."""
        fits = [j for j, (c, x) in enumerate(enc.pairs) if len(c) + len(x) <= self._max_length + 1]
        cut = [j for j in range(len(enc.pairs)) if j not in fits]
        scored: dict[int, Loglik] = {}
        if fits:
            try:
                shared = self._score_shared(enc.subset(fits))
            except Exception:
                self._share_prefix = False  # a model without a usable cache: the plain way
                shared = self._score_whole(enc.subset(fits))
            scored.update(zip(fits, shared, strict=True))
        if cut:
            scored.update(zip(cut, self._score_whole(enc.subset(cut)), strict=True))
        return [scored[j] for j in range(len(enc.pairs))]

    def _forward(self, ids: list[list[int]], **kwargs: Any) -> Any:
        """Log-probabilities of the model over ``ids`` (rows of one length: no padding mask, so
        attention takes the plain causal path, which is several times faster on long rows)."""
        torch = self._torch
        with torch.inference_mode():
            out = self.model(input_ids=torch.tensor(ids, device=self.device), **kwargs)
            return torch.log_softmax(out.logits.float(), dim=-1)

    def _score_shared(self, enc: _Encoded) -> list[Loglik]:
        """The context once, keeping its cache; then every option's continuation (right-padded,
        so no mask is needed) from that cached state."""
        torch = self._torch
        context = enc.pairs[0][0]
        cache = self._transformers.DynamicCache()
        keep = {self._keep_arg: 1} if self._keep_arg is not None else {}
        first = self._forward([context], use_cache=True, **{self._cache_arg: cache}, **keep)[0, -1]
        rows = [j for j, (_, c) in enumerate(enc.pairs) if len(c) > 1]
        rest = None
        if rows:
            conts = [enc.pairs[j][1][:-1] for j in rows]
            length = max(len(c) for c in conts)
            cache.batch_repeat_interleave(len(rows))
            padded = [c + [self._pad_id] * (length - len(c)) for c in conts]
            rest = self._forward(padded, use_cache=True, **{self._cache_arg: cache})
        scored = []
        for j, (_, cont) in enumerate(enc.pairs):
            request = enc.group.request(j)
            if not cont:
                scored.append(_loglik(request, 0.0, 0, True, 0))
                continue
            target = torch.tensor(cont, device=first.device)
            total = float(first[target[0]].double().item())
            greedy = int(first.argmax().item()) == cont[0]
            if len(cont) > 1:
                assert rest is not None
                row = rest[rows.index(j), : len(cont) - 1]
                total += float(row.gather(-1, target[1:, None]).double().sum().item())
                greedy = greedy and bool((row.argmax(-1) == target[1:]).all().item())
            scored.append(_loglik(request, total, len(cont), greedy, 0))
        return scored

    def _score_whole(self, enc: _Encoded) -> list[Loglik]:
        """Each option as its own sequence, ``(context + continuation)[-(max_len + 1):][:-1]``
        (lm-eval's left truncation)."""
        torch = self._torch
        scored = []
        for j, (context_ids, cont) in enumerate(enc.pairs):
            request = enc.group.request(j)
            n = len(cont)
            if not n:
                scored.append(_loglik(request, 0.0, 0, True, 0))
                continue
            joined = (context_ids + cont)[-(self._max_length + 1) :]
            cut = len(context_ids) + n - len(joined)
            keep = {self._keep_arg: n} if self._keep_arg is not None else {}
            logprobs = self._forward([joined[:-1]], **keep)[0, -n:]
            targets = torch.tensor(cont, device=logprobs.device)
            total = float(logprobs.gather(-1, targets[:, None]).double().sum().item())
            greedy = bool((logprobs.argmax(-1) == targets).all().item())
            scored.append(_loglik(request, total, n, greedy, cut))
        return scored


@dataclass(frozen=True)
class _Group:
    """Options that continue one context: one queue item, so their context is shared."""

    context: str
    continuations: tuple[str, ...]

    def request(self, j: int) -> LoglikRequest:
        return LoglikRequest(context=self.context, continuation=self.continuations[j])


@dataclass(frozen=True)
class _Encoded:
    group: _Group
    pairs: list[tuple[list[int], list[int]]]
    """(context ids, continuation ids) per option, as lm-eval encodes them."""

    @property
    def shares_context(self) -> bool:
        first = self.pairs[0][0]
        return all(context == first for context, _ in self.pairs)

    def subset(self, keep: list[int]) -> _Encoded:
        """These options only (their group keeps the context)."""
        group = _Group(self.group.context, tuple(self.group.continuations[j] for j in keep))
        return _Encoded(group, [self.pairs[j] for j in keep])


def _loglik(
    request: LoglikRequest, total: float, tokens: int, greedy: bool, truncated: int
) -> Loglik:
    return Loglik(
        logprob_sum=total,
        token_count=tokens,
        is_greedy=greedy,
        truncated=truncated,
        char_length=len(request.continuation),
        byte_length=len(request.continuation.encode("utf-8")),
    )
