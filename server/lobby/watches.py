"""The tables one socket watches, bounded (PROTOCOL.md §13, "Memory per socket").

A socket's ``watch`` is recorded on the socket (:meth:`Outbox.watch
<server.lobby.ports.Outbox.watch>`: ``server/net`` keeps it, so its watches end with it)
only once the table accepted it: a table that does not exist, or that refused the
watch here, leaves nothing behind (a watch passed on to the table's owner node counts from
then; that node's refusal, ``too_many_watchers`` or ``no_such_table``, takes it back when
it comes, ``Delivery.forget_watch``). A socket watches at most ``limit`` tables; a ``watch`` past
that is refused with ``too_many_watches``. Before refusing, the socket's watches of tables
that are over (no owner record, or one marked done) are forgotten, at most once per
``prune_every`` seconds per socket (one pipelined read of at most ``limit`` owner records):
a client that watched tables that ended gets its places back without an ``unwatch``, and a
flood of ``watch`` at the cap costs no more than one read now and then.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Container

from server.lobby.ports import Clock, Outbox
from server.protocol.errors import ErrorCode, ProtocolError
from server.store.owners import Lease

PRUNE_EVERY = 5.0
"""Seconds between two looks, for one socket, for the watched tables that are over."""


class SocketWatches:
    """The per-socket cap on watched tables. Given this node's tables (``tables``: the ids
    it holds now), a read of owner records (``leases``), the sockets (``outbox``) and a
    clock."""

    def __init__(self, limit: int, tables: Container[str],
                 leases: Callable[[list[str]], Awaitable[dict[str, Lease | None]]],
                 outbox: Outbox, clock: Clock, *, prune_every: float = PRUNE_EVERY) -> None:
        self.limit = limit
        self._tables = tables
        self._leases = leases
        self._outbox = outbox
        self._prune_every = prune_every
        self._clock = clock
        self._pruned_at: dict[str, float] = {}  # socket id -> its last look (sockets at cap)

    async def make_room(self, conn_id: str, table_id: str) -> None:
        """Return when the socket ``conn_id`` may watch ``table_id`` (it watches it already,
        or fewer than ``limit`` tables); else raise ``too_many_watches``."""
        watching = self._outbox.watching(conn_id)
        if table_id in watching or len(watching) < self.limit:
            return
        now = self._clock.monotonic()
        last = self._pruned_at.get(conn_id)
        if last is None or now - last >= self._prune_every:
            self._pruned_at[conn_id] = now
            await self.forget_ended(conn_id)
            watching = self._outbox.watching(conn_id)
            if len(watching) < self.limit:
                return
        raise ProtocolError(
            ErrorCode.TOO_MANY_WATCHES,
            f"this socket watches {len(watching)} tables, the most it may "
            f"(socket_watch_max); unwatch one first", field="table")

    async def forget_ended(self, conn_id: str) -> int:
        """Forget the socket's watches of tables that are over; how many were forgotten."""
        elsewhere = [t for t in self._outbox.watching(conn_id) if t not in self._tables]
        if not elsewhere:
            return 0
        leases = await self._leases(elsewhere)
        ended = [t for t, lease in leases.items() if lease is None or lease.done]
        self._outbox.unwatch(conn_id, ended)
        return len(ended)

    def watched(self, conn_id: str, table_id: str) -> None:
        """The table accepted the socket's watch (or passed it on to its owner node)."""
        self._outbox.watch(conn_id, table_id)

    def unwatched(self, conn_id: str, table_id: str) -> None:
        self._outbox.unwatch(conn_id, (table_id,))

    def forget(self, conn_id: str) -> None:
        """The socket closed."""
        self._pruned_at.pop(conn_id, None)
