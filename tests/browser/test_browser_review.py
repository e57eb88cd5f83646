"""The review of a finished game in the browser: two players finish a game (a few plays, a
double dropped), the end panel links to the review, which shows both players' summaries
and every decision with the equity it lost; a third person opens the same public review."""

from __future__ import annotations

from typing import Any

from tests.browser.test_browser_play import (
    NewPlayer,
    StartServer,
    by_side,
    end_panel,
    no_errors,
    pair,
    play_game,
    state_of,
)


async def test_the_end_panel_opens_the_review_of_the_game(
    start_browser_server: StartServer, new_player: NewPlayer, artifacts: Any
) -> None:
    server, players = await pair(start_browser_server, new_player, ("rita", "sam"))
    # A few plays each, then a double dropped at the first turn that may double.
    await play_game(players, stop=lambda s: s["v"] >= 10 and s["game"]["phase"] == "roll"
                    and s["game"]["can_double"])
    state = await state_of(players[0])
    assert state is not None
    sides = await by_side(players)
    await sides[state["game"]["to_act"]].page.click("button.double")
    await sides[1 - state["game"]["to_act"]].page.click("button.drop")
    for player in players:
        assert (await end_panel(player))["reason"] == "drop"
    rita = players[0]
    game_id = rita.of_type("game_over")[-1]["game_id"]
    link = rita.page.locator(".end-panel a.review-link")
    assert await link.get_attribute("href") == f"#/review/{game_id}"
    await link.click()
    await rita.page.wait_for_selector("table.review-summary tbody tr[data-side='1']")
    summary = rita.page.locator("table.review-summary tbody tr")
    assert await summary.count() == 2
    names = [await summary.nth(i).locator("th").text_content() for i in range(2)]
    assert sorted(n or "" for n in names) == ["rita", "sam"]
    rows = rita.page.locator("table.review-decisions tbody tr")
    kinds = [await rows.nth(i).get_attribute("data-kind") for i in range(await rows.count())]
    assert kinds.count("play") >= 4 and kinds[-2:] == ["double", "drop"]
    for i in range(await rows.count()):
        assert float(await rows.nth(i).get_attribute("data-error") or "-1") >= 0.0
    await rita.page.screenshot(path=str(artifacts / "review.png"), full_page=True)
    # A public game's review is open to anyone, without an account.
    viewer = await new_player(server.url + f"/#/review/{game_id}")
    await viewer.page.wait_for_selector("table.review-decisions tbody tr")
    assert await viewer.page.locator("table.review-decisions tbody tr").count() == len(kinds)
    no_errors([*players, viewer])
