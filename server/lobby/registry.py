"""Which tables this node serves, and who owns the others: :class:`TableRegistry`, the one
writer of both.

A table is here from its creation (:meth:`TableRegistry.add`; a table being started by
matchmaking is known from :meth:`TableRegistry.starting` on, so a command for it waits for
its seating) until it is forgotten, lost or handed over (:meth:`TableRegistry.remove`).
The owner of a table served elsewhere is remembered as the bus or the owner record told it
(bounded: past ``OWNER_CACHE_MAX`` the oldest goes and is read again).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, Mapping
from types import MappingProxyType

from server.lobby.table import Table
from server.metrics import Metrics

__all__ = ["OWNER_CACHE_MAX", "TableRegistry"]

OWNER_CACHE_MAX = 10_000


class TableRegistry:
    """The tables of node ``node_id`` and the owners it knows (see the module docstring).
    ``closing``: the node is stopping or draining (no table is taken on any more)."""

    def __init__(self, node_id: str, metrics: Metrics) -> None:
        self.node_id = node_id
        self._metrics = metrics
        self._tables: dict[str, Table] = {}
        self._owners: dict[str, str] = {}
        self._starting: dict[str, asyncio.Event] = {}
        self.tables: Mapping[str, Table] = MappingProxyType(self._tables)
        """The tables served here, by id (read only)."""
        self.owners: Mapping[str, str] = MappingProxyType(self._owners)
        """Table id -> owner node, as this node knows it (read only)."""
        self.closing = False

    def __contains__(self, table_id: object) -> bool:
        return table_id in self._tables

    def get(self, table_id: str) -> Table | None:
        return self._tables.get(table_id)

    def add(self, table: Table) -> None:
        """``table`` is served here from now on (its owner record is this node's)."""
        self._tables[table.id] = table
        self.remember_owner(table.id, self.node_id)
        self._metrics.tables.set(len(self._tables))

    def remove(self, table: Table) -> bool:
        """Stop serving ``table`` here (its owner is read again when asked); False when
        another table (or none) has its id here."""
        if self._tables.get(table.id) is not table:
            return False
        del self._tables[table.id]
        self._owners.pop(table.id, None)
        self._metrics.tables.set(len(self._tables))
        return True

    # --- tables being started ------------------------------------------------------------

    @contextlib.contextmanager
    def starting(self, table_id: str) -> Iterator[None]:
        """``table_id`` is being started here: :meth:`started` waits until this ends."""
        ready = self._starting[table_id] = asyncio.Event()
        try:
            yield
        finally:
            del self._starting[table_id]
            ready.set()

    async def started(self, table_id: str) -> Table | None:
        """The table ``table_id`` of this node, once seated if it is being started now."""
        ready = self._starting.get(table_id)
        if ready is not None:
            await ready.wait()
        return self._tables.get(table_id)

    # --- owners of the other tables --------------------------------------------------------

    def owner(self, table_id: str) -> str | None:
        return self._owners.get(table_id)

    def remember_owner(self, table_id: str, owner: str) -> None:
        """Bounded: past OWNER_CACHE_MAX entries the oldest goes (it is read again)."""
        owners = self._owners
        owners.pop(table_id, None)
        owners[table_id] = owner
        while len(owners) > OWNER_CACHE_MAX:
            del owners[next(iter(owners))]

    def forget_owner(self, table_id: str) -> None:
        self._owners.pop(table_id, None)

    def forget_owners(self) -> None:
        """The store was lost: no owner this node knew holds anything any more."""
        self._owners.clear()
