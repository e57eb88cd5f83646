"""Caps that hold under concurrent requests (the place is taken before any await), and the
login throttle that never locks the owner out. Real servers, real sockets, real Redis."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import aiohttp
from hardening_helpers import http_json
from server_helpers import StartServer, connect, register

FLOODER = "198.51.100.7"
ROOT = Path(__file__).resolve().parents[2]


async def test_three_hundred_concurrent_upgrades_from_one_address_get_the_cap(
    start_server: StartServer,
) -> None:
    server = await start_server(limits=True, max_sockets_per_address=16,
                                max_connections_per_player=1000)
    token = await register(server, "alice")
    headers = {"X-Forwarded-For": FLOODER, "Authorization": f"Bearer {token}"}
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as http:

        async def upgrade() -> aiohttp.ClientWebSocketResponse | int:
            try:
                return await http.ws_connect(server.ws_url, headers=headers)
            except aiohttp.WSServerHandshakeError as exc:
                return exc.status

        outcomes = await asyncio.gather(*(upgrade() for _ in range(300)))
        sockets = [o for o in outcomes if not isinstance(o, int)]
        refused = [o for o in outcomes if isinstance(o, int)]
        assert len(sockets) == 16 and refused == [429] * 284, (len(sockets), set(refused))
        assert server.hub.address_count(FLOODER) == 16
        for ws in sockets:
            await ws.close()
    # Every place is given back when its socket closes.
    other = await connect(server, token, address=FLOODER)
    assert other.welcome is not None
    await other.close()


async def test_concurrent_hellos_of_one_player_get_the_per_player_cap(
    start_server: StartServer,
) -> None:
    server = await start_server(limits=True, max_connections_per_player=3)
    token = await register(server, "alice")
    async with aiohttp.ClientSession() as http:
        sockets = [await http.ws_connect(server.ws_url,
                                         headers={"X-Forwarded-For": f"10.9.0.{i}"})
                   for i in range(12)]
        await asyncio.gather(*(ws.send_str(json.dumps({"type": "hello", "token": token}))
                               for ws in sockets))
        answers = [json.loads((await ws.receive()).data) for ws in sockets]
        kinds = sorted(a["type"] if a["type"] == "welcome" else a["code"] for a in answers)
        assert kinds == ["too_many_connections"] * 9 + ["welcome"] * 3, kinds
        for ws in sockets:
            await ws.close()


async def test_concurrent_creates_from_one_address_get_the_open_table_cap(
    start_server: StartServer,
) -> None:
    server = await start_server(limits=True, max_open_tables_per_address=3,
                                table_create_burst=100, max_sockets_per_address=100)
    players = [await connect(server, await register(server, f"p{i}x"), address=FLOODER)
               for i in range(10)]
    answers = await asyncio.gather(*(p.request({"type": "create_table", "mode": "private"})
                                     for p in players))
    kinds = sorted(a["type"] if a["type"] == "table_created" else a["code"] for a in answers)
    assert kinds == ["rate_limited"] * 7 + ["table_created"] * 3, kinds


async def _login(server_http: str, address: str, password: str) -> int:
    status, _h, _b = await http_json("POST", server_http + "/api/login",
                                     headers={"X-Forwarded-For": address},
                                     json_body={"name": "owner", "password": password})
    return status


async def test_guesses_from_many_addresses_never_lock_the_owner_out(
    start_server: StartServer, redis_url: str, key_prefix: str,
) -> None:
    # 10 failures lock one address out of the account, 50 from all addresses hold back
    # every address the account does not know (no growing delay before: exact counts).
    server = await start_server(limits=True, login_free_failures=10, login_lock_after=10,
                                login_account_lock_after=50)
    home, laptop, new = "203.0.113.10", "203.0.113.20", "203.0.113.30"
    status, _h, _b = await http_json("POST", server.http + "/api/register",
                                     headers={"X-Forwarded-For": home},
                                     json_body={"name": "owner", "password": "correct horse"})
    assert status == 201
    assert await _login(server.http, laptop, "correct horse") == 200
    guessers = [f"198.51.100.{i}" for i in range(1, 6)]
    for address in guessers:
        statuses = [await _login(server.http, address, f"wrong guess {n}") for n in range(10)]
        assert statuses == [401] * 10, statuses
    assert await _login(server.http, guessers[0], "correct horse") == 429  # locked out
    assert await _login(server.http, new, "correct horse") == 429  # an unknown address waits
    # The owner: from the address it registered from, and from one it logged in from.
    assert await _login(server.http, home, "correct horse") == 200
    assert await _login(server.http, laptop, "correct horse") == 200
    # More guesses change nothing for them.
    assert await _login(server.http, "198.51.100.99", "wrong again") == 429
    assert await _login(server.http, home, "correct horse") == 200
    # The operator forgets the failures: every address may try again.
    done = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "server.admin", "--redis-url", redis_url, "--key-prefix",
        key_prefix, "unlock", "Owner", stdout=asyncio.subprocess.PIPE, cwd=ROOT)
    out, _ = await done.communicate()
    assert done.returncode == 0 and b"forgotten" in out, out
    assert await _login(server.http, new, "correct horse") == 200
    assert await _login(server.http, guessers[0], "correct horse") == 200
