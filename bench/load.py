"""Load benchmark for the match server: bots in separate processes play N concurrent rated games.

Run from the repository root (after ``python3 -m pip install -e .``)::

    python3 bench/load.py                                  # 100 games, 3 client processes
    python3 bench/load.py --games 1000 --duration 30 --clients 3 --json

What one run does, all on loopback, bounded in time (``--timeout``) and stopping by itself:

1. starts a Redis (embedded, or ``--redis-url`` with a fresh key prefix that is deleted
   afterwards), the server under test (``python -m server`` in its own process) and a bare
   aiohttp WebSocket echo server (``bench/echo_server.py``, also its own process);
2. starts ``--clients`` client processes (``multiprocessing``); they register two accounts
   per concurrent game (``POST /api/register``) and fetch guest tokens;
3. memory: opens ``--idle`` authenticated sockets (guests, bearer header) that do nothing and
   reads the server's RSS before and after;
4. echo: the same client processes open ``2 N`` sockets to the echo server, ``N`` of them
   doing round trips back to back with a frame shaped like a ``play`` command;
5. games: each client process plays its share of the ``N`` games over real WebSockets, both
   players of a game in the same process: Competitive single games between registered
   players from different (``X-Forwarded-For``) addresses, so every game ends with a Table42
   settlement and a ``rating`` event to each player. A bot rolls when the state says it is on
   roll and plays a random legal play when it must move (no cube). When both ``rating``
   events of a game have arrived, the same pair sits down at a new table.

Each measured phase has a warm-up and a window; the server's (and Redis's, and the clients')
CPU time is read from ``/proc/<pid>/stat`` (utime + stime) at both ends of the window, so
"CPU per move" is the server process's own CPU spent in the window divided by the moves
completed in it. A *move* is one game command a bot sends (``roll`` or ``play``) whose event
(``rolled`` / ``moved``) has come back to that bot; its round trip is from the send to that
event. Checker plays alone are counted too. "Game end to both rating events" runs from the
moment the winner receives the final ``moved`` (state ``over``) to the later of the two
``rating`` events; the same from the final play's send is reported as well.

The machine has 2 cores shared by the server, Redis and the client processes, so moves per
second is bounded by the clients; compare CPU per move (and the echo ratio), not throughput.
The server runs with generous clocks (``--decision-time``), a rate limit the bots cannot reach,
and cheap password hashing (``--scrypt-n 2``): account creation is not what is measured.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import multiprocessing
import os
import random
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from multiprocessing.connection import Connection
from pathlib import Path
from types import FrameType
from typing import Any

from server.protocol.lean import apply_event

ROOT = Path(__file__).resolve().parent.parent
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
PASSWORD = "bench-password"

CPROFILE_RUNNER = """
import cProfile, importlib, signal, sys, time
main = importlib.import_module(sys.argv[2]).main
profile = cProfile.Profile(time.process_time)
signal.signal(signal.SIGUSR1, lambda *_: profile.enable())
signal.signal(signal.SIGUSR2, lambda *_: profile.disable())
try:
    main(sys.argv[3:])
finally:
    profile.disable()
    profile.dump_stats(sys.argv[1])
"""
"""Runs a server's module (``main(argv)``) with cProfile (CPU time) switched on and off by
SIGUSR1 / SIGUSR2: ``python -c CPROFILE_RUNNER FILE MODULE ARGS...``."""

TARGET_RATIO = 3.0
TARGET_P99_MS = 50.0
TARGET_IDLE_KB = 30.0
TARGET_RATING_P99_MS = 10.0
CAPACITY_BUSY = 0.75
"""Capacity: the concurrent games at which the server process is this busy."""


# --- /proc readings ------------------------------------------------------------------------


def cpu_times(pid: int) -> tuple[float, float]:
    """(utime, stime) of process ``pid`` (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        raw = f.read()
    fields = raw[raw.rfind(")") + 2 :].split()
    return int(fields[11]) / CLK_TCK, int(fields[12]) / CLK_TCK


def cpu_seconds(pid: int) -> float:
    """utime + stime of process ``pid`` (all its threads), in seconds."""
    return sum(cpu_times(pid))


def child_pids(pid: int) -> list[int]:
    """The processes ``pid`` started (the workers of ``python -m server --workers N``)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(word) for word in f.read().split()]
    except OSError:
        return []


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * PAGE


def percentile(values: list[float], q: float) -> float | None:
    """The ``q``-quantile (0..1) by nearest rank; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q * len(ordered) + 0.5) - 1))
    return ordered[rank]


# --- the client processes ------------------------------------------------------------------


def decode(raw: bytes | str) -> dict[str, Any]:
    from server.client import decode as client_decode

    return client_decode(raw)


@dataclass
class Bot:
    """One player's socket."""

    side: int
    name: str
    token: str
    address: str
    ws: Any = None  # a server.client.Client
    pending: float | None = None  # send time of the command awaiting its event
    last: dict[str, Any] | None = None  # the roll or play awaiting its event
    state: dict[str, Any] | None = None  # the table state, kept from either event form
    inbox: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)


@dataclass
class Slot:
    """One concurrent game: two bots who sit down together again after each game."""

    bots: list[Bot]
    table: str | None = None
    game_id: str | None = None
    ended_at: float | None = None  # the winner received the final ``moved``
    final_sent: float | None = None
    ratings: dict[int, float] = field(default_factory=dict)
    requests: int = 0


@dataclass
class GameStats:
    moves: list[tuple[float, float]] = field(default_factory=list)  # (done at, round trip)
    plays: list[float] = field(default_factory=list)  # done at, checker plays only
    rating_from_end: list[tuple[float, float]] = field(default_factory=list)
    rating_from_send: list[tuple[float, float]] = field(default_factory=list)
    games_started: int = 0
    games_over: int = 0
    unrated: int = 0
    seat_retries: int = 0
    errors: Counter[str] = field(default_factory=Counter)


