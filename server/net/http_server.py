"""Serving the app: the TCP listener with a guard on connections (hardening limits).

aiohttp holds a connection whose request headers never finish for its keep-alive timeout
(75 s by default) and accepts as many connections as the process has file descriptors, so a
few thousand half-sent requests from one address used every descriptor (``/healthz`` timed
out, Redis could not be reached). :class:`ConnectionGuard` fixes both:

- **header timeout**: a connection that has no request in progress (headers not complete
  yet, or an idle keep-alive) for ``http_header_timeout`` seconds is closed; the body has
  its own timeout (``http_body_timeout``, in the handlers that read one);
- **connection cap**: at most ``http_max_connections`` connections (by default the
  file-descriptor limit minus a reserve for Redis and the log); a connection past the cap
  closes the oldest connection that has no request in progress (the slow or idle ones go
  first, so ``/healthz`` still gets in); when every connection is busy the new one is
  closed at once.

:func:`serve` runs the app like ``web.run_app`` (SIGTERM and SIGINT shut down cleanly) with
the guard installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
import signal
import threading
from collections.abc import Callable
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from server.config import Settings
from server.metrics import Metrics
from server.tick import TICK, Tick

log = logging.getLogger(__name__)

SWEEP = "connection-sweep"
"""The name of the guard's sweep on the node's tick."""

FD_RESERVE = 512 + 128
"""Descriptors kept out of the cap: the Redis pool (REDIS_MAX_CONNECTIONS) and a margin."""
MIN_CAP = 64


def connection_cap(settings: Settings) -> int:
    """``http_max_connections``, or the descriptor limit minus :data:`FD_RESERVE`."""
    if settings.http_max_connections > 0:
        return settings.http_max_connections
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 100_000
    return max(MIN_CAP, soft - FD_RESERVE)


def raise_fd_limit(target: int = 65536) -> None:
    """Raise the soft descriptor limit towards the hard one (a process may)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = target if hard == resource.RLIM_INFINITY else min(hard, target)
    if soft != resource.RLIM_INFINITY and soft < want:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


class ConnectionGuard:
    """Installed on an aiohttp ``web.Server``: header timeout and connection cap."""

    def __init__(self, server: web.Server, settings: Settings, metrics: Metrics, *,
                 tick: Tick | None = None,
                 monotonic: Callable[[], float] | None = None) -> None:
        """``tick``: the node's tick, which runs the sweep (one of its own if not given);
        ``monotonic``: the clock idle times are read on (the running loop's if not given)."""
        self.monotonic = monotonic
        self.server = server
        self.tick = tick if tick is not None else Tick()
        self.cap = connection_cap(settings)
        self.header_timeout = settings.http_header_timeout
        self.metrics = metrics
        self._idle_since: dict[RequestHandler, float] = {}
        self._original = server.connection_made
        # The handler calls ``self._manager.connection_made``: an instance attribute wins.
        server.connection_made = self._connection_made  # type: ignore[method-assign]

    def _connections(self) -> dict[RequestHandler, Any]:
        connections: dict[RequestHandler, Any] = self.server._connections
        return connections

    def _connection_made(self, handler: RequestHandler, transport: asyncio.Transport) -> None:
        self._original(handler, transport)
        now = self._now()
        self._idle_since[handler] = now
        connections = self._connections()
        self.metrics.http_connections.set(len(connections))
        if len(connections) <= self.cap:
            return
        # Over the cap: the oldest connection without a request in progress makes room.
        victim: RequestHandler | None = None
        oldest = now + 1
        for other in connections:
            if other is handler or other._request_in_progress:
                continue
            since = self._idle_since.get(other, now)
            if since < oldest:
                victim, oldest = other, since
        self.metrics.refused("http_connections")
        self._close(victim if victim is not None else handler)

    def _close(self, handler: RequestHandler) -> None:
        transport = self._connections().get(handler)
        self._idle_since.pop(handler, None)
        handler.force_close()
        if transport is not None:
            transport.close()

    def _now(self) -> float:
        return self.monotonic() if self.monotonic is not None else \
            asyncio.get_running_loop().time()

    def sweep(self) -> int:
        """Close every connection idle (no request in progress) for longer than the header
        timeout; the number closed."""
        now = self._now()
        connections = self._connections()
        idle = self._idle_since
        closed = 0
        for handler in list(connections):
            if handler._request_in_progress:
                idle.pop(handler, None)
                continue
            since = idle.setdefault(handler, now)
            if now - since > self.header_timeout:
                self._close(handler)
                closed += 1
        for gone in [h for h in idle if h not in connections]:
            del idle[gone]
        self.metrics.http_connections.set(len(connections))
        return closed

    async def _sweep(self) -> None:
        self.sweep()

    def start(self) -> None:
        """Sweep every ``min(1, header timeout / 4)`` seconds (on the tick)."""
        self.tick.add(SWEEP, min(1.0, self.header_timeout / 4), self._sweep, logger=log,
                      what="connection sweep")

    async def stop(self) -> None:
        await self.tick.remove(SWEEP)


