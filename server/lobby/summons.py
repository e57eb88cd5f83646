"""Summons: this worker owns a table whose player (or watcher) sends from a sibling worker's
socket; ask that worker to hand the socket over (``ops.Summon``), so the table and the
sockets of its seated players live in one process and their moves cross nothing.

Only the workers of one machine (``link_peers``, the local link) hand sockets to each other:
a file descriptor cannot cross machines. One summons per socket at most every
``SUMMON_EVERY`` seconds, so a socket its worker keeps (``server/net/socket_moves.py`` says
when) is not asked again at every move.
"""

from __future__ import annotations

from server.config import Settings
from server.lobby.ports import Clock, NodeSender
from server.protocol import node_messages as ops
from server.protocol.node_messages import Actor

__all__ = ["SUMMON_EVERY", "Summons"]

SUMMON_EVERY = 10.0
"""Seconds before the same socket is summoned again."""
SUMMONED_MAX = 10_000
"""Sockets remembered as summoned (the oldest is forgotten first)."""


class Summons:
    """Sends ``summon`` to the sibling worker that holds a socket of one of this worker's
    tables."""

    def __init__(self, settings: Settings, bus: NodeSender, clock: Clock) -> None:
        self.node_id = settings.node_id
        self.siblings = settings.siblings if settings.local_link and settings.socket_moves \
            else frozenset()
        self.bus = bus
        self.clock = clock
        self._sent: dict[tuple[str, str], float] = {}

    def forget(self, node: str, conn: str) -> None:
        """The socket ``conn`` of ``node`` may be summoned again at once."""
        self._sent.pop((node, conn), None)

    def __call__(self, actor: Actor, table: str, *, seated: bool) -> None:
        """``actor``'s socket plays (``seated``) or watches at ``table``, owned here."""
        node = actor.node
        if node not in self.siblings or not actor.conn:
            return
        key = (node, actor.conn)
        now = self.clock.monotonic()
        sent = self._sent.get(key)
        if sent is not None and now - sent < SUMMON_EVERY:
            return
        if len(self._sent) >= SUMMONED_MAX:
            self._sent.pop(next(iter(self._sent)))
        self._sent[key] = now
        self.bus.send(node, ops.Summon(node=self.node_id, player=actor.player,
                                       conn=actor.conn, table=table, seated=seated))
