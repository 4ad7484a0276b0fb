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

**Log-likelihood** (:meth:`HFRunner.loglikelihood`), as lm-evaluation-harness scores a
multiple-choice option: trailing whitespace of the context is moved to the front of the
continuation; the context and the continuation are tokenized *separately* (no special tokens)
and their ids concatenated; an empty context is replaced by the bos token (eos when there is
none). Encoding separately keeps the continuation's tokens independent of the context, so
``token_count`` is the same for every context and the scored tokens are exactly the
continuation's (encoding ``context + continuation`` in one go can merge a token across the
boundary, and then no split is right). The sum is over ``log_softmax`` of the logits (in
float32) at the continuation's positions; ``is_greedy`` says whether each continuation token
was the arg-max. Over-long inputs lose context tokens from the left.

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

from pytest_llmeval.errors import ConfigError, RunnerError
from pytest_llmeval.models import Message, ToolSpec, Usage
from pytest_llmeval.report.fingerprint import file_sha256, fingerprint
from pytest_llmeval.runners.base import Completion, GenerateRequest, Loglik, LoglikRequest
from pytest_llmeval.runners.toolcall_parse import parse_tool_calls

__all__ = ["DEFAULT_MAX_NEW_TOKENS", "HFRunner", "model_files_sha256", "tokenizer_files_sha256"]

DEFAULT_MAX_NEW_TOKENS = 256
DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("auto", "float32", "bfloat16", "float16")
INSTALL_HINT = (
    "the hf runner needs torch and transformers: install torch first (on a machine without "
    "a GPU, the CPU-only build of torch, which is much smaller), then "
    "pip install 'pytest-llmeval[hf]'"
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
        self._takes_position_ids = "position_ids" in forward
        self._keep_arg = next(
            (a for a in ("logits_to_keep", "num_logits_to_keep") if a in forward), None
        )
        self._max_length = int(
            getattr(self.model.config, "max_position_embeddings", None) or 1 << 30
        )
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
        self._loglik_queue: _BatchQueue[LoglikRequest, Loglik] = _BatchQueue(
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
        """The log-likelihood of each continuation given its context, in order."""
        return list(await asyncio.gather(*(self._loglik_queue.submit(r) for r in requests)))

    async def aclose(self) -> None:
        self._generate_queue.cancel_pending()
        self._loglik_queue.cancel_pending()
        self._executor.shutdown(wait=False, cancel_futures=True)

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

    def _loglik_batch(self, items: list[LoglikRequest]) -> list[Loglik | BaseException]:
        return self._one_by_one_on_failure(items, self._score, "log-likelihood")

    def _split(self, request: LoglikRequest) -> tuple[list[int], list[int]]:
        context, continuation = request.context, request.continuation
        spaces = len(context) - len(context.rstrip())
        if spaces:
            continuation = context[-spaces:] + continuation
            context = context[:-spaces]
        context_ids = self._encode(context) if context else [self._prefix_id]
        return context_ids, self._encode(continuation)

    def _score(self, items: list[LoglikRequest]) -> list[Loglik | BaseException]:
        torch = self._torch
        results: list[Loglik | BaseException | None] = []
        rows: list[tuple[int, list[int], int]] = []
        for k, request in enumerate(items):
            context_ids, continuation_ids = self._split(request)
            n = len(continuation_ids)
            if n == 0:
                results.append(_loglik(request, 0.0, 0, True))
                continue
            if n >= self._max_length:
                results.append(
                    RunnerError(
                        f"hf: the continuation is {n} tokens; the model reads at most "
                        f"{self._max_length}",
                        kind="protocol",
                    )
                )
                continue
            results.append(None)
            rows.append((k, (context_ids + continuation_ids)[-(self._max_length + 1) :], n))
        if rows:
            keep = max(n for _, _, n in rows)
            inputs = [whole[:-1] for _, whole, _ in rows]
            width = max(len(x) for x in inputs)
            input_ids = torch.tensor(
                [[self._pad_id] * (width - len(x)) + x for x in inputs], dtype=torch.long
            )
            mask = torch.tensor(
                [[0] * (width - len(x)) + [1] * len(x) for x in inputs], dtype=torch.long
            )
            kwargs: dict[str, Any] = {"attention_mask": mask.to(self.device)}
            if self._takes_position_ids:
                kwargs["position_ids"] = (mask.cumsum(-1) - 1).clamp(min=0).to(self.device)
            if self._keep_arg is not None:
                kwargs[self._keep_arg] = keep
            with torch.inference_mode():
                logits = self.model(input_ids=input_ids.to(self.device), **kwargs).logits
            logprobs = torch.log_softmax(logits[:, -keep:, :].float(), dim=-1)
            for (k, whole, n), row in zip(rows, logprobs, strict=True):
                targets = torch.tensor(whole[-n:], dtype=torch.long, device=row.device)
                scores = row[-n:]
                total = float(scores.gather(-1, targets[:, None]).double().sum().item())
                greedy = bool((scores.argmax(-1) == targets).all().item())
                results[k] = _loglik(items[k], total, n, greedy)
        return [r if r is not None else RunnerError("hf: not scored") for r in results]


def _loglik(request: LoglikRequest, total: float, tokens: int, greedy: bool) -> Loglik:
    return Loglik(
        logprob_sum=total,
        token_count=tokens,
        is_greedy=greedy,
        char_length=len(request.continuation),
        byte_length=len(request.continuation.encode("utf-8")),
    )
