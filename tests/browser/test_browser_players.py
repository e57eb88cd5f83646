"""The players' page in Chromium: each language on a phone and a desktop (screenshots), no text
outside the catalogues, no sideways scrolling at 360 px, the computer as an opponent, and a
bracket of four whose players are taken to their tables without reloading."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.browser.conftest import TIMEOUT_MS, Player
from tests.browser.test_browser_pages import new_tournament, runner_key
from tests.browser.test_browser_play import GAME_SEED, scripted

StartServer = Callable[..., Awaitable[Any]]
PHONE = {"width": 360, "height": 740}
DESKTOP = {"width": 1100, "height": 900}
_addresses = iter(range(1, 250))


async def person(browser: Any, url: str, *, lang: str | None = None,
                 viewport: dict[str, int] = DESKTOP, locale: str = "en-US") -> Player:
    """A browser context of its own (its own address), its page opened at ``url``; ``lang``
    is stored as the chosen language before the page starts."""
    context = await browser.new_context(
        extra_http_headers={"X-Forwarded-For": f"10.78.{next(_addresses)}.9"},
        viewport=viewport, locale=locale)
    context.set_default_timeout(TIMEOUT_MS)
    if lang:
        await context.add_init_script(f"localStorage.setItem('t42.lang', '{lang}')")
    page = await context.new_page()
    player = Player(page, "")
    player.attach(page)
    await page.goto(url)
    return player


async def as_guest(player: Player) -> None:
    await player.page.click("button.guest")
    await player.page.wait_for_selector("#conn[data-status=online]")
    await player.page.wait_for_selector("form.computer-form")


async def sideways(player: Player) -> int:
    """How many pixels the page scrolls sideways (0 when it fits)."""
    width: int = await player.page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    return width


async def play_computer(player: Player, level: str = "random") -> str:
    page = player.page
    await page.select_option("select[name=level]", level)
    await page.click("button.play-computer")
    await page.wait_for_function("() => location.hash.startsWith('#/game/')")
    await page.wait_for_function("() => window.__t42.view && window.__t42.view.state"
                                 " && window.__t42.view.state.game")
    await page.wait_for_selector("svg.board g.point")
    return str(await page.evaluate("() => window.__t42.view.table"))


async def resign_as_soon_as_possible(player: Player) -> None:
    """Wait until it is this player's turn (roll or move), then resign a backgammon."""
    await player.page.wait_for_selector("button.resign")
    await player.page.select_option("select.resign-kind", "backgammon")
    await player.page.click("button.resign")


def no_errors(*players: Player) -> None:
    for player in players:
        assert player.errors == [], player.errors


# Visible text made of catalogue keys ([key]), numbers, signs and what players typed or chose.
KEY_ONLY = re.compile(r"\[[a-z0-9_.]+\]|[\d\s.,:;·•–—±+−\-/()#%→|?!…*@]+|Table42|FIBS|K")

VISIBLE_TEXTS = """() => {
  const out = [];
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const el = n.parentElement;
    if (!n.textContent.trim() || !el) continue;
    if (el.closest('select.lang, script, style, noscript, .skip')) continue;
    if (!el.offsetParent && getComputedStyle(el).position !== 'fixed') continue;
    out.push([n.textContent.trim(), el.outerHTML.slice(0, 120)]);
  }
  return out;
}"""


async def foreign_texts(player: Player, allowed: set[str]) -> list[str]:
    texts: list[tuple[str, str]] = await player.page.evaluate(VISIBLE_TEXTS)
    return [f"{t} (in {where})" for t, where in texts
            if KEY_ONLY.sub("", t).strip() and t not in allowed]


