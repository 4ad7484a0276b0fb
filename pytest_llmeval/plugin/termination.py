"""SIGTERM and SIGHUP handled as Ctrl-C, so a cancelled CI job, ``timeout`` or a closing
terminal or ssh session still leaves its reports.

Without a handler SIGTERM ends the process at once: the journal keeps the finished cases, but no
report is written. :class:`SigtermHandler` turns the first SIGTERM or SIGHUP (a closing terminal
or ssh session sends it) into :class:`Terminated` (a ``KeyboardInterrupt`` naming the signal:
``interrupted.reason`` is ``sigterm`` or ``sighup``), which pytest handles as Ctrl-C: the
session finishes, every report is written (its gates ``partial``), the exit status is 2, and
``--llmeval-resume`` finishes the rest. It is installed in every process that runs a session
(under xdist the controller and each worker, so a signal to the whole process group stops the
workers as Ctrl-C would) and the previous handler is put back at the end, or at a second signal
that comes before pytest has seen the first stop, so a third one does what it would have done
without this plugin. (Not at the first: it may be dropped, below, and the user's second one
must then still write the reports.)

Once the test loop has ended, the reports are being written: a SIGTERM or a Ctrl-C then would
only tear them apart (a traceback, no ``report.json``). From :meth:`SigtermHandler.defer` on,
both are noted and held until :meth:`SigtermHandler.restore`; the session then exits non-zero
(:meth:`SigtermHandler.deferred` says which signal came).

A handler runs wherever the main thread is, and Python drops an exception raised inside a
finalizer, a weakref or garbage-collector callback, or C code that reports and goes on (a
pydantic serializer's type check): "Exception ignored in ...", and the session would run on
with its handlers put back. So the signal is also noted, and :meth:`SigtermHandler.raise_unseen`
raises it again where the plugin looks next, before each test and as the test loop ends, until
pytest has seen the interrupt. Only while the test loop runs: once pytest has seen a stop
(:meth:`SigtermHandler.pytest_keyboard_interrupt`) the reports are written and a gate's
``pytest_runtest_logstart`` then must not meet the signal again.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Generator
from types import FrameType
from typing import Any

import pytest

__all__ = ["STOPPING", "SigtermHandler", "Terminated"]


STOPPING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))
"""The signals that stop a session as Ctrl-C does (SIGHUP is not on Windows)."""


class Terminated(KeyboardInterrupt):
    """The session received SIGTERM or SIGHUP (its name is the exception's text)."""

    @property
    def reason(self) -> str:
        """``sigterm`` or ``sighup``: ``interrupted.reason``."""
        return str(self.args[0] if self.args else "SIGTERM").lower()


class SigtermHandler:
    """SIGTERM and SIGHUP as :class:`Terminated` in this process, from :meth:`install` to
    :meth:`restore`; they and SIGINT held back from :meth:`defer` to :meth:`restore`."""

    def __init__(self) -> None:
        self._previous: dict[int, Any] = {}
        self._deferring = False
        self.deferred: str | None = None
        """The signal that arrived while the reports were written (``SIGTERM``, ``SIGHUP``,
        ``SIGINT``)."""
        self.unseen: str | None = None
        """The signal whose :class:`Terminated` pytest has not seen end the test loop yet."""
        self.looping = False
        """Whether pytest's test loop runs (set by the plugin's ``pytest_runtestloop``): a
        lost signal is raised again only then."""

    def install(self) -> None:
        """Take over SIGTERM and SIGHUP; a no-op outside the main thread (signals are handled
        there)."""
        for signum in STOPPING:
            self._take(signum)

    def defer(self) -> None:
        """From now on (the reports are being written) hold SIGTERM, SIGHUP and SIGINT back."""
        self._deferring = True
        for signum in (*STOPPING, signal.SIGINT):
            self._take(signum)

    def restore(self) -> str | None:
        """Put the handlers found back; the signal held back meanwhile, if any."""
        self._deferring = False
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous = {}
        return self.deferred

    def _take(self, signum: int) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        if signum not in self._previous and signal.getsignal(signum) == signal.SIG_IGN:
            return  # ignored on purpose (``nohup``, a background job): it stays ignored
        previous = signal.signal(signum, self._handle)
        if signum not in self._previous:  # None: not Python's
            self._previous[signum] = signal.SIG_DFL if previous is None else previous

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._deferring:
            self.deferred = self.deferred or signal.Signals(signum).name
            return
        if self.unseen is not None:  # pytest has not seen the first stop yet: the next
            self.restore()  # signal (the third) does what it would without this plugin
        self.unseen = signal.Signals(signum).name
        raise Terminated(self.unseen)

    def raise_unseen(self) -> None:
        """Raise :class:`Terminated` again for a signal whose first one never reached pytest
        (dropped where it was raised: see the module's docstring)."""
        name, self.unseen = self.unseen, None
        if name is not None:
            raise Terminated(name)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self) -> None:
        """Before each test (in the xdist controller, as each worker starts one): a lost
        signal stops the session here; not after the loop (the gates' reports log starts)."""
        if self.looping:
            self.raise_unseen()

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_keyboard_interrupt(self) -> Generator[None, None, None]:
        """pytest has seen a stop (wherever it came: collection too) and now writes the
        reports: nothing is unseen, and SIGTERM and Ctrl-C wait for them. Before every other
        implementation (the terminal reporter's formats the traceback, a few hundred ms): a
        second signal meanwhile must not raise again inside pytest's handling of the first
        (it would escape as an error, exit 1)."""
        self.unseen = None
        self.defer()
        return (yield)
