"""Store before announce for one table, on its owner node.

An event goes to the table's players and watchers only once Redis holds it, and so does every
reply that carries the table's ``v`` (``ack``, ``sync``, ``resume``, ``watching``), after the
events it follows: what waits is kept, in order, until the write that stored it reports the
version (:meth:`Announcer.stored`). From a game's end on, the events wait for its settlement
too (:meth:`Announcer.keep_back_from`). So what any client has seen is a prefix of the stored log.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from server.lobby.delivery import Delivery
from server.protocol.codec import Outgoing
from server.protocol.errors import ErrorCode, ProtocolError, error_message, retry_later
from server.protocol.node_messages import Actor
from server.tables.machine import TableMachine

__all__ = ["Announcer"]

# An announcement waiting: (version it waits for, event or None, reply's actor, reply).
_Waiting = tuple[int, Outgoing | None, Actor | None, dict[str, Any] | None]


class Announcer:
    """The announcements of one table waiting for the store (see the module docstring).
    ``watchers`` is the table's own map of watching sockets, read at each broadcast."""

    def __init__(self, delivery: Delivery, machine: TableMachine,
                 watchers: dict[tuple[str, str], str]) -> None:
        self.delivery = delivery
        self.machine = machine
        self.watchers = watchers
        self.stored_v = 0  # every version up to it is in Redis
        self._waiting: deque[_Waiting] = deque()
        self._kept_back_from: int | None = None
        self.stopped = False  # the table is not this node's any more: nothing goes out

    def event(self, version: int, out: Outgoing) -> None:
        """Announce the event ``version`` once it is stored."""
        self._waiting.append((version, out, None, None))

    def reply(self, actor: Actor, message: dict[str, Any]) -> None:
        """Answer ``actor`` with a message that carries the table's ``v``: at once when
        everything up to it is stored and announced, else right after the events it follows."""
        version = int(message.get("v") or 0)
        if not self._waiting and version <= self.stored_v:
            self.delivery.reply(actor, message)
        else:
            self._waiting.append((version, None, actor, message))

    def stored(self, version: int) -> None:
        """Every event of the table up to ``version`` is in Redis: announce what waited for
        it (events, then the replies that follow them), in order."""
        if version > self.stored_v:
            self.stored_v = version
        self._announce()

    def keep_back_from(self, version: int | None) -> None:
        """Keep back the events from ``version`` on until a game's end is settled (None: that
        is done; announce what is stored)."""
        self._kept_back_from = version
        if version is None:
            self._announce()

    def _announce(self) -> None:
        waiting = self._waiting
        if not waiting or self.stopped:
            return
        stored = self.stored_v
        stop = self._kept_back_from
        delivery = self.delivery
        outbox = delivery.outbox
        # An event and the replies after it leave in one write per socket (one item alone
        # writes at most one frame to each socket: nothing to gather).
        gather = len(waiting) > 1
        if gather:
            outbox.begin_gather()
        try:
            while waiting:
                version, out, actor, message = waiting[0]
                if version > stored or (stop is not None and version >= stop):
                    break
                waiting.popleft()
                if out is not None:
                    self.broadcast(out)
                elif actor is not None and message is not None:
                    delivery.reply(actor, message)
        finally:
            if gather:
                outbox.end_gather()

    def broadcast(self, out: Outgoing) -> None:
        """Send ``out`` to the table's players wherever they are connected, and watchers."""
        delivery = self.delivery
        for seat in self.machine.seats:
            if seat is not None and seat.nodes:
                delivery.deliver_player(seat.player, seat.nodes, out)
        if self.watchers:
            delivery.deliver_conns(self.watchers.keys(), out)

    def stop(self) -> None:
        """Announce nothing more (what was not stored is not the table's), and give each
        request still waiting for its answer one: ``unavailable``, to be sent again (it
        reaches the table's new owner)."""
        self.stopped = True
        waiting, self._waiting = self._waiting, deque()
        table = self.machine.id
        for _version, _out, actor, message in waiting:
            if actor is not None and message is not None and message.get("ref") is not None:
                self.delivery.reply(actor, error_message(retry_later(ProtocolError(
                    ErrorCode.UNAVAILABLE, f"table {table} moved to another node; send it again"),
                    1.0), message["ref"], table))
