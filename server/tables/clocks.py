"""A table's timers: the decision clock, each seat's grace period and a match's next game,
which of them are in force, and what a hold, a resume and a takeover do to them (pure).

Timers are data (:class:`~server.tables.model.Deadline`) kept in the state: the decision clock
in ``TableState.clock``, a seat's grace period in ``Seat.grace``, a match's next game in
``TableState.next_game``. The commands only start and end them there; :func:`wanted` says,
from the state alone, which timers should be armed, and :class:`Timers` keeps what the shell
has armed and hands out the difference after each command (:meth:`Timers.reconcile`): that is
the one place where timers are armed and disarmed.
"""

from __future__ import annotations

from server.rules import Side
from server.tables.model import (
    CLOCK,
    GRACE,
    NEXT_GAME,
    Deadline,
    Hold,
    MachineSettings,
    Seat,
    TableState,
)

Slots = tuple[Deadline | None, Deadline | None, Deadline | None, Deadline | None]
"""The timers by slot: the decision clock, side 0's grace, side 1's grace, the next game."""

NONE: Slots = (None, None, None, None)
NO_CHANGE: tuple[tuple[Deadline, ...], tuple[Deadline, ...]] = ((), ())


def wanted(t: TableState) -> Slots:
    """The timers that should be armed now: those in force, none while the table is held."""
    if t.held is not None:
        return NONE
    s0, s1 = t.seats
    return (t.clock, None if s0 is None else s0.grace, None if s1 is None else s1.grace,
            t.next_game)


class Timers:
    """The timers the shell has armed (by slot, see :data:`Slots`)."""

    def __init__(self) -> None:
        self.armed: Slots = NONE

    def reconcile(self, t: TableState) -> tuple[tuple[Deadline, ...], tuple[Deadline, ...]]:
        """``(arm, cancel)``: the timers to arm (each replaces the one armed in its slot) and
        those to disarm (their slot is empty now) so that the armed ones are :func:`wanted`."""
        want = wanted(t)
        armed = self.armed
        if want[1] is armed[1] and want[2] is armed[2] and want[3] is armed[3]:
            # Most commands change the decision clock only, or nothing.
            clock, old = want[0], armed[0]
            if clock is old:
                return NO_CHANGE
            self.armed = want
            if clock is not None:
                return (clock,), ()
            assert old is not None
            return (), (old,)
        arm: list[Deadline] = []
        cancel: list[Deadline] = []
        for slot in range(4):
            new, old = want[slot], armed[slot]
            if new is old:
                continue
            if new is not None:
                arm.append(new)
            elif old is not None:
                cancel.append(old)
        self.armed = want
        return tuple(arm), tuple(cancel)

    def fired(self, deadline: Deadline) -> None:
        """``deadline``'s timer went off: it is armed no more."""
        a, b, c, d = self.armed
        self.armed = (None if a is deadline else a, None if b is deadline else b,
                      None if c is deadline else c, None if d is deadline else d)

    def forget(self) -> None:
        """Nothing is armed (a machine rebuilt from its log, before the shell arms its timers)."""
        self.armed = NONE


# --- the decision clock ------------------------------------------------------------------


def sync_clock(t: TableState, now: float) -> None:
    """Start a fresh decision clock whenever the decision awaited has changed (none: no
    decision is awaited). A table has one decision clock: a new one replaces the one in
    force."""
    game = t.game
    if game is None or t.finishing or game.is_over or game.to_act is None:
        stop_clock(t)
        return
    token = (t.game_no, len(game.history), game.phase)
    if token == t.clock_token:
        return
    t.clock_token = token
    side = t.clock_side = game.to_act
    at = t.deadline = now + t.settings.decision_time
    t.clock = Deadline(CLOCK, int(side), at)


def stop_clock(t: TableState) -> None:
    """No decision clock runs (a game's end, a closed table)."""
    t.clock = None
    t.clock_side = None
    t.clock_token = None
    t.deadline = None