async def start_site(app: web.Application, settings: Settings, metrics: Metrics, *,
                     shutdown_timeout: float, handle_signals: bool = False,
                     tick: Tick | None = None) -> tuple[web.AppRunner, ConnectionGuard, int]:
    """Set up the runner, the guard (its sweep on ``tick``, the node's) and the TCP site;
    the runner, guard and bound port."""
    runner = web.AppRunner(app, handle_signals=handle_signals, access_log=None,
                           shutdown_timeout=shutdown_timeout,
                           keepalive_timeout=settings.http_header_timeout)
    await runner.setup()
    assert runner.server is not None
    guard = ConnectionGuard(runner.server, settings, metrics, tick=tick)
    guard.start()
    site = web.TCPSite(runner, settings.host, settings.port, backlog=1024,
                       reuse_port=settings.reuse_port or None)
    await site.start()
    server: Any = site._server
    port = int(server.sockets[0].getsockname()[1]) if server is not None else settings.port
    return runner, guard, port


async def serve(app: web.Application, settings: Settings, metrics: Metrics) -> None:
    """Run until SIGTERM/SIGINT, then shut down cleanly (sockets closed with 1001, in-flight
    settlements and the write-behind buffer flushed)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    runner, guard, port = await start_site(app, settings, metrics, tick=app.get(TICK),
                                           shutdown_timeout=settings.shutdown_timeout)
    log.info("listening on http://%s:%d (at most %d connections, header timeout %g s)",
             settings.host, port, guard.cap, settings.http_header_timeout)
    try:
        await stop.wait()
        log.info("stopping (signal)")
    finally:
        # However the shutdown goes (a drain that waits on Redis, a settlement that never
        # ends, a socket that never closes), the node exits: the cleanup is cut off after
        # its bound, and a watchdog ends the process if even that does not return.
        bound = shutdown_bound(settings)
        watchdog = threading.Timer(bound + WATCHDOG_MARGIN, _exit_now, args=(bound,))
        watchdog.daemon = True
        watchdog.start()
        await guard.stop()
        try:
            async with asyncio.timeout(bound):
                await runner.cleanup()
        except TimeoutError:
            log.error("shutdown not done after %.1fs: stopping anyway", bound)
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)


WATCHDOG_MARGIN = 5.0
"""Seconds past :func:`shutdown_bound` after which a node still running is ended."""


def shutdown_bound(settings: Settings) -> float:
    """The longest a clean shutdown may take: each of its waits is bounded by
    ``shutdown_timeout`` (settlements before the drain, the sockets' closing handshakes,
    the HTTP handlers, the settlements again at cleanup), plus a few round trips to Redis."""
    return 4 * settings.shutdown_timeout + 5.0


def _exit_now(bound: float) -> None:
    log.critical("shutdown hung past %.1fs: exiting", bound + WATCHDOG_MARGIN)
    logging.shutdown()
    os._exit(1)
