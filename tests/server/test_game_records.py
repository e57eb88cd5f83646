"""Finished games' records over real sockets and HTTP: history pages and privacy, the replay
record against the game as played, the .mat download read by GNU Backgammon and by a reader
written here, and the online count."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import time
import zlib
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import redis.asyncio as aioredis
from server_helpers import (
    RunningServer,
    StartServer,
    connect,
    guest,
    play_out,
    register,
    scripted,
    seat_two,
)

from server.app import OWNERSHIP
from server.config import Settings
from server.store.games import GameRecords, ServedMeta
from server.store.keys import Keys
from server.tables.records import game_row

GNUBG = "/usr/games/gnubg"


async def get(server: RunningServer, path: str, token: str | None = None
              ) -> tuple[int, Any, dict[str, str]]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as http, http.get(server.http + path,
                                                         headers=headers) as response:
        if response.content_type == "application/json":
            body: Any = await response.json()
        else:
            body = await response.text()
        return response.status, body, dict(response.headers)


def resign_gammon(side: int, state: dict[str, Any]) -> dict[str, Any] | None:
    """Side 1 offers a gammon at its first decision; side 0 accepts."""
    game = state["game"]
    if game["phase"] == "resign_offered":
        return {"type": "accept_resign"}
    if side == 1 and game["phase"] in ("roll", "move"):
        return {"type": "resign", "kind": "gammon"}
    return None


async def test_a_played_game_is_listed_and_replays_to_its_final_position(
    start_server: StartServer,
) -> None:
    server = await start_server(dice_factory=scripted(7))
    ta, tb = await register(server, "alice"), await register(server, "bob")
    a, b = await connect(server, ta), await connect(server, tb, binary=True)
    table, start = await seat_two(server, a, b)
    over = await play_out({0: a, 1: b}, table)
    game_id = over["game_id"]
    # The record is stored before game_over goes out: readable at once.
    status, record, _ = await get(server, f"/api/games/{game_id}")
    assert status == 200, record
    assert record["players"] == ["alice", "bob"] and record["names"] == ["alice", "bob"]
    assert record["winner"] == over["winner_side"] and record["points"] == over["points"]
    assert record["result"] == "single" and record["rated"] is True
    assert sorted(record["changes"]) == [-16, 16]
    events = record["events"]
    seen = [m for m in a.messages if m.get("table") == table and "v" in m
            and start["v"] <= m["v"] <= over["v"]]
    assert [e["v"] for e in events] == [m["v"] for m in seen]
    assert [e["type"] for e in events] == [m["type"] for m in seen]
    # Every event carries the state after it, equal to what the player saw.
    for event, message in zip(events, seen, strict=True):
        assert event["state"] == message["state"], event["type"]
    final = events[-1]["state"]["game"]
    assert final["phase"] == "over" and final == over["state"]["game"]
    assert max(final["off"]) == 15
    assert record["chat"] == []
    # Both histories list it, each with its own rating change.
    for token, player in ((ta, "alice"), (None, "bob")):
        status, page, _ = await get(server, f"/api/players/{player}/games", token)
        assert status == 200
        assert page["total"] == 1 and page["offset"] == 0
        [row] = page["games"]
        assert row["game_id"] == game_id and row["mode"] == "competitive"
        won = record["players"][record["winner"]] == player
        assert row["change"] == (16 if won else -16)
    status, body, _ = await get(server, "/api/games/nope-g1")
    assert status == 404 and body["error"]["code"] == "no_such_game"
    status, body, _ = await get(server, "/api/players/alice/games?limit=51")
    assert status == 400 and body["error"]["field"] == "limit"


async def test_private_games_are_shown_only_to_their_players(start_server: StartServer) -> None:
    server = await start_server(dice_factory=scripted(3))
    ta, tb, tc = [await register(server, n) for n in ("alice", "bob", "carol")]
    a, b = await connect(server, ta), await connect(server, tb)
    table, _ = await seat_two(server, a, b, mode="private")
    over = await play_out({0: a, 1: b}, table, decide=resign_gammon)
    assert over["reason"] == "resign"
    game_id = over["game_id"]
    for token, total in ((None, 0), (tc, 0), (tb, 0), (ta, 1)):
        status, page, _ = await get(server, "/api/players/alice/games", token)
        assert (status, page["total"], len(page["games"])) == (200, total, total)
    row = (await get(server, "/api/players/alice/games", ta))[1]["games"][0]
    assert (row["result"], row["rated"], row["change"], row["points"]) == (
        "resign", False, None, 2)
    for token, expected in ((None, 404), (tc, 404), (ta, 200), (tb, 200)):
        status, body, _ = await get(server, f"/api/games/{game_id}", token)
        assert status == expected, body
        status, _, _ = await get(server, f"/api/games/{game_id}/mat", token)
        assert status == expected


def record_of(game_no: int, *, mode: str = "competitive", at: float) -> dict[str, Any]:
    return {"game_id": f"t{game_no}-g1", "game_no": 1, "table": f"t{game_no}", "mode": mode,
            "match_length": 0, "tournament_id": None, "players": ["alice", "bob"],
            "names": ["alice", "bob"], "winner": 0, "points": 1, "result": "single",
            "rated": False, "changes": [None, None], "finished_at": at, "events": [],
            "mat_game": "", "mat_match": None}


async def test_history_pages_newest_first_keep_a_bounded_index_and_are_idempotent(
    redis_client: aioredis.Redis, key_prefix: str, make_settings: Any,
) -> None:
    settings: Settings = make_settings(game_index_max=5)
    records = GameRecords(redis_client, Keys(key_prefix), settings)
    now = time.time()
    for n in range(7):
        await records.save(record_of(n, mode="private" if n % 3 == 0 else "competitive",
                                     at=now - 100 + n))
    await records.save(record_of(6, mode="private", at=now - 94))  # again: no change
    total, rows = await records.page("alice", offset=0, limit=50, private=True)
    assert total == 5  # the two oldest dropped out
    assert [r["game_id"] for r in rows] == [f"t{n}-g1" for n in (6, 5, 4, 3, 2)]
    total, rows = await records.page("alice", offset=1, limit=2, private=True)
    assert [r["game_id"] for r in rows] == ["t5-g1", "t4-g1"] and total == 5
    total, rows = await records.page("bob", offset=0, limit=50, private=False)
    assert [r["game_id"] for r in rows] == ["t5-g1", "t4-g1", "t2-g1"] and total == 3
    assert rows[0] == game_row(record_of(5, at=now - 95), "bob")
    assert await records.load("t0-g1") is not None  # the record outlives its index entry


async def test_a_record_is_stored_compact_and_served_as_before(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str,
) -> None:
    """The .mat text is kept gzip (sent as it is to a client that accepts gzip, decompressed
    to any other), the meta and the history rows as msgpack arrays; the JSON forms earlier
    versions stored are read alike."""
    server = await start_server(dice_factory=scripted(7))
    ta, tb = await register(server, "alice"), await register(server, "bob")
    a, b = await connect(server, ta), await connect(server, tb)
    table, _ = await seat_two(server, a, b)
    game_id = (await play_out({0: a, 1: b}, table))["game_id"]
    keys = Keys(key_prefix)
    stored = await redis_client.hgetall(keys.game_served(game_id))  # type: ignore[misc]
    assert stored[b"mat_game"][:2] == b"\x1f\x8b"
    _, page, _ = await get(server, "/api/players/alice/games")
    _, record, _ = await get(server, f"/api/games/{game_id}")
    row = await redis_client.hget(keys.player_game_rows("alice"), game_id)  # type: ignore[misc]
    assert row is not None and len(row) < len(json.dumps(page["games"][0])) / 2
    texts = []
    async with aiohttp.ClientSession(auto_decompress=False) as http:
        for encoding in ("gzip", "identity"):
            async with http.get(f"{server.http}/api/games/{game_id}/mat",
                                headers={"Accept-Encoding": encoding}) as response:
                assert response.status == 200
                assert response.headers.get("Content-Encoding") == (
                    "gzip" if encoding == "gzip" else None)
                texts.append(await response.read())
    assert texts[0] == stored[b"mat_game"]
    assert zlib.decompress(texts[0], 31) == texts[1] and b"point match" in texts[1]
    # As earlier versions stored them: a JSON meta and a JSON row.
    meta = ServedMeta.decode(stored[b"meta"])
    await redis_client.hset(keys.game_served(game_id), "meta", json.dumps({  # type: ignore[misc]
        "game_id": meta.game_id, "table": meta.table, "game_no": meta.game_no,
        "players": list(meta.players), "private": not meta.audience.listed,
        "head_len": meta.head_len,
        "chat": [meta.chat.count, meta.chat.last]}))
    await redis_client.hset(keys.player_game_rows("alice"), game_id,  # type: ignore[misc]
                            json.dumps(page["games"][0]))
    assert (await get(server, "/api/players/alice/games"))[1] == page
    assert (await get(server, f"/api/games/{game_id}"))[1] == record


# --- .mat ------------------------------------------------------------------------------------


def read_mat(text: str) -> tuple[int, list[dict[str, Any]]]:
    """An independent reader of .mat text: the match length and, per game, the names, the
    scores and the entries of each side (``(side, text)``), and the winner's points."""
    lines = text.splitlines()
    length = next(int(m.group(1)) for line in lines
                  if (m := re.match(r"\s*(\d+) point match", line)))
    games: list[dict[str, Any]] = []
    for line in lines:
        if re.match(r"\s*Game \d+", line):
            games.append({"entries": [], "wins": None})
            continue
        if not games:
            continue
        game = games[-1]
        head = re.match(r"\s*(\S+) : (\d+)\s+(\S+) : (\d+)\s*$", line)
        if head and "names" not in game:
            game["names"] = (head.group(1), head.group(3))
            game["score"] = (int(head.group(2)), int(head.group(4)))
            continue
        numbered = re.match(r"\s*\d+\)(.*)$", line)
        body = numbered.group(1) if numbered else line
        if not body.strip():
            continue
        # Column 34 starts side 1's entry on a numbered line (after "nnn) ").
        left, right = (body[:29], body[29:]) if numbered else (body[:34], body[34:])
        if not numbered:
            left, right = (line[:34], line[34:])
        for side, part in ((0, left), (1, right)):
            part = part.strip()
            if not part:
                continue
            wins = re.match(r"Wins (\d+) points?", part)
            if wins:
                game["wins"] = (side, int(wins.group(1)))
            else:
                game["entries"].append((side, part))
    return length, games


