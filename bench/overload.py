"""Overload: one node's paced capacity, and what happens when it is offered 1.5x and 2x of it,
with the door (docs/operations.md "Overload") off and on.

Run from the repository root (by hand; about 2 minutes a run)::

    python3 bench/overload.py                       # capacity from a 20-game probe's CPU,
                                                    # then 1.5x and 2x, door off and on
    python3 bench/overload.py --search 20,40,60,80  # capacity: the most games at p99 < 50 ms
    python3 bench/overload.py --capacity 60         # skip finding it
    python3 bench/overload.py --capacity 60 --json out.json   # also keep every figure

It drives ``bench/load.py``'s harness (its client processes and bots: registered players
from their own addresses play rated Competitive games of random legal plays over real
WebSockets, a pause of ``--think``..``--think-max`` before each decision, one decision in
flight per game; after both rating events a pair sits down at a new table), with three
changes, all in the bots (``OverloadWorker``):

- **arrivals**: each pair's first table is opened at a random moment of the first
  ``--ramp`` seconds, so tables are created (new work) all through the run, never all at
  once;
- **refusals**: a ``create_table`` or ``join`` refused ``busy`` is counted and sent again
  after its ``retry_after`` (times 1 to 1.5, a client's jitter); the pair waits meanwhile;
- the window's moves are split into those of games admitted before the window and after.

Each run is one node (``python -m server``, its own process, an embedded redis-server) with
the per-address limits off (one client address makes every table) and either
``--load-max-lag 0 --load-max-cpu 0`` (**door off**: the behaviour before the door) or the
door's defaults (**door on**). Reported per run: the move round trip p50/p99/max of the
window (every move is of an admitted game), moves per second, the node's CPU share, the share
of table requests (``create_table`` + ``join``) refused ``busy``, the games started and the
share of the window ``/readyz`` answered ``busy`` (polled every 0.5 s).

**Capacity**, with ``--search``, is the most concurrent games (pairs) of those runs (door off)
whose move p99 stays under 50 ms. On a machine shared with other work the p99 of even a light
run is the machine's (its scheduler's delays), not the node's: there the default is the
probe, as ``bench/load.py`` states capacity: one door-off run of ``--probe`` games, and the
games at which the node's process would be 75% of a core busy, linear in its CPU per game.
Either way the bots share the machine's cores with the node (their CPU per move is about the
node's): say the machine and its load average with the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import random
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import load  # noqa: E402  (bench/load.py: the harness this builds on)

TARGET_P99_MS = 50.0
READ_CONCURRENCY = 64
DOOR_OFF = ["--load-max-lag", "0", "--load-max-cpu", "0"]


class OverloadWorker(load.Worker):
    """``load.Worker`` with staggered first tables and ``busy`` refusals waited out."""

    def __init__(self, index: int, conn: Connection, seed: int) -> None:
        super().__init__(index, conn, seed)
        self.ramp = 0.0
        self.refused: Counter[str] = Counter()
        self.admitted: Counter[str] = Counter()

    async def op_games_run(self, start: float, measure_from: float, measure_to: float,
                           end: float, think: float, think_max: float = 0.0,
                           ramp: float = 0.0) -> dict[str, Any]:
        self.ramp = ramp
        reply: dict[str, Any] = await super().op_games_run(
            start, measure_from, measure_to, end, think, think_max)
        reply["refused"] = dict(self.refused)
        reply["admitted"] = dict(self.admitted)
        return reply

    async def _new_table(self, slot: load.Slot, delay: float = 0.0) -> None:
        if slot.requests == 0 and self.ramp > 0:  # this pair's first table: an arrival
            delay += self.rng.uniform(0.0, self.ramp)
        await super()._new_table(slot, delay)

    async def _join_again(self, slot: load.Slot, table: str, delay: float) -> None:
        await asyncio.sleep(delay)
        if slot.table == table and slot.game_id is None and time.monotonic() < self.stop_at:
            await self._send(slot.bots[1], {"type": "join", "table": table})

    def _on_message(self, slot: load.Slot, bot: load.Bot,
                    msg: dict[str, Any]) -> Iterator[tuple[load.Bot, dict[str, Any]]]:
        kind = msg.get("type")
        if kind == "error" and msg.get("code") == "busy":
            wait = float(msg.get("retry_after") or 1) * self.rng.uniform(1.0, 1.5)
            table = msg.get("table")
            if table is None and bot.side == 0:
                self.refused["create_table"] += 1
                self._spawn(self._new_table(slot, delay=wait))
            elif isinstance(table, str) and bot.side == 1:
                self.refused["join"] += 1
                self._spawn(self._join_again(slot, table, wait))
            else:
                self.refused["other"] += 1
            return
        if kind == "table_created" and bot.side == 0:
            self.admitted["create_table"] += 1
        elif kind == "game_start" and bot.side == 1:
            self.admitted["join"] += 1
        yield from super()._on_message(slot, bot, msg)


def worker_main(index: int, conn: Connection, seed: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    asyncio.run(OverloadWorker(index, conn, seed).run())


class Pool(load.Pool):
    """``load.Pool`` with :class:`OverloadWorker` client processes."""

    def __init__(self, count: int, seed: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conns = []
        self.procs = []
        for i in range(count):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=worker_main, args=(i, child, seed + i), daemon=True,
                               name=f"bench-overload-{i}")
            proc.start()
            self.conns.append(parent)
            self.procs.append(proc)


class ReadyPoll:
    """Polls ``/readyz`` every 0.5 s in a thread; the share of answers that said busy."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.answers: list[tuple[float, bool]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            busy = False
            try:
                with urllib.request.urlopen(self.url, timeout=2.0) as resp:
                    busy = bool(json.loads(resp.read()).get("busy"))
            except urllib.error.HTTPError as exc:
                with contextlib.suppress(ValueError):
                    busy = bool(json.loads(exc.read()).get("busy"))
            except OSError:
                continue
            self.answers.append((time.monotonic(), busy))

    def start(self) -> ReadyPoll:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def busy_share(self, lo: float, hi: float) -> float | None:
        window = [busy for t, busy in self.answers if lo <= t < hi]
        return sum(window) / len(window) if window else None


