"""The embedded store's supervisor: the redis-server that ``python -m server`` runs without
``REDIS_URL`` is started again when it dies.

A thread of its own (never the event loop, which may be busy) waits for the redis-server's
process to end: ``waitpid`` on the child, or a pidfd on a store adopted from an owner that
died. When it ends while nobody asked it to, the death is logged and the redis-server is
started again on the same socket and folder, from its append-only file; the node meanwhile
treats it as any Redis outage (its tables are held, requests are refused with ``unavailable``
and ``retry_after``, ``/healthz`` answers 503) and its Redis check finds it back.

Repeated failures are not hidden: a death (or a start that fails) beyond
``embedded_restarts`` within ``embedded_restart_window`` seconds makes the supervisor give
up: it says why (:attr:`StoreSupervisor.failure`) and calls ``on_give_up``, which in
``python -m server`` stops the process the way SIGTERM does; it then exits with
:data:`server.exits.EXIT_STORE_FAILED`.

With ``--workers N`` the parent process, which started the store, runs the supervisor; the
workers only see an outage of their Redis.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator

from server.embedded_redis import EmbeddedRedis, EmbeddedRedisError

log = logging.getLogger("server.store_supervisor")


RETRY_DELAYS = (0.1, 0.2, 0.5, 1.0, 2.0)
"""Seconds before each further try when the redis-server fails to start again (the last one
repeats)."""

SIGNALS_OF_THE_MAIN_THREAD = (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""Signals the supervisor thread never takes: the main thread waits for them
(``sigwaitinfo`` in the workers' parent) or handles them."""


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


@contextlib.contextmanager
def _signals_blocked() -> Iterator[None]:
    """Block the main thread's signals around the start of a thread, which inherits the
    mask: a process-directed signal is then never delivered to (and lost in) that thread."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS_OF_THE_MAIN_THREAD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class StoreSupervisor:
    """Watches ``store`` (started) from a thread and starts it again when it dies (see the
    module). ``restarts``/``window``: how many restarts any ``window`` seconds may hold;
    ``on_give_up(message)``: called once, from the thread, when there would be more."""

    def __init__(self, store: EmbeddedRedis, *, restarts: int, window: float,
                 on_give_up: Callable[[str], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.restarts = restarts
        self.window = window
        self.on_give_up = on_give_up
        self.clock = clock
        self.failure: str | None = None
        """Why the supervisor gave up (one line), None while it has not."""
        self.restarted = 0
        """Times the redis-server was started again."""
        self._deaths: collections.deque[float] = collections.deque()
        self._lock = threading.Lock()  # a restart and stop() never overlap
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> StoreSupervisor:
        thread = threading.Thread(target=self._run, name="store-supervisor", daemon=True)
        with _signals_blocked():
            thread.start()
        self._thread = thread
        return self

    @property
    def pid(self) -> int | None:
        """The redis-server's process id once it runs (waits for a restart under way)."""
        with self._lock:
            return self.store.pid

    def stop(self) -> None:
        """Stop watching and stop the store (written out first, as
        :meth:`EmbeddedRedis.stop` does)."""
        self._stopping.set()
        with self._lock:
            self.store.stop()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(10)
            self._thread = None

    def _run(self) -> None:
        while not self._stopping.is_set():
            with self._lock:
                if self._stopping.is_set():
                    return
                pid = self.store.pid
                wait = self.store.exit_waiter()
            if wait is None:
                log.warning("the embedded redis-server is not watched (no process id): it "
                            "is not started again if it dies")
                return
            how = wait()
            if self._stopping.is_set():
                return
            log.error("the embedded redis-server (pid %s) %s", pid, how)
            if not self._bring_back(how):
                return

    def _bring_back(self, how: str) -> bool:
        """Start the store again, trying anew after a failed start; False when it gave up
        (or the supervisor is stopping)."""
        died = self.clock()
        tries = 0
        while True:
            if self._too_often(how):
                return False
            log.warning("starting the embedded redis-server again from its append-only file "
                        "in %s (Redis is away meanwhile: the tables are held)",
                        self.store.data_dir)
            started = self.clock()
            with self._lock:
                if self._stopping.is_set():
                    return False
                try:
                    self.store.restart()
                except EmbeddedRedisError as exc:
                    how = " ".join(f"did not start again: {exc}".split())
                    log.error("the embedded redis-server %s", how)
                else:
                    self.restarted += 1
                    log.warning("the embedded redis-server is back (pid %s, restart %d): "
                                "%.2f s after it died, %.2f s to start",
                                self.store.pid, self.restarted, self.clock() - died,
                                self.clock() - started)
                    return True
            delay = RETRY_DELAYS[min(tries, len(RETRY_DELAYS) - 1)]
            tries += 1
            if self._stopping.wait(delay):
                return False

    def _too_often(self, how: str) -> bool:
        """Count one more death (or failed start); past the limit, give up (True)."""
        now = self.clock()
        self._deaths.append(now)
        while self._deaths and self._deaths[0] < now - self.window:
            self._deaths.popleft()
        if len(self._deaths) <= self.restarts:
            return False
        self.failure = (
            f"the embedded redis-server failed {_times(len(self._deaths))} within "
            f"{self.window:g} s (embedded_restarts allows {self.restarts}; last: {how}); "
            f"the server stops. Its log: {self._log_path()}")
        log.critical("%s", self.failure)
        try:
            self.on_give_up(self.failure)
        except Exception:
            log.exception("stopping the server after the store failed")
        return True

    def _log_path(self) -> str:
        folder = self.store.data_dir
        return "?" if folder is None else str(folder / "redis.log")
