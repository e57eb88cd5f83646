"""The server's per-move path in one process, without sockets: CPU per move of our own code.

Run from the repository root (after ``python3 -m pip install -e .``)::

    python3 bench/move_path.py                       # 100 games, 20 000 measured moves
    python3 bench/move_path.py --games 1000 --moves 40000
    py-spy record -f raw -o moves.txt -- python3 bench/move_path.py   # where the time goes

The lobby, tables, persistence (write-behind flusher included) and rating store are the real
ones, on a real Redis (embedded, or ``--redis-url`` under a fresh key prefix that is deleted
afterwards). Each player is a ``Connection`` whose transport keeps what the server writes
instead of sending it; a driver plays the same random Competitive games as ``bench/load.py``
by handing each command's frame to ``Session.receive`` and ``Lobby.on_message``, exactly as
the socket handler does. The figure is the process CPU time spent inside those two calls
(the game's end, settled in the background, is not in it), divided by the moves: what the
server's own code costs per move, with aiohttp, the kernel and the network left out. Since
the table driver announces a move's events only once they are stored (store before announce), the
write-behind flush and the announcements run outside those two calls, so the second figure
printed is the whole process's CPU per measured move (those, the event loop and the driver's
own work included): compare that one across trees with and without store-before-announce.
``bench/load.py`` measures the whole server over real sockets.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import random
import secrets
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


class _Sink(asyncio.WriteTransport):
    """A transport that keeps each written WebSocket frame's payload for its player (one
    write may hold several frames) and counts the writes (each would be one ``send``)."""

    writes = 0

    def __init__(self, inbox: list[bytes]) -> None:
        super().__init__()
        self._inbox = inbox

    def write(self, data: bytes | bytearray | memoryview) -> None:
        _Sink.writes += 1
        frames = bytes(data)
        at = 0
        while at < len(frames):
            size = frames[at + 1] & 0x7F
            start = at + 2
            if size == 126:
                size, start = int.from_bytes(frames[at + 2:at + 4], "big"), at + 4
            elif size == 127:
                size, start = int.from_bytes(frames[at + 2:at + 10], "big"), at + 10
            self._inbox.append(frames[start:start + size])
            at = start + size

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return False

    def abort(self) -> None:
        pass


class _OpenSocket:
    closed = False


@dataclass
class Player:
    side: int
    conn: Any = None
    inbox: list[bytes] = field(default_factory=list)
    state: dict[str, Any] | None = None  # kept from either event form


async def run(args: argparse.Namespace) -> dict[str, float]:
    sys.path.insert(0, str(ROOT))
    import msgspec
    import redis.asyncio as aioredis

    from rating_plugin.store import RatingStore
    from server.client import Format, encode
    from server.cluster.bus import NodeBus
    from server.config import Settings
    from server.embedded_redis import EmbeddedRedis
    from server.lobby.clock import LoopClock
    from server.lobby.lobby import Lobby
    from server.net.connection import Connection, Hub
    from server.net.ws import session_limits
    from server.protocol.codec import WireFormat
    from server.protocol.lean import apply_event
    from server.protocol.session import Accepted, Session
    from server.rules import DiceSource, SecretDice
    from server.store.accounts import Identity
    from server.store.keys import Keys
    from server.store.persistence import Persistence

    embedded = None if args.redis_url else EmbeddedRedis().start()
    url = args.redis_url or (embedded.url if embedded is not None else "")
    prefix = f"bench-moves-{secrets.token_hex(3)}:"
    # ``--redis-check``: under valgrind a Redis health-check ping can outlast its timeout
    # while the loop crawls; the node would then count Redis as down and refuse every move.
    settings = Settings(redis_url=url, key_prefix=prefix, rate_limit=1e6, rate_burst=10**6,
                        decision_time=3600.0, grace_period=3600.0,
                        redis_check_interval=args.redis_check)
    redis = aioredis.Redis.from_url(url)
    keys = Keys(prefix)
    persistence = Persistence(redis, keys, settings)
    hub = Hub(settings.max_send_buffer)
    dice_rng = random.Random(args.seed + 1)

    class SeededDice:
        """Repeatable dice (``--seeded``): the same games, so instruction counts repeat."""

        def roll_die(self) -> int:
            return dice_rng.randint(1, 6)

    dice: type[DiceSource] = SeededDice if args.seeded else SecretDice
    lobby = Lobby(settings, persistence, NodeBus(redis, keys, settings.node_id), hub,
                  RatingStore(redis, prefix), dice, LoopClock())
    # Told what each flush did, as in the app.
    persistence.on_stored = lobby.takeover.table_stored
    persistence.on_fenced = lobby.takeover.table_fenced
    persistence.on_store_lost = lobby.takeover.store_lost
    persistence.start()
    loop = asyncio.get_running_loop()
    limits = session_limits(settings)
    rng = random.Random(args.seed)
    spent = 0.0
    # The driver trusts what the server wrote: msgspec's plain decoder, not the strict codec
    # the client library reads with (its depth and extension checks walk every legal play,
    # and would count as much as the server's own work in a callgrind total).
    decode = msgspec.msgpack.Decoder().decode

    async def send(player: Player, message: dict[str, Any], *, timed: bool) -> None:
        nonlocal spent
        data = encode(message, Format.MSGPACK)
        started = time.process_time()
        outcome = player.conn.session.receive(data, binary=True, now=loop.time())
        assert isinstance(outcome, Accepted), outcome
        assert player.conn.actor is not None
        await lobby.on_message(player.conn.actor, outcome.message)
        if timed:
            spent += time.process_time() - started

    games: list[tuple[Player, Player]] = []
    for g in range(args.games):
        pair = (Player(0), Player(1))
        for player in pair:
            name = f"p{g}x{player.side}"
            session = Session(limits, now=loop.time(), fmt=WireFormat.MSGPACK, player=name,
                              protocol=args.protocol)
            conn = Connection(_OpenSocket(), session,  # type: ignore[arg-type]
                              f"10.{g // 250}.{g % 250}.{player.side + 1}", _Sink(player.inbox))
            conn.authenticated(Identity(name, name, False), settings.node_id)
            hub.reserve_address(conn.address)
            hub.add(conn)
            hub.bind(conn)
            player.conn = conn
        games.append(pair)
    tables: list[str] = [""] * len(games)

    async def new_table(index: int) -> None:
        first, second = games[index]
        replies: list[dict[str, Any]] = []
        started = time.monotonic()
        while True:
            if time.monotonic() - started > args.stall:
                raise RuntimeError(f"no table created for {args.stall:g} s: {replies}")
            # The seats of a game just over are freed a moment after its `rating` events:
            # until then the server refuses with `already_seated`, so ask again.
            await send(first, {"type": "create_table", "mode": "competitive", "id": 1},
                       timed=False)
            replies = []
            while not replies:
                await asyncio.sleep(0.001)
                replies = [m for m in map(decode, first.inbox)
                           if m.get("type") in ("table_created", "error")]
            first.inbox.clear()
            created = [m for m in replies if m["type"] == "table_created"]
            if created:
                break
            await asyncio.sleep(0.01)
        tables[index] = created[0]["table"]
        await send(second, {"type": "join", "table": tables[index]}, timed=False)

    for index in range(len(games)):
        await new_table(index)
    moves = measured = finished = 0
    process_started: float | None = None
    writes_started = 0
    warmup = args.warmup
    last_progress = time.monotonic()
    process_spent = 0.0
    try:
        while measured < args.moves:
            if time.monotonic() - last_progress > args.stall:
                raise RuntimeError(f"no move for {args.stall:g} s after {moves} moves "
                                   "(is Redis refusing? see --redis-check)")
            progressed = False
            for index, pair in enumerate(games):
                for player in pair:
                    if not player.inbox:
                        continue
                    received = [decode(raw) for raw in player.inbox]
                    player.inbox.clear()
                    for message in received:
                        if message.get("type") == "rating" and player.side == 0:
                            finished += 1
                            await asyncio.sleep(0.005)  # the seats are freed just after
                            await new_table(index)
                            progressed = True
                            break
                        if "v" in message:
                            player.state = apply_event(player.state, message)
                        state = player.state
                        if message.get("type") not in ("rolled", "moved", "game_start"):
                            continue
                        if not state or state.get("status") != "playing":
                            continue
                        game = state["game"]
                        if game is None or game["to_act"] != player.side:
                            continue
                        command: dict[str, Any] = {"type": "roll", "table": tables[index]}
                        if game["phase"] == "move":
                            command = {"type": "play", "table": tables[index],
                                       "play": rng.choice(game["legal_plays"])}
                        elif game["phase"] != "roll":
                            continue
                        if args.ref:
                            command["id"] = moves
                        timed = moves >= warmup
                        if timed and process_started is None:
                            process_started = time.process_time()
                            writes_started = _Sink.writes
                        await send(player, command, timed=timed)
                        moves += 1
                        measured += timed
                        progressed = True
                        last_progress = time.monotonic()
            if not progressed:
                await asyncio.sleep(0.001)
        if process_started is not None:
            process_spent = time.process_time() - process_started
        writes = _Sink.writes - writes_started
    finally:
        await lobby.drain(5.0)  # settlements in flight finish before the keys are deleted
        await persistence.stop()
        keys_left = [k async for k in redis.scan_iter(match=prefix + "*", count=1000)]
        for i in range(0, len(keys_left), 500):
            await redis.delete(*keys_left[i:i + 500])
        await redis.aclose()
        if embedded is not None:
            embedded.stop()
    return {"games": args.games, "moves": measured, "games_finished": finished,
            "cpu_per_move_us": 1e6 * spent / max(1, measured),
            "process_cpu_per_move_us": 1e6 * process_spent / max(1, measured),
            "writes_per_move": writes / max(1, measured)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=100, help="concurrent games (100)")
    parser.add_argument("--moves", type=int, default=20_000, help="moves measured (20 000)")
    parser.add_argument("--warmup", type=int, default=2_000, help="moves before measuring")
    parser.add_argument("--redis-url", default=None,
                        help="use this Redis (a fresh key prefix, deleted after); "
                             "default: an embedded redis-server")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seeded", action="store_true",
                        help="dice from --seed (repeatable, for callgrind) instead of secrets")
    parser.add_argument("--protocol", type=int, choices=(1, 2), default=2,
                        help="table-event form of the players: 1 full state, 2 change-only")
    parser.add_argument("--redis-check", type=float, default=0.5,
                        help="seconds between the node's Redis health checks (0.5, the "
                             "server's default; bench/callgrind.py sets an hour)")
    parser.add_argument("--ref", action="store_true",
                        help="every command carries an id, answered by an ack after its event "
                             "(as the client library's requests are)")
    parser.add_argument("--stall", type=float, default=120.0,
                        help="give up when no move was made for this many seconds (120)")
    parser.add_argument("--gc-threshold", type=int, default=None,
                        help="gc.set_threshold(N, 10, 10) first (CPython's default N is 700): "
                             "what the cyclic collector costs per move")
    args = parser.parse_args(argv)
    if args.gc_threshold is not None:
        gc.set_threshold(args.gc_threshold, 10, 10)
    if os.environ.get("TABLE42_NODE_GC"):
        # As `python -m server` runs: everything made so far frozen, the node's thresholds.
        from server.__main__ import GC_THRESHOLDS
        gc.collect()
        gc.freeze()
        gc.set_threshold(*GC_THRESHOLDS)
    result = asyncio.run(run(args))
    print(f"{result['cpu_per_move_us']:.1f} µs of CPU per move in Session.receive + "
          f"Lobby.on_message ({result['moves']:,} moves, {result['games']} games, "
          f"{result['games_finished']} finished); the whole process "
          f"{result['process_cpu_per_move_us']:.1f} µs per move (the write-behind flush, the "
          "announcements made once stored, the loop and the driver too); "
          f"{result['writes_per_move']:.2f} socket writes per move")
    return 0


if __name__ == "__main__":
    sys.exit(main())
