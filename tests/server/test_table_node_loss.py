"""A node lost during a game, below the socket and in virtual time (``table_bench.py``): two
benches on one Redis are two nodes; the owner's heartbeat runs out, the other takes the
table over from its log and gives its players the node-loss grace, counted from the node's
death, instead of the disconnect grace. The process-level scenario (a paused owner, its
players' sockets left on it) stays in tests/failover/test_node_loss.py."""

from __future__ import annotations

from typing import Any

import redis.asyncio as aioredis
from table_bench import TableBench

from server.client import default_decision
from server.lobby.table import Table, TableStatus
from server.protocol.node_messages import Actor

SETTINGS: dict[str, Any] = {"grace_period": 3.0, "node_loss_grace": 120.0}


async def _lost_owner(redis: aioredis.Redis, key_prefix: str
                      ) -> tuple[TableBench, TableBench, Table]:
    """A game on n1 with a few moves stored; n1's heartbeat runs out and n2 takes the table
    over (its clock a minute later)."""
    one = await TableBench.open(redis, key_prefix, node="n1", **SETTINGS)
    two = await TableBench.open(redis, key_prefix, node="n2", **SETTINGS)
    table = await one.table("lost")
    for _ in range(6):
        state = table.state()
        await one.act(table, state["seats"][state["game"]["to_act"]]["player"],
                      default_decision(state["game"]))
    two.clock.advance(60.0)
    two.peers.died("n1", at=two.clock.now() - 1.0)
    return one, two, await two.take_over("lost")


async def test_a_lost_nodes_players_get_the_node_loss_grace_and_play_on(
        redis_client: aioredis.Redis, key_prefix: str) -> None:
    one, two, table = await _lost_owner(redis_client, key_prefix)
    died = two.peers.peers["n1"]
    for seat in table.machine.seats:
        assert seat is not None and not seat.is_connected
        assert seat.grace_deadline == died + SETTINGS["node_loss_grace"]
    # Far past the disconnect grace: nobody forfeits.
    await two.advance(10 * SETTINGS["grace_period"])
    assert table.machine.status is TableStatus.PLAYING
    # The players come back (to the new owner) and the game ends normally.
    for player, actor in one.actors.items():
        two.actors[player] = Actor(player, player, False, actor.address, "n2", f"c-{player}")
        two.outbox.connect(player, f"c-{player}")
        assert table.attach(two.actors[player])
    await two.settle()
    over = await two.play_out(table)
    assert over["reason"] == "normal"
    assert await two.persistence.has_result("lost", over["game_id"])


async def test_a_lost_nodes_player_who_never_comes_back_forfeits_at_its_end(
        redis_client: aioredis.Redis, key_prefix: str) -> None:
    _one, two, table = await _lost_owner(redis_client, key_prefix)
    died = two.peers.peers["n1"]
    two.actors["alice"] = Actor("alice", "alice", False, "10.0.1.1", "n2", "c-alice")
    two.outbox.connect("alice", "c-alice")
    assert table.attach(two.actors["alice"])
    await two.settle()
    await two.advance(died + SETTINGS["node_loss_grace"] - 1.0 - two.clock.now())
    assert two.sent("alice", "game_over") == []
    await two.advance(1.0)
    [over] = two.sent("alice", "game_over")
    assert (over["reason"], over["loser"], over["winner"]) == ("disconnect", "bob", "alice")
