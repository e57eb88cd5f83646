"""``GET /api/games/{game_id}/review`` over a real server: the review of a finished game
(every decision, every roll's luck, both players' summaries), and its access rule (a
private game only for its own players; a public one for anyone)."""

from __future__ import annotations

from typing import Any

import aiohttp
from server_helpers import (
    RunningServer,
    StartServer,
    connect,
    play_out,
    register,
    scripted,
    seat_two,
)


async def get(server: RunningServer, path: str, token: str | None = None
              ) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as http, http.get(server.http + path,
                                                         headers=headers) as response:
        return response.status, await response.json()


def double_once(side: int, state: dict[str, Any]) -> dict[str, Any] | None:
    """Side 1 doubles at its first chance (side 0 takes: play_out's default)."""
    game = state["game"]
    if side == 1 and game["phase"] == "roll" and game["can_double"] and game["cube"] == 1:
        return {"type": "double"}
    return None


async def test_a_public_games_review_for_anyone(start_server: StartServer) -> None:
    server = await start_server(dice_factory=scripted(7))
    ta, tb = await register(server, "alice"), await register(server, "bob")
    a, b = await connect(server, ta), await connect(server, tb)
    table, _ = await seat_two(server, a, b)
    over = await play_out({0: a, 1: b}, table, decide=double_once)
    game_id = over["game_id"]
    status, record = await get(server, f"/api/games/{game_id}")
    assert status == 200
    for token in (None, ta):  # anyone, with or without an account
        status, review = await get(server, f"/api/games/{game_id}/review", token)
        assert status == 200, review
        assert review["game_id"] == game_id
        assert review["player_ids"] == ["alice", "bob"] and review["names"] == ["alice", "bob"]
    decisions = review["decisions"]
    moved = [e for e in record["events"] if e["type"] == "moved"]
    plays = [d for d in decisions if d["kind"] == "play"]
    assert len(plays) >= len(moved)  # every play, and rolls that could not be played
    assert [d["played"] for d in plays if d["played"]] == [e["play"] for e in moved]
    kinds = {d["kind"] for d in decisions}
    assert {"play", "double", "take", "no_double"} <= kinds
    for d in decisions:
        assert d["error"] >= 0.0 and d["side"] in (0, 1)
        if d["kind"] == "play":
            assert -3.0 <= d["luck"] <= 3.0 and len(d["dice"]) == 2
    for side, player in enumerate(review["players"]):
        assert player["side"] == side
        mine = [d for d in decisions if d["side"] == side]
        assert player["decisions"] == len(mine)
        assert player["moves"] == sum(1 for d in mine if d["kind"] == "play"
                                      and not d["forced"])
        assert abs(player["error_total"] - sum(d["error"] for d in mine)) < 1e-3
        assert len(player["worst"]) <= 3
        assert all(decisions[i]["side"] == side and decisions[i]["error"] > 0
                   for i in player["worst"])
    # The same answer again (kept once computed).
    assert (await get(server, f"/api/games/{game_id}/review"))[1] == review
    status, body = await get(server, "/api/games/nope-g1/review")
    assert status == 404 and body["error"]["code"] == "no_such_game"


async def test_a_private_games_review_only_for_its_players(start_server: StartServer) -> None:
    server = await start_server(dice_factory=scripted(3))
    ta, tb, tc = [await register(server, n) for n in ("alice", "bob", "carol")]
    a, b = await connect(server, ta), await connect(server, tb)
    table, _ = await seat_two(server, a, b, mode="private")
    over = await play_out({0: a, 1: b}, table)
    game_id = over["game_id"]
    for token, expected in ((None, 404), (tc, 404), (ta, 200), (tb, 200)):
        status, body = await get(server, f"/api/games/{game_id}/review", token)
        assert status == expected, body
        if expected == 404:
            assert body["error"]["code"] == "no_such_game"
        else:
            assert len(body["players"]) == 2 and body["decisions"]
