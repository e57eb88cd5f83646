"""The node's one tick: runs every periodic duty of the node when it is due.

The due times are kept by the pure :class:`server.schedule.Schedule`; :class:`Tick` is its
asyncio shell. One task sleeps until the earliest due time (one timer, no polling: nothing
due, nothing runs) and starts what is due, each run as a task of its own, so a slow duty
(a takeover scan claiming tables, a tournament step) never holds up another (the node's
heartbeat). A duty is not started again while its previous run is still going. A run that
raises is logged (Redis or the network away: a warning; anything else with its traceback)
and the duty stays scheduled. The task runs while duties are scheduled and ends with the
last one removed.

A node has one (``TICK`` in its application); a part built on its own (in a test, a
benchmark) makes its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web
from redis.exceptions import RedisError

from server.schedule import Schedule

__all__ = ["TICK", "Duty", "Tick"]

log = logging.getLogger(__name__)

Duty = Callable[[], Awaitable[object]]
"""A periodic duty of the node: one run of it, awaited."""


class Tick:
    """Runs named duties every so many seconds (see the module docstring)."""

    def __init__(self) -> None:
        self._schedule = Schedule()
        self._duties: dict[str, tuple[Duty, logging.Logger, str]] = {}
        self._runs: dict[str, asyncio.Task[None]] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._origin: float | None = None
        self._armed: float | None = None  # the due time the task sleeps until
        self._halts: list[Callable[[], None]] = []

    def add(self, name: str, period: float, duty: Duty, *, first: float | None = None,
            logger: logging.Logger = log, what: str | None = None) -> None:
        """Run ``duty`` every ``period`` seconds, first ``first`` seconds from now (default one
        period; 0: at once). Failures are logged on ``logger`` as ``what`` (default
        ``name``) failed. Every duty of a tick shares one grid origin (the first added)."""
        now = asyncio.get_running_loop().time()
        if self._origin is None:
            self._origin = now
        self._schedule.add(name, period, now=now, first=first, origin=self._origin)
        self._duties[name] = (duty, logger, what or name)
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="tick")
        self._rearm()

    def poke(self, name: str) -> None:
        """Run ``name`` at once (right after its run in progress, if one is)."""
        self._schedule.poke(name, asyncio.get_running_loop().time())
        self._rearm()

    async def remove(self, *names: str) -> None:
        """Stop running ``names``: a run in progress is cancelled and waited for."""
        runs = []
        for name in names:
            self._schedule.remove(name)
            self._duties.pop(name, None)
            run = self._runs.pop(name, None)
            if run is not None:
                run.cancel()
                runs.append(run)
        for run in runs:
            with contextlib.suppress(asyncio.CancelledError):
                await run
        if not len(self._schedule) and self._task is not None:
            task, self._task = self._task, None
            self._origin = None
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def on_halt(self, stop: Callable[[], None]) -> None:
        """Have :meth:`halt` call ``stop`` too: a duty of the node that runs off the tick
        (the node's pulse thread, ``server/cluster/pulse.py``)."""
        self._halts.append(stop)

    def halt(self) -> None:
        """Run nothing more, as if the process were paused (tests freeze a node so): every
        duty is forgotten, the task and every run in progress cancelled, and what was
        registered with :meth:`on_halt` stopped. A part started again adds its duties
        again."""
        halts, self._halts = self._halts, []
        for stop in halts:
            stop()
        if self._task is not None:
            self._task.cancel()
            self._task = None
        for run in self._runs.values():
            run.cancel()
        self._runs.clear()
        self._schedule = Schedule()
        self._duties.clear()
        self._origin = None

    def running(self, name: str) -> bool:
        """Whether a run of ``name`` is in progress."""
        return name in self._runs

    def _rearm(self) -> None:
        """Wake the task if something is due before the time it sleeps until."""
        due = self._schedule.next_due()
        if due is not None and (self._armed is None or due < self._armed):
            self._wake.set()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        schedule = self._schedule
        wake = self._wake
        while True:
            due = self._armed = schedule.next_due()
            timer = None if due is None else loop.call_at(due, wake.set)
            try:
                await wake.wait()
            finally:
                self._armed = None
                if timer is not None:
                    timer.cancel()
            wake.clear()
            for name in schedule.take_due(loop.time()):
                self._runs[name] = asyncio.create_task(self._one(name), name=f"tick:{name}")

    async def _one(self, name: str) -> None:
        duty, logger, what = self._duties[name]
        try:
            await duty()
        except (RedisError, OSError) as exc:
            logger.warning("%s failed: %s", what, exc)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("%s failed", what)
        finally:
            if self._runs.get(name) is asyncio.current_task():
                del self._runs[name]
                self._schedule.finished(name, asyncio.get_running_loop().time())
                self._rearm()


TICK = web.AppKey("tick", Tick)
"""The node's one tick in its aiohttp application (``create_app`` makes it)."""
