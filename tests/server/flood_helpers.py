"""Message floods against a real ``python -m server`` process, and its memory meanwhile.

Used by ``test_socket_memory.py`` and by ``bench/socket_floods.py`` (which may point it at
another tree's server with ``root``). A node is started on a free port with the server's
default limits (the message rate among them: 30/s, bursts of 60) except the number of
sockets one address may hold (every client here is on 127.0.0.1). Guests connect several
sockets each; each socket sends one kind of message at ``rate`` per second (below the
message rate limit), with fresh random contents, reads everything the node sends back, and
the node's resident memory (``VmRSS`` of ``/proc/<pid>/status``) is sampled meanwhile.

The kinds (:data:`FLOODS`): ``ack_events`` (the most random 128-character ids one message
may carry), ``watch`` (random table ids and the node's real tables), ``chat`` and
``report`` (at real tables the socket watches), ``mute`` (random players), ``sync`` (random
tables) and ``ping`` (with long request ids).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import random
import socket
import string
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from server.client.accounts import guest_token, register

ROOT = Path(__file__).resolve().parents[2]
FLOODS = ("ack_events", "watch", "chat", "report", "mute", "sync", "ping")
MAX_MSG_SIZE = 16 * 1024
"""The server's default largest message: an ``ack_events`` flood fills it."""
_ALPHABET = string.ascii_letters + string.digits


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_kib(pid: int) -> int:
    """The resident memory of process ``pid``, KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


@dataclass
class Node:
    """One ``python -m server`` process of the tree ``root``."""

    proc: subprocess.Popen[bytes]
    port: int

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    def rss_kib(self) -> int:
        return rss_kib(self.proc.pid)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


async def start_node(redis_url: str, key_prefix: str, *args: str, root: Path = ROOT,
                     log_path: Path | None = None) -> Node:
    """Start ``python -m server`` of ``root`` (its own working directory, so its own
    package) with ``args``; wait until ``/healthz`` answers 200."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1",
           "TABLE42_LOG_LEVEL": os.environ.get("TABLE42_LOG_LEVEL", "WARNING")}
    out = open(log_path, "wb") if log_path is not None else subprocess.DEVNULL  # noqa: SIM115
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "server", "--redis-url", redis_url, "--key-prefix",
             key_prefix, "--host", "127.0.0.1", "--port", str(port), *args],
            cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    finally:
        if log_path is not None:
            out.close()  # type: ignore[union-attr]
    node = Node(proc, port)
    deadline = time.monotonic() + 60
    async with aiohttp.ClientSession() as http:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited with {proc.returncode}")
            with contextlib.suppress(aiohttp.ClientError):
                async with http.get(node.http + "/healthz") as resp:
                    if resp.status == 200:
                        return node
            if time.monotonic() > deadline:
                node.stop()
                raise RuntimeError("the server did not start in 60 s")
            await asyncio.sleep(0.1)


def random_text(rng: random.Random, length: int) -> str:
    return "".join(rng.choices(_ALPHABET, k=length))


def ack_ids_fitting(limit: int = MAX_MSG_SIZE, length: int = 128) -> int:
    """How many ids of ``length`` characters one ``ack_events`` of ``limit`` bytes carries."""
    count = 200
    while len(json.dumps({"type": "ack_events", "id": 10**9,
                          "events": ["x" * length] * count})) > limit:
        count -= 1
    return count


@dataclass
class Flooder:
    """One socket sending one kind of message."""

    ws: aiohttp.ClientWebSocketResponse
    kind: str
    tables: Sequence[str]
    rng: random.Random
    answers: collections.Counter[str] = field(default_factory=collections.Counter)
    sent: int = 0
    closed: str | None = None

    def message(self, n: int) -> dict[str, Any]:
        rng = self.rng
        kind = self.kind
        if kind == "ack_events":
            ids = [random_text(rng, 128) for _ in range(ACK_IDS)]
            return {"type": "ack_events", "events": ids, "id": n}
        if kind == "watch":  # one of the node's tables every fourth time, else a random id
            table = rng.choice(self.tables) if n % 4 == 0 and self.tables \
                else random_text(rng, 64)
            return {"type": "watch", "table": table, "id": n}
        if kind == "chat":
            return {"type": "chat", "table": self.tables[n % len(self.tables)],
                    "text": random_text(rng, 300), "id": n}
        if kind == "report":
            return {"type": "report", "table": self.tables[n % len(self.tables)],
                    "msg": random_text(rng, 12), "reason": random_text(rng, 200), "id": n}
        if kind == "mute":
            return {"type": "mute", "player": random_text(rng, 64), "id": n}
        if kind == "sync":
            return {"type": "sync", "table": random_text(rng, 64), "id": n}
        if kind == "ping":
            return {"type": "ping", "id": random_text(rng, 64)}
        raise ValueError(kind)

    async def read(self) -> None:
        async for frame in self.ws:
            if frame.type is not aiohttp.WSMsgType.TEXT:
                continue
            answer = json.loads(frame.data)
            key = answer.get("type", "?")
            if key == "error":
                key = f"error:{answer.get('code')}"
            self.answers[key] += 1
        self.closed = f"closed {self.ws.close_code}"

    async def send(self, rate: float, until: float) -> None:
        loop = asyncio.get_running_loop()
        step = 1.0 / rate
        at = loop.time() + self.rng.random() * step
        n = 0
        while at < until and not self.ws.closed:
            await asyncio.sleep(max(0.0, at - loop.time()))
            n += 1
            with contextlib.suppress(ConnectionError):
                await self.ws.send_str(json.dumps(self.message(n)))
                self.sent += 1
            # The next slot; slots missed while this process was held up are skipped, never
            # sent in a burst (the flood stays under the message rate).
            at = max(at + step, loop.time())


