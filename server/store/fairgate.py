"""A fair gate for scarce work (password hashing): ``slots`` run at once, and waiting work is
served round-robin between clients (addresses), so one address flooding logins only ever
delays its own: each other address gets the next free slot in turn.

Each client may have at most ``per_client`` pieces of work waiting or running; more is
refused at once (:class:`GateFull`), as is any work past ``max_waiting`` in total.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

__all__ = ["FairGate", "GateFull"]


class GateFull(Exception):
    """Refused: ``per_client`` is True when the client itself has too much in the gate."""

    def __init__(self, per_client: bool) -> None:
        super().__init__("per client" if per_client else "total")
        self.per_client = per_client


class FairGate:
    def __init__(self, slots: int, per_client: int, max_waiting: int) -> None:
        self.slots = slots
        self.per_client = per_client
        self.max_waiting = max_waiting
        self.running = 0
        self._places: dict[str, int] = {}  # client -> work waiting or running
        self._queues: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()
        self._waiting = 0

    @asynccontextmanager
    async def slot(self, client: str) -> AsyncIterator[None]:
        places = self._places.get(client, 0)
        if places >= self.per_client:
            raise GateFull(per_client=True)
        if self.running >= self.slots and self._waiting >= self.max_waiting:
            raise GateFull(per_client=False)
        self._places[client] = places + 1
        try:
            if self.running < self.slots and not self._waiting:
                self.running += 1
            else:
                await self._wait(client)
            try:
                yield
            finally:
                self._release()
        finally:
            left = self._places[client] - 1
            if left:
                self._places[client] = left
            else:
                del self._places[client]

    async def _wait(self, client: str) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queues.setdefault(client, deque()).append(future)
        self._waiting += 1
        try:
            await future  # resolved by _release with the slot handed over
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self._release()  # it had been handed a slot: pass it on
            else:
                queue = self._queues.get(client)
                if queue is not None and future in queue:
                    queue.remove(future)
                    self._waiting -= 1
                    if not queue:
                        del self._queues[client]
            raise

    def _release(self) -> None:
        """Hand the slot to the next client in turn, or free it."""
        while self._queues:
            client, queue = next(iter(self._queues.items()))
            future = queue.popleft()
            self._waiting -= 1
            if queue:
                self._queues.move_to_end(client)  # round-robin: this client goes last
            else:
                del self._queues[client]
            if not future.done():
                future.set_result(None)
                return
        self.running -= 1
