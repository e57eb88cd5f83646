"""The page for every player, in Chromium: an accessibility audit (axe-core) of every page in
English, Romanian and Russian with no serious or critical violation, every target at least
44 x 44 CSS px at 360 px width, a whole turn from the keyboard alone, and four players who join
an open tournament from the page, see its call (at least 2 s) and play it to a podium."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp

from tests.browser.conftest import Player
from tests.browser.test_browser_pages import runner_key
from tests.browser.test_browser_play import GAME_SEED, scripted
from tests.browser.test_browser_players import (
    DESKTOP,
    PHONE,
    no_errors,
    person,
    play_computer,
    resign_as_soon_as_possible,
)

StartServer = Callable[..., Awaitable[Any]]
AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
AXE_SHA256 = "29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c"
LANGS = ("en", "ro", "ru")
PASSWORD = "correct horse"


async def sign_up(player: Player, name: str) -> None:
    page = player.page
    await page.fill("input[name=name]", name)
    await page.fill("input[name=password]", PASSWORD)
    await page.click("button.signup")
    await page.wait_for_selector("#conn[data-status=online]")


async def open_tournament(url: str, auth: dict[str, str], name: str, **reg: Any) -> str:
    async with aiohttp.ClientSession() as http, http.post(
        f"{url}/api/tournaments", headers=auth,
        json={"name": name, "format": {"kind": "game"}, "registration": {"mode": "open", **reg}},
    ) as resp:
        assert resp.status == 201, await resp.text()
        return str((await resp.json())["tournament"]["id"])


async def settle(page: Any) -> None:
    await page.wait_for_selector("main h1, main .game")
    await page.wait_for_load_state("networkidle")
    await page.wait_for_function(
        "() => !document.querySelector('main .page-body > p:only-child')"
        " || !/…$/.test(document.querySelector('main .page-body > p:only-child').textContent)")


AUDIT = """async () => {
  const result = await axe.run(document, { resultTypes: ["violations"] });
  return result.violations.filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): `
      + v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", "));
}"""


async def audit(page: Any) -> list[str]:
    if not await page.evaluate("() => typeof window.axe === 'object'"):
        # Evaluated through the DevTools protocol: the page's CSP (script-src 'self') stays on.
        await page.evaluate(AXE.read_text(encoding="utf-8") + "\n;true")
    found: list[str] = await page.evaluate(AUDIT)
    return found


SMALL_TARGETS = """() => {
  const sel = 'a[href], button, select, input:not([type=hidden]), textarea, summary,'
    + ' [role="button"], [tabindex]:not([tabindex="-1"])';
  const out = [];
  let checked = 0;
  for (const el of document.querySelectorAll(sel)) {
    if (el.matches('.skip') && document.activeElement !== el) continue; // off-screen until focused
    const cs = getComputedStyle(el);
    const r = el.getBoundingClientRect();
    if (cs.visibility === 'hidden' || cs.display === 'none') continue;
    if (r.width === 0 && r.height === 0) continue;
    checked += 1;
    if (r.width < 43.5 || r.height < 43.5) {
      out.push(`${el.tagName.toLowerCase()}.${el.className.baseVal ?? el.className}`
        + ` "${(el.textContent || el.getAttribute('aria-label') || '').trim().slice(0, 30)}"`
        + ` ${r.width.toFixed(0)}x${r.height.toFixed(0)}`);
    }
  }
  if (!checked) out.push("no target at all: nothing was measured");
  return out;
}"""


async def finished_game(player: Player) -> str:
    """Play the computer and resign: the finished game's id."""
    await play_computer(player)
    await resign_as_soon_as_possible(player)
    await player.page.wait_for_selector(".end-panel .result")
    return str(player.of_type("game_over")[-1]["game_id"])


async def fixtures(server: Any, redis_url: str, key_prefix: str, player: Player,
                   name: str) -> list[str]:
    """Everything a page can show for ``name`` (signed in on ``player``): a finished game, an
    open tournament and a running bracket; returns the routes of every page."""
    auth = {"Authorization": f"Bearer {await runner_key(redis_url, key_prefix)}"}
    game = await finished_game(player)
    open_tid = await open_tournament(server.url, auth, "Spring open", cap=8)
    bracket_tid = await open_tournament(server.url, auth, "Winter cup")
    async with aiohttp.ClientSession() as http:
        for other in ("ivo", "ana", "max"):
            async with http.post(f"{server.url}/api/register",
                                 json={"name": other, "password": PASSWORD}) as resp:
                assert resp.status == 201
            async with http.post(f"{server.url}/api/tournaments/{bracket_tid}/players",
                                 json={"player": other}, headers=auth) as resp:
                assert resp.status == 201
        async with http.post(f"{server.url}/api/tournaments/{bracket_tid}/bracket",
                             json={"no_show_seconds": 600}, headers=auth) as resp:
            assert resp.status == 201
    return ["#/", "#/leaders/table42", f"#/player/{name}", "#/tournaments",
            f"#/tournament/{open_tid}", f"#/tournament/{bracket_tid}", "#/calculator",
            f"#/replay/{game}", f"#/review/{game}"]


def test_the_vendored_axe_is_the_one_named() -> None:
    assert hashlib.sha256(AXE.read_bytes()).hexdigest() == AXE_SHA256


async def test_every_page_passes_the_audit_in_three_languages(
    start_browser_server: StartServer, browser: Any, redis_url: str, key_prefix: str,
) -> None:
    """axe-core on every page (signed out and signed in, a live game at the player's move
    included) in each language: no serious or critical violation."""
    server = await start_browser_server(scripted(GAME_SEED))
    stranger = await person(browser, server.url + "/")
    player = await person(browser, server.url + "/")
    await sign_up(player, "vera")
    routes = await fixtures(server, redis_url, key_prefix, player, "vera")
    page = player.page
    failures: list[str] = []
    for lang in LANGS:
        for who in (stranger, player):
            await who.page.evaluate("l => localStorage.setItem('t42.lang', l)", lang)
            await who.page.goto(server.url + "/#/")
            await who.page.reload()
            await settle(who.page)
        failures += [f"{lang} signed out #/: {v}" for v in await audit(stranger.page)]
        for route in routes:
            await page.goto(f"{server.url}/{route}")
            await settle(page)
            failures += [f"{lang} {route}: {v}" for v in await audit(page)]
        await page.goto(server.url + "/#/")
        await play_computer(player)
        await page.wait_for_selector(".move-picker button, button.roll, button.forced")
        failures += [f"{lang} a game: {v}" for v in await audit(page)]
        await page.evaluate(
            "() => window.__t42.socket.request({type: 'leave', table: window.__t42.view.table})")
    assert failures == []
    no_errors(player, stranger)


async def test_every_target_is_a_finger_wide_at_360_px(
    start_browser_server: StartServer, browser: Any, redis_url: str, key_prefix: str,
) -> None:
    """At 360 x 740 every link, button, field and focusable thing of every page is at least
    44 x 44 CSS px (WCAG 2.5.5), the move buttons of a live game included."""
    server = await start_browser_server(scripted(GAME_SEED))
    player = await person(browser, server.url + "/", viewport=PHONE)
    failures = [f"signed out #/: {s}" for s in await player.page.evaluate(SMALL_TARGETS)]
    await sign_up(player, "nina")
    routes = await fixtures(server, redis_url, key_prefix, player, "nina")
    page = player.page
    for route in routes:
        await page.goto(f"{server.url}/{route}")
        await settle(page)
        failures += [f"{route}: {s}" for s in await page.evaluate(SMALL_TARGETS)]
    await page.goto(server.url + "/#/")
    await play_computer(player)
    for _ in range(2):  # at the Roll button, then at the move buttons
        await page.wait_for_selector(".move-picker button, button.roll")
        failures += [f"a game: {s}" for s in await page.evaluate(SMALL_TARGETS)]
        if await page.locator("button.roll").count():
            await page.click("button.roll")
            await page.wait_for_function("() => !document.querySelector('button.roll')")
    await page.keyboard.press("Tab")  # the skip link, focused, is a target too
    await page.evaluate("() => document.querySelector('.skip').focus()")
    failures += [f"skip link: {s}" for s in await page.evaluate(SMALL_TARGETS)
                 if s.startswith("a.skip")]
    assert failures == []
    no_errors(player)


FOCUSED = ("() => { const e = document.activeElement;"
           " return e ? e.className.baseVal ?? e.className : ''; }")


async def test_a_whole_turn_from_the_keyboard(
    start_browser_server: StartServer, browser: Any,
) -> None:
    """With the keyboard alone: the focus waits on Roll when the turn begins, Enter rolls and
    puts the focus on the first checker that can move, Enter picks it and then its first
    destination, and so on to Confirm; the arrow keys move between the move buttons and
    between the board's checkers."""
    server = await start_browser_server(scripted(GAME_SEED))
    player = await person(browser, server.url + "/", viewport=DESKTOP)
    await sign_up(player, "otto")
    page = player.page
    await play_computer(player)
    arrows_checked = False
    for _turn in range(6):
        await page.wait_for_function(
            "() => { const e = document.activeElement; return e && (e.matches('button.roll, "
            "button.forced') || Boolean(e.closest('.move-picker'))); }", timeout=30_000)
        if "roll" in await page.evaluate(FOCUSED):
            await page.keyboard.press("Enter")
            await page.wait_for_function(
                "() => { const e = document.activeElement; return e && (e.matches("
                "'button.forced') || Boolean(e.closest('.move-picker'))); }")
        if not arrows_checked and await page.locator(".move-picker button").count() > 1:
            first = await page.evaluate("() => document.activeElement.textContent")
            await page.keyboard.press("ArrowRight")
            assert await page.evaluate("() => document.activeElement.textContent") != first
            await page.keyboard.press("ArrowLeft")
            assert await page.evaluate("() => document.activeElement.textContent") == first
            # The board is one tab stop; the arrows go from checker to checker.
            await page.focus("svg.board .clickable[tabindex='0']")
            before = await page.evaluate("() => document.activeElement.dataset.point")
            await page.keyboard.press("ArrowRight")
            after = await page.evaluate("() => document.activeElement.dataset.point")
            assert before != after and after is not None
            assert await page.locator("svg.board .clickable[tabindex='0']").count() == 1
            await page.focus(".move-picker button")
            arrows_checked = True
        for _press in range(12):  # Enter on each focused button, to Confirm
            focused = await page.evaluate(FOCUSED)
            await page.keyboard.press("Enter")
            if "confirm" in focused or "forced" in focused:
                break
            await page.wait_for_timeout(50)
        await page.wait_for_function(
            "() => !document.querySelector('.move-picker')"
            " && !document.querySelector('button.confirm:not([disabled])')")
        if arrows_checked:
            break
    assert arrows_checked, "no turn with a choice of checkers"
    mine = await page.evaluate("() => window.__t42.view.side")
    for _ in range(100):  # the server's answer: the move, played (at most 10 s)
        if any(m.get("side") == mine for m in player.of_type("moved")):
            break
        await page.wait_for_timeout(100)
    assert any(m.get("side") == mine for m in player.of_type("moved")), "no move sent"
    no_errors(player)


async def test_four_players_join_from_the_page_and_play_to_a_podium(
    start_browser_server: StartServer, browser: Any, redis_url: str, key_prefix: str,
    artifacts: Path,
) -> None:
    """An open tournament: four players sign up and join it from the tournaments page (one on
    a 360 px phone), see it in their lobby; the bracket starts and each is called, the call on
    screen at least 2 s (with the tournament, the round and what a no-show costs) before the
    table opens and shows the tournament and the round; they play to a podium, and the end of
    the tournament covers none of the end panel's controls."""
    server = await start_browser_server(scripted(GAME_SEED))
    auth = {"Authorization": f"Bearer {await runner_key(redis_url, key_prefix)}"}
    tid = await open_tournament(server.url, auth, "Harbour cup", cap=4,
                                deadline=time.time() + 3600)
    names = ["rita", "sam", "tom", "uma"]
    players: list[Player] = []
    for name in names:
        player = await person(browser, server.url + "/",
                              viewport=PHONE if name == "rita" else DESKTOP)
        await sign_up(player, name)
        await player.page.goto(f"{server.url}/#/tournaments")
        join = player.page.locator(f"li[data-tournament='{tid}'] button.join-tournament")
        assert "Harbour cup" in (await join.text_content() or "")
        await join.click()
        await player.page.wait_for_selector(f"li[data-tournament='{tid}'] button.leave-tournament")
        players.append(player)
    # A fifth finds it full (the cap is 4): no button.
    late = await person(browser, server.url + "/")
    await sign_up(late, "vic")
    await late.page.goto(f"{server.url}/#/tournaments")
    await late.page.wait_for_selector(f"li[data-tournament='{tid}'] .full")
    assert await late.page.locator("button.join-tournament").count() == 0
    # Each sees it among their tournaments: in the lobby, in the profile.
    lobby = players[0].page
    await lobby.goto(f"{server.url}/#/")
    await lobby.wait_for_selector(f".my-tournaments li[data-tournament='{tid}']")
    await lobby.goto(f"{server.url}/#/player/rita")
    await lobby.wait_for_selector(f".upcoming li[data-tournament='{tid}']")
    async with aiohttp.ClientSession() as http, http.post(
        f"{server.url}/api/tournaments/{tid}/bracket", json={"no_show_seconds": 120},
        headers=auth,
    ) as resp:
        assert resp.status == 201, await resp.text()
    call = players[1].page.locator(".notice .call")
    await call.wait_for()
    text = await call.text_content() or ""
    assert "Harbour cup" in text and "Semi-final" in text and "forfeit" in text, text
    await players[1].page.screenshot(path=str(artifacts / "tournament-open-call.png"))

    async def at_tables(count: int) -> None:
        for player in players:
            await player.page.wait_for_function(
                "n => window.__t42.tournamentTables.size === n && location.hash === '#/game/' + "
                "[...window.__t42.tournamentTables.keys()][n - 1]", arg=count, timeout=30_000)
            await player.page.wait_for_selector("svg.board g.point")
            badge = await player.page.locator(".tournament-badge").text_content() or ""
            assert "Harbour cup" in badge, badge

    async def finish_round() -> None:
        tables: dict[str, list[Player]] = {}
        for player in players:
            tables.setdefault(await player.page.evaluate("() => window.__t42.view.table"),
                              []).append(player)
        for pair in tables.values():
            await pair[0].page.wait_for_function(
                "() => ['roll', 'move'].includes(window.__t42.view.state.game.phase)")
            to_act = await pair[0].page.evaluate("() => window.__t42.view.state.game.to_act")
            side = await pair[0].page.evaluate("() => window.__t42.view.side")
            actor, other = (pair[0], pair[1]) if side == to_act else (pair[1], pair[0])
            await resign_as_soon_as_possible(actor)
            await other.page.click("button.accept")

    await at_tables(1)
    await finish_round()
    await at_tables(2)
    rounds = {await p.page.locator(".tournament-badge").text_content() or "" for p in players}
    assert any("Final" in r for r in rounds) and any("Third place" in r for r in rounds), rounds
    await finish_round()
    for player in players:
        await player.page.wait_for_function("id => window.__t42.tournamentsOver.has(id)", arg=tid)
        await player.page.wait_for_selector(".notice .over")
        # Every call was on screen at least 2 s before its table opened.
        calls = await player.page.evaluate("() => [...window.__t42.calls.values()]")
        assert len(calls) == 2, calls
        assert all(c["opened"] is not None and c["opened"] - c["shown"] >= 2000
                   for c in calls), calls
        # Nothing covers the end panel's controls.
        covered = await player.page.evaluate("""() => [...document.querySelectorAll(
            '.end-panel .actions a, .end-panel .actions button')].filter((el) => {
              el.scrollIntoView({ block: 'center' });
              const r = el.getBoundingClientRect();
              const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
              return !(top && el.contains(top));
            }).map((el) => el.textContent)""")
        assert covered == [], covered
    await players[0].page.screenshot(path=str(artifacts / "tournament-over-phone.png"),
                                     full_page=True)
    # The bracket in words: each match's result, each round named as its heading.
    page = players[0].page
    await page.goto(f"{server.url}/#/tournament/{tid}")
    await page.wait_for_selector(".podium li")
    statuses = await page.locator(".match .status").all_text_contents()
    assert all(s.startswith("winner:") for s in statuses), statuses
    final = page.get_by_role("region", name="Final", exact=True)
    assert await final.count() == 1
    assert await page.get_by_role("region", name="Semi-final", exact=True).count() == 1
    no_errors(*players)


async def test_words_after_a_language_switch_and_a_practice_game(
    start_browser_server: StartServer, browser: Any,
) -> None:
    """A language switch renames the navigation and the skip link at once (no reload); signed
    out, the badge says so (not "offline"); a game against the computer is practice in "My
    games"; a resignation offer counts its points in the plural form."""
    server = await start_browser_server(scripted(GAME_SEED))
    player = await person(browser, server.url + "/")
    page = player.page
    # The badge is written once the page has learned it is signed out.
    await page.wait_for_function(
        "() => document.querySelector('#conn').textContent === 'not signed in'", timeout=10_000)
    await page.select_option("select.lang", "ro")
    await page.wait_for_function("() => document.documentElement.lang === 'ro'")
    assert await page.get_attribute("#nav", "aria-label") == "Principală"
    assert await page.locator(".skip").text_content() == "Sari la conținut"
    await page.select_option("select.lang", "ru")
    await page.wait_for_function("() => document.documentElement.lang === 'ru'")
    assert await page.get_attribute("#nav", "aria-label") == "Основная"
    assert await page.locator(".skip").text_content() == "К содержимому"
    await page.select_option("select.lang", "en")
    await page.wait_for_function("() => document.documentElement.lang === 'en'")
    await sign_up(player, "pia")
    await play_computer(player)
    await page.wait_for_selector("select.resign-kind")
    options = await page.locator("select.resign-kind option").all_text_contents()
    assert options[0].endswith("(1 point)") and options[1].endswith("(2 points)"), options
    await resign_as_soon_as_possible(player)
    await page.wait_for_selector(".end-panel .result")
    await page.goto(f"{server.url}/#/player/pia")
    row = page.locator(".game-list tbody tr").first
    await row.wait_for()
    mode = await row.locator("td").nth(2).text_content() or ""
    assert mode.startswith("Practice"), mode
    no_errors(player)