ACK_IDS = ack_ids_fitting()


@dataclass
class FloodResult:
    kind: str
    sockets: int
    seconds: float
    samples: list[tuple[float, int]]  # (seconds from the start, node RSS KiB)
    sent: int
    answers: collections.Counter[str]
    closed: int

    @property
    def growth_kib(self) -> tuple[int, int]:
        """RSS growth over the first half and over the second half, KiB."""
        start, end = self.samples[0][1], self.samples[-1][1]
        middle = min(self.samples, key=lambda s: abs(s[0] - self.seconds / 2))[1]
        return middle - start, end - middle

    @property
    def per_socket_kib(self) -> float:
        """RSS growth over the whole flood per socket, KiB."""
        return (self.samples[-1][1] - self.samples[0][1]) / self.sockets


async def _drain(ws: aiohttp.ClientWebSocketResponse) -> None:
    async for _frame in ws:
        pass


class Clients:
    """Guests of one node and their sockets (closed by :meth:`close`)."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.http = aiohttp.ClientSession()
        self.sockets: list[aiohttp.ClientWebSocketResponse] = []
        self._drains: list[asyncio.Future[None]] = []

    async def guests(self, count: int) -> list[str]:
        return [await guest_token(self.node.ws_url) for _ in range(count)]

    async def open(self, token: str) -> aiohttp.ClientWebSocketResponse:
        ws = await self.http.ws_connect(self.node.ws_url,
                                        headers={"Authorization": f"Bearer {token}"})
        welcome = json.loads((await ws.receive(timeout=10)).data)
        assert welcome["type"] == "welcome", welcome
        self.sockets.append(ws)
        return ws

    async def request(self, ws: aiohttp.ClientWebSocketResponse,
                      message: dict[str, Any]) -> dict[str, Any]:
        """Send ``message`` with an id and return its answer (other frames are skipped)."""
        ref = random.randrange(1, 2**31)
        await ws.send_str(json.dumps({**message, "id": ref}))
        async with asyncio.timeout(10):
            while True:
                answer = json.loads((await ws.receive()).data)
                if answer.get("ref") == ref:
                    return dict(answer)

    async def tables(self, count: int) -> list[str]:
        """``count`` open private tables, each created by an account of its own (one seat
        per player; registered, to leave the guest burst to the floods)."""
        made: list[str] = []
        for _ in range(count):
            name = "host" + random_text(random.Random(), 8)
            ws = await self.open(await register(self.node.ws_url, name, "correct horse"))
            created = await self.request(ws, {"type": "create_table", "mode": "private"})
            if created.get("type") != "table_created":
                raise AssertionError(created)
            made.append(created["table"])
            # Read from now on (the node's pings are answered while reading): the host
            # stays, and so does its table.
            self._drains.append(asyncio.ensure_future(_drain(ws)))
        return made

    async def close(self) -> None:
        for drain in self._drains:
            drain.cancel()
        for ws in self.sockets:
            with contextlib.suppress(Exception):
                await ws.close()
        await self.http.close()


async def flood(node: Node, sockets: Sequence[aiohttp.ClientWebSocketResponse], kind: str,
                *, seconds: float, rate: float, tables: Sequence[str], seed: int = 1,
                sample_every: float = 0.25) -> FloodResult:
    """Every socket of ``sockets`` sends ``kind`` at ``rate`` per second for ``seconds``;
    the node's RSS is sampled every ``sample_every`` seconds."""
    flooders = [Flooder(ws, kind, tables, random.Random(seed * 1000 + i))
                for i, ws in enumerate(sockets)]
    if kind in ("chat", "report"):  # watch the tables first, to be at them
        for f in flooders:
            for table in tables:
                await f.ws.send_str(json.dumps({"type": "watch", "table": table}))
    readers = [asyncio.ensure_future(f.read()) for f in flooders]
    await asyncio.sleep(0.5)  # the watches' answers
    for f in flooders:
        f.answers.clear()
    loop = asyncio.get_running_loop()
    start = loop.time()
    until = start + seconds
    senders = [asyncio.ensure_future(f.send(rate, until)) for f in flooders]
    samples: list[tuple[float, int]] = []
    while (now := loop.time()) < until:
        samples.append((now - start, node.rss_kib()))
        await asyncio.sleep(sample_every)
    await asyncio.gather(*senders)
    samples.append((loop.time() - start, node.rss_kib()))
    await asyncio.sleep(0.5)  # the last answers
    for reader in readers:
        reader.cancel()
    answers: collections.Counter[str] = collections.Counter()
    for f in flooders:
        answers.update(f.answers)
    return FloodResult(kind, len(sockets), seconds, samples, sum(f.sent for f in flooders),
                       answers, sum(1 for f in flooders if f.ws.closed))
