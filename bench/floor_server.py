"""The floor: a minimal but correct move server, the yardstick for the node's CPU per move.

``bench/load.py --target floor`` plays its bots against this instead of ``python -m server``.
It speaks the part of the protocol the bots use (bearer-token sockets in msgpack with the
change-only events, ``create_table``, ``join``, ``roll``, ``play``) and per move does what a
correct node cannot skip:

- decode the frame with msgspec into a typed command;
- check and apply it with the rules (``server.rules.Game``, the compiled build when built);
- encode one event (msgspec) carrying the game's changes;
- store it before announcing it: group-committed (every event queued while a commit is in
  flight goes in the next one, one pipeline) through the node's own fenced-append script
  (``server/store/lua/fenced_append.lua``: epoch check, version check, RPUSH, expiry, trim);
- once stored, send it to both players;
- one alive key per node refreshed every 5 s, WebSocket heartbeats as the node's.

No accounts (a token is the player's name), no clocks, ratings, watchers, sync or failover.

    python3 bench/floor_server.py --port 8091 --redis-url redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import secrets
import signal
import sys
from importlib import resources
from typing import Any

import msgspec
import redis.asyncio as aioredis
from aiohttp import WSMsgType, web

from server.net.event_loop import run
from server.rules import Game, RulesError, Side

HEARTBEAT = 20.0
MAX_MSG_SIZE = 16 * 1024
TTL_MS = 7 * 24 * 3600 * 1000
LOG_MAX = 4000
FENCED_APPEND = resources.files("server.store").joinpath("lua/fenced_append.lua").read_text()


class Command(msgspec.Struct, forbid_unknown_fields=False):
    type: str
    table: str | None = None
    play: str | list[list[int]] | None = None
    id: Any = None


class Table:
    __slots__ = ("epoch", "game", "id", "players", "v")

    def __init__(self, table_id: str, first: web.WebSocketResponse) -> None:
        self.id = table_id
        self.players: list[web.WebSocketResponse] = [first]
        self.game: Game | None = None
        self.v = 0
        self.epoch = "1"


def game_view(game: Game) -> dict[str, Any]:
    """What a client needs of the game after a step (the floor's whole ``game``)."""
    to_act = game.to_act
    return {"phase": str(game.phase), "to_act": None if to_act is None else int(to_act),
            "dice": None if game.dice is None else list(game.dice),
            "legal_plays": game.legal_play_texts if str(game.phase) == "move" else []}


class Floor:
    def __init__(self, redis: aioredis.Redis, prefix: str, node: str) -> None:
        self.redis = redis
        self.prefix = prefix
        self.node = node
        self.tables: dict[str, Table] = {}
        self.decoder = msgspec.msgpack.Decoder(Command)
        self.encoder = msgspec.msgpack.Encoder()
        self.script = redis.register_script(FENCED_APPEND)
        self.queue: list[tuple[Table, int, bytes]] = []
        self.committing = False
        self.ids = itertools.count(1)

    # -- the store: group commit, then the sends --------------------------------------------

    def publish(self, table: Table, event: dict[str, Any]) -> None:
        table.v += 1
        event["v"] = table.v
        self.queue.append((table, table.v, self.encoder.encode(event)))
        if not self.committing:
            self.committing = True
            asyncio.get_running_loop().create_task(self.commit())

    async def commit(self) -> None:
        try:
            while self.queue:
                batch, self.queue = self.queue, []
                by_table: dict[str, tuple[Table, int, list[bytes]]] = {}
                for table, v, frame in batch:
                    entry = by_table.setdefault(table.id, (table, v, []))
                    entry[2].append(frame)
                async with self.redis.pipeline(transaction=False) as pipe:
                    for table, first, frames in by_table.values():
                        tag = f"{self.prefix}{{t:{table.id}}}"
                        await self.script(
                            keys=[tag + ":lease", tag + ":events", tag + ":snap"],
                                          args=[table.epoch, TTL_MS, LOG_MAX, "", first,
                                                *frames], client=pipe)
                    stored = await pipe.execute()
                for (table, _first, frames), length in zip(by_table.values(), stored,
                                                           strict=True):
                    if length == -1:
                        continue  # fenced out: nothing is announced
                    for frame in frames:
                        for ws in table.players:
                            await ws.send_bytes(frame)
        finally:
            self.committing = False

    # -- commands ---------------------------------------------------------------------------

    async def on_command(self, ws: web.WebSocketResponse, player: str, cmd: Command) -> None:
        if cmd.type == "create_table":
            table = Table(secrets.token_urlsafe(9), ws)
            self.tables[table.id] = table
            tag = f"{self.prefix}{{t:{table.id}}}"
            await self.redis.hset(  # type: ignore[misc]
                tag + ":lease", mapping={"epoch": table.epoch, "node": self.node})
            await ws.send_bytes(self.encoder.encode(
                {"type": "table_created", "table": table.id, "ref": cmd.id}))
            return
        found = self.tables.get(cmd.table or "")
        if found is None:
            await self.error(ws, "no_such_table", cmd.table)
            return
        table = found
        if cmd.type == "join" and table.game is None and len(table.players) == 1:
            table.players.append(ws)
            table.game = game = Game()
            game.start()
            self.publish(table, {"type": "game_start", "table": table.id,
                                 "game_id": f"{table.id}-1",
                                 "state": {"status": "playing", "game": game_view(game)}})
            return
        if table.game is None or ws not in table.players:
            await self.error(ws, "not_seated", table.id)
            return
        game = table.game
        side = Side(table.players.index(ws))
        try:
            if cmd.type == "roll":
                game.roll(side)
                kind = "rolled"
            elif cmd.type == "play" and cmd.play is not None:
                game.play(side, cmd.play)
                kind = "moved"
            else:
                await self.error(ws, "bad_message", table.id)
                return
        except RulesError as exc:
            await self.error(ws, exc.code, table.id)
            return
        self.publish(table, {"type": kind, "table": table.id, "side": int(side),
                             "changes": {"game": game_view(game)}})
        if game.is_over:
            del self.tables[table.id]
            self.publish(table, {"type": "game_over", "table": table.id,
                                 "rating": {"rated": False}})

    async def error(self, ws: web.WebSocketResponse, code: str, table: str | None) -> None:
        await ws.send_bytes(self.encoder.encode({"type": "error", "code": code,
                                                 "table": table}))

    # -- HTTP and sockets -------------------------------------------------------------------

    async def token(self, request: web.Request) -> web.Response:
        body = await request.json() if request.can_read_body else {}
        name = str((body or {}).get("name") or f"guest{next(self.ids)}")
        return web.json_response({"token": name})

    async def socket(self, request: web.Request) -> web.WebSocketResponse:
        player = request.headers.get("Authorization", "").removeprefix("Bearer ")
        ws = web.WebSocketResponse(heartbeat=HEARTBEAT, max_msg_size=MAX_MSG_SIZE,
                                   compress=False)
        await ws.prepare(request)
        await ws.send_bytes(self.encoder.encode(
            {"type": "welcome", "player": player, "name": player, "guest": False,
             "bot": False, "limits": {}, "node": self.node, "protocol": 2}))
        async for msg in ws:
            if msg.type is not WSMsgType.BINARY:
                break
            try:
                cmd = self.decoder.decode(msg.data)
            except msgspec.DecodeError:
                await self.error(ws, "bad_message", None)
                continue
            await self.on_command(ws, player, cmd)
        return ws

    async def alive(self) -> None:
        while True:
            await self.redis.set(f"{self.prefix}node:{self.node}:alive", "1", ex=15)
            await asyncio.sleep(5.0)


async def serve(host: str, port: int, redis_url: str, prefix: str) -> None:
    redis = aioredis.Redis.from_url(redis_url)
    floor = Floor(redis, prefix, "floor" + secrets.token_hex(3))
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
    print("ready", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    alive.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await alive
    await runner.cleanup()
    await redis.aclose()


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