def replay_board(entries: list[tuple[int, str]]) -> list[int]:
    """Side 0's view of the board after ``entries`` (24 signed counts, side 0 positive),
    moving checkers as written: each side's points in its own numbering, 25 the bar, 0 off."""
    board = [0] * 24
    for point, count in ((24, 2), (13, 5), (8, 3), (6, 5)):
        board[point - 1] += count
        board[24 - point] -= count
    for side, entry in entries:
        match = re.match(r"\d\d:(.*)", entry)
        if not match:
            continue  # a cube action
        for step in match.group(1).split():
            src, dst = (int(x) for x in step.rstrip("*").split("/"))
            sign = 1 if side == 0 else -1

            def index(p: int, side: int = side) -> int:
                return p - 1 if side == 0 else 24 - p

            if src != 25:
                board[index(src)] -= sign
            if dst != 0:
                if step.endswith("*"):
                    board[index(dst)] += sign  # the opponent's blot goes to the bar
                board[index(dst)] += sign
    return board


async def play_one(start_server: StartServer, seed: int, match_length: int = 0
                   ) -> tuple[RunningServer, str, str, dict[str, Any]]:
    server = await start_server(dice_factory=scripted(seed))
    a = await connect(server, await register(server, "alice"))
    b = await connect(server, await register(server, "bob"))
    table, _ = await seat_two(server, a, b, match_length=match_length)
    over = await play_out({0: a, 1: b}, table, until="match_over" if match_length else "game_over")
    last = next(m for m in reversed(a.messages) if m.get("type") == "game_over")
    return server, table, last["game_id"], over


