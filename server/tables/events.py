"""A table's events as they go out: the versioned event of each change, in its full form (the
whole table state) and its lean form (``changes``: what changed since the latest
state-carrying event, PROTOCOL.md §5.1), built from the state model (pure).

:meth:`EventBuilder.state` is the full table state. The lean ``changes`` are built from what
the command changed (:meth:`EventBuilder.built_changes`: the game says which of its keys, the
seats, the rating plan and the match are rebuilt only when they change, the clock is three
values) rather than by building the whole state and diffing it
(:func:`server.protocol.lean.state_changes`); the two give the same ``changes``, key for key
and in the same order. After a handout (a full state given between two events) or on a
replayed table, the whole state is built and diffed.
"""

from __future__ import annotations

from typing import Any

from server.protocol.codec import Outgoing
from server.protocol.lean import state_changes
from server.tables.model import TableState


class EventBuilder:
    """Builds one table's events and keeps those of the command in progress (:meth:`take`)."""

    def __init__(self) -> None:
        # The state the latest event was built with here (not adopted from a log): the next
        # event's changes are built from what changed since (built_changes) when it is still
        # the table's last_state. ``direct`` False: every event diffs whole states instead
        # (the reference the tests compare with).
        self.built: dict[str, Any] | None = None
        self.direct = True
        # Top-level state keys the next lean event sends whole: a full state handed out
        # between two events (sync, resume, watch) may differ from the latest event's there.
        self.forced: set[str] = set()
        self.out: list[Outgoing] = []
        self._seats: list[dict[str, Any] | None] | None = None
        self._plan: dict[str, Any] | None = None
        # The match's state and what it was built from (the current game, its outcome, a
        # forfeit of the match): it changes once a game.
        self._match: tuple[object, object, object, object, dict[str, Any]] | None = None

    def take(self) -> list[Outgoing]:
        """The events built since the last call."""
        out = self.out
        if out:
            self.out = []
        return out

    # --- the state -----------------------------------------------------------------------

    def state(self, t: TableState) -> dict[str, Any]:
        """The full table state sent with every game event (and on resume / sync).

        Built for every event, so the seats and the rating plan, which rarely change, are
        reused from the previous state until they do (nobody mutates a sent state).
        """
        game = t.game
        clock_side = t.clock_side
        settings = t.settings
        return {
            "status": str(t.status),
            "seats": self.seats(t),
            "game_no": t.game_no,
            "game": None if game is None else game.to_dict(),
            "clock": {
                "side": None if clock_side is None else int(clock_side),
                "deadline": t.deadline,
                "limit": settings.decision_time,
                "strikes": list(t.strikes),
                "max_strikes": settings.max_strikes,
            },
            "match": self.match(t),
            "rating": self.rating(t),
            "held": held_state(t),
        }

    def built_changes(self, t: TableState) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """``(state, changes)`` for the next event: the state now and what changed since the
        latest event's, built from what the command changed. None when the latest state was
        not built here (a replayed table, or none yet): then the caller diffs."""
        last = t.last_state
        game = t.game
        if last is None or last is not self.built or game is None or not self.direct:
            return None
        moved = game.snapshot_changes(last["game"])
        if moved is None:
            return None
        state = dict(last)
        changes: dict[str, Any] = {}
        status = t.status
        if status != last["status"]:
            changes["status"] = state["status"] = str(status)
        seats = self.seats(t)
        old: Any = last["seats"]
        if seats is not old:
            state["seats"] = seats
            if seats != old:
                changes["seats"] = seats
        if t.game_no != last["game_no"]:
            changes["game_no"] = state["game_no"] = t.game_no
        if moved[1]:
            state["game"] = moved[0]
            changes["game"] = moved[1]
        clock = clock_changes(t, last["clock"])
        if clock is not None:
            state["clock"], changes["clock"] = clock
        for key, value in (("match", self.match(t)), ("rating", self.rating(t)),
                           ("held", held_state(t))):
            old = last[key]
            if value is not old:
                state[key] = value
                if value != old or type(value) is not type(old):
                    changes[key] = value
        return state, changes

    def rating(self, t: TableState) -> dict[str, Any] | None:
        """The state's ``rating``: the rating plan's dict, the same object until it changes."""
        plan = t.plan
        if plan is None:
            return None
        rating = self._plan
        if rating is None:
            rating = self._plan = plan.to_dict()
        return rating

    def plan_changed(self) -> None:
        """The table's rating plan was set."""
        self._plan = None

    def match(self, t: TableState) -> dict[str, Any] | None:
        """:func:`match_state` for the state: the same object until the match's score, its
        Crawford game or its winner can have changed (a new game, an outcome, a forfeit)."""
        match = t.match
        if match is None:
            return None
        game = match.game
        outcome = None if game is None else game.outcome
        forfeited = match.forfeited
        memo = self._match
        if (memo is None or memo[0] is not match or memo[1] is not game
                or memo[2] is not outcome or memo[3] is not forfeited):
            state = match_state(t)
            assert state is not None
            memo = self._match = (match, game, outcome, forfeited, state)
        return memo[4]

    def seats(self, t: TableState) -> list[dict[str, Any] | None]:
        """The state's ``seats``: the same list until a seat changes (:meth:`seats_changed`)."""
        seats = self._seats
        if seats is None:
            seats = self._seats = [
                None if s is None else s.to_dict(i) for i, s in enumerate(t.seats)
            ]
        return seats

    def seats_changed(self, seats: list[dict[str, Any] | None] | None = None) -> None:
        """A seat was taken, or its player's connection or grace deadline changed (``seats``:
        the state's seats are these, as a log recorded them)."""
        self._seats = seats

    def handout(self, t: TableState) -> dict[str, Any]:
        """The full state for a ``sync``, ``resume`` or ``watching`` answer. Where it differs
        from the latest event's state, the next lean event sends that part whole, so that
        clients holding either state end up with the same one."""
        state = self.state(t)
        last = t.last_state
        if last is not None:
            self.forced.update(k for k, v in state.items() if last.get(k) != v)
        return state

    def adopt(self, t: TableState, state: dict[str, Any]) -> None:
        """The latest event's state is ``state``, as a log recorded it: the next event's
        changes are diffed from it."""
        t.last_state = state
        self.built = None

    # --- the events ----------------------------------------------------------------------

    def emit(self, t: TableState, kind: str, fields: dict[str, Any], *,
             with_state: bool = True) -> None:
        """The table's next event: ``kind`` with ``fields`` and, ``with_state``, the table's
        state (the decision clock synced with it first)."""
        t.version += 1
        head: dict[str, Any] = {"type": kind, "table": t.id, "v": t.version}
        head.update(fields)
        if with_state:
            # Both forms (PROTOCOL.md §5.1): the full one carries the whole state, the lean
            # one what changed since the previous state-carrying event (a game's start: all),
            # built from what the command changed; after a handout (keys forced whole) or a
            # replay, the whole state is built and diffed.
            built = None if self.forced or kind == "game_start" else self.built_changes(t)
            changes: dict[str, Any] | None
            if built is None:
                state = self.state(t)
                changes = None if kind == "game_start" else state_changes(
                    t.last_state, state, self.forced)
            else:
                state, changes = built
            obj = dict(head)
            obj["state"] = state
            if changes is None:
                lean = obj
            else:
                lean = head
                head["changes"] = changes
            if self.forced:
                self.forced = set()
            if kind == "game_start":
                t.game_starts.append(t.version)
            t.last_state = self.built = state
        else:
            obj = lean = head
        self.out.append(Outgoing(obj, None if lean is obj else lean))


