"""Caps that hold under concurrent requests (the place is taken before any await), and the
login throttle that never locks the owner out. Real servers, real sockets, real Redis."""

from __future__ import annotations

import asyncio
import json

import aiohttp
from hardening_helpers import http_json
from server_helpers import StartServer, connect, register

FLOODER = "198.51.100.7"


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
        assert server.lobby.hub.address_count(FLOODER) == 16
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
