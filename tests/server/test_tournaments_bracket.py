"""A server-run bracket of five players over real sockets and real Redis: seeding by rating,
byes for the top seeds, a no-show forfeiting twice, a node restart in the middle (nothing
lost, the game in flight replayed on a new table), the third-place match and the podium."""

from __future__ import annotations

import asyncio
from typing import Any

import redis.asyncio as aioredis
from server_helpers import Client, RunningServer, StartServer, connect, play_out, register, scripted
from tournament_helpers import call, new_runner_key, new_tournament

from rating_plugin.store import RatingStore
from server.app import BRACKETS

# The call before a table (tournament_call) is tested in test_tournaments_open.py.
SETTINGS: dict[str, Any] = {"tournament_tick": 0.1, "tournament_lease": 2.0, "tournament_call": 0.0}
NO_SHOW = 3


async def bracket(server: RunningServer, tid: str) -> dict[str, Any]:
    status, body = await call(server, "GET", f"/api/tournaments/{tid}/bracket")
    assert status == 200, body
    return dict(body)


def match(view: dict[str, Any], match_id: str) -> dict[str, Any]:
    everything = [m for r in view["rounds"] for m in r] + [view["third_place"]]
    return next(m for m in everything if m["match"] == match_id)


async def table_for(client: Client, match_id: str) -> str:
    event = await client.expect("tournament_table", match=match_id, timeout=20)
    await client.expect("game_start", table=event["table"])
    return str(event["table"])


