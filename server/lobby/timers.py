"""A table's timers on its owner's clock (:class:`~server.lobby.ports.Clock`), armed from the
machine's deadlines.

The machine hands timers out as data (:class:`~server.tables.machine.Deadline`); the table
driver arms each one here with the callback that hands it back to the machine when it is due.
One decision clock per table, not one per decision: a timer armed for an earlier decision
fires before the current one is due and re-arms itself, so a move costs no timer handle. Every
other deadline has one timer per (kind, side): a grace period per seat, a match's next game.
"""

from __future__ import annotations

from collections.abc import Callable

from server.lobby.ports import Clock, Handle
from server.tables.machine import CLOCK, Deadline

__all__ = ["TableTimers"]

OnDue = Callable[[Deadline], None]


class TableTimers:
    """The armed timers of one table (see the module docstring). The callbacks are held only
    while their timer is armed."""

    def __init__(self, clock: Clock) -> None:
        self._time = clock
        self._clock: Handle | None = None
        self._clock_due: float | None = None  # monotonic time the decision's clock runs out
        self._clock_deadline: Deadline | None = None
        self._clock_on_due: OnDue | None = None
        self._timers: dict[tuple[str, int | None], tuple[Deadline, Handle]] = {}

    @property
    def is_idle(self) -> bool:
        """No timer is armed."""
        return self._clock is None and not self._timers

    def arm(self, deadline: Deadline, now: float, on_due: OnDue) -> None:
        """Call ``on_due(deadline)`` at ``deadline.at`` (``now`` is on the same clock); it
        replaces the deadline of its kind (and side) armed before."""
        clock = self._time
        if deadline.kind == CLOCK:
            self._clock_deadline = deadline
            self._clock_on_due = on_due
            due = self._clock_due = clock.monotonic() + (deadline.at - now)
            if self._clock is None:
                self._clock = clock.call_at(due, self._clock_check)
            return
        key = (deadline.kind, deadline.side)
        old = self._timers.pop(key, None)
        if old is not None:
            old[1].cancel()
        self._timers[key] = (deadline, clock.call_later(max(0.0, deadline.at - now),
                                                       self._fire, deadline, on_due))

    def disarm(self, deadline: Deadline) -> None:
        """Drop ``deadline``'s timer (nothing when another deadline replaced it)."""
        if deadline.kind == CLOCK:
            if deadline is self._clock_deadline:
                self._disarm_clock()
            return
        key = (deadline.kind, deadline.side)
        entry = self._timers.get(key)
        if entry is not None and entry[0] is deadline:
            del self._timers[key]
            entry[1].cancel()

    def stop(self) -> None:
        """Drop every timer."""
        self._disarm_clock()
        for _deadline, handle in self._timers.values():
            handle.cancel()
        self._timers.clear()

    def _disarm_clock(self) -> None:
        if self._clock is not None:
            self._clock.cancel()
            self._clock = None
        self._clock_due = None
        self._clock_deadline = None
        self._clock_on_due = None

    def _clock_check(self) -> None:
        self._clock = None
        due = self._clock_due
        if due is None:
            return
        if self._time.monotonic() < due:
            self._clock = self._time.call_at(due, self._clock_check)
            return
        deadline, on_due = self._clock_deadline, self._clock_on_due
        self._clock_due = None
        self._clock_deadline = None
        self._clock_on_due = None
        if deadline is not None and on_due is not None:
            on_due(deadline)

    def _fire(self, deadline: Deadline, on_due: OnDue) -> None:
        key = (deadline.kind, deadline.side)
        entry = self._timers.get(key)
        if entry is not None and entry[0] is deadline:
            del self._timers[key]
        on_due(deadline)