class Worker:
    """Runs in a client process; obeys one command at a time from the main process."""

    def __init__(self, index: int, conn: Connection, seed: int) -> None:
        self.index = index
        self.conn = conn
        self.rng = random.Random(seed)
        self.slots: list[Slot] = []
        self.guests: list[str] = []
        self.idle: list[Any] = []
        self.echo: list[Any] = []
        self.fmt = "msgpack"
        self.stop_at = 0.0
        self.stats = GameStats()
        self._addresses = itertools.count(1)
        self._background: set[asyncio.Task[Any]] = set()
        self.think = 0.0
        self.think_max = 0.0
        self.protocol = 1
        self.silence_timeout: float | None = 10.0
        self.window = (0.0, 0.0)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            command = await loop.run_in_executor(None, self.conn.recv)
            op = command["op"]
            if op == "exit":
                break
            try:
                handler: Callable[..., Awaitable[dict[str, Any]]] = getattr(self, "op_" + op)
                reply = await handler(**command.get("args", {}))
            except Exception as exc:
                reply = {"failed": f"{type(exc).__name__}: {exc}"}
            self.conn.send(reply)
        await self._close_all(self.idle + self.echo + [b.ws for s in self.slots for b in s.bots])

    # --- helpers ---------------------------------------------------------------------

    def _address(self) -> str:
        n = next(self._addresses)
        return f"10.{self.index + 1}.{n // 250}.{n % 250 + 1}"

    def encode(self, message: dict[str, Any]) -> bytes | str:
        from server.client import Format, encode

        return encode(message, Format(self.fmt))

    async def _client(self, url: str, token: str, address: str,
                      on_message: Callable[[dict[str, Any]], None] | None = None) -> Any:
        """A protocol socket through the client library (``server.client``), welcomed; the
        library's event queue and table views are off: the bots react in ``on_message``."""
        from server.client import Client

        return await Client.connect(
            url, token, fmt=self.fmt, headers={"X-Forwarded-For": address},
            auto_reconnect=False, queue_events=False, track_tables=False,
            on_message=on_message, request_timeout=30.0, ping_interval=None,
            protocol=self.protocol, silence_timeout=self.silence_timeout,
        )

    async def _connect(self, url: str, token: str | None, address: str) -> Any:
        from websockets.asyncio.client import connect

        headers = {"X-Forwarded-For": address}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return await connect(url, additional_headers=headers, max_size=None,
                             compression=None, open_timeout=30, ping_interval=None)

    async def _gather_limited(self, jobs: list[Callable[[], Awaitable[Any]]],
                              limit: int) -> list[Any]:
        gate = asyncio.Semaphore(limit)

        async def one(job: Callable[[], Awaitable[Any]]) -> Any:
            async with gate:
                return await job()

        return list(await asyncio.gather(*(one(j) for j in jobs)))

    async def _close_all(self, sockets: list[Any]) -> None:
        async def close(ws: Any) -> None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.close(), 2.0)

        live = [ws for ws in sockets if ws is not None]
        if live:
            await self._gather_limited([partial(close, ws) for ws in live], 200)

    # --- accounts --------------------------------------------------------------------

    async def op_register(self, http: str, names: list[tuple[str, str]],
                          guests: int) -> dict[str, Any]:
        """Register two accounts per slot (``names``: pairs) and fetch ``guests`` tokens
        (the client library's HTTP helper)."""
        from server.client.connection import post_json

        async def post(path: str, body: dict[str, Any] | None) -> str:
            for attempt in range(50):
                status, answer = await post_json(http + path, body)
                if status in (200, 201):
                    return str(answer["token"])
                if status != 503:
                    raise RuntimeError(f"{path}: {status} {answer}")
                await asyncio.sleep(0.05 * (attempt + 1))
            raise RuntimeError(f"{path}: busy")

        jobs: list[Callable[[], Awaitable[Any]]] = []
        for a, b in names:
            for name in (a, b):
                jobs.append(partial(post, "/api/register",
                                    {"name": name, "password": PASSWORD}))
        tokens = await self._gather_limited(jobs, 8)
        self.slots = [
            Slot([Bot(0, a, tokens[2 * i], self._address()),
                  Bot(1, b, tokens[2 * i + 1], self._address())])
            for i, (a, b) in enumerate(names)
        ]
        self.guests = await self._gather_limited(
            [lambda: post("/api/guest", None) for _ in range(guests)], 16
        )
        return {"accounts": len(tokens), "guests": len(self.guests)}

    # --- idle sockets ----------------------------------------------------------------

    async def op_idle_open(self, url: str) -> dict[str, Any]:
        async def open_one(token: str) -> Any:
            return await self._client(url, token, self._address())

        self.idle = await self._gather_limited(
            [partial(open_one, t) for t in self.guests], 50
        )
        return {"open": len(self.idle)}

    async def op_idle_close(self) -> dict[str, Any]:
        await self._close_all(self.idle)
        count, self.idle = len(self.idle), []
        return {"closed": count}

    # --- echo ------------------------------------------------------------------------

    async def op_echo_connect(self, url: str, count: int) -> dict[str, Any]:
        self.echo = await self._gather_limited(
            [lambda: self._connect(url, None, self._address()) for _ in range(count)], 50
        )
        return {"open": len(self.echo)}

    async def op_echo_run(self, active: int, start: float, measure_from: float,
                          measure_to: float, end: float, fmt: str, think: float = 0.0,
                          think_max: float = 0.0) -> dict[str, Any]:
        """``active`` sockets each make round trips back to back, or at the bots' pace: a
        pause like a bot's before each one (``think``/``think_max``)."""
        self.fmt = fmt
        payload = self.encode({"type": "play", "table": "kB9rMFnnuYBV", "play": "24/18 13/8"})
        done: list[tuple[float, float]] = []

        async def loop(ws: Any) -> None:
            await asyncio.sleep(max(0.0, start - time.monotonic()))
            while True:
                if think:  # (never past the end: a long pause leaves the run on time)
                    pause = self.rng.uniform(think, max(think, think_max))
                    await asyncio.sleep(min(pause, max(0.0, end - time.monotonic())))
                sent = time.monotonic()
                if sent >= end:
                    return
                await ws.send(payload)
                await ws.recv()
                now = time.monotonic()
                if measure_from <= now < measure_to:
                    done.append((now, now - sent))

        await asyncio.gather(*(loop(ws) for ws in self.echo[:active]))
        await self._close_all(self.echo)
        self.echo = []
        return {"round_trips": [rt for _, rt in done]}

    # --- games -----------------------------------------------------------------------

    async def op_games_connect(self, url: str, fmt: str, protocol: int = 1,
                               silence_timeout: float | None = 10.0) -> dict[str, Any]:
        self.silence_timeout = silence_timeout
        self.fmt = fmt
        self.protocol = protocol  # 2: the change-only events (PROTOCOL.md §5.1)

        async def open_bot(slot: Slot, bot: Bot) -> None:
            bot.ws = await self._client(url, bot.token, bot.address, bot.inbox.put_nowait)

        bots = [(slot, bot) for slot in self.slots for bot in slot.bots]
        await self._gather_limited([partial(open_bot, s, b) for s, b in bots], 50)
        return {"open": len(bots)}

    async def op_games_run(self, start: float, measure_from: float, measure_to: float,
                           end: float, think: float, think_max: float = 0.0) -> dict[str, Any]:
        self.stop_at = measure_to
        self.think = think
        self.think_max = think_max
        self.window = (measure_from, measure_to)
        readers = [
            asyncio.create_task(self._read(slot, bot)) for slot in self.slots for bot in slot.bots
        ]
        await asyncio.sleep(max(0.0, start - time.monotonic()))
        for slot in self.slots:
            self._spawn(self._new_table(slot))
        await asyncio.sleep(max(0.0, end - time.monotonic()))
        await self._close_all([b.ws for s in self.slots for b in s.bots])
        for task in readers:
            task.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
        stats = self.stats
        lo, hi = self.window
        return {
            "moves": [rt for t, rt in stats.moves if lo <= t < hi],
            "plays": sum(1 for t in stats.plays if lo <= t < hi),
            "rating_from_end": [d for t, d in stats.rating_from_end if lo <= t < hi],
            "rating_from_send": [d for t, d in stats.rating_from_send if lo <= t < hi],
            "games_started": stats.games_started,
            "games_over": stats.games_over,
            "unrated": stats.unrated,
            "seat_retries": stats.seat_retries,
            "errors": dict(stats.errors),
        }

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _new_table(self, slot: Slot, delay: float = 0.0) -> None:
        if delay:
            await asyncio.sleep(delay)
        if time.monotonic() >= self.stop_at:
            return
        slot.requests += 1
        slot.table = slot.game_id = None
        slot.ended_at = slot.final_sent = None
        slot.ratings.clear()
        await self._send(slot.bots[0], {"type": "create_table", "mode": "competitive",
                                        "id": slot.requests})

    async def _resend(self, bot: Bot, message: dict[str, Any], delay: float) -> None:
        await asyncio.sleep(delay)
        if bot.last is message and time.monotonic() < self.stop_at:
            await self._send(bot, message)

    async def _send(self, bot: Bot, message: dict[str, Any]) -> None:
        with contextlib.suppress(Exception):
            await bot.ws.send(message)

    async def _read(self, slot: Slot, bot: Bot) -> None:
        """React to what the library's reader handed over (``Bot.inbox``), in order."""
        with contextlib.suppress(Exception):
            while True:
                received = await bot.inbox.get()
                for target, message in self._on_message(slot, bot, received):
                    if self.think and message["type"] in ("roll", "play"):
                        await asyncio.sleep(self.rng.uniform(self.think, self.think_max)
                                            if self.think_max > self.think else self.think)
                    if message["type"] in ("roll", "play"):
                        if time.monotonic() >= self.stop_at:
                            continue
                        target.pending = time.monotonic()
                        target.last = message
                    await self._send(target, message)

    def _on_message(self, slot: Slot, bot: Bot,
                    msg: dict[str, Any]) -> Iterator[tuple[Bot, dict[str, Any]]]:
        kind = msg.get("type")
        now = time.monotonic()
        stats = self.stats
        if "v" in msg and ("state" in msg or "changes" in msg):
            bot.state = apply_event(bot.state, msg)
        if kind in ("rolled", "moved"):
            if msg.get("side") == bot.side and bot.pending is not None:
                bot.last = None
                stats.moves.append((now, now - bot.pending))
                if kind == "moved":
                    stats.plays.append(now)
                    game = None if bot.state is None else bot.state["game"]
                    if game is not None and game["phase"] == "over":
                        slot.ended_at, slot.final_sent = now, bot.pending
                bot.pending = None
            yield from self._act(slot, bot, msg)
        elif kind == "game_start":
            slot.table, slot.game_id = msg["table"], msg["game_id"]
            if bot.side == 0:
                stats.games_started += 1
            yield from self._act(slot, bot, msg)
        elif kind == "table_created" and bot.side == 0:
            slot.table = msg["table"]
            yield slot.bots[1], {"type": "join", "table": msg["table"]}
        elif kind == "game_over" and bot.side == 0:
            stats.games_over += 1
            if not msg["rating"]["rated"]:
                stats.unrated += 1
                self._spawn(self._new_table(slot))
        elif kind == "rating" and msg.get("game_id") == slot.game_id:
            slot.ratings[bot.side] = now
            if len(slot.ratings) == 2:
                last = max(slot.ratings.values())
                if slot.ended_at is not None and slot.final_sent is not None:
                    stats.rating_from_end.append((slot.ended_at, last - slot.ended_at))
                    stats.rating_from_send.append((slot.ended_at, last - slot.final_sent))
                self._spawn(self._new_table(slot))
        elif kind == "error":
            code = str(msg.get("code"))
            if code == "already_seated" and bot.side == 0 and slot.game_id is None:
                # The previous table frees its seats just after the rating events.
                stats.seat_retries += 1
                self._spawn(self._new_table(slot, delay=0.01))
            elif code == "unavailable":  # "retry" (an overloaded node's store check): again
                stats.errors[code] += 1  # after a pause like a decision's, never a storm
                pause = max(0.2, self.rng.uniform(self.think, max(self.think, self.think_max)))
                if slot.game_id is None and bot.side == 0:
                    self._spawn(self._new_table(slot, delay=pause))
                elif bot.last is not None:
                    self._spawn(self._resend(bot, bot.last, pause))
            else:
                stats.errors[code] += 1

    def _act(self, slot: Slot, bot: Bot,
             msg: dict[str, Any]) -> Iterator[tuple[Bot, dict[str, Any]]]:
        state = bot.state
        if not state or state.get("status") != "playing":
            return
        game = state.get("game")
        if game is None or game.get("to_act") != bot.side:
            return
        phase = game["phase"]
        if phase == "roll":
            yield bot, {"type": "roll", "table": slot.table}
        elif phase == "move":
            yield bot, {"type": "play", "table": slot.table,
                        "play": self.rng.choice(game["legal_plays"])}


