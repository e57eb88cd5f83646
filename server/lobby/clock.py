"""The lobby's clocks (:class:`~server.lobby.ports.Clock`): the event loop's, and a virtual one
that tests move by hand.

:class:`LoopClock` reads Unix time for ``now()`` and the running loop's time for
``monotonic()``, and arms its timers on the loop. :class:`VirtualClock` never moves by itself:
:meth:`VirtualClock.advance` moves both readings forward and fires the timers that fall due,
in order of their due time (in the order armed for the same time), each at its own time, so
a test of a rule about time runs in microseconds and the same way every time.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Awaitable, Callable
from typing import Any

from server.lobby.ports import Handle

__all__ = ["LoopClock", "VirtualClock", "VirtualHandle"]


class LoopClock:
    """Unix time, and the running event loop's time and timers."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        try:
            return asyncio.get_running_loop().time()
        except RuntimeError:  # no loop: the same base as asyncio's default loop
            return time.monotonic()

    def call_at(self, when: float, callback: Callable[..., None], *args: Any) -> Handle:
        return asyncio.get_running_loop().call_at(when, callback, *args)

    def call_later(self, delay: float, callback: Callable[..., None], *args: Any) -> Handle:
        loop = asyncio.get_running_loop()
        if delay <= 0:
            return loop.call_soon(callback, *args)
        return loop.call_later(delay, callback, *args)

    def sleep(self, seconds: float) -> Awaitable[None]:
        return asyncio.sleep(seconds)


class VirtualHandle:
    """A timer of a :class:`VirtualClock`."""

    __slots__ = ("args", "callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[..., None], args: tuple[Any, ...]
                 ) -> None:
        self.when = when
        self.callback = callback
        self.args = args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class VirtualClock:
    """A clock that only :meth:`advance` moves. ``start`` is its Unix time at monotonic 0."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._start = start
        self._monotonic = 0.0
        self._timers: list[tuple[float, int, VirtualHandle]] = []
        self._order = itertools.count()

    def now(self) -> float:
        return self._start + self._monotonic

    def monotonic(self) -> float:
        return self._monotonic

    def call_at(self, when: float, callback: Callable[..., None], *args: Any) -> VirtualHandle:
        handle = VirtualHandle(when, callback, args)
        heapq.heappush(self._timers, (when, next(self._order), handle))
        return handle

    def call_later(self, delay: float, callback: Callable[..., None], *args: Any
                   ) -> VirtualHandle:
        return self.call_at(self._monotonic + max(0.0, delay), callback, *args)

    def sleep(self, seconds: float) -> Awaitable[None]:
        """A future the timer ``seconds`` from now resolves (needs a running loop)."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not done.done():
                done.set_result(None)

        self.call_later(seconds, wake)
        return done

    @property
    def pending(self) -> int:
        """Timers armed and not cancelled."""
        return sum(1 for _when, _n, handle in self._timers if not handle.cancelled)

    def next_due(self) -> float | None:
        """The monotonic time of the next timer (None: none armed)."""
        self._drop_cancelled()
        return self._timers[0][0] if self._timers else None

    def advance(self, seconds: float = 0.0) -> int:
        """Move forward ``seconds`` (0: fire what is due now), firing every timer due by
        then in order, the clock set to each one's due time as it fires (timers armed by a
        callback fire too when they fall within). Returns how many fired."""
        if seconds < 0:
            raise ValueError("a clock does not go back")
        target = self._monotonic + seconds
        fired = 0
        while True:
            self._drop_cancelled()
            if not self._timers or self._timers[0][0] > target:
                break
            when, _n, handle = heapq.heappop(self._timers)
            self._monotonic = max(self._monotonic, when)
            handle.cancelled = True  # fired: cancelling it later does nothing
            handle.callback(*handle.args)
            fired += 1
        self._monotonic = target
        return fired

    def _drop_cancelled(self) -> None:
        timers = self._timers
        while timers and timers[0][2].cancelled:
            heapq.heappop(timers)
