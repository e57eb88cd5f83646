"""The embedded store is supervised: when the redis-server that ``python -m server`` runs
without ``REDIS_URL`` dies, it is started again from its append-only file and play goes on;
when it keeps dying the server stops with exit status 3 and one line saying why.

Real processes and real redis-servers, each on a temporary data folder (and a temporary
HOME); every redis-server killed here is one of these tests' own, never the shared one."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import IO, Any

import aiohttp
import pytest
from hardening_helpers import ROOT, free_port

import server.embedded_redis as embedded_redis
from server.bot.player import BotPlayer, GameLog, think_here
from server.bot.strategy import Level
from server.client import Client, ClientError
from server.embedded_redis import EmbeddedRedis, _command, server_pid
from server.exits import EXIT_STORE_FAILED
from server.store_supervisor import StoreSupervisor

# --- helpers ---------------------------------------------------------------------------------


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """A data folder whose socket path fits in a unix socket address."""
    folder = Path("/tmp") / f"t42s-{os.getpid()}-{tmp_path.name[-12:]}"
    folder.mkdir(exist_ok=True)
    yield folder
    # A redis-server a test left behind (an orphan) is shut down before the folder goes.
    pid = server_pid(folder / "redis.sock")
    if pid is not None:
        _kill(pid)
    subprocess.run(["rm", "-rf", str(folder)], check=False)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def store_pid(data_dir: Path) -> int | None:
    return server_pid(data_dir / "redis.sock")


def kill_store(data_dir: Path) -> int:
    """SIGKILL the folder's redis-server (found by its socket); its pid."""
    pid = store_pid(data_dir)
    assert pid is not None, "no redis-server answers on the folder's socket"
    os.kill(pid, signal.SIGKILL)
    return pid


def wait_for_new_store(data_dir: Path, old: int, timeout: float = 60.0,
                       supervisor: StoreSupervisor | None = None,
                       node: Node | None = None) -> int:
    """The pid of the redis-server answering in place of ``old``, once its supervisor (in
    this process, or ``node``'s: its log) counts it as started (a kill before that is a
    failed start)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = store_pid(data_dir)
        if pid is not None and pid != old and (
                (supervisor is None or supervisor.pid == pid)
                and (node is None or f"is back (pid {pid}," in node.log())):
            return pid
        time.sleep(0.05)
    raise AssertionError(f"no redis-server started again in {data_dir}")


class Node:
    """``python -m server`` without ``REDIS_URL`` on a data folder, its log in a file."""

    def __init__(self, data_dir: Path, home: Path, *args: str) -> None:
        self.port = free_port()
        self.data_dir = data_dir
        self.log_path = home / f"server-{self.port}.log"
        home.mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items()
               if k not in ("REDIS_URL", "XDG_DATA_HOME") and not k.startswith("TABLE42_")}
        self.env = {**env, "PYTHONPATH": str(ROOT), "HOME": str(home)}
        self.args = [sys.executable, "-m", "server", "--port", str(self.port),
                     "--data-dir", str(data_dir), *args]
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    async def start(self) -> Node:
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed by stop()
        self.proc = subprocess.Popen(self.args, env=self.env, cwd=ROOT,
                                     stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT)
        await self.healthz_is(200, timeout=90.0)  # a loaded machine starts slowly
        return self

    async def healthz_is(self, status: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        async with aiohttp.ClientSession() as http:
            while True:
                assert self.proc is not None and self.proc.poll() is None, self.log()
                try:
                    async with http.get(self.http + "/healthz") as resp:
                        if resp.status == status:
                            return
                except aiohttp.ClientError:
                    pass
                assert time.monotonic() < deadline, f"/healthz never {status}\n{self.log()}"
                await asyncio.sleep(0.1)

    async def exit_code(self, timeout: float = 60.0) -> int:
        assert self.proc is not None
        return await asyncio.to_thread(self.proc.wait, timeout)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None


@pytest.fixture
async def nodes(data_dir: Path, tmp_path: Path) -> AsyncIterator[list[Node]]:
    """The nodes a test starts (stopped at its end)."""
    started: list[Node] = []
    yield started
    for node in started:
        node.stop()


async def start_node(nodes: list[Node], data_dir: Path, tmp_path: Path, *args: str) -> Node:
    node = Node(data_dir, tmp_path / "home", *args)
    nodes.append(node)
    return await node.start()


async def paced_think(level: Level, game: Any, side: int, seed: int) -> Any:
    """The random player, at most 20 decisions a second (within the documented rates)."""
    await asyncio.sleep(0.05)
    return await think_here(level, game, side, seed)


async def connect_when_ready(url: str) -> Client:
    """A guest's client, once the node that takes the socket has its store back: after a
    restart of the store each worker finds it on its own, and the port may give the socket to
    one that still answers 503 ``unavailable`` with ``Retry-After`` (then tried again)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while True:
        try:
            return await Client.connect(url, guest=True)
        except ClientError as exc:
            if "HTTP 503" not in str(exc) or loop.time() > deadline:
                raise
            await asyncio.sleep(0.5)


