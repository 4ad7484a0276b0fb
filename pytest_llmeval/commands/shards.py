"""The ``merge`` and ``validate-sharding`` subcommands of ``python -m pytest_llmeval``.

``merge OUT_DIR RUN_DIR...`` exits 0 (every case passed and every gate passed; with
``--llmeval-exit-on gates`` in the shards' settings, only the gates count), 1 otherwise, and 2
when it refuses (the problems are printed).

``validate-sharding --shards N [--out DIR] [--output PATH] [--atol A] [--rtol R] [--jobs J]
[pytest args...]``: its own options come first; the first other argument (or everything after
``--``) and the rest go to every ``python -m pytest`` run. Exits 0 when the report is ``ok``,
1 when not, 2 on a usage problem.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pytest_llmeval.commands.merge import MergeError, merge, merge_lines
from pytest_llmeval.commands.shard_validation import (
    DEFAULT_TOLERANCE,
    report_lines,
    run_validation,
)
from pytest_llmeval.core.errors import LLMEvalError

MERGE = "merge"
VALIDATE = "validate-sharding"
COMMANDS = (MERGE, VALIDATE)

_VALIDATE_OPTIONS = ("--shards", "--out", "--output", "--atol", "--rtol", "--jobs")


def add_parsers(commands: Any) -> None:
    """Add both subcommands to ``python -m pytest_llmeval``'s subparsers."""
    cmd = commands.add_parser(
        MERGE,
        help="join the run dirs of --llmeval-shard runs into one run dir and one verdict",
        description="Join shard run dirs into OUT_DIR; exit 0 when all cases and gates "
        "passed, 1 otherwise, 2 when the run dirs are not the shards of one run.",
    )
    cmd.add_argument("out_dir", type=Path, help="the merged run dir to write")
    cmd.add_argument("run_dirs", type=Path, nargs="+", help="the shard run dirs")
    cmd = commands.add_parser(
        VALIDATE,
        help="run the suite unsharded and in N shards and check the merge gives the same",
        description="Run 'python -m pytest [PYTEST_ARGS]' unsharded and once per shard, merge "
        "the shards and compare. The options below come first; the first other argument (or "
        "everything after --) and what follows are pytest arguments.",
    )
    cmd.add_argument("--shards", type=int, required=True, metavar="N", help="number of shards")
    cmd.add_argument(
        "--out",
        type=Path,
        default=Path(".llmeval/sharding-validation"),
        metavar="DIR",
        help="where the run dirs and logs go (default: .llmeval/sharding-validation)",
    )
    cmd.add_argument(
        "--output",
        type=Path,
        metavar="PATH",
        help="the validation report (default: DIR/sharding_validation.json)",
    )
    cmd.add_argument("--atol", type=float, default=DEFAULT_TOLERANCE, help="absolute tolerance")
    cmd.add_argument("--rtol", type=float, default=DEFAULT_TOLERANCE, help="relative tolerance")
    cmd.add_argument("--jobs", type=int, default=1, metavar="J", help="pytest runs at once")


def split_pytest_args(args: list[str]) -> tuple[list[str], list[str]]:
    """For ``validate-sharding``: (its own arguments, the pytest arguments)."""
    if not args or args[0] != VALIDATE:
        return args, []
    ours = [VALIDATE]
    index = 1
    while index < len(args):
        arg = args[index]
        if arg == "--":
            return ours, args[index + 1 :]
        name = arg.split("=", 1)[0]
        if name in ("-h", "--help"):
            ours.append(arg)
        elif name in _VALIDATE_OPTIONS:
            ours.append(arg)
            if "=" not in arg and index + 1 < len(args):
                index += 1
                ours.append(args[index])
        else:
            break
        index += 1
    return ours, args[index:]


def run(options: argparse.Namespace, pytest_args: list[str]) -> int:
    if options.command == MERGE:
        return _merge(options)
    return _validate(options, pytest_args)


def _merge(options: argparse.Namespace) -> int:
    invocation = ["python", "-m", "pytest_llmeval", *sys.argv[1:]]
    try:
        merged = merge(options.out_dir, options.run_dirs, invocation)
    except MergeError as exc:
        print("pytest_llmeval merge: refused:", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        return 2
    except (LLMEvalError, OSError) as exc:
        print(f"pytest_llmeval merge: {exc}", file=sys.stderr)
        return 2
    for line in merge_lines(merged, len(options.run_dirs)):
        print(line)
    return merged.exit_code


def _validate(options: argparse.Namespace, pytest_args: list[str]) -> int:
    output = options.output or options.out / "sharding_validation.json"
    try:
        report = run_validation(
            pytest_args,
            shards=options.shards,
            out=options.out,
            output=output,
            atol=options.atol,
            rtol=options.rtol,
            jobs=options.jobs,
        )
    except (LLMEvalError, OSError) as exc:
        print(f"pytest_llmeval validate-sharding: {exc}", file=sys.stderr)
        return 2
    for line in report_lines(report, output):
        print(line)
    return 0 if report.get("ok") else 1
