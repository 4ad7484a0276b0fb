"""Offline commands: ``python -m pytest_llmeval init [DIR] [--suite NAME]`` (start an eval
folder), and on run dirs ``summarize RUN_DIR``, ``merge OUT_DIR RUN_DIR...``,
``validate-sharding --shards N [pytest args...]``, ``runs [ROOT]`` (the run history) and
``compare RUN_A RUN_B [RUN_C ...]`` (runs side by side). Each lives in ``commands/``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_llmeval.commands import compare as compare_command
from pytest_llmeval.commands import init as init_command
from pytest_llmeval.commands import runs as runs_command
from pytest_llmeval.commands import shards as shard_commands
from pytest_llmeval.commands.summarize import summarize
from pytest_llmeval.core.errors import LLMEvalError
from pytest_llmeval.report import console


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_llmeval")
    commands = parser.add_subparsers(dest="command", required=True)
    cmd = commands.add_parser("summarize", help="rebuild a run dir's reports from its results")
    cmd.add_argument("run_dir", type=Path, help="the run dir")
    shard_commands.add_parsers(commands)
    init_command.add_parser(commands)
    runs_command.add_parser(commands)
    compare_command.add_parser(commands)
    args = list(sys.argv[1:] if argv is None else argv)
    args, pytest_args = shard_commands.split_pytest_args(args)
    options = parser.parse_args(args)
    if options.command == "init":
        return init_command.run(options)
    if options.command in shard_commands.COMMANDS:
        return shard_commands.run(options, pytest_args)
    if options.command == "runs":
        return runs_command.main(options.root)  # 0 listed, 1 a run dir unreadable, 2 no root
    if options.command == "compare":
        return compare_command.run(options)
    try:
        done = summarize(options.run_dir)
    except (LLMEvalError, OSError) as exc:
        print(f"pytest_llmeval summarize: {exc}", file=sys.stderr)
        return 2
    for line in console.summary_lines(done.report):
        print(line)
    for line in console.verdict_lines(done.verdict):
        print(line)
    print(f"wrote {options.run_dir}/report.json and summary.md")
    return done.exit_code  # exits as its verdict says: CI may gate on it


def run(argv: Sequence[str] | None = None) -> int:
    """:func:`main`, quiet when stdout is closed early (``... runs ROOT | head -1``): the
    Python docs' recipe for SIGPIPE, stdout pointed at devnull so the interpreter's final
    flush cannot fail again, exit 1."""
    try:
        code = main(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    return code


if __name__ == "__main__":
    sys.exit(run())
