"""Inputs a hostile reviewer fed the plugin and its commands: run dirs with a manifest field of
the wrong type, a stdout closed early, files that are FIFOs, duplicate keys. Each is one line
naming what is wrong and a non-zero exit, never a traceback or a hang."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.commands.history import ROOT, command, echo_run, no_traceback

# -- a run dir's manifest.json with settings.shard of the wrong type ---------------------------


@pytest.mark.parametrize("shard", ['"xy"', "[1]", "5", '["a", "b"]', "[2, 2]"])
def test_a_run_dir_with_a_bad_shard_is_one_line_in_runs_and_compare(
    pytester: pytest.Pytester, shard: str
) -> None:
    good = echo_run(pytester, {"a": True})
    bad = echo_run(pytester, {"a": False})
    body = json.loads((bad / "manifest.json").read_text(encoding="utf-8"))
    body["settings"]["shard"] = json.loads(shard)
    (bad / "manifest.json").write_text(json.dumps(body), encoding="utf-8")

    done = command(pytester.path, "runs")
    no_traceback(done)
    assert done.returncode == 1
    assert "manifest.json: settings.shard: expected [K, N]" in done.stdout
    assert good.name in done.stdout

    done = command(pytester.path, "compare", str(good), str(bad))
    no_traceback(done)
    assert done.returncode != 0
    assert "settings.shard: expected [K, N]" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


# -- stdout closed early (| head -1) -----------------------------------------------------------


def test_a_closed_stdout_ends_every_command_quietly(pytester: pytest.Pytester) -> None:
    echo_run(pytester, {"a": True, "b": False})
    run_dir = sorted((pytester.path / ROOT).glob("2*"))[0]
    for args in (["runs"], ["compare", str(run_dir), str(run_dir)], ["summarize", str(run_dir)]):
        read, write = os.pipe()
        os.close(read)  # the reader went away before a line was written: every write fails
        try:
            done = subprocess.run(
                [sys.executable, "-m", "pytest_llmeval", *args],
                stdout=write,
                stderr=subprocess.PIPE,
                text=True,
                cwd=pytester.path,
                timeout=120,
            )
        finally:
            os.close(write)
        assert "Traceback" not in done.stderr, done.stderr
        assert "BrokenPipeError" not in done.stderr, done.stderr
        assert done.returncode != 0, args