def worker_main(index: int, conn: Connection, seed: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process stops us
    asyncio.run(Worker(index, conn, seed).run())


# --- the main process ----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_http(url: str, timeout: float, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with status {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1.0) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {timeout:.0f}s")


class Pool:
    """The client processes, addressed all at once."""

    def __init__(self, count: int, seed: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conns: list[Connection] = []
        self.procs: list[multiprocessing.process.BaseProcess] = []
        for i in range(count):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=worker_main, args=(i, child, seed + i), daemon=True,
                               name=f"bench-client-{i}")
            proc.start()
            self.conns.append(parent)
            self.procs.append(proc)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs if p.pid is not None]

    def call(self, op: str, per_worker: list[dict[str, Any]] | dict[str, Any],
             timeout: float) -> list[dict[str, Any]]:
        args = per_worker if isinstance(per_worker, list) else [per_worker] * len(self.conns)
        for conn, a in zip(self.conns, args, strict=True):
            conn.send({"op": op, "args": a})
        return collect(self, op, timeout)

    def close(self) -> None:
        for conn in self.conns:
            with contextlib.suppress(OSError):
                conn.send({"op": "exit"})
        for proc in self.procs:
            proc.join(5)
            if proc.is_alive():
                proc.terminate()
                proc.join(2)


