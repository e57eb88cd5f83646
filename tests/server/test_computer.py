"""Playing the computer over real sockets: ``play_computer`` from the lobby (unrated, says
why), the limits, bots kept out of matchmaking and tournaments, a stalled bot forfeits, and
bot against bot at each level (legal plays only, the cube offered and answered)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

import pytest
from server_helpers import (
    StartServer,
    connect,
    default_decision,
    eventually,
    register,
    scripted,
)
from tournament_helpers import call, new_runner_key, new_tournament

from server.bot import player as bot_player
from server.bot.player import BotPlayer, Choice, GameLog, think_here
from server.bot.strategy import LEVEL_NAMES, Level
from server.client import Client, Format, http_base
from server.client.connection import post_json


async def test_a_human_plays_the_computer_from_the_lobby_unrated(
    start_server: StartServer,
) -> None:
    server = await start_server(dice_factory=scripted(3))
    token = await register(server, "human")
    human = await connect(server, token)
    answer = await human.request({"type": "play_computer", "level": "basic"})  # an old name
    assert answer["type"] == "computer_game", answer
    table = answer["table"]
    assert answer["level"] == "beginner" and answer["bot"].startswith("bot-beginner-")
    start = await human.expect("game_start", table=table)
    assert start["rating"] == {"rated": False, "ladder": None, "boosted": False,
                               "unrated_reason": "bot"}
    seats = start["state"]["seats"]
    side = 0 if seats[0]["player"] == "human" else 1
    assert seats[1 - side]["bot"] is True and seats[side]["bot"] is False

    # The human answers only its own decisions; the bot plays the other side by itself.
    over = await _play_side(human, table, side, start)
    assert over["rating"]["rated"] is False and over["rating"]["unrated_reason"] == "bot"
    assert over["reason"] in ("normal", "drop")
    await asyncio.sleep(0.2)
    assert human.of_type("rating") == [] and human.of_type("error") == []
    for _ in range(100):  # the bot leaves and its game is counted off
        if not _computer(server).games:
            break
        await asyncio.sleep(0.05)
    assert _computer(server).games == {}
    await human.close()


async def _play_side(human: Any, table: str, side: int, start: dict[str, Any],
                     max_messages: int = 4000) -> dict[str, Any]:
    """The human's scripted client: answer each decision awaited from ``side`` (default
    decisions), from ``start`` (the game_start already read) until ``game_over``; the
    computer plays the other side by itself."""
    acted = -1
    message = start
    for _ in range(max_messages):
        if message.get("table") != table:
            continue
        assert message.get("type") != "error", message
        if message["type"] == "game_over":
            return dict(message)
        state = message.get("state")
        if not isinstance(state, dict) or state["status"] != "playing" or "v" not in message:
            continue
        game = state["game"]
        if game["to_act"] == side and message["v"] > acted:
            acted = message["v"]
            await human.send({**default_decision(game), "table": table})
        message = await human.next(30.0)
    raise AssertionError("no game_over")


def _computer(server: Any) -> Any:
    from server.app import COMPUTER

    return server.app[COMPUTER]


async def test_bot_games_are_limited_per_player_and_per_node(start_server: StartServer) -> None:
    server = await start_server(bot_games_per_player=1, bot_games_per_node=2)
    one = await connect(server, await register(server, "first"))
    first = await one.request({"type": "play_computer", "level": "random"})
    assert first["type"] == "computer_game"
    await one.send({"type": "leave", "table": first["table"]})
    await one.expect("game_over", table=first["table"])
    again = await one.request({"type": "play_computer", "level": "random"})
    assert again["type"] == "error" and again["code"] == "too_many_bot_games"

    for _ in range(100):  # the bot finds its game over (it ended before it connected)
        if not _computer(server).games:
            break
        await asyncio.sleep(0.05)
    assert _computer(server).games == {}
    full = await start_server(bot_games_per_node=0)
    two = await connect(full, await register(full, "second"))
    refused = await two.request({"type": "play_computer"})
    assert refused["type"] == "error" and refused["code"] == "too_many_bot_games"
    await one.close()
    await two.close()


async def test_concurrent_requests_cannot_pass_the_node_limit_together(
    start_server: StartServer,
) -> None:
    server = await start_server(bot_games_per_node=2)
    clients = [await connect(server, await register(server, f"rush{i}")) for i in range(6)]
    replies = await asyncio.gather(*(c.request({"type": "play_computer", "level": "random"})
                                     for c in clients))
    kinds = sorted(r["type"] if r["type"] != "error" else r["code"] for r in replies)
    assert kinds == ["computer_game"] * 2 + ["too_many_bot_games"] * 4, replies
    assert len(_computer(server).games) == 2
    for client, reply in zip(clients, replies, strict=True):
        if reply["type"] == "computer_game":
            await client.send({"type": "leave", "table": reply["table"]})
            await client.expect("game_over", table=reply["table"])
        await client.close()


async def test_the_nodes_own_bots_are_not_held_to_the_socket_limit_per_address(
    start_server: StartServer,
) -> None:
    # Every bot of the node connects from the node's own address: with the per-address
    # socket limit on, the bots past it could not connect and forfeited at once.
    from server.app import HUB

    server = await start_server(limits=True, max_sockets_per_address=2)
    humans = [await connect(server, await register(server, f"solo{i}"),
                            address=f"198.51.100.{i + 1}")
              for i in range(3)]
    tables = []
    for human in humans:
        answer = await human.request({"type": "play_computer", "level": "random"})
        assert answer["type"] == "computer_game", answer
        tables.append(answer["table"])
    hub = server.app[HUB]
    for _ in range(250):
        if hub.address_count("127.0.0.1") >= 3 or len(_computer(server).games) < 3:
            break
        await asyncio.sleep(0.02)
    assert len(_computer(server).games) == 3 and hub.address_count("127.0.0.1") == 3
    # An outside client from that address is still held to the limit.
    status, _b = await post_json(http_base(server.ws_url) + "/api/bot", {})
    assert status == 200
    refused = False
    try:
        extra = await Client.connect(server.ws_url, _b["token"], auto_reconnect=False)
        await extra.close()
    except Exception:
        refused = True
    assert refused
    for human, table in zip(humans, tables, strict=True):
        await human.send({"type": "leave", "table": table})
        over = await human.expect("game_over", table=table)
        assert over["winner"].startswith("bot-")
        await human.close()


async def test_bot_games_are_limited_per_address(start_server: StartServer) -> None:
    server = await start_server(limits=True, bot_games_per_address=2)
    crowd = [await connect(server, await register(server, f"crowd{i}"), address="198.51.100.9")
             for i in range(3)]
    other = await connect(server, await register(server, "elsewhere"), address="203.0.113.4")
    replies = await asyncio.gather(*(c.request({"type": "play_computer", "level": "random"})
                                     for c in crowd))
    kinds = sorted(r["type"] if r["type"] != "error" else r["code"] for r in replies)
    assert kinds == ["computer_game"] * 2 + ["too_many_bot_games"], replies
    from server.app import LOBBY

    registry = server.app[LOBBY].metrics.registry
    assert registry.get_sample_value("table42_refusals_total",
                                     {"limit": "bot_games_per_address"}) == 1
    assert registry.get_sample_value("table42_errors_total",
                                     {"code": "too_many_bot_games"}) == 1
    elsewhere = await other.request({"type": "play_computer", "level": "random"})
    assert elsewhere["type"] == "computer_game", elsewhere
    # A game that ends gives its place back.
    first = next(i for i, r in enumerate(replies) if r["type"] == "computer_game")
    table = replies[first]["table"]
    await crowd[first].send({"type": "leave", "table": table})
    await crowd[first].expect("game_over", table=table)
    late = next(i for i, r in enumerate(replies) if r["type"] == "error")
    again = None
    for _ in range(100):  # the bot's task ends just after the game
        again = await crowd[late].request({"type": "play_computer", "level": "random"})
        if again["type"] == "computer_game":
            break
        await asyncio.sleep(0.05)
    assert again is not None and again["type"] == "computer_game", again
    playing = [(crowd[late], again["table"]), (other, elsewhere["table"])] + [
        (crowd[i], r["table"]) for i, r in enumerate(replies)
        if r["type"] == "computer_game" and i != first]
    for client, table in playing:
        await client.send({"type": "leave", "table": table})
        await client.expect("game_over", table=table)
    for client in [*crowd, other]:
        await client.close()


async def test_bot_accounts_are_marked_and_kept_out_of_pools_and_tournaments(
    start_server: StartServer,
) -> None:
    server = await start_server()
    status, body = await post_json(http_base(server.ws_url) + "/api/bot", {"level": "casual"})
    assert status == 200 and body["bot"] is True and body["player"].startswith("bot-casual-")
    bot = await Client.connect(server.ws_url, body["token"])
    assert bot.welcome is not None and bot.welcome.is_bot
    status, me = await _get_me(server.ws_url, body["token"])
    assert status == 200 and me["bot"] is True
    assert await _refused(bot, {"type": "queue", "pool": "boosted"}) == "bot_not_allowed"
    # create_table of a tournament table by a bot: tests/tables/test_machine_rules.py
    assert await _refused(bot, {"type": "play_computer"}) == "bot_not_allowed"
    bad_status, bad = await post_json(http_base(server.ws_url) + "/api/bot", {"level": "god"})
    assert bad_status == 400 and bad["error"]["field"] == "level"
    assert bad["error"]["message"] == "field 'level' must be one of " + ", ".join(LEVEL_NAMES)
    assert all(name in bad["error"]["message"] for name in ("beginner", "advanced", "expert"))
    await bot.close()


async def test_a_bot_has_a_public_profile_and_a_runner_cannot_register_it(
    start_server: StartServer, redis_url: str, key_prefix: str
) -> None:
    server = await start_server()
    status, issued = await post_json(http_base(server.ws_url) + "/api/bot", {"level": "basic"})
    assert status == 200
    bot_id = issued["player"]
    status, profile = await call(server, "GET", f"/api/players/{bot_id}")
    assert status == 200, profile
    assert (profile["player"], profile["name"], profile["guest"], profile["bot"]) == (
        bot_id, "Computer (beginner)", False, True)
    assert profile["ladders"]["table42"]["games"] == 0
    status, reply = await call(server, "GET", "/api/players/bot-basic-nothex")
    assert status == 404 and reply["error"]["code"] == "not_found"
    await register(server, "alice")
    status, profile = await call(server, "GET", "/api/players/alice")
    assert status == 200 and profile["bot"] is False

    key = await new_runner_key(redis_url, key_prefix, "acme")
    tid = await new_tournament(server, key, ["alice"])
    status, reply = await call(server, "POST", f"/api/tournaments/{tid}/players", key=key,
                               body={"player": bot_id})
    assert status == 400 and reply["error"]["code"] == "bot_not_allowed", reply
    assert reply["error"]["field"] == "player"
    status, detail = await call(server, "GET", f"/api/tournaments/{tid}")
    assert detail["tournament"]["players"] == ["alice"]


async def _refused(client: Client, message: dict[str, Any]) -> str:
    from server.client import RequestFailed

    try:
        await client.request(message)
    except RequestFailed as exc:
        return exc.code
    return "accepted"


async def _get_me(url: str, token: str) -> tuple[int, dict[str, Any]]:
    import aiohttp

    async with aiohttp.ClientSession() as http, http.get(
        http_base(url) + "/api/me", headers={"Authorization": f"Bearer {token}"}
    ) as resp:
        return resp.status, dict(await resp.json())


async def test_a_stalled_bot_forfeits_and_the_node_goes_on(
    start_server: StartServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def slow(*args: Any) -> Any:
        time.sleep(0.5)
        return None

    monkeypatch.setattr(bot_player, "choose", slow)
    server = await start_server(bot_decision_timeout=0.1, bot_workers=0)
    human = await connect(server, await register(server, "patient"))
    answer = await human.request({"type": "play_computer", "level": "strong"})
    table = answer["table"]
    start = await human.expect("game_start", table=table)
    seats = start["state"]["seats"]
    side = 0 if seats[0]["player"] == "patient" else 1
    over = await _play_side(human, table, side, start)
    assert over["winner_side"] == side and over["reason"] == "leave"
    pong = await human.request({"type": "ping"})
    assert pong["type"] == "pong"
    await human.close()


async def test_a_bot_decides_once_when_other_events_arrive_while_it_thinks(
    start_server: StartServer,
) -> None:
    # A disconnect and a reconnect of the opponent while the bot is to act add two events
    # carrying the same game state; the bot used to decide (and send) again for each, with
    # its play arriving at a later roll: "does not fit the dice".
    server = await start_server()
    human = await Client.connect(server.ws_url, await register(server, "fidget"))
    bot_client = await Client.connect(server.ws_url, guest=True)
    table = await human.create_table("private")
    await bot_client.join(table)
    gate, thinking = asyncio.Event(), asyncio.Event()
    seen: list[tuple[str, str, str]] = []

    async def think(level: Level, game: Any, side: int, seed: int) -> Choice:
        seen.append((game["position_id"], game["match_id"], game["phase"]))
        thinking.set()
        await gate.wait()
        return await think_here(level, game, side, seed)

    bot = BotPlayer(bot_client, Level.RANDOM, seed=5, think=think)
    task = asyncio.ensure_future(bot.play_table(table, idle_timeout=30))
    acted = -1

    async def human_turns(until: Callable[[], bool]) -> None:
        nonlocal acted
        for _ in range(400):
            if until():
                return
            view = human.tables[table]
            if view.v > acted and human.my_turn(table):
                acted = view.v
                state = human.state(table)
                assert state is not None
                await human.act(table, default_decision(state["game"]))
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(human.next_event(), 0.2)

    await human_turns(thinking.is_set)
    assert thinking.is_set()
    v = bot_client.tables[table].v
    await human.reconnect()
    for _ in range(250):
        if bot_client.tables[table].v >= v + 2:
            break
        await asyncio.sleep(0.02)
    assert bot_client.tables[table].v >= v + 2  # disconnected, reconnected
    gate.set()
    await human_turns(lambda: len(seen) >= 4)
    await human.leave(table)
    log = await asyncio.wait_for(task, 30)
    assert log.errors == []
    assert len(seen) == len(set(seen)), seen
    await human.close()
    await bot_client.close()


# --- bot against bot ---------------------------------------------------------------------

async def _bot_game(url: str, levels: tuple[Level, Level], seed: int) -> tuple[GameLog, GameLog]:
    first = await Client.connect(url, guest=True, fmt=Format.MSGPACK,
                                 headers={"X-Forwarded-For": f"10.88.0.{seed % 250 + 1}"})
    second = await Client.connect(url, guest=True, fmt=Format.JSON,
                                  headers={"X-Forwarded-For": f"10.89.0.{seed % 250 + 1}"})
    try:
        table = await first.create_table("private")
        await second.join(table)
        logs = await asyncio.gather(
            BotPlayer(first, levels[0], seed=seed).play_table(table, idle_timeout=60),
            BotPlayer(second, levels[1], seed=seed + 1).play_table(table, idle_timeout=60),
        )
        return logs[0], logs[1]
    finally:
        await first.close()
        await second.close()


async def test_bot_against_bot_over_sockets_legal_plays_and_the_cube(
    start_server: StartServer
) -> None:
    """Two games over sockets (a msgpack and a JSON client each), on scripted dice, so the
    bots' choices and the cube are the same every run; twenty games a level, in process:
    ``tests/bot/test_bot_strategy.py``."""
    server = await start_server(dice_factory=scripted(5))
    results = await asyncio.gather(
        _bot_game(server.ws_url, (Level.RANDOM, Level.RANDOM), 7),
        _bot_game(server.ws_url, (Level.CASUAL, Level.BEGINNER), 1007))
    finals = [a.final for a, _ in results]
    assert all(f is not None and f["type"] == "game_over" for f in finals)
    assert {f["reason"] for f in finals if f is not None} <= {"normal", "drop"}
    # Legal plays only: the server refused nothing the bots sent.
    assert [e for a, b in results for e in a.errors + b.errors] == []
    doubles = sum(a.doubles + b.doubles for a, b in results)
    answers = sum(sum(a.answers.values()) + sum(b.answers.values()) for a, b in results)
    assert doubles > 0 and answers == doubles


async def test_the_command_line_bot_plays_the_servers_bot(
    start_server: StartServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from server.bot.__main__ import parse_args, run

    server = await start_server()
    args = parse_args(["--level", "beginner", "--url", server.ws_url, "--against", "random",
                       "--games", "2", "--seed", "3"])
    assert await run(args) == 0
    out = capsys.readouterr().out
    assert out.count("game_over") == 2 and "won" in out


async def test_a_human_plays_the_expert_computer_in_a_match(start_server: StartServer) -> None:
    # The top level (asked by its old name) from the lobby, in the node's bot worker pool
    # (a process), a match to 3 with the cube: every bot decision is accepted by the server
    # (legal plays, cube actions when allowed) until the first game ends.
    server = await start_server(dice_factory=scripted(5), bot_workers=1)
    human = await connect(server, await register(server, "human"))
    answer = await human.request({"type": "play_computer", "level": "expert",
                                  "match_length": 3})
    assert answer["type"] == "computer_game", answer
    assert answer["level"] == "advanced" and answer["bot"].startswith("bot-advanced-")
    assert answer["name"] == "Computer (advanced)"
    table = answer["table"]
    start = await human.expect("game_start", table=table)
    seats = start["state"]["seats"]
    side = 0 if seats[0]["player"] == "human" else 1
    over = await _play_side(human, table, side, start)
    assert over["rating"]["unrated_reason"] == "bot"
    assert human.of_type("error") == []
    await human.close()


async def test_a_node_stopped_during_a_game_against_the_computer_closes_the_bots_socket_cleanly(
    start_server: StartServer, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The node stops while its own bot plays: the bot's socket and the human's end with the
    # node's close code (1001, going away), answered at once, not dropped by the socket
    # liveness as unanswered (1006) after a stop that waited for it.
    closed: list[int | None] = []  # the close codes of the bots' sockets
    close = Client.close

    async def close_and_note(client: Client) -> None:
        await close(client)
        if (client.player or "").startswith("bot-"):
            closed.append(client.close_code)

    monkeypatch.setattr(Client, "close", close_and_note)
    bots: list[Client] = []  # the bots' clients, once their connect returned
    real_connect = Client.connect

    async def connect_and_note(*args: Any, **kwargs: Any) -> Client:
        client = await real_connect(*args, **kwargs)
        if (client.player or "").startswith("bot-"):
            bots.append(client)
        return client

    monkeypatch.setattr(Client, "connect", connect_and_note)
    server = await start_server(dice_factory=scripted(3))
    human = await connect(server, await register(server, "human"))
    answer = await human.request({"type": "play_computer", "level": "random"})
    bot = answer["bot"]
    await eventually(lambda: server.hub.count(bot) == 1)
    await human.expect("game_start", table=answer["table"])
    # The bot's own side has its client (a bot stopped inside its connect has none to close).
    await eventually(lambda: len(bots) == 1)
    caplog.set_level(logging.INFO, logger="server.net.heartbeat")
    await server.stop()
    assert closed == [1001]
    assert human.close_code == 1001
    assert "did not answer a ping" not in caplog.text
