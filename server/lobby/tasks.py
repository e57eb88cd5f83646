"""The lobby's background tasks (its :class:`~server.lobby.ports.Spawner`): settlements,
listings, releases. A node's shutdown waits for them (:meth:`Tasks.wait`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

__all__ = ["Tasks"]

log = logging.getLogger("server.lobby")


class Tasks:
    """Background tasks on the running loop; a failure is logged."""

    def __init__(self) -> None:
        self.running: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.ensure_future(coro)
        self.running.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self.running.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task failed", exc_info=task.exception())

    async def wait(self, timeout: float) -> set[asyncio.Task[Any]]:
        """Wait up to ``timeout`` seconds for the tasks running now; those still pending."""
        if not self.running:
            return set()
        _done, pending = await asyncio.wait(set(self.running), timeout=timeout)
        return pending
