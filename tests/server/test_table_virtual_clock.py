"""A real table driven below the socket, in virtual time (``table_bench.py``): the clocks,
strikes, grace periods and holds of ``server/lobby/table.py`` with a fake outbox and the
virtual clock, and the real store. Nothing here waits for wall-clock time."""

from __future__ import annotations

import redis.asyncio as aioredis
from table_bench import NODE, TableBench

from server.lobby.table import TableStatus
from server.protocol.node_messages import Actor


async def test_the_third_timeout_forfeits_the_game(redis_client: aioredis.Redis,
                                                   key_prefix: str) -> None:
    bench = await TableBench.open(redis_client, key_prefix)
    table = await bench.table("strikes")
    decision = bench.settings.decision_time
    assert table.status is TableStatus.PLAYING and table.deadline is not None
    await bench.advance(decision - 1.0)
    assert bench.sent("alice", "timeout") == []  # a second left on the clock
    for _ in range(10):
        await bench.advance(decision)
        if bench.sent("alice", "game_over"):
            break
    timeouts = bench.sent("alice", "timeout")
    last = timeouts[-1]
    assert (last["strikes"], last["action"]) == (bench.settings.max_strikes, "forfeit")
    loser = last["player"]
    assert [t["strikes"] for t in timeouts if t["player"] == loser] == [1, 2, 3]
    [over] = bench.sent("bob", "game_over")
    assert over["reason"] == "timeout" and over["loser"] == loser
    assert table.machine.status is TableStatus.FINISHED
    # The end was settled and stored: the table winds up and asks to be forgotten.
    assert ("closed", "strikes") in bench.host.calls
    assert await bench.persistence.has_result("strikes", over["game_id"])


async def test_a_player_who_does_not_come_back_forfeits_at_the_end_of_the_grace(
        redis_client: aioredis.Redis, key_prefix: str) -> None:
    bench = await TableBench.open(redis_client, key_prefix)
    table = await bench.table("grace")
    grace = bench.settings.grace_period
    await bench.advance(10.0)
    table.detach("bob", NODE)  # bob's last socket closed: his grace period starts
    await bench.settle()
    await bench.advance(grace - 1.0)
    assert bench.sent("alice", "game_over") == []
    await bench.advance(1.0)
    [over] = bench.sent("alice", "game_over")
    assert (over["reason"], over["loser"], over["winner"]) == ("disconnect", "bob", "alice")


async def test_a_player_back_within_the_grace_plays_on(redis_client: aioredis.Redis,
                                                       key_prefix: str) -> None:
    bench = await TableBench.open(redis_client, key_prefix)
    table = await bench.table("back")
    table.detach("bob", NODE)
    await bench.advance(bench.settings.grace_period / 2)
    assert table.attach(Actor("bob", "bob", False, "10.0.0.2", NODE, "c9"))
    await bench.advance(bench.settings.grace_period)
    over = bench.sent("alice", "game_over")
    assert all(o["reason"] != "disconnect" for o in over)


async def test_a_held_table_stops_its_clocks_and_resumes_with_the_allowance(
        redis_client: aioredis.Redis, key_prefix: str) -> None:
    bench = await TableBench.open(redis_client, key_prefix)
    table = await bench.table("hold")
    settings = bench.settings
    await bench.advance(settings.decision_time - 10.0)  # 10 s left on the clock
    table.hold()
    [held] = bench.sent("alice", "held")
    assert held["since"] == bench.clock.now()
    await bench.advance(10 * settings.decision_time)  # no clock runs while held
    assert bench.sent("alice", "timeout") == []
    table.resume()
    await bench.settle()
    [resumed] = bench.sent("bob", "resumed")
    assert resumed["since"] == held["since"]
    # The 10 s it had left, and the hold allowance.
    await bench.advance(10.0 + settings.hold_allowance - 0.5)
    assert bench.sent("alice", "timeout") == []
    await bench.advance(0.5)
    [timeout] = bench.sent("alice", "timeout")
    assert timeout["strikes"] == 1
