"""The busy-node scenario, "a busy node is never taken for a dead one": two nodes on one Redis
with live paced games, and heavy work offered to one of them (``n1``), each load alone and
then all together. Shared by ``test_busy_not_dead.py`` (the suite's sizes) and
``bench/busy_node.py`` (the issue's sizes, by hand).

**The world.** ``n1`` and ``n2`` run the server's defaults (message rate, HTTP rate,
ownership timings, per-address limits, computer workers), except ``--trusted-proxies`` so
that each client has its own address. A third node, ``setup``, with the limits off and a
high chat rate, only prepares data: the finished game with ``chat_lines`` chat lines (a
large record, ~1.9 MB with 1,000 lines) whose record and review the loads ask for, and the
accounts of the seated players. It stays up, idle, so that nobody is gone.

**Paced games.** ``paced_tables`` competitive tables, two on each node, half of them with one
player connected to the other node (the table crosses nodes): a decision every ``think``
seconds, a new table when a game ends. Every seated player pings the node through its own
socket every ``ping_every`` seconds (protocol ``ping`` with an ``id``: the ``pong`` carries
its ``ref``).

**The loads** (``busy_loads.py``, one process each, aimed at ``n1``): ``records``,
``reviews``, ``flood``, ``overload``.

**What is watched**, each phase apart: the owner of every paced table in Redis (a change is
a takeover), the nodes' logs ("is gone", "heartbeat had run out", "Redis away"), the
``held`` and ``unavailable`` frames the seated players get while the test's own Redis
client is answered, every ping's round trip, ``n1``'s resident memory (sampled) and CPU.

:func:`violations` lists what breaks the issue's requirements: a takeover from a live node,
a node declared gone, ``held`` (or a move refused ``unavailable``) while Redis answers, the
seated players' ping p99 at or above 250 ms, a lost seated socket, ``n1``'s memory still
growing in the second half of a sustained load (flood, overload) by more than
``LEVEL_ALLOWANCE_MIB``, and a refusal without ``busy``/``rate_limited`` and
``retry_after`` (HTTP: 429/503 with ``Retry-After``) or a failed request.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import random
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import redis.asyncio as aioredis
from nodes import (
    Cluster,
    Node,
    Player,
    is_over,
    node_env,
    play_to_end,
    seat_two,
    step,
)

from server.client import register as library_register
from server.client.connection import ClientError, ConnectionLost, RequestFailed, RequestTimeout

HERE = Path(__file__).resolve().parent
PING_P99_LIMIT = 0.250
"""The issue's requirement: seated players' ping p99 under 250 ms."""
LEVEL_ALLOWANCE_MIB = 10.0
"""Growth of ``n1``'s resident memory allowed over the second half of a sustained load."""
GONE_PATTERNS = ("is gone", "heartbeat had run out")
HELD_PATTERNS = ("Redis away",)

DEFAULTS: dict[str, Any] = {
    "limits": None, "rate_limit": None, "rate_burst": None, "heartbeat": None,
    "bot_workers": None, "lease_ttl": None, "lease_renew": None, "takeover_scan": None,
    "takeover_allowance": None, "forward_timeout": None,
}
"""Flags of the harness's base set taken back to the server's defaults on n1 and n2 (a
``None`` flag is not passed)."""
SETUP_FLAGS: dict[str, Any] = {"chat_rate": 1_000_000, "chat_window": 1}
PHASES: dict[str, tuple[str, ...]] = {
    "flood": ("flood",), "overload": ("overload",), "reviews": ("reviews",),
    "records": ("records",), "together": ("records", "reviews", "flood", "overload"),
}
"""The phases in their order: the sustained loads first, while the node's heap has not been
grown by the large reads (memory freed by those would hide a leak's growth)."""
ALL_PHASES: dict[str, tuple[str, ...]] = {
    **PHASES, "mats": ("mats",), "reviews_cached": ("reviews_cached",)}
"""With the bench's extra phases: ``mats`` (the record's ``.mat``, ``record_reads`` at once
from one address) and ``reviews_cached`` (the reviews again, of the game the first
``reviews`` phase reviewed)."""
SUSTAINED = frozenset({"flood", "overload"})


