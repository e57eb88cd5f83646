"""The client library (server.client) against a real server on loopback: a whole game in JSON
and in msgpack, requests answered or refused by ref, a reconnect in the middle of a game
that catches up with ``sync``; events lost on the way filled by a ``sync`` (never handed on
past a gap); a node restart (close 1012) and a node that stops, survived by reconnecting to
another node of the same Redis; and, against a scripted fake node, a refused ``sync`` sent
again, ``send`` on a reset socket, and the list of node URLs."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import WSMsgType, web
from server_helpers import RunningServer, StartServer, scripted

from server.app import BUS
from server.client import (
    Client,
    ClientError,
    ConnectionLost,
    Format,
    RequestFailed,
    RequestTimeout,
    TableEvent,
    TableView,
    Welcome,
    default_decision,
    register,
)
from server.client.wire import TABLE_EVENTS
from server.tick import TICK

ADDRESSES = iter(f"10.77.{n // 250}.{n % 250 + 1}" for n in range(10_000))


async def two_clients(url: str, fmt: Format, **options: Any) -> tuple[Client, Client]:
    alice = await Client.connect(url, guest=True, fmt=fmt,
                                 headers={"X-Forwarded-For": next(ADDRESSES)}, **options)
    bob = await Client.connect(url, guest=True, fmt=fmt,
                               headers={"X-Forwarded-For": next(ADDRESSES)}, **options)
    return alice, bob


async def act_until(clients: list[Client], table: str, *, stop: str = "game_over",
                    max_events: int = 4000) -> dict[str, Any]:
    """Both clients answer every decision awaited from them (default decisions) until
    ``stop``; returns the ``stop`` event as the first client saw it."""
    acted: dict[int, int] = {}
    final: dict[str, Any] | None = None

    async def drive(client: Client, index: int) -> None:
        nonlocal final
        current = client.state(table)
        if current is not None and client.my_turn(table):  # a decision awaited already
            acted[index] = client.tables[table].v
            await client.send({**default_decision(current["game"]), "table": table})
        for _ in range(max_events):
            event = await client.next_event(10.0)
            if not isinstance(event, TableEvent) or event.table != table:
                continue
            if event.type == stop:
                if index == 0:
                    final = event.raw
                return
            state = event.raw.get("state") if event.type != "sync" else client.state(table)
            if not isinstance(state, dict) or state.get("status") != "playing":
                continue
            game = state["game"]
            if game["to_act"] == client.side(table) and acted.get(index, -1) < event.v:
                acted[index] = event.v
                await client.send({**default_decision(game), "table": table})
        raise AssertionError(f"no {stop}")

    await asyncio.gather(*(drive(c, i) for i, c in enumerate(clients)))
    assert final is not None
    return final


@pytest.mark.parametrize("fmt", [Format.JSON, Format.MSGPACK])
async def test_a_whole_game_through_the_library(start_server: StartServer, fmt: Format) -> None:
    server = await start_server(dice_factory=scripted(11))
    alice, bob = await two_clients(server.ws_url, fmt)
    assert isinstance(alice.welcome, Welcome) and alice.welcome.is_guest
    assert alice.welcome.raw["format"] == str(fmt)
    table = await alice.create_table("private")
    ack = await bob.join(table)
    assert ack["type"] == "ack"
    start = await alice.wait_for("game_start", table=table)
    assert isinstance(start, TableEvent) and start.state is not None
    assert start.state.rating is not None and start.state.rating["unrated_reason"] == \
        "private_room"
    over = await act_until([alice, bob], table)
    assert over["type"] == "game_over" and over["reason"] == "normal"
    assert alice.tables[table].v == bob.tables[table].v == over["v"]
    await alice.close()
    await bob.close()


async def test_requests_are_answered_by_ref_or_refused(start_server: StartServer) -> None:
    server = await start_server()
    token = await register(server.ws_url, "libuser", "correct horse")
    client = await Client.connect(server.ws_url, token, fmt="msgpack")
    assert client.player == "libuser"
    pong = await client.request({"type": "ping"})
    assert pong["type"] == "pong"
    with pytest.raises(RequestFailed) as info:
        await client.join("no-such-table")
    assert info.value.code == "no_such_table"
    with pytest.raises(RequestFailed) as bad:
        await client.request({"type": "play_computer", "level": "grandmaster"})
    assert bad.value.code == "bad_field" and bad.value.error.field == "level"
    with pytest.raises(ClientError, match="HTTP 401"):
        await Client.connect(server.ws_url, "not-a-token")
    await client.close()
    with pytest.raises(ConnectionLost):  # after the events received before the close
        for _ in range(20):
            await client.next_event(1.0)


async def test_a_reconnect_in_the_middle_of_a_game_syncs_what_was_missed(
    start_server: StartServer,
) -> None:
    server = await start_server(dice_factory=scripted(5))
    alice, bob = await two_clients(server.ws_url, Format.JSON)
    table = await alice.create_table("private")
    await bob.join(table)
    await alice.wait_for("game_start", table=table)
    await bob.wait_for("game_start", table=table)
    # A few decisions, then Alice's socket drops while Bob keeps playing.
    seen: list[int] = []
    for _ in range(6):
        for client in (alice, bob):
            if client.my_turn(table):
                game = client.state(table)["game"]  # type: ignore[index]
                await client.request({**default_decision(game), "table": table})
        await asyncio.sleep(0.05)
    before = alice.tables[table].v
    assert alice.ws is not None
    await alice.ws.close()  # not Client.close(): the library reconnects by itself
    if bob.my_turn(table):  # while Alice is away
        game = bob.state(table)["game"]  # type: ignore[index]
        await bob.request({**default_decision(game), "table": table})
    for _ in range(200):
        if alice.reconnects and alice.welcome is not None and not alice.is_closed:
            break
        await asyncio.sleep(0.02)
    assert alice.reconnects == 1
    # Catch up: every event after ``before`` arrives, in order, without gaps or repeats.
    await bob.sync(table)
    for _ in range(200):
        if alice.tables[table].v >= bob.tables[table].v:
            break
        await asyncio.sleep(0.02)
    while True:
        try:
            event = await alice.next_event(0.2)
        except TimeoutError:
            break
        if isinstance(event, TableEvent) and event.table == table and \
                event.type not in ("sync", "resume", "watching"):
            seen.append(event.v)
    assert seen == list(range(seen[0], seen[-1] + 1)), seen  # in order, no gap, no repeat
    assert seen[-1] == alice.tables[table].v == bob.tables[table].v
    assert before in seen or seen[0] <= before + 1
    # And the game goes on to its end.
    over = await act_until([alice, bob], table)
    assert over["type"] == "game_over"
    await alice.close()
    await bob.close()


async def test_a_request_nobody_answers_times_out() -> None:
    # A server that welcomes and then never answers (a stuck node): the request raises
    # RequestTimeout after ``request_timeout``, and its pending entry is gone.
    async def silent(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_json({"type": "welcome", "player": "quiet", "name": "quiet",
                            "guest": True, "bot": False, "limits": {}})
        async for message in ws:
            if message.type is not WSMsgType.TEXT:
                break
        return ws

    app = web.Application()
    app.router.add_get("/ws", silent)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        client = await Client.connect(f"ws://127.0.0.1:{port}/ws", "any-token",
                                      request_timeout=0.2, auto_reconnect=False)
        with pytest.raises(RequestTimeout):
            await client.request({"type": "ping"})
        with pytest.raises(RequestTimeout):
            await client.request({"type": "ping"}, timeout=0.05)
        assert client.requests.waiting == 0
        await client.close()
    finally:
        await runner.cleanup()


# --- no gap, no repeat: catching up, node restarts and takeovers (PROTOCOL.md §5, §15) --------


class Recorder(Client):
    """A library client that records the versions it hands on, per table (``delivered``)."""

    def __init__(self, url: str, **options: Any) -> None:
        super().__init__(url, **options)
        self.delivered: dict[str, list[int]] = {}
        self.lose: set[tuple[str, int]] = set()  # (table, v) frames lost on the way

    def _handle(self, message: dict[str, Any]) -> None:
        if (message.get("table"), message.get("v")) in self.lose and \
                message.get("type") in TABLE_EVENTS:
            self.lose.discard((message["table"], message["v"]))
            return  # as if the server (or a node that died) never sent it
        super()._handle(message)

    def _deliver(self, view: TableView, message: dict[str, Any]) -> None:
        v = message.get("v")
        if isinstance(v, int) and v > view.v:
            self.delivered.setdefault(view.table, []).append(v)
        super()._deliver(view, message)

    def contiguous(self, table: str) -> bool:
        seen = self.delivered.get(table, [])
        return bool(seen) and seen == list(range(seen[0], seen[0] + len(seen)))


async def recorder(url: str, name: str, **options: Any) -> Recorder:
    token = await register(url, name, "correct horse")
    client = Recorder(url, token=token, fmt=Format.MSGPACK, queue_events=False,
                      keep_messages=True, headers={"X-Forwarded-For": next(ADDRESSES)},
                      **options)
    await client._open(wait_welcome=True)
    return client


def over(clients: list[Recorder], table: str) -> bool:
    return all(any(m.get("type") == "game_over" and m.get("table") == table
                   for m in c.messages) for c in clients)


async def play_through(clients: list[Recorder], table: str, *, decisions: int = 10_000,
                       timeout: float = 30.0) -> None:
    """Make the decisions the table awaits (as the most advanced view shows them), each
    through the deciding player's client, until the game ends (or ``decisions`` were made).
    Refusals a stale view or a table changing hands explain are tried again; a lost socket
    waits for the library's reconnect."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    made = 0
    while made < decisions and not over(clients, table):
        assert loop.time() < deadline, "the game did not go on"
        ahead = max(clients, key=lambda c: c.tables[table].v if table in c.tables else -1)
        state = ahead.state(table)
        game = None if state is None else state.get("game")
        if state is None or state.get("status") != "playing" or not game \
                or game.get("to_act") is None:
            await asyncio.sleep(0.01)
            continue
        actor = next(c for c in clients if c.side(table) == game["to_act"])
        try:
            await actor.request({**default_decision(game), "table": table})
            made += 1
        except RequestFailed as exc:
            assert exc.code in ("unavailable", "not_your_turn", "wrong_phase", "game_over"), exc
            await asyncio.sleep(0.05)
        except (ConnectionLost, RequestTimeout):
            await actor.wait_connected(timeout)


