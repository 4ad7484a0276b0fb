"""Whether a user's path is safe to open for reading: not a FIFO, a socket or a device.

Opening a FIFO for reading waits for a writer, for ever if none comes, so a named pipe where a
data file, a manifest, ``tools.json`` or a run dir's ``report.json`` is expected would hang
pytest or a command. Every reader of a user's path asks :func:`not_regular` first (``os.stat``
opens nothing) and refuses such a path with :data:`NOT_REGULAR`, one line naming it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["NOT_REGULAR", "not_regular"]

NOT_REGULAR = "not a regular file"
"""The problem with a FIFO, socket or device where a file is expected."""


def not_regular(path: Path | str) -> bool:
    """Whether ``path`` is there but is neither a regular file nor a folder. A missing path or
    a folder is not one: opening it fails at once, with its own message."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))