@dataclass(frozen=True)
class Scale:
    name: str
    record_reads: int  # concurrent GET /api/games/{id} from one address
    reviews: int  # concurrent GET /api/games/{id}/review
    flood_sockets: int
    flood_rate: float  # messages a second per flood socket (the default limit is 30)
    overload_games: int  # new games offered to n1, played flat out
    overload_rate: float  # new games a second
    overload_think: float
    load_seconds: float  # how long the flood and the overload last
    chat_lines: int = 1000
    paced_tables: int = 4
    think: tuple[float, float] = (0.3, 0.8)
    ping_every: float = 0.2
    settle: float = 1.0  # measured before and after each load


SUITE = Scale("suite", record_reads=100, reviews=30, flood_sockets=24, flood_rate=28.0,
              overload_games=16, overload_rate=4.0, overload_think=0.04, load_seconds=4.0,
              settle=0.5)
"""Small enough for the suite on two shared cores (the whole test well under a minute)."""
FULL = Scale("full", record_reads=1000, reviews=100, flood_sockets=64, flood_rate=28.0,
             overload_games=300, overload_rate=10.0, overload_think=0.05, load_seconds=30.0,
             think=(2.0, 5.0), ping_every=0.5, settle=3.0)
"""The issue's sizes (bench/busy_node.py)."""


@dataclass
class PhaseRecord:
    name: str
    pings: list[float] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    held: int = 0
    unavailable: int = 0
    refusals: Counter[str] = field(default_factory=Counter)  # seated players' errors
    redis_failures: int = 0
    rss: list[tuple[float, float]] = field(default_factory=list)  # (t, MiB) of n1
    rss_n2: list[float] = field(default_factory=list)
    takeovers: list[str] = field(default_factory=list)
    paced_errors: list[str] = field(default_factory=list)
    log_lines: dict[str, list[str]] = field(default_factory=dict)
    loads: dict[str, dict[str, Any]] = field(default_factory=dict)
    load_window: tuple[float, float] = (0.0, 0.0)
    cpu: dict[str, float] = field(default_factory=dict)
    moves: int = 0

    def figures(self) -> dict[str, Any]:
        pings = sorted(self.pings)

        def q(share: float) -> float | None:
            if not pings:
                return None
            return round(pings[min(len(pings) - 1, int(share * len(pings)))] * 1000, 1)

        rss = [m for _, m in self.rss]
        figures: dict[str, Any] = {
            "phase": self.name, "load_s": round(self.load_window[1] - self.load_window[0], 1),
            "pings": len(pings), "ping_p50_ms": q(0.5),
            "ping_p99_ms": q(0.99), "ping_max_ms": q(1.0), "lost_sockets": len(self.lost),
            "takeovers": len(self.takeovers), "held": self.held,
            "unavailable": self.unavailable, "redis_failures": self.redis_failures,
            "paced_moves": self.moves, "paced_errors": len(self.paced_errors),
            "gone_lines": len(self.log_lines.get("gone", [])),
            "held_lines": len(self.log_lines.get("held", [])),
            "rss_n1_mib": {"before": rss[0] if rss else None, "peak": max(rss, default=None),
                           "after": rss[-1] if rss else None,
                           "second_half_growth": self.second_half_growth()},
            "rss_n2_mib": {"before": self.rss_n2[0] if self.rss_n2 else None,
                           "peak": max(self.rss_n2, default=None)},
            "cpu_s": {k: round(v, 2) for k, v in self.cpu.items()},
            "refusals": dict(self.refusals),
        }
        for kind, load in self.loads.items():
            figures[kind] = {k: v for k, v in load.items() if k != "bad"}
            count = load.get("requests")
            if count and "n1" in self.cpu and len(self.loads) == 1:
                figures[kind]["n1_cpu_ms_per_request"] = round(
                    self.cpu["n1"] * 1000 / count, 2)
        return figures

    def second_half_growth(self) -> float | None:
        """MiB n1 grew over the second half of the sustained load's active span (the
        flood's, else the overload's; Unix times from the load process)."""
        spans = [load["active"] for kind in ("flood", "overload")
                 if (load := self.loads.get(kind)) and load.get("active")]
        if not spans:
            return None
        start, end = spans[0]
        mid = start + (end - start) / 2
        half = [m for t, m in self.rss if mid <= t <= end]
        if len(half) < 2:
            return None
        return round(half[-1] - half[0], 1)