async def test_five_player_bracket_with_a_no_show_and_a_restart(
    start_server: StartServer, redis_url: str, key_prefix: str, redis_client: aioredis.Redis
) -> None:
    one = await start_server(dice_factory=scripted(11), node_id="node-one", **SETTINGS)
    names = ("erin", "alice", "bob", "carol", "dave")
    tokens = {name: await register(one, name) for name in names}
    ratings = RatingStore(redis_client, key_prefix)
    await ratings.award_podium("an-earlier-cup", ["erin"], [100])  # erin: 1600, seed 1
    key = await new_runner_key(redis_url, key_prefix, "acme")
    # bob (seed 3) never comes.
    clients = {n: await connect(one, tokens[n]) for n in names if n != "bob"}
    tid = await new_tournament(one, key, list(names))

    status, body = await call(one, "POST", f"/api/tournaments/{tid}/bracket", key=key,
                              body={"no_show_seconds": NO_SHOW})
    assert status == 201, body
    view = body["bracket"]
    # Seeds by Table42 rating, ties by name; byes for seeds 1, 2, 3 (5 players in 8 slots).
    assert view["seeds"] == ["erin", "alice", "bob", "carol", "dave"]
    assert [(m["match"], m["seeds"], m["status"]) for m in view["rounds"][0]] == [
        ("r1m1", [1, None], "bye"), ("r1m2", [4, 5], "ready"),
        ("r1m3", [2, None], "bye"), ("r1m4", [3, None], "bye")]
    assert [(m["match"], m["players"], m["status"]) for m in view["rounds"][1]] == [
        ("r2m1", ["erin", None], "pending"), ("r2m2", ["alice", "bob"], "ready")]
    assert len(view["rounds"]) == 3 and view["third_place"]["status"] == "pending"
    status, _ = await call(one, "POST", f"/api/tournaments/{tid}/bracket", key=key, body={})
    assert status == 409
    status, body = await call(one, "POST", f"/api/tournaments/{tid}/podium", key=key,
                              body={"players": ["erin"]})
    assert status == 409  # the server awards a bracket's podium

    # Round 1: carol (4) v dave (5); dave resigns the match by leaving.
    pairing = await clients["carol"].expect("tournament_pairing", match="r1m2", timeout=20)
    assert (pairing["opponent"], pairing["seed"], pairing["seeds"]) == ("dave", 4, [4, 5])
    assert pairing["deadline"] is not None
    table = await table_for(clients["carol"], "r1m2")
    await clients["dave"].expect("game_start", table=table)
    await clients["dave"].send({"type": "leave", "table": table})
    result = await clients["dave"].expect("tournament_result", match="r1m2", timeout=20)
    assert (result["winner"], result["won"], result["status"]) == ("carol", False, "done")

    # Semi-final erin v carol opens; alice waits for bob, who forfeits after the wait.
    pairing = await clients["erin"].expect("tournament_pairing", match="r2m1", timeout=20)
    assert pairing["opponent"] == "carol" and pairing["seeds"] == [1, 4]
    old_table = await table_for(clients["erin"], "r2m1")
    forfeit = await clients["alice"].expect("tournament_result", match="r2m2", timeout=20)
    assert (forfeit["status"], forfeit["winner"], forfeit["won"]) == ("forfeit", "alice", True)

    # The node stops in the middle of the semi-final; another one takes over.
    before = await bracket(one, tid)
    assert match(before, "r2m1")["status"] == "playing"
    await one.stop()
    two = await start_server(dice_factory=scripted(11), node_id="node-two", **SETTINGS)
    clients = {n: await connect(two, tokens[n]) for n in names if n != "bob"}
    after = await bracket(two, tid)
    assert after["seeds"] == before["seeds"]
    for m in ("r1m1", "r1m2", "r1m3", "r1m4", "r2m2"):
        assert match(after, m) == match(before, m)
    # The game in flight goes on at its own table, which node two takes over once the
    # stopped node's lease runs out: carol resumes it there, then leaves (erin wins).
    await clients["carol"].expect("resume", table=old_table, timeout=30)
    await clients["carol"].send({"type": "leave", "table": old_table})
    semi = await clients["erin"].expect("tournament_result", match="r2m1", timeout=20)
    assert (semi["winner"], semi["won"]) == ("erin", True)

    # Final erin v alice, played out to the end; third place carol v bob (bob absent).
    # (erin may hear of the final's table before the semi's result: read it from alice.)
    final_table = await table_for(clients["alice"], "r3m1")
    over = await play_out({0: clients["erin"], 1: clients["alice"]}, final_table)
    first, second = over["winner"], over["loser"]
    third = await clients["carol"].expect("tournament_result", match="third", timeout=20)
    assert (third["status"], third["winner"]) == ("forfeit", "carol")
    done = await clients["erin"].expect("tournament_over", timeout=20)
    assert done["podium"] == [first, second, "carol"] and done["awarded"] is True

    # The podium, pushed at once as rating events (all three are connected), before the
    # tournament_over event.
    prizes = {first: (1, 50), second: (2, 25), "carol": (3, 15)}
    for player, (place, prize) in prizes.items():
        if not clients[player].of_type("tournament_over"):
            await clients[player].expect("tournament_over", timeout=20)
        [event] = [m for m in clients[player].of_type("rating") if m["reason"] == "podium"]
        assert (event["place"], event["change"], event["tournament"]) == (place, prize, tid)
    final = await bracket(two, tid)
    assert final["status"] == "finished" and final["podium"] == [first, second, "carol"]
    assert (match(final, "r2m1")["winner"], match(final, "r2m1")["tables"]) == (
        "erin", [old_table])  # one table: taken over, not replayed
    assert match(final, "third")["players"] == ["carol", "bob"]
    assert (await ratings.rating("carol", "table42")).rating == 1515
    status, body = await call(two, "GET", f"/api/tournaments/{tid}/results")
    assert [r["table"] for r in body["results"]] == [table, old_table, final_table]


