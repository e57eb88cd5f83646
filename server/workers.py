"""``python -m server --workers N``: N node processes on one port, one per core.

The parent runs no node. It starts the embedded redis-server when there is no ``REDIS_URL``
(one, shared by every worker), picks the port when ``--port 0``, then starts each worker as
``python -m server`` with the same flags plus ``--workers 1 --reuse-port 1``, the port, the
Redis URL and its own node id (``<node_id>-<i>``, i from 1). Every worker listens on the port
with ``SO_REUSEPORT``, so the kernel spreads new connections over them; each is a node of the
cluster like a node on another machine: a player whose table is owned by another worker is
served through the node bus (docs/cluster.md). The workers know each other: the parent makes
a private folder for the local link (``server/cluster/link.py``) and gives each worker its
path and every worker's id (``--link-dir``, ``--link-peers``), so node messages between them
go over Unix sockets rather than through Redis (unless ``--local-link 0``); the folder is
removed when the parent exits.

Signals: SIGTERM and SIGINT to the parent are passed on to every worker (the workers are in
their own process group, so a Ctrl-C in a terminal reaches them once, through the parent);
each shuts down cleanly, and a worker still running :func:`stop_bound` seconds later is
killed. On Linux a worker also gets SIGTERM when the parent dies, whatever ends it.

A worker that exits while the others run (a crash, an operator's kill) is logged and not
restarted: the others go on serving the port, and its tables are taken over as a lost node's
are. The parent exits when no worker is left: 0 when they stopped on its signal, 1 when any
ended otherwise.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass

from server.config import Settings
from server.net.http_server import WATCHDOG_MARGIN, shutdown_bound

log = logging.getLogger("server.workers")

PR_SET_PDEATHSIG = 1
HANDLED = (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM)


@dataclass
class Worker:
    node_id: str
    process: subprocess.Popen[bytes]
    stopped_by_us: bool = False


def worker_ids(settings: Settings) -> list[str]:
    """The node ids of the workers: ``<node_id>-<i>``, i from 1."""
    return [f"{settings.node_id}-{index}" for index in range(1, settings.workers + 1)]


def worker_args(argv: Sequence[str], settings: Settings, port: int, redis_url: str | None,
                index: int, link_dir: str | None = None) -> list[str]:
    """The command line of worker ``index`` (from 1): the parent's flags, then the ones that
    make it a worker (argparse keeps a flag's last value)."""
    args = [sys.executable, "-m", "server", *argv, "--workers", "1", "--reuse-port", "1",
            "--port", str(port), "--node-id", worker_ids(settings)[index - 1]]
    if redis_url is not None:
        args += ["--redis-url", redis_url]
    if link_dir is not None:
        args += ["--link-dir", link_dir, "--link-peers", ",".join(worker_ids(settings))]
    return args


def shared_port(settings: Settings) -> tuple[int, socket.socket | None]:
    """The port every worker listens on. For ``--port 0`` a free one is bound here with
    ``SO_REUSEPORT`` and held (never listening, so it takes no connections) for the parent's
    life, so nobody else takes it before the workers do."""
    if settings.port != 0:
        return settings.port, None
    family, kind, proto, _name, address = socket.getaddrinfo(
        settings.host, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    holder = socket.socket(family, kind, proto)
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    holder.bind(address)
    return int(holder.getsockname()[1]), holder


def _as_worker() -> None:
    """In the worker, before exec: signals unblocked, SIGTERM when the parent dies."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED)
    name = ctypes.util.find_library("c")
    if sys.platform.startswith("linux") and name:
        ctypes.CDLL(name, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM))


def stop_bound(settings: Settings) -> float:
    """Seconds a worker may take to stop once signalled before it is killed: its own clean
    shutdown bound and watchdog, and a margin."""
    return shutdown_bound(settings) + 2 * WATCHDOG_MARGIN


def run_workers(argv: Sequence[str], settings: Settings, redis_url: str | None) -> int:
    """Start ``settings.workers`` workers and supervise them until none is left; the exit
    status (see the module). ``redis_url`` is the embedded store's, passed on to each."""
    port, holder = shared_port(settings)
    link_dir = tempfile.mkdtemp(prefix="table42-link-") if settings.local_link else None
    signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)
    workers: dict[int, Worker] = {}
    try:
        for index in range(1, settings.workers + 1):
            process = subprocess.Popen(
                worker_args(argv, settings, port, redis_url, index, link_dir),
                process_group=0, preexec_fn=_as_worker)
            workers[process.pid] = Worker(f"{settings.node_id}-{index}", process)
        log.info("%d workers on %s:%d: nodes %s", len(workers), settings.host, port,
                 ", ".join(w.node_id for w in workers.values()))
        return _supervise(workers, settings)
    finally:
        for worker in workers.values():  # only if the parent itself failed
            if worker.process.poll() is None:
                worker.process.kill()
                worker.process.wait()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED)
        if holder is not None:
            holder.close()
        if link_dir is not None:
            shutil.rmtree(link_dir, ignore_errors=True)


def _supervise(workers: dict[int, Worker], settings: Settings) -> int:
    failed = False
    deadline: float | None = None
    running = dict(workers)
    while running:
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        info = (signal.sigwaitinfo(HANDLED) if timeout is None
                else signal.sigtimedwait(HANDLED, timeout))
        if info is None:  # past the deadline: whoever is left is killed
            for worker in running.values():
                log.error("worker %s (pid %d) still running %.0f s after the signal: "
                          "killed", worker.node_id, worker.process.pid, stop_bound(settings))
                worker.process.kill()
            deadline = time.monotonic() + 5.0
        elif info.si_signo in (signal.SIGINT, signal.SIGTERM):
            log.info("signal %d: stopping %d workers", info.si_signo, len(running))
            for worker in running.values():
                worker.stopped_by_us = True
                with contextlib.suppress(ProcessLookupError):
                    worker.process.send_signal(info.si_signo)
            if deadline is None:
                deadline = time.monotonic() + stop_bound(settings)
        for pid, worker in list(running.items()):
            code = worker.process.poll()
            if code is None:
                continue
            del running[pid]
            if worker.stopped_by_us and code in (0, -signal.SIGINT, -signal.SIGTERM):
                continue  # stopped, or ended by the signal before its node had started
            failed = True
            log.error("worker %s (pid %d) exited with status %d; %d workers go on",
                      worker.node_id, pid, code, len(running))
    return 1 if failed else 0


def main_with_workers(argv: Sequence[str], settings: Settings, redis_url: str | None) -> int:
    """For ``server.__main__``: the exit status of the whole group."""
    if not hasattr(signal, "sigwaitinfo") or not hasattr(socket, "SO_REUSEPORT"):
        print("python -m server: --workers above 1 needs Linux or another system with "
              "SO_REUSEPORT and sigwaitinfo", file=sys.stderr)
        return 2
    return run_workers(argv, settings, redis_url)
