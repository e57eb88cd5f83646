"""Server CPU per table chat message, against a ``ping`` over the same sockets.

Run from the repository root (``REDIS_URL`` for a running Redis, else an embedded one)::

    python3 bench/chat_cost.py                    # 2,000 chat messages, 2,000 pings
    python3 bench/chat_cost.py --messages 5000

The server runs as ``python -m server`` in its own process, with the chat rate and the
socket's message rate raised so that the bench is not refused. Two players sit at a private
table with a game in progress and one watcher watches; one player sends ``--messages`` chat
messages, each awaited (its ``ack``) before the next, so every one is stored (one Redis round
trip) and delivered to the three sockets. Then the same player sends as many ``ping``s. The
figure is the server process's CPU (``/proc/<pid>/stat``, utime + stime) over each window
divided by its messages; the ping is the floor of any request over that socket (aiohttp, the
session, the hub).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from server.client import Client, register  # noqa: E402


def cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def wait_up(url: str, timeout: float = 30.0) -> None:
    import aiohttp

    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as http:
        while True:
            try:
                async with http.get(url) as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("the server did not start")
            await asyncio.sleep(0.1)


async def run(messages: int) -> dict[str, float]:
    port = free_port()
    env = {**os.environ, "TABLE42_CHAT_RATE": str(10 * messages),
           "TABLE42_KEY_PREFIX": f"bench-chat-{secrets.token_hex(4)}:",
           "TABLE42_HTTP_RATE_LIMIT": "0", "TABLE42_LIMITS": "0",
           "TABLE42_RATE_LIMIT": "100000", "TABLE42_RATE_BURST": "100000"}
    server = subprocess.Popen([sys.executable, "-m", "server", "--port", str(port)],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        url = f"ws://127.0.0.1:{port}/ws"
        await wait_up(f"http://127.0.0.1:{port}/healthz")
        names = [f"p{secrets.token_hex(3)}" for _ in range(3)]
        tokens = [await register(url, name, "correct horse battery") for name in names]
        a, b, c = [await Client.connect(url, t) for t in tokens]
        table = await a.create_table("private")
        await b.join(table)
        await c.watch(table)
        for n in range(50):  # warm-up
            await a.chat(table, f"warm {n}")
        start = cpu(server.pid)
        began = time.perf_counter()
        for n in range(messages):
            await a.chat(table, f"message number {n}")
        chat_cpu = cpu(server.pid) - start
        chat_wall = time.perf_counter() - began
        start = cpu(server.pid)
        for _ in range(messages):
            await a.request({"type": "ping"})
        ping_cpu = cpu(server.pid) - start
        for client in (a, b, c):
            await client.close()
        return {"chat_us": chat_cpu / messages * 1e6, "ping_us": ping_cpu / messages * 1e6,
                "chat_wall_us": chat_wall / messages * 1e6}
    finally:
        server.terminate()
        server.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=2000)
    args = parser.parse_args()
    figures = asyncio.run(run(args.messages))
    print(f"server CPU per chat message (stored, delivered to 3 sockets): "
          f"{figures['chat_us']:.0f} us")
    print(f"server CPU per ping: {figures['ping_us']:.0f} us")
    print(f"wall time per chat message, sent after the previous ack: "
          f"{figures['chat_wall_us']:.0f} us")


if __name__ == "__main__":
    main()