async def test_private_two_player_bracket_of_matches(
    start_server: StartServer, redis_url: str, key_prefix: str, redis_client: aioredis.Redis
) -> None:
    server = await start_server(dice_factory=scripted(5), **SETTINGS)
    tokens = {name: await register(server, name) for name in ("alice", "bob")}
    key = await new_runner_key(redis_url, key_prefix, "club")
    clients = {n: await connect(server, t) for n, t in tokens.items()}
    tid = await new_tournament(server, key, ["bob", "alice"], visibility="private",
                               format={"kind": "match", "length": 3})
    status, body = await call(server, "POST", f"/api/tournaments/{tid}/bracket", key=key,
                              body={"no_show_seconds": 30})
    assert status == 201, body
    view = body["bracket"]
    assert view["seeds"] == ["alice", "bob"] and view["third_place"] is None
    table = await table_for(clients["alice"], "r1m1")
    start = await clients["bob"].expect("game_start", table=table)
    assert start["match_length"] == 3 and start["rating"]["unrated_reason"] == "tournament_game"
    await clients["bob"].send({"type": "leave", "table": table})
    await clients["bob"].expect("match_over", table=table)
    done = await clients["alice"].expect("tournament_over", timeout=20)
    assert done["podium"] == ["alice", "bob"] and done["awarded"] is False
    status, body = await call(server, "GET", f"/api/tournaments/{tid}/bracket")
    assert status == 404  # private: its runner only
    status, body = await call(server, "GET", f"/api/tournaments/{tid}/bracket", key=key)
    assert status == 200 and body["status"] == "finished"
    assert body["podium"] == ["alice", "bob"]
    status, body = await call(server, "GET", f"/api/tournaments/{tid}", key=key)
    assert body["tournament"]["podium"]["awarded"] is False
    assert clients["alice"].of_type("rating") == []
    ratings = RatingStore(redis_client, key_prefix)
    assert (await ratings.rating("alice", "table42")).rating == 1500


async def test_a_table_opened_by_a_step_that_was_not_saved_is_adopted(
    start_server: StartServer, redis_url: str, key_prefix: str
) -> None:
    """The driver opens a table, then its save of the bracket is refused (as when the lease
    is lost): the next step finds the players seated at that table and the match goes on
    there; nobody forfeits as a no-show, and the table's result decides the match."""
    server = await start_server(dice_factory=scripted(5), **SETTINGS)
    tokens = {name: await register(server, name) for name in ("alice", "bob")}
    key = await new_runner_key(redis_url, key_prefix, "club")
    clients = {n: await connect(server, t) for n, t in tokens.items()}
    tid = await new_tournament(server, key, ["bob", "alice"])
    store = server.app[BRACKETS].store
    save = store.save_bracket
    refused: list[dict[str, Any]] = []

    async def refuse_the_first_open(tid: str, node: str, state: dict[str, Any],
                                    status: str) -> bool:
        opened = any(m.get("status") == "playing"
                     for r in state["bracket"]["rounds"] for m in r)
        if opened and not refused:
            refused.append(state)
            return False
        return await save(tid, node, state, status)

    store.save_bracket = refuse_the_first_open  # type: ignore[method-assign]
    status, body = await call(server, "POST", f"/api/tournaments/{tid}/bracket", key=key,
                              body={"no_show_seconds": NO_SHOW})
    assert status == 201, body
    table = await table_for(clients["alice"], "r1m1")
    await clients["bob"].expect("game_start", table=table)
    for _ in range(100):  # the step that opened the table saves after announcing it
        if refused:
            break
        await asyncio.sleep(0.05)
    assert refused, "the step that opened the table was saved"
    for _ in range(100):  # the next steps adopt the table
        view = await bracket(server, tid)
        if match(view, "r1m1")["status"] == "playing":
            break
        await asyncio.sleep(0.1)
    assert match(view, "r1m1")["table"] == table
    await asyncio.sleep(NO_SHOW + 0.5)  # past the no-show deadline: still playing
    view = await bracket(server, tid)
    assert match(view, "r1m1")["status"] == "playing" and match(view, "r1m1")["table"] == table
    await clients["bob"].send({"type": "leave", "table": table})
    done = await clients["alice"].expect("tournament_over", timeout=20)
    assert done["podium"] == ["alice", "bob"]
    view = await bracket(server, tid)
    assert match(view, "r1m1")["status"] == "done" and match(view, "r1m1")["winner"] == "alice"
