"""The node's periodic reads of Redis, sent together: one round trip per pass of the loop.

The duties of the node's tick that fall due at the same instant start together (the Redis
check, the takeover scan, the pairing pass, the bracket driver: ``server/tick.py``), and each
begins with one read. A round trip costs the node far more than a command in it (a send, a
wake-up, a receive: some 200 µs of CPU on a loaded machine against a few µs a command), so
these reads go through :func:`reads`: every read asked for during one pass of the event loop
leaves in one pipeline (no transaction: each read stands alone) at the next pass, and each
caller gets its own reply or its own error. A read alone is sent as it is.

Only single-key reads go through it (a pipeline on a cluster splits them by node).
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

__all__ = ["ReadBatch", "reads"]

_Pending = tuple[str, tuple[Any, ...], dict[str, Any], "asyncio.Future[Any]"]


class ReadBatch:
    """The reads asked of one Redis client during a pass of the loop, sent together."""

    def __init__(self, redis: Any) -> None:
        self.redis = redis
        self._pending: list[_Pending] = []
        self._running: set[asyncio.Task[None]] = set()
        self.round_trips = 0  # (for tests)

    def get(self, key: str) -> asyncio.Future[Any]:
        return self._ask("get", key)

    def hlen(self, key: str) -> asyncio.Future[Any]:
        return self._ask("hlen", key)

    def smembers(self, key: str) -> asyncio.Future[Any]:
        return self._ask("smembers", key)

    def zrange_with_scores(self, key: str) -> asyncio.Future[Any]:
        """The whole sorted set, ``[(member, score), ...]``."""
        return self._ask("zrange", key, 0, -1, withscores=True)

    def _ask(self, command: str, *args: Any, **options: Any) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._pending.append((command, args, options, future))
        if len(self._pending) == 1:
            loop.call_soon(self._send)  # after the tasks started in this pass asked theirs
        return future

    def _send(self) -> None:
        batch, self._pending = self._pending, []
        task = asyncio.ensure_future(self._run(batch))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _run(self, batch: list[_Pending]) -> None:
        self.round_trips += 1
        try:
            if len(batch) == 1:
                command, args, options, _ = batch[0]
                results: list[Any] = [await getattr(self.redis, command)(*args, **options)]
            else:
                pipe = self.redis.pipeline(transaction=False)
                for command, args, options, _ in batch:
                    getattr(pipe, command)(*args, **options)
                results = list(await pipe.execute(raise_on_error=False))
        except asyncio.CancelledError:
            for *_, future in batch:
                future.cancel()
            raise
        except Exception as exc:  # Redis away: every read of the batch fails with it
            for *_, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for (*_, future), result in zip(batch, results, strict=True):
            if future.done():  # its caller stopped waiting (a timeout)
                continue
            if isinstance(result, Exception):
                future.set_exception(result)
            else:
                future.set_result(result)


_batches: weakref.WeakKeyDictionary[Any, ReadBatch] = weakref.WeakKeyDictionary()


def reads(redis: Any) -> ReadBatch:
    """The read batch of the Redis client ``redis`` (one per client)."""
    batch = _batches.get(redis)
    if batch is None:
        batch = _batches[redis] = ReadBatch(redis)
    return batch