async def test_events_after_a_gap_wait_for_the_sync_that_fills_it(
    start_server: StartServer,
) -> None:
    """Events lost on the way (as when a node dies): the next event is ahead, the library
    syncs and hands everything on in order, once; a ``resume`` ahead does the same."""
    server = await start_server(dice_factory=scripted(5))
    alice = await recorder(server.ws_url, "gapalice")
    bob = await recorder(server.ws_url, "gapbob")
    table = await alice.create_table("private")
    await bob.join(table)
    await play_through([alice, bob], table, decisions=3)
    v = alice.tables[table].v
    alice.lose |= {(table, v + 1), (table, v + 2)}
    await play_through([alice, bob], table, decisions=4)
    for _ in range(200):  # the sync answers: alice is level with bob
        if alice.tables[table].v >= bob.tables[table].v:
            break
        await asyncio.sleep(0.02)
    assert alice.contiguous(table), alice.delivered[table]
    assert [m for m in alice.messages if m.get("type") == "sync"]
    # The last events lost: nothing comes after them until alice asks again; joining her
    # own table brings a resume ahead of her view, and a sync.
    v = bob.tables[table].v
    syncs = len([m for m in alice.messages if m.get("type") == "sync"])
    alice.lose |= {(table, v + 1), (table, v + 2)}
    before = alice.tables[table].v
    await play_through([alice, bob], table, decisions=2)
    await asyncio.sleep(0.1)
    assert alice.tables[table].v == before  # nothing handed on past the gap
    resume = await alice.request({"type": "join", "table": table})
    assert resume["type"] in ("resume", "ack")
    for _ in range(200):
        if alice.tables[table].v >= bob.tables[table].v > before:
            break
        await asyncio.sleep(0.02)
    assert alice.tables[table].v == bob.tables[table].v
    assert len([m for m in alice.messages if m.get("type") == "sync"]) > syncs
    await play_through([alice, bob], table)
    assert alice.contiguous(table) and bob.contiguous(table)
    await alice.close()
    await bob.close()


