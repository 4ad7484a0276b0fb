"""The ``--llmeval-*`` options as pytest sees them: registering them, and building the frozen
:class:`~pytest_llmeval.config.settings.Settings` from the command line, ini and environment.

The option table itself (:data:`~pytest_llmeval.config.settings.OPTIONS`) and the settings
model live in :mod:`pytest_llmeval.config.settings`, which does not import pytest; here every
bad value becomes a ``pytest.UsageError`` naming where it came from.
"""

from __future__ import annotations

import math
import os
import shlex
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.config.pricing import load_prices
from pytest_llmeval.config.providers import parse_providers
from pytest_llmeval.config.settings import (
    DEFAULT_FILE_GLOBS,
    NEGATABLE,
    OPTIONS,
    OptionSpec,
    Settings,
)
from pytest_llmeval.core.clip import clip
from pytest_llmeval.core.errors import ConfigError
from pytest_llmeval.core.repeats import parse_rule
from pytest_llmeval.core.shards import parse_shard
from pytest_llmeval.inputs.safe_read import SupportFileError, parse_json
from pytest_llmeval.limits.rates import RATE_FORM, parse_rate_limit

__all__ = ["HELP_GROUPS", "PRODUCT", "add_options", "from_config"]

PRODUCT = "pytest-llmeval-harness"
"""The product's one name wherever a user reads it: the distribution's name."""

HELP_GROUPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("llmeval", "runner and model (recordings, tools, datasets)", (
        "runner", "model", "base-url", "api-key-env", "providers", "agent-url", "temperature",
        "top-p", "max-tokens", "seed", "extra-body", "prompt-wrapper", "deterministic",
        "http-transport", "device", "dtype", "batch-size", "cassettes", "record",
        "replay-from", "fixtures", "tool-registry", "seed-manifest", "snapshot",
        "integration-mode", "fail-on-fingerprint-mismatch",
    )),
    ("llmeval-run-dir", "run dir and reports", (
        "run-dir", "output-root", "resume", "resume-allow-mismatch", "progress", "mlflow",
        "mlflow-experiment",
    )),
    ("llmeval-gates", "gates and baselines (what makes the run red)", (
        "gate", "exit-on", "baseline", "update-baseline", "baseline-allow-mismatch", "repeats",
        "repeat-rule",
    )),
    ("llmeval-limits", "budgets and limits", (
        "limit", "timeout", "max-turns", "concurrency", "max-connections", "rate-limit",
        "breaker-threshold", "max-response-bytes", "prices", "max-tokens-total", "max-cost",
    )),
    ("llmeval-judges", "judges and embeddings", (
        "judge-runner", "judge-model", "judge-base-url", "judge-api-key-env",
        "judge-temperature", "judge-max-tokens", "judge-extra-body", "judge-repeats",
        "embedding-model", "embedding-base-url", "embedding-api-key-env",
    )),
    ("llmeval-sharding", "sharding", ("shard", "hash-scheduling")),
    ("llmeval-secrets", "secrets", ("secret-env", "redact-pattern")),
)  # fmt: skip
"""``pytest --help``'s groups of ``--llmeval-*`` options, in the order it shows them: (group
name, title, the options' nouns in the order listed). Every option is in exactly one
(tests/plugin/test_help_groups.py)."""


def add_options(parser: pytest.Parser) -> None:
    """Register every ``--llmeval-*`` option and ``llmeval_*`` ini key, in :data:`HELP_GROUPS`."""
    specs = {spec.noun: spec for spec in OPTIONS}
    for name, title, nouns in HELP_GROUPS:
        group = parser.getgroup(name, f"{PRODUCT}: {title}")
        for noun in nouns:
            _add(parser, group, specs.pop(noun))
    if specs:  # an option of the table in no group: a developer's slip, loud at once
        raise AssertionError(f"options in no help group: {sorted(specs)}")
    parser.addini(
        "llmeval_files",
        type="linelist",
        help="file name globs that are looked at as eval files "
        f"(default: {' '.join(DEFAULT_FILE_GLOBS)})",
        default=list(DEFAULT_FILE_GLOBS),
    )


