"""Open registration over HTTP, with real Redis: a runner opens a public tournament to players
(a cap, a deadline), signed-in players join and leave it themselves until it starts, guests,
computer players and runner keys are refused, a player's upcoming tournaments are listed, and
the runner still adds and removes players. Then the call of a server-run match: its table
opens no sooner than ``tournament_call`` seconds after the pairing, whose event names the
tournament and the round."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
from server_helpers import RunningServer, StartServer, connect, guest, register
from tournament_helpers import call, new_runner_key

SETTINGS: dict[str, Any] = {"tournament_tick": 0.1, "tournament_lease": 2.0}


async def as_player(server: RunningServer, method: str, path: str,
                    token: str | None) -> tuple[int, Any]:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession() as http, http.request(
        method, server.http + path, headers=headers
    ) as resp:
        return resp.status, await resp.json()


async def open_cup(server: RunningServer, key: str, **registration: Any) -> str:
    status, body = await call(server, "POST", "/api/tournaments", key=key, body={
        "name": "Open cup", "registration": {"mode": "open", **registration}})
    assert status == 201, body
    assert body["tournament"]["registration"]["mode"] == "open"
    return str(body["tournament"]["id"])


async def test_players_join_and_leave_an_open_tournament(
    start_server: StartServer, redis_url: str, key_prefix: str
) -> None:
    server = await start_server(**SETTINGS)
    tokens = {n: await register(server, n) for n in ("alice", "bob", "carol", "dave")}
    key = await new_runner_key(redis_url, key_prefix, "acme")
    tid = await open_cup(server, key, cap=3)
    entry = f"/api/tournaments/{tid}/entry"

    status, body = await as_player(server, "PUT", entry, tokens["alice"])
    assert status == 201, body
    assert body["tournament"]["players"] == ["alice"] and body["entered"] is True
    status, body = await as_player(server, "PUT", entry, tokens["alice"])
    assert status == 200, body  # already in: nothing changes
    assert body["tournament"]["players"] == ["alice"]

    # Refused: no token, a runner key, a guest.
    assert (await as_player(server, "PUT", entry, None))[0] == 401
    assert (await as_player(server, "PUT", entry, key))[0] == 401
    status, body = await as_player(server, "PUT", entry, await guest(server))
    assert (status, body["error"]["code"]) == (403, "guest_not_allowed")

    for name in ("bob", "carol"):
        assert (await as_player(server, "PUT", entry, tokens[name]))[0] == 201
    status, body = await as_player(server, "PUT", entry, tokens["dave"])
    assert (status, body["error"]["code"]) == (409, "conflict")
    assert "full" in body["error"]["message"]

    status, body = await as_player(server, "DELETE", entry, tokens["bob"])
    assert status == 200 and body["removed"] is True, body
    status, body = await as_player(server, "DELETE", entry, tokens["bob"])
    assert status == 200 and body["removed"] is False, body
    assert (await as_player(server, "PUT", entry, tokens["dave"]))[0] == 201

    # The runner still adds and removes players (past the players' cap, to the field's).
    status, body = await call(server, "POST", f"/api/tournaments/{tid}/players", key=key,
                              body={"player": "bob"})
    assert status == 201, body
    status, body = await call(server, "DELETE", f"/api/tournaments/{tid}/players/dave",
                              key=key)
    assert status == 200 and body["removed"] is True, body

    # Upcoming tournaments of a player; the summary says how registration stands.
    status, body = await call(server, "GET", "/api/tournaments?player=alice")
    assert status == 200, body
    assert [t["id"] for t in body["tournaments"]] == [tid] and body["total"] == 1
    assert body["tournaments"][0]["registration"] == {"mode": "open", "cap": 3,
                                                      "deadline": None}
    status, body = await call(server, "GET", "/api/tournaments?player=dave")
    assert (status, body["tournaments"]) == (200, [])

    # Started: nobody joins or leaves by themselves; still listed as upcoming (running).
    status, body = await call(server, "POST", f"/api/tournaments/{tid}/bracket", key=key,
                              body={"no_show_seconds": 600})
    assert status == 201, body
    status, body = await as_player(server, "DELETE", entry, tokens["alice"])
    assert (status, body["error"]["code"]) == (409, "conflict")
    status, body = await as_player(server, "PUT", entry, tokens["dave"])
    assert (status, body["error"]["code"]) == (409, "conflict")
    status, body = await call(server, "GET", "/api/tournaments?player=alice")
    assert [(t["id"], t["status"]) for t in body["tournaments"]] == [(tid, "running")]


async def test_registration_closed_private_and_past_its_deadline(
    start_server: StartServer, redis_url: str, key_prefix: str
) -> None:
    server = await start_server(**SETTINGS)
    token = await register(server, "erin")
    key = await new_runner_key(redis_url, key_prefix, "acme")

    # Closed (the default): only the runner registers.
    status, body = await call(server, "POST", "/api/tournaments", key=key,
                              body={"name": "Closed cup"})
    closed = body["tournament"]
    assert closed["registration"] == {"mode": "closed", "cap": 128, "deadline": None}
    status, body = await as_player(server, "PUT", f"/api/tournaments/{closed['id']}/entry",
                                   token)
    assert (status, body["error"]["code"]) == (409, "conflict")
    assert "not open to players" in body["error"]["message"]

    # A private tournament never opens to players.
    status, body = await call(server, "POST", "/api/tournaments", key=key, body={
        "name": "Club night", "visibility": "private", "registration": {"mode": "open"}})
    assert (status, body["error"]["field"]) == (400, "registration")
    bad: Any
    for bad in ({"mode": "ajar"}, {"mode": "open", "cap": 1}, {"mode": "open", "cap": 129},
                {"mode": "open", "deadline": 5}, {"mode": "open", "colour": "red"}, []):
        status, body = await call(server, "POST", "/api/tournaments", key=key, body={
            "name": "Bad", "registration": bad})
        assert (status, body["error"]["field"]) == (400, "registration"), bad

    # The runner opens the closed one with a deadline just ahead; past it, joins are refused.
    path = f"/api/tournaments/{closed['id']}/registration"
    status, body = await call(server, "PUT", path, key=key,
                              body={"mode": "open", "deadline": time.time() + 1.0})
    assert status == 200, body
    assert body["tournament"]["registration"]["mode"] == "open"
    other = await new_runner_key(redis_url, key_prefix, "rival")
    status, body = await call(server, "PUT", path, key=other, body={"mode": "closed"})
    assert status == 403, body
    await asyncio.sleep(1.5)
    status, body = await as_player(server, "PUT", f"/api/tournaments/{closed['id']}/entry",
                                   token)
    assert (status, body["error"]["code"]) == (409, "conflict")
    assert "ended" in body["error"]["message"]
    status, body = await call(server, "PUT", path, key=key, body={"mode": "closed"})
    assert status == 200 and body["tournament"]["registration"]["mode"] == "closed"


async def test_the_call_comes_before_the_table_and_names_the_round(
    start_server: StartServer, redis_url: str, key_prefix: str
) -> None:
    server = await start_server(tournament_call=2.0, **SETTINGS)
    tokens = {n: await register(server, n) for n in ("fay", "gus")}
    clients = {n: await connect(server, tokens[n]) for n in tokens}
    key = await new_runner_key(redis_url, key_prefix, "acme")
    tid = await open_cup(server, key)
    for token in tokens.values():
        status, _ = await as_player(server, "PUT", f"/api/tournaments/{tid}/entry", token)
        assert status == 201
    status, body = await call(server, "POST", f"/api/tournaments/{tid}/bracket", key=key,
                              body={"no_show_seconds": 60})
    assert status == 201, body
    pairing = await clients["fay"].expect("tournament_pairing", timeout=20)
    assert pairing["name"] == "Open cup" and pairing["round_name"] == "final"
    paired_at = pairing["deadline"] - 60
    assert abs(pairing["opens_at"] - (paired_at + 2.0)) < 0.01
    table = await clients["fay"].expect("tournament_table", timeout=20)
    assert time.time() >= pairing["opens_at"] - 0.05  # not before the call's end
    assert table["name"] == "Open cup" and table["round_name"] == "final"
    assert table["rounds"] == 1
    for client in clients.values():
        await client.close()
