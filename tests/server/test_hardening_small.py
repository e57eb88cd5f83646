"""Hardening, small cases: the small cases, each sent as the attack was."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
import redis.asyncio as aioredis
from hardening_helpers import http_json
from server_helpers import StartServer, connect, guest, play_out, register, scripted, seat_two

from server.store.accounts import common_passwords


@pytest.mark.parametrize("body", [
    "[" * 1000 + "]" * 1000,
    '{"name": ' + "[" * 1000 + "]" * 1000 + "}",
    '{"name": "alice", "password": ' + "[" * 1900 + "]" * 1900 + "}",
])
async def test_deeply_nested_json_is_a_400_not_a_500(start_server: StartServer, body: str,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    server = await start_server()
    assert len(body.encode()) <= 4096
    status, _h, reply = await http_json(
        "POST", server.http + "/api/register", data=body.encode(),
        headers={"Content-Type": "application/json"})
    assert status == 400 and reply["error"]["code"] == "bad_request", reply
    assert "Traceback" not in caplog.text


@pytest.mark.parametrize("frame", [
    b"\x82\xa4type\xa4ping\xa1t\xd6\xff\x00\x00\x00\x01",  # timestamp (ext -1, fixext 4)
    b"\x82\xa4type\xa4ping\xa1t\xd7\xff" + b"\x00" * 8,  # timestamp (ext -1, fixext 8)
    b"\x82\xa4type\xa4ping\xa1t\xd4\x05\x01",  # ext type 5
])
async def test_msgpack_extension_values_are_refused(start_server: StartServer,
                                                    frame: bytes) -> None:
    server = await start_server()
    client = await connect(server, await guest(server), binary=True)
    await client.send_raw(frame)
    reply = await client.expect("error")
    assert reply["code"] == "bad_frame", reply


async def test_text_plain_and_oversized_bodies_get_json_errors(start_server: StartServer) -> None:
    server = await start_server()
    status, _h, reply = await http_json(
        "POST", server.http + "/api/login", data=b'{"name": "a", "password": "b"}',
        headers={"Content-Type": "text/plain"})
    assert status == 415 and reply["error"]["code"] == "unsupported_media_type"
    status, headers, reply = await http_json(
        "POST", server.http + "/api/register", data=b"{" + b" " * 5000 + b"}",
        headers={"Content-Type": "application/json"})
    assert status == 413 and reply["error"]["code"] == "too_big"
    assert headers["Content-Type"].startswith("application/json")


@pytest.mark.parametrize("password", [
    " " * 8, "\x00" * 8, "\t\n\r \x0b\x0c  ", "\u200b" * 8, "password", "12345678",
    "PASSWORD", "iloveyou", "qwertyuiop", "Nimrod42",
])
async def test_weak_passwords_are_refused(start_server: StartServer, password: str) -> None:
    server = await start_server()
    status, _h, reply = await http_json(
        "POST", server.http + "/api/register",
        json_body={"name": "nimrod42", "password": password})
    assert status == 400 and reply["error"]["code"] == "bad_field", (password, reply)
    assert reply["error"]["field"] == "password"


def test_the_common_password_list_is_shipped() -> None:
    words = common_passwords()
    assert 3000 <= len(words) <= 10_000
    assert {"password", "12345678", "iloveyou"} <= words
    assert all(len(w) >= 8 for w in words)


async def test_actions_after_a_single_game_answer_game_over(start_server: StartServer) -> None:
    server = await start_server(dice_factory=scripted(11))
    a = await connect(server, await register(server, "alice"))
    b = await connect(server, await register(server, "bob"))
    table, _ = await seat_two(server, a, b)
    await play_out({0: a, 1: b}, table)
    await a.expect("rating")
    for client in (a, b):
        for action in ({"type": "roll"}, {"type": "double"}, {"type": "resign"}):
            reply = await client.request({**action, "table": table})
            assert reply["type"] == "error" and reply["code"] == "game_over", reply


async def test_the_owner_cache_does_not_grow_with_abandoned_tables(
    start_server: StartServer,
) -> None:
    server = await start_server()
    client = await connect(server, await guest(server))
    for _ in range(50):  # paced by the client at the default message rate
        created = await client.request({"type": "create_table", "mode": "boosted"})
        await client.request({"type": "leave", "table": created["table"]})
    lobby = server.lobby
    # The last table's owner entry goes once its close is done (awaited after the answer to
    # ``leave``): a busy machine may take longer than a tenth of a second.
    for _ in range(500):
        if not lobby.tables and not lobby.registry.owners:
            break
        await asyncio.sleep(0.01)
    assert len(lobby.tables) == 0
    assert len(lobby.registry.owners) == 0
    async with aiohttp.ClientSession() as http, http.get(server.http + "/api/tables") as r:
        assert (await r.json())["total"] == 0


async def test_a_presence_left_after_its_key_is_gone_does_not_stay_for_good(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    from server.app import PERSISTENCE

    server = await start_server()
    persistence = server.app[PERSISTENCE]
    await persistence.presence_join("ghost", "n1", "10.0.0.1")
    key = persistence.keys.presence("ghost")
    await redis_client.delete(key)  # expired, or deleted while the node was closing
    await persistence.presence_leave("ghost", "n1")
    assert await redis_client.pttl(key) > 0


@pytest.mark.parametrize(("query", "field"), [
    ("offset=-1", "offset"), ("offset=x", "offset"), ("limit=0", "limit"),
    ("limit=x", "limit"), ("limit=100000", "limit"), ("mode=nope", "mode"),
])
async def test_a_bad_table_list_query_names_its_field(
    start_server: StartServer, query: str, field: str,
) -> None:
    server = await start_server()
    status, _headers, body = await http_json("GET", f"{server.http}/api/tables?{query}")
    assert status == 400
    assert body["error"]["code"] == "bad_field" and body["error"]["field"] == field
