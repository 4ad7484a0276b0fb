"""Logging a finished run dir to MLflow (``--llmeval-mlflow TRACKING_URI``).

One MLflow run per llmeval run, in the experiment ``--llmeval-mlflow-experiment`` (created
when missing), named after the llmeval run id and built from the run dir alone:

* **params**: ``manifest.json`` ``settings``, flattened (nested objects become dotted keys,
  lists and other values their compact JSON), redacted again, and cut to MLflow's parameter
  length limit (:data:`TRUNCATED` marks a cut value);
* **tags**: ``llmeval.run_id``, ``llmeval.git.commit`` / ``llmeval.git.dirty`` (and MLflow's own
  ``mlflow.source.git.commit``), ``llmeval.plugin_version``, the runner, dataset, tool registry
  and fixture fingerprints of ``report.json``; ``summary.md`` becomes the run's description;
* **metrics** (step 0, at the run's end time): every ``int``/``float`` leaf of ``report.json``
  ``totals`` as ``totals.<path>`` and of ``suites.<suite>`` as ``<suite>.<path>`` (the dotted
  paths gates use: ``golden.categories.math.pass_rate``); ``bool``, ``null``, lists and
  non-finite numbers are not metrics. Gates add ``gates.passed`` and, per gate,
  ``gates.<suite>.<metric>_<op>_<threshold>.value`` / ``.passed`` (``*`` is ``totals``, ops are
  ``ge le gt lt eq``). Names keep ``A-Z a-z 0-9 _ - . space``; any other character becomes
  ``_``, and a name that would then collide with another gets a short hash suffix;
* **artifacts**: every file of the run dir, at the artifact root.

Secrets: the run dir's files went through the session's redactor already. Params, tags and
error messages are redacted again (the manifest's ``--llmeval-redact-pattern`` patterns and the
values of its secret environment variables), and nothing is sent when a secret's value is found
in a run dir file: that is the leak check, done before the upload rather than after it.

A local file store (``file:///abs/path`` or a plain folder) is allowed for the call even though
MLflow 3 refuses one unless ``MLFLOW_ALLOW_FILE_STORE=true``: the user named it explicitly, and
``mlflow-skinny`` (the extra) has no SQL store to offer instead. Set that variable to ``false``
to keep MLflow's refusal. Retries and timeouts of a tracking server are MLflow's own
(``MLFLOW_HTTP_REQUEST_MAX_RETRIES``, ``MLFLOW_HTTP_REQUEST_TIMEOUT``), and so is its usage
telemetry (off with ``MLFLOW_DISABLE_TELEMETRY=true`` or ``DO_NOT_TRACK=true``, and in CI).

Re-log a run dir by hand (after a failed upload, say)::

    python -m pytest_llmeval.report.mlflow_log RUN_DIR TRACKING_URI [--experiment NAME]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import re
import shlex
import sys
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pytest_llmeval.core.errors import LLMEvalError, RunDirError
from pytest_llmeval.core.redact import MASK, Redactor, find_leaks, public_url, secret_values
from pytest_llmeval.rundir.files import read_json
from pytest_llmeval.rundir.layout import RunLayout

INSTALL_HINT = "pip install 'pytest-llmeval-harness[mlflow]'"
RELOG_COMMAND = "python -m pytest_llmeval.report.mlflow_log"
DEFAULT_EXPERIMENT = "pytest-llmeval"
TRUNCATED = "...[truncated]"
"""Appended to a parameter or tag value cut to MLflow's length limit."""

PARAM_VALUE_LIMIT = 6000
"""MLflow's parameter value limit (``MAX_PARAM_VAL_LENGTH``) when the client does not say."""
TAG_VALUE_LIMIT = 8000
"""MLflow's tag value limit (``MAX_TAG_VAL_LENGTH``) when the client does not say."""
KEY_LIMIT = 250
"""MLflow's parameter, metric and tag name limit (``MAX_ENTITY_KEY_LENGTH``)."""
PARAMS_PER_BATCH = 100
METRICS_PER_BATCH = 1000

GATE_OPS = {">=": "ge", "<=": "le", ">": "gt", "<": "lt", "==": "eq"}
FINGERPRINTS = ("runner_fingerprint", "dataset_sha256", "tool_registry_sha256", "fixtures_sha256")

_BAD_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.\- ]")


class MlflowLogError(LLMEvalError):
    """The run could not be logged to MLflow (the run dir itself is untouched)."""


