"""Exceptions raised by pytest-llmeval.

The hierarchy::

    LLMEvalError
    ├── CaseFileError        a case file or one of its lines is malformed (path, line, field)
    ├── ConfigError          a manifest, registry or option value cannot be used
    ├── RunnerError          a model call or agent endpoint failed (kind, retryable)
    │   ├── CassetteMiss         replay found no recording for a request
    │   └── BackendUnreachable   the backend's circuit breaker is open: not sent at all
    ├── FingerprintMismatch  a baseline was made with another runner or dataset (not comparable)
    ├── RunDirError          a run dir (or one of its files) cannot be read
    │   └── RunDirVersionError  its report was written by an incompatible plugin version
    └── EvalFailure          the case ran and did not meet its expectations

An ``EvalFailure`` makes a test *fail*; everything else makes it an *error*: the case could
not be judged, and a resumed run tries it again.
"""

from __future__ import annotations

from typing import Literal

from pytest_llmeval.core.clip import clip

__all__ = [
    "BackendUnreachable",
    "CaseFileError",
    "CassetteMiss",
    "ConfigError",
    "EvalFailure",
    "FingerprintMismatch",
    "LLMEvalError",
    "RunDirError",
    "RunDirVersionError",
    "RunnerError",
    "RunnerErrorKind",
    "SetupProblem",
]

RunnerErrorKind = Literal[
    "timeout", "http", "protocol", "auth", "connection", "cassette", "agent", "judge", "score"
]
"""What failed; ``score``: a case's score was not a finite number (NaN, an infinity)."""


class LLMEvalError(Exception):
    """Root of every pytest-llmeval exception."""


class CaseFileError(LLMEvalError):
    """A case file, or one line of it, cannot be turned into a case."""

    def __init__(
        self,
        path: str,
        line: int | None,
        message: str,
        field: str | None = None,
        case_id: str | None = None,
        category: str | None = None,
    ):
        self.path = path
        self.line = line
        self.field = field
        self.message = message
        self.case_id = case_id
        """The broken row's id when it could still be read (its error item is named by it)."""
        self.category = category
        """The broken row's category when the file says it (a BFCL data file is one
        category): its error then counts in that category's figures, as a wrong answer."""
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        what = f"{self.field}: " if self.field else ""
        return f"{where}: {what}{self.message}"


class SetupProblem(CaseFileError):
    """A file no case of which can run until the user sets something up (a package to
    install): the checks before any case stop the session with it, one usage error (exit 4),
    instead of failing each case."""


class ConfigError(LLMEvalError):
    """A manifest, registry or setting value that cannot be used."""


class RunnerError(LLMEvalError):
    """A model call or agent endpoint failed: an infrastructure fault, not an eval miss."""

    def __init__(self, message: str, kind: RunnerErrorKind = "protocol", retryable: bool = False):
        self.kind = kind
        self.retryable = retryable
        super().__init__(message)


class CassetteMiss(RunnerError):
    """Replay has no recording for a request and recording is off."""

    def __init__(self, message: str):
        super().__init__(message, kind="cassette", retryable=False)


class BackendUnreachable(RunnerError):
    """The backend's circuit breaker is open: the request was not sent (see
    :mod:`pytest_llmeval.limits.breaker`)."""

    def __init__(self, message: str):
        super().__init__(message, kind="connection", retryable=False)


MESSAGE_CHARS = 2_000
"""Most characters of an :class:`EvalFailure` message kept (a model's whole answer may be in
it); its details keep twice as many. Longer texts are clipped with the full length."""


class EvalFailure(LLMEvalError):
    """The case ran and its transcript did not meet the expectations.

    The message and details are clipped (:func:`pytest_llmeval.core.clip.clip`), so a huge answer
    quoted in them does not end up whole in the terminal, junit and every report.
    """

    def __init__(self, message: str, details: str = ""):
        self.message = clip(message, MESSAGE_CHARS)
        self.details = clip(details, 2 * MESSAGE_CHARS)
        super().__init__(self.message)


class FingerprintMismatch(LLMEvalError):
    """Results made with another runner or dataset than this run's: not comparable."""

    def __init__(
        self, message: str, differences: dict[str, tuple[str | None, str | None]] | None = None
    ):
        self.differences = differences or {}
        """Fingerprint name -> (baseline value, current value), for each one that differs."""
        super().__init__(message)


class RunDirError(LLMEvalError):
    """A run dir, or one of its files, cannot be read."""


class RunDirVersionError(RunDirError):
    """A run dir's ``report.json`` has a ``report_version`` this plugin does not read."""