async def seat_two(node: Node) -> tuple[Client, Client, str]:
    a = await connect_when_ready(node.ws)
    b = await connect_when_ready(node.ws)
    table = await a.create_table("private")
    await b.join(table)
    await a.wait_for("game_start", table=table, timeout=60)
    return a, b, table


KILL_EVERY = 8
"""Versions of the table between two kills of the store."""


async def play_through_kills(node: Node, kills: int) -> tuple[GameLog, GameLog, list[float]]:
    """Two random players at one table of ``node``; the embedded redis-server is killed
    ``kills`` times mid-game (every ``KILL_EVERY`` versions of the table). Returns both players'
    logs once the game is over, and for each kill the seconds from it to the first event of
    the game that came after it (each is stored before it is announced)."""
    a, b, table = await seat_two(node)
    try:
        games = [asyncio.ensure_future(BotPlayer(c, "random", seed=i, think=paced_think)
                                       .play_table(table, idle_timeout=60))
                 for i, c in enumerate((a, b))]
        gaps: list[float] = []
        for _ in range(kills):
            start = a.tables[table].v
            # A few versions apart: a random game may be short (rolls and moves, about 100
            # versions as a rule, but a quick race can end in 40).
            while a.tables[table].v < start + KILL_EVERY:
                assert not any(g.done() for g in games), "the game ended before the kill"
                await asyncio.sleep(0.02)
            state = a.state(table)
            assert state is not None and state["status"] == "playing", state
            at_kill = a.tables[table].v
            killed = time.monotonic()
            old = await asyncio.to_thread(kill_store, node.data_dir)
            while a.tables[table].v <= at_kill + 1:  # an event in flight may be stored
                await asyncio.sleep(0.005)
            gaps.append(time.monotonic() - killed)
            await asyncio.to_thread(wait_for_new_store, node.data_dir, old, node=node)
        logs = await asyncio.wait_for(asyncio.gather(*games), 240)
    finally:
        await a.close()
        await b.close()
    return logs[0], logs[1], gaps


# --- the supervisor alone (a real redis-server, no node) -------------------------------------


def test_a_killed_store_is_started_again_with_its_data(data_dir: Path) -> None:
    store = EmbeddedRedis(data_dir=data_dir).start()
    gave_up: list[str] = []
    supervisor = StoreSupervisor(store, restarts=5, window=60, on_give_up=gave_up.append)
    supervisor.start()
    try:
        for round_ in range(3):
            assert _command(store.socket, "SET", f"k{round_}", "kept").startswith(b"+OK")
            old = kill_store(data_dir)
            new = wait_for_new_store(data_dir, old, supervisor=supervisor)
            assert store.pid == new
            for earlier in range(round_ + 1):  # every acknowledged write is there
                assert b"kept" in _command(store.socket, "GET", f"k{earlier}")
        assert supervisor.restarted == 3 and gave_up == [] and supervisor.failure is None
    finally:
        supervisor.stop()
    assert store_pid(data_dir) is None  # stopped for good, not started again


