"""Tiny real transformers models, built in seconds with no download, for testing ``hf``.

:func:`build_tiny_model` trains a byte-level BPE tokenizer (``tokenizers``) on a small built-in
corpus, wraps it as a ``PreTrainedTokenizerFast`` with bos/eos/pad tokens and a ChatML-style
chat template that renders tools and tool calls (``<tools>``, ``<tool_call>``,
``<tool_response>``, as Qwen/Hermes templates do), builds a Llama model of a few tens of
thousands of parameters with seeded random weights, and saves both with ``save_pretrained``::

    from pytest_llmeval.testing import build_tiny_model
    path = build_tiny_model(tmp_path / "tiny", seed=0)
    # pytest --llmeval-runner hf --llmeval-model <path>

The same arguments give byte-identical files (so the same ``hf`` runner fingerprint); another
seed gives other weights. The model is random: its output is gibberish, but it is a real
checkpoint that goes through the real loading, chat template, generation and scoring code.
Needs ``torch``, ``transformers`` and ``tokenizers``
(``pip install 'pytest-llmeval-harness[hf]'``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "BOS",
    "CHAT_TEMPLATE",
    "CORPUS",
    "EOS",
    "IM_START",
    "PAD",
    "SPECIAL_TOKENS",
    "TAG_TOKENS",
    "build_tiny_model",
    "build_tokenizer",
]

BOS = "<|startoftext|>"
EOS = "<|im_end|>"
PAD = "<|pad|>"
IM_START = "<|im_start|>"
SPECIAL_TOKENS = (PAD, BOS, EOS, IM_START)
"""Control tokens: skipped when generated text is decoded."""
TAG_TOKENS = (
    "<tool_call>",
    "</tool_call>",
    "<tools>",
    "</tools>",
    "<tool_response>",
    "</tool_response>",
)
"""Tags that stay in decoded text, so tool calls can be parsed from it."""

CHAT_TEMPLATE = """\
{{- bos_token }}
{%- if messages and messages[0].role == 'system' %}
{%- set system = messages[0].content %}{%- set rest = messages[1:] %}
{%- else %}{%- set system = '' %}{%- set rest = messages %}{%- endif %}
{%- if system or tools %}
{{- '<|im_start|>system\\n' + (system or '') }}
{%- if tools %}
{{- '\\n\\n# Tools\\n<tools>\\n' }}
{%- for tool in tools %}{{ tool | tojson }}{{ '\\n' }}{% endfor %}
{{- '</tools>\\nTo call a tool, answer with <tool_call>'
    '{"name": <name>, "arguments": <json object>}</tool_call>' }}
{%- endif %}
{{- '<|im_end|>\\n' }}
{%- endif %}
{%- for message in rest %}
{%- if message.role == 'tool' %}
{{- '<|im_start|>tool\\n<tool_response>\\n' + (message.content or '')
    + '\\n</tool_response><|im_end|>\\n' }}
{%- else %}
{{- '<|im_start|>' + message.role + '\\n' + (message.content or '') }}
{%- for call in message.tool_calls or [] %}
{%- set fn = call.function if call.function is defined else call %}
{{- '<tool_call>\\n{"name": ' + (fn.name | tojson) + ', "arguments": ' }}
{%- if fn.arguments is string %}{{ fn.arguments }}{% else %}{{ fn.arguments | tojson }}{% endif %}
{{- '}\\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}
"""
"""ChatML with a tools block; tool results come back as ``tool`` turns."""

CORPUS = (
    "What is the weather in Paris today? It is 18C and cloudy in Paris.",
    "What's the weather like in Berlin, London and Tokyo? Sunny, rainy, windy.",
    "Hello there! How can I help you today? Hi, hello, thanks, goodbye.",
    "What is 17 * 23? 17 * 23 = 391. What is 2 + 2? 2 + 2 = 4. 12 / 4 = 3.",
    "Search the web for rope precision. Top hit: RoPE precision notes.",
    "The quick brown fox jumps over the lazy dog. A cat sat on the mat.",
    "Paris is the capital of France. Berlin is the capital of Germany.",
    "The answer is yes. The answer is no. I cannot answer that question.",
    "Please read the file README.md and summarise the project for me.",
    '{"name": "get_weather", "arguments": {"city": "Paris"}}',
    '{"name": "web.search", "arguments": {"q": "rope precision", "top_k": 3}}',
    '{"name": "read_file", "arguments": {"path": "README.md"}}',
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Berlin"}}\n</tool_call>',
    '<tool_response>\n{"temp_c": 18, "conditions": "cloudy"}\n</tool_response>',
    '[get_weather(city="Paris"), web.search(q="rope", top_k=3)]',
    '{"type": "function", "function": {"name": "get_weather", "description": '
    '"Current weather for a city", "parameters": {"type": "object", "properties": '
    '{"city": {"type": "string"}}, "required": ["city"]}}}',
    '{"ok": true, "hits": [{"title": "RoPE", "url": "https://example.org"}], "error": null}',
    "system user assistant tool # Tools To call a tool, answer with the name and arguments",
    "0 1 2 3 4 5 6 7 8 9 10 100 1000 true false null [] {} () , : ; . ! ? \" ' - _ = + * /",
)
"""Training text: words the tests use, JSON and tool-call text."""


def _import() -> tuple[Any, Any, Any]:
    try:
        import tokenizers
        import torch
        import transformers
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            f"build_tiny_model needs torch, transformers and tokenizers ({exc}); install "
            "torch first (the CPU-only build on a machine without a GPU), then "
            "pip install 'pytest-llmeval-harness[hf]'"
        ) from exc
    return tokenizers, torch, transformers


def build_tokenizer(vocab_size: int = 512, model_max_length: int = 512) -> Any:
    """A byte-level BPE ``PreTrainedTokenizerFast`` trained on :data:`CORPUS`."""
    tokenizers, _, transformers = _import()
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS, trainer=trainer)
    tok.add_tokens([tokenizers.AddedToken(t, special=False, normalized=False) for t in TAG_TOKENS])
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        additional_special_tokens=[IM_START],
        chat_template=CHAT_TEMPLATE,
        padding_side="left",
        model_max_length=model_max_length,
        clean_up_tokenization_spaces=False,
    )


def build_tiny_model(
    path: Path | str,
    *,
    seed: int = 0,
    vocab_size: int = 512,
    hidden: int = 32,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int | None = None,
    intermediate: int | None = None,
    max_positions: int = 512,
    init_range: float = 0.5,
) -> Path:
    """Build and save a tiny random Llama checkpoint and its tokenizer into ``path``.

    Deterministic: the same arguments write the same bytes. ``vocab_size`` is the BPE
    vocabulary (the byte alphabet and control tokens included; at least 300); the model's
    embedding matrix also covers the tool-call tags added after training. ``kv_heads``
    (default ``heads``) and ``intermediate`` (default ``2 * hidden``) shape the layers;
    ``max_positions`` is the context length of the model and the tokenizer. ``init_range`` is
    the weights' standard deviation: the default's peaky logits keep greedy decoding off
    near-ties; a small one (0.02) gives log-likelihoods of a few nats per token.
    """
    _, torch, transformers = _import()
    if vocab_size < 300:
        raise ValueError("vocab_size must be at least 300 (256 bytes + control tokens + merges)")
    if hidden % heads:
        raise ValueError(f"hidden ({hidden}) must be a multiple of heads ({heads})")
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(vocab_size, max_positions)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=intermediate or 2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads or heads,
        max_position_embeddings=max_positions,
        # Large initial weights make the logits peaky, so greedy decoding never sits on a
        # near-tie that float rounding (batched vs one at a time) could flip.
        initializer_range=init_range,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(config).eval()
    model.generation_config = transformers.GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    hf_logging = transformers.utils.logging
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
    finally:
        if bars:
            hf_logging.enable_progress_bar()
    return out
