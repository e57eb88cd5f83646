"""What is private stays private, over real sockets, HTTP and a real Redis: a private
tournament's tables and games are seen by its players and its runner only (the rule is
``server/protocol/visibility.py``), and the watchers' channel never reaches a seated player
during play, from whichever socket."""

from __future__ import annotations

from typing import Any

import public_helpers
from server_helpers import (
    Client,
    RunningServer,
    StartServer,
    connect,
    eventually,
    guest,
    register,
    seat_two,
)
from tournament_helpers import call, new_runner_key, new_tournament

from server.protocol.visibility import Audience, Reach


async def get(server: RunningServer, path: str, token: str | None = None
              ) -> tuple[int, Any]:
    """``GET path`` with ``token`` (a player's token or a runner key) as the bearer."""
    bearer = {"Authorization": f"Bearer {token}"} if token else {}
    return await public_helpers.get(server, path, headers=bearer)


async def open_table(server: RunningServer, key: str, tid: str, pair: list[str],
                     *players: Client) -> str:
    status, opened = await call(server, "POST", f"/api/tournaments/{tid}/tables", key=key,
                                body={"pairs": [pair]})
    assert status == 201, opened
    table = str(opened["tables"][0]["table"])
    for player in players:
        await player.expect("game_start", table=table)
    return table


async def listed_tables(server: RunningServer, client: Client) -> list[dict[str, Any]]:
    """The lobby as HTTP and the WebSocket ``list_tables`` show it (the same index)."""
    status, body = await get(server, "/api/tables")
    assert status == 200
    page = await client.request({"type": "list_tables"})
    assert page["type"] == "tables"
    assert [t["table"] for t in page["tables"]] == [t["table"] for t in body["tables"]]
    return list(body["tables"])


async def refused_as_unknown(client: Client, message: dict[str, Any]) -> None:
    answer = await client.request(message)
    assert answer["type"] == "error" and answer["code"] == "no_such_table", answer


async def test_a_private_tournaments_table_is_seen_by_its_players_only(
    start_server: StartServer, redis_url: str, key_prefix: str
) -> None:
    server = await start_server()
    tokens = {n: await register(server, n) for n in ("alice", "bob", "carol", "dave", "erin")}
    alice, bob, carol, dave, erin = [await connect(server, tokens[n])
                                     for n in ("alice", "bob", "carol", "dave", "erin")]
    visitor = await connect(server, await guest(server))
    key = await new_runner_key(redis_url, key_prefix, "acme")
    hidden = await new_tournament(server, key, ["alice", "bob", "carol"],
                                  visibility="private")
    shown = await new_tournament(server, key, ["dave", "erin"])
    table = await open_table(server, key, hidden, ["alice", "bob"], alice, bob)
    public_table = await open_table(server, key, shown, ["dave", "erin"], dave, erin)

    # The public tournament's table is listed; the private one's is named nowhere.
    listing = await listed_tables(server, visitor)
    assert [t["table"] for t in listing] == [public_table]
    assert hidden not in str(listing)

    # Nobody else watches, syncs or chats there, a player of the same tournament included,
    # and each refusal reads as a table that does not exist.
    for outsider in (carol, visitor, dave):
        await refused_as_unknown(outsider, {"type": "watch", "table": table})
        await refused_as_unknown(outsider, {"type": "sync", "table": table, "since": 0})
        await refused_as_unknown(outsider, {"type": "chat", "table": table, "text": "hi"})
        await refused_as_unknown(outsider, {"type": "join", "table": table})
    assert server.lobby.tables[table].watchers == {}
    # A public tournament's table is anyone's to watch.
    assert (await visitor.request({"type": "watch", "table": public_table}))["type"] \
        == "watching"
    # Its own players see it, from any of their sockets.
    second = await connect(server, tokens["alice"])
    await second.expect("resume", table=table)
    watching = await second.request({"type": "watch", "table": table})
    assert watching["type"] == "watching" and watching["summary"]["tournament_id"] == hidden


