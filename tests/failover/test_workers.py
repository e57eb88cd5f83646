"""``python -m server --workers 2`` as a real process: two worker nodes on one port sharing the
embedded redis-server the parent started; a game whose players' sockets landed on different
workers is played to the end (through the node bus), and SIGINT to the parent stops every
worker and the store. The workers talk over the local link (Unix sockets): a game across
them publishes nothing on Redis, also after one worker was killed and started again.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from nodes import (
    BASE_FLAGS,
    OWNERSHIP_FLAGS,
    ROOT,
    Node,
    Player,
    free_port,
    node_env,
    play_to_end,
    seat_two,
    wait_ready,
)

from server.client import register


def welcomed_by(player: Player) -> str:
    return str(next(m["node"] for m in player.messages if m.get("type") == "welcome"))


def children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True,
                         text=True, check=False).stdout
    return [int(word) for word in out.split()]


def is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def player_on(node: Node, name: str, worker: str | None, avoid: str | None) -> Player:
    """Connect ``name`` until its socket lands on ``worker`` (any, if None) and not on
    ``avoid``: the kernel picks a worker per connection."""
    token = await register(node.ws_url, name, "correct horse")
    for _ in range(200):
        player = await Player.open(node, token)
        landed = welcomed_by(player)
        if (worker is None or landed == worker) and landed != avoid:
            return player
        await player.close()
    raise AssertionError(f"{name}: every connection landed on {avoid}")


def _workers_command(port: int, tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    """``python -m server``'s arguments for two workers on ``port``, and its environment
    (no REDIS_URL: the parent starts the embedded store)."""
    args = ["--workers", "2", "--port", str(port), "--host", "127.0.0.1",
            "--data-dir", str(tmp_path / "store"), "--node-id", "w"]
    for flag, value in {**BASE_FLAGS, **OWNERSHIP_FLAGS}.items():
        args += [flag, str(value)]
    env = node_env()
    env.pop("REDIS_URL", None)
    return args, env


async def start_workers(tmp_path: Path, **env_extra: str) -> Node:
    """``python -m server`` with two workers (:func:`_workers_command`), its output in
    ``workers.log``; not waited for."""
    port = free_port()
    args, env = _workers_command(port, tmp_path)
    env.update(env_extra)
    log_path = tmp_path / "workers.log"
    with log_path.open("wb") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "server", *args, env=env, cwd=ROOT, stdout=log,
            stderr=subprocess.STDOUT)
    return Node("w", port, proc, log_path)


@pytest.mark.timeout(240)
async def test_two_workers_serve_one_game_and_stop_together(tmp_path: Path) -> None:
    node = await start_workers(tmp_path)
    proc = node.proc
    players: list[Player] = []
    try:
        await wait_ready(node, timeout=120)
        a = await player_on(node, "alice", None, None)
        players.append(a)
        b = await player_on(node, "bob", None, welcomed_by(a))
        players.append(b)
        assert {welcomed_by(a), welcomed_by(b)} == {"w-1", "w-2"}
        table = await seat_two(a, b)
        over: dict[str, Any] = await play_to_end([a, b], table)
        assert over["type"] == "game_over"
        for p in players:
            await p.close()
        players.clear()

        pids = children(proc.pid)  # the two workers and the redis-server
        assert len(pids) == 3, (pids, node.log()[-3000:])
        node.signal(signal.SIGINT)
        assert await node.wait(60.0) == 0, node.log()[-4000:]
        for pid in pids:
            for _ in range(100):
                if not is_running(pid):
                    break
                await asyncio.sleep(0.1)
            assert not is_running(pid), f"pid {pid} outlived the parent"
    finally:
        for p in players:
            await p.close()
        if proc.returncode is None:
            for pid in children(proc.pid):
                os.kill(pid, signal.SIGKILL)
            node.kill()
            await node.wait(10.0)


def cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]


def flag(args: list[str], name: str) -> str:
    """The last value of ``name`` on a command line (argparse keeps the last)."""
    return args[len(args) - 1 - args[::-1].index(name) + 1]


async def publishes(redis: aioredis.Redis) -> int:
    stats = await redis.info("commandstats")
    return int(stats.get("cmdstat_publish", {}).get("calls", 0))


STRAY_PUBLISHES = 5
"""Broadcasts that may fall in a game's time (a takeover's after a worker was killed): a
handful, where a game through Redis publishes at least one message per event."""


async def cross_game(node: Node, names: tuple[str, str], redis: aioredis.Redis) -> int:
    """Play a game between two players on different workers; the PUBLISH calls Redis saw
    meanwhile (checked to be far fewer than the game's events)."""
    a = await player_on(node, names[0], None, None)
    b = await player_on(node, names[1], None, welcomed_by(a))
    try:
        assert {welcomed_by(a), welcomed_by(b)} == {"w-1", "w-2"}
        table = await seat_two(a, b)
        before = await publishes(redis)
        over: dict[str, Any] = await play_to_end([a, b], table)
        assert over["type"] == "game_over"
        published = await publishes(redis) - before
        version, _ = a.latest_state(table)
        assert version > 4 * STRAY_PUBLISHES, version
        return published
    finally:
        await a.close()
        await b.close()


@pytest.mark.timeout(300)
async def test_workers_talk_over_the_local_link_and_find_a_restarted_one(
        tmp_path: Path) -> None:
    # (INFO: the link logs each connection)
    node = await start_workers(tmp_path, TABLE42_LOG_LEVEL="INFO")
    proc = node.proc
    log_path = tmp_path / "workers.log"
    _args, env = _workers_command(node.port, tmp_path)  # for the restarted worker
    env["TABLE42_LOG_LEVEL"] = "INFO"
    restarted: asyncio.subprocess.Process | None = None
    redis: aioredis.Redis | None = None
    try:
        await wait_ready(node, timeout=120)
        workers = {flag(cmdline(pid), "--node-id"): pid for pid in children(proc.pid)
                   if "--node-id" in cmdline(pid)}
        assert sorted(workers) == ["w-1", "w-2"], node.log()[-3000:]
        second = cmdline(workers["w-2"])
        assert flag(second, "--link-peers") == "w-1,w-2"
        redis = aioredis.Redis.from_url(flag(second, "--redis-url"))
        await wait_until_logged(node, "link: connected to w-1", 1)
        await wait_until_logged(node, "link: connected to w-2", 1)
        assert await cross_game(node, ("alice", "bob"), redis) <= STRAY_PUBLISHES

        os.kill(workers["w-2"], signal.SIGKILL)
        await wait_until_logged(node, "link: connection to w-2 lost", 1)
        with log_path.open("ab") as log:
            restarted = await asyncio.create_subprocess_exec(
                *second, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        await wait_until_logged(node, "link: connected to w-2", 2)  # w-1 dialled again
        await wait_until_logged(node, "link: connected to w-1", 2)  # the new w-2
        assert await cross_game(node, ("carol", "dave"), redis) <= STRAY_PUBLISHES
    finally:
        if redis is not None:
            await redis.aclose()
        if restarted is not None and restarted.returncode is None:
            restarted.terminate()
            await restarted.wait()
        if proc.returncode is None:
            node.signal(signal.SIGINT)
            await node.wait(60.0)


async def wait_until_logged(node: Node, text: str, times: int) -> None:
    for _ in range(600):
        if node.log().count(text) >= times:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{text!r} not logged {times} times:\n{node.log()[-3000:]}")