async def test_a_node_restart_moves_the_client_to_another_node(start_nodes: Any) -> None:
    """Close 1012 (the node drains): the library reconnects to the next of its ``urls`` at
    once, syncs, and the game goes on with every version handed on once."""
    one, two = await start_nodes(2, dice_factory=scripted(7))
    alice = await recorder(one.ws_url, "movealice", urls=[two.ws_url])
    bob = await recorder(two.ws_url, "movebob")
    table = await alice.create_table("private")  # owned by n1
    await bob.join(table)
    await play_through([alice, bob], table, decisions=6)
    await one.stop()  # drain: tables go to n2, sockets closed 1012
    await alice.wait_connected(10.0)
    assert alice.url == two.ws_url and alice.reconnects == 1
    await play_through([alice, bob], table)
    assert alice.contiguous(table) and bob.contiguous(table), (alice.delivered, bob.delivered)
    assert alice.tables[table].v == bob.tables[table].v
    await alice.close()
    await bob.close()


def freeze(server: RunningServer) -> None:
    """As if the node's process stopped: no lease renewal, nothing said or heard on the bus
    (tests/server/test_ownership.py)."""
    server.app[TICK].halt()  # every periodic duty: heartbeat, scan, matchmaking...
    for task in server.app[BUS]._tasks:
        task.cancel()


