"""Runners stay in control, over real HTTP and WebSocket clients, two real nodes and real
Redis: a rotated key controls the runner's tournaments and the old one is dead; a runner lists
its own private tournaments; cancelling an open tournament removes it, cancelling a running
bracket closes its tables (on whichever node) with reason ``tournament_cancelled`` and awards
no podium; every cancel repeats the same answer."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import redis.asyncio as aioredis
from server_helpers import Client, StartServer, connect, register, scripted
from tournament_helpers import call, new_runner_key, new_tournament, runner_key_command

from server.tournaments.keys import TournamentKeys

# The call before a table (tournament_call) is tested in test_tournaments_open.py.
SETTINGS: dict[str, Any] = {"tournament_tick": 0.1, "tournament_lease": 2.0, "tournament_call": 0.0}


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await check():
        assert loop.time() < deadline, "condition never held"
        await asyncio.sleep(0.02)


async def told(client: Client, tid: str, table: str) -> None:
    """``client`` got ``table_closed`` (reason ``tournament_cancelled``) for ``table`` and
    ``tournament_cancelled`` for ``tid``, in either order (the table may live elsewhere)."""
    closed = await client.expect("table_closed", table=table)
    assert closed["reason"] == "tournament_cancelled"
    news = [m for m in client.of_type("tournament_cancelled") if m["tournament"] == tid]
    if not news:
        news = [await client.expect("tournament_cancelled", tournament=tid)]
    assert news[0]["name"] == "Friday cup"


async def test_a_rotated_key_keeps_control_and_the_old_key_is_dead(
    start_server: StartServer, redis_url: str, key_prefix: str
) -> None:
    server = await start_server()
    for name in ("alice", "bob"):
        await register(server, name)
    old = await new_runner_key(redis_url, key_prefix, "acme")
    public = await new_tournament(server, old, ["alice"])
    private = await new_tournament(server, old, [], visibility="private")

    code, out = await runner_key_command(redis_url, key_prefix, "rotate", "acme")
    assert code == 0
    new = out.strip()
    assert new.startswith("t42rk_") and new != old

    # The old key is dead everywhere; the new one acts on what the old one made.
    status, body = await call(server, "POST", f"/api/tournaments/{public}/players", key=old,
                              body={"player": "bob"})
    assert status == 401 and body["error"]["code"] == "unauthorized"
    status, body = await call(server, "POST", f"/api/tournaments/{public}/players", key=new,
                              body={"player": "bob"})
    assert status == 201 and body["tournament"]["players"] == ["alice", "bob"]
    status, body = await call(server, "GET", f"/api/tournaments/{private}", key=new)
    assert status == 200 and body["tournament"]["visibility"] == "private"
    status, _ = await call(server, "GET", f"/api/tournaments/{private}", key=old)
    assert status == 404  # no valid key: a private tournament is not there

    # Rotating a name without a key is refused; list shows one key for the name.
    code, _ = await runner_key_command(redis_url, key_prefix, "rotate", "nobody")
    assert code == 1
    code, out = await runner_key_command(redis_url, key_prefix, "list")
    assert code == 0 and [line.split("\t")[0] for line in out.splitlines()] == ["acme"]

    # Revoked, then created again under the same name: the name still owns them.
    assert (await runner_key_command(redis_url, key_prefix, "revoke", "acme"))[0] == 0
    again = await new_runner_key(redis_url, key_prefix, "acme")
    status, _ = await call(server, "DELETE", f"/api/tournaments/{public}/players/bob",
                           key=again)
    assert status == 200


async def test_a_tournament_recorded_with_its_key_id_finds_its_runner_after_rotation(
    start_server: StartServer, redis_url: str, key_prefix: str, redis_client: aioredis.Redis
) -> None:
    """A record made before tournaments named their owner carries only the key id."""
    server = await start_server()
    old = await new_runner_key(redis_url, key_prefix, "acme")
    tid = await new_tournament(server, old, [])
    await redis_client.hdel(TournamentKeys(key_prefix).tournament(tid),  # type: ignore[misc]
                            "owner")
    code, out = await runner_key_command(redis_url, key_prefix, "rotate", "acme")
    assert code == 0
    status, body = await call(server, "GET", f"/api/tournaments/{tid}/seeding",
                              key=out.strip())
    assert status == 200, body
    other = await new_runner_key(redis_url, key_prefix, "zeta")
    status, body = await call(server, "DELETE", f"/api/tournaments/{tid}", key=other)
    assert status == 403 and body["error"]["code"] == "forbidden"


async def test_a_runner_lists_its_own_tournaments_private_ones_too(
    start_server: StartServer, redis_url: str, key_prefix: str
) -> None:
    server = await start_server()
    acme = await new_runner_key(redis_url, key_prefix, "acme")
    zeta = await new_runner_key(redis_url, key_prefix, "zeta")
    first = await new_tournament(server, acme, [])
    hidden = await new_tournament(server, acme, [], visibility="private")
    theirs = await new_tournament(server, zeta, [], visibility="private")

    status, body = await call(server, "GET", "/api/tournaments?mine=1", key=acme)
    assert status == 200, body
    assert [(t["id"], t["visibility"]) for t in body["tournaments"]] == [
        (hidden, "private"), (first, "public")]
    assert body["total"] == 2
    status, body = await call(server, "GET", "/api/tournaments?mine=1&limit=1&offset=1",
                              key=acme)
    assert [t["id"] for t in body["tournaments"]] == [first] and body["total"] == 2
    status, body = await call(server, "GET", "/api/tournaments?mine=1", key=zeta)
    assert [t["id"] for t in body["tournaments"]] == [theirs]
    # Anyone: the public ones only.
    status, body = await call(server, "GET", "/api/tournaments")
    assert [t["id"] for t in body["tournaments"]] == [first]
    status, body = await call(server, "GET", "/api/tournaments?mine=1")
    assert status == 401 and body["error"]["code"] == "unauthorized"
    status, body = await call(server, "GET", "/api/tournaments?mine=yes", key=acme)
    assert status == 400 and body["error"]["field"] == "mine"


async def test_cancelling_an_open_tournament_removes_it_and_closes_its_tables(
    start_server: StartServer, redis_url: str, key_prefix: str
) -> None:
    """The table was opened on node one; the cancel reaches node two, which has the table
    closed on its owner through the node bus."""
    one = await start_server(dice_factory=scripted(3), node_id="node-one")
    two = await start_server(node_id="node-two")
    tokens = {name: await register(one, name) for name in ("alice", "bob", "carol")}
    alice = await connect(one, tokens["alice"])
    bob = await connect(two, tokens["bob"])
    key = await new_runner_key(redis_url, key_prefix, "acme")
    tid = await new_tournament(one, key, ["alice", "bob", "carol"])
    status, opened = await call(one, "POST", f"/api/tournaments/{tid}/tables", key=key,
                                body={"pairs": [["alice", "bob"]]})
    assert status == 201, opened
    table = opened["tables"][0]["table"]
    await alice.expect("game_start", table=table)
    await bob.expect("game_start", table=table)

    other = await new_runner_key(redis_url, key_prefix, "zeta")
    status, body = await call(two, "DELETE", f"/api/tournaments/{tid}", key=other)
    assert status == 403 and body["error"]["code"] == "forbidden"

    status, body = await call(two, "DELETE", f"/api/tournaments/{tid}", key=key)
    assert status == 200, body
    assert body == {"tournament": tid, "status": "removed", "applied": True,
                    "tables": [table]}
    for client in (alice, bob):
        await told(client, tid, table)
    # The seats are free again: alice can sit at a new table at once.
    reply = await alice.request({"type": "create_table", "mode": "private"})
    assert reply["type"] != "error", reply

    status, body = await call(one, "GET", f"/api/tournaments/{tid}")
    assert status == 404 and body["error"]["code"] == "no_such_tournament"
    status, body = await call(one, "GET", "/api/tournaments?mine=1", key=key)
    assert body["tournaments"] == []
    status, body = await call(one, "DELETE", f"/api/tournaments/{tid}", key=key)
    assert status == 200 and body == {"tournament": tid, "status": "removed",
                                      "applied": False, "tables": []}
    status, body = await call(one, "DELETE", f"/api/tournaments/{tid}", key=other)
    assert status == 404  # another runner learns nothing about a removed tournament


async def test_cancelling_a_running_bracket_stops_it_with_no_podium(
    start_server: StartServer, redis_url: str, key_prefix: str, redis_client: aioredis.Redis
) -> None:
    server = await start_server(dice_factory=scripted(5), **SETTINGS)
    names = ("alice", "bob", "carol", "dave")
    tokens = {name: await register(server, name) for name in names}
    clients = {name: await connect(server, tokens[name]) for name in names}
    key = await new_runner_key(redis_url, key_prefix, "acme")
    tid = await new_tournament(server, key, list(names))
    status, body = await call(server, "POST", f"/api/tournaments/{tid}/bracket", key=key,
                              body={"no_show_seconds": 60})
    assert status == 201, body
    tables = {}
    for name, client in clients.items():
        event = await client.expect("tournament_table", timeout=20)
        tables[name] = event["table"]
        await client.expect("game_start", table=event["table"])

    status, body = await call(server, "DELETE", f"/api/tournaments/{tid}", key=key)
    assert status == 200, body
    assert body["status"] == "cancelled" and body["applied"] is True
    assert sorted(body["tables"]) == sorted(set(tables.values()))
    for name, client in clients.items():
        await told(client, tid, tables[name])
        reply = await client.request({"type": "roll", "table": tables[name]})
        assert reply["type"] == "error" and reply["code"] == "no_such_table"

    status, body = await call(server, "GET", f"/api/tournaments/{tid}")
    assert body["tournament"]["status"] == "cancelled" and body["tournament"]["podium"] is None
    status, view = await call(server, "GET", f"/api/tournaments/{tid}/bracket")
    assert status == 200 and view["status"] == "cancelled" and view["podium"] is None
    running = TournamentKeys(key_prefix).running

    async def stopped() -> bool:
        member = redis_client.sismember(running, tid)
        return not await member  # type: ignore[misc]

    await eventually(stopped)
    # Nothing more happens to it: no podium, no new pairing.
    status, body = await call(server, "POST", f"/api/tournaments/{tid}/podium", key=key,
                              body={"players": ["alice"]})
    assert status == 409
    status, body = await call(server, "DELETE", f"/api/tournaments/{tid}", key=key)
    assert status == 200 and body["applied"] is False and body["status"] == "cancelled"
    status, body = await call(server, "POST", f"/api/tournaments/{tid}/players", key=key,
                              body={"player": "alice"})
    assert status == 409


async def test_a_finished_tournament_cannot_be_cancelled(
    start_server: StartServer, redis_url: str, key_prefix: str
) -> None:
    server = await start_server()
    await register(server, "alice")
    key = await new_runner_key(redis_url, key_prefix, "acme")
    tid = await new_tournament(server, key, ["alice"], visibility="private")
    status, _ = await call(server, "POST", f"/api/tournaments/{tid}/podium", key=key,
                           body={"players": ["alice"]})
    assert status == 200
    status, body = await call(server, "DELETE", f"/api/tournaments/{tid}", key=key)
    assert status == 409 and body["error"]["code"] == "conflict"
    status, body = await call(server, "DELETE", "/api/tournaments/tn000000000000", key=key)
    assert status == 404
    status, body = await call(server, "DELETE", f"/api/tournaments/{tid}")
    assert status == 401
