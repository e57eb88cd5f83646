"""Which other nodes are alive, as this node last read the node set.

The takeover scan (``server/lobby/ownership.py``) reads the node set (node -> epoch seconds
until which it counts as alive, renewed by each node's heartbeat) every ``takeover_scan`` and
keeps it in :attr:`NodeLiveness.peers`; the lobby, the forwarding and the matchmaker ask
:meth:`NodeLiveness.is_live` and :meth:`NodeLiveness.is_fresh` in between without a Redis
round trip. A node seen dead is cleaned up after once (:meth:`NodeLiveness.mark_dead` says
whether it is the first time); one that beats again is asked over the bus to attach its
players again (:meth:`NodeLiveness.back` sends ``reattach``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from server.cluster.bus import NodeBus
from server.protocol.node_messages import Reattach


class NodeLiveness:
    """This node's view of its peers. Needs the node's id, ``lease_ttl`` and ``lease_renew``
    (seconds) and the bus (to ask a node back from the dead to attach its players again)."""

    def __init__(self, node_id: str, lease_ttl: float, lease_renew: float,
                 bus: NodeBus, *, now: Callable[[], float] = time.time) -> None:
        """``now``: the wall clock (seconds) the peers' heartbeats are compared with."""
        self.now = now
        self.node_id = node_id
        self.lease_ttl = lease_ttl
        self.lease_renew = lease_renew
        self.bus = bus
        # Peers (node id -> epoch seconds until which it counts as alive) and the nodes seen
        # dead (cleaned up after once).
        self.peers: dict[str, float] = {}
        self.dead_nodes: set[str] = set()

    def is_live(self, node: str) -> bool:
        """Whether ``node`` counts as alive (this node always does; an unknown one does
        until the takeover scan has heard of it, so a new node is not shunned)."""
        if node == self.node_id:
            return True
        if node in self.dead_nodes:
            return False
        until = self.peers.get(node)
        return until is None or until > self.now()

    def is_fresh(self, node: str) -> bool:
        """Whether ``node`` renewed its heartbeat within the last two renewal periods: a
        node that missed one is not trusted to hand a player a game (it may be dying)."""
        if node == self.node_id:
            return True
        if node in self.dead_nodes:
            return False
        until = self.peers.get(node)
        if until is None:
            return True
        heard = until - self.lease_ttl
        return heard + 2 * self.lease_renew > self.now()

    def mark_dead(self, node: str) -> bool:
        """Count ``node`` as dead; True the first time (clean up after it once)."""
        if node == self.node_id or node in self.dead_nodes:
            return False
        self.dead_nodes.add(node)
        return True

    def back(self, node: str) -> None:
        """A node seen dead says it is alive again (restarted under the same id, or it was
        only paused: a long GC, Redis away for longer than a lease). Its players were taken
        off the seats here as gone: it is asked to attach its sockets' seated players again
        (they get ``resume``), so nobody playing through it forfeits by disconnection."""
        if node in self.dead_nodes:
            self.dead_nodes.discard(node)
            self.bus.send(node, Reattach())