def strike(t: TableState, side: Side) -> bool:
    """``side`` let the clock run out: one more strike; True when it is the game's
    ``max_strikes``-th, which forfeits the game (a match: the match)."""
    t.clock_token = None
    t.strikes[side] += 1
    return t.strikes[side] >= t.settings.max_strikes


# --- grace periods -----------------------------------------------------------------------


def grace_seconds(settings: MachineSettings, now: float, lost_at: float | None) -> float:
    """Seconds from ``now`` a player who has just lost their last socket has to come back:
    ``grace_period``; when that socket's node was found dead at ``lost_at`` (nobody's fault but
    the server's), up to ``node_loss_grace`` after ``lost_at`` if that is later."""
    grace = settings.grace_period
    if lost_at is None:
        return grace
    return max(grace, lost_at + settings.node_loss_grace - now)


def start_grace(seat: Seat, side: int, at: float) -> None:
    """``seat``'s player must be back by ``at`` (a grace period in force replaces)."""
    seat.grace_deadline = at
    seat.grace = Deadline(GRACE, side, at)


def end_grace(seat: Seat) -> bool:
    """``seat``'s player is back: no grace period; True when their leave was announced (so
    is their return)."""
    seat.grace = None
    seat.grace_deadline = None
    announced, seat.announced_away = seat.announced_away, False
    return announced


def stop_graces(t: TableState) -> None:
    """Every grace period stops (the table ended): its end forfeits nothing."""
    for seat in t.seats:
        if seat is not None and seat.grace is not None:
            seat.grace = None
            seat.announced_away = False


# --- the next game of a match ------------------------------------------------------------


def schedule_next_game(t: TableState, now: float) -> None:
    t.next_game = Deadline(NEXT_GAME, None, now + t.settings.next_game_delay)


# --- a hold, a resume, a takeover --------------------------------------------------------


def hold_timers(t: TableState, now: float) -> Hold:
    """Stop every timer where it is: the hold with the seconds each had left."""
    held = Hold(now)
    clock = t.clock
    if clock is not None:
        held.clock_left = max(0.0, clock.at - now)
        t.clock = None
    for side, seat in enumerate(t.seats):
        if seat is not None and seat.grace is not None:
            held.grace_left[side] = max(0.0, seat.grace.at - now)
            seat.grace = None
    if t.next_game is not None:
        held.next_game_left = max(0.0, t.next_game.at - now)
        t.next_game = None
    return held


def resume_timers(t: TableState, held: Hold, now: float, allowance: float
                  ) -> list[tuple[int, Seat]]:
    """Start the timers of ``held`` again: the decision clock and each grace period with the
    time they had left plus ``allowance``, a match's next game with the time it had left.
    Returns the seats whose player came back during the hold (their grace period is over)."""
    if held.clock_left is not None and t.clock is None and t.clock_side is not None:
        at = t.deadline = now + held.clock_left + allowance
        t.clock = Deadline(CLOCK, int(t.clock_side), at)
    if held.next_game_left is not None and t.next_game is None:
        t.next_game = Deadline(NEXT_GAME, None, now + held.next_game_left)
    back: list[tuple[int, Seat]] = []
    for side, left in held.grace_left.items():
        seat = t.seats[side]
        if seat is None or seat.grace is not None:
            continue
        if seat.nodes:
            back.append((side, seat))
            continue
        start_grace(seat, side, now + left + allowance)
    return back


def take_over_clock(t: TableState, now: float, allowance: float) -> None:
    """The player to act on a table rebuilt on a new owner gets the time that was left on the
    clock at the last stored event (``logged_at``) plus ``allowance``."""
    if t.clock is None or t.deadline is None:
        return
    at = t.logged_at if t.logged_at is not None else now
    left = max(0.0, min(t.deadline - at, t.settings.decision_time))
    t.deadline = now + left + allowance
    t.clock = Deadline(CLOCK, t.clock.side, t.deadline)


__all__ = [
    "Slots",
    "Timers",
    "end_grace",
    "grace_seconds",
    "hold_timers",
    "resume_timers",
    "schedule_next_game",
    "start_grace",
    "stop_clock",
    "stop_graces",
    "strike",
    "sync_clock",
    "take_over_clock",
    "wanted",
]
