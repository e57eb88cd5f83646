"""The WebSocket heartbeat of a node's sockets, as one duty of the node's tick.

Instead of a timer per socket (aiohttp's ``heartbeat=``, re-armed on every frame received),
one sweep every ``heartbeat / 4`` seconds looks at each socket of the hub: a socket that has
sent nothing for ``heartbeat`` seconds gets a WebSocket ping, and a socket pinged that has
sent nothing for ``heartbeat / 2`` seconds since is dropped (as aiohttp did: no closing
handshake, the peer is gone or stuck). Any frame counts as an answer (a pong, a message, a
ping of the client's): the socket's reader notes the time of each (``Connection.heard_at``),
so a busy socket is never pinged and nothing is armed or re-armed per frame.

Bounds (``h`` = ``heartbeat``, 20 s by default): a silent socket is pinged after ``h`` to
``1.25 h`` of silence and dropped ``h / 2`` after that ping, so between ``1.5 h`` and
``1.75 h`` after its last frame (aiohttp's own timer: ``1.5 h``).
"""

from __future__ import annotations

import asyncio
import logging

from server.net.connection import Hub
from server.tick import Tick

__all__ = ["PING_FRAME", "SWEEP", "SocketLiveness"]

log = logging.getLogger(__name__)

SWEEP = "socket-liveness"
"""The name of the sweep on the node's tick."""
PING_FRAME = b"\x89\x00"
"""A whole WebSocket ping frame from the server: FIN, opcode 9, unmasked, no payload."""
SLACK = 0.01
"""Seconds: a ping whose pong wait ends this soon after a sweep is judged at that sweep
(the sweeps fall on a grid; the wait is a whole number of sweeps)."""


class SocketLiveness:
    """Pings silent sockets and drops those that do not answer (see the module docstring)."""

    def __init__(self, hub: Hub, tick: Tick, heartbeat: float) -> None:
        self.hub = hub
        self.tick = tick
        self.heartbeat = heartbeat
        self.pong_wait = heartbeat / 2
        self.period = heartbeat / 4
        self.pings = 0  # pings sent, sockets dropped (for tests and benchmarks)
        self.dropped = 0

    def start(self) -> None:
        self.tick.add(SWEEP, self.period, self._sweep, logger=log, what="socket liveness")

    async def stop(self) -> None:
        await self.tick.remove(SWEEP)

    async def _sweep(self) -> None:
        self.sweep()

    def sweep(self, now: float | None = None) -> tuple[int, int]:
        """One look at every socket: (pinged, dropped)."""
        if now is None:
            now = asyncio.get_running_loop().time()
        silent_since = now - self.heartbeat
        unanswered_since = now - self.pong_wait + SLACK
        pinged = dropped = 0
        for conn in list(self.hub.by_id.values()):
            heard = conn.heard_at
            pinged_at = conn.pinged_at
            if pinged_at is not None:
                if heard >= pinged_at:
                    conn.pinged_at = pinged_at = None  # answered
                elif pinged_at <= unanswered_since:
                    conn.abort()
                    dropped += 1
                    continue
                else:
                    continue  # still waiting for the answer
            if heard <= silent_since:
                transport = conn.transport
                if conn.closed or transport is None or transport.is_closing():
                    continue
                transport.write(PING_FRAME)
                conn.pinged_at = now
                pinged += 1
        self.pings += pinged
        self.dropped += dropped
        if dropped:
            log.info("dropped %d sockets that did not answer a ping", dropped)
        return pinged, dropped
