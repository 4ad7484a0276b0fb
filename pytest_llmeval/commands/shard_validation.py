"""Checking that a sharded run gives what the unsharded run gives (sharding determinism).

``python -m pytest_llmeval validate-sharding --shards N [pytest args...]`` runs the suite once
unsharded and once per shard (``python -m pytest ... --llmeval-shard I/N``, each a subprocess
with ``PYTHONHASHSEED=0``, ``OMP_NUM_THREADS=1`` and ``MKL_NUM_THREADS=1``), merges the shard run
dirs (:mod:`pytest_llmeval.commands.merge`), compares the merged run with the unsharded one
(:func:`validate`) and writes the validation report (``sharding_validation.json``)::

    {"ok": true, "num_shards": 4, "dataset_sha256": "...", "runner_fingerprint": "...",
     "model_fingerprint": null, "per_example_mismatches": 0, "mismatched_cases": [],
     "metric_diffs": {}, "shard_sizes": [6, 5, 7, 6], "duplicates": [], "missing": [],
     "fingerprints_match": true, "coverage_ok": true, "metrics_match": true, "gates_ok": true,
     ...}

The rules:

* **per example**: each case of the unsharded run against the same node id in the merge, each
  reduced by :func:`normalize_result` to its outcome, scores, response and tool calls (name,
  arguments normalised as the broker does, with sorted keys, success); timings, usage and
  messages are not compared. Scores use the float tolerance below.
* **metrics**: every leaf of ``report.json``'s ``totals`` and ``suites``; two floats match when
  ``|a - b| <= max(atol, rtol * max(|a|, |b|))`` (``--atol``/``--rtol``, default 1e-6), ints,
  counts and everything else must be equal. A difference is listed under its dotted path.
* **fingerprints**: the unsharded run and every shard must agree on the settings that decide
  results and on their report fingerprints
  (:func:`pytest_llmeval.commands.shard_check.disagreements`), and the merged report must
  carry the unsharded run's fingerprints.
* **coverage**: every shard ``0 .. N-1`` once; the union of the shards' cases equals the
  unsharded run's cases (``missing``, ``extra``), and no case is in two shards (``duplicates``).
* **gates**: the merged gate decision matches the unsharded one, gate by gate (pass/fail and
  value). The validator checks determinism, not quality: a suite whose gate fails the same way
  in both runs is ``ok``; ``gates_passed`` says whether the gates passed.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pytest_llmeval.commands.merge import Merged, MergeError, combine, load_run, write_merged
from pytest_llmeval.commands.shard_check import FINGERPRINT_KEYS, check_shards, disagreements
from pytest_llmeval.core.errors import LLMEvalError
from pytest_llmeval.core.models import CaseResult
from pytest_llmeval.rundir.files import is_run_dir, write_json
from pytest_llmeval.rundir.owned import remove_owned, sort_files
from pytest_llmeval.rundir.read import RunRecord
from pytest_llmeval.tools.broker import normalize_args

DETERMINISTIC_ENV = {"PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
"""Set for every pytest subprocess the validator starts."""

RESERVED_ARGS = ("--llmeval-run-dir", "--llmeval-shard", "--llmeval-resume")
"""pytest options the validator sets itself."""

NORMAL_EXIT_CODES = (0, 1, 5)
"""pytest exit codes of a run that finished: passed, some failed, nothing collected."""

DEFAULT_TOLERANCE = 1e-6


# --------------------------------------------------------------------------------------------
# comparing


def normalize_result(result: CaseResult) -> dict[str, Any]:
    """What must be the same for a case in the unsharded and the merged run."""
    return {
        "outcome": result.outcome,
        "scores": dict(sorted(result.scores.items())),
        "response": result.response,
        "tool_calls": [
            {
                "name": call.name,
                "arguments": _sorted(normalize_args(call.name, call.params)),
                "arguments_error": call.arguments_error,
                "success": call.success,
            }
            for call in result.tool_calls
        ],
    }


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _sorted(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def close(a: float, b: float, atol: float, rtol: float) -> bool:
    """``|a - b| <= max(atol, rtol * max(|a|, |b|))``; NaN equals NaN."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= max(atol, rtol * max(abs(a), abs(b)))


_ABSENT = "<absent>"


