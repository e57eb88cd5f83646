"""Table chat over real sockets (PROTOCOL.md §16): channels by role, cleaning and length, the
rate, personal and operator mutes, reports listed by the admin command, chat across nodes,
history in resume/watching, and the chat kept with the finished game."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
from admin_helpers import run_admin
from server_helpers import Client, RunningServer, StartServer, connect, play_out, register, seat_two


def chats(client: Client) -> list[tuple[str, str, str]]:
    return [(m["channel"], m["from"], m["text"]) for m in client.of_type("chat")]


async def heard(client: Client, text: str) -> dict[str, Any]:
    """The ``chat`` with ``text`` that ``client`` received (a sender may get its own message
    before the ``ack`` its request waited for)."""
    for message in client.messages:
        if message.get("type") == "chat" and message.get("text") == text:
            return message
    return await client.expect("chat", text=text)


async def say(client: Client, table: str, text: str) -> dict[str, Any]:
    answer = await client.request({"type": "chat", "table": table, "text": text})
    return answer


def resign(side: int, state: dict[str, Any]) -> dict[str, Any] | None:
    phase = state["game"]["phase"]
    if phase == "resign_offered":
        return {"type": "accept_resign"}
    return {"type": "resign", "kind": "single"} if side == 1 else None


async def admin(server: RunningServer, *args: str) -> str:
    settings = server.settings
    code, out, err = await run_admin(str(settings.redis_url), settings.key_prefix, *args)
    assert code == 0, err
    return out


async def table_of_three(server: RunningServer) -> tuple[str, Client, Client, Client]:
    """alice and bob play (a game in progress), carol watches."""
    a = await connect(server, await register(server, "alice"))
    b = await connect(server, await register(server, "bob"))
    c = await connect(server, await register(server, "carol"))
    table, _ = await seat_two(server, a, b, mode="private")
    watching = await c.request({"type": "watch", "table": table})
    assert watching["type"] == "watching" and watching["chat"] == []
    return table, a, b, c


async def test_players_and_watchers_channels(start_server: StartServer) -> None:
    server = await start_server()
    table, a, b, c = await table_of_three(server)
    ack = await say(a, table, "good luck")
    assert ack == {"type": "ack", "ref": ack["ref"], "table": table}
    for client in (a, b, c):
        message = await heard(client, "good luck")
        assert message["channel"] == "players" and message["from"] == "alice"
        assert message["name"] == "alice" and isinstance(message["msg"], str)
        assert isinstance(message["at"], float) and "v" not in message
    assert (await say(c, table, "alice is winning"))["type"] == "ack"
    await heard(c, "alice is winning")
    await say(b, table, "thanks")  # sent after the watcher's: it arrives after it
    for client in (a, b):
        await heard(client, "thanks")
        assert chats(client) == [("players", "alice", "good luck"),
                                 ("players", "bob", "thanks")]
    await heard(c, "thanks")
    # History: a new watcher and a player coming back see what their role may see.
    d = await connect(server, await register(server, "dave"))
    watching = await d.request({"type": "watch", "table": table})
    assert [m["text"] for m in watching["chat"]] == ["good luck", "alice is winning", "thanks"]
    b2 = await connect(server, b.token)
    resume = await b2.expect("resume", table=table)
    assert [m["text"] for m in resume["chat"]] == ["good luck", "thanks"]
    # Nobody at the table: refused.
    stranger = await say(d, "nosuchtable", "hi")
    assert stranger["code"] == "no_such_table"
    e = await connect(server, await register(server, "erin"))
    refused = await say(e, table, "hi")
    assert (refused["type"], refused["code"]) == ("error", "not_at_table")
    # Once the game is over the players see the watchers' channel too, and the record of the
    # game keeps both channels.
    over = await play_out({0: a, 1: b}, table, decide=resign)
    await say(c, table, "well played")
    await heard(a, "well played")
    async with aiohttp.ClientSession() as http, http.get(
            f"{server.http}/api/games/{over['game_id']}",
            headers={"Authorization": f"Bearer {a.token}"}) as response:
        record = await response.json()
    assert [(m["channel"], m["text"]) for m in record["chat"]] == [
        ("players", "good luck"), ("watchers", "alice is winning"), ("players", "thanks"),
        ("watchers", "well played")]


async def test_text_is_cleaned_and_its_length_checked(start_server: StartServer) -> None:
    server = await start_server()
    table, a, b, _ = await table_of_three(server)
    await say(a, table, "  \u202ehe\u200fl\x07lo\u2066\n wor\u061cld\t ")
    await heard(b, "hello world")
    for bad in ("\u202e\u200e \x00\n", " " * 10, "x" * 301):
        refused = await say(a, table, bad)
        assert (refused["code"], refused["field"]) == ("bad_field", "text"), bad
    assert (await say(a, table, "é" * 300))["type"] == "ack"
    too_long = await a.request({"type": "chat", "table": table, "text": "x" * 2001})
    assert too_long["code"] == "bad_field"


async def test_a_chat_message_of_only_invisible_characters_is_refused_with_bad_field(
    start_server: StartServer,
) -> None:
    server = await start_server()
    table, a, b, c = await table_of_three(server)
    for invisible in ("\u200b", "\u2060\ufeff\u200d\u200c", "\U000e0001\U000e0041\U000e007f",
                      "\u2028\u2029", " \u200b\u00a0\u3164\u2800 ", "\ue000\u0378"):
        refused = await say(a, table, invisible)
        assert (refused["code"], refused["field"]) == ("bad_field", "text"), invisible
    # Separators, zero-width and tag characters never reach the others; joined emoji fall
    # apart into their parts.
    await say(a, table, "one\u2028two\u2029three \u200bfour\U000e0041 "
                        "\U0001f468\u200d\U0001f469")
    for client in (b, c):
        message = await heard(client, "one two three four \U0001f468\U0001f469")
        assert message["from"] == "alice"
    assert [t for _, _, t in chats(b)] == ["one two three four \U0001f468\U0001f469"]


async def test_the_rate_limit_refuses_the_sixth_message_in_the_window(
    start_server: StartServer,
) -> None:
    server = await start_server(chat_window=600.0)
    table, a, b, _ = await table_of_three(server)
    for n in range(5):
        assert (await say(a, table, f"m{n}"))["type"] == "ack"
    refused = await say(a, table, "m5")
    assert refused["code"] == "chat_rate_limited"
    assert 1 <= refused["retry_after"] <= 600
    assert (await a.request({"type": "report", "table": table, "msg": "x"}))["code"] == \
        "chat_rate_limited"
    assert (await say(b, table, "others may talk"))["type"] == "ack"


async def test_a_muted_player_is_not_delivered_and_the_mute_is_kept(
    start_server: StartServer,
) -> None:
    server = await start_server()
    table, a, b, c = await table_of_three(server)
    assert (await b.request({"type": "mute", "player": "alice"}))["type"] == "ack"
    assert (await b.request({"type": "mute", "player": "bob"}))["code"] == "bad_field"
    await say(a, table, "can you hear me")
    await heard(c, "can you hear me")
    await say(b, table, "quiet")
    await heard(b, "quiet")
    assert chats(b) == [("players", "bob", "quiet")]
    b2 = await connect(server, b.token)
    assert b2.of_type("welcome")[0]["muted"] == ["alice"]
    resume = await b2.expect("resume", table=table)
    assert [m["text"] for m in resume["chat"]] == ["quiet"]
    await b.request({"type": "unmute", "player": "alice"})
    await say(a, table, "now?")
    await heard(b, "now?")
    await heard(b2, "now?")


async def test_an_operator_mute_and_the_reports_use_the_admin_command(
    start_server: StartServer,
) -> None:
    server = await start_server()
    table, a, b, _ = await table_of_three(server)
    await say(a, table, "you are bad")
    said = await heard(b, "you are bad")
    ack = await b.request({"type": "report", "table": table, "msg": said["msg"],
                           "reason": "insult"})
    assert ack["type"] == "ack"
    missing = await b.request({"type": "report", "table": table, "msg": "nope"})
    assert (missing["code"], missing["field"]) == ("no_such_message", "msg")
    [report] = [json.loads(line) for line in (await admin(server, "reports")).splitlines()]
    assert {k: report[k] for k in ("table", "msg", "from", "text", "reporter", "reason")} == {
        "table": table, "msg": said["msg"], "from": "alice", "text": "you are bad",
        "reporter": "bob", "reason": "insult"}
    await admin(server, "mute", "alice", "--minutes", "5")
    a2 = await connect(server, a.token)  # a socket opened now reads the mute
    refused = await say(a2, table, "hello?")
    assert refused["code"] == "chat_muted" and refused["until"] > 0
    # The socket that was open is muted too (the node keeps one mute per player).
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while not server.lobby.mutes.chat_muted_until("alice"):
        assert loop.time() < deadline, "the mute never reached the node"
        await asyncio.sleep(0.01)
    assert (await say(a, table, "hello?"))["code"] == "chat_muted"
    await admin(server, "unmute", "alice")
    a3 = await connect(server, a.token)
    assert (await say(a3, table, "sorry"))["type"] == "ack"


async def test_chat_across_nodes(start_nodes: Any) -> None:
    one, two = await start_nodes(2)
    a = await connect(one, await register(one, "alice"))
    b = await connect(two, await register(two, "bob"))
    c = await connect(two, await register(two, "carol"))
    table, _ = await seat_two(one, a, b, mode="private")
    assert (await c.request({"type": "watch", "table": table}))["type"] == "watching"
    assert (await b.request({"type": "mute", "player": "carol"}))["type"] == "ack"
    await say(b, table, "from node two")
    await heard(a, "from node two")
    await heard(c, "from node two")
    await say(c, table, "watching from node two")
    await heard(c, "watching from node two")
    await say(a, table, "from node one")
    await heard(b, "from node one")
    assert [t for _, _, t in chats(b)] == ["from node two", "from node one"]
    assert [t for _, _, t in chats(a)] == ["from node two", "from node one"]
