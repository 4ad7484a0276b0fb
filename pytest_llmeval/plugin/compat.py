"""Every use of pytest's (and pytest-xdist's) private API, in one place.

Checked against pytest 9.2.0 (what CI installs) and pytest 8.4.2, with pytest-xdist 3.8.0: the
tests that drive these paths (collection, fixture reuse, run-ahead, sharding, xdist scheduling,
the run-dir equivalence test) pass under both. When a new pytest moves one of these, this module
is the only one to change.

* ``Item._fixtureinfo``: the fixture closure pytest computed for an item (``FuncFixtureInfo``).
  Items of one file share it; run-ahead compares the last fixture definitions of
  ``llmeval_agent`` / ``llmeval_broker`` through it.
* ``Item._request._fixture_defs``: the fixture definitions a resolved item used. Copying them
  (with ``funcargs``) lets the next item of a file skip pytest's resolution when it would hand
  back the same cached session values.
* ``pytest.skip.Exception(..., _use_item_location=True)``: a skip reported at the case's file
  and line instead of this package's.
* ``_pytest._code.code.TerminalRepr``: the type ``repr_failure`` returns (typing only).
  ``EvalItem`` also overrides ``_repr_failure_py``, which pytest calls for setup errors
  (``collect.py`` says so where it does).
* ``TerminalReporter._width_of_current_line``: whether a progress line can be written
  without cutting pytest's row of dots short (it is 0 right after a row ended).
* ``TerminalReporter._show_progress_info`` and ``_write_progress_information_filling_space``:
  the gates, reported as tests after pytest wrote ``[100%]``, are shown without a progress
  suffix of their own (one would count backwards) and end with pytest's own ``[100%]``.
* ``_pytest.config.findpaths.determine_setup``: how pytest picks its rootdir from the
  command line; a spaced ``--llmeval-resume PATH`` is one of the paths it looks at (the
  plugin's options are not known yet then), which can move the rootdir and so every node id.
* ``LoggingPlugin.log_file_handler``, ``log_cli_handler``, ``caplog_handler`` and
  ``report_handler`` (the plugin registered as ``logging-plugin``): the handlers pytest writes
  ``--log-file``, live logs, captured logs and ``caplog`` with; the log redaction filter goes on
  them, and the leak check reads the log file at its ``baseFilename`` (a hook may move it).
* ``Item._report_sections``: the ``(when, key, content)`` captured output pytest builds a
  report's sections from (and pytest-json-report reads directly); it is masked there.
* ``xdist.workermanage.parse_tx_spec_config`` and ``xdist.report.report_collection_diff``: the
  worker count and xdist's own message for workers that collected different items.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr as TerminalRepr

__all__ = [
    "TerminalRepr",
    "fixture_closure",
    "fixture_info",
    "log_file",
    "logging_handlers",
    "mask_report_sections",
    "progress_held",
    "resolved_fixture_defs",
    "reuse_fixture_defs",
    "rootdir_without",
    "skip_at_item",
    "terminal_at_line_start",
    "xdist_collection_diff",
    "xdist_worker_count",
]


def fixture_info(item: pytest.Item) -> Any:
    """The item's ``FuncFixtureInfo`` (shared by the items of one file)."""
    return item._fixtureinfo  # type: ignore[attr-defined]


def fixture_closure(item: pytest.Item) -> dict[str, Any]:
    """Fixture name -> its chain of ``FixtureDef`` s (the last one wins)."""
    return fixture_info(item).name2fixturedefs  # type: ignore[no-any-return]


def resolved_fixture_defs(item: pytest.Item) -> dict[str, Any]:
    """The ``FixtureDef`` s a resolved item used, by fixture name."""
    return dict(item._request._fixture_defs)  # type: ignore[attr-defined]


def reuse_fixture_defs(item: pytest.Item, defs: dict[str, Any]) -> None:
    """Record ``defs`` as the item's resolved fixtures (with its ``funcargs`` filled in)."""
    item._request._fixture_defs.update(defs)  # type: ignore[attr-defined]


def item_request(item: pytest.Item) -> Any:
    """The item's ``FixtureRequest`` (what a test asking for ``request`` gets)."""
    return item._request  # type: ignore[attr-defined]


def skip_at_item(reason: str) -> NoReturn:
    """Skip, reporting the case's file and line rather than this package's."""
    raise pytest.skip.Exception(reason, _use_item_location=True)