@dataclass
class World:
    cluster: Cluster
    redis: aioredis.Redis
    scale: Scale
    n1: Node
    n2: Node
    setup: Node
    game_id: str
    record_bytes: int
    unreviewed: list[str]  # finished games never reviewed: one for each phase of reviews
    pairs: list[tuple[Player, Player, Node]] = field(default_factory=list)
    tables: dict[int, str] = field(default_factory=dict)
    current: PhaseRecord = field(default_factory=lambda: PhaseRecord("setup"))
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @property
    def players(self) -> list[Player]:
        return [p for a, b, _ in self.pairs for p in (a, b)]


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def chat_text(i: int) -> str:
    """A chat line of 300 characters, most of them outside ASCII (as chat in Greek or
    Russian is): about 1.8 KB once escaped in the record's JSON."""
    words = ("καλό", "ζάρι", "διπλό", "παίρνω", "γκάμον", "χαρτί", "привет", "дубль",
             "беру", "марс", "хорошо", "игра", "ход", "🎲", "gg", "nice")
    rng = random.Random(i)
    text = f"{i}:"
    while len(text) < 300:
        text += " " + rng.choice(words)
    return text[:300]


# --- setting the world up ---------------------------------------------------------------------


async def large_game(cluster: Cluster, setup: Node, lines: int, name: str) -> str:
    """A finished competitive game on ``setup`` with ``lines`` chat lines; its id."""
    a = await cluster.player(f"{name}_a", setup)
    b = await cluster.player(f"{name}_b", setup)
    try:
        table = await seat_two(a, b)
        for start in range(0, lines, 50):
            await asyncio.gather(*(
                (a if i % 2 else b).request({"type": "chat", "table": table,
                                             "text": chat_text(i)})
                for i in range(start, min(lines, start + 50))))
        over = await play_to_end([a, b], table)
        return str(over["game_id"])
    finally:
        await asyncio.gather(a.close(), b.close())


async def record_size(node: Node, game_id: str) -> int:
    """Bytes of the finished game's record (waits until it is written)."""
    async with aiohttp.ClientSession() as http:
        for _ in range(200):
            async with http.get(f"{node.http}/api/games/{game_id}") as resp:
                body = await resp.read()
                if resp.status == 200:
                    return len(body)
            await asyncio.sleep(0.05)
    raise AssertionError(f"no record of {game_id}")


