"""Threads for synchronous agents that never keep the process alive.

``asyncio.to_thread`` runs a call in the event loop's default executor, whose threads Python
joins before it exits. A synchronous agent whose ``run()`` blocks past ``--llmeval-timeout``
(``time.sleep(3600)``, a blocking socket read) is timed out and its case errs, but its thread
goes on, and the process would never end once every report is written: a CI job hangs to its
limit. :class:`AgentThreads` runs each call on a reused *daemon* thread instead, which the
interpreter abandons at exit, and says which calls still run (:meth:`AgentThreads.running`), so
the session can name them in one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["AgentThreads"]

T = TypeVar("T")

_Job = tuple[str, Callable[[], Any], asyncio.AbstractEventLoop, "asyncio.Future[Any]"]


class AgentThreads:
    """A pool of daemon threads, one more whenever a call finds none idle; each call runs in
    a copy of the caller's context (as ``asyncio.to_thread`` does)."""

    def __init__(self, name: str = "llmeval-agent") -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._count = itertools.count()
        self._running: dict[int, str] = {}

    async def run(self, label: str, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)`` on a daemon thread; ``label`` names it while it runs."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        context = contextvars.copy_context()
        self._jobs.put((label, lambda: context.run(call, *args), loop, future))
        with self._lock:  # an idle thread is taken for this call, or a new one started
            start = self._idle == 0
            self._idle = max(self._idle - 1, 0)
        if start:
            name = f"{self._name}-{next(self._count)}"
            threading.Thread(target=self._work, name=name, daemon=True).start()
        return await future

    def running(self) -> list[str]:
        """The labels of the calls still running (a call blocked past its timeout), sorted."""
        with self._lock:
            return sorted(self._running.values())

    def blocked_line(self, timeout_s: float) -> str | None:
        """One line naming the synchronous agents' calls still running as the session ends
        (timed out, their cases errors): the process exits without them."""
        running = self.running()
        if not running:
            return None
        shown = ", ".join(running[:5]) + (
            f" and {len(running) - 5} more" if len(running) > 5 else ""
        )
        return (
            f"llmeval: {len(running)} synchronous agent call(s) still blocked after "
            f"--llmeval-timeout={timeout_s:g}s were abandoned (the process exits without "
            f"them): {shown}"
        )

    def _work(self) -> None:
        ident = threading.get_ident()
        while True:
            label, call, loop, future = self._jobs.get()
            with self._lock:
                self._running[ident] = label
            try:
                result = call()
            except BaseException as exc:  # SystemExit and the rest: the case's error
                _deliver(loop, future, None, exc)
            else:
                _deliver(loop, future, result, None)
            finally:
                with self._lock:
                    del self._running[ident]
                    self._idle += 1


def _deliver(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[Any],
    result: Any,
    error: BaseException | None,
) -> None:
    def settle() -> None:
        if future.done():  # cancelled: the case timed out or the session ended
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits for the call
        loop.call_soon_threadsafe(settle)
