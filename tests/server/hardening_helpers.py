"""Helpers for the hardening tests: a private redis-server a test may stop and
start again (never the shared one), raw HTTP, and a real ``python -m server`` process."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from server.embedded_redis import redis_server_binary

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pings(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class PrivateRedis:
    """A redis-server of the test's own, with the append-only file on, that the test stops
    (SIGTERM, as an operator or an orchestrator would) and starts again on the same port and
    data directory."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._dir = tempfile.TemporaryDirectory(prefix="t42-private-redis-")
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> PrivateRedis:
        self._proc = subprocess.Popen(
            [redis_server_binary(), "--bind", "127.0.0.1", "--port", str(self.port),
             "--dir", self._dir.name, "--appendonly", "yes", "--appendfsync", "always",
             "--save", "", "--protected-mode", "yes",
             "--logfile", str(Path(self._dir.name) / "redis.log")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while not _pings(self.port):
            assert time.monotonic() < deadline, "the private redis-server did not start"
            time.sleep(0.02)
        return self

    def sigterm(self) -> None:
        assert self._proc is not None
        self._proc.send_signal(signal.SIGTERM)
        self._proc.wait(10)
        self._proc = None

    def pause(self) -> None:
        """SIGSTOP: the server stops answering, its connections stay open (a hung host)."""
        assert self._proc is not None
        self._proc.send_signal(signal.SIGSTOP)

    def cont(self) -> None:
        """SIGCONT after :meth:`pause`: it answers again, with everything it held."""
        assert self._proc is not None
        self._proc.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL: gone at once, with nothing flushed but the append-only file (fsync always);
        :meth:`start` brings it back from that file."""
        assert self._proc is not None
        self._proc.kill()
        self._proc.wait(10)
        self._proc = None

    def wipe(self) -> None:
        """Forget every file of the stopped server: started again, it is a fresh, empty Redis
        on the same address (a replaced store)."""
        assert self._proc is None, "stop the server first"
        import shutil

        for entry in Path(self._dir.name).iterdir():
            if entry.name == "redis.log":
                continue
            if entry.is_dir():
                shutil.rmtree(entry)
            else:
                entry.unlink()

    def close(self) -> None:
        if self._proc is not None:
            self._proc.send_signal(signal.SIGCONT)  # a paused server cannot stop otherwise
            self._proc.terminate()
            self._proc.wait(10)
            self._proc = None
        self._dir.cleanup()


class ServerProcess:
    """``python -m server`` in its own process (this checkout's code), on a free port."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.args = ["--port", str(self.port), *args]
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    async def start(self) -> ServerProcess:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "server", *self.args], env=self.env,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 20
        async with aiohttp.ClientSession() as http:
            while True:
                assert self.proc.poll() is None, self.proc.stderr.read() if self.proc.stderr \
                    else "exited"
                try:
                    async with http.get(self.http + "/healthz") as resp:
                        if resp.status == 200:
                            return self
                except aiohttp.ClientError:
                    pass
                assert time.monotonic() < deadline, "the server did not start"
                await asyncio.sleep(0.1)

    def open_fds(self) -> int:
        assert self.proc is not None
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.proc.stderr is not None:
            self.proc.stderr.close()


async def http_json(method: str, url: str, *, headers: dict[str, str] | None = None,
                    json_body: Any = None, data: bytes | None = None
                    ) -> tuple[int, dict[str, str], Any]:
    async with aiohttp.ClientSession() as http, http.request(
        method, url, headers=headers, json=json_body, data=data
    ) as resp:
        text = await resp.text()
        try:
            import json

            body: Any = json.loads(text) if text else None
        except ValueError:
            body = text
        return resp.status, dict(resp.headers), body
