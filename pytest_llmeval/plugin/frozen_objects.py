"""What lives to the end of an eval session, frozen out of the garbage collector's full walks.

pytest keeps every item and every test report (the terminal reporter's statistics) to the
end of the session, and the session report keeps every case's result: at 100,000 cases a few
million objects that no collection can free. Each of Python's full collections walks all of
them again, and once the collected items are frozen those come often (one starts when the
objects that survived since the last one are a quarter of what that one left). So, in a
process that runs eval cases:

* once collection is done, the items are frozen (``gc.freeze()``; a collection first frees
  what a conftest or plugin dropped, so their finalizers run then, not at the end);
* every :data:`EVERY` finished tests, what they left behind is collected and frozen the same
  way: each full collection then walks only the tests since;
* the last of the session's clean-ups unfreezes it all, after pytest's own last collections
  (``unraisableexception``'s, which then need not walk it), so a process that goes on
  (pytester's in-process runs, a service calling ``pytest.main``) collects it again;
* when the interpreter exits, everything is frozen again (:func:`freeze_at_exit`, an
  ``atexit`` handler registered by the first freeze): its last collections would otherwise
  walk, and free one by one, every item, report and result the session kept, only for the
  process to end (at 20,000 cases: 2.9 s after the last ``atexit`` handler, 0.05 s frozen;
  plain pytest takes 1.8 s). What frees the memory then is the process's end. The cost, as
  CPython documents for any object alive at exit: an object left in a reference cycle is not
  finalized (its ``__del__`` does not run), so a file a conftest opened, never closed and
  left in a cycle is not flushed; close what you open (pytest's and logging's own files are
  closed before ``atexit`` ends, and ``weakref.finalize`` callbacks still run).
"""

from __future__ import annotations

import atexit
import gc

import pytest

__all__ = ["EVERY", "FrozenObjects", "freeze_at_exit", "frozen_objects_key"]

EVERY = 2_000
"""Finished tests between two freezes: each full collection in between walks what about this
many tests left, never the whole session."""

frozen_objects_key = pytest.StashKey["FrozenObjects"]()


class FrozenObjects:
    """Freezes what the session keeps; registered in a process that runs eval cases, once
    its collection is done (:meth:`start`)."""

    def __init__(self) -> None:
        self.frozen = False
        self._finished = 0

    def start(self) -> None:
        """Freeze what collection made (the items live to the session's end)."""
        self._freeze()

    def _freeze(self) -> None:
        gc.collect()
        gc.freeze()
        self.frozen = True
        _at_exit()

    def unfreeze(self) -> None:
        """Give the collector back every object frozen (a process that goes on frees them)."""
        if self.frozen:
            self.frozen = False
            gc.unfreeze()

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logfinish(self) -> None:
        self._finished += 1
        if self._finished % EVERY == 0:
            self._freeze()


_REGISTERED: list[bool] = []
"""Whether this process registered :func:`freeze_at_exit` (once, however many sessions)."""


def _at_exit() -> None:
    if not _REGISTERED:
        _REGISTERED.append(True)
        atexit.register(freeze_at_exit)


def freeze_at_exit() -> None:
    """The interpreter exits: freeze every object, so that its last collections neither walk
    nor free, one by one, what the sessions kept (see the module's text for what that costs)."""
    gc.freeze()


def install(config: pytest.Config) -> FrozenObjects:
    """The session's freezer, its unfreezing registered as a clean-up now: pytest runs its
    clean-ups last registered first, and this one is registered before pytest's own
    ``unraisableexception`` registers the collections it makes as the session ends (this
    plugin's ``pytest_configure`` runs before that built-in one's), so it runs after them."""
    frozen = config.stash[frozen_objects_key] = FrozenObjects()
    config.add_cleanup(frozen.unfreeze)
    return frozen
