"""``python -m server.admin suspicious`` over a real server's Redis: a pair where one side won
every one of many rated games is listed, a balanced pair is not, and accounts seen from one
network address are grouped (IPv6 by /64); text and ``--json``; bad thresholds exit 2."""

from __future__ import annotations

import asyncio
import json

from admin_helpers import run_admin
from server_helpers import Client, StartServer, connect, register

from server.suspicious import Game, lopsided_pairs, shared_addresses


async def hand_back(table: str, *clients: Client) -> None:
    """Give the seats of a finished table back at once (else they are freed when the table
    winds up, a moment later), so the next game can start without a race."""
    for client in clients:
        reply = await client.request({"type": "leave", "table": table})
        assert reply["type"] == "ack", reply


async def quick_game(winner: Client, loser: Client) -> None:
    created = await winner.request({"type": "create_table", "mode": "competitive"})
    assert created["type"] == "table_created", created
    table = created["table"]
    await loser.send({"type": "join", "table": table})
    start = await winner.expect("game_start", table=table)
    assert start["rating"]["rated"] is True
    await loser.expect("game_start", table=table)
    await loser.send({"type": "leave", "table": table})
    await winner.expect("game_over", table=table)
    await hand_back(table, winner, loser)


async def test_suspicious_lists_lopsided_pairs_and_shared_addresses(
    start_server: StartServer, redis_url: str, key_prefix: str
) -> None:
    server = await start_server(pair_limit=0)
    names = ("mainacct", "altacct", "carol", "dave")
    tokens = {n: await register(server, n) for n in names}
    clients = {
        "mainacct": await connect(server, tokens["mainacct"], address="203.0.113.5"),
        "altacct": await connect(server, tokens["altacct"], address="2001:db8:1:2::10"),
        "carol": await connect(server, tokens["carol"], address="192.0.2.44"),
        "dave": await connect(server, tokens["dave"], address="198.51.100.77"),
    }
    for _ in range(12):
        await quick_game(clients["mainacct"], clients["altacct"])
    for n in range(12):  # carol and dave: six wins each
        first, second = ("carol", "dave") if n % 2 else ("dave", "carol")
        await quick_game(clients[first], clients[second])
    # The alt shows up later from another host of its /64 network, the main's too.
    await connect(server, tokens["mainacct"], address="2001:db8:1:2::99")

    async def settled() -> bool:
        code, out, _ = await run_admin(redis_url, key_prefix, "suspicious", "--json")
        return code == 0 and json.loads(out)["pairs"] != [] \
            and json.loads(out)["pairs"][0]["games"] == 12

    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while not await settled():  # settlements are written just after game_over
        assert loop.time() < deadline
        await asyncio.sleep(0.1)

    code, out, err = await run_admin(redis_url, key_prefix, "suspicious", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["settings"] == {"days": 7.0, "min_games": 10, "min_share": 0.9,
                                  "address_days": 30.0}
    assert [(p["winner"], p["loser"], p["games"], p["wins"], p["share"], p["ladders"])
            for p in report["pairs"]] == [("mainacct", "altacct", 12, 12, 1.0, ["table42"])]
    groups = report["shared_addresses"]
    assert [(g["address"], sorted(a["player"] for a in g["accounts"])) for g in groups] == [
        ("2001:db8:1:2::/64", ["altacct", "mainacct"])]

    code, text, _ = await run_admin(redis_url, key_prefix, "suspicious")
    assert code == 0
    assert "mainacct" in text and "altacct" in text and "100%" in text
    assert "carol" not in text and "2001:db8:1:2::/64" in text
    # A lower share finds the balanced pair too.
    code, out, _ = await run_admin(redis_url, key_prefix, "suspicious", "--json",
                               "--min-share", "0.5")
    assert [p["winner"] for p in json.loads(out)["pairs"]][1:] in (["carol"], ["dave"])

    code, _, err = await run_admin(redis_url, key_prefix, "suspicious", "--min-share", "2")
    assert code == 2 and "--min-share" in err


def test_the_pure_rules() -> None:
    games = [Game("a", "b", "table42", 10.0)] * 9 + [Game("b", "a", "fibs", 20.0)]
    [pair] = lopsided_pairs(games, min_games=10, min_share=0.9)
    assert (pair.winner, pair.loser, pair.games, pair.wins, pair.ladders, pair.last_game) == (
        "a", "b", 10, 9, {"table42", "fibs"}, 20.0)
    assert lopsided_pairs(games, min_games=11, min_share=0.5) == []
    assert lopsided_pairs(games, min_games=10, min_share=0.95) == []
    seen = {"a": {"x": 5.0, "y": 1.0}, "b": {"x": 3.0}, "c": {"y": 9.0}}
    groups = shared_addresses(seen, since=2.0)
    assert [(g.address, g.accounts) for g in groups] == [("x", (("a", 5.0), ("b", 3.0)))]
