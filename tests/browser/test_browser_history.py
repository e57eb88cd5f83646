"""Chat at the table, the players' game lists, replays and .mat downloads in Chromium, over a
real server: players talk, watchers talk apart, a player mutes another and reports a message;
"My games" lists a finished game, its replay steps to the final position, the .mat file
downloads; a 300-step replay's first position is timed (printed, not asserted)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tests.browser.test_browser_play import GAME_SEED, pair, play_game, scripted, table_of
from tests.browser.test_browser_players import PHONE, as_guest, no_errors, person, sideways

StartServer = Callable[..., Awaitable[Any]]
NewPlayer = Callable[..., Awaitable[Any]]
GNUBG = "/usr/games/gnubg"


async def say(player: Any, text: str) -> None:
    await player.page.fill(".chat-form input", text)
    await player.page.click(".chat-form button.chat-send")


async def shown(player: Any, text: str) -> None:
    await player.page.wait_for_function(
        "t => [...document.querySelectorAll('.chat-msg .text')].some((e) => e.textContent === t)",
        arg=text)


async def texts(player: Any) -> list[str]:
    found: list[str] = await player.page.locator(".chat-msg .text").all_text_contents()
    return found


async def test_chat_between_players_and_watchers_with_mute_and_report(
    start_browser_server: StartServer, browser: Any, artifacts: Path
) -> None:
    server = await start_browser_server(scripted(GAME_SEED))
    host = await person(browser, server.url + "/")
    guest = await person(browser, server.url + "/", viewport=PHONE)
    for player in (host, guest):
        await as_guest(player)
    await host.page.select_option("select[name=mode]", "boosted")
    await host.page.click("button.create-btn")
    await host.page.wait_for_selector(".share-link")
    table = str(await host.page.evaluate("() => window.__t42.view.table"))
    # The share link seats the second player.
    await guest.page.goto(f"{server.url}/#/join/{table}")
    await guest.page.wait_for_function("t => location.hash === '#/game/' + t", arg=table)
    for player in (host, guest):
        await player.page.wait_for_selector("svg.board g.point")
    watcher = await person(browser, f"{server.url}/")
    await as_guest(watcher)
    await watcher.page.goto(f"{server.url}/#/watch/{table}")
    await watcher.page.wait_for_selector("svg.board g.point")
    # Players talk: everyone sees it.
    await say(host, "good luck")
    for player in (host, guest, watcher):
        await shown(player, "good luck")
    # A watcher talks in the watchers' channel: watchers see it, the players do not.
    await say(watcher, "nice opening")
    await shown(watcher, "nice opening")
    await say(guest, "thanks \u202eyou")
    for player in (host, watcher):
        await shown(player, "thanks you")  # the override character is removed
    assert "nice opening" not in await texts(host)
    assert "nice opening" not in await texts(guest)
    assert await watcher.page.locator(".chat-msg.watchers").count() == 1
    # Mute for yourself: the guest hides the host's messages, and the host's next one.
    host_id = await host.page.evaluate("() => window.__t42.me.player")
    await guest.page.click(f".chat-msg[data-from='{host_id}'] button.mute")
    await guest.page.wait_for_selector(f".chat-msg[data-from='{host_id}']", state="detached")
    await say(host, "can you hear me")
    await shown(watcher, "can you hear me")
    assert "can you hear me" not in await texts(guest)
    await guest.page.wait_for_selector(".muted-note button.unmute")
    # Report a message: kept for the operators.
    await watcher.page.click(f".chat-msg[data-from='{host_id}'] button.report >> nth=0")
    await watcher.page.wait_for_function(
        "() => document.querySelector('.chat-error').textContent.length > 0")
    assert "Reported" in (await watcher.page.locator(".chat-error").text_content() or "")
    # Too long (the field refuses more than 300 characters) and too fast: the error is shown.
    assert await host.page.locator(".chat-form input").get_attribute("maxlength") == "300"
    for n in range(6):
        await say(host, f"spam {n}")
    await host.page.wait_for_function(
        "() => /wait/.test(document.querySelector('.chat-error').textContent)")
    await guest.page.screenshot(path=str(artifacts / "chat-phone.png"), full_page=True)
    assert await sideways(guest) == 0
    # A reload brings the last messages back (resume carries them).
    await host.page.reload()
    await shown(host, "good luck")
    no_errors(host, guest, watcher)


async def test_my_games_replay_and_download(
    start_browser_server: StartServer, new_player: NewPlayer, browser: Any, artifacts: Path,
    tmp_path: Path,
) -> None:
    """A rated game with a few moves and a chat line, then a resignation: the winner's "My
    games" lists it; its replay (a public link, here for someone not signed in) shows each
    step, the last one equal to the game's final position, with the chat; the .mat file
    downloads (and GNU Backgammon imports it when installed)."""
    server, players = await pair(start_browser_server, new_player, ("lena", "mark"))
    await say(players[0], "have fun")
    await play_game(players, stop=lambda s: s["v"] >= 12)
    state = await players[0].page.evaluate(
        "() => { const g = window.__t42.view.state.game; "
        "return {to_act: g.to_act, phase: g.phase}; }")
    sides = [await p.page.evaluate("() => window.__t42.view.side") for p in players]
    actor = players[sides.index(state["to_act"])]
    other = players[1 - sides.index(state["to_act"])]
    if state["phase"] not in ("roll", "move"):
        raise AssertionError(state)
    await actor.page.select_option("select.resign-kind", "single")
    await actor.page.click("button.resign")
    await other.page.click("button.accept")
    await other.page.wait_for_selector(".end-panel a.replay-link")
    game_id = other.of_type("game_over")[-1]["game_id"]
    # Sounds marked the turns and dice; the switch turns them off and is remembered.
    for player in players:
        heard = await player.page.evaluate("() => window.__t42sounds || []")
        assert {"turn", "dice"} & set(heard), heard
    await other.page.click("#nav button.sound")
    assert await other.page.evaluate("() => localStorage.getItem('t42.sound')") == "off"
    # The players online, in the header.
    await other.page.wait_for_function(
        "() => /\\d/.test(document.querySelector('#online').textContent)")
    review = other.page.locator(".end-panel a.review-link")
    assert await review.get_attribute("href") == f"#/review/{game_id}"
    me = await other.page.evaluate("() => window.__t42.me.player")
    await other.page.goto(f"{server.url}/#/player/{me}")
    row = other.page.locator(f".game-list tr[data-game='{game_id}']")
    await row.wait_for()
    assert "won" in (await row.text_content() or "")
    # The .mat download.
    async with other.page.expect_download() as info:
        await row.locator("button.mat").click()
    download = await info.value
    mat = tmp_path / "game.mat"
    await download.save_as(str(mat))
    text = mat.read_text()
    assert "Game 1" in text and "lena" in text.lower() + text and "mark" in text, text[:200]
    if shutil.which(GNUBG):
        out = subprocess.run([GNUBG, "-t", "-q"], input=f"import mat {mat}\nshow score\n",
                             capture_output=True, text=True, timeout=60)
        assert "lena" in out.stdout and "mark" in out.stdout, out.stdout[-400:] + out.stderr[-400:]
    # The replay, opened from the list, and as a public link by someone not signed in.
    await row.locator("a.replay-link").click()
    await other.page.wait_for_selector("svg.board[data-step='0']")
    record = await (await other.page.request.get(f"{server.url}/api/games/{game_id}")).json()
    last = [e for e in record["events"] if e.get("state", {}).get("game")][-1]
    stranger = await person(browser, f"{server.url}/#/replay/{game_id}", viewport=PHONE)
    page = stranger.page
    await page.wait_for_selector("svg.board[data-step='0']")
    steps = int(await page.evaluate("() => window.__t42.view.steps.length"))
    assert steps >= 8
    await page.click("button.forward")
    await page.wait_for_selector("svg.board[data-step='1']")
    for n in range(2, steps):
        await page.keyboard.press("ArrowRight")
        await page.wait_for_selector(f"svg.board[data-step='{n}']")
    board = await page.evaluate(
        "() => window.__t42.view.steps[window.__t42.view.at].state.game.board")
    assert board == last["state"]["game"]["board"]
    position = await page.locator("svg.board").get_attribute("data-position")
    assert position == last["state"]["game"]["position_id"]
    await shown(stranger, "have fun")
    await page.keyboard.press("Home")
    await page.wait_for_selector("svg.board[data-step='0']")
    await page.screenshot(path=str(artifacts / "replay-phone.png"), full_page=True)
    assert await sideways(stranger) == 0
    # A 300-step replay: the first position after its log arrives (printed, not asserted).
    steps_300 = [e for e in record["events"] if e.get("state")]
    big = dict(record, events=(steps_300 * (300 // len(steps_300) + 1))[:300])
    await page.route(f"**/api/games/{game_id}-big", lambda route: route.fulfill(
        status=200, content_type="application/json", body=json.dumps(big)))
    await page.goto(f"{server.url}/#/replay/{game_id}-big")
    await page.wait_for_function("() => window.__t42replay && window.__t42replay.steps === 300")
    timing = await page.evaluate("() => window.__t42replay")
    print(f"replay of {timing['steps']} steps: first position drawn {timing['ms']:.1f} ms "
          "after the log arrived")
    (artifacts / "replay-speed.json").write_text(json.dumps(timing))
    await page.evaluate("() => { delete window.__t42replay; }")
    no_errors(*players, stranger)
    assert table_of(players[0])
