"""Everything a client can get wrong: each case gets its stable error code and the socket stays
usable (or is closed with the documented code), and nobody else's game changes."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import msgpack
import pytest
import websockets
from server_helpers import (
    Client,
    StartServer,
    connect,
    guest,
    latest_state,
    play_out,
    register,
    scripted,
    seat_two,
)


async def still_usable(client: Client) -> None:
    pong = await client.request({"type": "ping"})
    assert pong["type"] == "pong"


@pytest.mark.parametrize("binary", [False, True])
async def test_malformed_frames_and_messages(start_server: StartServer, binary: bool) -> None:
    server = await start_server()
    client = await connect(server, await guest(server), binary=binary)
    enc = (lambda o: msgpack.packb(o)) if binary else json.dumps
    cases: list[tuple[Any, str, str | None]] = [
        (b"\xc1" if binary else "{nope", "bad_frame", None),
        (enc([1, 2]), "bad_message", None),
        (enc({"id": 1}), "missing_field", "type"),
        (enc({"type": "fly"}), "unknown_type", "type"),
        (enc({"type": "join"}), "missing_field", "table"),
        (enc({"type": "join", "table": 5}), "bad_field", "table"),
        (enc({"type": "sync", "table": "t", "since": "yesterday"}), "bad_field", "since"),
        (enc({"type": "create_table", "mode": "ranked"}), "bad_field", "mode"),
        (enc({"type": "create_table", "mode": "boosted", "match_length": 99}), "bad_field",
         "match_length"),
        (enc({"type": "create_table", "mode": "tournament"}), "missing_field", "tournament_id"),
        (enc({"type": "play", "table": "nosuchtable", "play": "24/18"}), "no_such_table",
         "table"),
        (enc({"type": "play", "table": "t", "play": 7}), "bad_field", "play"),
        (enc({"type": "play", "table": "t", "play": []}), "bad_field", "play"),
        (enc({"type": "play", "table": "t", "play": [[8, 5]] * 5}), "bad_field", "play"),
        (enc({"type": "play", "table": "t", "play": [[8, 26]]}), "bad_field", "play"),
        (enc({"type": "play", "table": "t", "play": [[8, True]]}), "bad_field", "play"),
        (enc({"type": "play", "table": "t", "play": [[8, 5, 2]]}), "bad_field", "play"),
        (enc({"type": "play", "table": "t", "play": "x" * 65}), "bad_field", "play"),
        (enc({"type": "hello", "token": "x"}), "already_authenticated", None),
    ]
    for frame, code, field in cases:
        await client.send_raw(frame)
        error = await client.expect("error")
        assert (error["code"], error.get("field")) == (code, field), (frame, error)
    await still_usable(client)


async def test_errors_echo_the_request_id(start_server: StartServer) -> None:
    server = await start_server()
    client = await connect(server, await guest(server))
    error = await client.request({"type": "join", "table": "missing-table"})
    assert error["type"] == "error" and error["code"] == "no_such_table"
    assert error["table"] == "missing-table"


async def test_authentication_errors(start_server: StartServer) -> None:
    server = await start_server(auth_timeout=0.5)
    token = await register(server, "alice")
    anon = await connect(server, None)
    refused = await anon.request({"type": "list_tables"})
    assert refused["code"] == "auth_required"
    assert (await anon.request({"type": "ping"}))["type"] == "pong"
    bad = await anon.request({"type": "hello", "token": "not-a-token"})
    assert (bad["code"], bad["field"]) == ("auth_failed", "token")
    welcome = await anon.request({"type": "hello", "token": token})
    assert welcome["type"] == "welcome" and welcome["player"] == "alice"
    tables = await anon.request({"type": "list_tables"})
    assert tables["type"] == "tables"
    # A bad bearer header is refused before the upgrade.
    with pytest.raises(websockets.InvalidStatus) as info:
        await websockets.connect(server.ws_url,
                                 additional_headers={"Authorization": "Bearer nope"})
    assert info.value.response.status_code == 401
    # No hello in time: closed with 1008.
    silent = await connect(server, None)
    assert await silent.wait_closed() == 1008


async def test_oversize_frame_closes_with_1009(start_server: StartServer) -> None:
    server = await start_server(max_msg_size=1024)
    client = await connect(server, await guest(server))
    await client.send({"type": "ping", "pad": "x" * 2000})
    assert await client.wait_closed() == 1009


async def test_rate_limit_then_flood_close(start_server: StartServer) -> None:
    server = await start_server(rate_limit=5.0, rate_burst=5, flood_close_after=30)
    # (pace off: these clients send faster than the limit, as a flooder does)
    client = await connect(server, await guest(server), pace=False)
    for _ in range(8):
        await client.send({"type": "ping"})
    limited = await client.expect("error")
    assert limited["code"] == "rate_limited"
    await asyncio.sleep(0.5)  # the bucket refills
    await still_usable(client)
    flooder = await connect(server, await guest(server), pace=False)
    for _ in range(60):
        await flooder.send({"type": "ping"})
    assert await flooder.wait_closed() == 1008
    await still_usable(client)


async def test_game_errors_and_other_players_games_stay_untouched(
    start_server: StartServer,
) -> None:
    server = await start_server(dice_factory=scripted(7))
    a = await connect(server, await register(server, "alice"))
    b = await connect(server, await register(server, "bob"))
    c = await connect(server, await register(server, "carol"))
    table, start = await seat_two(server, a, b)
    on_roll = start["state"]["game"]["to_act"]
    mover, other = (a, b) if on_roll == 0 else (b, a)
    legal = start["state"]["game"]["legal_plays"]
    version = start["v"]

    async def error_for(client: Client, message: dict[str, Any]) -> dict[str, Any]:
        reply = await client.request({**message, "table": table})
        assert reply["type"] == "error", reply
        return reply

    assert (await error_for(other, {"type": "play", "play": legal[0]}))["code"] == (
        "not_your_turn"
    )
    assert (await error_for(other, {"type": "roll"}))["code"] == "wrong_phase"
    assert (await error_for(mover, {"type": "play", "play": "24/1"}))["code"] == "illegal_play"
    assert (await error_for(mover, {"type": "play", "play": [[24, 1]]}))["code"] == (
        "illegal_play"
    )
    assert (await error_for(mover, {"type": "play", "play": [[0, 5]]}))["code"] == (
        "illegal_play"
    )
    assert (await error_for(mover, {"type": "play", "play": "garbage"}))["code"] == (
        "illegal_play"
    )
    assert (await error_for(mover, {"type": "take"}))["code"] == "wrong_phase"
    assert (await error_for(mover, {"type": "accept_resign"}))["code"] == "no_resignation"
    for message in ({"type": "play", "play": legal[0]}, {"type": "roll"}, {"type": "double"},
                    {"type": "resign"}, {"type": "leave"}):
        assert (await error_for(c, message))["code"] == "not_seated"
    joined = await error_for(c, {"type": "join"})
    assert joined["code"] == "table_full"
    seat_again = await a.request({"type": "create_table", "mode": "competitive"})
    assert seat_again["code"] == "already_seated"
    # None of that changed the game.
    assert latest_state(a, table) == start["state"]
    assert max(m.get("v", 0) for m in a.messages if m.get("table") == table) == version
    await still_usable(a)
    await still_usable(c)


async def test_double_at_64_is_refused_with_max_cube(start_server: StartServer) -> None:
    server = await start_server(dice_factory=scripted(11))
    a = await connect(server, await register(server, "alice"))
    b = await connect(server, await register(server, "bob"))
    table, _ = await seat_two(server, a, b)

    def double_and_take(side: int, state: dict[str, Any]) -> dict[str, Any] | None:
        game = state["game"]
        if game["phase"] == "roll" and game["can_double"]:
            return {"type": "double"}
        return None  # take is the default answer

    at_64 = await play_out(
        {0: a, 1: b}, table, decide=double_and_take,
        stop=lambda m: m.get("type") == "taken" and m.get("cube") == 64,
    )
    owner = at_64["side"]
    error = await (a, b)[owner].request({"type": "double", "table": table})
    assert error["code"] == "max_cube"
    error = await (a, b)[1 - owner].request({"type": "double", "table": table})
    assert error["code"] == "max_cube"
    await still_usable(a)


async def test_http_account_errors(start_server: StartServer) -> None:
    server = await start_server()
    async with aiohttp.ClientSession() as http:

        async def post(path: str, body: Any, **kw: Any) -> tuple[int, Any]:
            async with http.post(server.http + path, **({"json": body} | kw)) as resp:
                return resp.status, (await resp.json() if resp.status != 204 else None)

        status, body = await post("/api/register", {"name": "alice", "password": "long enough"})
        assert status == 201 and body["player"] == "alice" and body["token"]
        for payload, status_code, code, field in [
            ({"name": "ALICE", "password": "long enough"}, 409, "name_taken", "name"),
            ({"name": "al", "password": "long enough"}, 400, "bad_field", "name"),
            ({"name": "guest-1", "password": "long enough"}, 400, "bad_field", "name"),
            ({"password": "long enough"}, 400, "missing_field", "name"),
            ({"name": "bob", "password": "short"}, 400, "bad_field", "password"),
            ({"name": "bob", "password": 12345678}, 400, "bad_field", "password"),
            ({"name": "\u200b\u2060\ufeff", "password": "long enough"}, 400, "bad_field",
             "name"),
        ]:
            status, body = await post("/api/register", payload)
            assert (status, body["error"]["code"], body["error"].get("field")) == (
                status_code, code, field
            ), payload
        # JSON that is not an object (sent as JSON: any other content type is 415 now)
        status, body = await post("/api/register", None, data=b"[1]",
                                  headers={"Content-Type": "application/json"})
        assert (status, body["error"]["code"]) == (400, "bad_request")
        status, body = await post("/api/login", {"name": "alice", "password": "wrong one!"})
        assert (status, body["error"]["code"]) == (401, "invalid_credentials")
        status, body = await post("/api/login", {"name": "nobody", "password": "wrong one!"})
        assert (status, body["error"]["code"]) == (401, "invalid_credentials")
        status, body = await post("/api/login", {"name": "Alice", "password": "long enough"})
        assert status == 200 and body["player"] == "alice" and body["name"] == "alice"
        token = body["token"]
        headers = {"Authorization": f"Bearer {token}"}
        async with http.get(server.http + "/api/me", headers=headers) as resp:
            assert resp.status == 200 and (await resp.json())["player"] == "alice"
        status, _ = await post("/api/logout", None, headers=headers)
        assert status == 204
        async with http.get(server.http + "/api/me", headers=headers) as resp:
            assert resp.status == 401
        # A display name is cleaned as every text is: invisible characters go.
        status, body = await post("/api/register", {"name": "\u202ebo\u200bb\u2028",
                                                    "password": "long enough"})
        assert status == 201 and (body["player"], body["name"]) == ("bob", "bob")
        status, body = await post("/api/login", {"name": "b\u200dob", "password": "long enough"})
        assert status == 200 and body["name"] == "bob"
        async with http.post(server.http + "/api/register", data=b"x" * 10_000) as resp:
            assert resp.status == 413