def terminal_at_line_start(reporter: Any) -> bool:
    """Whether the terminal reporter's cursor is at the start of a line."""
    return int(getattr(reporter, "_width_of_current_line", 1)) == 0


@contextmanager
def progress_held(reporter: Any) -> Iterator[None]:
    """Reports logged inside write no progress suffix; at the end, without ``-v``, their row
    ends with pytest's own suffix (``[100%]`` once every report counted is in). For tests
    reported after pytest's last ``[100%]``: a suffix of their own would count backwards."""
    shown = getattr(reporter, "_show_progress_info", False)
    if reporter is None or not shown:
        yield
        return
    reporter._show_progress_info = False
    # pytest's row already ends with its suffix: the gates start a row of their own (pytest
    # starts it where it labels rows with the file; under xdist it does not, so here)
    if reporter.showfspath or reporter.showlongtestinfo:
        reporter.currentfspath = None
    else:
        reporter.currentfspath = -2
        reporter.ensure_newline()
    try:
        yield
    finally:
        reporter._show_progress_info = shown
    verbosity = reporter.config.get_verbosity(pytest.Config.VERBOSITY_TEST_CASES)
    if verbosity <= 0 and reporter.reported_progress:
        reporter._write_progress_information_filling_space()


def xdist_worker_count(config: pytest.Config) -> int:
    """How many workers ``-n``/``--tx`` start."""
    return len(importlib.import_module("xdist.workermanage").parse_tx_spec_config(config))


def xdist_collection_diff(
    first: list[str], other: list[str], first_id: str, other_id: str
) -> str | None:
    """xdist's message for two workers that collected different items (``None`` if equal)."""
    report = importlib.import_module("xdist.report")
    return report.report_collection_diff(first, other, first_id, other_id)  # type: ignore[no-any-return]


def rootdir_without(config: pytest.Config, value: str) -> tuple[Path, Path] | None:
    """``(with, without)``: the rootdirs pytest chooses with ``value`` on the command line as a
    path that exists, and had ``value`` not been there, when the two (or their ini files)
    differ; ``None`` otherwise, or when it cannot be told."""
    from _pytest.config.findpaths import determine_setup

    invocation = config.invocation_params
    args = [str(arg) for arg in invocation.args]
    if value not in args:
        return None
    without = list(args)
    without.remove(value)
    # pytest passes over a path that does not exist yet, but a run dir the session creates
    # exists for xdist workers, which determine their rootdir after the controller made it:
    # judge the path as its nearest existing folder would be judged
    path = Path(invocation.dir, value)
    if not path.exists():
        existing = next((p for p in path.parents if p.exists()), None)
        if existing is not None:
            args[args.index(value)] = str(existing)
    kwargs: dict[str, Any] = {
        "inifile": config.option.inifilename,
        "rootdir_cmd_arg": config.option.rootdir or None,
        "invocation_dir": invocation.dir,
    }
    if "override_ini" in inspect.signature(determine_setup).parameters:
        kwargs["override_ini"] = config.option.override_ini
    try:
        chosen = determine_setup(args=args, **kwargs)[:2]
        other = determine_setup(args=without, **kwargs)[:2]
    except Exception:  # pytest's own errors are reported by pytest; this is only a hint
        return None
    return (Path(chosen[0]), Path(other[0])) if chosen != other else None


_LOG_HANDLERS = ("log_file_handler", "log_cli_handler", "caplog_handler", "report_handler")


def logging_handlers(logging_plugin: object) -> list[logging.Handler]:
    """The handlers of pytest's logging plugin (log file, live logs, captured logs, caplog)."""
    handlers = (getattr(logging_plugin, name, None) for name in _LOG_HANDLERS)
    return [h for h in handlers if isinstance(h, logging.Handler)]


def log_file(config: pytest.Config) -> Path | None:
    """The file pytest's ``--log-file`` (or ``log_file`` ini) handler writes, if any."""
    plugin = config.pluginmanager.get_plugin("logging-plugin")
    name = getattr(getattr(plugin, "log_file_handler", None), "baseFilename", None)
    if not isinstance(name, str) or name == os.devnull:
        return None
    return Path(name)


def mask_report_sections(item: pytest.Item, mask: Callable[[str], str]) -> None:
    """Rewrite the captured output an item's next report is made from through ``mask``."""
    kept = getattr(item, "_report_sections", None)
    if kept:  # usually empty: nothing to do on the per-case path
        item._report_sections = [(when, key, mask(content)) for when, key, content in kept]