def wait_workers(url: str, workers: int, timeout: float) -> None:
    """Until ``workers`` distinct nodes have answered ``url`` (each new connection lands on
    one of the workers sharing the port)."""
    seen: set[str] = set()
    deadline = time.monotonic() + timeout
    while len(seen) < workers:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(seen)} of {workers} workers answered")
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=5) as resp:
            seen.add(str(json.loads(resp.read())["node"]))
        time.sleep(0.05)


WORKER_COUNTERS = {
    "table42_moves_total": "moves",
    'table42_commands_forwarded_total{to="sibling"}': "crossed",
    'table42_socket_moves_total{result="moved"}': "sockets_moved",
    'table42_socket_moves_total{result="failed"}': "moves_failed",
}


def worker_counters(http: str, workers: int, timeout: float = 60.0) -> dict[str, float]:
    """The counters of :data:`WORKER_COUNTERS`, summed over the workers (each answers
    ``/metrics`` with its node id in ``X-Node``; each new connection lands on any one)."""
    seen: dict[str, dict[str, float]] = {}
    deadline = time.monotonic() + timeout
    while len(seen) < workers:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(seen)} of {workers} workers answered /metrics")
        with contextlib.suppress(OSError), \
                urllib.request.urlopen(f"{http}/metrics", timeout=5) as resp:
            values = {name: 0.0 for name in WORKER_COUNTERS.values()}
            for line in resp.read().decode().splitlines():
                key, _, value = line.rpartition(" ")
                if key in WORKER_COUNTERS:
                    values[WORKER_COUNTERS[key]] = float(value)
            seen[resp.headers.get("X-Node", "?")] = values
    return {name: sum(v[name] for v in seen.values()) for name in WORKER_COUNTERS.values()}