def test_a_store_that_keeps_dying_is_given_up(data_dir: Path) -> None:
    store = EmbeddedRedis(data_dir=data_dir).start()
    gave_up = threading.Event()
    why: list[str] = []

    def give_up(message: str) -> None:
        why.append(message)
        gave_up.set()

    supervisor = StoreSupervisor(store, restarts=2, window=60, on_give_up=give_up).start()
    try:
        old = kill_store(data_dir)
        old = wait_for_new_store(data_dir, old, supervisor=supervisor)
        kill_store(data_dir)
        old = wait_for_new_store(data_dir, old, supervisor=supervisor)
        kill_store(data_dir)  # the third death within the window: no third start
        assert gave_up.wait(60)
        assert supervisor.restarted == 2
        assert why == [supervisor.failure]
        assert "failed 3 times within 60 s" in why[0] and "SIGKILL" in why[0], why
        assert "\n" not in why[0] and str(data_dir / "redis.log") in why[0]
        time.sleep(0.3)
        assert store_pid(data_dir) is None
    finally:
        supervisor.stop()


def test_deaths_older_than_the_window_are_forgotten(data_dir: Path) -> None:
    """One restart allowed in 10 s (a driven clock): deaths 11 s apart are each started
    again; two within 10 s are given up."""
    now = [0.0]
    store = EmbeddedRedis(data_dir=data_dir).start()
    gave_up = threading.Event()
    supervisor = StoreSupervisor(store, restarts=1, window=10, clock=lambda: now[0],
                                 on_give_up=lambda _why: gave_up.set()).start()
    try:
        old = kill_store(data_dir)
        old = wait_for_new_store(data_dir, old, supervisor=supervisor)
        now[0] += 11
        kill_store(data_dir)
        old = wait_for_new_store(data_dir, old, supervisor=supervisor)
        assert supervisor.restarted == 2 and not gave_up.is_set()
        now[0] += 9
        kill_store(data_dir)
        assert gave_up.wait(60)
        assert supervisor.failure is not None and "failed 2 times within 10 s" in \
            supervisor.failure, supervisor.failure
    finally:
        supervisor.stop()


