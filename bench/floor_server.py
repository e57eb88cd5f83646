"""The floor: a minimal but correct move server, the yardstick for the node's CPU per move.

``bench/load.py --target floor`` plays its bots against this instead of ``python -m server``.
It speaks the part of the protocol the bots use (bearer-token sockets in msgpack with the
change-only events, ``create_table``, ``join``, ``roll``, ``play``) and per move does what a
correct node cannot skip:

- decode the frame with msgspec into a typed command;
- check and apply it with the rules (``server.rules.Game``, the compiled build when built);
- encode one event (msgspec) carrying the game's changes;
- store it before announcing it: group-committed (the events of one pass of the event loop
  go in one write; every event queued while a commit is in flight goes in the next one)
  through the node's own fenced-append script (``fenced_append.lua``: epoch check, version
  check, RPUSH, expiry, trim), one ``EVALSHA`` per table;
- once stored, send it to both players (each socket's frames of a commit in one write);
- one alive key per node refreshed every 5 s, WebSocket heartbeats as the node's (one sweep
  every 5 s pings the sockets silent for 20 s and drops those silent 10 s after their ping:
  ``server/net/heartbeat.py``), and a ``pong`` to the clients' ``ping`` (their silence watch
  reconnects without it).

Nothing else: no accounts (a token is the player's name), clocks, ratings, watchers, sync or
failover. The tight parts are the ones any lean server would write: Redis through one socket
of its own (RESP packed by hand, replies parsed by hiredis, callbacks instead of tasks) and
WebSocket frames written to the transport (as the node's ``Connection`` does); aiohttp serves
HTTP, the upgrade and the reading of frames, as for the node.

    python3 bench/floor_server.py --port 8091 --redis-url redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import itertools
import secrets
import signal
import sys
from collections import deque
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlparse

import hiredis
import msgspec
from aiohttp import WSMsgType, web

from server.net.event_loop import run
from server.protocol.codec import WireFormat, wire_frame
from server.rules import Game, RulesError, Side
from server.store.scripts import load_script

HEARTBEAT = 20.0
PING_FRAME = b"\x89\x00"
MAX_MSG_SIZE = 16 * 1024
TTL_MS = b"%d" % (7 * 24 * 3600 * 1000)
LOG_MAX = b"4000"
FENCED_APPEND = load_script("fenced_append.lua").encode()
FENCED_SHA = hashlib.sha1(FENCED_APPEND).hexdigest().encode()


def resp(*args: bytes) -> bytes:
    """One Redis command in RESP."""
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%b\r\n" % (len(a), a) for a in args)


class RedisLink(asyncio.Protocol):
    """One Redis socket: commands written in batches, each batch's replies handed to its
    callback once all arrived (Redis answers in order)."""

    def __init__(self) -> None:
        self.reader = hiredis.Reader()
        self.waiting: deque[tuple[int, list[Any], Callable[[list[Any]], None]]] = deque()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport) or hasattr(transport, "write")
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        raise SystemExit(f"the floor lost Redis: {exc}")  # a bench: stop, never announce

    def send(self, data: bytes, count: int, done: Callable[[list[Any]], None]) -> None:
        self.waiting.append((count, [], done))
        assert self.transport is not None
        self.transport.write(data)

    def data_received(self, data: bytes) -> None:
        reader, waiting = self.reader, self.waiting
        reader.feed(data)
        while (reply := reader.gets()) is not False:
            count, replies, done = waiting[0]
            replies.append(reply)
            if len(replies) == count:
                waiting.popleft()
                done(replies)

    async def call(self, *args: bytes) -> Any:
        """One command, awaited (off the move path: table creation, the alive key)."""
        future: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        self.send(resp(*args), 1, future.set_result)
        (reply,) = await future
        if isinstance(reply, hiredis.ReplyError):
            raise reply
        return reply


class Player:
    __slots__ = ("heard_at", "name", "pinged_at", "transport", "ws")

    def __init__(self, name: str, ws: web.WebSocketResponse, transport: Any,
                 now: float) -> None:
        self.name = name
        self.ws = ws
        self.transport = transport
        self.heard_at = now
        self.pinged_at: float | None = None

    def write(self, data: bytes) -> None:
        transport = self.transport
        if not transport.is_closing():
            transport.write(data)


class Table:
    __slots__ = ("game", "head", "id", "players", "v")

    def __init__(self, table_id: str, first: Player, epoch: bytes, prefix: str) -> None:
        self.id = table_id
        self.players: list[Player] = [first]
        self.game: Game | None = None
        self.v = 0
        tag = f"{prefix}{{t:{table_id}}}".encode()
        # The fixed part of the table's EVALSHA (script, keys, epoch, TTL, cap, no snapshot),
        # packed once; the first version and the events follow.
        self.head = b"".join(b"$%d\r\n%b\r\n" % (len(a), a) for a in (
            b"EVALSHA", FENCED_SHA, b"3", tag + b":lease", tag + b":events", tag + b":snap",
            epoch, TTL_MS, LOG_MAX, b""))


class Command(msgspec.Struct, forbid_unknown_fields=False):
    type: str
    table: str | None = None
    play: str | list[list[int]] | None = None
    id: Any = None


def game_view(game: Game) -> dict[str, Any]:
    """What a client needs of the game after a step (the floor's whole ``game``)."""
    to_act, dice, phase = game.to_act, game.dice, str(game.phase)
    return {"phase": phase, "to_act": None if to_act is None else int(to_act),
            "dice": None if dice is None else list(dice),
            "legal_plays": game.legal_play_texts if phase == "move" else []}


def frame(payload: bytes) -> bytes:
    return wire_frame(payload, WireFormat.MSGPACK)


class Floor:
    def __init__(self, redis: RedisLink, prefix: str, node: str) -> None:
        self.redis = redis
        self.prefix = prefix
        self.node = node
        self.epoch = b"1"
        self.tables: dict[str, Table] = {}
        self.decode = msgspec.msgpack.Decoder(Command).decode
        self.encode = msgspec.msgpack.Encoder().encode
        self.queue: list[tuple[Table, int, bytes, bytes]] = []
        self.committing = False
        self.ids = itertools.count(1)
        self.pong = frame(self.encode({"type": "pong"}))
        self.players: set[Player] = set()

    # -- the store: group commit, then the sends --------------------------------------------

    def publish(self, table: Table, event: dict[str, Any]) -> None:
        table.v += 1
        event["v"] = table.v
        payload = self.encode(event)
        self.queue.append((table, table.v, payload, frame(payload)))
        if not self.committing:
            self.committing = True
            asyncio.get_running_loop().call_soon(self.commit)

    def commit(self) -> None:
        """Write every queued event, one EVALSHA per table; the sends once stored."""
        batch, self.queue = self.queue, []
        by_table: dict[Table, tuple[int, list[bytes], list[bytes]]] = {}
        for table, v, payload, data in batch:
            entry = by_table.get(table)
            if entry is None:
                by_table[table] = (v, [payload], [data])
            else:
                entry[1].append(payload)
                entry[2].append(data)
        parts: list[bytes] = []
        for table, (first, payloads, _frames) in by_table.items():
            first_arg = b"%d" % first
            parts.append(b"*%d\r\n" % (11 + len(payloads)))
            parts.append(table.head)
            parts.append(b"$%d\r\n%b\r\n" % (len(first_arg), first_arg))
            for payload in payloads:
                parts.append(b"$%d\r\n%b\r\n" % (len(payload), payload))
        self.redis.send(b"".join(parts), len(by_table),
                        lambda replies: self.stored(by_table, replies))

    def stored(self, by_table: dict[Table, tuple[int, list[bytes], list[bytes]]],
               replies: list[Any]) -> None:
        out: dict[Player, list[bytes]] = {}
        for (table, (_first, _payloads, frames)), length in zip(by_table.items(), replies,
                                                                 strict=True):
            if not isinstance(length, int) or length == -1:
                continue  # fenced out (or refused): nothing is announced
            for player in table.players:
                got = out.get(player)
                if got is None:
                    out[player] = list(frames)
                else:
                    got.extend(frames)
        for player, frames in out.items():
            player.write(frames[0] if len(frames) == 1 else b"".join(frames))
        if self.queue:
            self.commit()
        else:
            self.committing = False

    # -- commands ---------------------------------------------------------------------------

    def on_command(self, player: Player, cmd: Command) -> None:
        kind = cmd.type
        if kind == "ping":  # the clients' silence watch (PROTOCOL.md): no pong, reconnect
            player.write(self.pong if cmd.id is None else
                         frame(self.encode({"type": "pong", "ref": cmd.id})))
            return
        if kind == "create_table":
            asyncio.get_running_loop().create_task(self.create_table(player, cmd.id))
            return
        table = self.tables.get(cmd.table or "")
        if table is None:
            self.error(player, "no_such_table", cmd.table)
            return
        players = table.players
        if kind == "join" and table.game is None and len(players) == 1:
            players.append(player)
            table.game = started = Game()
            started.start()
            self.publish(table, {"type": "game_start", "table": table.id,
                                 "game_id": f"{table.id}-1",
                                 "state": {"status": "playing", "game": game_view(started)}})
            return
        game = table.game
        if game is None or player not in players:
            self.error(player, "not_seated", table.id)
            return
        side = Side.ZERO if players[0] is player else Side.ONE
        try:
            if kind == "roll":
                game.roll(side)
                event = "rolled"
            elif kind == "play" and cmd.play is not None:
                game.play(side, cmd.play)
                event = "moved"
            else:
                self.error(player, "bad_message", table.id)
                return
        except RulesError as exc:
            self.error(player, exc.code, table.id)
            return
        self.publish(table, {"type": event, "table": table.id, "side": int(side),
                             "changes": {"game": game_view(game)}})
        if game.is_over:
            del self.tables[table.id]
            self.publish(table, {"type": "game_over", "table": table.id,
                                 "rating": {"rated": False}})

    async def create_table(self, player: Player, ref: Any) -> None:
        table = Table(secrets.token_urlsafe(9), player, self.epoch, self.prefix)
        lease = f"{self.prefix}{{t:{table.id}}}:lease".encode()
        await self.redis.call(b"HSET", lease, b"epoch", self.epoch, b"node", self.node.encode())
        self.tables[table.id] = table
        player.write(frame(self.encode({"type": "table_created", "table": table.id,
                                        "ref": ref})))

    def error(self, player: Player, code: str, table: str | None) -> None:
        player.write(frame(self.encode({"type": "error", "code": code, "table": table})))

    # -- HTTP and sockets -------------------------------------------------------------------

    async def token(self, request: web.Request) -> web.Response:
        body = await request.json() if request.can_read_body else {}
        name = str((body or {}).get("name") or f"guest{next(self.ids)}")
        return web.json_response({"token": name})

    async def socket(self, request: web.Request) -> web.WebSocketResponse:
        name = request.headers.get("Authorization", "").removeprefix("Bearer ")
        ws = web.WebSocketResponse(max_msg_size=MAX_MSG_SIZE, compress=False, autoping=False)
        await ws.prepare(request)
        loop = asyncio.get_running_loop()
        player = Player(name, ws, request.transport, loop.time())
        self.players.add(player)
        player.write(frame(self.encode(
            {"type": "welcome", "player": name, "name": name, "guest": False,
             "bot": False, "limits": {}, "node": self.node, "protocol": 2})))
        decode, on_command, receive = self.decode, self.on_command, ws.receive
        while True:
            msg = await receive()
            player.heard_at = loop.time()
            if msg.type is not WSMsgType.BINARY:
                if msg.type is WSMsgType.PING:
                    player.write(b"\x8a" + bytes((len(msg.data),)) + msg.data)
                    continue
                if msg.type is WSMsgType.PONG:
                    continue
                break
            try:
                cmd = decode(msg.data)
            except msgspec.DecodeError:
                self.error(player, "bad_message", None)
                continue
            on_command(player, cmd)
        self.players.discard(player)
        return ws

    def sweep(self) -> None:
        """The heartbeat: ping the sockets silent for HEARTBEAT, drop those that did not
        answer within HEARTBEAT / 2 (the node's ``SocketHeartbeat``)."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        for player in list(self.players):
            if player.pinged_at is not None:
                if player.heard_at >= player.pinged_at:
                    player.pinged_at = None
                elif player.pinged_at <= now - HEARTBEAT / 2:
                    player.transport.abort()
                    continue
                else:
                    continue
            if player.heard_at <= now - HEARTBEAT and not player.transport.is_closing():
                player.transport.write(PING_FRAME)
                player.pinged_at = now
        loop.call_later(HEARTBEAT / 4, self.sweep)

    async def alive(self) -> None:
        key = f"{self.prefix}node:{self.node}:alive".encode()
        while True:
            await self.redis.call(b"SET", key, b"1", b"EX", b"15")
            await asyncio.sleep(5.0)


async def serve(host: str, port: int, redis_url: str, prefix: str) -> None:
    url = urlparse(redis_url)
    loop = asyncio.get_running_loop()
    if url.scheme == "unix":
        _, link = await loop.create_unix_connection(RedisLink, url.path)
        db = parse_qs(url.query).get("db", ["0"])[0]
    else:
        _, link = await loop.create_connection(RedisLink, url.hostname or "127.0.0.1",
                                               url.port or 6379)
        db = (url.path or "/0").lstrip("/") or "0"
    await link.call(b"SELECT", db.encode())
    await link.call(b"SCRIPT", b"LOAD", FENCED_APPEND)
    floor = Floor(link, prefix, "floor" + secrets.token_hex(3))
    app = web.Application()
    app.router.add_get("/ws", floor.socket)
    app.router.add_post("/api/register", floor.token)
    app.router.add_post("/api/guest", floor.token)
    app.router.add_get("/healthz", lambda _r: _ok())
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, host, port, backlog=1024)
    await site.start()
    alive = asyncio.create_task(floor.alive())
    loop.call_later(HEARTBEAT / 4, floor.sweep)
    gc.collect()
    gc.freeze()  # as the node does once up: collections walk only what games create
    print("ready", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    alive.cancel()
    await runner.cleanup()


async def _ok() -> web.Response:
    return web.json_response({"status": "ok"})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8091)
    parser.add_argument("--redis-url", required=True)
    parser.add_argument("--key-prefix", default="floor:")
    parser.add_argument("--uvloop", type=int, choices=(0, 1), default=1,
                        help="1: uvloop's event loop when installed, as the node's default")
    args = parser.parse_args(argv)
    run(serve(args.host, args.port, args.redis_url, args.key_prefix),
        use_uvloop=bool(args.uvloop))
    return 0


if __name__ == "__main__":
    sys.exit(main())
