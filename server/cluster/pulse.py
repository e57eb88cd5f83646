"""A node's pulse: its heartbeat, its Redis probe and its event loop's lag, on a thread of its own.

Busy is not dead. A node whose event loop is busy (a long request, a burst of work, a machine
short of CPU) must not look dead to its peers, nor take its own slowness for a Redis outage.
So neither its heartbeat nor its view of Redis runs on the loop: :class:`NodePulse` runs a
thread with its own synchronous Redis connection (redis-py) that

* watches the loop: every :data:`WATCH_PERIOD` it posts a callback to the loop
  (``call_soon_threadsafe``) and times how long it waits to run. :meth:`NodePulse.lag` is the
  last wait (or the current one, when longer); :meth:`NodePulse.stuck_for` how long the loop
  has not run a posted callback (0 when it did within a watch period);
* beats the node's heart every ``lease_renew`` (``node_heartbeat.lua``: the node set, the
  players online here, the loop's lag in ``{nodes}:lag``), however busy the loop. A loop stuck
  for longer than ``loop_stuck_limit`` is not busy but hung: the heartbeat is written to end
  at ``stuck since + loop_stuck_limit`` (never later than ``lease_ttl`` ahead), then stops,
  so the peers take the node's tables over from then, as from a node whose process is gone;
* probes Redis every ``redis_check_interval`` (a GET of the store's identity): a probe that
  answers is health, however late the loop reads it. When a heartbeat or a probe last
  failed is :attr:`NodePulse.failed_at` (a heartbeat or probe still unanswered after
  :data:`SLOW_ANSWER` counts as failing now: a cluster client retrying through a failover
  answers only after a second or more): a node cut off from the store counts no peer dead
  for a while after (``server/lobby/ownership.py``).

What the loop must act on (the probe's answer changed or read another store identity, a
heartbeat found the node's time had run out, the clock offset to Redis moved) is handed over
as :class:`PulseNews` through one coalesced ``call_soon_threadsafe`` at a time: a loop stuck
for 10 s reads the latest state once when it comes back, not a queue of stale ones.

The thread touches no asyncio object but through ``call_soon_threadsafe``; the loop's side
sets :attr:`NodePulse.online` (read by the thread). :meth:`NodePulse.stop` joins the thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis
from redis.exceptions import RedisError

from server.store.keys import Keys
from server.store.redis_client import CLUSTER_SCHEME
from server.store.scripts import load_script

__all__ = ["WATCH_PERIOD", "NodePulse", "PulseNews"]

log = logging.getLogger(__name__)

WATCH_PERIOD = 0.1
"""Seconds between two callbacks posted to the loop to time its lag."""
LAG_STEP_MS = 10
"""The lag published with the heartbeat is rounded to this (ms); it is written only when it
changed, so an idle node writes it once."""
STUCK_LOG_AFTER = 2.0
"""A loop stuck this long (seconds) is logged, once per stall, by the thread."""
SLOW_ANSWER = 0.25
"""A heartbeat or probe that has waited this long (seconds) for Redis counts as failing until
it answers: a store command on a healthy store answers in a millisecond, and a cluster
client retrying through a failover (``CLUSTERDOWN``, a refused connection) answers only after
a second or more, while a peer's heartbeat may be running out for the same reason."""


class _LoopClosed(Exception):
    """The loop the thread reports to is closed: the thread ends."""


@dataclass(frozen=True, slots=True)
class PulseNews:
    """What the thread learned that the loop acts on (the latest state, not a history).

    ``up``: the latest probe answered; ``found``: the store identity it read (None: none, or
    no answer); ``probed_at``: when that probe started (monotonic; a probe started before the
    loop wrote a new identity is not a new loss); ``late``: a heartbeat since the last news
    found the node's time had run out (peers may have taken its tables); ``clock_offset``:
    Redis's clock less this node's, seconds, from the latest heartbeat (None: none yet)."""

    up: bool
    found: str | None
    probed_at: float
    late: bool
    clock_offset: float | None


def sync_client(url: str, timeout: float) -> Any:
    """A synchronous client for ``url`` (a cluster client for ``redis+cluster://``), every
    command bounded by ``timeout`` seconds."""
    if url.startswith(CLUSTER_SCHEME):
        from redis.cluster import RedisCluster

        return RedisCluster.from_url(  # type: ignore[no-untyped-call]
            "redis://" + url[len(CLUSTER_SCHEME):], socket_timeout=timeout,
            socket_connect_timeout=timeout)
    # One thread, one command at a time: the pool holds one connection.
    return redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)


