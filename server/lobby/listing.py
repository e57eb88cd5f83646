"""The lobby index (``list_tables``): written by a table's owner only while it holds the
table's owner record (:meth:`Listing.publish`), read one page at a time
(:meth:`Listing.page`)."""

from __future__ import annotations

from typing import Any

from server.lobby.registry import TableRegistry
from server.lobby.table import Table, TableStatus
from server.protocol.messages import ListTables
from server.store.persistence import FENCED_OUT, Persistence

__all__ = ["Listing"]


class Listing:
    """This node's side of the lobby index."""

    def __init__(self, persistence: Persistence, registry: TableRegistry, list_limit: int
                 ) -> None:
        self.persistence = persistence
        self.registry = registry
        self.list_limit = list_limit

    async def page(self, msg: ListTables) -> dict[str, Any]:
        """The answer to ``list_tables``: one page of the lobby index."""
        mode = None if msg.mode is None else str(msg.mode)
        total, page = await self.persistence.table_page(mode, msg.offset, self.list_limit)
        # The index is written in the background; a table this node owns is shown as it is
        # now, so a client that saw `game_start` never reads its table as still open.
        owned = self.registry.tables
        page = [owned[entry["table"]].summary() if entry.get("table") in owned else entry
                for entry in page]
        return {"type": "tables", "ref": msg.ref, "tables": page, "total": total,
                "offset": msg.offset}

    async def publish(self, table: Table) -> None:
        """List ``table`` as it is now (open or playing), or unlist it."""
        if not table.is_listed:
            return
        if table.status in (TableStatus.OPEN, TableStatus.PLAYING):
            if await self._holds_lease(table.id) and table.status in (TableStatus.OPEN,
                                                                       TableStatus.PLAYING):
                await self.persistence.list_table(table.id, table.summary())
        elif self.persistence.epochs.get(table.id) != FENCED_OUT:
            # Unlisted even once its lease is given up (done); never by a node that was
            # told another owns the table now (it might be live there).
            await self.persistence.unlist_table(table.id, str(table.mode))

    async def _holds_lease(self, table_id: str) -> bool:
        """Whether this node still holds ``table_id``'s owner lease under the epoch it writes
        with: the lobby index is not fenced by a script (another slot), so a node that was
        paused past its lease checks before it lists (one read per status change)."""
        epoch = self.persistence.epochs.get(table_id)
        if epoch is None or epoch == FENCED_OUT:
            return False
        lease = await self.persistence.lease(table_id)
        return (lease is not None and lease.node == self.registry.node_id
                and lease.epoch == epoch and not lease.done and not lease.free)
