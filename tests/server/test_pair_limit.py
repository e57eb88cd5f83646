"""Rating farming is bounded, over real sockets, two real nodes and real Redis: an alt account
on another address losing 20 quick rated games moves the main account's rating for the first
``pair_limit`` only; every later game is announced unrated (``pair_limit``) in ``game_start``,
settles nothing, and the stake previews (``GET /api/stakes``, matchmaking's ``match_found``)
say so before the game."""

from __future__ import annotations

from typing import Any

import redis.asyncio as aioredis
from public_helpers import get
from server_helpers import Client, StartServer, connect, register

from rating_plugin.store import RatingStore

LIMIT = 5
GAMES = 20


async def hand_back(table: str, *clients: Client) -> None:
    """Give the seats of a finished table back at once (else they are freed when the table
    winds up, a moment later), so the next game can start without a race."""
    for client in clients:
        reply = await client.request({"type": "leave", "table": table})
        assert reply["type"] == "ack", reply


async def quick_game(main: Client, alt: Client) -> dict[str, Any]:
    """``main`` opens a Competitive single game, ``alt`` joins and leaves at once (a loss by
    leaving); returns ``main``'s game_start."""
    created = await main.request({"type": "create_table", "mode": "competitive"})
    assert created["type"] == "table_created", created
    table = created["table"]
    await alt.send({"type": "join", "table": table})
    start = await main.expect("game_start", table=table)
    await alt.expect("game_start", table=table)
    await alt.send({"type": "leave", "table": table})
    over = await main.expect("game_over", table=table)
    assert over["winner"] == main.player and over["reason"] == "leave"
    assert over["rating"] == start["rating"]  # the settlement agrees with the announcement
    await hand_back(table, main, alt)
    return start


async def test_twenty_quick_alt_games_stop_moving_ratings_at_the_limit(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    one = await start_server(node_id="node-one", pair_limit=LIMIT)
    two = await start_server(node_id="node-two", pair_limit=LIMIT)
    main_token, alt_token = await register(one, "mainacct"), await register(one, "altacct")
    # Two addresses (the same-address rule does not apply), a socket on each node.
    mains = [await connect(s, main_token, address="203.0.113.5") for s in (one, two)]
    alts = [await connect(s, alt_token, address="198.51.100.9") for s in (one, two)]

    status, preview = await get(one, "/api/stakes?player=mainacct&opponent=altacct"
                                     "&pool=competitive")
    assert status == 200
    assert (preview["rated"], preview["unrated_reason"], preview["pair_games"],
            preview["pair_limit"]) == (True, None, 0, LIMIT)

    plans = []
    for n in range(GAMES):
        # Tables alternate between the nodes: the count lives in Redis, not on a node.
        start = await quick_game(mains[n % 2], alts[n % 2])
        plans.append(start["rating"])
    rated = {"rated": True, "ladder": "table42", "boosted": False, "unrated_reason": None}
    limited = {"rated": False, "ladder": None, "boosted": False, "unrated_reason": "pair_limit"}
    assert plans == [rated] * LIMIT + [limited] * (GAMES - LIMIT)

    # Exactly LIMIT settlements: the ratings stand where the LIMIT-th game left them.
    ratings = RatingStore(redis_client, key_prefix)
    main = await ratings.rating("mainacct", "table42")
    alt = await ratings.rating("altacct", "table42")
    assert (main.games, main.wins, alt.games, alt.losses) == (LIMIT, LIMIT, LIMIT, LIMIT)
    history = await ratings.history("mainacct", "table42", limit=50)
    assert len(history) == LIMIT
    assert 1500 < main.rating < 1500 + 16 * LIMIT and main.rating + alt.rating == 3000

    status, preview = await get(two, "/api/stakes?player=altacct&opponent=mainacct"
                                     "&pool=competitive")
    assert status == 200
    assert (preview["rated"], preview["unrated_reason"], preview["pair_games"]) == (
        False, "pair_limit", LIMIT)


async def test_matchmaking_announces_pair_limit_before_the_game(
    start_server: StartServer,
) -> None:
    server = await start_server(pair_limit=1, matchmaking_window_base=400.0)
    tokens = {n: await register(server, n) for n in ("mainacct", "altacct")}
    main = await connect(server, tokens["mainacct"], address="203.0.113.5")
    alt = await connect(server, tokens["altacct"], address="198.51.100.9")
    found = []
    for _ in range(2):
        for client in (main, alt):
            reply = await client.request({"type": "queue", "pool": "competitive"})
            assert reply["type"] == "queued", reply
        message = await main.expect("match_found")
        found.append(message)
        start = await main.expect("game_start", table=message["table"])
        assert start["rating"]["rated"] is message["rated"]
        assert start["rating"]["unrated_reason"] == message["unrated_reason"]
        await alt.expect("game_start", table=message["table"])
        await alt.send({"type": "leave", "table": message["table"]})
        await main.expect("game_over", table=message["table"])
    assert [(m["rated"], m["unrated_reason"], m["ladder"], m["stakes"] is None)
            for m in found] == [(True, None, "table42", False),
                                (False, "pair_limit", None, True)]


async def test_the_limit_off_rates_every_game(start_server: StartServer) -> None:
    server = await start_server(pair_limit=0)
    main_token, alt_token = await register(server, "mainacct"), await register(server, "altacct")
    main = await connect(server, main_token, address="203.0.113.5")
    alt = await connect(server, alt_token, address="198.51.100.9")
    for _ in range(3):
        assert (await quick_game(main, alt))["rating"]["rated"] is True
    status, preview = await get(server, "/api/stakes?player=mainacct&opponent=altacct"
                                        "&pool=competitive")
    assert status == 200 and (preview["rated"], preview["pair_limit"]) == (True, None)
