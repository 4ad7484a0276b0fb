"""Why a resume is refused: the one-line reasons, and which earlier results belong to files
that are gone. A resume that keeps results nobody can trace back to a collected file could
count a renamed file's cases twice, or keep cases whose manifest's gates no longer judge them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "cases_gone",
    "files_gone",
    "not_collected",
    "other_dataset",
    "other_runner",
    "other_scoring",
    "rows_gone",
]


def not_collected(
    finished: Mapping[str, Any], collected: Collection[str] | None, rootdir: Path
) -> dict[str, int]:
    """The files (the part of a node id before ``::``) of the earlier final results whose
    case is not collected now and whose file is gone from ``rootdir`` (renamed, moved or
    deleted), each with how many. A file that is still there but not collected (a resume
    given fewer paths, ``--lf``) keeps its results, and its manifest's gates still judge them."""
    if collected is None:
        return {}
    gone: dict[str, int] = {}
    for nodeid in finished:
        if nodeid not in collected:
            where = nodeid.split("::", 1)[0]
            if not (rootdir / where).is_file():
                gone[where] = gone.get(where, 0) + 1
    return gone


def files_gone(run_dir: Path, gone: Mapping[str, int]) -> str:
    names = sorted(gone)
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return (
        f"--llmeval-resume {run_dir}: {sum(gone.values())} of its finished cases belong to "
        f"files or manifests not collected now ({shown}: renamed, moved or deleted?); resume "
        "with the same files, or add --llmeval-resume-allow-mismatch to keep those results "
        "anyway"
    )


def rows_gone(finished: Mapping[str, Any], collected: Collection[str] | None) -> list[str]:
    """The node ids of the earlier final results whose file is collected now without them:
    a row deleted, or its id renamed. Counted, such a result would judge a case that no
    longer exists (and a renamed one twice)."""
    if collected is None:
        return []
    files = {nodeid.split("::", 1)[0] for nodeid in collected}
    return sorted(n for n in finished if n not in collected and n.split("::", 1)[0] in files)


def cases_gone(run_dir: Path, nodeids: Sequence[str]) -> str:
    shown = ", ".join(nodeids[:3]) + (f" and {len(nodeids) - 3} more" if len(nodeids) > 3 else "")
    return (
        f"--llmeval-resume {run_dir}: {len(nodeids)} of its finished cases are no longer in "
        f"their files ({shown}: a row deleted, or its id changed?); resume with the same "
        "data, or add --llmeval-resume-allow-mismatch to keep those results anyway"
    )


def other_dataset(run_dir: Path, finished: int, changed: int) -> str:
    flag = "--llmeval-resume"
    if changed:
        what = f"every one of its {changed} finished cases collected again has changed"
    else:
        what = f"none of its {finished} finished cases was collected"
    return (
        f"{flag} {run_dir}: made from another dataset ({what}); run from the same folder "
        f"with the same data, or add --llmeval-resume-allow-mismatch to run them again here"
    )


def other_scoring(run_dir: Path, changed: int) -> str:
    return (
        f"--llmeval-resume {run_dir}: the scoring configuration changed for every one of its "
        f"{changed} finished cases collected again (a manifest's thresholds or options, "
        "--llmeval-repeats, --llmeval-repeat-rule, the judge or embedder settings, "
        "--llmeval-integration-mode, --llmeval-max-turns); resume with the same settings, or "
        "add --llmeval-resume-allow-mismatch to judge them again here"
    )


def other_runner(run_dir: Path, earlier: Collection[str], now: str) -> str:
    return (
        f"--llmeval-resume {run_dir}: made by another runner (fingerprint "
        f"{', '.join(f[:12] for f in sorted(earlier))}, now {now[:12]}); resume with "
        "the same runner settings, or add --llmeval-resume-allow-mismatch to keep its "
        "results anyway"
    )
