"""What this node does when one of its tables changes status, closes or is lost
(:class:`TableLife`, the :class:`~server.lobby.table.TableHost` of every table here).

- A status change updates the lobby index (in the background); when play starts, the
  ``seated`` listeners hear who sat down; an open table that started or closed no longer
  counts against its creator's address (``max_open_tables_per_address``).
- A finished table lingers ``finished_linger`` seconds (sync still works from Redis for the
  others), then is forgotten here and its owner record marked done.
- A table lost to another node (fenced, handed over, the store lost) is forgotten without
  releasing anything in Redis, and the requests forwarded for it are answered.
"""

from __future__ import annotations

import contextlib

from server.config import Settings
from server.lobby.listeners import LobbyListeners
from server.lobby.listing import Listing
from server.lobby.ports import Clock, Handle, Spawner
from server.lobby.registry import TableRegistry
from server.lobby.requests import ForwardedRequests
from server.lobby.table import Table, TableStatus
from server.store.persistence import Persistence
from server.store.retry import REDIS_AWAY, Backoff, retry_redis

__all__ = ["TableLife"]


class TableLife:
    """The lifecycle of this node's tables (see the module docstring)."""

    def __init__(self, settings: Settings, *, registry: TableRegistry, listing: Listing,
                 requests: ForwardedRequests, persistence: Persistence, clock: Clock,
                 tasks: Spawner, listeners: LobbyListeners) -> None:
        self.settings = settings
        self.registry = registry
        self.listing = listing
        self.requests = requests
        self.persistence = persistence
        self.clock = clock
        self.tasks = tasks
        self.listeners = listeners
        self._open_by_address: dict[str, int] = {}
        self._timers: dict[str, Handle] = {}  # table id -> its forget timer

    # --- open tables per address ----------------------------------------------------------

    def open_count(self, address: str) -> int:
        """Open tables (and creations under way) of ``address``'s network here."""
        return self._open_by_address.get(address, 0)

    def reserve_open(self, address: str) -> None:
        """One more open table for ``address`` (its network key): taken before the creation
        awaits anything, so concurrent requests count each other."""
        self._open_by_address[address] = self._open_by_address.get(address, 0) + 1

    def give_back_open(self, address: str) -> None:
        left = self._open_by_address.get(address, 0) - 1
        if left > 0:
            self._open_by_address[address] = left
        else:
            self._open_by_address.pop(address, None)

    def opened_elsewhere(self, table: Table) -> None:
        """An open table started play or closed: it no longer counts for its address."""
        address = table.creator_address
        if address is None:
            return
        table.creator_address = None
        self.give_back_open(address)

    # --- TableHost ----------------------------------------------------------------------------

    def changed(self, table: Table) -> None:
        """The table's status changed: update the lobby index (in the background); when play
        starts, tell the ``seated`` listeners who sat down."""
        if table.status is not TableStatus.OPEN:
            self.opened_elsewhere(table)
        if table.is_listed:
            self.tasks.spawn(self.listing.publish(table))
        if table.status is TableStatus.PLAYING:
            for listener in self.listeners.seated:
                self.tasks.spawn(listener(table.seated_players()))

    def closed(self, table: Table, delay: float | None = None) -> None:
        """Forget a finished table after ``finished_linger`` (``delay`` if given)."""
        wait = self.settings.finished_linger if delay is None else delay
        # A bound method and an argument, no closure: a closure naming its own timer would
        # make a reference cycle that keeps the whole table (its game, its history) alive
        # until the garbage collector's next full pass.
        self.cancel_forget(table.id)
        self._timers[table.id] = self.clock.call_later(wait, self._forget, table)

    def lost(self, table: Table) -> None:
        """``table`` is not this node's any more (lease lost, or handed over): forget it
        without releasing anything in Redis; it stops (timers, announcements) and answers
        the requests it held."""
        table.let_go()
        self.cancel_forget(table.id)
        self.opened_elsewhere(table)
        self.registry.remove(table)
        self.requests.sweep(table=table.id, retry_after=1.0)
        for listener in self.listeners.table_lost:
            listener(table.id)

    # --- forgetting -----------------------------------------------------------------------------

    def cancel_forget(self, table_id: str) -> None:
        handle = self._timers.pop(table_id, None)
        if handle is not None:
            handle.cancel()

    def cancel_all(self) -> None:
        """Stop every forget timer (shutdown)."""
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()

    def _forget(self, table: Table) -> None:
        if self._timers.get(table.id) is not None:
            del self._timers[table.id]
        self.opened_elsewhere(table)
        if self.registry.remove(table):
            # Finished or closed: its lease is done (never claimed again).
            self.tasks.spawn(self._release_done(table.id))

    async def _release_done(self, table_id: str) -> None:
        async def release() -> None:
            await self.persistence.flush()
            await self.persistence.release(table_id, done=True)

        # Redis away: tried for a while; else the lease just expires.
        with contextlib.suppress(*REDIS_AWAY):
            await retry_redis(release, Backoff(attempts=30))
