"""The pages over the public read API (docs/http-api.md): leaderboards, a profile with its rating
graph, a tournament bracket and the rating calculator (the examples of docs/rating-engine.md),
in Chromium.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest_asyncio
import redis.asyncio as aioredis

from rating_plugin.store import RatingStore
from server.rules import DiceSource, ScriptedDice

StartServer = Callable[..., Awaitable[Any]]
NewPlayer = Callable[..., Awaitable[Any]]


def dice() -> Callable[[], DiceSource]:
    rng = random.Random(1662)
    values = [rng.randint(1, 6) for _ in range(4000)]
    return lambda: ScriptedDice(values)


@pytest_asyncio.fixture(loop_scope="session")  # the browser tests' loop (conftest.py)
async def server(start_browser_server: StartServer) -> AsyncIterator[Any]:
    yield await start_browser_server(dice())


async def sign_up(player: Any, name: str) -> None:
    page = player.page
    await page.fill("input[name=name]", name)
    await page.fill("input[name=password]", "correct horse")
    await page.click("button.signup")
    await page.wait_for_selector("#conn[data-status=online]")


async def rated_game(server: Any, new_player: NewPlayer, names: tuple[str, str]) -> list[Any]:
    """Two players queue, get paired, and the first to act resigns: a rated result."""
    players = [await new_player(server.url + "/") for _ in names]
    for player, name in zip(players, names, strict=True):
        await sign_up(player, name)
    for player in players:
        await player.page.click(".pool[data-pool=competitive] button.queue-btn")
    for player in players:
        await player.page.wait_for_function(
            "() => window.__t42.view && window.__t42.view.state && window.__t42.view.state.game")
    sides = {}
    for player in players:
        sides[await player.page.evaluate("() => window.__t42.view.side")] = player
    to_act = await players[0].page.evaluate("() => window.__t42.view.state.game.to_act")
    await sides[to_act].page.click("button.resign")
    await sides[1 - to_act].page.click("button.accept")
    for player in players:
        await player.page.wait_for_selector(".end-panel table.rating-change")
    return players


async def test_leaderboard_and_profile_show_the_pushed_ratings(
    server: Any, new_player: NewPlayer, artifacts: Path
) -> None:
    players = await rated_game(server, new_player, ("mona", "nick"))
    ratings = {p.of_type("rating")[-1]["player"]: p.of_type("rating")[-1] for p in players}
    page = players[0].page
    await page.goto(server.url + "/#/leaders/table42")
    board = page.locator("table.leaderboard[data-ladder=table42]")
    await board.wait_for()
    await page.screenshot(path=str(artifacts / "leaderboard.png"), full_page=True)
    text = await board.text_content() or ""
    for player, rating in ratings.items():
        assert player in text and str(rating["new"]) in text
    winner = next(r for r in ratings.values() if r["won"])
    await page.goto(server.url + f"/#/player/{winner['player']}")
    await page.wait_for_selector("svg.rating-graph path.line")
    await page.screenshot(path=str(artifacts / "profile.png"), full_page=True)
    row = await page.locator("table.history tbody tr").first.text_content() or ""
    assert f"{winner['old']} → {winner['new']}" in row
    for player in players:
        assert player.errors == [], player.errors


async def test_the_leaderboard_pages_through_every_player(
    server: Any, new_player: NewPlayer, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    """120 players on the board: 50 a page, Next and Previous, the range shown."""
    store = RatingStore(redis_client, key_prefix)
    now = time.time()
    for i in range(60):
        await store.settle(f"g{i}", ladder="table42", winner=f"w{i:03}", loser=f"l{i:03}",
                           finished_at=now)
    player = await new_player(server.url + "/#/leaders/table42")
    page = player.page
    rows = page.locator("table.leaderboard tbody tr")
    pager = page.locator("nav.pager")

    async def shows(span: str, count: int) -> None:
        await page.wait_for_function(
            "(span) => (document.querySelector('nav.pager') || {}).textContent?.includes(span)",
            arg=span)
        assert await rows.count() == count

    await shows("1–50 of 120", 50)
    assert await pager.locator("a[rel=prev]").count() == 0
    await pager.locator("a[rel=next]").click()
    await shows("51–100 of 120", 50)
    assert page.url.endswith("#/leaders/table42/50")
    await pager.locator("a[rel=next]").click()
    await shows("101–120 of 120", 20)
    assert await pager.locator("a[rel=next]").count() == 0
    assert await rows.first.locator("td").first.text_content() == "61"  # the 60 losers tie
    await pager.locator("a[rel=prev]").click()
    await shows("51–100 of 120", 50)
    assert player.errors == [], player.errors


# The examples of docs/rating-engine.md, "The rules".
CALCULATOR = [
    # Table42 Elo: a 300-point favourite at divisor 1200 wins +12, loses -20.
    ("table42", {"rating": "1800", "opponent": "1500", "result": "win"}, "change", 12),
    ("table42", {"rating": "1800", "opponent": "1500", "result": "loss"}, "change", -20),
    # Table42 Elo: cube 4, two 1500 players, K = 32: +-21.
    ("table42", {"rating": "1500", "opponent": "1500", "result": "win", "cube": "4"}, "change", 21),
    # FIBS: equal ratings, 1-point match, winner's experience 150: +7.00.
    ("fibs", {"rating": "1500", "opponent": "1500", "result": "win", "length": "1",
              "experience": "150"}, "change", 7.0),
    # FIBS: equal players, match to 9: winner +6.
    ("fibs", {"rating": "1500", "opponent": "1500", "result": "win", "length": "9",
              "experience": "400"}, "change", 6.0),
    # Classic Elo: 1500 beats 1600 with K = 32: +20.48, new rating 1520.48.
    ("elo", {"rating": "1500", "opponent": "1600", "result": "win", "k": "32"}, "change", 20.48),
    ("elo", {"rating": "1500", "opponent": "1600", "result": "win", "k": "32"}, "new_rating",
     1520.48),
    # Classic Elo, the FIDE preset: K 40 until 30 rated games and for juniors under 2300, 20
    # below 2400, 10 once 2400 has been reached; the other presets are fixed Ks.
    ("elo", {"rating": "2300", "opponent": "2300", "result": "win", "preset": "fide",
             "games": "10"}, "k", 40),
    ("elo", {"rating": "2200", "opponent": "2300", "result": "win", "preset": "fide",
             "games": "50", "age": "16"}, "change", 25.6),
    ("elo", {"rating": "2300", "opponent": "2300", "result": "win", "preset": "fide",
             "games": "50", "age": ""}, "change", 10.0),
    ("elo", {"rating": "2300", "opponent": "2300", "result": "win", "preset": "fide",
             "games": "50", "peak": "2450"}, "change", 5.0),
    ("elo", {"rating": "1500", "opponent": "1600", "result": "win", "preset": "standard"},
     "k", 20),
]


async def test_the_calculator_gives_the_spec_examples(
    server: Any, new_player: NewPlayer, artifacts: Path
) -> None:
    player = await new_player(server.url + "/#/calculator")
    page = player.page
    for system, fields, field, expected in CALCULATOR:
        form = page.locator(f"form.calc[data-system={system}]")
        for name, value in fields.items():
            target = form.locator(f"[name={name}]")
            if await target.evaluate("e => e.tagName") == "SELECT":
                await target.select_option(value)
            else:
                await target.fill(value)
        await form.locator("button[type=submit]").click()
        cell = form.locator(f"dd[data-field={field}]")
        await cell.wait_for()
        await page.wait_for_function(
            "([sel, exp]) => { const e = document.querySelector(sel);"
            " return e && Math.abs(JSON.parse(e.dataset.value) - exp) < 0.006; }",
            arg=[f"form.calc[data-system={system}] dd[data-field={field}]", expected],
        )
        value = json.loads(await cell.get_attribute("data-value") or "null")
        assert round(value, 2) == expected, (system, fields, value)
    elo = page.locator("form.calc[data-system=elo]")
    assert await elo.locator("[name=k]").is_disabled()  # a preset gives the K
    assert await elo.locator("[name=games]").is_disabled()  # FIDE's rules only
    await elo.locator("[name=preset]").select_option("")
    assert await elo.locator("[name=k]").is_enabled()
    await page.screenshot(path=str(artifacts / "calculator.png"), full_page=True)
    assert player.errors == [], player.errors


async def runner_key(redis_url: str, key_prefix: str) -> str:
    """A tournament runner key, made the operator's way: ``python -m server runner-key
    create NAME`` prints it."""
    env = {**os.environ, "REDIS_URL": redis_url, "TABLE42_KEY_PREFIX": key_prefix}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "server", "runner-key", "create", "browser-test", env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    return out.decode().strip()


async def new_tournament(
    http: aiohttp.ClientSession, url: str, auth: dict[str, str], body: dict[str, Any],
    names: list[str],
) -> str:
    """Create a tournament with the runner's ``auth``, register ``names`` (new accounts) in
    it, and return its id."""
    async with http.post(f"{url}/api/tournaments", headers=auth, json=body) as resp:
        assert resp.status == 201, await resp.text()
        tid = str((await resp.json())["tournament"]["id"])
    for name in names:
        async with http.post(f"{url}/api/register",
                             json={"name": name, "password": "correct horse"}) as resp:
            assert resp.status == 201
        async with http.post(f"{url}/api/tournaments/{tid}/players",
                             json={"player": name}, headers=auth) as resp:
            assert resp.status < 300, await resp.text()
    return tid


async def test_a_bracket_is_drawn_from_the_tournament_endpoints(
    server: Any, new_player: NewPlayer, redis_url: str, key_prefix: str, artifacts: Path
) -> None:
    auth = {"Authorization": f"Bearer {await runner_key(redis_url, key_prefix)}"}
    names = ["olga", "pete", "quin", "rosa"]
    async with aiohttp.ClientSession() as http:
        tid = await new_tournament(http, server.url, auth, {
            "name": "Friday cup", "visibility": "public", "prizes": [50, 25, 15],
            "format": {"kind": "game"},
        }, names)
        async with http.post(f"{server.url}/api/tournaments/{tid}/bracket",
                             json={"no_show_seconds": 120}, headers=auth) as resp:
            assert resp.status < 300, await resp.text()
    player = await new_player(server.url + "/#/tournaments")
    page = player.page
    await page.click(f"a[href='#/tournament/{tid}']")
    await page.wait_for_selector(".bracket .match")
    assert await page.locator("main h1").text_content() == "Friday cup"
    text = await page.locator(".bracket").text_content() or ""
    assert all(name in text for name in names)
    # 4 players: the semi-finals and the final (the match for third place drawn apart).
    assert await page.locator(".bracket .round:not(.third-place)").count() == 2
    await page.screenshot(path=str(artifacts / "bracket.png"), full_page=True)
    assert player.errors == [], player.errors


async def test_a_tournament_without_a_bracket_shows_its_players_and_podium(
    server: Any, new_player: NewPlayer, redis_url: str, key_prefix: str
) -> None:
    """A tournament its runner drives (tables and podium over the API, no server-run
    bracket) is a page too: its name, its players and the podium as awarded."""
    auth = {"Authorization": f"Bearer {await runner_key(redis_url, key_prefix)}"}
    names = ["tina", "umar", "vera"]
    async with aiohttp.ClientSession() as http:
        tid = await new_tournament(http, server.url, auth, {
            "name": "Spring open", "visibility": "public",
            "format": {"kind": "match", "length": 3},
        }, names)
        async with http.post(f"{server.url}/api/tournaments/{tid}/podium",
                             json={"players": ["vera", "tina", "umar"]}, headers=auth) as resp:
            assert resp.status == 200, await resp.text()
    player = await new_player(server.url + "/#/tournaments")
    page = player.page
    await page.click(f"a[href='#/tournament/{tid}']")
    await page.wait_for_selector(".podium li")
    assert await page.locator("main h1").text_content() == "Spring open"
    assert await page.locator(".podium li").all_text_contents() == [
        "vera +50", "tina +25", "umar +15"]
    assert await page.locator(".tournament-players li").all_text_contents() == names
    assert "matches to 3" in (await page.locator("main .page-body > p").first.text_content()
                              or "")
    await page.wait_for_load_state("networkidle")
    assert player.errors == [], player.errors


async def test_no_console_errors_on_any_page(server: Any, new_player: NewPlayer) -> None:
    player = await new_player(server.url + "/")
    await sign_up(player, "sara")
    for route in ("#/", "#/leaders/table42", "#/leaders/fibs", "#/leaders/boosted",
                  "#/player/sara", "#/tournaments", "#/calculator"):
        await player.page.goto(f"{server.url}/{route}")
        await player.page.wait_for_selector("main h1")
        await player.page.wait_for_load_state("networkidle")
    assert player.errors == [], player.errors