def split(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def measure_window(pids: dict[str, list[int]], measure_from: float,
                   measure_to: float) -> dict[str, float]:
    """CPU seconds each group of processes spent between the two instants."""
    time.sleep(max(0.0, measure_from - time.monotonic()))
    before = {k: sum(cpu_seconds(p) for p in v) for k, v in pids.items()}
    server_before = [sum(t) for t in zip(*map(cpu_times, pids["server"]), strict=True)]
    started = time.monotonic()
    time.sleep(max(0.0, measure_to - time.monotonic()))
    after = {k: sum(cpu_seconds(p) for p in v) for k, v in pids.items()}
    server_after = [sum(t) for t in zip(*map(cpu_times, pids["server"]), strict=True)]
    spent = {k: after[k] - before[k] for k in pids}
    spent["server_user"] = server_after[0] - server_before[0]
    spent["server_system"] = server_after[1] - server_before[1]
    spent["wall"] = time.monotonic() - started
    return spent


def hardening_args(mode: str) -> list[str]:
    """``--hardening off``: the per-address limits and the metrics (hardening limits) are off.
    ``on`` (the default): both on, every check on the path (the limiters, the counters and
    histograms) running, with bounds the bench's own setup (hundreds of accounts and tables
    from a few addresses) cannot reach, so the two modes play the same games."""
    if mode == "off":
        return ["--limits", "0", "--metrics", "0"]
    return ["--limits", "1", "--metrics", "1", "--register-burst", "1000000",
            "--guest-burst", "1000000", "--login-burst", "1000000",
            "--table-create-burst", "1000000", "--max-open-tables-per-address", "1000000",
            "--max-sockets-per-address", "1000000", "--hashes-per-address", "1000000"]


def run(args: argparse.Namespace) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from server.embedded_redis import EmbeddedRedis

    games, clients = args.games, args.clients
    run_id = secrets.token_hex(3)
    prefix = f"bench-{run_id}:"
    work = Path(tempfile.mkdtemp(prefix="table42-load-"))
    procs: list[subprocess.Popen[bytes]] = []
    embedded: EmbeddedRedis | None = None
    pool: Pool | None = None
    result: dict[str, Any] = {"root": str(Path(args.root or ROOT).resolve()),
                              "games": games, "clients": clients, "format": args.format,
                              "target": args.target, "workers": args.workers,
                              "hardening": args.hardening,
                              "duration": args.duration, "warmup": args.warmup,
                              "think_ms": args.think * 1000,
                              "think_max_ms": max(args.think, args.think_max) * 1000,
                              "protocol": args.protocol}
    try:
        if args.redis_url:
            redis_url = args.redis_url
            redis_pid = None
        else:
            embedded = EmbeddedRedis().start()
            redis_url = embedded.url
            redis_pid = embedded.pid
        port = free_port()
        server_root = Path(args.root).resolve() if args.root else ROOT
        env = dict(os.environ, TABLE42_LOG_LEVEL=args.log_level, PYTHONPATH=str(ROOT))
        server_env = dict(env, PYTHONPATH=str(server_root))
        env.pop("REDIS_URL", None)
        server_log = open(work / "server.log", "wb")  # noqa: SIM115 - closed with the process
        def launcher(module: str) -> list[str]:
            if args.cprofile:
                return [sys.executable, "-c", CPROFILE_RUNNER, args.cprofile, module]
            return [sys.executable, "-m", module]

        server_cmd = [
            *launcher("server.__main__"), "--host", "127.0.0.1", "--port", str(port),
            "--redis-url", redis_url, "--key-prefix", prefix, "--node-id", f"bench{run_id}",
            "--trusted-proxies", "127.0.0.1", "--scrypt-n", "2", "--scrypt-r", "1",
            "--decision-time", str(args.decision_time), "--grace-period",
            str(args.decision_time), "--rate-limit", "100000", "--rate-burst", "100000",
            "--max-open-tables", str(max(10_000, 4 * games)), "--http-rate-limit", "0",
            *hardening_args(args.hardening), "--uvloop", str(args.uvloop),
            "--workers", str(args.workers),
        ]
        if args.target == "floor":
            server_cmd = [*launcher("bench.floor_server"), "--host",
                          "127.0.0.1", "--port", str(port), "--redis-url", redis_url,
                          "--key-prefix", prefix, "--uvloop", str(args.uvloop)]
        server = subprocess.Popen(server_cmd, cwd=server_root, env=server_env, stdout=server_log,
                                  stderr=subprocess.STDOUT)
        procs.append(server)
        wait_http(f"http://127.0.0.1:{port}/healthz", 30, server)
        if args.workers > 1:
            wait_workers(f"http://127.0.0.1:{port}/readyz", args.workers, 120)
        echo = subprocess.Popen(
            [sys.executable, str(ROOT / "bench" / "echo_server.py"), "--port", "0",
             "--uvloop", str(args.uvloop)],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        procs.append(echo)
        assert echo.stdout is not None
        ready = echo.stdout.readline().decode().split()
        if len(ready) != 2 or ready[0] != "ready":
            raise RuntimeError("the echo server did not start")
        echo_url = f"ws://127.0.0.1:{ready[1]}/ws"
        http = f"http://127.0.0.1:{port}"
        ws_url = f"ws://127.0.0.1:{port}/ws"

        pool = Pool(clients, args.seed)
        shares = split(games, clients)
        idle_shares = split(args.idle, clients)
        names = [
            [(f"b{run_id}w{w}g{g}a", f"b{run_id}w{w}g{g}b") for g in range(n)]
            for w, n in enumerate(shares)
        ]
        say(args, f"registering {2 * games} accounts and {args.idle} guests ...")
        pool.call("register", [{"http": http, "names": names[w], "guests": idle_shares[w]}
                               for w in range(clients)], timeout=600)

        # Memory per idle authenticated connection.
        if args.idle:
            time.sleep(0.5)
            rss0 = rss_bytes(server.pid)
            pool.call("idle_open", {"url": ws_url}, timeout=300)
            time.sleep(1.0)
            rss1 = rss_bytes(server.pid)
            result["idle"] = {"sockets": args.idle, "rss_before": rss0, "rss_after": rss1,
                              "bytes_per_socket": (rss1 - rss0) / args.idle}
            pool.call("idle_close", {}, timeout=120)
            say(args, f"idle sockets: {(rss1 - rss0) / args.idle / 1024:.1f} KB each")

        # The bare echo server, same clients, same shape of load.
        echo_conns = args.echo_conns if args.echo_conns is not None else 2 * games
        echo_active = args.echo_active if args.echo_active is not None else games
        echo_active = min(echo_active, echo_conns)
        pool.call("echo_connect", [{"url": echo_url, "count": n}
                                   for n in split(echo_conns, clients)], timeout=300)
        start = time.monotonic() + 0.5
        times = {"start": start, "measure_from": start + args.warmup,
                 "measure_to": start + args.warmup + args.echo_duration}
        times["end"] = times["measure_to"] + 0.2
        say(args, f"echo: {echo_conns} sockets, {echo_active} active, "
                  f"{args.echo_duration:.0f}s ...")
        per_worker = [dict(times, active=n, fmt=args.format, think=args.think,
                           think_max=args.think_max) for n in split(echo_active, clients)]
        for conn, a in zip(pool.conns, per_worker, strict=True):
            conn.send({"op": "echo_run", "args": a})
        spent = measure_window({"server": [echo.pid], "clients": pool.pids},
                               times["measure_from"], times["measure_to"])
        replies = collect(pool, "echo_run", 120)
        rts = [rt for r in replies for rt in r["round_trips"]]
        result["echo"] = {
            "sockets": echo_conns, "active": echo_active, "round_trips": len(rts),
            "per_second": len(rts) / spent["wall"],
            "rt_p50_ms": ms(percentile(rts, 0.5)), "rt_p99_ms": ms(percentile(rts, 0.99)),
            "server_cpu_s": spent["server"],
            "server_system_share": spent["server_system"] / max(1e-9, spent["server"]),
            "server_cpu_per_rt_us": 1e6 * spent["server"] / max(1, len(rts)),
            "client_cpu_per_rt_us": 1e6 * spent["clients"] / max(1, len(rts)),
        }

        # The games.
        say(args, f"games: connecting {2 * games} players ...")
        pool.call("games_connect", {"url": ws_url, "fmt": args.format,
                                    "protocol": args.protocol,
                                    "silence_timeout": args.silence_timeout or None},
                  timeout=300)
        start = time.monotonic() + 0.5
        times = {"start": start, "measure_from": start + args.warmup,
                 "measure_to": start + args.warmup + args.duration}
        times["end"] = times["measure_to"] + args.tail
        say(args, f"games: {games} concurrent, warm-up {args.warmup:.0f}s, "
                  f"measuring {args.duration:.0f}s ...")
        for conn in pool.conns:
            conn.send({"op": "games_run", "args": dict(times, think=args.think,
                                                       think_max=args.think_max)})
        groups = {"server": [server.pid, *child_pids(server.pid)], "clients": pool.pids}
        if redis_pid is not None:
            groups["redis"] = [redis_pid]
        rss_games0 = rss_bytes(server.pid)
        profiler = None
        if args.profile:
            time.sleep(max(0.0, times["measure_from"] - time.monotonic()))
            profiler = subprocess.Popen(
                ["py-spy", "record", "--pid", str(server.pid), "--duration",
                 str(int(args.duration)), "--rate", "200", "--nonblocking", "--format", "raw",
                 "--output", args.profile],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            procs.append(profiler)
        if args.cprofile:
            time.sleep(max(0.0, times["measure_from"] - time.monotonic()))
            server.send_signal(signal.SIGUSR1)
        counted = args.hardening == "on" and args.target == "node"
        if counted:
            time.sleep(max(0.0, times["measure_from"] - 1.0 - time.monotonic()))
            counters0 = worker_counters(http, args.workers)
        spent = measure_window(groups, times["measure_from"], times["measure_to"])
        if counted:
            counters1 = worker_counters(http, args.workers)
            window = {k: counters1[k] - counters0[k] for k in counters1}
            result["crossing"] = {
                **window, "share_of_moves": window["crossed"] / max(1.0, window["moves"])}
        if args.cprofile:
            server.send_signal(signal.SIGUSR2)
        if profiler is not None:
            profiler.wait(30)
        rss_games1 = rss_bytes(server.pid)
        replies = collect(pool, "games_run", args.duration + args.tail + 120)
        moves = [rt for r in replies for rt in r["moves"]]
        plays = sum(r["plays"] for r in replies)
        from_end = [d for r in replies for d in r["rating_from_end"]]
        from_send = [d for r in replies for d in r["rating_from_send"]]
        errors: Counter[str] = Counter()
        for r in replies:
            errors.update(r["errors"])
        n = max(1, len(moves))
        result["load"] = {
            "moves": len(moves), "plays": plays,
            "moves_per_second": len(moves) / spent["wall"],
            "plays_per_second": plays / spent["wall"],
            "move_rt_p50_ms": ms(percentile(moves, 0.5)),
            "move_rt_p99_ms": ms(percentile(moves, 0.99)),
            "move_rt_max_ms": ms(max(moves) if moves else None),
            "games_rated_in_window": len(from_end),
            "rating_p50_ms": ms(percentile(from_end, 0.5)),
            "rating_p99_ms": ms(percentile(from_end, 0.99)),
            "rating_from_send_p50_ms": ms(percentile(from_send, 0.5)),
            "rating_from_send_p99_ms": ms(percentile(from_send, 0.99)),
            "games_started": sum(r["games_started"] for r in replies),
            "games_over": sum(r["games_over"] for r in replies),
            "unrated_games": sum(r["unrated"] for r in replies),
            "seat_retries": sum(r["seat_retries"] for r in replies),
            "errors": dict(errors),
            "server_cpu_s": spent["server"],
            "server_system_share": spent["server_system"] / max(1e-9, spent["server"]),
            "server_utilisation": spent["server"] / spent["wall"],
            "server_cpu_per_move_us": 1e6 * spent["server"] / n,
            "server_cpu_per_play_us": 1e6 * spent["server"] / max(1, plays),
            "client_cpu_per_move_us": 1e6 * spent["clients"] / n,
            "redis_cpu_per_move_us": (1e6 * spent["redis"] / n) if "redis" in spent else None,
            "server_rss_mb": rss_games1 / 2**20,
            "server_rss_growth_mb": (rss_games1 - rss_games0) / 2**20,
        }
        echo_cost = result["echo"]["server_cpu_per_rt_us"]
        # (None when the echo made no round trip it could be charged for: a paced idle run)
        result["ratio"] = result["load"]["server_cpu_per_move_us"] / echo_cost \
            if echo_cost else None
        result["ratio_per_play"] = result["load"]["server_cpu_per_play_us"] / echo_cost \
            if echo_cost else None
        result["capacity"] = capacity(args.games, result["load"], args.workers)
        result["server_log_tail"] = tail(work / "server.log")
        return result
    finally:
        if pool is not None:
            pool.close()
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        if embedded is not None:
            embedded.stop()
        elif args.redis_url:
            delete_keys(args.redis_url, prefix)


def capacity(games: int, load: dict[str, Any], workers: int = 1) -> dict[str, Any]:
    """The capacity of one node at the measured pace: the concurrent games at which the
    server process would be :data:`CAPACITY_BUSY` busy (of one core), from this run; with
    ``--workers N``, its N processes :data:`CAPACITY_BUSY` busy each (N cores).

    Method: the run measured ``games`` games making ``moves_per_second`` moves at
    ``server_cpu_per_move_us`` each, so one game costs the server
    ``utilisation / games`` of a core; the capacity is ``CAPACITY_BUSY`` over that share,
    i.e. a linear extrapolation from CPU per move (the cost of a move does not grow with
    the number of games: more games put more frames into each wake-up of the loop, so this
    is conservative). It holds only when the measured run met the latency condition
    (``p99_ok``: move round trip p99 under :data:`TARGET_P99_MS`), and the latency at the
    extrapolated load is not measured: run again with ``--games`` near the figure where the
    bots allow it.
    """
    share = load["server_utilisation"] / max(1, games)
    p99 = load["move_rt_p99_ms"]
    return {
        "games_at_75pct_busy": int(workers * CAPACITY_BUSY / share) if share > 0 else None,
        "core_share_per_game": share,
        "moves_per_game_per_second": load["moves_per_second"] / max(1, games),
        "measured_games": games,
        "measured_busy": load["server_utilisation"],
        "p99_ok": p99 is not None and p99 < TARGET_P99_MS,
        "method": f"{CAPACITY_BUSY:.0%} of a core / (server CPU per second / games "
                  "measured); linear in CPU per move",
    }


def collect(pool: Pool, op: str, timeout: float) -> list[dict[str, Any]]:
    replies = []
    deadline = time.monotonic() + timeout
    for conn in pool.conns:
        if not conn.poll(max(0.0, deadline - time.monotonic())):
            raise TimeoutError(f"client process did not finish {op} in {timeout:.0f}s")
        reply = conn.recv()
        if "failed" in reply:
            raise RuntimeError(f"client {op}: {reply['failed']}")
        replies.append(reply)
    return replies


def delete_keys(url: str, prefix: str) -> None:
    import redis

    with redis.Redis.from_url(url) as client:
        batch: list[Any] = []
        for key in client.scan_iter(match=prefix.replace("[", "\\[") + "*", count=1000):
            batch.append(key)
            if len(batch) >= 500:
                client.unlink(*batch)
                batch = []
        if batch:
            client.unlink(*batch)


def tail(path: Path, lines: int = 5) -> list[str]:
    try:
        text = path.read_text("utf-8", "replace").splitlines()
    except OSError:
        return []
    return [line for line in text if "WARNING" in line or "ERROR" in line][-lines:]


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000.0


def say(args: argparse.Namespace, text: str) -> None:
    if not args.quiet:
        print(text, file=sys.stderr, flush=True)


# --- report ----------------------------------------------------------------------------------


def _f(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _ok(good: bool) -> str:
    return "✓" if good else "✗"


def report(r: dict[str, Any]) -> str:
    load, echo = r["load"], r["echo"]
    idle = r.get("idle")
    rows: list[tuple[str, str, str]] = [
        ("concurrent games / client processes", f"{r['games']} / {r['clients']}", ""),
        ("measured window", f"{_f(r['duration'], 0)} s after {_f(r['warmup'], 0)} s warm-up",
         ""),
        ("bot pace", "full speed (no pause)" if not r["think_ms"]
         else f"{_f(r['think_ms'], 0)} ms pause before each decision", ""),
        ("moves (roll + play commands)", f"{load['moves']:,} ({_f(load['moves_per_second'], 0)}/s)",
         ""),
        ("checker plays", f"{load['plays']:,} ({_f(load['plays_per_second'], 0)}/s)", ""),
        ("move round trip p50 / p99",
         f"{_f(load['move_rt_p50_ms'], 2)} / {_f(load['move_rt_p99_ms'], 2)} ms",
         f"p99 < {TARGET_P99_MS:g} ms "
         f"{_ok((load['move_rt_p99_ms'] or 1e9) < TARGET_P99_MS)}"),
        ("games rated in window (started / over)",
         f"{load['games_rated_in_window']} ({load['games_started']} / {load['games_over']})", ""),
        ("game end -> both rating events p50 / p99",
         f"{_f(load['rating_p50_ms'], 2)} / {_f(load['rating_p99_ms'], 2)} ms",
         f"p99 < {TARGET_RATING_P99_MS:g} ms "
         f"{_ok((load['rating_p99_ms'] or 1e9) < TARGET_RATING_P99_MS)}"),
        ("  same, from the final play's send",
         f"{_f(load['rating_from_send_p50_ms'], 2)} / {_f(load['rating_from_send_p99_ms'], 2)} ms",
         ""),
        ("server CPU per move", f"{_f(load['server_cpu_per_move_us'])} µs "
         f"({load['server_system_share'] * 100:.0f}% in the kernel; server busy "
         f"{load['server_utilisation'] * 100:.0f}% of a core)", ""),
        ("server CPU per checker play (incl. its roll)",
         f"{_f(load['server_cpu_per_play_us'])} µs", ""),
        ("Redis CPU per move", f"{_f(load['redis_cpu_per_move_us'])} µs", ""),
        ("client CPU per move (all client processes)",
         f"{_f(load['client_cpu_per_move_us'])} µs", ""),
        ("echo: round trips", f"{echo['round_trips']:,} ({_f(echo['per_second'], 0)}/s), "
         f"{echo['active']} of {echo['sockets']} sockets active", ""),
        ("echo: round trip p50 / p99",
         f"{_f(echo['rt_p50_ms'], 2)} / {_f(echo['rt_p99_ms'], 2)} ms", ""),
        ("echo: server CPU per round trip", f"{_f(echo['server_cpu_per_rt_us'])} µs "
         f"({echo['server_system_share'] * 100:.0f}% in the kernel)", ""),
        ("ratio server CPU per move / echo", _f(r["ratio"], 2) + "x",
         f"<= {TARGET_RATIO:g}x {_ok(r['ratio'] is not None and r['ratio'] <= TARGET_RATIO)}"),
        ("  per checker play / echo", _f(r["ratio_per_play"], 2) + "x", ""),
    ]
    cap = r.get("capacity")
    if cap is not None and cap["games_at_75pct_busy"] is not None:
        rows.append((f"capacity: games at {CAPACITY_BUSY:.0%} of a core (extrapolated)",
                     f"{cap['games_at_75pct_busy']:,} ({cap['core_share_per_game'] * 1e6:.0f} "
                     f"µs of server CPU per game per second; measured {cap['measured_games']} "
                     f"games, server {cap['measured_busy'] * 100:.1f}% busy)",
                     f"p99 < {TARGET_P99_MS:g} ms at the measured load "
                     f"{_ok(cap['p99_ok'])}"))
    if idle is not None:
        kb = idle["bytes_per_socket"] / 1024
        rows.append(("memory per idle authenticated socket",
                     f"{kb:.1f} KB (RSS delta over {idle['sockets']:,})",
                     f"< {TARGET_IDLE_KB:g} KB {_ok(kb < TARGET_IDLE_KB)}"))
    rows.append(("server RSS at the end of the window",
                 f"{_f(load['server_rss_mb'])} MB", ""))
    if load["errors"]:
        rows.append(("errors received", json.dumps(load["errors"]), ""))
    if load["unrated_games"]:
        rows.append(("unrated games (unexpected)", str(load["unrated_games"]), ""))
    width = max(len(a) for a, _, _ in rows)
    vwidth = max(len(b) for _, b, _ in rows)
    return "\n".join(f"{a:<{width}}  {b:<{vwidth}}  {c}".rstrip() for a, b, c in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Load benchmark for the match server.")
    parser.add_argument("--games", type=int, default=100, help="concurrent games (default 100)")
    parser.add_argument("--clients", type=int, default=3, help="client processes (default 3)")
    parser.add_argument("--duration", type=float, default=20.0,
                        help="measured seconds of play (default 20)")
    parser.add_argument("--warmup", type=float, default=5.0,
                        help="seconds of each phase before measuring (default 5)")
    parser.add_argument("--tail", type=float, default=1.0,
                        help="seconds after the window for rating events to arrive")
    parser.add_argument("--echo-duration", type=float, default=None,
                        help="measured seconds of the echo phase (default: --duration / 2)")
    parser.add_argument("--echo-conns", type=int, default=None,
                        help="echo sockets (default 2 x games, like the players)")
    parser.add_argument("--echo-active", type=int, default=None,
                        help="echo sockets doing round trips (default = games: one "
                             "decision in flight per game)")
    parser.add_argument("--idle", type=int, default=1000,
                        help="idle authenticated sockets for the memory figure (0: skip)")
    parser.add_argument("--format", choices=("msgpack", "json"), default="msgpack",
                        help="wire format of the bots")
    parser.add_argument("--think", type=float, default=0.0,
                        help="seconds a bot waits before each decision (default 0: full speed)")
    parser.add_argument("--think-max", type=float, default=0.0,
                        help="with it, each pause is uniform in [--think, --think-max] "
                             "(human pace: --think 2 --think-max 5)")
    parser.add_argument("--protocol", type=int, choices=(1, 2), default=2,
                        help="table-event form of the bots: 1 full state, 2 change-only "
                             "(default)")
    parser.add_argument("--root", default=None,
                        help="the tree whose server (python -m server) is measured; the "
                             "harness, clients and echo stay this tree's (default: this tree)")
    parser.add_argument("--silence-timeout", type=float, default=10.0,
                        help="the bots' silence watch (client library, PROTOCOL.md §1): an "
                             "application ping after a third of it without a frame; 0: off")
    parser.add_argument("--decision-time", type=float, default=3600.0,
                        help="the server's move clock, seconds (generous: bots never time out)")
    parser.add_argument("--redis-url", default=None,
                        help="use this Redis (keys under a fresh prefix, deleted after); "
                             "default: an embedded redis-server")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="hard limit for the whole run, seconds")
    parser.add_argument("--target", choices=("node", "floor"), default="node",
                        help="the server the bots play on: the node (python -m server) or "
                             "the floor (bench/floor_server.py: the minimal correct move "
                             "server)")
    parser.add_argument("--workers", type=int, default=1,
                        help="the node's --workers: its processes on the port (CPU and "
                             "utilisation are summed over them)")
    parser.add_argument("--uvloop", type=int, choices=(0, 1), default=1,
                        help="1: the server under test and the echo on uvloop when installed "
                             "(the node's default), 0: asyncio's loop")
    parser.add_argument("--hardening", choices=("on", "off"), default="on",
                        help="the server's per-address limits and metrics (hardening limits)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-level", default="WARNING", help="the server's log level")
    parser.add_argument("--profile", default=None, metavar="FILE",
                        help="record the server with py-spy during the window (collapsed "
                             "stacks to FILE); sampling inflates the CPU figures a little")
    parser.add_argument("--cprofile", default=None, metavar="FILE",
                        help="run the server under cProfile (CPU time) during the window and "
                             "dump pstats to FILE when it stops (slows the server down)")
    parser.add_argument("--json", action="store_true",
                        help="print the figures as JSON on stdout (the table goes to stderr)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    if args.games < 1 or args.clients < 1 or args.duration <= 0 or args.idle < 0:
        parser.error("--games and --clients must be >= 1, --duration > 0, --idle >= 0")
    if args.echo_duration is None:  # at human pace as long as the games: as many samples
        args.echo_duration = args.duration if args.think else max(2.0, args.duration / 2)

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"the benchmark took longer than --timeout {args.timeout:.0f}s")

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(max(1, int(args.timeout)))
    try:
        result = run(args)
    finally:
        signal.alarm(0)
    table = report(result)
    if args.json:
        print(table, file=sys.stderr)
        print(json.dumps(result, indent=2))
    else:
        print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
