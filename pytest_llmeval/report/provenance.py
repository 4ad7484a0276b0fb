"""Where a run came from: the git commit and dirty flag, and a filtered environment."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

ENV_PREFIXES = ("PYTEST_", "LLMEVAL", "CI", "GITHUB_SHA", "GITHUB_REF", "GITHUB_RUN")
ENV_NAMES = (
    "PYTHONHASHSEED",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "CUDA_VISIBLE_DEVICES",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "TOKENIZERS_PARALLELISM",
)
"""Only these variables are recorded (an allowlist: nothing else, so no key slips in)."""


def git_state(path: Path) -> dict[str, Any]:
    """``{"commit", "dirty"}`` of the repository holding ``path``, or nulls outside one."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=path, capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return {"commit": None, "dirty": None}
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit.strip(), "dirty": bool(status and status.strip())}


def filtered_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The allowlisted environment variables, sorted by name."""
    env = os.environ if environ is None else environ
    return {
        name: value
        for name, value in sorted(env.items())
        if name in ENV_NAMES or name.startswith(ENV_PREFIXES)
    }
