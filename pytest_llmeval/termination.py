"""SIGTERM handled as Ctrl-C, so a cancelled CI job or ``timeout`` still leaves its reports.

Without a handler SIGTERM ends the process at once: the journal keeps the finished cases, but
no report is written. :class:`SigtermHandler` turns the first SIGTERM into :class:`Terminated`
(a ``KeyboardInterrupt``), which pytest handles as Ctrl-C: the session finishes, every report
is written (its gates ``partial``), the exit status is 2, and ``--llmeval-resume`` finishes
the rest. It is installed in every process that runs a session (under xdist the controller
and each worker, so a signal to the whole process group stops the workers as Ctrl-C would)
and the previous handler is put back at the end, or at the first SIGTERM, so a second one
does what it would have done without this plugin.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any

__all__ = ["SigtermHandler", "Terminated"]


class Terminated(KeyboardInterrupt):
    """The session received SIGTERM."""


class SigtermHandler:
    """SIGTERM as :class:`Terminated` in this process, from :meth:`install` to :meth:`restore`."""

    def __init__(self) -> None:
        self._previous: Any = None
        self._installed = False

    def install(self) -> None:
        """Take over SIGTERM; a no-op outside the main thread (signals are handled there)."""
        if threading.current_thread() is not threading.main_thread():
            return
        previous = signal.signal(signal.SIGTERM, self._handle)
        self._previous = signal.SIG_DFL if previous is None else previous  # None: not Python's
        self._installed = True

    def restore(self) -> None:
        """Put the handler found at :meth:`install` back."""
        if self._installed:
            self._installed = False
            signal.signal(signal.SIGTERM, self._previous)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.restore()
        raise Terminated("SIGTERM")