def log_run(
    run_dir: Path,
    tracking_uri: str,
    experiment: str = DEFAULT_EXPERIMENT,
    *,
    secrets: Iterable[str] | None = None,
) -> str:
    """Log the finished run in ``run_dir`` to MLflow; returns the MLflow run id.

    ``secrets`` are the literal secret values to keep out of MLflow (the session passes its
    own); without them they are read from the environment variables the manifest names.
    Raises :class:`MlflowLogError` for anything that goes wrong, MLflow missing included.
    """
    run_dir = Path(run_dir)
    layout = RunLayout(run_dir)
    manifest = _read_object(layout.manifest)
    report = _read_object(layout.report)
    settings = manifest.get("settings")
    settings = settings if isinstance(settings, dict) else {}
    if secrets is None:
        secret_list = manifest_secrets(settings)
    else:
        secret_list = sorted({s for s in secrets if s})
    redactor = _redactor(settings, secret_list)
    leaks = find_leaks([run_dir], secret_list)
    if leaks:
        names = ", ".join(str(p.relative_to(run_dir)) for p in leaks)
        raise MlflowLogError(
            f"not logging {run_dir} to MLflow: a configured secret's value is in {names}"
        )
    mlflow = _import_mlflow()
    where = public_url(tracking_uri)
    params = settings_params(settings, redactor, _limit("MAX_PARAM_VAL_LENGTH"))
    tags = run_tags(manifest, report, run_dir, redactor, _limit("MAX_TAG_VAL_LENGTH"))
    metrics = report_metrics(report)
    started = _millis(manifest.get("started"))
    finished = _millis(manifest.get("finished"))
    run_id: str | None = None
    client: Any = None
    try:
        with _mlflow_environment(tracking_uri), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # MLflow's own deprecation notices are not ours
            client = mlflow.tracking.MlflowClient(tracking_uri=tracking_uri)
            experiment_id = _experiment_id(client, experiment)
            run = client.create_run(
                experiment_id,
                start_time=started,
                tags=tags,
                run_name=str(manifest.get("run_id") or run_dir.name),
            )
            run_id = str(run.info.run_id)
            _log_batches(client, run_id, params, metrics, finished)
            client.log_artifacts(run_id, str(run_dir))
            client.set_terminated(run_id, status="FINISHED", end_time=finished)
    except MlflowLogError:
        raise
    except Exception as exc:
        if run_id is not None and client is not None:
            with contextlib.suppress(Exception):
                client.set_terminated(run_id, status="FAILED", end_time=finished)
        what = f"MLflow run {run_id}" if run_id else "the run"
        message = redactor.text(f"{type(exc).__name__}: {exc}")
        raise MlflowLogError(
            f"could not log {what} to MLflow at {where}: {_first_line(message)} "
            f"(the run dir is complete; log it again with: {RELOG_COMMAND} "
            f"{shlex.quote(str(run_dir))} TRACKING_URI --experiment {shlex.quote(experiment)})"
        ) from None
    return run_id


# -- what is logged (pure: no MLflow needed) ----------------------------------------------------


def settings_params(
    settings: Mapping[str, Any], redactor: Redactor | None = None, limit: int = PARAM_VALUE_LIMIT
) -> dict[str, str]:
    """The settings snapshot as MLflow params: flattened, JSON-safe, redacted, cut to size."""
    redactor = redactor or Redactor()
    if not settings:
        return {}
    flat: list[tuple[tuple[str, ...], Any]] = []

    def walk(value: Any, path: tuple[str, ...]) -> None:
        if isinstance(value, Mapping) and value:
            for key, item in sorted(value.items(), key=lambda kv: str(kv[0])):
                walk(item, (*path, str(key)))
        else:
            flat.append((path, value))

    walk(redactor.value(dict(settings)), ())
    names = _Names()
    params: dict[str, str] = {}
    for path, value in flat:
        text = value if isinstance(value, str) else _compact_json(value)
        params[names.name(path)] = _cut(redactor.text(text), limit)
    return params


