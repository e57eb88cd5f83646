"""A real Redis Cluster of three masters with a replica each (``tools/redis_cluster.sh start
BASE 1``), and what the failover tests do to it: kill a master, pause a replica, start a
killed node again, and wait for the cluster to be whole.

Each wait polls the nodes themselves (``CLUSTER NODES``, ``INFO replication``) until the
condition holds, within a deadline: nothing waits a fixed time.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

import redis
from nodes import ROOT
from redis.crc import key_slot

SCRIPT = ROOT / "tools" / "redis_cluster.sh"
NODE_TIMEOUT_MS = 1000
"""``--cluster-node-timeout``: a dead master is failed over within about 2-3 s."""
NODES = 6


def binaries() -> tuple[str, str] | None:
    """redis-server and redis-cli to run (``REDIS_SERVER`` / ``REDIS_CLI``, else PATH's)."""
    server = os.environ.get("REDIS_SERVER") or shutil.which("redis-server")
    cli = os.environ.get("REDIS_CLI") or shutil.which("redis-cli")
    return None if server is None or cli is None else (server, cli)


def _free_base() -> int:
    """A port from which NODES ports, and each one's cluster bus (+10000), are free."""
    for base in range(21000 + os.getpid() % 40 * 100, 29000, 37):
        ports = [base + i for i in range(NODES)] + [base + 10000 + i for i in range(NODES)]
        if all(_free(port) for port in ports):
            return base
    raise RuntimeError("no free ports for a Redis Cluster")


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@dataclass
class Shard:
    master: int
    replica: int | None
    slots: list[tuple[int, int]]


class ReplicatedCluster:
    """The cluster of one test module (see the module)."""

    def __init__(self, tmp: Path) -> None:
        found = binaries()
        assert found is not None
        self.server, self.cli = found
        self.tmp = tmp
        self.base = _free_base()
        self.ports = [self.base + i for i in range(NODES)]
        self.dir = tmp / f"table42-cluster-{self.base}"

    def _run(self, *args: str) -> str:
        env = {**os.environ, "TMPDIR": str(self.tmp), "REDIS_SERVER": self.server,
               "REDIS_CLI": self.cli, "NODE_TIMEOUT": str(NODE_TIMEOUT_MS)}
        done = subprocess.run([str(SCRIPT), *args], env=env, capture_output=True, text=True,
                              timeout=90, check=False)
        assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}"
        return done.stdout

    def start(self) -> None:
        self._run("start", str(self.base), "1")

    def stop(self) -> None:
        for port in self.ports:  # a paused node would never shut down
            self.signal(port, signal.SIGCONT)
        self._run("stop", str(self.base))

    def url(self, port: int) -> str:
        return f"redis+cluster://127.0.0.1:{port}/0"

    # --- the nodes ---------------------------------------------------------------------------

    def _client(self, port: int) -> redis.Redis:
        return redis.Redis(port=port, socket_timeout=1.0, socket_connect_timeout=1.0)

    def pid(self, port: int) -> int | None:
        try:
            return int((self.dir / str(port) / "redis.pid").read_text())
        except (OSError, ValueError):
            return None

    def signal(self, port: int, signum: int) -> None:
        pid = self.pid(port)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    def kill(self, port: int) -> None:
        self.signal(port, signal.SIGKILL)
        (self.dir / str(port) / "redis.pid").unlink(missing_ok=True)

    def restart(self, port: int) -> None:
        """Start a killed node again: it rejoins as a replica of its successor."""
        self._run("node", str(self.base), str(port))

    def alive(self, port: int) -> bool:
        try:
            with self._client(port) as client:
                return bool(client.ping())
        except (redis.RedisError, OSError):
            return False

    def shards(self) -> list[Shard]:
        """The masters as some live node sees them, each with its replica (when one is
        attached and in sync)."""
        for port in self.ports:
            try:
                with self._client(port) as client:
                    lines = client.execute_command("CLUSTER", "NODES")
            except (redis.RedisError, OSError):
                continue
            if isinstance(lines, bytes):
                lines = lines.decode()
            if isinstance(lines, dict):  # redis-py parses it
                return self._shards_from_dict(lines)
            return self._shards_from_text(str(lines))
        raise AssertionError("no node of the cluster answers")

    def _shards_from_text(self, text: str) -> list[Shard]:
        masters: dict[str, Shard] = {}
        replicas: list[tuple[str, int]] = []
        for line in text.splitlines():
            parts = line.split()
            node_id, address, flags, master = parts[0], parts[1], parts[2], parts[3]
            port = int(address.split("@")[0].rsplit(":", 1)[1])
            if "fail" in flags.split(",") or "fail?" in flags.split(","):
                continue
            if "master" in flags:
                slots = []
                for part in parts[8:]:
                    if part.startswith("["):
                        continue
                    low, _, high = part.partition("-")
                    slots.append((int(low), int(high or low)))
                if slots:
                    masters[node_id] = Shard(port, None, slots)
            else:
                replicas.append((master, port))
        for master, port in replicas:
            if master in masters:
                masters[master].replica = port
        return list(masters.values())

    def _shards_from_dict(self, nodes: dict[str, dict[str, object]]) -> list[Shard]:
        text = []
        for address, info in nodes.items():
            flags = str(info.get("flags", ""))
            slots = info.get("slots") or []
            slot_text = " ".join(f"{s[0]}-{s[1]}" if len(s) > 1 else str(s[0])
                                 for s in slots)  # type: ignore[attr-defined]
            text.append(f"{info.get('node_id')} {address} {flags} "
                        f"{info.get('master_id')} 0 0 0 connected {slot_text}")
        return self._shards_from_text("\n".join(text))

    def shard_of(self, key: str) -> Shard:
        slot = key_slot(key.encode())
        for shard in self.shards():
            if any(low <= slot <= high for low, high in shard.slots):
                return shard
        raise AssertionError(f"no master serves slot {slot}")

    def _whole(self) -> bool:
        """Three masters serving every slot, each with a replica in sync, every node ok."""
        try:
            shards = self.shards()
        except AssertionError:
            return False
        if len(shards) != 3 or any(s.replica is None for s in shards):
            return False
        for port in self.ports:
            try:
                with self._client(port) as client:
                    info = client.execute_command("CLUSTER", "INFO")
                    text = info.decode() if isinstance(info, bytes) else str(info)
                    if "cluster_state:ok" not in text and "'cluster_state': 'ok'" not in text:
                        return False
                    replication = client.info("replication")
                    if replication.get("role") == "slave" and (
                            replication.get("master_link_status") != "up"
                            or replication.get("master_sync_in_progress")):
                        return False
            except (redis.RedisError, OSError):
                return False
        return True

    async def whole(self, timeout: float = 30.0) -> None:
        """Start every killed node again and wait until the cluster is whole."""
        for port in self.ports:
            if not self.alive(port):
                await asyncio.to_thread(self.restart, port)
        await self._until(self._whole, timeout, "the cluster to be whole again")

    async def failed_over(self, dead: int, timeout: float = 30.0) -> None:
        """Wait until the slots of the dead master ``dead`` are served by another node and
        every live node says the cluster is ok."""
        def done() -> bool:
            try:
                shards = self.shards()
            except AssertionError:
                return False
            if len(shards) != 3 or any(s.master == dead for s in shards):
                return False
            for port in self.ports:
                if port == dead or not self.alive(port):
                    continue
                try:
                    with self._client(port) as client:
                        info = client.execute_command("CLUSTER", "INFO")
                except (redis.RedisError, OSError):
                    return False
                text = info.decode() if isinstance(info, bytes) else str(info)
                if "cluster_state:ok" not in text and "'cluster_state': 'ok'" not in text:
                    return False
            return True

        await self._until(done, timeout, f"the failover of {dead}")

    async def _until(self, check: object, timeout: float, what: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not await asyncio.to_thread(check):  # type: ignore[arg-type]
            if loop.time() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            await asyncio.sleep(0.05)