def _add(parser: pytest.Parser, group: pytest.OptionGroup, spec: OptionSpec) -> None:
    """One option (its ``--no-`` form too, when it has one) and its ini key."""
    kwargs: dict[str, Any] = {"dest": spec.dest, "default": None, "help": _help(spec)}
    if spec.metavar:
        kwargs["metavar"] = spec.metavar
    if spec.choices:
        kwargs["choices"] = list(spec.choices)
    if spec.type == "list":
        kwargs["action"] = "append"
    if spec.type == "flag":
        kwargs["action"] = "store_true"
    group.addoption(spec.flag, **kwargs)
    if spec.noun in NEGATABLE:
        group.addoption(
            f"--no-llmeval-{spec.noun}",
            dest=spec.dest,
            action="store_const",
            const="no",
            help=f"Same as {spec.flag} no.",
        )
    if spec.type == "list":
        parser.addini(spec.dest, help=f"default for {spec.flag}", type="linelist", default=[])
    else:
        parser.addini(spec.dest, help=f"default for {spec.flag}", default=None)


def _help(spec: OptionSpec) -> str:
    text = spec.help
    if spec.bound is not None:
        text += f" From {spec.bound.low:,} to {spec.bound.high:,}."
    if spec.default is not None:
        text += f" Default: {spec.default}."
    return text + f" (ini: {spec.dest}, env: {spec.env})"


def from_config(config: pytest.Config) -> Settings:
    """Build the Settings for this session; a bad value raises ``pytest.UsageError``."""
    rootdir = Path(config.rootpath)
    values: dict[str, Any] = {"rootdir": rootdir, "command": _command(config)}
    for spec in OPTIONS:
        raw, source = _lookup(config, spec)
        # a resume path is typed at the prompt: it is relative to where pytest was started
        base = Path(config.invocation_params.dir) if spec.noun == "resume" else rootdir
        values[spec.dest.removeprefix("llmeval_")] = _convert(spec, raw, source, base)
    values["file_globs"] = tuple(config.getini("llmeval_files") or DEFAULT_FILE_GLOBS)
    try:
        parse_rule(values["repeat_rule"])
    except ValueError as exc:
        raise pytest.UsageError(f"--llmeval-repeat-rule: {exc}") from None
    if values["timeout"] <= 0:
        raise pytest.UsageError("--llmeval-timeout must be a positive number of seconds")
    if values["runner"] == "http-agent" and not values["agent_url"]:
        raise pytest.UsageError(
            "--llmeval-runner http-agent needs --llmeval-agent-url URL "
            "(the endpoint that takes POST {message})"
        )
    if values["runner"] == "openai" and not values["model"]:
        raise pytest.UsageError("--llmeval-runner openai needs --llmeval-model NAME")
    values["deterministic"] = values["deterministic"] == "yes"
    values["extra_body"] = _json_object(values["extra_body"], "--llmeval-extra-body")
    values["judge_extra_body"] = _json_object(
        values["judge_extra_body"], "--llmeval-judge-extra-body"
    )
    if values["judge_max_tokens"] < 1:
        raise pytest.UsageError("--llmeval-judge-max-tokens must be 1 or more")
    try:
        values["providers"] = parse_providers(values["providers"])
    except ValueError as exc:
        raise pytest.UsageError(f"llmeval_providers: {exc}") from None
    if values["breaker_threshold"] < 0:
        raise pytest.UsageError("--llmeval-breaker-threshold must be 0 (off) or more")
    if values["max_response_bytes"] < 1:
        raise pytest.UsageError("--llmeval-max-response-bytes must be 1 or more")
    if values["rate_limit"] is not None:
        try:
            values["rate_limit"] = parse_rate_limit(values["rate_limit"]).text
        except ValueError as exc:
            raise pytest.UsageError(
                f"--llmeval-rate-limit takes {RATE_FORM}; got {values['rate_limit']!r}: {exc}"
            ) from None
    _sampling(values)
    _spending(values)
    return Settings(**values)


def _command(config: pytest.Config) -> str:
    """``pytest``, with the rootdir's path when the user started pytest outside it (``pytest
    evals`` from the project's root, where ``evals/pytest.ini`` makes ``evals`` the rootdir):
    that command, typed where the user typed theirs, collects the same eval files."""
    rootdir = Path(config.rootpath)
    here = Path(config.invocation_params.dir)
    if here == rootdir or here.is_relative_to(rootdir):
        return "pytest"
    return f"pytest {shlex.quote(os.path.relpath(rootdir, here))}"