def run_tags(
    manifest: Mapping[str, Any],
    report: Mapping[str, Any],
    run_dir: Path | None = None,
    redactor: Redactor | None = None,
    limit: int = TAG_VALUE_LIMIT,
) -> dict[str, str]:
    """Run id, provenance, versions and fingerprints as MLflow tags (``None`` values left out)."""
    redactor = redactor or Redactor()
    settings = manifest.get("settings")
    settings = settings if isinstance(settings, Mapping) else {}
    git = manifest.get("git")
    git = git if isinstance(git, Mapping) else {}
    dirty = git.get("dirty")
    raw: dict[str, Any] = {
        "llmeval.run_id": manifest.get("run_id"),
        "llmeval.plugin_version": manifest.get("plugin_version") or report.get("plugin_version"),
        "llmeval.report_version": report.get("report_version"),
        "llmeval.python": manifest.get("python"),
        "llmeval.pytest": manifest.get("pytest"),
        "llmeval.attempt": manifest.get("attempt"),
        "llmeval.runner": settings.get("runner"),
        "llmeval.model": settings.get("model"),
        "llmeval.git.commit": git.get("commit"),
        "llmeval.git.dirty": None if dirty is None else str(bool(dirty)).lower(),
        "mlflow.source.git.commit": git.get("commit"),
    }
    for name in FINGERPRINTS:
        raw[f"llmeval.{name}"] = report.get(name)
    if run_dir is not None and (run_dir / "summary.md").is_file():
        raw["mlflow.note.content"] = (run_dir / "summary.md").read_text(encoding="utf-8")
    return {
        key: _cut(redactor.text(value if isinstance(value, str) else _compact_json(value)), limit)
        for key, value in raw.items()
        if value is not None
    }


def report_metrics(report: Mapping[str, Any]) -> dict[str, float]:
    """Every numeric leaf of the totals and the suites, and the gates, by MLflow metric name."""
    names = _Names()
    metrics: dict[str, float] = {}

    def add(path: tuple[str, ...], value: Any) -> None:
        if _is_metric(value):
            metrics[names.name(path)] = float(value)

    def walk(value: Any, path: tuple[str, ...]) -> None:
        if isinstance(value, Mapping):
            for key, item in sorted(value.items(), key=lambda kv: str(kv[0])):
                walk(item, (*path, str(key)))
        else:
            add(path, value)

    walk(report.get("totals"), ("totals",))
    suites = report.get("suites")
    if isinstance(suites, Mapping):
        for suite, body in sorted(suites.items()):
            walk(body, (str(suite),))
    gates = report.get("gates")
    if isinstance(gates, Mapping):
        if isinstance(gates.get("passed"), bool):
            add(("gates", "passed"), float(gates["passed"]))
        for result in gates.get("results") or []:
            gate = result.get("gate") if isinstance(result, Mapping) else None
            if not isinstance(gate, Mapping):
                continue
            base = ("gates", *_gate_path(gate))
            add((*base, "value"), result.get("value"))
            if isinstance(result.get("passed"), bool):
                add((*base, "passed"), float(result["passed"]))
    return metrics


def manifest_secrets(settings: Mapping[str, Any]) -> list[str]:
    """The secret values of the environment variables a run's settings name (best effort)."""
    names = [str(n) for n in settings.get("secret_env") or []]
    api_key_env = settings.get("api_key_env")
    if isinstance(api_key_env, str) and api_key_env and api_key_env != MASK:
        names.append(api_key_env)
    else:
        names.append("OPENAI_API_KEY")  # the default; the manifest masks the variable's name
    for provider in settings.get("providers") or []:
        if isinstance(provider, Mapping) and provider.get("key_env"):
            names.append(str(provider["key_env"]))
    return secret_values(sorted(set(names)))


def metric_name(path: Sequence[str]) -> str:
    """``path`` as an MLflow name: dotted, other characters ``_``, no leading dot, <= 250."""
    name = ".".join(_BAD_NAME_CHARS.sub("_", part) for part in path)
    if not name or name.startswith("."):
        name = "_" + name
    if len(name) > KEY_LIMIT:
        name = name[: KEY_LIMIT - 13] + "_" + _short_hash(path)
    return name


# -- helpers ------------------------------------------------------------------------------------


class _Names:
    """Unique MLflow names for paths: a sanitized name taken by another path gets a hash."""

    def __init__(self) -> None:
        self._owner: dict[str, tuple[str, ...]] = {}

    def name(self, path: Sequence[str]) -> str:
        key = tuple(path)
        name = metric_name(key)
        if self._owner.setdefault(name, key) != key:
            name = metric_name(key)[: KEY_LIMIT - 13] + "_" + _short_hash(key)
            self._owner.setdefault(name, key)
        return name


def _gate_path(gate: Mapping[str, Any]) -> tuple[str, ...]:
    suite = str(gate.get("suite") or "")
    op = GATE_OPS.get(str(gate.get("op")), "op")
    threshold = gate.get("threshold")
    number = (f"{threshold:g}" if isinstance(threshold, (int, float)) else str(threshold)).replace(
        "+", ""
    )
    return ("totals" if suite == "*" else suite, f"{gate.get('metric')}_{op}_{number}")


