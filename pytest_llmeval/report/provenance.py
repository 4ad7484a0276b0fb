"""Where a run came from: the git commit and dirty flag, and a filtered environment.

The environment is an allow-list: this plugin's and pytest's own variables, a few that change
numerics, and the CI variables that say which commit, branch and pipeline ran (GitHub Actions,
GitLab CI and the generic ``CI``). A CI system also exports job tokens, registry passwords and
JWTs under the same prefixes (``CI_JOB_TOKEN``), so CI variables are named one by one, never
by prefix; and the value of any recorded variable whose name says secret is masked.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from pytest_llmeval.core.redact import MASK, is_secret_env_name

ENV_PREFIXES = ("PYTEST_", "LLMEVAL")
"""Variables of pytest and of this plugin (their secret-named ones are masked)."""
CI_NAMES = (
    "CI",
    "GITHUB_ACTIONS",
    "GITHUB_SHA",
    "GITHUB_REF",
    "GITHUB_REF_NAME",
    "GITHUB_HEAD_REF",
    "GITHUB_BASE_REF",
    "GITHUB_REPOSITORY",
    "GITHUB_WORKFLOW",
    "GITHUB_JOB",
    "GITHUB_EVENT_NAME",
    "GITHUB_RUN_ID",
    "GITHUB_RUN_NUMBER",
    "GITHUB_RUN_ATTEMPT",
    "GITLAB_CI",
    "CI_COMMIT_SHA",
    "CI_COMMIT_REF_NAME",
    "CI_COMMIT_BRANCH",
    "CI_COMMIT_TAG",
    "CI_MERGE_REQUEST_IID",
    "CI_PIPELINE_ID",
    "CI_PIPELINE_IID",
    "CI_PIPELINE_SOURCE",
    "CI_JOB_ID",
    "CI_JOB_NAME",
    "CI_PROJECT_PATH",
)
"""CI provenance: which commit, branch, pipeline and job ran (never a token)."""
ENV_NAMES = (
    *CI_NAMES,
    "PYTHONHASHSEED",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "CUDA_VISIBLE_DEVICES",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "TOKENIZERS_PARALLELISM",
)
"""Only these variables (and :data:`ENV_PREFIXES`) are recorded: an allowlist, so no key
slips in."""


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
    """The allowlisted environment variables, sorted by name; a secret-named one (a
    ``PYTEST_LLMEVAL_…_TOKEN``) is listed with its value masked."""
    env = os.environ if environ is None else environ
    return {
        name: MASK if is_secret_env_name(name) else value
        for name, value in sorted(env.items())
        if name in ENV_NAMES or name.startswith(ENV_PREFIXES)
    }
