"""Every file a session writes, for the leak check, and pytest's log handlers masked at the source.

The leak check (``plugin/session_report.py``, after every other writer's ``pytest_sessionfinish``)
reads every file the session wrote, for each secret's value and its encoded forms:

* the run dir (results, errors, events, the journal, report.json/html, summary.md …);
* what pytest and its plugins write: ``--junitxml``, pytest's ``--log-file`` (or ``log_file``
  ini, where a hook may have moved it), ``--debug``'s trace (as far as written when the
  session ends), pytest-json-report's ``--json-report-file``, pytest-html's ``--html``,
  pytest-reportlog's ``--report-log`` and an old pytest's ``--result-log``;
* the ``--llmeval-update-baseline`` file and the cassettes ``--llmeval-record`` wrote.

A value found there is a leak: the run is red, the file named and the value never shown.

Masking at the source: :func:`mask_logging` puts the session's log redaction filter
(``core/log_redaction.py``) on pytest's own log handlers as soon as pytest's logging plugin
is registered, so what an agent logs through :mod:`logging` reaches the log file, live logs,
captured logs (in the terminal and junit) and ``caplog`` masked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.log_redaction import redact_handler
from pytest_llmeval.plugin.compat import log_file, logging_handlers

REPORT_FILE_OPTIONS = (
    "xmlpath", "json_report_file", "htmlpath", "report_log", "resultlog", "debug"
)  # fmt: skip
"""The ``config.option`` names of the files pytest and its report plugins write: junit,
pytest-json-report, pytest-html, pytest-reportlog, an old pytest's result log, ``--debug``."""


def written_files(config: pytest.Config, settings: Settings, run_dir: Path | None) -> list[Path]:
    """Every file (or folder of files) this session wrote that exists now."""
    paths = [run_dir] if run_dir is not None else []
    for option in REPORT_FILE_OPTIONS:
        value = getattr(config.option, option, None)
        if isinstance(value, (str, Path)) and value and Path(value).is_file():
            paths.append(Path(value))
    logged = log_file(config)
    if logged is not None and logged.is_file():
        paths.append(logged)
    if settings.update_baseline is not None and settings.update_baseline.exists():
        paths.append(settings.update_baseline)
    if settings.record is not None and settings.cassettes.is_dir():
        paths.append(settings.cassettes)
    return paths


def mask_logging(logging_plugin: object) -> None:
    """Redact every record pytest's logging plugin writes (log file, live logs, captured
    logs, ``caplog``) with the session's redactor."""
    for handler in logging_handlers(logging_plugin):
        redact_handler(handler)