async def build(cluster: Cluster, redis: aioredis.Redis, scale: Scale,
                phases: list[str]) -> World:
    """Start the nodes, make the large record (and a game never reviewed for each phase that
    reviews) when a load needs them, seat the paced games."""
    loads = {kind for name in phases for kind in ALL_PHASES[name]}
    started = await asyncio.gather(cluster.start("n1", **DEFAULTS),
                                   cluster.start("n2", **DEFAULTS),
                                   cluster.start("setup", **SETUP_FLAGS))
    n1, n2, setup = started
    game_id, size, fresh = "", 0, []
    if loads & {"records", "mats", "reviews", "reviews_cached"}:
        game_id = await large_game(cluster, setup, scale.chat_lines, "chatty")
        size = await record_size(n1, game_id)
    if "reviews" in loads:  # one game never reviewed for each phase that reviews
        fresh = [game_id, *[await large_game(cluster, setup, 0, f"quiet{i}")
                            for i in range(sum("reviews" in ALL_PHASES[p] for p in phases) - 1)]]
    world = World(cluster, redis, scale, n1, n2, setup, game_id, size, fresh)
    tokens = await asyncio.gather(*(library_register(setup.ws_url, f"seated{i}",
                                                     "correct horse")
                                    for i in range(2 * scale.paced_tables)))
    for i in range(scale.paced_tables):
        owner, other = (n1, n2) if i % 2 == 0 else (n2, n1)
        joiner_node = other if (i // 2) % 2 == 1 else owner  # every other pair crosses
        a = await Player.open(owner, tokens[2 * i])
        b = await Player.open(joiner_node, tokens[2 * i + 1])
        for p in (a, b):
            p.on_frame = functools.partial(observe_frame, world)
        world.pairs.append((a, b, owner))
        world.tables[i] = await seat_two(a, b)
    return world


def observe_frame(world: World, message: dict[str, Any]) -> None:
    kind = message.get("type")
    if kind == "held":
        world.current.held += 1
    elif kind == "error":
        code = str(message.get("code"))
        world.current.refusals[code] += 1
        if code == "unavailable":
            world.current.unavailable += 1


# --- the live part: paced games, pings, samples -----------------------------------------------


async def pace(world: World, i: int) -> None:
    a, b, _ = world.pairs[i]
    rng = random.Random(i)
    while not world.stop.is_set():
        await asyncio.sleep(rng.uniform(*world.scale.think))
        table = world.tables[i]
        try:
            if is_over([a, b], table):
                world.tables[i] = await seat_two(a, b)
                continue
            if await step([a, b], table, retry_for=5.0):
                world.current.moves += 1
        except (RequestFailed, RequestTimeout, ConnectionLost, AssertionError,
                OSError) as exc:
            world.current.paced_errors.append(f"table {table}: {exc!r}")
            await asyncio.sleep(0.5)  # a lost socket is opened again by its pinger


async def ping(world: World, player: Player) -> None:
    """Ping through ``player``'s socket every ``ping_every``; a lost socket is recorded and
    opened again (the library syncs its tables), so later phases still measure it."""
    loop = asyncio.get_running_loop()
    while not world.stop.is_set():
        start = loop.time()
        try:
            await player.request({"type": "ping"}, timeout=10.0)
            world.current.pings.append(loop.time() - start)
        except RequestTimeout:
            world.current.pings.append(loop.time() - start)
        except (ConnectionLost, OSError) as exc:
            world.current.lost.append(f"{player.player}: {exc!r}")
            await reopen(world, player)
        except RequestFailed as exc:  # rate_limited: the pings are part of the message rate
            world.current.refusals["ping " + exc.code] += 1
        await asyncio.sleep(world.scale.ping_every)


async def reopen(world: World, player: Player) -> None:
    while not world.stop.is_set():
        await asyncio.sleep(1.0)
        with contextlib.suppress(ClientError, OSError):  # refused (503) or lost again
            await player.reconnect()
            return


async def owner_of(world: World, table: str) -> str:
    node = await world.redis.hget(  # type: ignore[misc]
        world.cluster.key(f"{{t:{table}}}:lease"), "node")
    return "" if node is None else node.decode()


async def sample(world: World) -> None:
    """Every 0.25 s: n1's and n2's memory, a Redis PING, the paced tables' owners."""
    owners: dict[str, str] = {}
    while not world.stop.is_set():
        rec = world.current
        with contextlib.suppress(OSError):
            rec.rss.append((time.time(), rss_mib(world.n1.pid)))
            rec.rss_n2.append(rss_mib(world.n2.pid))
        try:
            async with asyncio.timeout(1.0):
                await world.redis.ping()
        except Exception:
            rec.redis_failures += 1
        for i, (_, _, first_owner) in enumerate(world.pairs):
            table = world.tables[i]
            with contextlib.suppress(Exception):
                async with asyncio.timeout(1.0):
                    now = await owner_of(world, table)
                was = owners.setdefault(table, first_owner.name)
                if now and now != was:
                    rec.takeovers.append(f"table {table} taken over: {was} -> {now}")
                    owners[table] = now
        await asyncio.sleep(0.25)


# --- one phase --------------------------------------------------------------------------------


def load_args(world: World, kind: str) -> list[str]:
    s = world.scale
    if kind == "reviews_cached":
        return [str(HERE / "busy_loads.py"), "reviews", "--http", world.n1.http,
                f"--game={world.game_id}", "--count", str(s.reviews)]
    common = [str(HERE / "busy_loads.py"), kind, "--http", world.n1.http]
    if kind in ("records", "mats"):
        return [*common, f"--game={world.game_id}", "--count", str(s.record_reads)]
    if kind == "reviews":
        game = world.unreviewed.pop(0) if len(world.unreviewed) > 1 else world.unreviewed[0]
        # ``--game=`` joined: an id may start with "-" (the ids' alphabet has it).
        return [*common, f"--game={game}", "--count", str(s.reviews)]
    if kind == "flood":
        return [*common, "--sockets", str(s.flood_sockets), "--rate", str(s.flood_rate),
                "--seconds", str(s.load_seconds)]
    return [*common, "--games", str(s.overload_games), "--arrival-rate", str(s.overload_rate),
            "--think", str(s.overload_think), "--seconds", str(s.load_seconds)]


async def run_load(world: World, kind: str) -> dict[str, Any]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, *load_args(world, kind), env=node_env(), cwd=world.cluster.root,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        async with asyncio.timeout(world.scale.load_seconds * 4 + 180):
            out, err = await proc.communicate()
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return {"bad": [f"{kind}: the load did not end"], "bad_count": 1}
    if proc.returncode != 0:
        return {"bad": [f"{kind} exited {proc.returncode}: {err.decode()[-2000:]}"],
                "bad_count": 1}
    return dict(json.loads(out.decode().strip().splitlines()[-1]))


def new_log_lines(node: Node, offset: int) -> list[str]:
    return node.log()[offset:].splitlines()


async def run_phase(world: World, name: str) -> PhaseRecord:
    rec = PhaseRecord(name)
    world.current = rec
    nodes = [n for n in world.cluster.nodes.values() if n.running]
    offsets = {n.name: len(n.log()) for n in nodes}
    loop = asyncio.get_running_loop()
    await asyncio.sleep(world.scale.settle)
    cpu = {n.name: n.cpu_seconds() for n in (world.n1, world.n2)}
    start = loop.time()
    results = await asyncio.gather(*(run_load(world, kind) for kind in ALL_PHASES[name]))
    end = loop.time()
    rec.cpu = {n.name: n.cpu_seconds() - cpu[n.name] for n in (world.n1, world.n2)}
    rec.load_window = (start, end)
    rec.loads = dict(zip(ALL_PHASES[name], results, strict=True))
    await asyncio.sleep(world.scale.settle)
    for n in nodes:
        lines = new_log_lines(n, offsets[n.name])
        for key, patterns in (("gone", GONE_PATTERNS), ("held", HELD_PATTERNS)):
            rec.log_lines.setdefault(key, []).extend(
                f"{n.name}: {line}" for line in lines
                if any(p.lower() in line.lower() for p in patterns))
    return rec


async def run(world: World, phases: list[str], *, keep_going: bool = False) -> list[PhaseRecord]:
    """Each phase in turn, with the paced games, pings and samples running throughout (and
    still running afterwards with ``keep_going``: the caller stops ``world.tasks``)."""
    world.tasks = [asyncio.create_task(pace(world, i)) for i in range(len(world.pairs))]
    world.tasks += [asyncio.create_task(ping(world, p)) for p in world.players]
    world.tasks.append(asyncio.create_task(sample(world)))
    records = []
    try:
        for name in phases:
            records.append(await run_phase(world, name))
    finally:
        if not keep_going:
            world.stop.set()
            for task in world.tasks:
                task.cancel()
            await asyncio.gather(*world.tasks, return_exceptions=True)
    world.current = PhaseRecord("after")
    return records


def violations(rec: PhaseRecord) -> list[str]:
    """What in this phase breaks the issue's requirements."""
    out: list[str] = []
    p = f"[{rec.name}]"
    out += [f"{p} {t}" for t in rec.takeovers]
    out += [f"{p} node declared gone: {line}" for line in rec.log_lines.get("gone", [])]
    if rec.redis_failures == 0:
        if rec.held:
            out.append(f"{p} {rec.held} held frames sent to seated players while Redis "
                       "answered")
        if rec.unavailable:
            out.append(f"{p} {rec.unavailable} unavailable refusals to seated players while "
                       "Redis answered")
        out += [f"{p} held while Redis answered: {line}"
                for line in rec.log_lines.get("held", [])]
    if not rec.pings:
        out.append(f"{p} no ping answered")
    else:
        pings = sorted(rec.pings)
        p99 = pings[min(len(pings) - 1, int(0.99 * len(pings)))]
        if p99 >= PING_P99_LIMIT:
            out.append(f"{p} seated players' ping p99 {p99 * 1000:.0f} ms >= "
                       f"{PING_P99_LIMIT * 1000:.0f} ms (max {pings[-1] * 1000:.0f} ms, "
                       f"{len(pings)} pings)")
    out += [f"{p} seated socket lost: {lost}" for lost in rec.lost]
    out += [f"{p} paced game: {err}" for err in rec.paced_errors[:5]]
    if SUSTAINED & set(ALL_PHASES[rec.name]):
        growth = rec.second_half_growth()
        if growth is not None and growth > LEVEL_ALLOWANCE_MIB:
            out.append(f"{p} n1's memory still grew {growth:.1f} MiB over the second half "
                       f"of the load (allowed {LEVEL_ALLOWANCE_MIB:.1f} MiB)")
    for kind, load in rec.loads.items():
        out += [f"{p} {kind}: {bad}" for bad in load.get("bad", [])[:5]]
        if load.get("bad_count", 0) > 5:
            out.append(f"{p} {kind}: ... {load['bad_count']} in all")
    return out


def summary(records: list[PhaseRecord]) -> str:
    return "\n".join(json.dumps(r.figures()) for r in records)
