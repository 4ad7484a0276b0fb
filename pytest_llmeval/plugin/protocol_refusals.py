"""Other plugins' ways of running a test more than once, refused for eval cases: one line each.

An eval case is judged exactly once in a session; running it again is the plugin's own
``--llmeval-repeats``, which keeps every run, counts an errored one and flags a flaky case.
Three mechanisms of other plugins judge a case again and keep only one of the judgements:

* xdist's ``--dist each`` runs every test on every worker: each worker judges every case and
  the controller keeps whichever judgement arrives last, so a failure can vanish;
* pytest-rerunfailures (``--reruns``, ``--force-reruns``, its ``reruns`` ini key, a ``flaky``
  mark) and the ``flaky`` plugin (``--force-flaky``, a ``flaky`` mark) run a failed or errored
  test again and report the last attempt: a pass rate becomes best of N, an error vanishes.

Once collection found an eval case, an option that does so is one usage error (exit 4, before
any case; :func:`check`, called by :mod:`~pytest_llmeval.plugin.preflight`); a session of
plain tests keeps it. A ``flaky`` mark on an eval case, with a plugin loaded that reads it, is
that case's error in its setup (:func:`mark_refusal`): the mark is the user's, on one case.
Every other ``--dist`` mode gives each case to one worker, so each case is judged once.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pytest_llmeval.plugin import worker_wire as wire

__all__ = ["REPEATS_HINT", "check", "mark_refusal"]

REPEATS_HINT = (
    "use --llmeval-repeats K to run each case K times (every run is kept, an errored run "
    "fails the case, a case that both passes and fails is flagged flaky)"
)
"""The honest way to run a case more than once, named by every refusal."""

WORKING_DIST_MODES = "load (the default with -n), loadscope, loadfile, loadgroup or worksteal"
"""The ``--dist`` modes that give each case to one worker."""

RERUN_PLUGINS = ("rerunfailures", "flaky")
"""Plugins that read a ``flaky`` mark and run the test again."""

_refused_key = pytest.StashKey[dict[str, str]]()
"""Node ids of eval cases whose ``flaky`` mark is refused, with the line saying so."""


def check(config: pytest.Config, items: Sequence[pytest.Item]) -> None:
    """A :class:`pytest.UsageError` when an option would judge the selected eval cases
    (``items``, not empty) more than once; note those marked ``flaky`` for
    :func:`mark_refusal`."""
    if _dist(config) == "each":
        raise pytest.UsageError(
            "--dist each runs every eval case on every xdist worker and keeps one of the "
            f"judgements: use --dist {WORKING_DIST_MODES}; to judge a case more than once, "
            f"{REPEATS_HINT}"
        )
    option = _rerun_option(config)
    if option is not None:
        raise pytest.UsageError(
            f"{option} would run a failed or errored eval case again and report only its last "
            f"attempt (a pass rate of best of N): drop it for eval cases, and {REPEATS_HINT}"
        )
    if not any(config.pluginmanager.hasplugin(name) for name in RERUN_PLUGINS):
        return
    marked = [item.nodeid for item in items if item.get_closest_marker("flaky") is not None]
    config.stash[_refused_key] = dict.fromkeys(marked, FLAKY_MARK)


FLAKY_MARK = (
    "a flaky mark would run this eval case again and report only its last attempt: "
    f"remove the mark, and {REPEATS_HINT}"
)
"""The error of an eval case whose ``flaky`` mark a rerun plugin would read."""


def mark_refusal(item: pytest.Item) -> str | None:
    """The error of the eval case ``item`` when its ``flaky`` mark is refused, else None: one
    marked at collection, or later (a hook that marks it as its run starts, before the rerun
    plugin reads the mark), when a rerun plugin is loaded."""
    refused = item.config.stash.get(_refused_key, None)
    if refused is None:  # no rerun plugin loaded
        return None
    if item.nodeid in refused or item.get_closest_marker("flaky") is not None:
        return FLAKY_MARK
    return None


def _dist(config: pytest.Config) -> object:
    if wire.is_worker(config):  # the controller's mode (xdist sets a worker's own to no)
        given = wire.worker_input(config)
        return given.dist if given is not None else None
    return config.getoption("dist", "no")


def _rerun_option(config: pytest.Config) -> str | None:
    """The option (as a user wrote it) that reruns every failed test, or None."""
    if _positive(config.getoption("force_reruns", None)):
        return "--force-reruns"
    if _positive(config.getoption("reruns", None)):
        return "--reruns"
    if config.pluginmanager.hasplugin("rerunfailures") and _positive(_ini(config, "reruns")):
        return "the ini key reruns"
    if config.pluginmanager.hasplugin("flaky") and config.getoption("force_flaky", False):
        return "--force-flaky"
    return None


def _ini(config: pytest.Config, name: str) -> object:
    try:
        return config.getini(name)
    except ValueError:  # not registered: the plugin is not loaded
        return None


def _positive(value: object) -> bool:
    try:
        return int(str(value)) > 0 if value not in (None, "") else False
    except ValueError:
        return False
