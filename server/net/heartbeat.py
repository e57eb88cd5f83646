"""The WebSocket heartbeat of a node's sockets, as one duty of the node's tick.

Instead of a timer per socket (aiohttp's ``heartbeat=``, re-armed on every frame received),
one sweep every ``heartbeat / 4`` seconds looks at each socket of the hub: a socket that has
sent nothing for ``heartbeat`` seconds gets a WebSocket ping, and a socket pinged that has
sent nothing for ``heartbeat / 2`` seconds since is dropped (as aiohttp did: no closing
handshake, the peer is gone or stuck). Any frame counts as an answer (a pong, a message, a
ping of the client's): the socket's reader notes the time of each (``Connection.heard_at``),
so a busy socket is never pinged and nothing is armed or re-armed per frame.

Keep-alives, the other direction (PROTOCOL.md §1): a client that asked for them (``hello``'s
``keepalive``, or ``?keepalive=1``) must hear from the node at least every few seconds to
know it is not silent. Rather than each such client pinging (a wake-up, a decode and an
answer per ping: at 200 quiet sockets, 60 a second), one sweep every :data:`KEEPALIVE_PERIOD`
writes one pre-encoded ``{"type": "alive"}`` frame to each socket that was pushed nothing in
the whole previous period: a quiet socket hears from its node every 2 periods at most.

Bounds (``h`` = ``heartbeat``, 20 s by default): a silent socket is pinged after ``h`` to
``1.25 h`` of silence and dropped ``h / 2`` after that ping, so between ``1.5 h`` and
``1.75 h`` after its last frame (aiohttp's own timer: ``1.5 h``).
"""

from __future__ import annotations

import logging

from server.net.connection import Hub
from server.protocol.codec import Outgoing, WireFormat
from server.tick import Tick

__all__ = ["ALIVE", "KEEPALIVE", "KEEPALIVE_PERIOD", "PING_FRAME", "SWEEP", "SocketHeartbeat"]

log = logging.getLogger(__name__)

SWEEP = "socket-heartbeat"
"""The name of the sweep on the node's tick."""
KEEPALIVE = "socket-keepalive"
"""The name of the keep-alive sweep on the node's tick."""
KEEPALIVE_PERIOD = 1.0
"""Seconds between two keep-alive sweeps: a quiet socket that asked for them hears from the
node at least every 2 s (the clients ping after 3 s of quiet)."""
ALIVE = Outgoing({"type": "alive"})
"""The keep-alive message, encoded once per format."""
PING_FRAME = b"\x89\x00"
"""A whole WebSocket ping frame from the server: FIN, opcode 9, unmasked, no payload."""
SLACK = 0.01
"""Seconds: a ping whose pong wait ends this soon after a sweep is judged at that sweep
(the sweeps fall on a grid; the wait is a whole number of sweeps)."""


class SocketHeartbeat:
    """Pings silent sockets and drops those that do not answer (see the module docstring)."""

    def __init__(self, hub: Hub, tick: Tick, heartbeat: float) -> None:
        self.hub = hub
        self.tick = tick
        self.heartbeat = heartbeat
        self.pong_wait = heartbeat / 2
        self.period = heartbeat / 4
        self.pings = 0  # pings sent, sockets dropped, keep-alives (tests and benchmarks)
        self.dropped = 0
        self.keepalives = 0
        self._frames: dict[WireFormat, bytes] = {}

    def start(self) -> None:
        self.tick.add(SWEEP, self.period, self._sweep, logger=log, what="socket heartbeat")
        self.tick.add(KEEPALIVE, KEEPALIVE_PERIOD, self._keep_alive, logger=log,
                      what="socket keep-alives")

    async def stop(self) -> None:
        await self.tick.remove(SWEEP)
        await self.tick.remove(KEEPALIVE)

    async def _keep_alive(self) -> None:
        self.keep_alive()

    def keep_alive(self) -> int:
        """Write a keep-alive to every socket that asked for them and was pushed nothing in
        the whole period now ending; the period after starts. How many were written."""
        hub = self.hub
        ended = hub.period
        hub.period = ended + 1
        frames = self._frames
        sent = 0
        for conn in hub.by_id.values():
            if not conn.keepalive or conn.pushed >= ended:
                continue
            transport = conn.transport
            if conn.closed or transport is None or transport.is_closing():
                continue
            fmt = conn.session.format
            frame = frames.get(fmt)
            if frame is None:
                frame = frames[fmt] = ALIVE.wire(fmt, False)
            transport.write(frame)
            conn.pushed = ended + 1  # counts as pushed in the new period: every 2 at most
            sent += 1
        self.keepalives += sent
        return sent

    async def _sweep(self) -> None:
        self.sweep()

    def sweep(self, now: float | None = None) -> tuple[int, int]:
        """One look at every socket: (pinged, dropped)."""
        if now is None:
            now = self.hub.clock.monotonic()
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