async def test_a_sync_refused_while_the_table_changes_hands_is_sent_again(
    start_nodes: Any,
) -> None:
    """The owner stops; the player's socket to it drops; the library reconnects where
    ``choose_url`` says, its ``sync`` is answered ``unavailable`` until the other node has
    taken the table over, and it is sent again until it is answered: no version skipped."""
    one, two = await start_nodes(2, dice_factory=scripted(9))
    alice = await recorder(one.ws_url, "stopalice", choose_url=lambda c: two.ws_url)
    bob = await recorder(two.ws_url, "stopbob")
    table = await alice.create_table("private")
    await bob.join(table)
    await play_through([alice, bob], table, decisions=5)
    freeze(one)
    assert alice.ws is not None
    alice.ws.transport.abort()  # the node is gone: no closing handshake
    for _ in range(250):
        if alice.reconnects:
            break
        await asyncio.sleep(0.02)
    assert alice.url == two.ws_url
    await play_through([alice, bob], table)
    refused = [m for m in alice.messages if m.get("type") == "error"
               and m.get("code") == "unavailable" and m.get("table") == table]
    assert refused, "the sync was never refused: the takeover came first"
    assert alice.contiguous(table) and bob.contiguous(table), (alice.delivered, bob.delivered)
    await alice.close()
    await bob.close()


# --- the same against a scripted fake server, to the frame ------------------------------------


