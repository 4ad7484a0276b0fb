"""Offline commands on run dirs: ``python -m pytest_llmeval summarize RUN_DIR``, ``merge OUT_DIR
RUN_DIR...`` and ``validate-sharding --shards N [pytest args...]`` (see
``commands/shards.py``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

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
    args = list(sys.argv[1:] if argv is None else argv)
    args, pytest_args = shard_commands.split_pytest_args(args)
    options = parser.parse_args(args)
    if options.command in shard_commands.COMMANDS:
        return shard_commands.run(options, pytest_args)
    try:
        done = summarize(options.run_dir)
    except (LLMEvalError, OSError) as exc:
        print(f"pytest_llmeval summarize: {exc}", file=sys.stderr)
        return 2
    for line in console.summary_lines(done.report.dump()):
        print(line)
    for line in console.verdict_lines(done.verdict):
        print(line)
    print(f"wrote {options.run_dir}/report.json and summary.md")
    return done.exit_code  # exits as its verdict says: CI may gate on it


if __name__ == "__main__":
    sys.exit(main())
