"""A bare picows WebSocket echo server: ``bench/echo_server.py``'s twin on picows, to weigh
picows against aiohttp (``bench/echo_compare.py``).

Every data frame received is sent straight back in the same kind of frame; nothing else
happens. The options match the aiohttp echo's (no compression, a ping after 20 s without
incoming data, frames up to 16 KiB). Upgrades on any path.

    python3 bench/echo_picows.py --port 8090        # prints "ready <port>" once listening
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from picows import WSFrame, WSListener, WSMsgType, WSTransport, WSUpgradeRequest, ws_create_server

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.echo_server import main, until_stopped

MAX_MSG_SIZE = 16 * 1024
HEARTBEAT = 20.0  # as echo_server.py's


class Echo(WSListener):
    def on_ws_frame(self, transport: WSTransport, frame: WSFrame) -> None:
        kind = frame.msg_type
        if kind is WSMsgType.BINARY or kind is WSMsgType.TEXT:
            transport.send(kind, frame.get_payload_as_memoryview())
        elif kind is WSMsgType.CLOSE:
            transport.send_close(frame.get_close_code())
            transport.disconnect()


def listener(_request: WSUpgradeRequest) -> Echo:
    return Echo()


async def serve(host: str, port: int) -> None:
    server: Any = await ws_create_server(
        listener, host, port, enable_auto_ping=True, auto_ping_idle_timeout=HEARTBEAT,
        auto_ping_reply_timeout=HEARTBEAT, max_frame_size=MAX_MSG_SIZE)
    print(f"ready {server.sockets[0].getsockname()[1]}", flush=True)
    await until_stopped()
    server.close()


if __name__ == "__main__":
    sys.exit(main(server=serve, doc=__doc__))
