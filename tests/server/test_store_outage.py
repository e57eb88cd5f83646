"""A store outage is not a node death (server/lobby/ownership.py): a node whose own heartbeat
write failed within the last two ``lease_ttl`` counts no peer dead, cleans up after none and
claims nothing, however stale the peers' heartbeats look (a failover of the master holding
the node set stops every node's heartbeat alike); once its own view of the store has been
healthy for two ``lease_ttl``, a peer that still does not beat is dead as before. A heartbeat
still waiting for its answer (a cluster client retrying through a failover) counts as failing
too. Two in-process nodes on the test's Redis; node one's heartbeat writes fail for real (its
script raises as a lost connection would, or waits as a retrying client does)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from server_helpers import connect, eventually, register, scripted, seat_two
from test_ownership import StartNodes, freeze, lease_node

from server.app import OWNERSHIP, PULSE


@pytest.mark.parametrize("heartbeat_fails", ["at_once", "after_waiting"])
async def test_a_node_cut_off_from_the_store_counts_no_peer_dead(
    start_nodes: StartNodes, heartbeat_fails: str,
) -> None:
    # A heartbeat every 0.1 s: several fail within each lease_ttl (0.6 s), however loaded
    # the machine.
    one, two = await start_nodes(2, dice_factory=scripted(7), lease_renew=0.1)
    a = await connect(two, await register(two, "alice"))
    b = await connect(one, await register(one, "bob"))
    table, _ = await seat_two(two, a, b)  # owned by n2; bob plays through n1
    pulse = one.app[PULSE]
    await eventually(lambda: pulse.beats > 0)
    failing = threading.Event()
    failing.set()
    script = pulse._script

    def heartbeat(*args: Any, **kwargs: Any) -> Any:
        if failing.is_set():
            if heartbeat_fails == "after_waiting":  # answered once the failover is over
                while failing.is_set():
                    time.sleep(0.01)
                return script(*args, **kwargs)
            raise RedisConnectionError("connection lost (the store fails over)")
        return script(*args, **kwargs)

    pulse._script = heartbeat
    await eventually(lambda: not one.app[OWNERSHIP].store_steady())
    freeze(two)  # its heartbeat runs out too, as everybody's does in an outage
    liveness = one.lobby.liveness
    # n2's time runs out for n1 while n1's own heartbeat fails: not dead.
    await eventually(lambda: liveness.peers.get("n2", float("inf")) < time.time())
    for _ in range(5):
        await one.app[OWNERSHIP].scan_once()
    assert "n2" not in liveness.dead_nodes
    assert await lease_node(one, table) == ("n2", False)
    assert table in two.lobby.tables
    # n1's heartbeat works again: two lease_ttl later n2, silent all along, is dead, and taken over.
    failing.clear()
    await eventually(lambda: "n2" in liveness.dead_nodes)
    await eventually(lambda: table in one.lobby.tables)
