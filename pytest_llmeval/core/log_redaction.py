"""Keeping secrets out of what is logged: the HTTP clients' loggers and pytest's log handlers.

One :class:`logging.Filter` per process rewrites each record through the current session's
redactor (:class:`~pytest_llmeval.core.redact.Redactor`, literal and encoded secrets alike)
before a handler writes it: its message with its arguments, its traceback, its stack and the
string fields a caller passed with ``extra=`` (a log format may show them). The filter sits on

* the loggers of the HTTP clients the runners use (``httpx`` logs every request's full URL,
  query credentials included): every handler they reach sees the record redacted;
* pytest's own handlers (``--log-file``, live logs, captured logs in reports and junit, and
  ``caplog``), where an agent's ``logging`` calls end up: the plugin adds it there
  (:func:`redact_handler`) once pytest's logging plugin exists.

A handler of the user's own on another logger is the user's; the session's leak check still
reads every file the session writes.
"""

from __future__ import annotations

import logging

from pytest_llmeval.core.redact import Redactor

ECHOING_LOGGERS = (
    "httpx",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
)
"""Loggers of the HTTP clients the runners use; ``httpx`` logs each request's URL at INFO."""

_STANDARD = frozenset(
    {*vars(logging.LogRecord("", 0, "", 0, "", (), None)), "message", "asctime", "taskName"}
)
"""The attributes every record has; any other one came with ``extra=``."""


class _LogRedaction(logging.Filter):
    """Rewrites a record through the current session's redactor."""

    def __init__(self) -> None:
        super().__init__()
        self.redactor = Redactor()

    def filter(self, record: logging.LogRecord) -> bool:
        redact = self.redactor.text
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            return True  # a record that cannot be formatted is logging's own problem
        redacted = redact(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:  # what a formatter would write, redacted
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        for name, value in list(vars(record).items()):
            if name not in _STANDARD and isinstance(value, str):
                setattr(record, name, redact(value))
        return True


_LOG_REDACTION = _LogRedaction()


def redact_logs(redactor: Redactor) -> None:
    """Redact what the HTTP clients log, and what reaches a handler given to
    :func:`redact_handler`, with ``redactor`` from now on (one filter per process, shared by
    every session of the process: the latest session's redactor is the one used)."""
    _LOG_REDACTION.redactor = redactor
    for name in ECHOING_LOGGERS:
        logging.getLogger(name).addFilter(_LOG_REDACTION)  # no-op when already there


def redact_handler(handler: logging.Handler) -> None:
    """Redact every record ``handler`` writes (a no-op when it does already)."""
    handler.addFilter(_LOG_REDACTION)