def _sampling(values: dict[str, Any]) -> None:
    """Temperatures are 0 or more and ``top_p`` is in (0, 1]: anything else is a typo the
    backend would reject on every case, or silently clamp."""
    for name in ("temperature", "judge_temperature"):
        if values[name] < 0:
            flag = "--llmeval-" + name.replace("_", "-")
            raise pytest.UsageError(f"{flag} takes a number, 0 or more; got {values[name]}")
    top_p = values["top_p"]
    if top_p is not None and not 0 < top_p <= 1:
        raise pytest.UsageError(f"--llmeval-top-p takes a number above 0, at most 1; got {top_p}")


def _spending(values: dict[str, Any]) -> None:
    """Check the progress, price, budget and --llmeval-limit values; read the price table."""
    if values["progress"] < 0:
        raise pytest.UsageError("--llmeval-progress takes seconds, 0 or more (0: no lines)")
    for name, flag in (("max_tokens_total", "max-tokens-total"), ("limit", "limit")):
        if values[name] is not None and values[name] < 1:
            raise pytest.UsageError(f"--llmeval-{flag} must be 1 or more")
    if values["max_cost"] is not None and not values["max_cost"] > 0:
        raise pytest.UsageError("--llmeval-max-cost takes a number of US dollars above 0")
    if values["prices"] is not None:
        try:
            values["prices"] = load_prices(values["prices"])
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from None
    if values["max_cost"] is not None and values["prices"] is None:
        raise pytest.UsageError(
            "--llmeval-max-cost needs --llmeval-prices FILE (the price of each model's tokens)"
        )


def _json_object(text: str | None, flag: str) -> dict[str, Any] | None:
    if text is None:
        return None
    shown = repr(clip(text, 80))
    try:  # the safe reader: a value nested without bound is refused, never a RecursionError
        value = parse_json(text, flag)
    except SupportFileError as exc:
        raise pytest.UsageError(f"{flag} takes a JSON object, got {shown}: {exc.message}") from None
    if not isinstance(value, dict):
        raise pytest.UsageError(f"{flag} takes a JSON object, got {shown}")
    return value


def _lookup(config: pytest.Config, spec: OptionSpec) -> tuple[Any, str]:
    value = config.getoption(spec.dest, None)
    if value is not None:
        return value, spec.flag
    ini = config.getini(spec.dest)
    if ini not in (None, "", []):
        return ini, f"ini {spec.dest}"
    env = os.environ.get(spec.env)
    if env not in (None, ""):
        return env, f"environment variable {spec.env}"
    return spec.default, spec.flag


def _bounded(spec: OptionSpec, text: str, source: str) -> int:
    """A count that multiplies work, in its range; anything else is a usage error naming the
    option and the range (never a silent default)."""
    assert spec.bound is not None
    try:
        value = int(text) if text.isascii() else None
    except ValueError:
        value = None
    if value is None or not spec.bound.holds(value):
        where = source if source == spec.flag else f"{source} ({spec.flag})"
        raise pytest.UsageError(f"{where} takes {spec.bound.text}, got {text!r}")
    return value


def _convert(spec: OptionSpec, raw: Any, source: str, rootdir: Path) -> Any:
    if raw is None:
        return {"list": (), "flag": False}.get(spec.type)
    if spec.type == "shard":  # "I/N", or (I, N) as handed to an xdist worker
        try:
            return parse_shard(raw) if isinstance(raw, str) else (int(raw[0]), int(raw[1]))
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from None
    text = str(raw).strip()
    if spec.bound is not None:
        return _bounded(spec, text, source)
    try:
        if spec.type == "int":
            return int(text)
        if spec.type == "float":
            number = float(text)
            if not math.isfinite(number):  # nan or inf: no timeout, temperature or budget
                raise ValueError(text)
            return number
    except ValueError:
        kind = "a whole number" if spec.type == "int" else "a finite number"
        raise pytest.UsageError(f"{source} takes {kind}, got {text!r}") from None
    if spec.type == "choice":
        if text not in spec.choices:
            raise pytest.UsageError(
                f"{source} takes one of {', '.join(spec.choices)}, got {text!r}"
            )
        if spec.noun == "hash-scheduling" or spec.noun in NEGATABLE:
            return text == "yes"
        return text
    if spec.type == "flag":
        if isinstance(raw, bool):
            return raw
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off", ""):
            return False
        raise pytest.UsageError(f"{source} takes true or false, got {text!r}")
    if spec.type == "list":
        items = raw if isinstance(raw, list) else str(raw).splitlines()
        return tuple(str(item).strip() for item in items if str(item).strip())
    if spec.type == "path":
        path = Path(text).expanduser()
        return path if path.is_absolute() else rootdir / path
    return text