async def test_each_language_on_a_phone_and_a_desktop(
    start_browser_server: StartServer, browser: Any, artifacts: Path
) -> None:
    """The lobby and a game against the computer in English, Romanian and Russian, phone-sized
    (360×740) and desktop: screenshots, no sideways scrolling, the page's language set, the
    practice note; the browser's own language is taken when nothing was chosen, and the
    switch changes and remembers it."""
    server = await start_browser_server(scripted(GAME_SEED))
    host = await person(browser, server.url + "/")
    await as_guest(host)
    # A guest is never rated: the create form does not offer a rated table.
    assert await host.page.locator("select[name=mode] option[value=competitive]").count() == 0
    await host.page.select_option("select[name=mode]", "boosted")
    await host.page.click("button.create-btn")
    await host.page.wait_for_selector(".share-link")
    share = await host.page.locator(".share-link").input_value()
    assert re.search(r"#/join/[\w-]+$", share), share
    players = [host]
    for lang in ("en", "ro", "ru"):
        for size, viewport in (("phone", PHONE), ("desktop", DESKTOP)):
            player = await person(browser, server.url + "/", lang=lang, viewport=viewport)
            players.append(player)
            page = player.page
            await as_guest(player)
            await page.wait_for_selector(".table-list .table-row")
            assert await page.evaluate("() => document.documentElement.lang") == lang
            assert await sideways(player) == 0, (lang, size)
            assert "null" not in await page.locator("body").inner_text()
            await page.screenshot(path=str(artifacts / f"lobby-{lang}-{size}.png"), full_page=True)
            await play_computer(player)
            await page.wait_for_selector(".practice[data-reason=bot]")
            assert await sideways(player) == 0, (lang, size)
            assert "null" not in await page.locator("body").inner_text()
            await page.screenshot(path=str(artifacts / f"game-{lang}-{size}.png"), full_page=True)
            await page.evaluate("() => window.__t42.socket.request({type: 'leave', "
                                "table: window.__t42.view.table})")
    # The browser's language, then the switch (remembered over a reload).
    russian = await person(browser, server.url + "/", locale="ru-RU")
    players.append(russian)
    await russian.page.wait_for_selector("#nav a[href='#/leaders']")
    assert await russian.page.evaluate("() => document.documentElement.lang") == "ru"
    assert await russian.page.locator("#nav a[href='#/leaders']").text_content() == "Рейтинги"
    await russian.page.select_option("select.lang", "ro")
    await russian.page.wait_for_function(
        "() => document.querySelector(\"#nav a[href='#/leaders']\").textContent === 'Clasamente'")
    await russian.page.reload()
    await russian.page.wait_for_function(
        "() => document.querySelector(\"#nav a[href='#/leaders']\")?.textContent === 'Clasamente'")
    no_errors(*players)


async def test_no_visible_text_comes_from_outside_the_catalogues(
    start_browser_server: StartServer, browser: Any
) -> None:
    """With the pseudo-language that shows every key as [key], every text on the lobby, a game,
    the leaderboards, the tournaments, the calculator and the profile is a key, a number or a
    name: anything else is a string missing from the catalogues."""
    server = await start_browser_server(scripted(GAME_SEED))
    player = await person(browser, server.url + "/", lang="keys")
    page = player.page
    await page.fill("input[name=name]", "kira")
    await page.fill("input[name=password]", "correct horse")
    await page.click("button.signup")
    await page.wait_for_selector("#conn[data-status=online]")
    await page.wait_for_selector(".pool button.queue-btn:not([disabled])")
    allowed = {"kira"}
    assert await foreign_texts(player, allowed) == []
    table = await play_computer(player)
    await page.wait_for_selector(".controls button, .controls .hint")
    assert await foreign_texts(player, allowed) == []
    await resign_as_soon_as_possible(player)
    await page.wait_for_selector(".end-panel")
    assert await foreign_texts(player, allowed) == []
    await page.click(".end-panel a.replay-link")
    await page.wait_for_selector("svg.board[data-step='0']")
    await page.keyboard.press("End")
    assert await foreign_texts(player, allowed) == []
    for route in ("#/leaders/table42", "#/tournaments", "#/calculator", "#/player/kira"):
        await page.goto(f"{server.url}/{route}")
        await page.wait_for_selector("main h1")
        await page.wait_for_load_state("networkidle")
        assert await foreign_texts(player, allowed) == [], route
    await page.goto(f"{server.url}/#/calculator")
    await page.click("form.calc[data-system=table42] button[type=submit]")
    await page.wait_for_selector("form.calc[data-system=table42] dd")
    assert await foreign_texts(player, allowed) == []
    assert table
    no_errors(player)


