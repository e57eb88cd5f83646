"""A few real server nodes (``python -m server`` processes) on loopback, one Redis, and
players that follow whichever node is alive.

:class:`Cluster` starts node processes on free ports with the test's key prefix (every key
under it is deleted by the ``redis_client`` fixture), the per-address limits off and
X-Forwarded-For believed from 127.0.0.1 (so each player has its own address and games are
rated), waits for ``/readyz``, and signals them: :meth:`Node.kill` (SIGKILL),
:meth:`Node.pause` / :meth:`Node.resume` (SIGSTOP / SIGCONT), :meth:`Node.terminate`
(SIGTERM). The ownership timings (``--lease-ttl``, ``--lease-renew``, ``--takeover-scan``,
``--takeover-allowance``, ``--forward-timeout``) are passed short, but only when
``python -m server --help`` lists the flag, so the harness runs against any version.

:class:`Player` is the client library's :class:`~server.client.Client` with reconnects under
the test's control (:meth:`Player.switch` moves it to another node and ``sync``\\ s its
tables) and a record of every versioned event it was handed, to check that the versions it
saw are contiguous and that no version came twice with different contents.

The dice are the server's own (no process flag scripts them): the games are played with
legal moves (the first offered play, every double taken) until they end.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import msgpack
import redis.asyncio as aioredis

from server.client import Client, Format
from server.client import default_decision as library_default_decision
from server.client import register as library_register
from server.client.connection import (
    ConnectionLost,
    RequestFailed,
    RequestTimeout,
    TableView,
)

ROOT = Path(__file__).resolve().parents[2]
"""The repository these tests belong to: its ``server`` package is the one the nodes run."""

TIMEOUT = 10.0
LEASE_TTL = 1.5
LEASE_RENEW = 0.5
TAKEOVER_SCAN = 0.25
TAKEOVER_ALLOWANCE = 10.0
FORWARD_TIMEOUT = 2.0
TAKEOVER_BOUND = LEASE_TTL + TAKEOVER_SCAN + 8.0
"""How long a test waits for a table to be served again after its owner died: the documented
bound (lease_ttl + takeover_scan after the owner's last renewal) plus room for a loaded
machine. Only a timeout: no test asserts a duration."""

OWNERSHIP_FLAGS: dict[str, float] = {
    "--lease-ttl": LEASE_TTL,
    "--lease-renew": LEASE_RENEW,
    "--takeover-scan": TAKEOVER_SCAN,
    "--takeover-allowance": TAKEOVER_ALLOWANCE,
    "--forward-timeout": FORWARD_TIMEOUT,
}
"""Short ownership timings, passed to a node only when its ``--help`` lists the flag."""

BASE_FLAGS: dict[str, Any] = {
    "--trusted-proxies": "127.0.0.1",
    "--limits": "0",
    "--scrypt-n": 2,
    "--scrypt-r": 1,
    "--decision-time": 30,
    "--grace-period": 30,
    "--heartbeat": 5,
    "--shutdown-timeout": 5,
    "--finished-linger": 5,
    "--bot-workers": 0,
    "--matchmaking-pass-interval": 0.2,
    "--matchmaking-hold": 0.1,
}

STALL_SIGNAL = signal.SIGUSR2
STALL_HOOK = """\
import os, runpy, signal, sys, time
def _stall(signum, frame):
    end = time.monotonic() + float(os.environ["TABLE42_TEST_STALL"])
    while time.monotonic() < end:
        pass
signal.signal(signal.SIGUSR2, _stall)
runpy.run_module("server", run_name="__main__", alter_sys=True)
"""
"""How a node's event loop is made busy in a test (``Cluster.start(stall=...)``): the process
runs ``python -m server`` behind a SIGUSR2 handler that keeps the main thread (the event
loop) busy in Python for ``TABLE42_TEST_STALL`` seconds: a long request, as far as the node's
other threads can tell (SIGSTOP would stop them too). Test-only: nothing in the server."""

_addresses = itertools.count(1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def node_env(root: Path = ROOT) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(root), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    env.setdefault("TABLE42_LOG_LEVEL", "WARNING")
    env.setdefault("TABLE42_NO_MYPYC", "1")
    return env


@functools.cache
def server_flags(root: Path = ROOT) -> frozenset[str]:
    """Every ``--flag`` that ``python -m server --help`` of ``root`` lists."""
    out = subprocess.run(
        [sys.executable, "-m", "server", "--help"], env=node_env(root), cwd=root,
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout
    return frozenset(word.strip("[],") for word in out.split() if word.startswith("--"))


def has_flag(flag: str, root: Path = ROOT) -> bool:
    return flag in server_flags(root)


@dataclass
class Node:
    """One ``python -m server`` process."""

    name: str
    port: int
    proc: asyncio.subprocess.Process
    log_path: Path

    @property
    def pid(self) -> int:
        return int(self.proc.pid)

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    @property
    def running(self) -> bool:
        return self.proc.returncode is None

    def signal(self, signum: int) -> None:
        if self.proc.returncode is None:
            self.proc.send_signal(signum)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)

    def pause(self) -> None:
        self.signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.signal(signal.SIGCONT)

    def terminate(self) -> None:
        self.signal(signal.SIGTERM)

    def stall(self) -> None:
        """Keep the node's event loop busy for the seconds it was started with
        (``Cluster.start(stall=...)``, :data:`STALL_HOOK`)."""
        self.signal(STALL_SIGNAL)

    async def wait(self, timeout: float = 30.0) -> int:
        return await asyncio.wait_for(self.proc.wait(), timeout)

    def cpu_seconds(self) -> float:
        """User + system CPU time of the process so far (``/proc/<pid>/stat``)."""
        return cpu_seconds(self.pid)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2:].split()
    # fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Cluster:
    """Node processes sharing one Redis under one key prefix."""

    def __init__(self, redis_url: str, key_prefix: str, log_dir: Path, *,
                 root: Path = ROOT, **flags: Any) -> None:
        self.redis_url = redis_url
        self.prefix = key_prefix
        self.log_dir = log_dir
        self.root = root
        self.flags = flags  # extra settings for every node: decision_time=3 -> --decision-time 3
        self.nodes: dict[str, Node] = {}
        self.closed = False
        self._restarts = itertools.count(1)

    def args(self, name: str, port: int, **flags: Any) -> list[str]:
        values: dict[str, Any] = dict(BASE_FLAGS)
        for flag, value in OWNERSHIP_FLAGS.items():
            if has_flag(flag, self.root):
                values[flag] = value
        for key, value in {**self.flags, **flags}.items():
            values["--" + key.replace("_", "-")] = value
        args = ["--redis-url", self.redis_url, "--key-prefix", self.prefix,
                "--node-id", name, "--host", "127.0.0.1", "--port", str(port)]
        for flag, value in values.items():
            if value is not None:
                args += [flag, str(value)]
        return args

    async def start(self, name: str, *, stall: float | None = None, **flags: Any) -> Node:
        """Start node ``name`` (again, if it ran before) and wait until it is ready;
        ``stall``: seconds :meth:`Node.stall` keeps its event loop busy."""
        assert not self.closed, "the cluster is closed"
        port = free_port()
        log_path = self.log_dir / f"{name}-{next(self._restarts)}.log"
        log = open(log_path, "wb")  # noqa: SIM115 - the child keeps it open
        env = node_env(self.root)
        command = ["-m", "server"]
        if stall is not None:
            env["TABLE42_TEST_STALL"] = str(stall)
            command = ["-c", STALL_HOOK]
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, *command, *self.args(name, port, **flags),
                env=env, cwd=self.root, stdout=log, stderr=subprocess.STDOUT,
            )
        finally:
            log.close()
        node = Node(name, port, proc, log_path)
        self.nodes[name] = node
        if self.closed:  # closed while this one was starting
            node.kill()
        await wait_ready(node)
        return node

    async def start_many(self, names: Iterable[str], **flags: Any) -> list[Node]:
        return list(await asyncio.gather(*(self.start(n, **flags) for n in names)))

    def alive(self, *, besides: Node | None = None) -> list[Node]:
        return [n for n in self.nodes.values() if n.running and n is not besides]

    async def restart(self, node: Node, **flags: Any) -> Node:
        """SIGTERM ``node``, wait for it to exit, start it again under the same name."""
        node.terminate()
        try:
            await node.wait(30.0)
        except TimeoutError:
            raise AssertionError(f"node {node.name} still running 30 s after SIGTERM:\n"
                                 + node.log()[-4000:]) from None
        return await self.start(node.name, **flags)

    async def close(self) -> None:
        self.closed = True
        for node in self.nodes.values():
            if node.running:
                node.resume()
                node.kill()
        for node in self.nodes.values():
            with contextlib.suppress(Exception):
                await node.wait(10.0)

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-4000:]}"
                         for p in sorted(self.log_dir.glob("*.log")))

    # --- players ---------------------------------------------------------------------------

    async def player(self, name: str, node: Node, **options: Any) -> Player:
        """Register ``name`` (through ``node``) and connect it there from its own address."""
        token = await library_register(node.ws_url, name, "correct horse")
        return await Player.open(node, token, **options)

    # --- Redis -----------------------------------------------------------------------------

    def key(self, suffix: str) -> str:
        return self.prefix + suffix

    async def event_versions(self, redis: aioredis.Redis, table: str) -> list[int]:
        """The ``v`` of every event in the table's Redis log, in list order."""
        raw: list[bytes] = await redis.lrange(  # type: ignore[misc]
            self.key(f"{{t:{table}}}:events"), 0, -1)
        versions = []
        for item in raw:
            event = msgpack.unpackb(item, raw=False)
            versions.append(int(event["v"]))
        return versions

    async def publish(self, redis: aioredis.Redis, node: Node, data: bytes) -> int:
        """Publish raw bytes on ``node``'s bus channel; returns the number of listeners."""
        return int(await redis.publish(self.key(f"node:{node.name}"), data))


async def wait_ready(node: Node, timeout: float = 60.0) -> None:
    """Wait for ``GET /readyz`` to answer 200 (fails with the node's log if it exits)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    async with aiohttp.ClientSession() as http:
        while True:
            if not node.running:
                raise AssertionError(f"node {node.name} exited ({node.proc.returncode}):\n"
                                     + node.log()[-4000:])
            with contextlib.suppress(aiohttp.ClientError, OSError, TimeoutError):
                async with http.get(node.http + "/readyz",
                                    timeout=aiohttp.ClientTimeout(total=2)) as resp:
                    if resp.status == 200:
                        return
            if loop.time() > deadline:
                raise AssertionError(f"node {node.name} not ready:\n{node.log()[-4000:]}")
            await asyncio.sleep(0.05)


async def get_json(node: Node, path: str) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as http, http.get(node.http + path) as resp:
        body = await resp.json() if resp.content_type == "application/json" else {}
        return resp.status, dict(body)


def fingerprint(event: Mapping[str, Any]) -> tuple[Any, ...]:
    """What identifies one versioned event whatever form it came in (live, in a sync)."""
    keys = ("type", "dice", "play", "winner", "reason", "side", "player", "game_no", "cube")
    return tuple(repr(event.get(k)) for k in keys)


class Player(Client):
    """A protocol client whose reconnects the test drives (:meth:`switch`), recording every
    versioned event handed to it: ``delivered[table]`` lists the versions passed on (once
    each, in order), ``conflicts`` every version that came twice with different contents.
    Catching up is the library's: after a reconnect or a gap the server left (an event or a
    ``resume`` ahead) it syncs, sends a ``sync`` refused while the table changes hands again,
    and never hands on an event past a gap; ``sync_failures`` lists the catch-ups it gave
    up."""

    def __init__(self, url: str, **options: Any) -> None:
        super().__init__(url, **options)
        self.delivered: dict[str, list[int]] = {}
        self.contents: dict[tuple[str, int], tuple[Any, ...]] = {}
        self.conflicts: list[tuple[str, int, tuple[Any, ...], tuple[Any, ...]]] = []
        self.on_frame: Callable[[dict[str, Any]], None] | None = None
        self.sync_failures: list[str] = []
        self.from_sync: list[dict[str, Any]] = []
        self._live: set[int] = set()  # id() of each message received (kept in messages)

    @classmethod
    async def open(cls, node: Node, token: str, *, fmt: Format = Format.MSGPACK,
                   address: str | None = None, **options: Any) -> Player:
        n = next(_addresses)
        headers = {"X-Forwarded-For": address or f"10.{n // 250 % 250}.{n % 250}.9"}
        values: dict[str, Any] = {
            "token": token, "fmt": fmt, "headers": headers, "auto_reconnect": False,
            "keep_messages": True, "queue_events": False, "request_timeout": TIMEOUT,
            "sync_retry_for": TAKEOVER_BOUND,
        }
        values.update(options)
        player = cls(node.ws_url, **values)
        await player._open(wait_welcome=True)
        return player

    def _handle(self, message: dict[str, Any]) -> None:
        self._live.add(id(message))
        if self.on_frame is not None:
            self.on_frame(message)
        super()._handle(message)

    def _deliver(self, view: TableView, message: dict[str, Any]) -> None:
        v = message.get("v")
        if isinstance(v, int):
            key = (view.table, v)
            mark = fingerprint(message)
            seen = self.contents.setdefault(key, mark)
            if seen != mark:
                self.conflicts.append((view.table, v, seen, mark))
            if v > view.v:
                self.delivered.setdefault(view.table, []).append(v)
                if id(message) not in self._live:  # handed on from a sync answer
                    message.setdefault("table", view.table)
                    self.from_sync.append(message)
        super()._deliver(view, message)

    def _sync_failed(self, view: TableView, exc: Exception) -> None:
        self.sync_failures.append(f"{view.table}: {exc}")
        super()._sync_failed(view, exc)

    def gaps(self, table: str) -> list[tuple[int, int]]:
        """Each pair of consecutive delivered versions of ``table`` that are not v, v+1."""
        seen = self.delivered.get(table, [])
        return [(a, b) for a, b in itertools.pairwise(seen) if b != a + 1]

    def abort(self) -> None:
        """Drop the socket at once (no closing handshake: the node may be stopped)."""
        ws = self.ws
        if ws is not None:
            with contextlib.suppress(Exception):
                ws.transport.abort()

    async def switch(self, node: Node) -> None:
        """Leave the current node (abruptly) and connect through ``node``; the library then
        ``sync``\\ s every table this player sits at or watches from the last version seen."""
        self.abort()
        if self._reader is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self._reader), 5.0)
        await self.reconnect(node.ws_url)

    def of_type(self, kind: str, table: str | None = None) -> list[dict[str, Any]]:
        """Messages of type ``kind`` received, and events of that type handed on from the
        ``events`` of a sync answer."""
        return [m for m in (*self.messages, *self.from_sync) if m.get("type") == kind
                and (table is None or m.get("table") == table)]

    def latest_state(self, table: str) -> tuple[int, dict[str, Any] | None]:
        view = self.tables.get(table)
        return (0, None) if view is None else (view.v, view.state)


# --- games -----------------------------------------------------------------------------------


def default_decision(game: Mapping[str, Any]) -> dict[str, Any]:
    return dict(library_default_decision(dict(game)))


async def seat_two(a: Player, b: Player) -> str:
    """``a`` opens a Competitive single game (a rated table), ``b`` joins; the table id."""
    answer = await a.request({"type": "create_table", "mode": "competitive",
                              "match_length": 0})
    table = str(answer["table"])
    await b.request({"type": "join", "table": table})
    await wait_until(lambda: all(p.of_type("game_start", table) for p in (a, b)),
                     what="game_start")
    return table


async def wait_until(check: Callable[[], bool], *, timeout: float = TIMEOUT,
                     what: str = "condition", step: float = 0.01) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(step)


def freshest(players: Iterable[Player], table: str) -> dict[str, Any] | None:
    best: tuple[int, dict[str, Any] | None] = (-1, None)
    for p in players:
        v, state = p.latest_state(table)
        if state is not None and v > best[0]:
            best = (v, state)
    return best[1]


def is_over(players: Iterable[Player], table: str) -> bool:
    return any(p.of_type("game_over", table) for p in players)


RETRY_CODES = frozenset({"unavailable", "no_such_table", "not_your_turn", "wrong_phase",
                         "illegal_play", "not_seated", "game_over"})
"""Answers that a stale view or a table changing hands explain: the step is tried again
(with a ``sync`` first), within a deadline."""


async def step(players: list[Player], table: str, *,
               on_lost: Callable[[Player], Awaitable[None]] | None = None,
               retry_for: float = TIMEOUT, pause: float = 0.05) -> bool:
    """Make the one decision the table awaits (through the deciding player's socket); False
    once the game is over. Answers ``unavailable`` (a table being taken over) and lost sockets
    (``on_lost`` moves the player) are retried for ``retry_for`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + retry_for
    while True:
        if is_over(players, table):
            return False
        state = freshest(players, table)
        game = None if state is None else state.get("game")
        if state is None or game is None or state.get("status") != "playing" \
                or game.get("to_act") is None:
            if loop.time() > deadline:
                raise AssertionError(f"table {table}: nobody to act in {state}")
            await asyncio.sleep(0.01)
            continue
        side = int(game["to_act"])
        actor = next((p for p in players if p.side(table) == side), None)
        assert actor is not None, f"nobody sits on side {side}"
        try:
            await actor.request({**default_decision(game), "table": table})
            return True
        except RequestFailed as exc:
            if exc.code not in RETRY_CODES or loop.time() > deadline:
                raise
            # stale view (the other socket is behind) or a table changing hands
            await asyncio.sleep(pause)
            with contextlib.suppress(RequestFailed, RequestTimeout, ConnectionLost):
                await actor.sync(table)
        except (ConnectionLost, RequestTimeout, OSError):
            if loop.time() > deadline:
                raise
            if on_lost is not None and actor.is_closed:
                await on_lost(actor)
            else:
                await asyncio.sleep(pause)


async def play_moves(players: list[Player], table: str, decisions: int, **kw: Any) -> int:
    made = 0
    while made < decisions and await step(players, table, **kw):
        made += 1
    return made


async def play_to_end(players: list[Player], table: str, *, max_decisions: int = 3000,
                      **kw: Any) -> dict[str, Any]:
    for _ in range(max_decisions):
        if not await step(players, table, **kw):
            break
    await wait_until(lambda: all(p.of_type("game_over", table) for p in players),
                     what="game_over at every player")
    return players[0].of_type("game_over", table)[-1]


async def resync(player: Player, table: str, *, timeout: float = TAKEOVER_BOUND) -> dict[str, Any]:
    """``sync`` until the table answers (it may be ``unavailable`` while it changes hands)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            return await player.sync(table)
        except (ConnectionLost, OSError) as exc:
            if player.is_closed:
                raise ConnectionLost(f"{player.player}: socket closed during sync") from exc
            await asyncio.sleep(0.05)
        except (RequestFailed, RequestTimeout) as exc:
            if loop.time() > deadline:
                raise AssertionError(f"{player.player}: no sync of {table} after "
                                     f"{timeout} s: {exc}") from exc
            await asyncio.sleep(0.05)


@dataclass
class Profile:
    games: int
    rating: float | None
    history: list[dict[str, Any]] = field(default_factory=list)


async def profile(node: Node, player: str) -> Profile:
    status, body = await get_json(node, f"/api/players/{player}")
    assert status == 200, (status, body)
    ladder = (body.get("ladders") or {}).get("table42") or {}
    _, hist = await get_json(node, f"/api/players/{player}/history?ladder=table42&limit=50")
    return Profile(int(ladder.get("games") or 0), ladder.get("rating"),
                   list(hist.get("entries") or []))


def rating_events(player: Player, game_id: str) -> list[dict[str, Any]]:
    return [m for m in player.messages if m.get("type") == "rating"
            and m.get("game_id") == game_id]


def monotonic() -> float:
    return time.monotonic()
