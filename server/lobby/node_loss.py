"""Which of a player's nodes are alive, and since when the others are dead (pure).

A player whose sockets were on a node found dead did nothing wrong: the table gives them the
node-loss grace (``node_loss_grace``, counted from when that node's heartbeat ran out)
instead of the disconnect grace (:meth:`server.tables.machine.TableMachine.take_over`,
:meth:`~server.tables.machine.TableMachine.disconnect`). The facts come from the node set
(:attr:`server.cluster.liveness.NodeLiveness.peers`: node -> Unix time until which it counts
as alive).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def split_by_liveness(nodes: Iterable[str], peers: Mapping[str, float], here: str,
                      now: float) -> tuple[set[str], float | None]:
    """The nodes of ``nodes`` alive at ``now`` (``here`` always is), and when the latest of
    the others was found dead (its heartbeat's end, at most ``now``; None when none of them
    is a node the node set knows as dead)."""
    live: set[str] = set()
    lost_at: float | None = None
    for node in nodes:
        until = peers.get(node)
        if node == here or (until is not None and until > now):
            live.add(node)
        elif until is not None:
            lost_at = min(now, until if lost_at is None else max(lost_at, until))
    return live, lost_at
