"""Runner-driven tournaments over real HTTP and WebSocket clients, real Redis: keys, podium
pushed at once and kept in the inbox, repeat and conflict, private tournaments, tables and
results, bad input."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis
from server_helpers import StartServer, connect, register, scripted
from tournament_helpers import call, new_runner_key, new_tournament, runner_key_command

from rating_plugin.store import RatingStore
from server.client.connection import ClientError


async def test_podium_flow_connected_offline_repeat_conflict(
    start_server: StartServer, redis_url: str, key_prefix: str, redis_client: aioredis.Redis
) -> None:
    server = await start_server(dice_factory=scripted(3))
    tokens = {name: await register(server, name) for name in ("alice", "bob", "carol", "dave")}
    key = await new_runner_key(redis_url, key_prefix, "acme")
    alice = await connect(server, tokens["alice"])
    carol = await connect(server, tokens["carol"])
    tid = await new_tournament(server, key, ["alice", "bob", "carol"])
    status, again = await call(server, "POST", f"/api/tournaments/{tid}/players", key=key,
                               body={"player": "bob"})
    assert status == 200 and again["tournament"]["players"] == ["alice", "bob", "carol"]

    # Seeding: Table42 rating, ties by name, FIBS "new" marked.
    ratings = RatingStore(redis_client, key_prefix)
    await ratings.award_podium("earlier-cup", ["carol"], [40])
    status, seeding = await call(server, "GET", f"/api/tournaments/{tid}/seeding")
    assert status == 200
    assert [(s["seed"], s["player"], s["rating"]) for s in seeding["seeding"]] == [
        (1, "carol", 1540), (2, "alice", 1500), (3, "bob", 1500)]
    assert all(s["is_new"] and s["fibs"]["shown"] == "new" for s in seeding["seeding"])

    # A table for a pair: a tournament game, never rated; its result is readable.
    status, opened = await call(server, "POST", f"/api/tournaments/{tid}/tables", key=key,
                                body={"pairs": [["alice", "carol"]]})
    assert status == 201, opened
    table = opened["tables"][0]["table"]
    assert opened["tables"][0]["error"] is None
    start = await alice.expect("game_start", table=table)
    assert start["mode"] == "tournament"
    assert start["rating"]["unrated_reason"] == "tournament_game"
    await carol.expect("game_start", table=table)
    await carol.send({"type": "leave", "table": table})
    over = await alice.expect("game_over", table=table)
    assert over["winner"] == "alice"
    status, results = await call(server, "GET", f"/api/tournaments/{tid}/results")
    assert status == 200
    assert [(r["table"], r["winner"], r["loser"]) for r in results["results"]] == [
        (table, "alice", "carol")]

    # The podium: pushed at once to the connected, kept for the offline (bob).
    status, body = await call(server, "POST", f"/api/tournaments/{tid}/podium", key=key,
                              body={"players": ["alice", "bob", "carol"]})
    assert status == 200, body
    podium = body["podium"]
    assert podium["awarded"] is True and podium["applied"] is True
    assert [(p["player"], p["prize"], p["rating_before"], p["rating_after"])
            for p in podium["places"]] == [
        ("alice", 50, 1500, 1550), ("bob", 25, 1500, 1525), ("carol", 15, 1540, 1555)]
    event = await alice.expect("rating", reason="podium")
    assert (event["tournament"], event["place"], event["old"], event["new"], event["change"]) \
        == (tid, 1, 1500, 1550, 50)
    assert event["game_id"] == f"{tid}-podium"
    assert (await carol.expect("rating", reason="podium"))["change"] == 15
    bob = await connect(server, tokens["bob"])
    inbox = await bob.expect("rating", reason="podium")
    assert (inbox["place"], inbox["new"], inbox["change"]) == (2, 1525, 25)
    assert (await ratings.rating("bob", "table42")).rating == 1525

    # The same call again: the first award, nothing applied twice.
    status, body = await call(server, "POST", f"/api/tournaments/{tid}/podium", key=key,
                              body={"players": ["alice", "bob", "carol"]})
    assert status == 200 and body["podium"]["applied"] is False
    assert body["podium"]["places"] == podium["places"]
    assert (await ratings.rating("alice", "table42")).rating == 1550
    # Other players: 409 conflict.
    status, body = await call(server, "POST", f"/api/tournaments/{tid}/podium", key=key,
                              body={"players": ["bob", "alice", "carol"]})
    assert status == 409 and body["error"]["code"] == "conflict"
    # Registration is closed once the podium is awarded.
    await register(server, "dave2")
    status, body = await call(server, "POST", f"/api/tournaments/{tid}/players", key=key,
                              body={"player": "dave2"})
    assert status == 409 and body["error"]["code"] == "conflict"
    status, listed = await call(server, "GET", "/api/tournaments")
    assert status == 200 and listed["total"] == 1
    assert listed["tournaments"][0]["status"] == "finished"


async def test_private_tournament_awards_nothing(
    start_server: StartServer, redis_url: str, key_prefix: str, redis_client: aioredis.Redis
) -> None:
    server = await start_server()
    tokens = {name: await register(server, name) for name in ("alice", "bob")}
    key = await new_runner_key(redis_url, key_prefix, "club")
    alice = await connect(server, tokens["alice"])
    tid = await new_tournament(server, key, ["alice", "bob"], visibility="private")
    status, body = await call(server, "POST", f"/api/tournaments/{tid}/podium", key=key,
                              body={"players": ["alice", "bob"]})
    assert status == 200, body
    podium = body["podium"]
    assert podium["awarded"] is False and podium["reason"] == "private_tournament"
    assert [(p["player"], p["prize"]) for p in podium["places"]] == [("alice", 0), ("bob", 0)]
    status, body = await call(server, "POST", f"/api/tournaments/{tid}/podium", key=key,
                              body={"players": ["bob", "alice"]})
    assert status == 409
    ratings = RatingStore(redis_client, key_prefix)
    assert (await ratings.rating("alice", "table42")).rating == 1500
    assert await ratings.history("alice", "table42") == []
    await asyncio.sleep(0.2)
    assert alice.of_type("rating") == []
    # A private tournament is not listed, and hidden from everyone but its runner.
    status, listed = await call(server, "GET", "/api/tournaments")
    assert listed["total"] == 0
    status, body = await call(server, "GET", f"/api/tournaments/{tid}")
    assert status == 404 and body["error"]["code"] == "no_such_tournament"
    status, body = await call(server, "GET", f"/api/tournaments/{tid}", key=key)
    assert status == 200 and body["tournament"]["visibility"] == "private"


async def test_runner_keys_created_used_revoked(
    start_server: StartServer, redis_url: str, key_prefix: str
) -> None:
    server = await start_server()
    token = await register(server, "alice")
    await register(server, "bob")
    key_a = await new_runner_key(redis_url, key_prefix, "acme")
    key_b = await new_runner_key(redis_url, key_prefix, "other")
    code, out = await runner_key_command(redis_url, key_prefix, "create", "acme")
    assert code == 1  # one key per name
    code, out = await runner_key_command(redis_url, key_prefix, "list")
    assert code == 0 and [line.split("\t")[0] for line in out.splitlines()] == ["acme", "other"]
    assert "t42rk_" not in out
    tid = await new_tournament(server, key_a, ["alice"])

    # No key, a player's token, a malformed or forged key: 401.
    forged = key_a[:-4] + ("AAAA" if not key_a.endswith("AAAA") else "BBBB")
    for bad in (None, token, "t42rk_nonsense", forged):
        status, body = await call(server, "POST", "/api/tournaments", key=bad,
                                  body={"name": "x"})
        assert status == 401 and body["error"]["code"] == "unauthorized", (bad, body)
    # A runner key never logs in as a player.
    status, body = await call(server, "GET", "/api/me", key=key_a)
    assert status == 401
    with pytest.raises(ClientError, match="HTTP 401"):
        await connect(server, key_a)  # as a bearer header: 401 at the handshake
    ws = await connect(server, key_a, hello=True, welcome=False)
    failed = await ws.expect("error")
    assert failed["code"] == "auth_failed"
    await ws.close()

    # Another runner's key: 403 on every runner route of this tournament.
    for method, path, body in (
        ("POST", f"/api/tournaments/{tid}/players", {"player": "bob"}),
        ("DELETE", f"/api/tournaments/{tid}/players/alice", None),
        ("POST", f"/api/tournaments/{tid}/tables", {"pairs": [["alice", "bob"]]}),
        ("POST", f"/api/tournaments/{tid}/podium", {"players": ["alice"]}),
        ("POST", f"/api/tournaments/{tid}/bracket", {}),
    ):
        status, reply = await call(server, method, path, key=key_b, body=body)
        assert status == 403 and reply["error"]["code"] == "forbidden", (path, reply)
    status, reply = await call(server, "DELETE", f"/api/tournaments/{tid}/players/alice",
                               key=key_a)
    assert status == 200 and reply["removed"] is True

    code, _ = await runner_key_command(redis_url, key_prefix, "revoke", "acme")
    assert code == 0
    status, reply = await call(server, "POST", f"/api/tournaments/{tid}/players", key=key_a,
                               body={"player": "bob"})
    assert status == 401
    code, _ = await runner_key_command(redis_url, key_prefix, "revoke", "acme")
    assert code == 1


async def test_bad_input_names_the_field(
    start_server: StartServer, redis_url: str, key_prefix: str
) -> None:
    server = await start_server()
    await register(server, "alice")
    key = await new_runner_key(redis_url, key_prefix, "acme")
    cases = [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "x" * 81}, "name"),
        ({"name": "\u200b\u2060\ufeff\u200d \U000e0041\u2028"}, "name"),  # nothing visible
        ({"name": "ok", "visibility": "secret"}, "visibility"),
        ({"name": "ok", "prizes": [50, 25, 15, 5]}, "prizes"),
        ({"name": "ok", "prizes": [1001]}, "prizes"),
        ({"name": "ok", "prizes": [-1]}, "prizes"),
        ({"name": "ok", "format": {"kind": "match", "length": 0}}, "format"),
        ({"name": "ok", "format": {"kind": "chess"}}, "format"),
    ]
    for body, field in cases:
        status, reply = await call(server, "POST", "/api/tournaments", key=key, body=body)
        assert status == 400 and reply["error"]["field"] == field, (body, reply)
    status, reply = await call(server, "POST", "/api/tournaments", key=key,
                               body={"name": " \u202eFriday\u2028\u00a0 cup\u200b "})
    assert status == 201 and reply["tournament"]["name"] == "Friday cup", reply
    tid = await new_tournament(server, key, ["alice"], format={"kind": "match", "length": 3})
    for path, body, field in (
        ("players", {}, "player"),
        ("players", {"player": "nobody"}, "player"),
        ("tables", {"pairs": [["alice", "alice"]]}, "pairs"),
        ("tables", {"pairs": [["alice", "zed"]]}, "pairs"),
        ("podium", {"players": ["alice", "alice"]}, "players"),
        ("podium", {"players": []}, "players"),
        ("podium", {"players": ["zed"]}, "players"),
        ("bracket", {"no_show_seconds": 0}, "no_show_seconds"),
    ):
        status, reply = await call(server, "POST", f"/api/tournaments/{tid}/{path}", key=key,
                                   body=body)
        assert status == 400 and reply["error"]["field"] == field, (path, body, reply)
    status, reply = await call(server, "POST", f"/api/tournaments/{tid}/bracket", key=key,
                               body={})
    assert status == 409  # one player is no bracket
    for path in ("/api/tournaments/tn000000000000", "/api/tournaments/nope/bracket"):
        status, reply = await call(server, "GET", path)
        assert status == 404 and reply["error"]["code"] == "no_such_tournament"
    status, reply = await call(server, "GET", f"/api/tournaments/{tid}/bracket")
    assert status == 404
    status, reply = await call(server, "GET", "/api/tournaments?limit=0")
    assert status == 400 and reply["error"]["field"] == "limit"


async def test_podium_reaches_a_player_on_another_node(
    start_server: StartServer, redis_url: str, key_prefix: str
) -> None:
    one = await start_server(node_id="node-one")
    two = await start_server(node_id="node-two")
    tokens = {name: await register(one, name) for name in ("alice", "bob")}
    key = await new_runner_key(redis_url, key_prefix, "acme")
    alice = await connect(two, tokens["alice"])  # on the other node
    tid = await new_tournament(one, key, ["alice", "bob"])
    status, body = await call(one, "POST", f"/api/tournaments/{tid}/podium", key=key,
                              body={"players": ["alice", "bob"]})
    assert status == 200, body
    event = await alice.expect("rating", reason="podium")
    assert (event["place"], event["change"], event["new"]) == (1, 50, 1550)
