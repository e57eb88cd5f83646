"""The browser client end to end in headless Chromium: two people sign up in two browser
contexts (each with its own address, so the game is rated), queue, get paired and play a
whole game by clicking, with one double taken; a dropped connection resumes; resign, drop
and time-out end panels; no console errors; screenshots and speed figures in test-artifacts/.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from server.rules import DiceSource, ScriptedDice

STATIC = Path(__file__).resolve().parents[2] / "server" / "static"
SIZE_LIMIT = 200 * 1024
GAME_SEED = 1662
"""With these dice, always rolling (one double, taken) and playing each turn's first legal
play ends the game in 27 plays: a short whole game."""
MAX_ACTIONS = 400
StartServer = Callable[..., Awaitable[Any]]
NewPlayer = Callable[..., Awaitable[Any]]


def scripted(seed: int) -> Callable[[], DiceSource]:
    import random

    rng = random.Random(seed)
    values = [rng.randint(1, 6) for _ in range(4000)]
    return lambda: ScriptedDice(values)


async def sign_up(player: Any, name: str) -> None:
    page = player.page
    await page.fill("input[name=name]", name)
    await page.fill("input[name=password]", "correct horse")
    await page.click("button.signup")
    await page.wait_for_selector("#conn[data-status=online]")
    await page.wait_for_selector(".pool[data-pool=competitive] button.queue-btn:not([disabled])")


async def state_of(player: Any) -> dict[str, Any] | None:
    result: dict[str, Any] | None = await player.page.evaluate(
        """() => {
          const v = window.__t42.view;
          if (!v || !v.state) return null;
          return {v: v.v, side: v.side, status: v.state.status, game: v.state.game,
                  over: v.over !== null || Boolean(v.state.game && v.state.game.outcome)};
        }"""
    )
    return result


async def wait_v_above(player: Any, v: int) -> None:
    await player.page.wait_for_function(
        "v => window.__t42.view && window.__t42.view.v > v", arg=v
    )


async def play_turn(player: Any, game: dict[str, Any]) -> None:
    """Click one legal play: the forced-move button, or each step of the first offered play
    (pick the checker, then its destination), then Confirm."""
    page = player.page
    forced = page.locator("button.forced")
    if len(game["legal_plays"]) == 1:
        await forced.click()
        return
    for origin, target in game["legal_plays"][0]:
        source = "bar" if origin == 25 else str(origin)
        await page.click(f"svg.board g[data-point='{source}']")
        await page.click(f"svg.board g.dest[data-dest='{target}']")
    await page.click("button.confirm")


async def play_game(
    players: list[Any], *, double_by: int | None = None, stop: Callable[[dict[str, Any]], bool]
    | None = None,
) -> None:
    """Both players click until the game is over (or ``stop(state)``): roll, the one double
    (by side ``double_by``), take, plays."""
    doubled = False
    for _ in range(MAX_ACTIONS):
        states = [await state_of(p) for p in players]
        first = states[0]
        assert first is not None
        if first["over"] or (stop is not None and stop(first)):
            return
        game = first["game"]
        actor = next(
            (p for p, s in zip(players, states, strict=True)
             if s is not None and s["side"] == game["to_act"]), None
        )
        assert actor is not None, ([(s or {}).get("side") for s in states], game["to_act"])
        page = actor.page
        phase = game["phase"]
        before = max(s["v"] for s in states if s is not None)
        if phase == "roll":
            if not doubled and double_by == game["to_act"] and game["can_double"]:
                doubled = True
                await page.click("button.double")
            else:
                await page.click("button.roll")
        elif phase == "double_offered":
            await page.click("button.take")
        elif phase == "move":
            await play_turn(actor, game)
        elif phase == "resign_offered":
            await page.click("button.accept")
        else:
            raise AssertionError(f"unexpected phase {phase}")
        for p in players:
            await wait_v_above(p, before)
    raise AssertionError("the game did not end")


async def pair(
    start_browser_server: StartServer, new_player: NewPlayer, names: tuple[str, str],
    *, pool: str = "competitive", dice: Callable[[], DiceSource] | None = None,
    **settings: Any,
) -> tuple[Any, list[Any]]:
    server = await start_browser_server(dice or scripted(GAME_SEED), **settings)
    players = [await new_player(server.url + "/") for _ in names]
    for player, name in zip(players, names, strict=True):
        await sign_up(player, name)
    for player in players:
        await player.page.click(f".pool[data-pool={pool}] button.queue-btn")
    for player in players:
        try:
            await player.page.wait_for_selector("svg.board g.point")
        except Exception:
            print("no board; last frames:", player.frames[-3:], player.errors)
            raise
        await player.page.wait_for_function("() => window.__t42.view && window.__t42.view.state"
                                            " && window.__t42.view.state.game")
    return server, players


def no_errors(players: list[Any]) -> None:
    for player in players:
        assert player.errors == [], player.errors


async def test_two_players_play_a_rated_game_by_clicking_with_a_double_taken(
    start_browser_server: StartServer, new_player: NewPlayer, artifacts: Path
) -> None:
    server = await start_browser_server(scripted(GAME_SEED))
    alice = await new_player(server.url + "/")
    # First paint of the lobby, from the browser's own paint timing.
    await alice.page.wait_for_function(
        "() => performance.getEntriesByName('lobby-drawn').length > 0")
    paint = await alice.page.evaluate(
        """() => new Promise(resolve => new PerformanceObserver((list, observer) => {
             const fcp = list.getEntriesByName('first-contentful-paint')[0];
             if (!fcp) return;
             observer.disconnect();
             resolve({fcp: fcp.startTime,
                      lobby: performance.getEntriesByName('lobby-drawn')[0].startTime});
           }).observe({type: 'paint', buffered: true}))"""
    )
    assert paint["fcp"] > 0
    bob = await new_player(server.url + "/")
    players = [alice, bob]
    await sign_up(alice, "alice")
    await sign_up(bob, "bob")
    await alice.page.wait_for_selector(".pool[data-pool=competitive]")
    await alice.page.screenshot(path=str(artifacts / "lobby.png"), full_page=True)
    for player in players:
        await player.page.click(".pool[data-pool=competitive] button.queue-btn")
    await alice.page.wait_for_selector(".queue-card, svg.board g.point")
    for player in players:
        await player.page.wait_for_selector("svg.board g.point")
        await player.page.wait_for_function(
            "() => window.__t42.view && window.__t42.view.state && window.__t42.view.state.game")
    # The stake preview of match_found, and the game counts (distinct addresses).
    for player in players:
        found = player.of_type("match_found")[0]
        stakes = player.page.locator(".stakes")
        assert await stakes.get_attribute("data-win") == str(found["stakes"]["player"]["win"])
        assert await stakes.get_attribute("data-loss") == str(found["stakes"]["player"]["loss"])
        assert await player.page.locator(".rated").count() == 1
    sides = {p.address: (await state_of(p) or {})["side"] for p in players}
    doubler = sides[bob.address]
    await play_game(players, double_by=doubler,
                    stop=lambda s: s["game"]["cube"] == 2 and s["game"]["phase"] == "move")
    cube = alice.page.locator("svg.board g.cube")
    assert await cube.get_attribute("data-cube") == "2"
    assert await cube.get_attribute("data-owner") == "me"  # alice took: she owns it
    await alice.page.screenshot(path=str(artifacts / "game-cube-2.png"), full_page=True)
    await play_game(players)
    for player in players:
        await player.page.wait_for_selector(".end-panel table.rating-change")
    results = []
    for player in players:
        over = player.of_type("game_over")[-1]
        rating = player.of_type("rating")[-1]
        result = player.page.locator(".end-panel .result")
        assert await result.get_attribute("data-points") == str(over["points"])
        assert await result.get_attribute("data-winner") == str(over["winner_side"])
        results.append((over["game_id"], over["winner"], over["points"]))
        table = player.page.locator(f".rating-change[data-game='{rating['game_id']}']")
        shown = {
            field: json.loads(await table.locator(f"td[data-field='{field}']").get_attribute(
                "data-value") or "null")
            for field in ("Old rating", "New rating", "Change", "K", "Cube", "Cube coefficient")
        }
        assert shown == {
            "Old rating": rating["old"], "New rating": rating["new"],
            "Change": rating["change"], "K": rating["k"], "Cube": rating["cube"],
            "Cube coefficient": rating["cube_coefficient"],
        }
        assert rating["cube"] == 2
    assert results[0] == results[1]
    await alice.page.screenshot(path=str(artifacts / "end-panel.png"), full_page=True)
    # A move drawn within one frame of its event: every state event was on the board at the
    # first animation frame after it arrived.
    perf = await bob.page.evaluate("() => window.__t42perf")
    moves = [p for p in perf if p["type"] == "moved"]
    assert moves and all(p["drawn"] for p in perf), perf
    ms = sorted(p["ms"] for p in moves)
    (artifacts / "speed.json").write_text(json.dumps({
        "first_contentful_paint_ms": paint["fcp"], "lobby_drawn_ms": paint["lobby"],
        "moves": len(moves), "move_to_frame_ms_median": ms[len(ms) // 2],
        "move_to_frame_ms_max": ms[-1],
        "render_ms_median": sorted(p["render"] for p in moves)[len(moves) // 2],
        "render_ms_max": max(p["render"] for p in moves), "js_css_bytes": static_size(),
    }, indent=2))
    no_errors(players)


def static_size() -> int:
    return sum(f.stat().st_size for f in STATIC.rglob("*") if f.suffix in {".js", ".css"})


def test_javascript_and_css_stay_under_200_kb() -> None:
    assert static_size() < SIZE_LIMIT


def table_of(player: Any) -> str:
    return str(player.of_type("match_found")[-1]["table"])


async def by_side(players: list[Any]) -> dict[int, Any]:
    return {(await state_of(p) or {})["side"]: p for p in players}


async def end_panel(player: Any) -> dict[str, str | None]:
    result = player.page.locator(".end-panel .result")
    await result.wait_for()
    return {k: await result.get_attribute(f"data-{k}") for k in ("reason", "kind", "points",
                                                                  "winner")}


async def test_a_dropped_connection_resumes_after_reload(
    start_browser_server: StartServer, new_player: NewPlayer
) -> None:
    server, players = await pair(start_browser_server, new_player, ("carol", "dave"))
    carol, dave = players
    table = table_of(carol)
    await play_game(players, stop=lambda s: s["v"] >= 8)
    # The socket drops inside the page (as a network failure would): it reconnects and syncs.
    await carol.page.evaluate("() => window.__t42.socket.drop()")
    await carol.page.wait_for_selector("#conn[data-status=reconnecting], #conn[data-status=online]")
    await carol.page.wait_for_selector("#conn[data-status=online]")
    await play_game(players, stop=lambda s: s["v"] >= 14)
    # The page goes away: the opponent sees the countdown; a reload resumes the game.
    await carol.page.close()
    away = dave.page.locator(".presence.away")
    await away.wait_for()
    assert "forfeits in" in (await away.text_content() or "")
    context = carol.page.context
    fresh = await context.new_page()
    carol.attach(fresh)
    await fresh.goto(server.url + "/")
    await fresh.wait_for_url(f"**/#/game/{table}")
    await fresh.wait_for_function(
        "() => window.__t42.view && window.__t42.view.state && window.__t42.view.state.game")
    await dave.page.wait_for_selector(".presence.away", state="detached")
    # The stake line is back after the reload (match_found is gone: the page asks again).
    stakes = fresh.locator(".stakes")
    await stakes.wait_for()
    found = carol.of_type("match_found")[0]["stakes"]["player"]
    assert await stakes.get_attribute("data-win") == str(found["win"])
    mine = await state_of(carol)
    theirs = await state_of(dave)
    assert mine is not None and theirs is not None
    assert mine["v"] == theirs["v"] and mine["game"]["board"] == theirs["game"]["board"]
    await play_game(players)
    assert (await end_panel(carol)) == (await end_panel(dave))
    no_errors(players)


async def test_resign_gammon_accepted_shows_the_resign_panel(
    start_browser_server: StartServer, new_player: NewPlayer
) -> None:
    _, players = await pair(start_browser_server, new_player, ("erin", "frank"))
    state = await state_of(players[0])
    assert state is not None
    actor = (await by_side(players))[state["game"]["to_act"]]
    await actor.page.select_option("select.resign-kind", "gammon")
    await actor.page.click("button.resign")
    other = next(p for p in players if p is not actor)
    await other.page.click("button.accept")
    for player in players:
        panel = await end_panel(player)
        assert panel["reason"] == "resign" and panel["kind"] == "gammon", panel
        assert panel["points"] == "2"
    loser = await actor.page.locator(".end-panel .result").text_content()
    assert loser is not None and loser.startswith("You lost")
    # Rematch: both queue again in the same pool and meet at a new table.
    first = table_of(players[0])
    for player in players:
        await player.page.click("button.rematch")
    for player in players:
        await player.page.wait_for_function(
            "t => window.__t42.view && window.__t42.view.table !== t && window.__t42.view.state"
            " && window.__t42.view.state.game", arg=first)
    assert table_of(players[0]) == table_of(players[1]) != first
    no_errors(players)


async def test_drop_ends_the_game_and_a_guest_watches_it(
    start_browser_server: StartServer, new_player: NewPlayer
) -> None:
    server, players = await pair(start_browser_server, new_player, ("gina", "hank"))
    table = table_of(players[0])
    viewer = await new_player(server.url + "/")
    await viewer.page.click("button.guest")
    await viewer.page.wait_for_selector("#conn[data-status=online]")
    # Guests may not queue for rated pools, and the lobby says why.
    assert await viewer.page.locator(
        ".pool[data-pool=competitive] button.queue-btn").is_disabled()
    await viewer.page.click(f"li[data-table='{table}'] a.watch")
    await viewer.page.wait_for_selector("svg.board g.point")
    await play_game(players, stop=lambda s: s["game"]["phase"] == "roll"
                    and s["game"]["can_double"])
    state = await state_of(players[0])
    assert state is not None
    sides = await by_side(players)
    doubler = sides[state["game"]["to_act"]]
    await doubler.page.click("button.double")
    taker = sides[1 - state["game"]["to_act"]]
    await taker.page.click("button.drop")
    for player in [*players, viewer]:
        panel = await end_panel(player)
        assert panel["reason"] == "drop" and panel["points"] == "1", panel
    watched = await viewer.page.locator(".end-panel .result").text_content()
    assert watched is not None and "wins" in watched
    no_errors([*players, viewer])


async def test_a_private_table_times_out_with_strikes_and_says_why_it_is_unrated(
    start_browser_server: StartServer, new_player: NewPlayer, artifacts: Path
) -> None:
    server = await start_browser_server(scripted(GAME_SEED), decision_time=0.4)
    ivan = await new_player(server.url + "/")
    judy = await new_player(server.url + "/", phone=True)
    await sign_up(ivan, "ivan")
    await sign_up(judy, "judy")
    await ivan.page.select_option("select[name=mode]", "private")
    await ivan.page.click("button.create-btn")
    await ivan.page.wait_for_url("**/#/game/*")
    table = ivan.page.url.rsplit("/", 1)[-1]
    await judy.page.fill("input[name=table]", table)
    await judy.page.click(".byid-form button[type=submit]")
    for player in (ivan, judy):
        panel = await end_panel(player)
        assert panel["reason"] == "timeout", panel
        reason = player.page.locator(".unrated[data-reason=private_room]")
        assert await reason.count() >= 1
        strikes = await player.page.locator(".strikes").all_text_contents()
        assert any("3/3" in s for s in strikes), strikes
    await judy.page.screenshot(path=str(artifacts / "phone-end-panel.png"), full_page=True)
    no_errors([ivan, judy])


async def test_keyboard_alone_picks_a_checker_and_undoes_a_step(
    start_browser_server: StartServer, new_player: NewPlayer
) -> None:
    _, players = await pair(start_browser_server, new_player, ("kate", "liam"))
    state = await state_of(players[0])
    assert state is not None
    mover = (await by_side(players))[state["game"]["to_act"]]
    page = mover.page
    game = (await state_of(mover) or {})["game"]
    assert game["phase"] == "move" and len(game["legal_plays"]) > 1
    origin = game["legal_plays"][0][0][0]
    source = "bar" if origin == 25 else str(origin)
    await page.focus(f"svg.board g[data-point='{source}']")
    await page.keyboard.press("Enter")
    assert await page.locator("svg.board g.dest").count() >= 1
    await page.keyboard.press("Escape")  # put the checker back: no destinations shown
    assert await page.locator("svg.board g.dest").count() == 0
    await page.keyboard.press("Enter")  # the focus went back to the checker: pick it again
    await page.keyboard.press("Enter")  # the first destination has the focus
    picked = await page.evaluate("() => window.__t42.view.picker.steps.length")
    assert picked >= 1
    await page.click("button.undo")
    assert await page.evaluate("() => window.__t42.view.picker.steps.length") == picked - 1
    no_errors(players)


PICKER_CASES = """
async () => {
  const m = await import('/static/js/moves.js');
  const start = {board: [-2,0,0,0,0,5, 0,3,0,0,0,-5, 5,0,0,0,-3,0, -5,0,0,0,0,2],
                 bar: [0, 0], off: [0, 0]};
  const out = {};
  // 6-5 from the start: 24/18 13/8 may be clicked 13/8 first; the offered play goes back.
  const plays = [[[24, 18], [13, 8]], [[24, 13]], [[13, 7], [13, 8]]];
  const p = new m.Picker(plays, m.sideView(start, 0));
  out.sources = p.sources().sort((a, b) => a - b);
  out.from24 = p.destinations(24).map(d => d.to).sort((a, b) => a - b);
  p.add([[13, 8]]);
  out.after = p.sources().sort((a, b) => a - b);
  p.add([[24, 18]]);
  out.done = p.complete();
  p.undo();
  out.undone = p.complete();
  // A checker on the bar must come in first.
  const barred = {...start, board: start.board.slice(), bar: [1, 0]};
  barred.board[23] = 1;
  const q = new m.Picker([[[25, 20], [13, 8]], [[25, 20], [20, 15]]], m.sideView(barred, 0));
  out.barSources = q.sources();
  // The board seen by side 1 and back.
  const v1 = m.sideView(start, 1);
  out.roundTrip = JSON.stringify(m.toGame(v1, 1, {}).board) === JSON.stringify(start.board);
  out.found = m.findPlay({...start, legal_plays: plays},
    m.toGame(m.applyStep(m.applyStep(m.sideView(start, 0), [24, 18]), [13, 8]), 0, {}), 0);
  return out;
}
"""


async def test_the_picker_offers_only_the_legal_destinations(
    start_browser_server: StartServer, new_player: NewPlayer
) -> None:
    server = await start_browser_server()
    player = await new_player(server.url + "/")
    out = await player.page.evaluate(PICKER_CASES)
    assert out["sources"] == [13, 24]
    assert out["from24"] == [13, 18]  # one die, or both dice with the same checker
    assert out["after"] == [13, 24]
    assert out["done"] == [[24, 18], [13, 8]]
    assert out["undone"] is None
    assert out["barSources"] == [25]
    assert out["roundTrip"] is True
    assert out["found"] == [[24, 18], [13, 8]]
    no_errors([player])


async def test_the_queue_shows_the_waiting_time_and_the_widening_window(
    start_browser_server: StartServer, new_player: NewPlayer
) -> None:
    server = await start_browser_server()
    player = await new_player(server.url + "/")
    await sign_up(player, "mia")
    page = player.page
    await page.click(".pool[data-pool=competitive] button.queue-btn")
    card = page.locator(".queue-card")
    await card.wait_for()
    queued = player.of_type("queued")[-1]
    assert f"±{round(queued['window'])}" in (await card.locator(".window").text_content() or "")
    # The page counts the wait and widens the window by the pool's rate while nobody comes.
    await page.wait_for_function(
        "() => /waiting [2-9]/.test(document.querySelector('.queue-card .waited').textContent)")
    window = await card.locator(".window").text_content() or ""
    assert f"±{round(queued['window'])} " not in window + " "
    await page.click("button.cancel-queue")
    await card.wait_for(state="detached")
    assert player.of_type("queue_cancelled")
    no_errors([player])


async def test_the_queue_says_why_two_players_of_one_network_wait(
    start_browser_server: StartServer, new_player: NewPlayer
) -> None:
    server = await start_browser_server()
    home = "10.78.1.9"
    players = [await new_player(server.url + "/", address=home) for _ in range(2)]
    for player, name in zip(players, ("ola", "pia"), strict=True):
        await sign_up(player, name)
        await player.page.click(".pool[data-pool=competitive] button.queue-btn")
        await player.page.locator(".queue-card").wait_for()
    assert players[1].of_type("queued")[-1]["note"] == "same_network"
    note = players[1].page.locator(".queue-card .same-network")
    await note.wait_for()
    assert "your network" in (await note.text_content() or "")
    no_errors(players)


async def test_sign_up_log_out_and_log_in_again(
    start_browser_server: StartServer, new_player: NewPlayer
) -> None:
    server = await start_browser_server()
    player = await new_player(server.url + "/")
    page = player.page
    await sign_up(player, "nora")
    assert await page.locator("#nav .who").text_content() == "nora"
    await page.click("button.logout")
    await page.wait_for_selector("form.signin")
    assert await page.evaluate("() => localStorage.getItem('t42.token')") is None
    await page.fill("input[name=name]", "nora")
    await page.fill("input[name=password]", "correct horse")
    await page.click("button.login")
    await page.wait_for_selector("#conn[data-status=online]")
    await page.reload()
    await page.wait_for_selector("#conn[data-status=online]")  # the token survives a reload
    assert await page.locator("#nav .who").text_content() == "nora"
    no_errors([player])


CONTRAST = """
() => {
  // WCAG 2 contrast of every visible text element against its first opaque background.
  const parse = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.9)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const bad = [];
  for (const el of document.querySelectorAll('body *')) {
    if (el.closest('svg') || !el.offsetParent) continue;
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own) continue;
    const style = getComputedStyle(el);
    const fg = parse(style.color).slice(0, 3);
    const bg = background(el);
    const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
    const ratio = (a + 0.05) / (b + 0.05);
    const large = parseFloat(style.fontSize) >= 24 || (parseFloat(style.fontSize) >= 18.66
      && Number(style.fontWeight) >= 700);
    const need = large ? 3 : 4.5;
    const dim = Number(style.opacity) < 1 || el.closest('button:disabled');
    if (ratio < need && !dim) bad.push(`${el.tagName}.${el.className}: ${ratio.toFixed(2)}`);
  }
  return bad;
}
"""


async def test_text_contrast_and_phone_width_on_the_lobby_and_a_game(
    start_browser_server: StartServer, new_player: NewPlayer, artifacts: Path
) -> None:
    server = await start_browser_server(scripted(GAME_SEED))
    desk = await new_player(server.url + "/")
    phone = await new_player(server.url + "/", phone=True)
    assert await desk.page.evaluate(CONTRAST) == []
    await sign_up(desk, "omar")
    await sign_up(phone, "pia")
    for player in (desk, phone):
        assert await player.page.evaluate(CONTRAST) == []
        await player.page.click(".pool[data-pool=competitive] button.queue-btn")
    for player in (desk, phone):
        await player.page.wait_for_function(
            "() => window.__t42.view && window.__t42.view.state && window.__t42.view.state.game")
        assert await player.page.evaluate(CONTRAST) == []
    await phone.page.screenshot(path=str(artifacts / "phone-game.png"), full_page=True)
    # Nothing wider than a phone's screen: no sideways scrolling.
    wide = await phone.page.evaluate(
        "() => document.scrollingElement.scrollWidth - window.innerWidth")
    assert wide <= 0
    # The focus is visible: moving it with the keyboard draws an outline.
    await desk.page.keyboard.press("Tab")
    await desk.page.keyboard.press("Tab")
    shown = await desk.page.evaluate(
        """() => {
             const el = document.activeElement;
             if (getComputedStyle(el).outlineStyle !== "none") return true;
             // A board point draws its focus on its shape (a thick orange stroke).
             const shape = el.querySelector("polygon, .dest-mark, rect.hit");
             return Boolean(shape) && getComputedStyle(shape).strokeWidth === "5px";
           }""")
    assert shown
    no_errors([desk, phone])


async def test_two_players_on_one_address_are_told_why_their_game_is_unrated(
    start_browser_server: StartServer, new_player: NewPlayer
) -> None:
    server = await start_browser_server(scripted(GAME_SEED))
    home = "10.99.0.1"
    rick = await new_player(server.url + "/", address=home)
    sue = await new_player(server.url + "/", address=home)
    await sign_up(rick, "rick")
    await sign_up(sue, "sue")
    await rick.page.click("button.create-btn")  # Competitive, single game
    await rick.page.wait_for_url("**/#/game/*")
    table = rick.page.url.rsplit("/", 1)[-1]
    await sue.page.click("button.refresh")
    await sue.page.click(f"li[data-table='{table}'] button.join")
    for player in (rick, sue):
        reason = player.page.locator(".unrated[data-reason=same_address]")
        await reason.wait_for()
        assert "one network address" in (await reason.text_content() or "")
    no_errors([rick, sue])


async def test_a_rated_match_to_one_ends_with_the_fibs_change(
    start_browser_server: StartServer, new_player: NewPlayer
) -> None:
    _, players = await pair(start_browser_server, new_player, ("tom", "uma"), pool="match-1")
    table = table_of(players[0])
    state = await state_of(players[0])
    assert state is not None
    actor = (await by_side(players))[state["game"]["to_act"]]
    await actor.page.click("button.resign")
    other = next(p for p in players if p is not actor)
    await other.page.click("button.accept")
    for player in players:
        box = player.page.locator(f".rating-change[data-game='{table}-m']")
        await box.wait_for()
        pushed = next(r for r in player.of_type("rating") if r["game_id"] == f"{table}-m")
        assert pushed["ladder"] == "fibs"
        for label, key in (("Old rating", "old"), ("New rating", "new"), ("Change", "change"),
                           ("Multiplier", "multiplier")):
            cell = box.locator(f"td[data-field='{label}']")
            assert json.loads(await cell.get_attribute("data-value") or "null") == pushed[key]
        assert await player.page.locator(".end-panel h2").text_content() == "Match over"
    no_errors(players)
