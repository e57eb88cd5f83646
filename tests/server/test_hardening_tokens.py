"""Hardening, token end: a token's end ends its sockets, on every node, with close code 4001.

As the attack was made: sockets stay open while the token is logged out, expires, has its
account's password changed, or is revoked by an operator; each socket must close (and so stop
creating tables) instead of playing on.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import redis.asyncio as aioredis
from hardening_helpers import ROOT, http_json
from server_helpers import StartServer, connect, guest, register

from server.net.connection import CLOSE_TOKEN_ENDED

PASSWORD = "correct horse"


async def test_logout_closes_the_tokens_sockets_on_every_node(start_server: StartServer) -> None:
    one = await start_server(node_id="tok-a")
    two = await start_server(node_id="tok-b")
    token = await register(one, "alice")
    other = await register(one, "bob")
    here = await connect(one, token)
    there = await connect(two, token, hello=True)
    bystander = await connect(two, other)
    status, _h, _b = await http_json("POST", one.http + "/api/logout",
                                     headers={"Authorization": f"Bearer {token}"})
    assert status == 204
    loop = asyncio.get_running_loop()
    started = loop.time()
    for client in (here, there):
        assert await client.wait_closed(timeout=5.0) == CLOSE_TOKEN_ENDED
    elapsed = loop.time() - started
    print(f"logout -> both sockets closed in {elapsed * 1000:.0f} ms")
    # Only that token's sockets: the other player's socket still plays.
    reply = await bystander.request({"type": "create_table", "mode": "boosted"})
    assert reply["type"] == "table_created", reply
    status, _h, _b = await http_json("GET", one.http + "/api/me",
                                     headers={"Authorization": f"Bearer {token}"})
    assert status == 401


async def test_an_expiring_token_closes_its_socket(start_server: StartServer) -> None:
    server = await start_server(token_ttl=1.5)
    client = await connect(server, await register(server, "alice"))
    assert await client.wait_closed(timeout=10.0) == CLOSE_TOKEN_ENDED
    assert client.ws is not None and client.ws.close_reason == "token expired"


async def test_a_password_change_ends_every_token_of_the_account(
    start_server: StartServer,
) -> None:
    one = await start_server(node_id="pw-a")
    two = await start_server(node_id="pw-b")
    first = await register(one, "alice", PASSWORD)
    status, _h, second = await http_json("POST", one.http + "/api/login",
                                         json_body={"name": "alice", "password": PASSWORD})
    assert status == 200
    sockets = [await connect(one, first), await connect(two, second["token"])]
    status, _h, changed = await http_json(
        "POST", two.http + "/api/password", headers={"Authorization": f"Bearer {first}"},
        json_body={"password": PASSWORD, "new_password": "a brand new secret"})
    assert status == 200, changed
    for client in sockets:
        assert await client.wait_closed(timeout=5.0) == CLOSE_TOKEN_ENDED
    fresh = await connect(one, changed["token"])
    assert fresh.player == "alice"
    status, _h, _b = await http_json("POST", one.http + "/api/login",
                                     json_body={"name": "alice", "password": PASSWORD})
    assert status == 401


async def _admin_revoke(redis_url: str, key_prefix: str, player: str) -> str:
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "server.admin", "--redis-url", redis_url, "--key-prefix",
         key_prefix, "revoke", player],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
        timeout=60, check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_an_operator_revoke_closes_the_sockets(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str, redis_url: str
) -> None:
    server = await start_server()
    client = await connect(server, await register(server, "alice"))
    visitor = await connect(server, await guest(server))
    assert "1 token(s)" in await _admin_revoke(redis_url, key_prefix, "Alice")
    assert await client.wait_closed(timeout=5.0) == CLOSE_TOKEN_ENDED
    assert client.ws is not None and client.ws.close_reason == "revoked by an operator"
    assert "1 token(s)" in await _admin_revoke(redis_url, key_prefix, visitor.player)
    assert await visitor.wait_closed(timeout=5.0) == CLOSE_TOKEN_ENDED