class NodePulse:
    """The thread of one node (see the module). Needs the node's Redis URL, keys and id, and
    its timings: ``lease_ttl``, ``lease_renew``, ``check_interval`` (the probe's period) and
    ``stuck_limit`` (seconds a stuck loop keeps the node alive)."""

    def __init__(self, url: str, keys: Keys, node_id: str, *, lease_ttl: float,
                 lease_renew: float, check_interval: float, stuck_limit: float) -> None:
        self.url = url
        self.keys = keys
        self.node_id = node_id
        self.lease_ttl = lease_ttl
        self.lease_renew = lease_renew
        self.check_interval = check_interval
        self.stuck_limit = stuck_limit
        self.probe_timeout = max(check_interval, 2.0)
        self.online: int | None = None  # players connected here: set on the loop
        self.online_count: Callable[[], int] | None = None  # asked on the loop, if given
        self.beat_at = -float("inf")  # monotonic time of the last heartbeat written
        self.answered_at = -float("inf")  # monotonic start of the last probe answered
        self._failed_at = -float("inf")  # monotonic time of the last heartbeat or probe failed
        self._asking_since: float | None = None  # monotonic start of the step under way
        self.beats = 0  # heartbeats written (for tests and the bench)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_news: Callable[[PulseNews], None] | None = None
        self._thread: threading.Thread | None = None
        self._client: Any = None  # the thread's own (synchronous) Redis client
        self._script: Any = None  # node_heartbeat.lua on it
        self._stop = threading.Event()
        self._lock = threading.Lock()
        # Loop watch: when the pending callback was posted (None: none pending), and the
        # wait of the last one that ran.
        self._posted: float | None = None
        self._last_lag = 0.0
        self._counted_at = -float("inf")  # when online_count was last asked
        # News for the loop, and whether a delivery is posted and not run yet.
        self._up = True
        self._found: str | None = None
        self._probed_at = 0.0
        self._late = False
        self._offset: float | None = None
        self._told: tuple[bool, str | None, float | None] | None = None
        self._delivery_posted = False
        self._lag_written: int | None = None
        self._stuck_logged = False

    # --- for the loop ------------------------------------------------------------------------

    @property
    def failed_at(self) -> float:
        """Monotonic time a heartbeat or probe last failed; now, while one has waited for its
        answer longer than :data:`SLOW_ANSWER`."""
        asking, now = self._asking_since, time.monotonic()
        if asking is not None and now - asking > SLOW_ANSWER:
            return now
        return self._failed_at

    def lag(self) -> float:
        """Seconds the loop took to run the last callback posted to it, or has been waiting
        to run the current one, whichever is longer."""
        return max(self._last_lag, self.stuck_for())

    def ask(self) -> None:
        """Tell the loop what the next probe finds even if it was told so last (safe from
        any thread): the loop marked Redis away on a failed write of its own."""
        with self._lock:
            self._told = None

    def stuck_for(self) -> float:
        """Seconds the loop has not run a callback posted to it (0 when none is pending)."""
        posted = self._posted
        return 0.0 if posted is None else max(0.0, time.monotonic() - posted)

    def answered_since(self, when: float) -> bool:
        """Whether a probe of the thread started at ``when`` (monotonic) or later answered
        (and none failed since)."""
        with self._lock:
            return self._up and self.answered_at >= when

    def start(self, on_news: Callable[[PulseNews], None]) -> None:
        """Start the thread (on the running loop): ``on_news`` is called on the loop with
        each :class:`PulseNews`."""
        self._loop = asyncio.get_running_loop()
        self._on_news = on_news
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f"pulse-{self.node_id}",
                                        daemon=True)
        self._thread.start()

    def halt(self) -> None:
        """Stop the thread without waiting for it (as if the process were paused: tests)."""
        self._stop.set()

    async def stop(self) -> None:
        """Stop the thread and wait for it (its Redis command in flight ends first)."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stop.set()
        await asyncio.to_thread(thread.join, self.probe_timeout + 5.0)

    # --- the thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        now = time.monotonic()
        next_watch, next_probe, next_beat = now, now, now + self.lease_renew
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                if now >= next_watch:
                    self._step(self._watch, now, asks=False)
                    next_watch = now + WATCH_PERIOD
                if now >= next_probe:
                    self._step(self._probe)
                    next_probe = max(next_probe + self.check_interval, time.monotonic())
                if now >= next_beat:
                    self._step(self._beat)
                    next_beat = max(next_beat + self.lease_renew, time.monotonic())
                self._stop.wait(max(0.0, min(next_watch, next_probe, next_beat)
                                    - time.monotonic()))
        except _LoopClosed:  # the process is ending
            pass
        finally:
            if self._client is not None:
                with contextlib.suppress(RedisError, OSError):
                    self._client.close()
                self._client = self._script = None

    def _step(self, step: Callable[..., None], *args: Any, asks: bool = True) -> None:
        """Run one step; whatever it raises is logged and the thread goes on (a thread
        that died would stop the heartbeat of a live node), unless the loop is closed."""
        if asks:  # a step that asks Redis
            self._asking_since = time.monotonic()
        try:
            step(*args)
        except Exception as exc:
            loop = self._loop
            if loop is None or loop.is_closed():
                raise _LoopClosed from exc
            log.exception("node pulse: %s failed", getattr(step, "__name__", "a step"))
        finally:
            self._asking_since = None

    def _connect(self) -> Any:
        """The thread's client (made at first use: a cluster client connects when made)."""
        if self._client is None:
            client = sync_client(self.url, self.probe_timeout)
            self._script = client.register_script(load_script("node_heartbeat.lua"))
            self._client = client
        return self._client

    def _post(self, callback: Callable[..., None], *args: Any) -> None:
        loop = self._loop
        assert loop is not None
        loop.call_soon_threadsafe(callback, *args)

    def _watch(self, now: float) -> None:
        posted = self._posted
        if posted is None:
            self._posted = now
            self._post(self._ran, now)
            return
        stuck = now - posted
        if stuck >= STUCK_LOG_AFTER and not self._stuck_logged:
            self._stuck_logged = True
            log.warning("event loop stuck for %.1fs: the heartbeat goes on from its own "
                        "thread until %.0fs (loop_stuck_limit)", stuck, self.stuck_limit)

    def _ran(self, posted: float) -> None:
        """On the loop: a watch callback ran."""
        wait = time.monotonic() - posted
        self._last_lag = wait
        if self._stuck_logged:
            self._stuck_logged = False
            log.warning("event loop back after %.1fs stuck", wait)
        count = self.online_count
        if count is not None and posted >= self._counted_at + self.lease_renew / 2:
            self._counted_at = posted
            self.online = count()
        self._posted = None

    def _probe(self) -> None:
        started = time.monotonic()
        try:
            raw = self._connect().get(self.keys.store_id)
        except (RedisError, OSError) as exc:
            self._failed_at = time.monotonic()
            if self._up:
                log.warning("Redis probe failed: %r", exc)
            up, found = False, None
        else:
            up, found = True, None if raw is None else (
                raw.decode() if isinstance(raw, bytes) else str(raw))
        with self._lock:  # read together by answered_since
            if up:
                self.answered_at = started
            self._up, self._found, self._probed_at = up, found, started
        self._tell()

    def _beat(self) -> None:
        stuck = self.stuck_for()
        ttl = min(self.lease_ttl, self.stuck_limit - stuck)
        if ttl <= 0:
            return  # hung past the limit: the peers take its tables over
        lag_ms = int(self.lag() * 1000) // LAG_STEP_MS * LAG_STEP_MS
        lag_arg = "" if lag_ms == self._lag_written else str(lag_ms)
        try:
            self._connect()
            now_ms, previous = (int(x) for x in self._script(
                keys=[self.keys.nodes, self.keys.online, self.keys.node_lag],
                args=[self.node_id, int(ttl * 1000),
                      "" if self.online is None else self.online, lag_arg]))
        except (RedisError, OSError) as exc:
            self._failed_at = time.monotonic()
            log.warning("ownership: heartbeat failed: %r", exc)
            return
        self.beat_at = time.monotonic()
        self.beats += 1
        if lag_arg:
            self._lag_written = lag_ms
        with self._lock:
            self._offset = now_ms / 1000 - time.time()
            if 0 <= previous < now_ms:
                self._late = True
        self._tell()

    def _tell(self) -> None:
        """Post the news to the loop when it changed something the loop acts on (one
        delivery pending at a time)."""
        with self._lock:
            offset = None if self._offset is None else round(self._offset, 2)
            state = (self._up, self._found, offset)
            if self._delivery_posted or (state == self._told and not self._late):
                return
            self._delivery_posted = True
        self._post(self._deliver)

    def _deliver(self) -> None:
        """On the loop: hand the latest news over."""
        with self._lock:
            self._delivery_posted = False
            news = PulseNews(self._up, self._found, self._probed_at, self._late, self._offset)
            self._late = False
            self._told = (news.up, news.found,
                          None if news.clock_offset is None else round(news.clock_offset, 2))
        if self._on_news is not None:
            self._on_news(news)