class ReadFlood:
    """``rate`` reads a second of one finished game's record (``GET /api/games/{id}``, a
    costly route for the node, cheap for the reader), from a thread of the main process, at
    most :data:`READ_CONCURRENCY` in flight. The game: the first of the tables listed at the
    start whose record exists."""

    def __init__(self, http: str, rate: float) -> None:
        self.http = http
        self.rate = rate
        self.done: list[tuple[float, int, float]] = []  # (at, status, seconds)
        self.skipped = 0
        self.game_id: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    def start(self) -> ReadFlood:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    async def _main(self) -> None:
        import aiohttp

        async with aiohttp.ClientSession() as http:
            while self.game_id is None and not self._stop.is_set():
                async with http.get(self.http + "/api/tables?limit=50") as resp:
                    tables = [t["table"] for t in (await resp.json()).get("tables", [])
                              if isinstance(t, dict) and "table" in t] \
                        if resp.status == 200 else []
                for table in tables:
                    async with http.get(f"{self.http}/api/games/{table}-g1") as resp:
                        if resp.status == 200:
                            self.game_id = f"{table}-g1"
                            break
                await asyncio.sleep(0.5)
            url = f"{self.http}/api/games/{self.game_id}"
            gate = asyncio.Semaphore(READ_CONCURRENCY)
            tasks: set[asyncio.Task[None]] = set()

            async def read() -> None:
                async with gate:
                    sent = time.monotonic()
                    try:
                        async with http.get(url) as resp:
                            await resp.read()
                            status = resp.status
                    except aiohttp.ClientError:
                        status = 0
                    self.done.append((time.monotonic(), status, time.monotonic() - sent))

            period, due = 1.0 / self.rate, time.monotonic()
            while not self._stop.is_set():
                if gate.locked():
                    self.skipped += 1
                else:
                    task = asyncio.create_task(read())
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                due += period
                await asyncio.sleep(max(0.0, due - time.monotonic()))
            for task in list(tasks):
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def figures(self, lo: float, hi: float) -> dict[str, Any]:
        window = [(status, took) for at, status, took in self.done if lo <= at < hi]
        served = [took for status, took in window if status == 200]
        return {"reads_per_second": self.rate, "game_id": self.game_id,
                "answered": len(window), "served": len(served),
                "refused_busy": sum(1 for status, _ in window if status == 503),
                "failed": sum(1 for status, _ in window if status not in (200, 503)),
                "served_p50_ms": load.ms(load.percentile(served, 0.5)),
                "served_p99_ms": load.ms(load.percentile(served, 0.99)),
                "skipped": self.skipped}