def compare_values(
    a: Any, b: Any, atol: float, rtol: float, path: str = ""
) -> dict[str, dict[str, Any]]:
    """Every leaf where ``a`` and ``b`` differ: ``{path: {"unsharded": x, "merged": y}}``.

    Floats (either side) compare with the dual tolerance; ints, booleans, strings and null
    exactly; dicts by key and lists by position (a length difference is one entry).
    """
    out: dict[str, dict[str, Any]] = {}
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in a or key not in b:
                out[sub] = {"unsharded": a.get(key, _ABSENT), "merged": b.get(key, _ABSENT)}
            else:
                out.update(compare_values(a[key], b[key], atol, rtol, sub))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            out.update(compare_values(x, y, atol, rtol, f"{path}[{index}]"))
        return out
    numbers = (int, float)
    if (
        isinstance(a, numbers)
        and isinstance(b, numbers)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
        and (isinstance(a, float) or isinstance(b, float))
    ):
        if not close(float(a), float(b), atol, rtol):
            out[path] = {"unsharded": a, "merged": b}
        return out
    if type(a) is not type(b) or a != b:
        out[path] = {"unsharded": a, "merged": b}
    return out


def result_differences(a: CaseResult, b: CaseResult, atol: float, rtol: float) -> list[str]:
    """The normalised fields (``outcome``, ``scores.<name>``, ``tool_calls`` ...) that differ."""
    diffs = compare_values(normalize_result(a), normalize_result(b), atol, rtol)
    return sorted({key.split("[", 1)[0] if key.startswith("tool_calls") else key for key in diffs})


def _metrics(report: dict[str, Any]) -> dict[str, Any]:
    return {"totals": report.get("totals"), "suites": report.get("suites")}


def _gate_entries(report: dict[str, Any]) -> dict[str, tuple[bool, Any]]:
    rows = (report.get("gates") or {}).get("results") or []
    return {row["gate"]["name"]: (bool(row["passed"]), row.get("value")) for row in rows}


def model_fingerprint(report: dict[str, Any]) -> str | None:
    """The model hash in the fingerprint of the report's runner, if the runner has one."""
    runner = (report.get("runners") or {}).get(report.get("runner_fingerprint") or "")
    if isinstance(report.get("model_fingerprint"), str):
        return str(report["model_fingerprint"])
    if not isinstance(runner, dict):
        return None
    for key in ("model_sha256", "model_fingerprint", "model_hash"):
        if isinstance(runner.get(key), str):
            return str(runner[key])
    return None


# --------------------------------------------------------------------------------------------
# validating run dirs