def test_a_store_that_cannot_start_again_is_tried_then_given_up(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = EmbeddedRedis(data_dir=data_dir).start()
    gave_up = threading.Event()
    supervisor = StoreSupervisor(store, restarts=3, window=60,
                                 on_give_up=lambda _why: gave_up.set()).start()
    try:
        # From now on the binary exits at once (a broken install, a full disk).
        monkeypatch.setattr(embedded_redis, "redis_server_binary", lambda: "/bin/false")
        kill_store(data_dir)
        assert gave_up.wait(60)
        assert supervisor.restarted == 0
        assert supervisor.failure is not None
        assert "failed 4 times" in supervisor.failure
        assert "did not start again: redis-server exited at start" in supervisor.failure, \
            supervisor.failure
    finally:
        supervisor.stop()


def test_an_adopted_store_is_watched_too(data_dir: Path) -> None:
    orphan = EmbeddedRedis(data_dir=data_dir).start()
    assert orphan._process is not None and orphan._lock is not None
    orphan_pid = orphan._process.pid
    orphan._lock.close()  # its owner is gone; the redis-server is not
    orphan._lock = None
    orphan._process = None
    heir = EmbeddedRedis(data_dir=data_dir).start()
    supervisor = StoreSupervisor(heir, restarts=5, window=60, on_give_up=print).start()
    try:
        assert heir._adopted and heir.pid == orphan_pid
        assert _command(heir.socket, "SET", "adopted", "yes").startswith(b"+OK")
        kill_store(data_dir)
        new = wait_for_new_store(data_dir, orphan_pid, supervisor=supervisor)
        assert heir.pid == new and not heir._adopted  # now a child of the heir
        assert b"yes" in _command(heir.socket, "GET", "adopted")
    finally:
        supervisor.stop()
    assert store_pid(data_dir) is None


# --- python -m server ------------------------------------------------------------------------


async def test_a_game_goes_on_across_kills_of_the_embedded_store(
    data_dir: Path, tmp_path: Path, nodes: list[Node]
) -> None:
    """The server's default limits; two players of the client library (server.bot's random
    player, paced); the store SIGKILLed twice mid-game: the game finishes, each restart is
    logged, and /healthz is 200 again."""
    node = await start_node(nodes, data_dir, tmp_path)
    first, second, gaps = await play_through_kills(node, kills=2)
    assert first.final is not None and second.final is not None, (first, second)
    assert first.final["type"] == second.final["type"] == "game_over", first.final
    assert first.final["winner"] == second.final["winner"]
    await node.healthz_is(200)
    text = node.log()
    assert text.count("killed by signal 9 (SIGKILL)") == 2, text
    assert text.count("the embedded redis-server is back") == 2, text
    print(f"kill -> first event of the game after it: {[f'{g:.3f}' for g in gaps]} s")


async def test_a_store_that_keeps_dying_ends_the_server(
    data_dir: Path, tmp_path: Path, nodes: list[Node]
) -> None:
    node = await start_node(nodes, data_dir, tmp_path, "--embedded-restarts", "1")
    a, b, _table = await seat_two(node)
    try:
        old = await asyncio.to_thread(kill_store, data_dir)
        await asyncio.to_thread(wait_for_new_store, data_dir, old, node=node)
        await asyncio.to_thread(kill_store, data_dir)
        code = await node.exit_code()
    finally:
        await a.close()
        await b.close()
    assert code == EXIT_STORE_FAILED, node.log()
    last = node.log().strip().splitlines()[-1]
    assert last.startswith("python -m server: the embedded redis-server failed 2 times "
                           "within 60 s (embedded_restarts allows 1; last: killed by signal 9 "
                           "(SIGKILL)); the server stops."), last
    assert store_pid(data_dir) is None


async def test_the_workers_parent_supervises_the_store(
    data_dir: Path, tmp_path: Path, nodes: list[Node]
) -> None:
    node = await start_node(nodes, data_dir, tmp_path, "--workers", "2")
    # Both workers up first (a node that starts while its Redis is away stops, status 1).
    for _ in range(900):
        if node.log().count(" ready (key prefix") == 2:
            break
        await asyncio.sleep(0.1)
    assert node.log().count(" ready (key prefix") == 2, node.log()
    old = await asyncio.to_thread(kill_store, data_dir)
    await asyncio.to_thread(wait_for_new_store, data_dir, old, node=node)
    await node.healthz_is(200)
    # A game on the workers after the restart.
    a, b, table = await seat_two(node)
    try:
        games = [BotPlayer(c, "random", seed=i, think=paced_think).play_table(
            table, idle_timeout=60) for i, c in enumerate((a, b))]
        logs = await asyncio.wait_for(asyncio.gather(*games), 240)
        assert all(log.final is not None for log in logs), logs
    finally:
        await a.close()
        await b.close()
    assert "the embedded redis-server is back" in node.log(), node.log()
    node.stop()
    assert node.proc is not None and node.proc.returncode == 0, node.log()
    assert store_pid(data_dir) is None


async def test_a_store_orphaned_by_a_killed_server_is_adopted_and_supervised(
    data_dir: Path, tmp_path: Path, nodes: list[Node]
) -> None:
    first = await start_node(nodes, data_dir, tmp_path)
    orphan = store_pid(data_dir)
    assert first.proc is not None
    first.proc.kill()  # the server, not its store
    first.proc.wait()
    assert store_pid(data_dir) == orphan  # left running

    heir = await start_node(nodes, data_dir, tmp_path)
    assert store_pid(data_dir) == orphan  # adopted, not started anew
    assert orphan is not None
    said = [line for line in heir.log().splitlines() if "left running" in line]
    assert len(said) == 1 and f"(process {orphan})" in said[0], heir.log()  # said once
    await asyncio.to_thread(kill_store, data_dir)
    await asyncio.to_thread(wait_for_new_store, data_dir, orphan, node=heir)
    await heir.healthz_is(200)
    a, b, _table = await seat_two(heir)
    await a.close()
    await b.close()
    assert "the embedded redis-server is back" in heir.log(), heir.log()
    heir.stop()
    assert store_pid(data_dir) is None