class FakeNode:
    """A WebSocket endpoint that welcomes, then runs ``script(ws, inbox)``."""

    def __init__(self, script: Callable[[web.WebSocketResponse, asyncio.Queue[Any]],
                                        Awaitable[None]]) -> None:
        self.script = script
        self.runner: web.AppRunner | None = None
        self.port = 0

    async def handler(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_json({"type": "welcome", "player": "p", "name": "p", "guest": True,
                            "bot": False, "limits": {}})
        inbox: asyncio.Queue[Any] = asyncio.Queue()

        async def read() -> None:
            async for message in ws:
                if message.type is WSMsgType.TEXT:
                    inbox.put_nowait(json.loads(message.data))

        reader = asyncio.create_task(read())
        try:
            await self.script(ws, inbox)
            await reader
        finally:
            reader.cancel()
        return ws

    async def __aenter__(self) -> FakeNode:
        app = web.Application()
        app.router.add_get("/ws", self.handler)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        self.port = self.runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.runner is not None
        await self.runner.cleanup()

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"


def event(v: int) -> dict[str, Any]:
    return {"type": "player_reconnected", "table": "T", "v": v, "side": 0, "player": "p"}


async def test_a_gap_is_never_handed_on_and_a_refused_sync_is_retried() -> None:
    syncs: list[int] = []

    async def script(ws: web.WebSocketResponse, inbox: asyncio.Queue[Any]) -> None:
        for v in (1, 2, 3):
            await ws.send_json(event(v))
        await ws.send_json(event(6))  # 4 and 5 lost: a gap
        ask = await asyncio.wait_for(inbox.get(), 5)
        assert ask["type"] == "sync" and ask["since"] == 3, ask
        syncs.append(ask["since"])
        await ws.send_json(event(7))  # live, while the sync is on its way: held
        await ws.send_json({"type": "error", "ref": ask["id"], "table": "T",
                            "code": "unavailable", "message": "changing hands",
                            "retry_after": 0.05})
        ask = await asyncio.wait_for(inbox.get(), 5)
        syncs.append(ask["since"])
        await ws.send_json({"type": "sync", "ref": ask["id"], "table": "T", "since": 3,
                            "v": 6, "complete": True,
                            "events": [event(4), event(5), event(6)], "state": {}})
        # Then a gap the server cannot fill: the events past it are dropped, not handed on.
        await ws.send_json(event(10))
        ask = await asyncio.wait_for(inbox.get(), 5)
        await ws.send_json({"type": "error", "ref": ask["id"], "table": "T",
                            "code": "no_such_table", "message": "gone"})
        await asyncio.sleep(0.1)  # (an event before the client gave up is dropped too)
        await ws.send_json(event(11))  # a gap again: asks again, and this time it is filled
        ask = await asyncio.wait_for(inbox.get(), 5)
        assert ask["since"] == 7
        await ws.send_json({"type": "sync", "ref": ask["id"], "table": "T", "since": 7,
                            "v": 11, "complete": True,
                            "events": [event(v) for v in range(8, 12)], "state": {}})

    async with FakeNode(script) as node:
        client = Recorder(node.url, token="t", auto_reconnect=False, queue_events=False)
        await client._open(wait_welcome=True)
        for _ in range(250):
            if client.tables.get("T") and client.tables["T"].v == 11:
                break
            await asyncio.sleep(0.02)
        assert client.delivered["T"] == list(range(1, 12)), client.delivered
        assert syncs == [3, 3]
        await client.close()


async def test_send_on_a_reset_socket_raises_connection_lost() -> None:
    async def script(ws: web.WebSocketResponse, inbox: asyncio.Queue[Any]) -> None:
        pass  # welcome, then read until the client goes

    async with FakeNode(script) as node:
        client = await Client.connect(node.url, "t", auto_reconnect=False)

        async def reset(data: Any) -> None:
            raise ConnectionResetError("Connection reset by peer")

        assert client.ws is not None
        client.ws.send = reset  # type: ignore[method-assign,assignment]
        with pytest.raises(ConnectionLost):
            await client.send({"type": "ping"})
        with pytest.raises(ConnectionLost):
            await client.request({"type": "ping"})
        await client.close()


async def test_connect_and_reconnect_go_to_the_next_url() -> None:
    """A node that does not answer is skipped; a close 1012 moves to the next URL at once."""
    opened: list[int] = []

    async def script(ws: web.WebSocketResponse, inbox: asyncio.Queue[Any]) -> None:
        opened.append(1)
        if len(opened) == 1:
            await ws.close(code=1012, message=b"service restart")

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"ws://127.0.0.1:{sock.getsockname()[1]}/ws"  # bound, not listening
        async with FakeNode(script) as first, FakeNode(script) as second:
            client = await Client.connect(dead, "t", urls=[first.url, second.url])
            assert client.url == first.url
            await client.wait_connected(5.0)
            for _ in range(250):
                if client.reconnects:
                    break
                await asyncio.sleep(0.02)
            await client.wait_connected(5.0)
            assert client.url == second.url and client.reconnects == 1
            assert client.connected
            await client.close()
            with pytest.raises(ConnectionLost):
                await client.wait_connected(1.0)


async def test_a_bot_plays_on_through_a_node_restart(start_nodes: Any) -> None:
    """The CLI bot's client (``auto_reconnect``, two node URLs): its node drains in the
    middle of a game; the bot reconnects to the other node and finishes the game."""
    from server.bot.player import BotPlayer

    one, two = await start_nodes(2, dice_factory=scripted(3))
    bot_client = await Client.connect(one.ws_url, guest=True, fmt="msgpack",
                                      urls=[two.ws_url],
                                      headers={"X-Forwarded-For": next(ADDRESSES)})
    human = await recorder(two.ws_url, "botfriend")
    table = await bot_client.create_table("private")  # owned by n1
    await human.join(table)
    bot = asyncio.create_task(BotPlayer(bot_client, "basic", seed=1).play_table(table))

    async def play_human(decisions: int) -> None:
        made = 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30.0
        while made < decisions and not over([human], table):
            assert loop.time() < deadline and not bot.done(), "the game did not go on"
            if not human.my_turn(table):
                await asyncio.sleep(0.01)
                continue
            game = human.state(table)["game"]  # type: ignore[index]
            try:
                await human.request({**default_decision(game), "table": table})
                made += 1
            except RequestFailed as exc:
                assert exc.code in ("unavailable", "not_your_turn", "wrong_phase"), exc
                await asyncio.sleep(0.05)

    await play_human(4)
    await one.stop()  # drain: the table goes to n2, the bot's socket is closed 1012
    await play_human(10_000)
    record = await asyncio.wait_for(bot, 30.0)
    assert record.final is not None and record.final["type"] == "game_over", record
    assert bot_client.url == two.ws_url and bot_client.reconnects == 1
    assert human.contiguous(table), human.delivered
    await bot_client.close()
    await human.close()
