"""A bracket's start survives a stop between its two steps, and its events reach a player who
was offline, once (real server, real sockets, real Redis).

The start is two writes: the running index (``SADD``), then ``bracket_start.lua`` (the
tournament's own slot: registration closed, status and first state). A node stopping before
the first leaves nothing; between the two, an open tournament listed as running (the driver
passes over it; the runner's retry starts it); after the second, a started bracket the driver
runs (a retry is refused: already started). Each case is run with a node that stops after
the step and a fresh node that carries on.
"""

from __future__ import annotations

from typing import Any

import pytest
import redis.asyncio as aioredis
from server_helpers import RunningServer, StartServer, connect, register
from tournament_helpers import call, new_runner_key, new_tournament

from server.app import BRACKETS
from server.store.persistence import _aw
from server.tournaments.bracket import build
from server.tournaments.keys import TournamentKeys

# The call before a table (tournament_call) is tested in test_tournaments_open.py.
SETTINGS: dict[str, Any] = {"tournament_tick": 0.1, "tournament_lease": 2.0, "tournament_call": 0.0}
TOURNAMENT_EVENTS = ("tournament_pairing", "tournament_result", "tournament_over")


async def _status(server: RunningServer, tid: str, key: str) -> str:
    status, body = await call(server, "GET", f"/api/tournaments/{tid}", key=key)
    assert status == 200, body
    return str(body["tournament"]["status"])


async def test_a_start_stopped_between_its_steps_is_finished_by_a_retry(
    start_server: StartServer, redis_url: str, key_prefix: str, redis_client: aioredis.Redis
) -> None:
    server = await start_server(node_id="cup-one", **SETTINGS)
    tokens = {name: await register(server, name) for name in ("alice", "bob")}
    key = await new_runner_key(redis_url, key_prefix, "acme")
    tid = await new_tournament(server, key, ["alice", "bob"], visibility="private")
    running = TournamentKeys(key_prefix).running

    # Stopped after the first step: listed as running, still open. The driver passes over it.
    await _aw(redis_client.sadd(running, tid))
    driver = server.app[BRACKETS]
    await driver.run_once()
    await driver.run_once()
    assert await _status(server, tid, key) == "open"
    assert await _aw(redis_client.sismember(running, tid))
    status, body = await call(server, "GET", f"/api/tournaments/{tid}/bracket", key=key)
    assert status == 404, body

    # The runner's retry starts it; a retry after a start that went through is refused, and
    # the bracket is listed once.
    status, body = await call(server, "POST", f"/api/tournaments/{tid}/bracket", key=key,
                              body={"no_show_seconds": 1})
    assert status == 201, body
    status, body = await call(server, "POST", f"/api/tournaments/{tid}/bracket", key=key,
                              body={"no_show_seconds": 1})
    assert status == 409, body
    assert await _status(server, tid, key) in ("running", "finished")
    assert await _aw(redis_client.smembers(running)) in ({tid.encode()}, set())

    # alice is here, bob never connects: the no-show deadline counts from the pairing.
    alice = await connect(server, tokens["alice"])
    pairing = await alice.expect("tournament_pairing", timeout=20)
    over = await alice.expect("tournament_over", timeout=20)
    assert over["podium"] == ["alice", "bob"] and over["awarded"] is False
    status, view = await call(server, "GET", f"/api/tournaments/{tid}/bracket", key=key)
    assert status == 200, view
    final = view["rounds"][0][0]
    assert final["status"] == "forfeit" and final["winner"] == "alice"
    assert pairing["deadline"] == final["paired_at"] + 1
    assert await _status(server, tid, key) == "finished"

    # bob, offline all along, gets each event at his first connection, once.
    bob = await connect(server, tokens["bob"])
    got = {kind: await bob.expect(kind, timeout=10) for kind in TOURNAMENT_EVENTS}
    assert got["tournament_pairing"]["opponent"] == "alice"
    assert got["tournament_pairing"]["deadline"] == pairing["deadline"]
    assert got["tournament_result"]["won"] is False
    assert got["tournament_result"]["status"] == "forfeit"
    assert got["tournament_over"]["podium"] == ["alice", "bob"]
    assert {e["event_id"] for e in got.values()} == {
        f"{tid}:tournament_pairing:r1m1:bob", f"{tid}:tournament_result:r1m1:bob",
        f"{tid}:tournament_over:bracket:bob"}
    pong = await bob.request({"type": "ping"})
    assert pong["type"] == "pong"
    await bob.close()
    await alice.close()
    # Delivered means gone from the inboxes: a new connection gets none of them again.
    for name in ("alice", "bob"):
        again = await connect(server, tokens[name])
        pong = await again.request({"type": "ping"})
        assert pong["type"] == "pong"
        assert [m for m in again.messages if m.get("type") in TOURNAMENT_EVENTS] == []
        await again.close()


@pytest.mark.parametrize("steps_done", [0, 1, 2])
async def test_a_node_stopping_between_the_steps_of_a_start(
    start_server: StartServer, redis_url: str, key_prefix: str, redis_client: aioredis.Redis,
    steps_done: int,
) -> None:
    """The start's steps run up to ``steps_done`` on a node that then stops (before it
    answers the runner); a fresh node's driver and the runner's retry leave one consistent
    bracket, run to its end."""
    one = await start_server(node_id="cup-one", **SETTINGS)
    tokens = {name: await register(one, name) for name in ("alice", "bob")}
    key = await new_runner_key(redis_url, key_prefix, "acme")
    tid = await new_tournament(one, key, ["alice", "bob"], visibility="private")
    store = one.app[BRACKETS].store
    state = {"bracket": build(["alice", "bob"], no_show_seconds=1, now=0.0).to_dict(),
             "announced": [], "reported": [], "awarded": False}
    if steps_done >= 1:
        await store.list_running(tid)
    if steps_done >= 2:
        assert await store.store_start(tid, state) == 1
    await one.stop()

    two = await start_server(node_id="cup-two", **SETTINGS)
    await two.app[BRACKETS].run_once()
    status, body = await call(two, "POST", f"/api/tournaments/{tid}/bracket", key=key,
                              body={"no_show_seconds": 1})
    assert status == (409 if steps_done == 2 else 201), body
    assert await _status(two, tid, key) in ("running", "finished")
    alice = await connect(two, tokens["alice"])
    over = await alice.expect("tournament_over", timeout=20)
    assert over["podium"] == ["alice", "bob"]
    assert await _status(two, tid, key) == "finished"
    assert not await _aw(redis_client.sismember(TournamentKeys(key_prefix).running, tid))
    status, view = await call(two, "GET", f"/api/tournaments/{tid}/bracket", key=key)
    assert status == 200 and view["rounds"][0][0]["winner"] == "alice", view