async def test_a_private_tournaments_game_is_readable_by_its_players_and_runner_only(
    start_server: StartServer, redis_url: str, key_prefix: str
) -> None:
    server = await start_server()
    tokens = {n: await register(server, n) for n in ("alice", "bob", "carol")}
    alice, bob = await connect(server, tokens["alice"]), await connect(server, tokens["bob"])
    key = await new_runner_key(redis_url, key_prefix, "acme")
    other_key = await new_runner_key(redis_url, key_prefix, "club")
    tid = await new_tournament(server, key, ["alice", "bob", "carol"], visibility="private")
    table = await open_table(server, key, tid, ["alice", "bob"], alice, bob)
    assert (await alice.request({"type": "chat", "table": table, "text": "good luck"}))[
        "type"] == "ack"
    await bob.expect("chat", text="good luck")
    await bob.send({"type": "leave", "table": table})
    over = await alice.expect("game_over", table=table)
    game_id = over["game_id"]

    readers: tuple[str, ...] = (tokens["alice"], tokens["bob"], key)
    outsiders: tuple[str | None, ...] = (None, tokens["carol"], other_key, await guest(server))
    for path in (f"/api/games/{game_id}", f"/api/games/{game_id}/mat",
                 f"/api/games/{game_id}/review"):
        for token in readers:
            status, body = await get(server, path, token)
            assert status == 200, (path, body)
        for outsider in outsiders:
            status, body = await get(server, path, outsider)
            assert status == 404 and body["error"]["code"] == "no_such_game", (path, body)
    status, record = await get(server, f"/api/games/{game_id}", key)
    assert record["tournament_id"] == tid and "audience" not in record
    assert [m["text"] for m in record["chat"]] == ["good luck"]

    # History: the row is in the player's own list only.
    for outsider in (None, tokens["carol"], key):
        status, page = await get(server, "/api/players/alice/games", outsider)
        assert status == 200 and page["total"] == 0 and page["games"] == [], page
    status, page = await get(server, "/api/players/alice/games", tokens["alice"])
    assert [(g["game_id"], g["tournament_id"]) for g in page["games"]] == [(game_id, tid)]


async def test_a_private_tournaments_table_stays_private_on_the_node_that_takes_it_over(
    start_server: StartServer, redis_url: str, key_prefix: str
) -> None:
    first = await start_server(node_id="node-a")
    second = await start_server(node_id="node-b")
    tokens = {n: await register(second, n) for n in ("alice", "bob", "carol")}
    alice, bob, carol = [await connect(second, tokens[n]) for n in ("alice", "bob", "carol")]
    key = await new_runner_key(redis_url, key_prefix, "acme")
    tid = await new_tournament(first, key, ["alice", "bob"], visibility="private")
    table = await open_table(first, key, tid, ["alice", "bob"], alice, bob)
    assert table in first.lobby.tables

    await first.stop()  # its tables are handed over to node-b
    await eventually(lambda: table in second.lobby.tables)
    assert second.lobby.tables[table].audience == Audience(Reach.PRIVATE, "acme")
    await refused_as_unknown(carol, {"type": "watch", "table": table})
    await bob.send({"type": "leave", "table": table})
    over = await alice.expect("game_over", table=table)
    for token, status in ((None, 404), (tokens["carol"], 404), (key, 200)):
        assert (await get(second, f"/api/games/{over['game_id']}", token))[0] == status


def watchers_heard(client: Client) -> list[str]:
    return [m["text"] for m in client.of_type("chat") if m["channel"] == "watchers"]


async def test_a_seated_player_never_receives_the_watchers_channel_during_play(
    start_server: StartServer,
) -> None:
    server = await start_server()
    token_a = await register(server, "alice")
    a = await connect(server, token_a)
    b = await connect(server, await register(server, "bob"))
    c = await connect(server, await register(server, "carol"))
    table, _ = await seat_two(server, a, b)
    assert (await c.request({"type": "watch", "table": table}))["type"] == "watching"
    assert (await c.request({"type": "chat", "table": table, "text": "before"}))[
        "type"] == "ack"

    # alice watches her own table, from her seated socket and from another one.
    a2 = await connect(server, token_a)
    await a2.expect("resume", table=table)
    for socket in (a, a2):
        watching = await socket.request({"type": "watch", "table": table})
        assert watching["type"] == "watching", watching
        assert watching["chat"] == []  # the watchers' "before" is not in her history
    assert (await c.request({"type": "chat", "table": table, "text": "during"}))[
        "type"] == "ack"
    # bob speaks after carol: once alice's sockets hear him, carol's message went by.
    assert (await b.request({"type": "chat", "table": table, "text": "players"}))[
        "type"] == "ack"
    for socket in (a, a2):
        await socket.expect("chat", text="players")
        assert watchers_heard(socket) == []
    await c.expect("chat", text="players")
    assert watchers_heard(c) == ["before", "during"]
