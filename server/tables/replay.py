"""A table rebuilt from its stored events (pure): :func:`replay` gives the machine whose events
they are, driving a fresh machine from outside with the commands the events record.

The games are played again through the machine's own commands (:meth:`~TableCommands.act`,
:meth:`~TableCommands.expire`, :meth:`~TableCommands.forfeit`, ...) with the dice the events
recorded, fed before each command (the events those commands build are dropped: the log has
them). What only the log knows is applied to the state model: a seat taken, a player's
presence, and from the states the events carry (``server.protocol.lean.apply_event`` folds
them) the clock's deadline, the strikes and the seats as they were sent. Which nodes a
player's sockets are on is not in the log: a replayed seat has none (its ``connected`` shows
what the log last said until the seat changes). Nothing is armed afterwards: the shell arms
what the machine's next command (:meth:`~TableCommands.take_over`) says.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from server.protocol.errors import ProtocolError
from server.protocol.lean import apply_event
from server.protocol.messages import (
    AcceptResign,
    Double,
    Drop,
    Message,
    Play,
    RejectResign,
    Resign,
    ResignKind,
    Roll,
    TableMode,
    Take,
)
from server.rules import DiceExhaustedError, DiceSource, EndReason, RulesError, Side
from server.tables.commands import TableCommands
from server.tables.model import (
    BOT_PREFIX,
    CLOCK,
    GRACE,
    GUEST_PREFIX,
    Deadline,
    MachineSettings,
    Seat,
)
from server.tables.ratings import RatingPlan

M = TypeVar("M", bound=TableCommands)

#: The events whose command is a player's game action, replayed through ``act``.
ACTIONS = ("rolled", "moved", "doubled", "taken", "dropped", "resign_offered",
           "resign_rejected")


class ReplayDice:
    """Dice for a replay: what the events recorded, fed before each command."""

    def __init__(self) -> None:
        self.values: list[int] = []

    def feed(self, *rolls: Any) -> None:
        for roll in rolls:
            if roll is not None:
                self.values.extend(int(d) for d in roll)

    def roll_die(self) -> int:
        if not self.values:
            raise DiceExhaustedError("the log recorded no dice for this roll")
        return self.values.pop(0)


def replay(
    make: type[M],
    events: Iterable[Mapping[str, Any]],
    *,
    table_id: str,
    mode: TableMode,
    match_length: int,
    settings: MachineSettings,
    dice_factory: Callable[[], DiceSource],
    tournament_id: str | None = None,
    created_at: float = 0.0,
) -> M:
    """The machine (of class ``make``) whose events are ``events`` (lean or full, in version
    order, from ``v=1`` or from a ``game_start``: earlier events of a trimmed log are
    skipped). A game that ended in the log and was not settled yet comes back with its
    ``settlement`` set. Afterwards the machine rolls with ``dice_factory()``. Raises
    ValueError when the events do not fit together."""
    feed = ReplayDice()
    machine = make(table_id=table_id, mode=mode, match_length=match_length,
                   tournament_id=tournament_id, created_at=created_at, settings=settings,
                   dice_factory=lambda: feed)
    state: dict[str, Any] | None = None
    logged: dict[str, Any] | None = None  # the latest state an event carried
    started = False
    first_v: int | None = None
    for event in events:
        v = int(event["v"])
        kind = str(event.get("type"))
        if first_v is None:
            first_v = v
        if not started:
            if v != 1 and kind != "game_start":
                continue
            started = True
        if v != machine.version + 1 and v > machine.version:
            if machine.version and kind != "game_start":
                raise ValueError(f"table {table_id}: event v{v} follows v{machine.version}")
            machine.version = v - 1
        try:
            state = apply_event(state, event)
        except ValueError:
            state = None
        if v > machine.version:
            try:
                apply(machine, kind, event, state, feed)
            except (RulesError, ProtocolError, KeyError, TypeError) as exc:
                raise ValueError(f"table {table_id}: event v{v} ({kind}) does not replay: "
                                 f"{exc}") from exc
            # Its command may have made the events that follow it (game_over ...).
            machine.version = max(machine.version, v)
        logged_at(machine, kind, event, state)
        if state is not None and ("state" in event or "changes" in event):
            adopt(machine, state)
            logged = state
    if first_v is not None and not started:
        # A log trimmed in the middle of a game keeps neither v=1 nor a game_start:
        # nothing here rebuilds that game.
        raise ValueError(f"table {table_id}: the log starts at v{first_v}, with no "
                         "game_start to replay from")
    machine.events.take()
    machine.timers.forget()
    if logged is not None:
        machine.events.adopt(machine, dict(logged))
    machine.use_dice(dice_factory())
    return machine


def logged_at(machine: TableCommands, kind: str, event: Mapping[str, Any],
              state: Mapping[str, Any] | None) -> None:
    """When the event happened, where the log says it: a fresh decision clock started then
    (deadline - limit), a grace period too (deadline - grace); a hold ended then."""
    if kind == "resumed":
        machine.logged_at = float(event["until"])
        return
    if kind == "player_disconnected":
        machine.logged_at = float(event["deadline"]) - float(event["grace"])
        return
    changes = event.get("changes")
    clock = None
    if isinstance(changes, Mapping):
        clock = changes.get("clock")
    elif isinstance(event.get("state"), Mapping):
        clock = event["state"].get("clock")
    if isinstance(clock, Mapping) and clock.get("deadline") is not None and state:
        limit = state["clock"].get("limit")
        if isinstance(limit, (int, float)):
            machine.logged_at = float(clock["deadline"]) - float(limit)


def apply(machine: TableCommands, kind: str, event: Mapping[str, Any],
          state: Mapping[str, Any] | None, feed: ReplayDice) -> None:
    """Apply one logged event: its command (its dice fed first), or what it says to the
    state model."""
    now = machine.logged_at or 0.0
    if machine.finishing and machine.settlement is not None:
        # The log goes on after a game's end: that game was settled.
        machine.settled(now)
    side = event.get("side")
    rolls = [r.get("dice") for r in event.get("rolls") or ()]
    if kind == "seated":
        assert isinstance(side, int)
        who = str(event["player"])
        # Created or joined from a socket: connected (a pair seated by matchmaking is
        # followed at once by its game_start, whose state says).
        machine.seats[side] = Seat(who, str(event.get("name")), who.startswith(GUEST_PREFIX),
                                   "", who.startswith(BOT_PREFIX), logged_connected=True)
        machine.seats_changed()
    elif kind == "game_start":
        _game_start(machine, event, state, feed, rolls, now)
    elif kind in ACTIONS:
        seat = machine.seats[side] if isinstance(side, int) else None
        if seat is None:
            raise KeyError(f"no player at side {side}")
        machine.act(seat.player, _action(machine.id, kind, event, feed, rolls), now)
    elif kind == "timeout":
        if event.get("action") == "roll":
            feed.feed(event.get("dice"))
        feed.feed(*rolls)
        # The clock that ran out: the side's, as the event says.
        side = int(event["side"])
        machine.clock_side = Side(side)
        clock = machine.clock = Deadline(CLOCK, side, now)
        machine.expire(clock, now)
    elif kind == "player_disconnected":
        seat = machine.seats[int(event["side"])]
        assert seat is not None
        seat.nodes.clear()
        seat.logged_connected = False
        seat.grace_deadline = float(event["deadline"])
        seat.grace = Deadline(GRACE, int(event["side"]), seat.grace_deadline)
        seat.presence_used += 2
        seat.announced_away = True
        machine.seats_changed()
    elif kind == "player_reconnected":
        seat = machine.seats[int(event["side"])]
        assert seat is not None
        seat.logged_connected = True
        seat.grace = None
        seat.grace_deadline = None
        seat.announced_away = False
        machine.seats_changed()
    elif kind == "game_over":
        # Not the end of a play, a drop or a timeout (those replayed it already): an
        # accepted resignation, or a forfeit for a lost connection or a leave.
        reason = str(event.get("reason"))
        game = machine.game
        offer = None if game is None else game.resignation
        if reason == str(EndReason.RESIGN) and offer is not None:
            taker = machine.seats[offer.side.opponent]
            assert taker is not None
            machine.act(taker.player, AcceptResign(table=machine.id), now)
        else:
            loser = machine.seats[1 - int(event["winner_side"])]
            assert loser is not None
            machine.forfeit(loser.player, EndReason(reason), now)
    elif kind == "table_closed":
        machine.close(str(event.get("reason")), now)
    elif kind in ("match_over", "resumed"):
        # match_over: always right after its game_over, which replayed it; resumed: its
        # new deadlines are in its state.
        pass
    else:
        raise KeyError(f"unknown event type {kind!r}")


def _action(table: str, kind: str, event: Mapping[str, Any], feed: ReplayDice,
            rolls: list[Any]) -> Message:
    """The game action an event of :data:`ACTIONS` records (the dice it rolled fed)."""
    if kind == "rolled":
        feed.feed(event.get("dice"), *rolls)
        return Roll(table=table)
    if kind == "moved":
        feed.feed(*rolls)
        return Play(table=table, play=str(event.get("play")))
    if kind == "doubled":
        return Double(table=table)
    if kind == "taken":
        feed.feed(*rolls)
        return Take(table=table)
    if kind == "dropped":
        return Drop(table=table)
    if kind == "resign_offered":
        return Resign(table=table, kind=ResignKind(str(event.get("kind"))))
    feed.feed(*rolls)
    return RejectResign(table=table)


def _game_start(machine: TableCommands, event: Mapping[str, Any],
                state: Mapping[str, Any] | None, feed: ReplayDice, rolls: list[Any],
                now: float) -> None:
    if state is None:
        raise KeyError("game_start without a state")
    seats = state.get("seats") or [None, None]
    for side, data in enumerate(seats):
        seat = machine.seats[side]
        if data is not None and (seat is None or seat.player != data["player"]):
            machine.seats[side] = Seat(str(data["player"]), str(data["name"]),
                                       bool(data["guest"]), "", bool(data["bot"]),
                                       logged_connected=bool(data["connected"]))
    rating = event.get("rating") or state.get("rating")
    plan = None
    if isinstance(rating, Mapping):
        plan = RatingPlan(rating.get("ladder"), bool(rating.get("boosted")),
                          rating.get("unrated_reason"))
    info = state.get("match") or {}
    score = tuple(info.get("score") or (0, 0))
    for pair in event.get("opening_rolls") or ():
        feed.feed(pair)
    feed.feed(*rolls)
    machine.start_logged(
        now, game_no=int(event["game_no"]), plan=plan, score=(int(score[0]), int(score[1])),
        crawford_played=machine.match_length - 1 in score and not info.get("crawford"))


def adopt(machine: TableCommands, state: Mapping[str, Any]) -> None:
    """Take what only the log knows from a logged state: seat presence, the clock's
    deadline, strikes (the game itself was played again)."""
    seats = state.get("seats")
    if isinstance(seats, list):
        for side, data in enumerate(seats):
            seat = machine.seats[side] if side < 2 else None
            if seat is not None and isinstance(data, Mapping):
                seat.grace_deadline = data.get("grace_deadline")
                seat.logged_connected = bool(data.get("connected"))
        machine.events.seats_changed(list(seats))
    clock = state.get("clock")
    if isinstance(clock, Mapping):
        machine.strikes = [int(s) for s in clock.get("strikes") or (0, 0)]
        deadline = clock.get("deadline")
        to_act = clock.get("side")
        machine.deadline = None if deadline is None else float(deadline)
        machine.clock_side = None if to_act is None else Side(int(to_act))
        if deadline is None or to_act is None:
            machine.clock = None
        else:
            machine.clock = Deadline(CLOCK, int(to_act), float(deadline))


__all__ = ["ReplayDice", "adopt", "apply", "logged_at", "replay"]
