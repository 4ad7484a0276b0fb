"""An OpenAI-compatible loopback server for tests: scripted "brains" behind the real wire format.

:class:`OpenAIServer` is a :class:`~pytest_llmeval.testing.server.ScriptedServer` with three
routes under ``/v1``: ``POST /v1/chat/completions``, ``POST /v1/completions`` and
``GET /v1/models``. What the model says comes from two pluggable callables that take the
request's JSON body:

* a **chat brain** returns a :class:`ChatAnswer` (or a plain ``str`` of text); the server wraps
  it in a ``chat.completion`` object (``finish_reason`` ``tool_calls`` or ``stop`` and
  whitespace-word ``usage`` unless the answer sets them). Build calls with :func:`tool_call`,
  whose ``arguments`` may be a dict (sent as JSON text) or any raw string (invalid JSON too).
* a **completions brain** returns a :class:`CompletionAnswer`: the prompt as
  :class:`Token` s with their log-probabilities, plus generated tokens; the server builds
  ``text``, ``logprobs.tokens/token_logprobs/top_logprobs/text_offset`` honouring ``echo``,
  ``logprobs`` and ``max_tokens``. A real model can sit behind this callable.

Either brain may also return a :class:`Reply` (sent as is: a fault for this one request) or a
``dict`` (sent as the whole JSON body). Scripted faults work as on any ScriptedServer::

    with OpenAIServer(chat=lambda body: ChatAnswer("4")) as srv:
        srv.script(srv.chat_path, [Reply(status=429, headers={"Retry-After": "0"})])
        runner = OpenAIRunner("test-model", srv.base_url)
        ...
        [first, second] = srv.chat_bodies()

Requests are checked the way the real API checks them: a body that is not a JSON object,
``messages`` or ``prompt`` missing, or (when ``models`` is given) an unknown model gets a 4xx
``{"error": {"message", "type"}}``; with ``api_key`` set, a request without
``Authorization: Bearer <api_key>`` gets a 401 that does not repeat the key.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_llmeval.testing.server import Reply, Request, ScriptedServer

__all__ = [
    "ChatAnswer",
    "ChatBrain",
    "CompletionAnswer",
    "CompletionsBrain",
    "OpenAIServer",
    "Token",
    "echo_chat",
    "tool_call",
    "word_logprobs",
    "word_tokens",
]


@dataclass(frozen=True)
class ChatAnswer:
    """What the chat brain says for one request."""

    content: str | None = None
    """The assistant's text (``None`` when it only calls tools)."""
    tool_calls: Sequence[dict[str, Any]] = ()
    """OpenAI-form tool calls; see :func:`tool_call`."""
    finish_reason: str | None = None
    """Default: ``tool_calls`` when there are calls, else ``stop``."""
    usage: dict[str, int] | None = None
    """Default: whitespace word counts of the request's messages and of the answer."""


@dataclass(frozen=True)
class Token:
    """One token with its log-probability (``None`` for a prompt's first token)."""

    text: str
    logprob: float | None
    top: dict[str, float] | None = None
    """The top alternatives at this position; default ``{text: logprob}`` (greedy)."""


@dataclass(frozen=True)
class CompletionAnswer:
    """What the completions brain says for one prompt."""

    prompt_tokens: Sequence[Token]
    """The prompt, tokenised; their texts must spell the prompt exactly."""
    generated: Sequence[Token] = ()
    """Tokens after the prompt (cut to the request's ``max_tokens``)."""
    finish_reason: str = "length"


ChatBrain = Callable[[dict[str, Any]], ChatAnswer | str | Reply | dict[str, Any]]
"""Request body -> answer. Runs in the server's connection threads: keep it thread-safe."""
CompletionsBrain = Callable[[dict[str, Any]], CompletionAnswer | Reply | dict[str, Any]]
"""Request body -> scored prompt. Runs in the server's connection threads."""