async def test_the_computer_from_the_lobby_practice_and_rematch(
    start_browser_server: StartServer, browser: Any, artifacts: Path
) -> None:
    """Pick a level, play (practice: never rated, said before and during the game and at the
    end), resign, rematch at the same level; a level the server refuses shows its error."""
    server = await start_browser_server(scripted(GAME_SEED))
    player = await person(browser, server.url + "/", viewport=PHONE)
    page = player.page
    await as_guest(player)
    note = await page.locator("form.computer-form .practice").text_content()
    assert "never rated" in (note or "")
    # The levels the server lists (GET /api/levels), weakest first, each named with its
    # measured rate; the default chosen.
    await page.wait_for_selector("form.computer-form .rates")
    listed = await page.evaluate("() => fetch('/api/levels').then((r) => r.json())")
    options = await page.locator("select[name=level] option").evaluate_all(
        "os => os.map((o) => [o.value, o.textContent, o.selected])")
    assert [value for value, _text, _chosen in options] == [x["level"] for x in listed["levels"]]
    assert [value for value, _text, chosen in options if chosen] == [listed["default"]]
    names = {"random": "Random", "beginner": "Beginner", "casual": "Casual",
             "intermediate": "Intermediate", "advanced": "Advanced"}
    for (value, text, _chosen), level in zip(options, listed["levels"], strict=True):
        assert text == (names[value] if level["memg"] is None else
                        f"{names[value]} — {level['memg']:.1f} mEMG per move ({level['words']})")
    first = await play_computer(player, "beginner")
    assert player.of_type("computer_game")[-1]["level"] == "beginner"
    await page.wait_for_selector(".practice[data-reason=bot]")
    names = await page.locator(".pname").all_text_contents()
    assert any(n.startswith("Computer") for n in names), names
    assert not any("bot-" in n or "guest-" in n for n in names), names
    await resign_as_soon_as_possible(player)
    await page.wait_for_selector(".end-panel .result")
    panel = await page.locator(".end-panel").text_content() or ""
    assert "No rating change" in panel and "never rated" in panel, panel
    await page.screenshot(path=str(artifacts / "computer-end-phone.png"), full_page=True)
    await page.click("button.rematch")
    await page.wait_for_function(
        "t => location.hash.startsWith('#/game/') && !location.hash.endsWith(t)", arg=first)
    assert player.of_type("computer_game")[-1]["level"] == "beginner"
    await page.wait_for_selector("button.resign")
    await page.evaluate(
        "() => window.__t42.socket.request({type: 'leave', table: window.__t42.view.table})")
    # A level this server does not know: its error is shown, the page stays in the lobby.
    await page.goto(server.url + "/#/")
    await page.wait_for_selector("form.computer-form")
    refused = await page.evaluate(
        "() => window.__t42.playComputer('grandmaster').then((r) => r.type)")
    assert refused == "error"
    await page.wait_for_selector("#toast:not([hidden])")
    no_errors(player)


async def test_the_levels_without_their_rates_when_the_server_does_not_list_them(
    start_browser_server: StartServer, browser: Any
) -> None:
    """``/api/levels`` failing: the lobby still offers every level by name and plays it."""
    server = await start_browser_server(scripted(GAME_SEED))
    player = await person(browser, server.url + "/")
    page = player.page
    await page.route("**/api/levels", lambda route: route.fulfill(
        status=503, json={"error": {"code": "unavailable", "message": "down"}}))
    await as_guest(player)
    await page.wait_for_load_state("networkidle")
    options = await page.locator("select[name=level] option").evaluate_all(
        "os => os.map((o) => [o.value, o.textContent, o.selected])")
    assert options == [["random", "Random", False], ["beginner", "Beginner", True],
                       ["casual", "Casual", False], ["intermediate", "Intermediate", False],
                       ["advanced", "Advanced", False]]
    assert await page.locator("form.computer-form .rates").count() == 0
    await play_computer(player, "intermediate")
    assert player.of_type("computer_game")[-1]["level"] == "intermediate"
    assert all("503" in error for error in player.errors), player.errors


