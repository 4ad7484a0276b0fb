"""Small asyncio helpers shared by the dispatcher and the HTTP runners."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def within(awaitable: Awaitable[T], seconds: float) -> T:
    """``await awaitable``, raising ``asyncio.TimeoutError`` after ``seconds``.

    On Python 3.11+ this is ``asyncio.timeout``, which runs the awaitable in the current task;
    ``asyncio.wait_for`` (3.10) wraps it in a task of its own, one more task per case and
    per request.
    """
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await awaitable
    return await asyncio.wait_for(awaitable, seconds)  # pragma: no cover - Python 3.10
