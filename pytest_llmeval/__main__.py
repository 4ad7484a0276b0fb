"""Offline commands on run dirs: ``python -m pytest_llmeval summarize RUN_DIR``, ``merge OUT_DIR
RUN_DIR...`` and ``validate-sharding --shards N [pytest args...]`` (see
``report/shard_commands.py``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_llmeval.errors import LLMEvalError
from pytest_llmeval.journal import read_results
from pytest_llmeval.models import CaseResult
from pytest_llmeval.report import console, shard_commands, verdict
from pytest_llmeval.report.gates import (
    Gate,
    evaluate_gates,
    gates_section,
    parse_gate,
    suite_gate_results,
)
from pytest_llmeval.report.redact import Redactor
from pytest_llmeval.report.run import RunWriter
from pytest_llmeval.settings import Settings
from pytest_llmeval.suites.base import SuiteContext, default_suites


def summarize(run_dir: Path) -> dict[str, Any]:
    """Rebuild report.json, summary.md and the results files of ``run_dir``.

    Results come from the journal when there is one (so a crashed run can be summarized),
    otherwise from ``results.jsonl``. The run's gates (its ``--llmeval-gate`` settings, its
    manifests' gates, and those of the old report) are evaluated again, the suites' own gates
    by their suites; the baseline comparison is made again (or, when the baseline file is gone,
    the old report's is kept).
    """
    manifest = _read_json(run_dir / "manifest.json", {})
    if "settings" not in manifest:
        raise LLMEvalError(f"{run_dir}: no manifest.json with settings; is this a run dir?")
    settings = Settings.model_validate(manifest["settings"])
    old_report = _read_json(run_dir / "report.json", {})
    journaled = read_results(run_dir)
    if journaled:
        results = [journaled[key][0] for key in sorted(journaled)]
        runners = {r.runner_fingerprint: fp for r, fp in journaled.values() if fp}
    else:
        rows = (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()
        results = sorted(
            (CaseResult.model_validate_json(row) for row in rows if row.strip()),
            key=lambda r: r.nodeid,
        )
        runners = dict(old_report.get("runners") or {})
    writer = RunWriter(
        run_dir,
        str(manifest.get("run_id") or run_dir.name),
        SuiteContext.from_settings(settings),
        default_suites(),
        Redactor(settings.redact_pattern),
    )
    report = writer.build(results, runners)
    gates = [parse_gate(text) for text in settings.gate]
    gates += verdict.manifest_gates(results, settings.rootdir)[0]
    old_gates = (old_report.get("gates") or {}).get("results") or []
    gates += [
        gate
        for gate in (Gate.model_validate(entry["gate"]) for entry in old_gates)
        if gate.source != "header"  # a suite's own gates are judged again below, by the suite
    ]
    results_of_gates = evaluate_gates(gates, report) + suite_gate_results(report)
    if results_of_gates:
        report["gates"] = gates_section(results_of_gates)
    compared, _refusal = verdict.compare_with_baseline(settings, report, results)
    if compared is not None:  # the session's --llmeval-baseline, compared again
        report["baseline"] = compared.model_dump(mode="json")
    elif "baseline" in old_report:  # the baseline file is gone: the session's comparison stands
        report["baseline"] = old_report["baseline"]
    writer.write(results, report, writer.suite_artifacts(results))
    return report


def _read_json(path: Path, default: Any) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default
    except ValueError as exc:
        raise LLMEvalError(f"{path}: not valid JSON: {exc}") from None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_llmeval")
    commands = parser.add_subparsers(dest="command", required=True)
    cmd = commands.add_parser("summarize", help="rebuild a run dir's reports from its results")
    cmd.add_argument("run_dir", type=Path, help="the run dir")
    shard_commands.add_parsers(commands)
    args = list(sys.argv[1:] if argv is None else argv)
    args, pytest_args = shard_commands.split_pytest_args(args)
    options = parser.parse_args(args)
    if options.command in shard_commands.COMMANDS:
        return shard_commands.run(options, pytest_args)
    try:
        report = summarize(options.run_dir)
    except (LLMEvalError, OSError) as exc:
        print(f"pytest_llmeval summarize: {exc}", file=sys.stderr)
        return 2
    for line in console.summary_lines(report):
        print(line)
    print(f"wrote {options.run_dir}/report.json and summary.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
