"""A bare aiohttp WebSocket echo server: the yardstick ``bench/load.py`` measures the match
server against.

Every data frame received is sent straight back in the same kind of frame; nothing else
happens. The socket options match the match server's (no compression, the same heartbeat and
message size limit), so the CPU it spends per round trip is what aiohttp itself costs.

    python3 bench/echo_server.py --port 8090        # prints "ready <port>" once listening
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from aiohttp import WSMsgType, web

from server.net.event_loop import run

MAX_MSG_SIZE = 16 * 1024
HEARTBEAT = 20.0


async def echo(request: web.Request) -> web.WebSocketResponse:
    ws = web.WebSocketResponse(heartbeat=HEARTBEAT, max_msg_size=MAX_MSG_SIZE, compress=False)
    await ws.prepare(request)
    while True:
        msg = await ws.receive()
        if msg.type is WSMsgType.BINARY:
            await ws.send_bytes(msg.data)
        elif msg.type is WSMsgType.TEXT:
            await ws.send_str(msg.data)
        else:
            break
    return ws


async def serve(host: str, port: int) -> None:
    app = web.Application()
    app.router.add_get("/ws", echo)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = port
    server: Any = site._server  # aiohttp exposes the listening sockets only here
    if server is not None and server.sockets:
        bound = server.sockets[0].getsockname()[1]
    print(f"ready {bound}", flush=True)
    await until_stopped()
    await runner.cleanup()


async def until_stopped() -> None:
    """Until SIGTERM or SIGINT."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


def main(argv: list[str] | None = None,
         server: Callable[[str, int], Coroutine[Any, Any, None]] = serve,
         doc: str | None = None) -> int:
    """The command line of an echo server (``server``: this one unless given)."""
    parser = argparse.ArgumentParser(description=(doc or __doc__).splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--uvloop", type=int, choices=(0, 1), default=1,
                        help="1: uvloop's event loop when installed, as the node's default")
    args = parser.parse_args(argv)
    run(server(args.host, args.port), use_uvloop=bool(args.uvloop))
    return 0


if __name__ == "__main__":
    sys.exit(main())