async def test_the_mat_download_replays_to_the_final_board(start_server: StartServer) -> None:
    server, _, game_id, _ = await play_one(start_server, 11)
    status, text, headers = await get(server, f"/api/games/{game_id}/mat")
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain")
    assert headers["Content-Disposition"] == f'attachment; filename="{game_id}.mat"'
    _, record, _ = await get(server, f"/api/games/{game_id}")
    length, [game] = read_mat(text)
    assert length == 0 and game["names"] == ("alice", "bob") and game["score"] == (0, 0)
    assert game["wins"] == (record["winner"], record["points"])
    final = record["events"][-1]["state"]["game"]
    # Borne-off checkers leave the board: the replayed board matches the final one.
    assert replay_board(game["entries"]) == final["board"]


async def test_a_match_download_holds_every_game_up_to_this_one(
    start_server: StartServer,
) -> None:
    server, table, last_id, over = await play_one(start_server, 5, match_length=3)
    _, whole, _ = await get(server, f"/api/games/{last_id}/mat?match=1")
    _, one, _ = await get(server, f"/api/games/{last_id}/mat")
    length, games = read_mat(whole)
    assert length == 3 and len(games) == int(last_id.rsplit("-g", 1)[1])
    assert sum(points for side, points in (g["wins"] for g in games) if side == 0) == \
        over["score"][0]
    assert read_mat(one)[1][0]["entries"] == games[-1]["entries"]
    status, body, _ = await get(server, f"/api/games/{table}-g1/mat?match=2")
    assert status == 400 and body["error"]["field"] == "match"