def clock_changes(t: TableState, before: dict[str, Any]
                  ) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The state's ``clock`` now and its keys that differ from ``before`` (None: none)."""
    part: dict[str, Any] = {}
    side = t.clock_side
    value: Any = None if side is None else int(side)
    old = before["side"]
    if old is not value and (old != value or type(old) is not type(value)):
        part["side"] = value
    value = t.deadline
    old = before["deadline"]
    if old is not value and (old != value or type(old) is not type(value)):
        part["deadline"] = value
    settings = t.settings
    if before["limit"] != settings.decision_time:
        part["limit"] = settings.decision_time
    if before["strikes"] != t.strikes:
        part["strikes"] = list(t.strikes)
    if before["max_strikes"] != settings.max_strikes:
        part["max_strikes"] = settings.max_strikes
    if not part:
        return None
    clock = dict(before)
    clock.update(part)
    return clock, part


def match_state(t: TableState) -> dict[str, Any] | None:
    """The state's ``match``: its length, score, Crawford game and winner (None: a single
    game)."""
    match = t.match
    if match is None:
        return None
    winner = match.winner
    return {
        "length": match.length,
        "score": list(match.score),
        "crawford": match.is_crawford_game,
        "winner": None if winner is None else int(winner),
    }


def held_state(t: TableState) -> dict[str, Any] | None:
    """The state's ``held``: None, or since when play is held and the decision clock's
    seconds left."""
    held = t.held
    if held is None:
        return None
    return {"since": held.since, "clock_left": held.clock_left}


__all__ = ["EventBuilder", "clock_changes", "held_state", "match_state"]