def run_once(args: argparse.Namespace, games: int, door: bool) -> dict[str, Any]:
    """One node offered ``games`` concurrent paced games, door on or off."""
    from server.embedded_redis import EmbeddedRedis

    run_id = secrets.token_hex(3)
    work = Path(tempfile.mkdtemp(prefix="table42-overload-"))
    embedded = EmbeddedRedis().start()
    server: subprocess.Popen[bytes] | None = None
    pool: Pool | None = None
    poll: ReadyPoll | None = None
    flood: ReadFlood | None = None
    try:
        port = load.free_port()
        env = dict(os.environ, TABLE42_LOG_LEVEL="WARNING", PYTHONPATH=str(ROOT))
        env.pop("REDIS_URL", None)
        cmd = [sys.executable, "-m", "server", "--host", "127.0.0.1", "--port", str(port),
               "--redis-url", embedded.url, "--key-prefix", f"ovl-{run_id}:",
               "--node-id", f"ovl{run_id}", "--trusted-proxies", "127.0.0.1",
               "--scrypt-n", "2", "--scrypt-r", "1", "--decision-time", "3600",
               "--grace-period", "3600", "--rate-limit", "100000", "--rate-burst", "100000",
               "--max-open-tables", str(max(10_000, 4 * games)), "--http-rate-limit", "0",
               *load.hardening_args("off"), "--metrics", "1",
               *([] if door else DOOR_OFF)]
        with open(work / "server.log", "wb") as log:
            server = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log,
                                      stderr=subprocess.STDOUT)
        load.wait_http(f"http://127.0.0.1:{port}/healthz", 30, server)
        http, ws_url = f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}/ws"
        pool = Pool(args.clients, args.seed)
        shares = load.split(games, args.clients)
        names = [[(f"o{run_id}w{w}g{g}a", f"o{run_id}w{w}g{g}b") for g in range(n)]
                 for w, n in enumerate(shares)]
        pool.call("register", [{"http": http, "names": names[w], "guests": 0}
                               for w in range(args.clients)], timeout=600)
        pool.call("games_connect", {"url": ws_url, "fmt": "msgpack", "protocol": 2,
                                    "silence_timeout": 10.0}, timeout=300)
        start = time.monotonic() + 0.5
        times = {"start": start, "measure_from": start + args.warmup,
                 "measure_to": start + args.warmup + args.duration}
        times["end"] = times["measure_to"] + 1.0
        poll = ReadyPoll(http + "/readyz").start()
        if args.reads:
            flood = ReadFlood(http, args.reads).start()
        for conn in pool.conns:
            conn.send({"op": "games_run", "args": dict(times, think=args.think,
                                                       think_max=args.think_max,
                                                       ramp=args.ramp)})
        redis_pids = [] if embedded.pid is None else [embedded.pid]
        spent = load.measure_window({"server": [server.pid], "clients": pool.pids,
                                     "redis": redis_pids},
                                    times["measure_from"], times["measure_to"])
        reads = flood.figures(times["measure_from"], times["measure_to"]) \
            if flood is not None else None
        replies = load.collect(pool, "games_run", args.duration + 180)
        moves = [rt for r in replies for rt in r["moves"]]
        refused: Counter[str] = Counter()
        admitted: Counter[str] = Counter()
        errors: Counter[str] = Counter()
        for r in replies:
            refused.update(r["refused"])
            admitted.update(r["admitted"])
            errors.update(r["errors"])
        asked = sum(refused.values()) + sum(admitted.values())
        return {
            "games": games, "door": door, "think": [args.think, args.think_max],
            "moves": len(moves), "moves_per_second": len(moves) / spent["wall"],
            "move_p50_ms": load.ms(load.percentile(moves, 0.5)),
            "move_p99_ms": load.ms(load.percentile(moves, 0.99)),
            "move_max_ms": load.ms(max(moves) if moves else None),
            "server_cpu_share": spent["server"] / spent["wall"],
            "clients_cpu_share": spent["clients"] / spent["wall"],
            "redis_cpu_share": spent["redis"] / spent["wall"],
            "games_started": sum(r["games_started"] for r in replies),
            "games_over": sum(r["games_over"] for r in replies),
            "table_requests": asked, "refused": dict(refused),
            "refused_share": sum(refused.values()) / asked if asked else 0.0,
            "busy_share": poll.busy_share(times["measure_from"], times["measure_to"]),
            "errors": dict(errors),
            "reads": reads,
            "load_average": os.getloadavg(),
            "server_log_tail": load.tail(work / "server.log"),
        }
    finally:
        if flood is not None:
            flood.stop()
        if poll is not None:
            poll.stop()
        if pool is not None:
            pool.close()
        if server is not None and server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        embedded.stop()