def validate(
    unsharded: Path,
    shard_dirs: Sequence[Path],
    *,
    num_shards: int,
    merged_dir: Path | None = None,
    atol: float = DEFAULT_TOLERANCE,
    rtol: float = DEFAULT_TOLERANCE,
) -> dict[str, Any]:
    """Compare the unsharded run dir with the merge of ``shard_dirs`` (N = ``num_shards``).

    Returns the validation report. The merged run dir is written to ``merged_dir`` when it is
    given and the shards merge without problems; otherwise the merge is only built in memory
    (a case in two shards counts once) so that the comparison can still say what differs.
    """
    base = load_run(unsharded)
    base_body = base.report_body
    runs: list[RunRecord] = []
    problems: list[str] = []
    for path in shard_dirs:
        try:
            runs.append(load_run(path))
        except MergeError as exc:
            problems += exc.problems
    check = check_shards(runs, num_shards)
    problems += check.problems

    holders = {result.nodeid for run in runs for result in run.results}
    base_ids = {result.nodeid for result in base.results}
    missing = sorted(base_ids - holders)
    extra = sorted(holders - base_ids)
    sizes = [
        sum(len(run.results) for run in runs if run.shard == (index, num_shards))
        for index in range(num_shards)
    ]

    merged: Merged | None = None
    if runs:
        try:
            merged = combine(runs, merged_dir or unsharded.parent / "merged")
            if merged_dir is not None and not check.problems and not problems:
                write_merged(merged, runs, ["validate-sharding"])
        except LLMEvalError as exc:
            problems.append(f"merge: {exc}")
            merged = None

    mismatches: list[dict[str, Any]] = []
    metric_diffs: dict[str, dict[str, Any]] = {}
    fingerprint_diffs = disagreements([base, *runs])
    gate_diffs: list[str] = []
    if merged is not None:
        merged_body = merged.report.dump()
        by_node = {result.nodeid: result for result in merged.results}
        for result in base.results:
            other = by_node.get(result.nodeid)
            if other is not None:
                fields = result_differences(result, other, atol, rtol)
                if fields:
                    mismatches.append({"nodeid": result.nodeid, "fields": fields})
        metric_diffs = compare_values(_metrics(base_body), _metrics(merged_body), atol, rtol)
        for key in (*FINGERPRINT_KEYS, "runners"):
            if key in base_body and base_body.get(key) != merged_body.get(key):
                fingerprint_diffs.append(
                    f"{key} differs: {base_body.get(key)!r} unsharded, "
                    f"{merged_body.get(key)!r} merged"
                )
        base_gates = _gate_entries(base_body)
        merged_gates = _gate_entries(merged_body)
        for name in sorted(set(base_gates) | set(merged_gates)):
            want, got = base_gates.get(name), merged_gates.get(name)
            if want is None or got is None:
                where = "merged" if want is None else "unsharded"
                gate_diffs.append(f"gate {name} is only in the {where} run")
            elif want[0] != got[0] or compare_values(want[1], got[1], atol, rtol):
                gate_diffs.append(
                    f"gate {name}: {'passed' if want[0] else 'failed'} ({want[1]}) unsharded, "
                    f"{'passed' if got[0] else 'failed'} ({got[1]}) merged"
                )
        gate_diffs += [f"gate problem: {problem}" for problem in merged.verdict.gate_problems]
    else:
        gate_diffs.append("no merged run to compare gates with")

    coverage_ok = check.coverage_ok and not missing and not extra
    fingerprints_match = not fingerprint_diffs
    metrics_match = merged is not None and not metric_diffs
    gates_ok = not gate_diffs
    ok = (
        coverage_ok
        and fingerprints_match
        and metrics_match
        and gates_ok
        and not mismatches
        and not problems
    )
    return {
        "ok": ok,
        "num_shards": num_shards,
        "dataset_sha256": base_body.get("dataset_sha256"),
        "runner_fingerprint": base_body.get("runner_fingerprint"),
        "model_fingerprint": model_fingerprint(base_body),
        "per_example_mismatches": len(mismatches),
        "mismatched_cases": [m["nodeid"] for m in mismatches],
        "mismatches": mismatches,
        "metric_diffs": metric_diffs,
        "shard_sizes": sizes,
        "num_cases": len(base_ids),
        "duplicates": sorted(check.duplicates),
        "missing": missing,
        "extra": extra,
        "missing_shards": check.missing_shards,
        "repeated_shards": check.repeated_shards,
        "fingerprints_match": fingerprints_match,
        "fingerprint_diffs": fingerprint_diffs,
        "coverage_ok": coverage_ok,
        "metrics_match": metrics_match,
        "gates_ok": gates_ok,
        "gate_diffs": gate_diffs,
        "gates_passed": merged.verdict.gates_passed if merged is not None else None,
        "merged_exit_code": merged.exit_code if merged is not None else None,
        "problems": problems,
        "atol": atol,
        "rtol": rtol,
        "unsharded_dir": str(unsharded),
        "shard_dirs": [str(path) for path in shard_dirs],
        "merged_dir": str(merged_dir) if merged_dir is not None else None,
    }


# --------------------------------------------------------------------------------------------
# running the suite


def run_validation(
    pytest_args: Sequence[str],
    *,
    shards: int,
    out: Path,
    output: Path | None = None,
    atol: float = DEFAULT_TOLERANCE,
    rtol: float = DEFAULT_TOLERANCE,
    jobs: int = 1,
    python: str = sys.executable,
) -> dict[str, Any]:
    """Run the suite unsharded and in ``shards`` shards under ``out``, validate, write the
    report to ``output`` (default ``out/sharding_validation.json``) and return it.

    ``out`` gets ``unsharded/``, ``shard-<I>-of-<N>/``, ``merged/`` and ``logs/<run>.log``
    (each run's output). ``jobs`` runs that many pytest processes at once. What an earlier
    validation left there is replaced by :func:`clear_outputs`, which removes only what it can
    tell is this tool's output.
    """
    if shards < 1:
        raise LLMEvalError(f"--shards must be 1 or more, got {shards}")
    for arg in pytest_args:
        if arg.split("=", 1)[0] in RESERVED_ARGS:
            raise LLMEvalError(f"{arg.split('=', 1)[0]} is set by validate-sharding itself")
    out = out.resolve()
    unsharded = out / "unsharded"
    shard_dirs = [out / f"shard-{index}-of-{shards}" for index in range(shards)]
    merged_dir, logs = out / "merged", out / "logs"
    clear_outputs([unsharded, *shard_dirs, merged_dir], logs)

    unset_ini = ["-o", "llmeval_shard="]  # an ini llmeval_shard must not shard the baseline
    runs: list[tuple[str, list[str]]] = [
        ("unsharded", [f"--llmeval-run-dir={unsharded}", *unset_ini])
    ] + [
        (path.name, [f"--llmeval-run-dir={path}", "--llmeval-shard", f"{index}/{shards}"])
        for index, path in enumerate(shard_dirs)
    ]
    env = {**os.environ, **DETERMINISTIC_ENV}
    env.pop("PYTEST_LLMEVAL_SHARD", None)  # nor the environment

    def run(name: str, extra: list[str]) -> int:
        command = [python, "-m", "pytest", *pytest_args, *extra]
        with (logs / f"{name}.log").open("w", encoding="utf-8") as log:
            log.write("$ " + " ".join(command) + "\n")
            log.flush()
            done = subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        return done.returncode

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        codes = list(pool.map(lambda r: run(*r), runs))
    exit_codes = dict(zip([name for name, _ in runs], codes, strict=True))
    failed_runs = [
        f"{name} exited {code} (see {logs / (name + '.log')})"
        for name, code in exit_codes.items()
        if code not in NORMAL_EXIT_CODES
    ]
    try:
        report = validate(
            unsharded,
            [path for path in shard_dirs if path.exists()],
            num_shards=shards,
            merged_dir=merged_dir,
            atol=atol,
            rtol=rtol,
        )
    except MergeError as exc:  # the unsharded run left no run dir
        report = {"ok": False, "num_shards": shards, "problems": exc.problems}
    report["problems"] = failed_runs + list(report.get("problems") or [])
    report["ok"] = bool(report["ok"]) and not failed_runs
    report["exit_codes"] = exit_codes
    report["pytest_args"] = list(pytest_args)
    report["environment"] = dict(DETERMINISTIC_ENV)
    write_json(output or out / "sharding_validation.json", report)
    return report