def _is_metric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _short_hash(path: Sequence[str]) -> str:
    return hashlib.sha256("\x00".join(path).encode("utf-8")).hexdigest()[:12]


def _compact_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - len(TRUNCATED)] + TRUNCATED


def _first_line(text: str, limit: int = 1000) -> str:
    line = text.strip().splitlines()[0] if text.strip() else text
    return _cut(line, limit)


def _redactor(settings: Mapping[str, Any], secrets: Sequence[str]) -> Redactor:
    patterns: list[str] = []
    for pattern in settings.get("redact_pattern") or []:
        try:
            re.compile(str(pattern))
        except re.error:
            continue
        patterns.append(str(pattern))
    return Redactor(patterns, secrets)


def _read_object(path: Path) -> dict[str, Any]:
    try:
        value = read_json(path)
    except RunDirError as exc:
        raise MlflowLogError(str(exc)) from None
    if value is None:
        raise MlflowLogError(f"{path.parent}: no {path.name}; is this a finished run dir?")
    if not isinstance(value, dict):
        raise MlflowLogError(f"{path}: expected a JSON object")
    return value


def _millis(stamp: Any) -> int | None:
    if not isinstance(stamp, str):
        return None
    try:
        return int(datetime.fromisoformat(stamp).timestamp() * 1000)
    except ValueError:
        return None


def _import_mlflow() -> Any:
    try:
        import mlflow
        import mlflow.tracking
    except ImportError as exc:
        raise MlflowLogError(
            f"--llmeval-mlflow needs MLflow, which is not installed ({exc}): {INSTALL_HINT}"
        ) from None
    return mlflow


def _limit(name: str) -> int:
    default = PARAM_VALUE_LIMIT if "PARAM" in name else TAG_VALUE_LIMIT
    try:
        from mlflow.utils import validation
    except ImportError:
        return default
    value = getattr(validation, name, default)
    return value if isinstance(value, int) and value > len(TRUNCATED) else default


def _is_local_store(tracking_uri: str) -> bool:
    scheme = urlsplit(tracking_uri).scheme
    return scheme == "file" or scheme == "" or (len(scheme) == 1 and os.name == "nt")


@contextlib.contextmanager
def _mlflow_environment(tracking_uri: str) -> Iterator[None]:
    """Allow the file store the user named, for this call only (unless they said otherwise)."""
    added: list[str] = []
    if _is_local_store(tracking_uri) and "MLFLOW_ALLOW_FILE_STORE" not in os.environ:
        os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
        added.append("MLFLOW_ALLOW_FILE_STORE")
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def _experiment_id(client: Any, name: str) -> str:
    from mlflow.exceptions import MlflowException

    found = client.get_experiment_by_name(name)
    if found is None:
        try:
            return str(client.create_experiment(name))
        except MlflowException:
            found = client.get_experiment_by_name(name)  # created meanwhile by another job
            if found is None:
                raise
    if getattr(found, "lifecycle_stage", "active") != "active":
        raise MlflowLogError(
            f"MLflow experiment {name!r} is deleted; restore it or choose another name with "
            "--llmeval-mlflow-experiment"
        )
    return str(found.experiment_id)


def _log_batches(
    client: Any,
    run_id: str,
    params: Mapping[str, str],
    metrics: Mapping[str, float],
    timestamp: int | None,
) -> None:
    from mlflow.entities import Metric, Param

    stamp = timestamp if timestamp is not None else 0
    param_rows = [Param(key, value) for key, value in sorted(params.items())]
    for start in range(0, len(param_rows), PARAMS_PER_BATCH):
        client.log_batch(run_id, params=param_rows[start : start + PARAMS_PER_BATCH])
    metric_rows = [Metric(key, value, stamp, 0) for key, value in sorted(metrics.items())]
    for start in range(0, len(metric_rows), METRICS_PER_BATCH):
        client.log_batch(run_id, metrics=metric_rows[start : start + METRICS_PER_BATCH])


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pytest_llmeval.report.mlflow_log RUN_DIR TRACKING_URI [--experiment NAME]``."""
    parser = argparse.ArgumentParser(
        prog=RELOG_COMMAND,
        description="Log a finished pytest-llmeval-harness run dir to MLflow.",
    )
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("tracking_uri")
    parser.add_argument("--experiment", default=DEFAULT_EXPERIMENT)
    args = parser.parse_args(argv)
    try:
        run_id = log_run(args.run_dir, args.tracking_uri, args.experiment)
    except MlflowLogError as exc:
        print(f"llmeval: {exc}", file=sys.stderr)
        return 1
    print(f"llmeval: MLflow run {run_id} in experiment {args.experiment!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