async def test_a_bracket_of_four_takes_every_player_to_their_table(
    start_browser_server: StartServer, browser: Any, redis_url: str, key_prefix: str,
    artifacts: Path,
) -> None:
    """Four players wait in different parts of the app; when the bracket starts each is taken
    to their table without reloading (the notice says who and when), the bracket page (a
    fifth person's) shows the matches in play by itself, a tournament game ends with "Back to
    the bracket", and the podium award is shown as it arrives."""
    server = await start_browser_server(scripted(GAME_SEED))
    names = ["amy", "ben", "cat", "dan"]
    auth = {"Authorization": f"Bearer {await runner_key(redis_url, key_prefix)}"}
    async with aiohttp.ClientSession() as http:
        tid = await new_tournament(http, server.url, auth, {
            "name": "Autumn cup", "visibility": "public", "prizes": [30, 20, 10],
            "format": {"kind": "game"}}, [])
        for name in names:
            async with http.post(f"{server.url}/api/register",
                                 json={"name": name, "password": "correct horse"}) as resp:
                assert resp.status == 201
            async with http.post(f"{server.url}/api/tournaments/{tid}/players",
                                 json={"player": name}, headers=auth) as resp:
                assert resp.status < 300, await resp.text()
    players = []
    for name, route in zip(names, ("#/", "#/tournaments", "#/calculator", "#/leaders/table42"),
                           strict=True):
        size = PHONE if name == "amy" else DESKTOP
        player = await person(browser, server.url + "/", viewport=size)
        await player.page.fill("input[name=name]", name)
        await player.page.fill("input[name=password]", "correct horse")
        await player.page.click("button.login")
        await player.page.wait_for_selector("#conn[data-status=online]")
        await player.page.goto(f"{server.url}/{route}")
        await player.page.wait_for_selector("main h1")
        players.append(player)
    watcher = await person(browser, f"{server.url}/#/tournament/{tid}")
    await watcher.page.wait_for_selector("main .page-body p")
    # Dan is at another table (the computer's) when the bracket starts: not ready yet.
    dan = players[3]
    await dan.page.goto(f"{server.url}/#/")
    await play_computer(dan)
    async with aiohttp.ClientSession() as http, http.post(
        f"{server.url}/api/tournaments/{tid}/bracket", json={"no_show_seconds": 120},
        headers=auth,
    ) as resp:
        assert resp.status < 300, await resp.text()
    # His opponent is called: a notice with the countdown to the deadline, and a sound.
    pairing = await dan.page.wait_for_function(
        "() => window.__t42.call && window.__t42.call.opponent")
    opponent = players[names.index(await pairing.json_value())]
    call = opponent.page.locator(".notice .call .countdown")
    await call.wait_for()
    assert re.search(r"\d+ seconds", await call.text_content() or ""), await call.text_content()
    assert "call" in await opponent.page.evaluate("() => window.__t42sounds || []")
    await opponent.page.screenshot(path=str(artifacts / "tournament-call.png"), full_page=True)
    # Dan finishes his game against the computer: he is ready, and both are taken there.
    await resign_as_soon_as_possible(dan)
    for player in players:
        await player.page.wait_for_function(
            "() => (window.__t42.tournamentTables.size > 0)")
        table = player.of_type("tournament_table")[-1]["table"]
        await player.page.wait_for_function("t => location.hash === '#/game/' + t", arg=table)
        await player.page.wait_for_selector("svg.board g.point")
        assert player.of_type("tournament_pairing"), "no pairing"
    await players[0].page.screenshot(path=str(artifacts / "tournament-table-phone.png"),
                                     full_page=True)
    # The bracket page shows both semi-finals in play without a reload.
    await watcher.page.wait_for_selector(".bracket .match.playing >> nth=1")

    async def finish_round(live: list[Player], *, last: bool) -> None:
        """At each table the player to act resigns a backgammon and the other accepts. The
        end panel offers the bracket, not a rematch (checked where no next table takes the
        players away at once: all but the round's last table, every table of the last round)."""
        tables: dict[str, list[Player]] = {}
        for player in live:
            table = await player.page.evaluate("() => window.__t42.view.table")
            tables.setdefault(table, []).append(player)
        for i, pair in enumerate(tables.values()):
            assert len(pair) == 2
            await pair[0].page.wait_for_function(
                "() => ['roll', 'move'].includes(window.__t42.view.state.game.phase)")
            to_act = await pair[0].page.evaluate("() => window.__t42.view.state.game.to_act")
            sides = [await p.page.evaluate("() => window.__t42.view.side") for p in pair]
            actor, other = (pair[0], pair[1]) if sides[0] == to_act else (pair[1], pair[0])
            await resign_as_soon_as_possible(actor)
            await other.page.click("button.accept")
            if last or i < len(tables) - 1:
                for player in pair:
                    await player.page.wait_for_selector(".end-panel a.to-bracket")
                    assert await player.page.locator(".end-panel button.rematch").count() == 0

    await finish_round(players, last=False)
    for player in players:
        await player.page.wait_for_function(
            "() => window.__t42.tournamentTables.size === 2 && location.hash === '#/game/' + "
            "[...window.__t42.tournamentTables.keys()][1]")
        await player.page.wait_for_selector("svg.board g.point")
    await finish_round(players, last=True)
    for player in players:
        await player.page.wait_for_function("id => window.__t42.tournamentsOver.has(id)", arg=tid)
    podium = [p for p in players if any(r.get("reason") == "podium" for r in p.of_type("rating"))]
    assert len(podium) == 3
    for player in podium:
        await player.page.wait_for_selector(".notice .award")
    await podium[0].page.screenshot(path=str(artifacts / "tournament-award.png"), full_page=True)
    await watcher.page.wait_for_selector(".podium li")
    no_errors(*players, watcher)


@pytest.mark.parametrize(
    "route", ["#/leaders/table42", "#/tournaments", "#/calculator", "#/player/zoe"])
async def test_pages_fit_a_phone(
    start_browser_server: StartServer, browser: Any, route: str
) -> None:
    server = await start_browser_server()
    async with aiohttp.ClientSession() as http, http.post(
        f"{server.url}/api/register", json={"name": "zoe", "password": "correct horse"},
    ) as resp:
        assert resp.status == 201
    player = await person(browser, f"{server.url}/{route}", viewport=PHONE)
    await player.page.wait_for_selector("main h1")
    await player.page.wait_for_load_state("networkidle")
    assert await sideways(player) == 0