def tool_call(name: str, arguments: dict[str, Any] | str, id: str | None = None) -> dict[str, Any]:
    """An OpenAI tool call; a str ``arguments`` is sent verbatim (it may be invalid JSON)."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": text}}
    if id is not None:
        call["id"] = id
    return call


def echo_chat(body: dict[str, Any]) -> ChatAnswer:
    """The default chat brain: answers with the last user message's text."""
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            return ChatAnswer(content=str(message.get("content") or ""))
    return ChatAnswer(content="")


_WORDS = re.compile(r"\s*\S+|\s+")


def word_tokens(text: str) -> list[str]:
    """A toy tokenizer: each word with the whitespace before it (``"a b"`` → ``["a", " b"]``)."""
    return _WORDS.findall(text)


def word_logprobs(body: dict[str, Any]) -> CompletionAnswer:
    """The default completions brain: :func:`word_tokens`, each scored ``-0.5 * len(word)``
    (the first token unscored); generates ``" ok"`` tokens."""
    pieces = word_tokens(str(body.get("prompt", "")))
    tokens = [
        Token(piece, None if i == 0 else -0.5 * len(piece.strip() or piece))
        for i, piece in enumerate(pieces)
    ]
    return CompletionAnswer(prompt_tokens=tokens, generated=[Token(" ok", -0.1)] * 16)


