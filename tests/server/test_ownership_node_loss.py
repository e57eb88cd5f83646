"""Nobody is charged for a node's fault, on in-process nodes sharing one Redis prefix: the
players of a node that stops answering get the node-loss grace at the table's new owner,
and when the node wakes up it attaches their sockets (still open) to that owner."""

from __future__ import annotations

import time

from server_helpers import connect, eventually, register, scripted, seat_two
from test_ownership import StartNodes, _claimed, freeze

from server.app import BUS, OWNERSHIP

GRACE = 5.0
NODE_LOSS_GRACE = 300.0


async def test_a_paused_owners_players_get_the_node_loss_grace_and_are_attached_back(
    start_nodes: StartNodes,
) -> None:
    one, two = await start_nodes(2, dice_factory=scripted(7), grace_period=GRACE,
                                 node_loss_grace=NODE_LOSS_GRACE)
    a = await connect(one, await register(one, "alice"))
    b = await connect(one, await register(one, "bob"))
    table, _ = await seat_two(one, a, b)  # owned by n1, both players through n1
    freeze(one)
    await eventually(lambda: _claimed(two, table))
    await eventually(lambda: table in two.lobby.tables)
    seats = two.lobby.tables[table].machine.seats
    for seat in seats:
        assert seat is not None and not seat.is_connected
        # The node-loss grace, from n1's death: far longer than the disconnect grace.
        assert seat.grace_deadline is not None
        assert seat.grace_deadline > time.time() + NODE_LOSS_GRACE - 60
    # n1 wakes up: its heartbeat finds it was taken for dead, it lets the table go and
    # attaches its sockets of the table's players to n2, which sends them resume.
    bus = one.app[BUS]
    await bus.start(one.lobby.on_node_messages)
    await one.app[OWNERSHIP].start()
    for client in (a, b):
        resume = await client.expect("resume", table=table)
        assert resume["v"] >= 1
    await eventually(lambda: table not in one.lobby.tables)
    await eventually(lambda: all(s is not None and s.is_connected and s.grace is None
                                 for s in two.lobby.tables[table].machine.seats))
    assert all(s is not None and s.nodes == {"n1"}
               for s in two.lobby.tables[table].machine.seats)
