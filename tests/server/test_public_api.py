"""The public read API against a real server and real Redis: leaderboards, profiles, history,
the calculator (pinned to docs/rating-engine.md), stake previews, the computer's levels, every
error status, the rate limit and the OpenAPI document's coverage of every route."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from public_helpers import get, request
from server_helpers import (
    RunningServer,
    StartServer,
    connect,
    play_out,
    register,
    scripted,
    seat_two,
)

from rating_plugin import stakes, table42
from rating_plugin.store import RatingStore
from server.bot.ladder import ALIASES, LADDER
from server.bot.strategy import LEVEL_NAMES
from server.net.public_api import load_openapi

ROOT = Path(__file__).resolve().parents[2]


async def settled_world(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str
) -> RunningServer:
    """Alice, Bob and Carol with accounts and a few games settled through the real store:

    Table42: alice beats bob, alice beats carol, carol beats bob (1532, 1500, 1468).
    FIBS: alice beats bob in a match to 11 (both on the board), carol beats alice in a match
    to 3 (carol stays "new"). Boosted: carol wins 4 points.
    """
    server = await start_server()
    for name in ("Alice", "bob", "carol"):
        await register(server, name)
    store = RatingStore(redis_client, key_prefix)
    now = time.time()
    for i, (winner, loser) in enumerate([("alice", "bob"), ("alice", "carol"),
                                         ("carol", "bob")]):
        await store.settle(f"g{i}", ladder="table42", winner=winner, loser=loser,
                           finished_at=now - 300 + i)
    await store.settle("m1", ladder="fibs", winner="alice", loser="bob", match_length=11,
                       finished_at=now - 200)
    await store.settle("m2", ladder="fibs", winner="carol", loser="alice", match_length=3,
                       finished_at=now - 100)
    await store.add_boosted_points("b1", winner="carol", loser="bob", points=4,
                                   finished_at=now)
    return server


async def test_leaderboards_paging_and_own_rank(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    server = await settled_world(start_server, redis_client, key_prefix)
    status, body = await get(server, "/api/leaderboard/table42")
    assert status == 200
    assert (body["total"], body["offset"], body["limit"], body["player"]) == (3, 0, 20, None)
    assert [(e["rank"], e["player"], e["rating"], e["shown"]) for e in body["entries"]] == [
        (1, "alice", 1532, "1532"), (2, "carol", 1500, "1500"), (3, "bob", 1468, "1468"),
    ]
    status, body = await get(server, "/api/leaderboard/table42?offset=1&limit=1&player=bob")
    assert [(e["rank"], e["player"]) for e in body["entries"]] == [(2, "carol")]
    assert body["player"] == {"player": "bob", "rank": 3, "rating": 1468, "shown": "1468"}
    status, body = await get(server, "/api/leaderboard/table42?offset=3")
    assert (status, body["entries"], body["total"]) == (200, [], 3)

    # FIBS: carol's experience is 3, so she is "new" and off the board.
    status, body = await get(server, "/api/leaderboard/fibs?player=carol")
    assert [e["player"] for e in body["entries"]] == ["alice", "bob"]
    assert body["total"] == 2
    alice = body["entries"][0]
    assert alice["rank"] == 1 and alice["shown"] == f"{alice['rating']:.2f}"
    assert body["player"]["rank"] is None and body["player"]["shown"] == "new"
    assert body["player"]["rating"] > 1500

    status, body = await get(server, "/api/leaderboard/boosted?player=alice")
    assert [(e["rank"], e["player"], e["rating"]) for e in body["entries"]] == [(1, "carol", 4)]
    assert body["player"] == {"player": "alice", "rank": None, "rating": 0, "shown": "0"}


async def test_profile_and_history(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    server = await settled_world(start_server, redis_client, key_prefix)
    status, body = await get(server, "/api/players/alice")
    assert status == 200
    assert (body["player"], body["name"], body["guest"], body["bot"]) == (
        "alice", "Alice", False, False)
    t42 = body["ladders"]["table42"]
    assert t42 == {"rating": 1532, "shown": "1532", "rank": 1, "games": 2, "wins": 2,
                   "losses": 0}
    fibs = body["ladders"]["fibs"]
    assert (fibs["games"], fibs["wins"], fibs["losses"], fibs["experience"], fibs["is_new"],
            fibs["rank"]) == (2, 1, 1, 14, False, 1)
    assert body["ladders"]["boosted"] == {"points": 0, "rank": None}
    assert body["window"] == {"recent_games": 2, "k": 32}
    assert "token" not in json.dumps(body) and "hash" not in json.dumps(body)

    status, body = await get(server, "/api/players/carol")
    assert body["ladders"]["fibs"]["shown"] == "new" and body["ladders"]["fibs"]["rank"] is None
    assert body["ladders"]["boosted"] == {"points": 4, "rank": 1}

    status, body = await get(server, "/api/players/alice/history?limit=5")
    assert status == 200 and body["ladder"] == "table42"
    assert [(e["ref"], e["opponent"], e["won"], e["rating_before"], e["rating_after"],
             e["change"]) for e in body["entries"]] == [
        ("g1", "carol", True, 1516, 1532, 16), ("g0", "bob", True, 1500, 1516, 16)]
    status, body = await get(server, "/api/players/alice/history?ladder=fibs&limit=1")
    assert [(e["ref"], e["won"]) for e in body["entries"]] == [("m2", False)]

    # An account that never played has a profile at the start ratings; nobody else has one.
    await register(server, "dave")
    status, body = await get(server, "/api/players/dave")
    assert status == 200 and body["ladders"]["table42"]["rating"] == 1500
    assert body["ladders"]["fibs"]["shown"] == "new"
    status, body = await get(server, "/api/players/nobody")
    assert (status, body["error"]["code"], body["error"]["field"]) == (404, "not_found",
                                                                       "player")


def resign_at_once(side: int, state: dict[str, Any]) -> dict[str, Any] | None:
    game = state["game"]
    if game["phase"] == "roll":
        return {"type": "resign", "kind": "single"}
    if game["phase"] == "resign_offered":
        return {"type": "accept_resign"}
    return None


async def test_a_game_played_over_the_socket_shows_on_the_board_and_profile(
    start_server: StartServer,
) -> None:
    # Distinct X-Forwarded-For addresses (the test server trusts 127.0.0.1): the game is rated.
    server = await start_server(dice_factory=scripted(3))
    a = await connect(server, await register(server, "ann"), address="10.9.0.1")
    b = await connect(server, await register(server, "ben"), address="10.9.0.2")
    table, start = await seat_two(server, a, b)
    assert start["rating"]["rated"] is True
    over = await play_out({0: a, 1: b}, table, decide=resign_at_once)
    events = {c.player: await c.expect("rating") for c in (a, b)}
    winner, loser = over["winner"], ({"ann", "ben"} - {over["winner"]}).pop()
    status, board = await get(server, f"/api/leaderboard/table42?player={loser}")
    assert status == 200
    assert [(e["player"], e["rating"]) for e in board["entries"]] == [
        (winner, events[winner]["new"]), (loser, events[loser]["new"])]
    assert board["player"]["rank"] == 2
    status, profile = await get(server, f"/api/players/{winner}")
    assert status == 200
    assert profile["ladders"]["table42"]["rating"] == 1516 == events[winner]["new"]
    assert (profile["ladders"]["table42"]["wins"], profile["window"]) == (
        1, {"recent_games": 1, "k": 32})
    status, history = await get(server, f"/api/players/{loser}/history")
    assert status == 200
    [entry] = history["entries"]
    assert (entry["ref"], entry["opponent"], entry["won"], entry["change"]) == (
        events[loser]["game_id"], winner, False, -16)
    for client in (a, b):
        await client.close()


# (query, field, expected): docs/rating-engine.md, the Table42, FIBS and classic Elo examples.
CALCULATOR_CASES: list[tuple[str, str, Any]] = [
    # K=32, cube 1: the favourite's and the underdog's win, by rating difference
    *[(f"table42?rating={1500 + d}&opponent=1500&result=win", "change", fav)
      for d, fav in ((0, 16), (100, 14), (200, 13), (300, 12), (400, 10))],
    *[(f"table42?rating=1500&opponent={1500 + d}&result=win", "change", dog)
      for d, dog in ((0, 16), (100, 18), (200, 19), (300, 20), (400, 22))],
    # K=16 (50+ games this week): the favourite wins / loses
    ("table42?rating=1650&opponent=1500&result=win&recent_games=60", "change", 7),
    ("table42?rating=1650&opponent=1500&result=loss&recent_games=60", "change", -9),
    ("table42?rating=1800&opponent=1500&result=loss&recent_games=50", "change", -10),
    # the formula versions, a 300-point favourite
    ("table42?rating=1800&opponent=1500&result=win&version=1.0.5", "change", 5),
    ("table42?rating=1800&opponent=1500&result=loss&version=1.0.5", "change", -27),
    ("table42?rating=1800&opponent=1500&result=win&version=1.2.0", "change", 9),
    ("table42?rating=1800&opponent=1500&result=loss&version=1.2.0", "change", -23),
    # the cube, two 1500 players, K=32 and K=16
    *[(f"table42?rating=1500&opponent=1500&result=win&cube={c}", "change", v)
      for c, v in ((1, 16), (2, 19), (4, 21), (8, 24), (16, 27), (32, 29), (64, 32))],
    *[(f"table42?rating=1500&opponent=1500&result=loss&cube={c}&k=16", "change", v)
      for c, v in ((1, -8), (4, -11), (64, -16))],
    # mixed K: you K=16, the opponent K=32
    ("table42?rating=1500&opponent=1500&result=win&recent_games=60", "opponent_change", -16),
    ("table42?rating=1500&opponent=1500&result=loss&recent_games=60", "change", -8),
    # FIBS
    ("fibs?rating=1500&opponent=1500&result=win&length=1", "change", 2.0),
    ("fibs?rating=1500&opponent=1500&result=win&length=9", "change", 6.0),
    ("fibs?rating=1500&opponent=1500&result=win&length=1&experience=150", "change", 7.0),
    ("fibs?rating=1500&opponent=1500&result=win&length=1&experience=150", "multiplier", 3.5),
    # classic Elo: 1500 beats 1600 with K 32
    ("elo?rating=1500&opponent=1600&result=win&k=32", "new_rating", 1520.48),
    ("elo?rating=1500&opponent=1600&result=win&k=32", "change", 20.48),
    ("elo?rating=1500&opponent=1600&result=win&k=32", "expected_score", 0.3599),
    ("elo?rating=1500&opponent=1600&result=draw&preset=amateur", "change", 4.48),
    ("elo?rating=2350&opponent=2100&result=draw&preset=fide&games=10", "k", 40),
    ("elo?rating=2350&opponent=2100&result=draw&preset=fide&games=100", "k", 20),
    ("elo?rating=2350&opponent=2100&result=draw&preset=fide&games=100&peak=2410", "k", 10),
    ("elo?rating=2200&opponent=2100&result=win&preset=fide&games=100&age=16", "k", 40),
]


async def test_calculator_pins_spec_numbers(start_server: StartServer) -> None:
    server = await start_server()
    for query, field, expected in CALCULATOR_CASES:
        status, body = await get(server, "/api/calculator/" + query)
        assert status == 200, (query, body)
        value = body[field]
        if isinstance(expected, float):
            assert round(value, 4 if field == "expected_score" else 2) == expected, query
        else:
            assert value == expected, query


@pytest.mark.parametrize("path, argv", [
    ("/api/calculator/table42?rating=1500&opponent=1800&result=loss&cube=4&recent_games=60",
     ["table42", "1500", "1800", "--result", "loss", "--cube", "4", "--recent-games", "60"]),
    ("/api/calculator/fibs?rating=1500&opponent=1620.5&result=win&length=5&experience=150",
     ["fibs", "1500", "1620.5", "--result", "win", "--length", "5", "--experience", "150"]),
    ("/api/calculator/elo?rating=2450&opponent=2000&result=loss&preset=fide&games=300",
     ["elo", "2450", "2000", "--result", "loss", "--preset", "fide", "--games", "300"]),
    ("/api/stakes/table42?rating=1500&opponent=1800&cube=2",
     ["stakes", "table42", "1500", "1800", "--cube", "2"]),
    ("/api/stakes/elo?rating=1500&opponent=1600&k=20&max_difference=400",
     ["stakes", "elo", "1500", "1600", "--k", "20", "--max-difference", "400"]),
])
async def test_calculator_answers_what_the_command_line_prints(
    start_server: StartServer, path: str, argv: list[str]
) -> None:
    server = await start_server()
    status, body = await get(server, path)
    printed = subprocess.run(
        [sys.executable, "-m", "rating_plugin", *argv, "--json"], cwd=ROOT,
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout
    assert status == 200 and body == json.loads(printed)


async def test_stake_preview_of_two_stored_players(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    server = await settled_world(start_server, redis_client, key_prefix)
    status, body = await get(server, "/api/stakes?player=bob&opponent=alice")
    assert status == 200
    expected = stakes.table42_stakes(1468, 1532, cube=1, k=32, opponent_k=32).to_dict()
    assert body == {**expected, "pool": "competitive", "ladder": "table42", "rated": True,
                    "unrated_reason": None, "pair_games": 0, "pair_limit": 5}
    assert (body["player"]["win"], body["player"]["loss"]) == (
        table42.change(1468, 1532).winner, table42.change(1532, 1468).loser)

    status, body = await get(server, "/api/stakes?player=carol&opponent=alice&pool=match-3")
    assert status == 200 and body["system"] == "fibs" and body["match_length"] == 3
    assert body["player"]["multiplier"] == pytest.approx(5 - 3 / 100)
    for query, code, field in [
        ("player=carol&opponent=alice&pool=boosted", "bad_field", "pool"),
        ("player=carol&opponent=alice&pool=match-99", "unknown_pool", "pool"),
        ("player=carol&opponent=carol", "bad_field", "opponent"),
        ("player=carol", "missing_field", "opponent"),
    ]:
        status, body = await get(server, "/api/stakes?" + query)
        assert (status, body["error"]["code"], body["error"]["field"]) == (400, code, field)
    status, body = await get(server, "/api/stakes?player=carol&opponent=zed")
    assert (status, body["error"]["code"], body["error"]["field"]) == (404, "not_found",
                                                                       "opponent")


async def test_every_error_status_is_json(start_server: StartServer) -> None:
    server = await start_server()
    # 404: unknown path, ladder, system; 405 with Allow
    for path, field in [("/api/nowhere", None), ("/api/leaderboard/chess", "ladder"),
                        ("/api/calculator/glicko?rating=1&opponent=2&result=win", None),
                        ("/api/stakes/glicko", None)]:
        status, body, _ = await request(server, "GET", path)
        assert (status, body["error"]["code"], body["error"].get("field")) == (
            404, "not_found", field), path
    status, body, headers = await request(server, "DELETE", "/api/leaderboard/table42")
    assert (status, body["error"]["code"]) == (405, "method_not_allowed")
    assert "GET" in headers["Allow"]
    status, body, _ = await request(server, "GET", "/api/register")
    assert (status, body["error"]["code"]) == (405, "method_not_allowed")
    status, body, _ = await request(server, "POST", "/api/nowhere", data=b"x" * 10_000)
    assert (status, body["error"]["code"]) == (404, "not_found")  # the path before the body
    status, body, _ = await request(server, "POST", "/api/players/ann", data=b"text")
    assert (status, body["error"]["code"]) == (405, "method_not_allowed")
    # 413: declared length over the limit, and a chunked body over it
    status, body, _ = await request(server, "POST", "/api/register", data=b"x" * 10_000,
                                    headers={"Content-Type": "application/json"})
    assert (status, body["error"]["code"]) == (413, "too_big")

    async def chunks() -> Any:
        for _ in range(10):
            yield b"x" * 1000

    status, body, _ = await request(server, "POST", "/api/login", data=chunks(),
                                    headers={"Content-Type": "application/json"})
    assert (status, body["error"]["code"]) == (413, "too_big")
    # 415: a body that is not JSON; no body needs no content type
    for content_type in ("text/plain", "application/x-www-form-urlencoded", None):
        headers = {} if content_type is None else {"Content-Type": content_type}
        status, body, _ = await request(server, "POST", "/api/login",
                                        data=b'{"name": "x"}', headers=headers)
        if content_type is None:  # aiohttp sends application/octet-stream for bytes
            assert status == 415
            continue
        assert (status, body["error"]["code"]) == (415, "unsupported_media_type")
    status, body, _ = await request(server, "POST", "/api/guest")
    assert status == 200 and body["guest"] is True
    status, body, _ = await request(server, "POST", "/api/register",
                                    json={"name": "erin", "password": "long enough"},
                                    headers={"Content-Type": "application/json; charset=utf-8"})
    assert status == 201
    # 400 naming the parameter
    for path, code, field in [
        ("/api/leaderboard/table42?offset=-1", "bad_field", "offset"),
        ("/api/leaderboard/table42?limit=101", "bad_field", "limit"),
        ("/api/leaderboard/fibs?limit=x", "bad_field", "limit"),
        ("/api/leaderboard/fibs?player=a%7Bb", "bad_field", "player"),
        ("/api/players/erin/history?ladder=boosted", "bad_field", "ladder"),
        ("/api/players/erin/history?limit=0", "bad_field", "limit"),
        ("/api/calculator/table42?rating=1500&opponent=1800", "missing_field", "result"),
        ("/api/calculator/table42?rating=abc&opponent=1800&result=win", "bad_field", "rating"),
        ("/api/calculator/table42?rating=1500&opponent=inf&result=win", "bad_field",
         "opponent"),
        ("/api/calculator/table42?rating=1500&opponent=1&result=draw", "bad_field", "result"),
        ("/api/calculator/table42?rating=1&opponent=1&result=win&cube=3", "bad_field", "cube"),
        ("/api/calculator/table42?rating=1&opponent=1&result=win&k=16&recent_games=3",
         "bad_field", "recent_games"),
        ("/api/calculator/elo?rating=1&opponent=1&result=win&preset=fide", "missing_field",
         "games"),
        ("/api/calculator/elo?rating=1&opponent=1&result=win&games=3", "bad_field", "games"),
        ("/api/calculator/fibs?rating=1&opponent=1&result=win&length=0", "bad_field",
         "length"),
        ("/api/stakes/elo?rating=1&opponent=1&k=0", "bad_field", "k"),
    ]:
        status, body, _ = await request(server, "GET", path)
        assert (status, body["error"]["code"], body["error"].get("field")) == (
            400, code, field), path


async def test_rate_limit_per_address_and_per_credential(start_server: StartServer) -> None:
    server = await start_server(http_rate_limit=0.5, http_rate_burst=3)
    one = {"X-Forwarded-For": "10.1.1.1"}
    for _ in range(3):
        status, _, _ = await request(server, "GET", "/api/leaderboard/table42", headers=one)
        assert status == 200
    status, body, headers = await request(server, "GET", "/api/leaderboard/boosted",
                                          headers=one)
    assert (status, body["error"]["code"]) == (429, "rate_limited")
    assert int(headers["Retry-After"]) >= 1
    # Another address is served; the health check is never limited.
    status, _, _ = await request(server, "GET", "/api/leaderboard/table42",
                                 headers={"X-Forwarded-For": "10.2.2.2"})
    assert status == 200
    status, _, _ = await request(server, "GET", "/healthz", headers=one)
    assert status == 200
    # An IPv6 /64 is one client: rotating addresses inside it does not dodge the limit.
    codes = []
    for n in range(4):
        status, _, _ = await request(server, "GET", "/api/leaderboard/fibs",
                                     headers={"X-Forwarded-For": f"2001:db8:1:2::{n + 1}"})
        codes.append(status)
    assert codes == [200, 200, 200, 429]
    # One credential from three addresses: its own bucket runs dry too.
    credential = {"Authorization": "Bearer not-a-real-token"}
    statuses = []
    for n in range(4):
        status, body, _ = await request(
            server, "GET", "/api/me", headers={**credential, "X-Forwarded-For": f"10.3.3.{n}"}
        )
        statuses.append((status, body["error"]["code"]))
    assert statuses == [(401, "unauthorized")] * 3 + [(429, "rate_limited")]


def _routes(server: RunningServer) -> set[tuple[str, str]]:
    routes = set()
    for route in server.app.router.routes():
        info = route.resource.get_info() if route.resource is not None else {}
        path = info.get("path") or info.get("formatter")
        if route.method != "HEAD" and path:
            routes.add((route.method.lower(), path))
    return routes


async def test_openapi_document_lists_every_route(start_server: StartServer) -> None:
    server = await start_server()
    status, document = await get(server, "/api/openapi.json")
    assert status == 200 and document["openapi"].startswith("3.1")
    documented = {(method, path) for path, item in document["paths"].items()
                  for method in item if method in ("get", "post", "put", "patch", "delete")}
    assert documented == _routes(server)
    # No schema offers a password hash or a stored key.
    text = json.dumps(document)
    assert '"hash"' not in text and '"salt"' not in text


async def test_the_levels_are_the_ladder(start_server: StartServer) -> None:
    server = await start_server()
    status, body, headers = await request(server, "GET", "/api/levels")
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    levels = body["levels"]
    assert [x["level"] for x in levels] == ["random", *(r.name for r in LADDER)]
    assert levels[0] == {"level": "random", "words": None, "memg": None, "low": None,
                         "high": None, "search_depth": None, "aliases": []}
    for entry, rung in zip(levels[1:], LADDER, strict=True):
        assert (entry["words"], entry["memg"], entry["low"], entry["high"],
                entry["search_depth"]) == (rung.words, rung.memg, rung.low, rung.high,
                                           rung.depth)
        assert entry["aliases"] == [old for old, new in ALIASES.items() if new == rung.name]
    assert (body["default"], body["unit"]) == ("beginner", "mEMG per unforced checker play")
    # Every name a level answers to, and no other.
    assert {n for x in levels for n in (x["level"], *x["aliases"])} == set(LEVEL_NAMES)
    # Cacheable: the same bytes, and 304 for the ETag sent back.
    assert headers["Cache-Control"] == "public, max-age=3600"
    status, again, second = await request(server, "GET", "/api/levels",
                                          headers={"If-None-Match": headers["Etag"]})
    assert (status, again, second["Etag"]) == (304, None, headers["Etag"])
    status, _b, _h = await request(server, "GET", "/api/levels",
                                   headers={"If-None-Match": '"other"'})
    assert status == 200 and _b == body


def test_the_levels_are_documented() -> None:
    document = load_openapi()
    operation = document["paths"]["/api/levels"]["get"]
    assert set(operation["responses"]) == {"200", "304", "429"}
    assert "security" not in operation  # public: no token
    schema = document["components"]["schemas"]["Levels"]
    item = schema["properties"]["levels"]["items"]
    assert set(item["required"]) == set(item["properties"]) == {
        "level", "words", "memg", "low", "high", "search_depth", "aliases"}
    level = document["components"]["schemas"]["BotRequest"]["properties"]["level"]
    assert (level["enum"], level["default"]) == (list(LEVEL_NAMES), "beginner")


def test_openapi_fragment_is_merged(tmp_path: Path) -> None:
    package = ROOT / "server"
    shutil.copy(package / "openapi.json", tmp_path / "openapi.json")
    assert load_openapi(tmp_path)["paths"].keys() == json.loads(
        (package / "openapi.json").read_text())["paths"].keys()
    fragment: dict[str, Any] = {
        "paths": {"/api/tournaments": {"get": {"responses": {"200": {"description": "ok"}}}},
                  "/healthz": {"get": {"responses": {}}}},
        "components": {"schemas": {"Tournament": {"type": "object"}, "Error": {}},
                       "securitySchemes": {"runnerKey": {"type": "http", "scheme": "bearer"}}},
        "tags": [{"name": "tournaments"}],
    }
    (tmp_path / "openapi_tournaments.json").write_text(json.dumps(fragment))
    merged = load_openapi(tmp_path)
    assert "/api/tournaments" in merged["paths"]
    assert merged["components"]["schemas"]["Tournament"] == {"type": "object"}
    assert merged["components"]["schemas"]["Error"] != {}  # the main document wins
    assert "runnerKey" in merged["components"]["securitySchemes"]
    assert {"name": "tournaments"} in merged["tags"]
    assert merged["paths"]["/healthz"]["get"]["responses"] != {}