def line(r: dict[str, Any]) -> str:
    def f(value: float | None, digits: int = 1) -> str:
        return "-" if value is None else f"{value:,.{digits}f}"

    busy, reads = r["busy_share"], r["reads"]
    extra = "" if not reads else (
        f"\n       reads {reads['reads_per_second']:g}/s: served {reads['served']} "
        f"(p50 {f(reads['served_p50_ms'])} p99 {f(reads['served_p99_ms'])} ms), refused busy "
        f"{reads['refused_busy']}, failed {reads['failed']}, skipped {reads['skipped']}")
    return (f"{r['games']:>5} games  door {'on ' if r['door'] else 'off'}  "
            f"move p50 {f(r['move_p50_ms'])} p99 {f(r['move_p99_ms'])} "
            f"max {f(r['move_max_ms'], 0)} ms  {f(r['moves_per_second'], 0)} moves/s  "
            f"node CPU {r['server_cpu_share']:.0%}  clients {r['clients_cpu_share']:.0%}  "
            f"refused {r['refused_share']:.0%} of {r['table_requests']}  "
            f"busy {'-' if busy is None else f'{busy:.0%}'}  started {r['games_started']}  "
            f"load {r['load_average'][0]:.1f}{extra}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacity", type=int, default=None,
                        help="the node's capacity in games (skips the search)")
    parser.add_argument("--search", default=None, metavar="N,N,...",
                        help="concurrent games tried, door off: the capacity is the most "
                             "whose move p99 is under 50 ms")
    parser.add_argument("--probe", type=int, default=20,
                        help="without --search: the games of the door-off run whose CPU "
                             "per game gives the capacity (75%% of a core)")
    parser.add_argument("--factors", default="1,1.5,2",
                        help="offered loads, times the capacity (each door off, then on)")
    parser.add_argument("--clients", type=int, default=2, help="client processes")
    parser.add_argument("--think", type=float, default=0.2)
    parser.add_argument("--think-max", type=float, default=0.6)
    parser.add_argument("--warmup", type=float, default=30.0)
    parser.add_argument("--duration", type=float, default=40.0)
    parser.add_argument("--ramp", type=float, default=15.0,
                        help="seconds over which the pairs' first tables are opened")
    parser.add_argument("--reads", type=float, default=0.0,
                        help="also this many reads a second of a finished game's record "
                             "(GET /api/games/{id}: costly for the node, cheap for the "
                             "reader) from the first finished game on")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", default=None, metavar="FILE", help="write every figure")
    args = parser.parse_args(argv)
    random.seed(args.seed)
    results: list[dict[str, Any]] = []

    def one(games: int, door: bool) -> dict[str, Any]:
        r = run_once(args, games, door)
        results.append(r)
        print(line(r), flush=True)
        if args.json:  # after every run: a long series stopped half-way keeps what it has
            Path(args.json).write_text(json.dumps({"capacity": capacity, "runs": results},
                                                  indent=2))
        return r

    capacity: int | None = args.capacity
    if capacity is None and args.search is None:
        r = one(args.probe, door=False)
        capacity = round(args.probe * load.CAPACITY_BUSY / max(r["server_cpu_share"], 1e-6))
        print(f"capacity: {capacity} games (75% of a core at {r['server_cpu_share']:.1%} for "
              f"{args.probe} games, door off, think {args.think}-{args.think_max} s)",
              flush=True)
    elif capacity is None:
        capacity = 0
        for games in (int(x) for x in args.search.split(",")):
            r = one(games, door=False)
            if r["move_p99_ms"] is None or r["move_p99_ms"] >= TARGET_P99_MS:
                break
            capacity = games
        print(f"capacity: {capacity} games (move p99 < {TARGET_P99_MS:.0f} ms, door off, "
              f"think {args.think}-{args.think_max} s)", flush=True)
        if capacity == 0:
            return 1
    for factor in (float(x) for x in args.factors.split(",")):
        games = round(capacity * factor)
        one(games, door=False)
        one(games, door=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
