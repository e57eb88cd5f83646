"""``python -m server``: run one node of the match server
(``python -m server runner-key ...`` manages tournament runner keys, see docs/tournaments.md).

Settings come from flags and environment variables (``python -m server --help`` lists them;
``server/config.py`` has the table). Without ``REDIS_URL`` an embedded redis-server is started
for the life of the process; it keeps its data in the data folder (``--data-dir``) and finds it
again at the next start. It is started again when it dies (``server/store_supervisor.py``);
when it keeps dying the process stops as on SIGTERM and exits with status 3. SIGTERM and
SIGINT shut down cleanly: sockets are closed with 1001, in-flight settlements and the
write-behind buffer are flushed, then Redis (if embedded) stops.

``--workers N`` (``auto``: one per core) runs N such nodes on the port instead, one process
each, sharing the embedded redis-server (``server/workers.py``). The event loop is uvloop's
when uvloop is installed, unless ``--uvloop 0``.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import logging
import os
import signal
import socket
import sys
from collections.abc import Sequence

from aiohttp import web
from redis.exceptions import RedisError

from server.app import METRICS, create_app
from server.config import Settings, SettingsError
from server.config_args import settings_from
from server.embedded_redis import EmbeddedRedis, EmbeddedRedisError
from server.exits import (
    EXIT_STORE_FAILED,
    EXIT_USAGE,
    CommandFailed,
    run_command,
    store_unreachable,
)
from server.logs import setup_logging
from server.net.event_loop import loop_factory, run
from server.net.http_server import raise_fd_limit, serve
from server.store_supervisor import StoreSupervisor
from server.tournaments.cli import main as runner_key_main
from server.workers import main_with_workers

log = logging.getLogger("server")
PROG = "python -m server"


GC_THRESHOLDS = (700, 100, 100)
"""The cyclic garbage collector's thresholds for the server process. Nearly everything a move
allocates is freed by reference counting; the older generations are walked a tenth as often
as Python's default (700, 10, 10), which under load cost about a tenth of the CPU and long
pauses (BENCHMARKS.md: instructions per move with either setting)."""


async def _settle_heap(app: web.Application) -> None:
    """Once the services are up: move every object made so far (modules, the app, its
    clients) out of the garbage collector's sight, so its full collections only walk what
    games and sockets create (a full walk of a large heap stalls the event loop)."""
    del app
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server (or its ``runner-key`` command); returns the exit status
    (``server/exits.py``: 1 when it cannot listen or reach Redis, 2 for a bad setting, 3
    when the embedded store kept dying; 0 after SIGTERM or Ctrl-C)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["runner-key"]:
        # python -m server runner-key create NAME | list | revoke NAME
        return runner_key_main(args[1:])
    return run_command(PROG, lambda: _main(args))


def _main(args: list[str]) -> int:
    try:
        settings = settings_from(args)
    except SettingsError as exc:
        raise CommandFailed(str(exc), EXIT_USAGE) from None
    setup_logging(settings.log_level, json_lines=settings.json_logs)
    if not settings.reuse_port:
        check_port_free(settings.host, settings.port)
    raise_fd_limit()
    embedded: EmbeddedRedis | None = None
    supervisor: StoreSupervisor | None = None
    if not settings.redis_url:
        try:
            embedded = EmbeddedRedis(data_dir=settings.data_folder()).start()
        except EmbeddedRedisError as exc:
            raise CommandFailed(str(exc)) from None
        settings = settings.with_changes(redis_url=embedded.url)
        if embedded.adopted:
            log.warning("the redis-server of %s (process %s) was left running by a server "
                        "that ended without stopping it: this one takes it over",
                        embedded.data_dir, embedded.pid or "?")
        log.info("REDIS_URL not set: the embedded redis-server keeps its data in %s (%s)",
                 embedded.data_dir, embedded.url)
        # Started again when it dies; when it keeps dying the process stops as on SIGTERM
        # (the workers' parent passes it on to every worker) and exits with its own status.
        supervisor = StoreSupervisor(
            embedded, restarts=settings.embedded_restarts,
            window=settings.embedded_restart_window,
            on_give_up=lambda _why: os.kill(os.getpid(), signal.SIGTERM)).start()
    try:
        if settings.workers > 1:
            code = main_with_workers(args, settings, embedded.url if embedded else None)
        else:
            code = _serve(settings)
    finally:
        if supervisor is not None:
            supervisor.stop()
    if supervisor is not None and supervisor.failure is not None:
        raise CommandFailed(supervisor.failure, EXIT_STORE_FAILED)
    return code


def check_port_free(host: str, port: int) -> None:
    """Raise :class:`CommandFailed` when ``host:port`` cannot be listened on (another server
    on it, a port below 1024 without the right): said before anything is started."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise CommandFailed(f"cannot listen on {host}: {exc.strerror}; give an address of "
                            "this machine with --host", EXIT_USAGE) from None
    for family, kind, proto, _name, address in infos:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                raise CommandFailed(_listen_error(host, port, exc)) from None


def _listen_error(host: str, port: int, exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        return (f"port {port} on {host} is in use (another server?): stop it, or choose "
                "another port with --port")
    if exc.errno == errno.EACCES:
        return (f"not allowed to listen on port {port} (ports below 1024 need privileges): "
                "choose another with --port")
    return f"cannot listen on {host}:{port}: {exc.strerror or exc}"


def _serve(settings: Settings) -> int:
    """Run one node in this process until SIGTERM or SIGINT."""
    app = create_app(settings)
    app.on_startup.append(_settle_heap)
    # Like web.run_app, with the connection guard (server/net/http_server.py) installed;
    # SIGTERM and SIGINT end serve() normally, so everything closes in order.
    uvloop = loop_factory(settings.uvloop) is not None
    log.info("event loop: %s", "uvloop" if uvloop else "asyncio")
    try:
        with contextlib.suppress(KeyboardInterrupt):
            run(serve(app, settings, app[METRICS]), use_uvloop=uvloop)
    except RedisError as exc:  # only the start lets one through: Redis never answered
        raise store_unreachable(settings.redis_url or "?", exc) from None
    except OSError as exc:
        if exc.errno in (errno.EADDRINUSE, errno.EACCES):
            raise CommandFailed(_listen_error(settings.host, settings.port, exc)) from None
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
