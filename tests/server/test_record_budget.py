"""The records' budget over real sockets and a real Redis: an account, or an address, that
finished ``records_per_hour`` (``records_per_hour_per_address``) games this hour cannot start
another, and a game under way when the budget filled is settled but not recorded."""

from __future__ import annotations

from typing import Any

import aiohttp
from server_helpers import (
    Client,
    RunningServer,
    StartServer,
    connect,
    play_out,
    register,
    resign_at_once,
    seat_two,
)

# The tests of this limit turn the per-address limits on (the fixtures' servers run with
# them off: every test client comes from loopback) and set the budgets small.
BUDGET = {"limits": True, "records_per_hour": 2, "records_per_hour_per_address": 100}


async def finish_one(server: RunningServer, a: Client, b: Client) -> str:
    """``a`` and ``b`` play a game at a new table, resigned at once; both leave. The game id."""
    table, _ = await seat_two(server, a, b)
    over = await play_out({0: a, 1: b}, table, decide=resign_at_once)
    for client in (a, b):
        assert (await client.request({"type": "leave", "table": table}))["type"] != "error"
    return str(over["game_id"])


async def get(server: RunningServer, path: str) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as http, http.get(server.http + path) as response:
        return response.status, await response.json()


def refused(answer: dict[str, Any]) -> None:
    assert answer["type"] == "error" and answer["code"] == "rate_limited", answer
    assert 3000 < answer["retry_after"] <= 3600, answer


async def test_an_account_that_finished_its_budget_this_hour_cannot_start_another_game(
    start_server: StartServer,
) -> None:
    server = await start_server(**BUDGET)
    a = await connect(server, await register(server, "alice"))
    b = await connect(server, await register(server, "bob"))
    games = [await finish_one(server, a, b) for _ in range(2)]
    for game_id in games:
        assert (await get(server, f"/api/games/{game_id}"))[0] == 200
    # Every kind of new work is refused, whatever address it comes from.
    again = await connect(server, a.token)
    refused(await again.request({"type": "create_table", "mode": "competitive"}))
    refused(await again.request({"type": "play_computer"}))
    refused(await again.request({"type": "queue", "pool": "competitive"}))
    carol = await connect(server, await register(server, "carol"))
    created = await carol.request({"type": "create_table", "mode": "competitive"})
    refused(await a.request({"type": "join", "table": created["table"]}))
    # Another account is not held back by theirs.
    dave = await connect(server, await register(server, "dave"))
    assert (await dave.request({"type": "join", "table": created["table"]}))["type"] != "error"
    status, page = await get(server, "/api/players/alice/games")
    assert (status, page["total"]) == (200, 2)


async def test_an_address_that_finished_its_budget_records_no_further_game_and_starts_none(
    start_server: StartServer,
) -> None:
    server = await start_server(**{**BUDGET, "records_per_hour": 100,
                                   "records_per_hour_per_address": 2})
    crowded = "10.77.0.1"

    async def player(name: str, address: str) -> Client:
        return await connect(server, await register(server, name), address=address)

    # A game from the address starts first and is still being played when two others from
    # the same address (one game each, both players there) fill its budget.
    gina, hank = await player("gina", crowded), await player("hank", "10.78.0.1")
    table, _ = await seat_two(server, gina, hank)
    for n in range(2):
        first, second = await player(f"p{n}a", crowded), await player(f"p{n}b", crowded)
        await finish_one(server, first, second)
    over = await play_out({0: gina, 1: hank}, table, decide=resign_at_once)
    # Settled as any game (the rating store does not depend on records) ...
    status, profile = await get(server, "/api/players/gina")
    assert status == 200 and profile["ladders"]["table42"]["rating"] > 1500, profile
    # ... but not recorded: no replay, no history row.
    assert (await get(server, f"/api/games/{over['game_id']}"))[0] == 404
    for name in ("gina", "hank"):
        assert (await get(server, f"/api/players/{name}/games"))[1]["total"] == 0
    # The address starts nothing more this hour, whichever account asks; others may.
    ivan = await player("ivan", crowded)
    refused(await ivan.request({"type": "create_table", "mode": "competitive"}))
    judy = await player("judy", "10.79.0.1")
    assert (await judy.request({"type": "create_table", "mode": "competitive"}))["type"] \
        == "table_created"