LOG_NAME = re.compile(r"(unsharded|shard-\d+-of-\d+)\.log")
"""The names of the logs :func:`run_validation` writes (one per pytest run)."""


def clear_outputs(run_dirs: Sequence[Path], logs: Path) -> None:
    """Make room for a validation's outputs, deleting nothing this tool did not make.

    ``--out .`` in a project is a natural call, and a ``logs/`` folder there is as likely the
    user's as ours, so nothing is ever removed by its name alone. An existing run dir is
    replaced only when it is a run dir (pytest-llmeval tags every one it writes; a run dir
    is output that the next run writes again), and then only the files its layout and
    manifest say the plugin wrote are removed (:mod:`pytest_llmeval.rundir.owned`): a user's
    file or folder put there stays; in ``logs/`` only the files named as this tool
    names its logs (``unsharded.log``, ``shard-<I>-of-<N>.log``) are removed, and the folder and
    anything else in it stay. Everything is checked before anything is removed: a refusal
    (``LLMEvalError``) leaves ``out`` as it was.
    """
    for path in run_dirs:
        nested = [p.parent for p in path.rglob(".llmeval-run")] if path.is_dir() else []
        if any(folder != path for folder in nested):
            raise LLMEvalError(
                f"{path}: holds another run dir ({next(f for f in nested if f != path)}); not "
                "replacing it (give --out a folder of its own)"
            )
        if path.exists() and not is_run_dir(path):
            raise LLMEvalError(
                f"{path}: exists and is not a run dir; not replacing it "
                "(give --out a folder of its own)"
            )
    if logs.exists() and not logs.is_dir():
        raise LLMEvalError(f"{logs}: exists and is not a folder; not replacing it")
    owned = [(path, sort_files(path)) for path in run_dirs if path.exists()]
    for path, files in owned:
        remove_owned(path, files)
    logs.mkdir(parents=True, exist_ok=True)
    for log in logs.iterdir():
        if LOG_NAME.fullmatch(log.name) and log.is_file():
            log.unlink()


def report_lines(report: dict[str, Any], output: Path) -> list[str]:
    """The validation verdict for the terminal."""
    flags = ("fingerprints_match", "coverage_ok", "metrics_match", "gates_ok")
    lines = [
        f"sharding validation: {'OK' if report.get('ok') else 'FAILED'} "
        f"({report.get('num_shards')} shards, sizes {report.get('shard_sizes')}; "
        + ", ".join(f"{flag}={report.get(flag)}" for flag in flags)
        + f", per_example_mismatches={report.get('per_example_mismatches')})"
    ]
    for key in ("missing", "duplicates", "extra", "mismatched_cases"):
        values = report.get(key) or []
        if values:
            shown = ", ".join(values[:20]) + (" ..." if len(values) > 20 else "")
            lines.append(f"  {key}: {shown}")
    for key in ("metric_diffs",):
        for path in list(report.get(key) or {})[:20]:
            lines.append(f"  metric differs: {path}: {report[key][path]}")
    for key in ("fingerprint_diffs", "gate_diffs", "problems"):
        for problem in (report.get(key) or [])[:20]:
            lines.append(f"  {problem}")
    lines.append(f"wrote {output}")
    return lines