class OpenAIServer(ScriptedServer):
    """A :class:`ScriptedServer` speaking the OpenAI chat and completions APIs.

    Args:
        chat: The chat brain (default :func:`echo_chat`).
        completions: The completions brain (default :func:`word_logprobs`).
        models: Model names ``GET /v1/models`` lists; requests for another model get a 404.
            ``None`` accepts any model.
        api_key: When set, requests must carry ``Authorization: Bearer <api_key>``.
        prefix: Where the API lives (``/v1``).
        **kwargs: Passed to :class:`ScriptedServer` (``host``, ``join_timeout_s`` ...).
    """

    def __init__(
        self,
        chat: ChatBrain | None = None,
        completions: CompletionsBrain | None = None,
        *,
        models: Iterable[str] | None = ("test-model",),
        api_key: str | None = None,
        prefix: str = "/v1",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.chat_brain: ChatBrain = chat or echo_chat
        self.completions_brain: CompletionsBrain = completions or word_logprobs
        self.models = None if models is None else list(models)
        self.api_key = api_key
        self.prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
        self._ids = 0
        self._id_lock = threading.Lock()
        self.route("POST", self.chat_path, self._chat)
        self.route("POST", self.completions_path, self._completions)
        self.route("GET", self.models_path, self._models)

    # -- addresses ----------------------------------------------------------------------------

    @property
    def chat_path(self) -> str:
        return f"{self.prefix}/chat/completions"

    @property
    def completions_path(self) -> str:
        return f"{self.prefix}/completions"

    @property
    def models_path(self) -> str:
        return f"{self.prefix}/models"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: what a client takes as its base URL."""
        return self.url + self.prefix

    def chat_bodies(self) -> list[Any]:
        """The JSON bodies of every chat request received so far, in order."""
        return [r.json for r in self.requests_to(self.chat_path, "POST")]

    def completions_bodies(self) -> list[Any]:
        """The JSON bodies of every completions request received so far, in order."""
        return [r.json for r in self.requests_to(self.completions_path, "POST")]

    # -- routes -------------------------------------------------------------------------------

    def _models(self, request: Request) -> Reply:
        refused = self._refuse(request, check_body=False)
        if refused is not None:
            return refused
        data = [{"id": m, "object": "model", "owned_by": "llmeval"} for m in self.models or []]
        return Reply(json={"object": "list", "data": data})

    def _chat(self, request: Request) -> Reply:
        refused = self._refuse(request)
        if refused is not None:
            return refused
        body: dict[str, Any] = request.json
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return _error(400, "'messages' must be a non-empty array")
        answer = self.chat_brain(body)
        if isinstance(answer, Reply):
            return answer
        if isinstance(answer, dict):
            return Reply(json=answer)
        if isinstance(answer, str):
            answer = ChatAnswer(content=answer)
        message: dict[str, Any] = {"role": "assistant", "content": answer.content}
        calls = []
        for number, call in enumerate(answer.tool_calls):
            calls.append({"id": f"call_{self._next_id()}_{number}", **call})
        if calls:
            message["tool_calls"] = calls
        finish = answer.finish_reason or ("tool_calls" if calls else "stop")
        usage = answer.usage or _word_usage(messages, answer)
        return Reply(
            json={
                "id": f"chatcmpl-{self._next_id()}",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model"),
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            }
        )

    def _completions(self, request: Request) -> Reply:
        refused = self._refuse(request)
        if refused is not None:
            return refused
        body: dict[str, Any] = request.json
        prompt = body.get("prompt")
        if not isinstance(prompt, str):
            return _error(400, "'prompt' must be a string (this server scores one per request)")
        answer = self.completions_brain(body)
        if isinstance(answer, Reply):
            return answer
        if isinstance(answer, dict):
            return Reply(json=answer)
        spelled = "".join(t.text for t in answer.prompt_tokens)
        if spelled != prompt:
            raise ValueError(f"brain tokens spell {spelled!r}, not the prompt {prompt!r}")
        max_tokens = body.get("max_tokens", 16)
        if not isinstance(max_tokens, int) or max_tokens < 0:
            return _error(400, "'max_tokens' must be an integer >= 0")
        generated = list(answer.generated)[:max_tokens]
        echo = bool(body.get("echo"))
        shown = (list(answer.prompt_tokens) if echo else []) + generated
        text = "".join(t.text for t in shown)
        logprobs: dict[str, Any] | None = None
        if body.get("logprobs") is not None:
            offsets, at = [], 0
            for token in shown:
                offsets.append(at)
                at += len(token.text)
            logprobs = {
                "tokens": [t.text for t in shown],
                "token_logprobs": [t.logprob for t in shown],
                "top_logprobs": [
                    None if t.logprob is None else (t.top or {t.text: t.logprob}) for t in shown
                ],
                "text_offset": offsets,
            }
        return Reply(
            json={
                "id": f"cmpl-{self._next_id()}",
                "object": "text_completion",
                "created": 0,
                "model": body.get("model"),
                "choices": [
                    {
                        "index": 0,
                        "text": text,
                        "logprobs": logprobs,
                        "finish_reason": answer.finish_reason,
                    }
                ],
                "usage": {
                    "prompt_tokens": len(answer.prompt_tokens),
                    "completion_tokens": len(generated),
                    "total_tokens": len(answer.prompt_tokens) + len(generated),
                },
            }
        )

    # -- internals ----------------------------------------------------------------------------

    def _refuse(self, request: Request, check_body: bool = True) -> Reply | None:
        wanted = f"Bearer {self.api_key}"
        if self.api_key is not None and request.headers.get("authorization") != wanted:
            return _error(401, "Incorrect or missing API key", "invalid_api_key")
        if not check_body:
            return None
        if not isinstance(request.json, dict):
            return _error(400, "the body must be a JSON object")
        model = request.json.get("model")
        if not isinstance(model, str) or not model:
            return _error(400, "'model' must be a non-empty string")
        if self.models is not None and model not in self.models:
            return _error(404, f"The model {model!r} does not exist", "model_not_found")
        return None

    def _next_id(self) -> int:
        with self._id_lock:
            self._ids += 1
            return self._ids


def _error(status: int, message: str, code: str | None = None) -> Reply:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return Reply(status=status, json={"error": {"message": message, "type": kind, "code": code}})


def _word_usage(messages: list[Any], answer: ChatAnswer) -> dict[str, int]:
    prompt = sum(len(str(m.get("content") or "").split()) for m in messages if isinstance(m, dict))
    completion = len((answer.content or "").split()) + len(answer.tool_calls)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
