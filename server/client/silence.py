"""The client's silence watch (PROTOCOL.md §1): while a socket is read, a ``ping`` after a
third of the silence timeout without a frame, and the socket dropped after the whole of it.

Given what it uses only: the reader's task, when the last frame came, how to ping, and what
to do with a silent socket (the client drops it, and its reader's end reconnects elsewhere).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import websockets


async def watch_silence(reader: asyncio.Task[None], timeout: float, *,
                        heard_at: Callable[[], float],
                        ping: Callable[[], Awaitable[None]],
                        silent: Callable[[float], None]) -> None:
    """While ``reader`` runs: ``ping()`` after ``timeout / 3`` of quiet since ``heard_at()``
    (loop time of the last frame), once per quiet spell; after ``timeout`` of silence
    ``silent(seconds)`` is called and the watch ends."""
    loop = asyncio.get_running_loop()
    quiet = timeout / 3
    pinged_at = -float("inf")
    while not reader.done():
        now = loop.time()
        heard = heard_at()
        if now - heard >= timeout:
            silent(now - heard)
            return
        if now - heard >= quiet and pinged_at < heard:
            pinged_at = now
            with contextlib.suppress(websockets.ConnectionClosed, OSError):
                async with asyncio.timeout(quiet):
                    await ping()
            continue
        wake = heard + (quiet if pinged_at < heard else timeout)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(0.05, wake - now)):
                await asyncio.shield(reader)