@pytest.mark.skipif(not Path(GNUBG).exists(), reason="GNU Backgammon is not installed")
async def test_gnu_backgammon_imports_the_match(start_server: StartServer, tmp_path: Path
                                                ) -> None:
    server, _, last_id, over = await play_one(start_server, 5, match_length=3)
    _, text, _ = await get(server, f"/api/games/{last_id}/mat?match=1")
    path = tmp_path / f"{last_id}.mat"
    path.write_text(text)
    games = int(last_id.rsplit("-g", 1)[1])
    done = await asyncio.to_thread(
        subprocess.run, [GNUBG, "-t", "-q"], input=f"import mat {path}\nshow score\n",
        capture_output=True, text=True, timeout=120)
    assert (f"The score (after {games} game{'s' if games > 1 else ''}) is: "
            f"alice {over['score'][0]}, bob {over['score'][1]} (match to 3 points"
            ) in done.stdout, done.stdout[-2000:]


# --- online ------------------------------------------------------------------------------------


async def test_online_counts_the_players_connected_over_the_live_nodes(
    start_nodes: Any,
) -> None:
    one, two = await start_nodes(2)
    for name in ("alice", "bob"):
        await connect(one, await register(one, name))
    await connect(two, await register(two, "carol"))
    for node in (one, two):
        await node.app[OWNERSHIP].beat_once()  # the alive refresh writes the count
    status, body, _ = await get(one, "/api/online")
    assert (status, body) == (200, {"players": 3})
    await two.stop()  # a node that stops counts no more
    assert (await get(one, "/api/online"))[1] == {"players": 2}


async def test_table_summaries_name_every_seated_player(start_server: StartServer) -> None:
    server = await start_server()
    a = await connect(server, await guest(server))
    created = await a.request({"type": "create_table", "mode": "competitive"})
    welcome = a.of_type("welcome")[0]
    assert welcome["name"].startswith("Guest ")
    assert created["summary"]["players"] == [a.player, None]
    assert created["summary"]["names"] == [welcome["name"], None]
    b = await connect(server, await register(server, "bob"))
    listed = await b.request({"type": "list_tables"})
    [summary] = [t for t in listed["tables"] if t["table"] == created["table"]]
    assert summary["names"] == [welcome["name"], None]
    await b.send({"type": "join", "table": created["table"]})
    start = await a.expect("game_start", table=created["table"])
    b2 = await connect(server, b.token)
    resume = await b2.expect("resume", table=created["table"])
    # The stake line after a reload: the game's rating plan, as game_start gave it.
    assert resume["state"]["rating"] == start["rating"]
    assert resume["summary"]["names"] == [welcome["name"], "bob"]


async def test_a_record_is_kept_on_a_redis_cluster(
    start_server: StartServer, redis_cluster_url: str, redis_cluster: aioredis.RedisCluster,
) -> None:
    """A cluster client takes no MULTI: the served record is written by one script of its
    slot, and is read back as on one Redis."""
    server = await start_server(
        dice_factory=scripted(7),
        redis_url="redis+cluster://" + redis_cluster_url.removeprefix("redis://"))
    ta, tb = await register(server, "alice"), await register(server, "bob")
    a, b = await connect(server, ta), await connect(server, tb)
    table, _ = await seat_two(server, a, b)
    game_id = (await play_out({0: a, 1: b}, table))["game_id"]
    status, record, _ = await get(server, f"/api/games/{game_id}")
    assert status == 200 and record["game_id"] == game_id
    status, page, _ = await get(server, "/api/players/alice/games")
    assert status == 200 and [g["game_id"] for g in page["games"]] == [game_id]
