"""Forwarding: commands to the node that owns their table, and one answer per request.

Every table has one owner node, named by its owner record (``{t:T}:lease``, see
``ownership.py``). A command from a socket on this node goes straight to the table when this
node owns it, otherwise it is sent to the owner's channel as a ``cmd``. A request (with an
``id``) gets exactly one answer: while the owner is dead and nobody has taken the table over
yet it is answered here with ``unavailable`` and ``retry_after``; one forwarded to an owner
that dies before it answers is answered so when the death is seen (a late answer from that
owner is then dropped, :meth:`Forwarding.answered_by_owner`); a node that no longer holds the
table passes the command on to the new owner (at most ``MAX_HOPS`` times). A seated player's
table knows on which nodes the player has sockets (``attach`` / ``detach``, sent when a
player's first socket on a node opens and its last one closes), so events go only where they
are needed; on a single node all of this stays in-process.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from server.config import Settings
from server.lobby.delivery import Delivery
from server.lobby.ports import NodeSender, Peers
from server.lobby.refusals import error_reply
from server.lobby.registry import TableRegistry
from server.lobby.requests import ForwardedRequests
from server.metrics import Metrics
from server.protocol import node_messages as ops
from server.protocol.errors import ErrorCode, ProtocolError, retry_later
from server.protocol.messages import Message, TableMessage, parse_message
from server.protocol.node_messages import Actor
from server.store.persistence import Persistence

log = logging.getLogger(__name__)

MAX_HOPS = 2
"""Times a command is passed on between nodes after the first (to a table's new owner)."""


def message_to_dict(msg: Message) -> dict[str, Any]:
    """A parsed message back in wire form (for forwarding to the owner node)."""
    out: dict[str, Any] = {"type": msg.TYPE}
    for name in msg.__struct_fields__:
        value = getattr(msg, name)
        if value is None:
            continue
        out["id" if name == "ref" else name] = str(value) if isinstance(value, str) else value
    return out


class Forwarding:
    """The commands of this node's sockets, sent to the owner of their table as the node's
    registry knows it (or its owner record says)."""

    def __init__(self, settings: Settings, *, registry: TableRegistry, bus: NodeSender,
                 persistence: Persistence, peers: Peers, requests: ForwardedRequests,
                 delivery: Delivery, metrics: Metrics,
                 summons: Callable[..., None] | None = None) -> None:
        self.settings = settings
        self.node_id = settings.node_id
        self.registry = registry
        self.bus = bus
        self.persistence = persistence
        self.peers = peers
        self.requests = requests
        self.delivery = delivery
        self.metrics = metrics
        self.summons = summons
        self.siblings = settings.siblings
        # (the counter's two children, looked up once: a forward is on the move path)
        self._to_sibling = metrics.forwarded.labels("sibling")
        self._to_node = metrics.forwarded.labels("node")

    async def route(self, actor: Actor, msg: TableMessage) -> None:
        """Hand ``msg`` to its table here, or forward it to the table's owner."""
        table = await self.registry.started(msg.table)
        if table is not None:
            await table.handle(actor, msg)
            return
        owner = await self.owner_to_ask(msg.table)
        self.forward(owner, actor, message_to_dict(msg), msg.ref, msg.table)

    def forward(self, owner: str, actor: Actor, msg: dict[str, Any], ref: Any,
                table_id: str) -> None:
        """Send a command to ``owner``; a request with an id is remembered until its answer
        comes back (if the owner dies first, it is answered here: ``requests.py``)."""
        token: tuple[str, Any] | None = None
        if ref is not None and actor.node == self.node_id:
            token = self.requests.sent(actor.conn, ref, owner, table_id)
        (self._to_sibling if owner in self.siblings else self._to_node).inc()
        self.bus.send(owner, ops.Cmd(actor=actor, msg=msg), token)

    async def owner_to_ask(self, table_id: str) -> str:
        """The live node that owns ``table_id`` (not this one). Raises ``no_such_table``
        when there is no such table (or it finished and its node is gone), ``unavailable``
        (with ``retry_after``) while its owner is dead and no node has taken it over yet."""
        is_live = self.peers.is_live
        owner = self.registry.owner(table_id)
        if owner is not None and owner != self.node_id and is_live(owner):
            return owner
        lease = await self.persistence.lease(table_id)
        if lease is None:
            raise ProtocolError(ErrorCode.NO_SUCH_TABLE, f"no table {table_id}", field="table")
        if lease.node != self.node_id and is_live(lease.node) \
                and (lease.done or not lease.free):
            self.registry.remember_owner(table_id, lease.node)
            return lease.node
        if lease.done:
            raise ProtocolError(ErrorCode.NO_SUCH_TABLE, f"no table {table_id}", field="table")
        raise self.takeover_pending(table_id)

    def takeover_pending(self, table_id: str) -> ProtocolError:
        """The error for a request to a table whose owner is gone and that another node
        will take over: retry after about the documented takeover time."""
        return retry_later(ProtocolError(
            ErrorCode.UNAVAILABLE,
            f"table {table_id}: its server is gone; another takes it over, retry"),
            self.settings.lease_ttl + self.settings.takeover_scan)

    async def owner(self, table_id: str) -> str | None:
        """The owner of ``table_id`` as this node knows it, else as its record says."""
        owner = self.registry.owner(table_id)
        if owner is not None:
            return owner
        owner = await self.persistence.owner_of(table_id)
        if owner is not None:
            self.registry.remember_owner(table_id, owner)
        return owner

    # --- where a player's sockets are -----------------------------------------------------

    async def attach(self, actor: Actor, table_id: str) -> None:
        """Tell ``table_id`` (here or at its owner) that ``actor``'s player has a socket on
        this node; free the seat when the table is gone."""
        persistence = self.persistence
        table = await self.registry.started(table_id)
        if table is not None:
            if not table.attach(actor):
                await persistence.release_seat(actor.player, table_id)
            return
        try:
            owner = await self.owner_to_ask(table_id)
        except ProtocolError as exc:
            if exc.code == ErrorCode.NO_SUCH_TABLE:
                # The table is gone (it ended without us, or it was cleaned up after its
                # node): free the seat.
                await persistence.release_seat(actor.player, table_id)
            # Else its owner died and the table waits for another node to take it over:
            # the seat stays, and the new owner attaches the player (``taken_over``).
            return
        self.bus.send(owner, ops.Attach(table=table_id, actor=actor))

    async def detach(self, player: str, table_id: str) -> None:
        """``player`` has no socket left on this node: tell ``table_id``, here or at its
        owner (the grace period starts there)."""
        table = self.registry.get(table_id)
        if table is not None:
            table.detach(player, self.node_id)
            return
        owner = await self.owner(table_id)
        if owner is not None and owner != self.node_id:
            self.bus.send(owner, ops.Detach(table=table_id, player=player, node=self.node_id))

    def unwatch(self, table_id: str, conn_id: str) -> None:
        """The socket ``conn_id`` here stops watching ``table_id`` (here or at its owner)."""
        table = self.registry.get(table_id)
        if table is not None:
            table.unwatch(self.node_id, conn_id)
            return
        owner = self.registry.owner(table_id)
        if owner is not None and owner != self.node_id:
            self.bus.send(owner, ops.Unwatch(table=table_id, node=self.node_id, conn=conn_id))

    async def cancel_tournament_table(self, table_id: str) -> bool:
        """Close a table whose tournament was cancelled, wherever it lives: here at once; on
        its live owner by a ``cancel_table`` op. True when the table is over for good (closed
        here, finished, or gone); False while it may still be playing elsewhere (the op was
        sent, or its dead owner's table is not taken over yet): ask again later."""
        table = await self.registry.started(table_id)
        if table is not None:
            table.cancel_tournament()
            return True
        lease = await self.persistence.lease(table_id)
        if lease is None or lease.done:
            return True
        if lease.node != self.node_id and self.peers.is_live(lease.node):
            self.bus.send(lease.node, ops.CancelTable(table=table_id))
        return False

    # --- from other nodes --------------------------------------------------------------------

    async def command(self, message: ops.Cmd) -> None:
        """A ``cmd`` from another node: handle it here, or pass it on to the table's new
        owner; errors are answered to the socket it came from."""
        actor = message.actor
        msg: Message | None = None
        try:
            msg = parse_message(message.msg)
            if not isinstance(msg, TableMessage):
                raise ProtocolError(ErrorCode.UNKNOWN_TYPE, "not a table command")
            table = await self.registry.started(msg.table)
            if table is None:
                # Not here (any more): handed over or taken over, the new owner answers.
                owner = await self.owner_to_ask(msg.table)
                if message.hops >= MAX_HOPS:  # owners disagree for a moment: let the client retry
                    raise self.takeover_pending(msg.table)
                self.bus.send(owner, ops.Cmd(actor=actor, msg=message_to_dict(msg),
                                             hops=message.hops + 1))
                return
            await table.handle(actor, msg)
            if self.summons is not None:
                if table.machine.side_of(actor.player) is not None:
                    self.summons(actor, table.id, seated=True)
                elif (actor.node, actor.conn) in table.watchers:
                    self.summons(actor, table.id, seated=False)
        except Exception as exc:
            self.delivery.reply(actor, error_reply(
                exc, None if msg is None else msg.ref,
                msg.table if isinstance(msg, TableMessage) else None,
                doing=f"handling a command from node {actor.node}",
                metrics=self.metrics))

    async def attached(self, message: ops.Attach) -> None:
        table = await self.registry.started(message.table)
        if table is not None and table.attach(message.actor) and self.summons is not None:
            self.summons(message.actor, table.id, seated=True)

    def detached(self, message: ops.Detach) -> None:
        table = self.registry.get(message.table)
        if table is not None:
            table.detach(message.player, message.node)

    def unwatched(self, message: ops.Unwatch) -> None:
        table = self.registry.get(message.table)
        if table is not None:
            table.unwatch(message.node, message.conn)

    async def cancelled(self, message: ops.CancelTable) -> None:
        table = await self.registry.started(message.table)
        if table is not None:  # not here (any more): the caller asks again later
            table.cancel_tournament()

