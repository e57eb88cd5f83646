"""One table as a pure state machine: seats, the game or match, clocks, strikes, disconnect
grace and versioned events. No asyncio, aiohttp or redis here; the time is an argument.
It stays one module past 700 lines on purpose: it is one pure state machine whose
transitions share its state, each tested directly in ``tests/tables/``, and it is compiled
as one unit with the game and the change-only form (``server/builds.py``).

Commands go in (:meth:`TableMachine.act`, :meth:`~TableMachine.seat`,
:meth:`~TableMachine.leave`, :meth:`~TableMachine.connect`, :meth:`~TableMachine.disconnect`,
:meth:`~TableMachine.forfeit`, :meth:`~TableMachine.close`, :meth:`~TableMachine.settled`) and
timers come back as data: every call returns a :class:`Step` with

- ``events``: the new versioned events (each an :class:`~server.protocol.codec.Outgoing` with
  its full and lean forms; the lean ``changes`` built from what the step changed, see
  :meth:`TableMachine._built_changes`), to be stored before they are announced;
- ``deadlines``: timers to arm (:class:`Deadline`: "``side`` must act by ``at``", a grace
  period's end, the next game of a match); ``cancelled``: timers no longer in force;
- ``settle``: a game just ended: the :class:`FinishedGame` the shell must settle, once.

When a deadline passes the shell calls :meth:`TableMachine.expire` with it.

The machine makes every check of the table's rules; the shell asks before it awaits and
carries out the answer:

- a new table's specification (mode, match length, tournament, who opens it):
  :func:`check_new_table`, for a table a player creates and for a pair seated by matchmaking,
  a tournament or a game against the computer;
- who may sit: :meth:`TableMachine.check_join` (before the shell takes the seat lock in
  Redis) and :meth:`TableMachine.seat` (which checks again, after the awaits): an open table,
  a free seat, no computer player at a tournament table; one seat per player
  (:func:`already_seated`, from the seat lock's answer);
- what leaving does: :meth:`TableMachine.leave` (:class:`LeaveKind`: close an open table,
  forfeit a game in play, or give back only the seat);
- what to settle: :attr:`FinishedGame.settles` and :attr:`FinishedGame.rated_id`.

Clocks: each decision (roll or double, move, take or drop, answer a resignation) must come
within ``decision_time``; its deadline is in every state. When it passes, the player gets a
strike and the rules' default action is taken (roll, first legal play, take, reject); the
``max_strikes``-th strike of a game forfeits it (a match: the match) at the current cube.
A player whose last socket closes has ``grace_period`` to come back; past it, the game (the
match) is forfeited. Leaving a table during a game is the same kind of loss. A player whose
socket was on a node found dead (the server's fault, not the player's: the shell says when
the node was found dead, ``lost_at``) has ``node_loss_grace`` from then instead, when that
ends later (:meth:`~TableMachine.disconnect`, :meth:`~TableMachine.take_over`).

Held: while the table's node cannot store (Redis is away), :meth:`TableMachine.hold` stops
every timer where it is (nobody gets a strike, an automatic move or a forfeit), commands are
refused with ``unavailable`` and presence changes wait; :meth:`TableMachine.resume` starts the
timers again with the time they had left plus an allowance, emits ``resumed``, then applies the
presence changes made meanwhile. The state's ``held`` says whether play is held.

Presence events are bounded: a seat's ``player_disconnected`` is announced only while the seat
has used fewer than ``presence_events`` of its presence events in the current game (each
announced disconnect counts two: itself and the ``player_reconnected`` that answers it; only an
announced disconnect's reconnect is announced). Past that, a disconnect and its reconnect
change the seat (``connected``, ``grace_deadline``: in the state of the next event) and the
grace period runs as always, but no event is logged or sent. So one seat adds at most
``presence_events`` events per game (+1: the reconnect of a disconnect announced in the game
before), however often its player reconnects.

Replay: :meth:`TableMachine.replay` rebuilds a machine from its stored (lean) events: the game
is played again with the dice the events recorded, and the clocks, strikes and seats are taken
from the states the events carry (``server.protocol.lean.apply_event`` folds them). Which nodes
a player's sockets are on is not in the log: a replayed seat has none (its ``connected`` shows
what the log last said until the seat changes).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from server.protocol.codec import Outgoing
from server.protocol.errors import ErrorCode, ProtocolError
from server.protocol.lean import apply_event, state_changes
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
from server.rules import (
    DiceSource,
    EndReason,
    Game,
    Match,
    Outcome,
    Phase,
    ResultKind,
    RulesError,
    Side,
    format_play,
)
from server.tables.ratings import FIBS, TABLE42, RatedPlayer, RatingPlan, plan_rating

log = logging.getLogger(__name__)

GUEST_PREFIX = "guest-"
"""Player ids of guests start with it (``server.store.accounts`` issues them)."""
BOT_PREFIX = "bot-"
"""Player ids of computer players start with it (``server.store.accounts``)."""

CLOCK = "clock"
GRACE = "grace"
NEXT_GAME = "next_game"
STORE_LOST = "store_lost"
"""``table_closed`` reason: the store was emptied or replaced under the table's owner."""
#: ``table_closed``'s reason when the table's tournament was cancelled by its runner.
TOURNAMENT_CANCELLED = "tournament_cancelled"
HOLD_RETRY_AFTER = 1
"""Seconds a client is told to wait (``retry_after``) before it sends again while play is held."""


#: :attr:`FinishedGame.settles` of a game that earns Boosted points.
BOOSTED = "boosted"


class LeaveKind(StrEnum):
    """What :meth:`TableMachine.leave` did."""

    CLOSE = "close"  # an open table closed (``table_closed``, reason ``left``): free every seat
    FORFEIT = "forfeit"  # the leaver lost the game in play (a match: the match); seats go at
    # the table's end
    RELEASE = "release"  # nothing to lose (finished, or being settled): free the leaver's seat


def already_seated(held: str, *, player: str | None = None,
                   field: str = "table") -> ProtocolError:
    """The refusal of a seat to a player whose seat lock is held at table ``held`` (a player
    holds one seat at a time). ``player``: name the player (a pair seated by a server
    component), else the message speaks to the player who asked."""
    who = "you already hold" if player is None else f"{player} already holds"
    return ProtocolError(ErrorCode.ALREADY_SEATED, f"{who} a seat at table {held}",
                         field=field)


def bot_not_allowed(field: str) -> ProtocolError:
    """The refusal of a computer player at a tournament table (``field``: what names it)."""
    return ProtocolError(ErrorCode.BOT_NOT_ALLOWED,
                         "computer players do not play in tournaments", field=field)


def check_new_table(
    mode: TableMode,
    match_length: int | None,
    tournament_id: str | None,
    players: Sequence[str],
    *,
    max_match_length: int,
    by_player: bool,
) -> int:
    """Check a new table's specification before anything is stored; returns its match
    length (0: a single game). Raises ProtocolError; validates everything it is given.

    ``by_player``: a player opens it (``create_table``; ``players`` is the creator): any mode
    but ``tournament`` (only a tournament opens its tables; a computer player asking is
    ``bot_not_allowed``, no ``tournament_id`` is ``missing_field``), ``match_length``
    0..``max_match_length``. Else a server component seats a pair (matchmaking, a
    tournament, a game against the computer; ``players`` are the two, sides 0 and 1): two
    different players (``same_player``), mode ``competitive``, ``boosted`` or ``tournament``,
    a ``tournament_id`` exactly for a tournament table, ``match_length`` None (a single game)
    or 1..``max_match_length``, no computer player at a tournament table."""
    tournament = mode is TableMode.TOURNAMENT
    if by_player:
        if match_length is None or not 0 <= match_length <= max_match_length:
            raise ProtocolError(ErrorCode.BAD_FIELD,
                                f"field 'match_length' must be in 0..{max_match_length}",
                                field="match_length")
        if tournament:
            if any(p.startswith(BOT_PREFIX) for p in players):
                raise bot_not_allowed("mode")
            if tournament_id is None:
                raise ProtocolError(ErrorCode.MISSING_FIELD,
                                    "field 'tournament_id' is required for a tournament table",
                                    field="tournament_id")
            # A tournament's tables are opened by its bracket (or its runner) for the two
            # players of a match; a player opening one would play a game the tournament
            # never scheduled.
            raise ProtocolError(ErrorCode.BAD_FIELD,
                                "tournament tables are opened by the tournament, not by "
                                "players", field="mode")
        return match_length
    first, second = players
    if first == second:
        raise ProtocolError(ErrorCode.SAME_PLAYER, "a player cannot play themselves",
                            field="second")
    if mode not in (TableMode.COMPETITIVE, TableMode.BOOSTED, TableMode.TOURNAMENT):
        raise ProtocolError(ErrorCode.BAD_FIELD,
                            "mode must be competitive, boosted or tournament", field="mode")
    if tournament != (tournament_id is not None):
        raise ProtocolError(ErrorCode.BAD_FIELD,
                            "a tournament table (and only one) needs a tournament_id",
                            field="tournament_id")
    length = 0 if match_length is None else match_length
    if not 0 <= length <= max_match_length or match_length == 0:
        raise ProtocolError(ErrorCode.BAD_FIELD,
                            f"match_length must be None or 1..{max_match_length}",
                            field="match_length")
    if tournament:
        for slot, player in (("first", first), ("second", second)):
            if player.startswith(BOT_PREFIX):
                raise bot_not_allowed(slot)
    return length


class TableStatus(StrEnum):
    OPEN = "open"  # waiting for an opponent
    PLAYING = "playing"  # a game or match in progress (also between the games of a match)
    FINISHED = "finished"  # over; kept for ``finished_linger`` so players can sync
    CLOSED = "closed"  # gone


@dataclass(frozen=True, slots=True)
class Deadline:
    """A timer as data: ``kind`` is ``clock`` (``side`` must decide by ``at``), ``grace``
    (``side``'s player must be back by ``at``) or ``next_game`` (a match's next game starts
    at ``at``). ``at`` is on the clock the machine is given (``now``: Unix seconds)."""

    kind: str
    side: int | None
    at: float


@dataclass(frozen=True, slots=True)
class MachineSettings:
    decision_time: float = 60.0
    max_strikes: int = 3
    grace_period: float = 60.0
    next_game_delay: float = 0.0
    presence_events: int = 4  # presence events per seat per game (see the module docstring)
    node_loss_grace: float = 180.0  # the grace of a player whose node was found dead

    @classmethod
    def of(cls, settings: Any) -> MachineSettings:
        """The table settings of a :class:`server.config.Settings` (or anything like it)."""
        return cls(float(settings.decision_time), int(settings.max_strikes),
                   float(settings.grace_period), float(settings.next_game_delay),
                   int(getattr(settings, "presence_events", 4)),
                   float(getattr(settings, "node_loss_grace", 180.0)))


@dataclass(slots=True)
class Seat:
    """A seated player. ``nodes`` are the nodes where the player has sockets now."""

    player: str
    name: str
    is_guest: bool
    address: str
    is_bot: bool = False
    nodes: set[str] = field(default_factory=set)
    grace_deadline: float | None = None
    grace: Deadline | None = None  # the grace timer in force
    # Presence events this game (an announced disconnect counts two, with its reconnect),
    # and whether the disconnect in force was announced (then so is its reconnect).
    presence_used: int = 0
    announced_away: bool = False
    # A replayed seat: whether the log last showed the player connected (its nodes are not
    # in the log). None once the seat's presence is known again.
    logged_connected: bool | None = None

    @property
    def is_connected(self) -> bool:
        logged = self.logged_connected
        return bool(self.nodes) if logged is None else logged

    def to_dict(self, side: int) -> dict[str, Any]:
        return {
            "side": side,
            "player": self.player,
            "name": self.name,
            "guest": self.is_guest,
            "bot": self.is_bot,
            "connected": self.is_connected,
            "grace_deadline": self.grace_deadline,
        }


@dataclass(frozen=True, slots=True)
class FinishedGame:
    """A finished game (or match) the shell must settle exactly once (the rating store's
    answer to that is a ``rating_plugin.store.Settlement``): with the rating store
    for ``ladder`` (FIBS only when ``match_over``), or Boosted points when ``boosted`` and
    ``game_counted``; ``result`` is the record appended to the table's results."""

    game_id: str
    ladder: str | None
    boosted: bool
    winner: str
    loser: str
    outcome: Outcome
    match_over: bool
    game_counted: bool
    finished_at: float
    result: dict[str, Any]
    match_id: str
    match_length: int
    match_winner: str | None = None
    match_loser: str | None = None

    @property
    def settles(self) -> str | None:
        """What this end settles: :data:`TABLE42` (a rated single game), :data:`FIBS` (a
        rated match, once it is over), :data:`BOOSTED` (a counted Boosted game's points), or
        None (nothing: unrated, a match not over yet, a Boosted match lost between games).
        Only an end that settles something has rating events for the players' inboxes."""
        if self.ladder == TABLE42:
            return TABLE42
        if self.ladder == FIBS:
            return FIBS if self.match_over else None
        if self.boosted and self.game_counted:
            return BOOSTED
        return None

    @property
    def rated_id(self) -> str | None:
        """The id the rating store settles under (the game's for Table42, the match's for
        FIBS); None when no rating is settled (:attr:`settles` is Boosted or None)."""
        settles = self.settles
        if settles == TABLE42:
            return self.game_id
        if settles == FIBS:
            return self.match_id
        return None


@dataclass(slots=True)
class Hold:
    """A held table (:meth:`TableMachine.hold`): since when (``now`` of the hold), the
    seconds each timer in force had left then (the decision clock, each seat's grace period
    by side, the next game of a match), and the seats that lost a socket during the hold."""

    since: float
    clock_left: float | None = None
    grace_left: dict[int, float] = field(default_factory=dict)
    next_game_left: float | None = None
    away: set[int] = field(default_factory=set)  # sides whose sockets closed meanwhile


@dataclass(frozen=True, slots=True)
class Step:
    """What one command did (see the module docstring)."""

    events: tuple[Outgoing, ...] = ()
    deadlines: tuple[Deadline, ...] = ()
    cancelled: tuple[Deadline, ...] = ()
    settle: FinishedGame | None = None


EMPTY = Step()


def merged(*steps: Step) -> Step:
    """One step doing what ``steps`` do, in order."""
    done = [step for step in steps if step is not EMPTY]
    if len(done) <= 1:
        return done[0] if done else EMPTY
    return Step(tuple(e for s in done for e in s.events),
                tuple(d for s in done for d in s.deadlines),
                tuple(d for s in done for d in s.cancelled),
                next((s.settle for s in done if s.settle is not None), None))


def _rules_error(exc: RulesError) -> ProtocolError:
    return ProtocolError(exc.code, str(exc))


class _ReplayDice:
    """Dice for a replay: what the events recorded, fed before each action."""

    __slots__ = ("values",)

    def __init__(self) -> None:
        self.values: list[int] = []

    def feed(self, *rolls: Any) -> None:
        for roll in rolls:
            if roll is not None:
                self.values.extend(int(d) for d in roll)

    def roll_die(self) -> int:
        if not self.values:
            raise RulesError("the log recorded no dice for this roll", code="replay")
        return self.values.pop(0)


class TableMachine:
    """A table's state; see the module docstring. Not thread-safe, never awaits."""

    def __init__(
        self,
        *,
        table_id: str,
        mode: TableMode,
        match_length: int,
        tournament_id: str | None,
        created_at: float,
        settings: MachineSettings,
        dice_factory: Callable[[], DiceSource],
    ) -> None:
        self.id = table_id
        self.mode = mode
        self.match_length = match_length
        self.tournament_id = tournament_id
        self.created_at = created_at
        self.settings = settings
        self.status = TableStatus.OPEN
        self.seats: list[Seat | None] = [None, None]
        self.version = 0
        self.plan: RatingPlan | None = None
        self.match: Match | None = None
        self.game: Game | None = None
        self.game_no = 0
        self.strikes = [0, 0]
        self.deadline: float | None = None  # the decision clock's, in the state
        self.clock: Deadline | None = None  # the decision clock in force
        self.next_game: Deadline | None = None
        self.finishing = False  # a game ended and is being settled
        # The player the shell is seating (awaiting the seat lock or the pair limit): the
        # seat is theirs until the shell seats them or sets this back to None.
        self.joining: str | None = None
        self.settlement: FinishedGame | None = None  # the one being made
        self._dice_factory = dice_factory
        self._dice: DiceSource | None = None
        self._clock_side: Side | None = None
        self._clock_token: tuple[int, int, Phase] | None = None
        self.last_state: dict[str, Any] | None = None  # the state of the latest event
        # The state the latest event was built with here (not adopted from a log): the next
        # event's changes are built from what changed since (_built_changes) when it is
        # still last_state. ``_direct`` False: every event diffs whole states instead (the
        # reference the tests compare with).
        self._built: dict[str, Any] | None = None
        self._direct = True
        # Top-level state keys the next lean event sends whole: a full state handed out
        # between two events (sync, resume, watch) may differ from the latest event's there.
        self._forced: set[str] = set()
        self.game_starts: list[int] = []  # versions of the game_start events
        self._seats_state: list[dict[str, Any] | None] | None = None
        self._plan_state: dict[str, Any] | None = None
        # The match's state and what it was built from (the current game, its outcome, a
        # forfeit of the match): it changes once a game.
        self._match_state: tuple[object, object, object, object, dict[str, Any]] | None = None
        # What the current call produced (see _step).
        self._out: list[Outgoing] = []
        self._arm: list[Deadline] = []
        self._disarm: list[Deadline] = []
        self._settle: FinishedGame | None = None
        self._muted = False  # replaying: events only count versions
        self.logged_at: float | None = None  # replay: time of the latest event, when known
        self.held: Hold | None = None  # while the node cannot store (see hold)

    # --- reading ---------------------------------------------------------------------------

    @property
    def is_single_game(self) -> bool:
        return self.match_length == 0

    def side_of(self, player: str) -> Side | None:
        for side, seat in enumerate(self.seats):
            if seat is not None and seat.player == player:
                return Side(side)
        return None

    def seated_players(self) -> list[str]:
        return [seat.player for seat in self.seats if seat is not None]

    def game_id(self) -> str:
        return f"{self.id}-g{self.game_no}"

    def match_id(self) -> str:
        return f"{self.id}-m"

    def state(self) -> dict[str, Any]:
        """The full table state sent with every game event (and on resume / sync).

        Built for every event, so the seats and the rating plan, which rarely change, are
        reused from the previous state until they do (nobody mutates a sent state).
        """
        game = self.game
        clock_side = self._clock_side
        settings = self.settings
        return {
            "status": str(self.status),
            "seats": self._seats_dicts(),
            "game_no": self.game_no,
            "game": None if game is None else game.to_dict(),
            "clock": {
                "side": None if clock_side is None else int(clock_side),
                "deadline": self.deadline,
                "limit": settings.decision_time,
                "strikes": list(self.strikes),
                "max_strikes": settings.max_strikes,
            },
            "match": self._state_of_match(),
            "rating": self._rating_state(),
            "held": self._held_state(),
        }

    def _built_changes(self) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """``(state, changes)`` for the next event: the state now and what changed since the
        latest event's, built from what the step changed (the game says which of its keys;
        the seats, the rating plan and the match are rebuilt only when they change; the
        clock is three values) rather than by building the whole state and diffing it
        (``state_changes``). The same ``changes``, key for key and in the same order. None
        when the latest state was not built here (a replayed table, or none yet): then the
        caller diffs."""
        last = self.last_state
        game = self.game
        if last is None or last is not self._built or game is None or not self._direct:
            return None
        moved = game.snapshot_changes(last["game"])
        if moved is None:
            return None
        state = dict(last)
        changes: dict[str, Any] = {}
        status = self.status
        if status != last["status"]:
            changes["status"] = state["status"] = str(status)
        seats = self._seats_dicts()
        old: Any = last["seats"]
        if seats is not old:
            state["seats"] = seats
            if seats != old:
                changes["seats"] = seats
        if self.game_no != last["game_no"]:
            changes["game_no"] = state["game_no"] = self.game_no
        if moved[1]:
            state["game"] = moved[0]
            changes["game"] = moved[1]
        clock = self._clock_changes(last["clock"])
        if clock is not None:
            state["clock"], changes["clock"] = clock
        for key, value in (("match", self._state_of_match()), ("rating", self._rating_state()),
                           ("held", self._held_state())):
            old = last[key]
            if value is not old:
                state[key] = value
                if value != old or type(value) is not type(old):
                    changes[key] = value
        return state, changes

    def _clock_changes(self, before: dict[str, Any]
                       ) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The state's ``clock`` now and its keys that differ from ``before`` (None: none)."""
        part: dict[str, Any] = {}
        side = self._clock_side
        value: Any = None if side is None else int(side)
        old = before["side"]
        if old is not value and (old != value or type(old) is not type(value)):
            part["side"] = value
        value = self.deadline
        old = before["deadline"]
        if old is not value and (old != value or type(old) is not type(value)):
            part["deadline"] = value
        settings = self.settings
        if before["limit"] != settings.decision_time:
            part["limit"] = settings.decision_time
        if before["strikes"] != self.strikes:
            part["strikes"] = list(self.strikes)
        if before["max_strikes"] != settings.max_strikes:
            part["max_strikes"] = settings.max_strikes
        if not part:
            return None
        clock = dict(before)
        clock.update(part)
        return clock, part

    def _rating_state(self) -> dict[str, Any] | None:
        """The state's ``rating``: the rating plan's dict, the same object until it changes."""
        plan = self.plan
        if plan is None:
            return None
        rating = self._plan_state
        if rating is None:
            rating = self._plan_state = plan.to_dict()
        return rating

    def _state_of_match(self) -> dict[str, Any] | None:
        """:meth:`match_state` for the state: the same object until the match's score, its
        Crawford game or its winner can have changed (a new game, an outcome, a forfeit)."""
        match = self.match
        if match is None:
            return None
        game = match.game
        outcome = None if game is None else game.outcome
        forfeited = match.forfeited
        memo = self._match_state
        if (memo is None or memo[0] is not match or memo[1] is not game
                or memo[2] is not outcome or memo[3] is not forfeited):
            state = self.match_state()
            assert state is not None
            memo = self._match_state = (match, game, outcome, forfeited, state)
        return memo[4]

    def handout(self) -> dict[str, Any]:
        """The full state for a ``sync``, ``resume`` or ``watching`` answer. Where it differs
        from the latest event's state, the next lean event sends that part whole, so that
        clients holding either state end up with the same one."""
        state = self.state()
        last = self.last_state
        if last is not None:
            self._forced.update(k for k, v in state.items() if last.get(k) != v)
        return state

    def _seats_dicts(self) -> list[dict[str, Any] | None]:
        seats = self._seats_state
        if seats is None:
            seats = self._seats_state = [
                None if s is None else s.to_dict(i) for i, s in enumerate(self.seats)
            ]
        return seats

    def seats_changed(self) -> None:
        """A seat was taken, or its player's connection or grace deadline changed."""
        self._seats_state = None

    def match_state(self) -> dict[str, Any] | None:
        match = self.match
        if match is None:
            return None
        winner = match.winner
        return {
            "length": match.length,
            "score": list(match.score),
            "crawford": match.is_crawford_game,
            "winner": None if winner is None else int(winner),
        }

    # --- steps and events ----------------------------------------------------------------

    def _step(self) -> Step:
        out, arm, disarm, settle = self._out, self._arm, self._disarm, self._settle
        if not out and not arm and not disarm and settle is None:
            return EMPTY
        self._out, self._arm, self._disarm, self._settle = [], [], [], None
        return Step(tuple(out), tuple(arm), tuple(disarm), settle)

    def _emit(self, kind: str, fields: dict[str, Any], now: float, *,
              with_state: bool = True) -> None:
        self.version += 1
        if self._muted:
            if with_state:
                self._sync_clock(now)
            return
        head: dict[str, Any] = {"type": kind, "table": self.id, "v": self.version}
        head.update(fields)
        if with_state:
            # Both forms (PROTOCOL.md §5.1): the full one carries the whole state, the lean
            # one what changed since the previous state-carrying event (a game's start: all),
            # built from what the step changed; after a handout (keys forced whole) or a
            # replay, the whole state is built and diffed.
            self._sync_clock(now)
            built = None if self._forced or kind == "game_start" else self._built_changes()
            changes: dict[str, Any] | None
            if built is None:
                state = self.state()
                changes = None if kind == "game_start" else state_changes(
                    self.last_state, state, self._forced)
            else:
                state, changes = built
            obj = dict(head)
            obj["state"] = state
            if changes is None:
                lean = obj
            else:
                lean = head
                head["changes"] = changes
            if self._forced:
                self._forced = set()
            if kind == "game_start":
                self.game_starts.append(self.version)
            self.last_state = self._built = state
        else:
            obj = lean = head
        self._out.append(Outgoing(obj, None if lean is obj else lean))

    # --- game actions ----------------------------------------------------------------------

    def act(self, player: str, msg: Message, now: float) -> Step:
        """A game action (roll, play, double, take, drop, resign and its answers) from
        ``player``. Raises ProtocolError (nothing changed) when it is not allowed."""
        side = self.side_of(player)
        if side is None:
            raise ProtocolError(
                ErrorCode.NOT_SEATED, f"you are not playing at table {self.id}", field="table"
            )
        game = self.game
        if self.status is TableStatus.FINISHED:  # the same answer during and after settling
            raise ProtocolError(ErrorCode.GAME_OVER, "the game is over")
        if game is None or self.status is not TableStatus.PLAYING:
            raise ProtocolError(ErrorCode.NOT_PLAYING, f"no game in progress at table {self.id}")
        if self.finishing or game.is_over:
            raise ProtocolError(ErrorCode.GAME_OVER, "the game is over")
        if self.held is not None:
            raise self._held_error()
        outcome: Outcome | None = None
        kind: str | None = None
        fields: dict[str, Any] = {"side": int(side)}
        try:
            if isinstance(msg, Play):
                before = game.position
                outcome = game.play(side, msg.play)
                chosen = game.history[-1].play
                kind = "moved"
                # The play in normal form as text (hits marked), however it was sent.
                fields["play"] = "" if chosen is None else format_play(chosen, before)
            elif isinstance(msg, Roll):
                dice = game.roll(side)
                kind = "rolled"
                fields.update(self._roll_record(side, dice))
            elif isinstance(msg, Double):
                if game.cube >= game.max_cube:
                    # Checked first: with the cube at its maximum the server rolls for the
                    # player at once, so a double can only ever arrive in the wrong phase.
                    raise ProtocolError(
                        "max_cube", f"the cube is at its maximum ({game.max_cube})"
                    )
                game.double(side)
                kind = "doubled"
                fields["cube"] = game.cube * 2
            elif isinstance(msg, Take):
                game.take(side)
                kind = "taken"
                fields["cube"] = game.cube
            elif isinstance(msg, Drop):
                outcome = game.drop(side)
                kind = "dropped"
                fields["cube"] = game.cube
            elif isinstance(msg, Resign):
                game.resign(side, str(msg.kind))
                resignation = game.resignation
                kind = "resign_offered"
                fields["kind"] = str(msg.kind)
                fields["points"] = game.cube * (
                    1 if resignation is None else resignation.kind.multiplier
                )
            elif isinstance(msg, AcceptResign):
                outcome = game.accept_resignation(side)
            elif isinstance(msg, RejectResign):
                game.reject_resignation(side)
                kind = "resign_rejected"
        except RulesError as exc:
            raise _rules_error(exc) from None
        if outcome is None:
            fields["rolls"] = self._auto_rolls()
        if kind is not None:
            self._emit(kind, fields, now)
        if outcome is not None:
            self._game_over(outcome, now)
        return self._step()

    def _roll_record(self, side: Side, dice: tuple[int, int]) -> dict[str, Any]:
        """``{side, dice, passed}`` for a roll just made (passed: it had no legal play)."""
        game = self.game
        assert game is not None
        passed = game.phase is not Phase.MOVE or game.turn != side
        return {"side": int(side), "dice": list(dice), "passed": passed}

    def _auto_rolls(self) -> list[dict[str, Any]]:
        """Roll for every player on roll who has no cube decision to make (the cube is not
        theirs to use), so each event's state waits for a real decision. Returns the rolls,
        in order: ``[{side, dice, passed}]``."""
        game = self.game
        assert game is not None
        rolls: list[dict[str, Any]] = []
        for _ in range(64):  # a pass-pass-pass chain is short; the bound is a safety net
            turn = game.turn
            if game.phase is not Phase.ROLL or turn is None or game.can_double(turn):
                break
            try:
                dice = game.roll(turn)
            except RulesError:
                log.exception("table %s: automatic roll failed", self.id)
                break
            rolls.append(self._roll_record(turn, dice))
        return rolls

    # --- seats -----------------------------------------------------------------------------

    def free_side(self) -> int | None:
        """The first free seat's side (None: both taken)."""
        return next((side for side, seat in enumerate(self.seats) if seat is None), None)

    def check_join(self, player: str, *, is_bot: bool) -> int | None:
        """May ``player`` sit here? The side they would take, or None when they are seated
        here already (the answer is a ``resume``). Changes nothing: the shell takes the
        player's seat lock (refused: :func:`already_seated`), then calls :meth:`seat`, which
        checks again. Raises ProtocolError: ``bot_not_allowed`` (a computer player at a
        tournament table), ``table_full`` (not open, no free seat, or another player being
        seated)."""
        if self.side_of(player) is not None:
            return None
        if self.mode is TableMode.TOURNAMENT and is_bot:
            raise bot_not_allowed("table")
        side = self.free_side()
        if self.status is not TableStatus.OPEN or side is None or self.joining is not None:
            raise self._not_open()
        return side

    def _not_open(self) -> ProtocolError:
        return ProtocolError(ErrorCode.TABLE_FULL, f"table {self.id} is not open",
                             field="table")

    def seat(self, side: int, player: str, name: str, *, is_guest: bool, address: str,
             nodes: Iterable[str], now: float, is_bot: bool | None = None) -> Step:
        """Seat ``player`` at ``side`` (the shell holds the player's seat lock); play starts
        when both seats are taken and :meth:`start` is called. Checks the seat: raises
        ProtocolError (nothing changed) ``table_full`` (the table is not open, the seat is
        taken, or another player is being seated), ``already_seated`` (the player sits here
        already), ``bot_not_allowed`` (a computer player at a tournament table)."""
        bot = player.startswith(BOT_PREFIX) if is_bot is None else is_bot
        if self.side_of(player) is not None:
            raise already_seated(self.id)
        if self.mode is TableMode.TOURNAMENT and bot:
            raise bot_not_allowed("table")
        if (self.status is not TableStatus.OPEN or side not in (0, 1)
                or self.seats[side] is not None or self.joining not in (None, player)):
            raise self._not_open()
        self.seats[side] = Seat(player, name, is_guest, address, bot, set(nodes))
        self.seats_changed()
        self._emit("seated", {"side": side, "player": player, "name": name}, now,
                   with_state=False)
        return self._step()

    def leave(self, player: str, now: float) -> tuple[LeaveKind, Step]:
        """``player`` leaves the table (:class:`LeaveKind`): an open table closes
        (``table_closed``, reason ``left``); a game in play (or a match between its games) is
        forfeited at the current cube, and the seats are freed when the table ends; else
        (finished, or a game being settled) only the leaver's seat is given back. Raises
        ProtocolError ``not_seated`` (nothing changed)."""
        side = self.side_of(player)
        if side is None:
            raise ProtocolError(ErrorCode.NOT_SEATED, f"you are not at table {self.id}",
                                field="table")
        if self.status is TableStatus.OPEN:
            self._close("left", now)
            return LeaveKind.CLOSE, self._step()
        if self.status is TableStatus.PLAYING and not self.finishing:
            self._forfeit(side, EndReason.LEAVE, now)
            if self.finishing:
                return LeaveKind.FORFEIT, self._step()
        return LeaveKind.RELEASE, self._step()

    @property
    def is_full(self) -> bool:
        return all(s is not None for s in self.seats)

    def rated_players(self) -> tuple[RatedPlayer, RatedPlayer]:
        """The two seated players as the rating decision sees them (both seats taken)."""
        s0, s1 = self.seats
        assert s0 is not None and s1 is not None
        return (RatedPlayer(s0.player, s0.is_guest, s0.address, s0.is_bot),
                RatedPlayer(s1.player, s1.is_guest, s1.address, s1.is_bot))

    def start(self, now: float, *, pair_limited: bool = False) -> Step:
        """Both seats are filled: decide how the game is rated and start the first game.
        ``pair_limited``: the shell's pair-limit count refused this game (or match) a rating
        (``unrated_reason: "pair_limit"``)."""
        self.plan = plan_rating(self.mode, self.match_length, self.rated_players(),
                                pair_limited=pair_limited)
        self._plan_state = None
        self.status = TableStatus.PLAYING
        self._dice = self._dice_factory()
        if not self.is_single_game:
            self.match = Match(self.match_length, dice=self._dice)
        self._start_game(now)
        return self._step()

    def _start_game(self, now: float) -> None:
        self.game_no += 1
        for seat in self.seats:
            if seat is not None:  # a reconnect still due from the game before counts here
                seat.presence_used = 1 if seat.announced_away else 0
        if self.match is not None:
            self.game = self.match.next_game()
        else:
            self.game = Game(dice=self._dice)
        self.strikes = [0, 0]
        game = self.game
        try:
            game.start()
        except RulesError:
            log.exception("table %s: opening roll failed", self.id)
            return
        s0, s1 = self.seats
        assert s0 is not None and s1 is not None and self.plan is not None
        self._emit("game_start", {
            "game_id": self.game_id(),
            "game_no": self.game_no,
            "players": [s0.player, s1.player],
            "names": [s0.name, s1.name],
            "mode": str(self.mode),
            "match_length": self.match_length,
            "opening_rolls": [list(r) for r in game.opening_rolls],
            "rating": self.plan.to_dict(),
            "rolls": self._auto_rolls(),
        }, now)

    # --- presence --------------------------------------------------------------------------

    def connect(self, player: str, node: str, now: float) -> Step | None:
        """``player`` has a socket on ``node`` again (None: not seated here, or closed)."""
        side = self.side_of(player)
        if side is None or self.status is TableStatus.CLOSED:
            return None
        seat = self.seats[side]
        assert seat is not None
        seat.nodes.add(node)
        seat.logged_connected = None
        self.seats_changed()
        if self.held is not None:
            return EMPTY  # applied at resume
        if seat.grace is not None:
            self._disarm.append(seat.grace)
            seat.grace = None
            seat.grace_deadline = None
            announced, seat.announced_away = seat.announced_away, False
            # The game is being settled: no event in between.
            if announced and not self.finishing:
                self._emit("player_reconnected", {"side": int(side), "player": seat.player},
                           now)
        return self._step()

    def disconnect(self, player: str, node: str, now: float, *,
                   lost_at: float | None = None) -> Step:
        """``player`` has no socket on ``node`` any more; the grace period starts if that was
        the last node (``lost_at``: ``node`` was found dead then, see :meth:`_grace`)."""
        side = self.side_of(player)
        if side is None:
            return EMPTY
        seat = self.seats[side]
        assert seat is not None
        seat.nodes.discard(node)
        seat.logged_connected = None
        self.seats_changed()
        if self.held is not None:
            self.held.away.add(int(side))  # applied at resume
            return EMPTY
        if seat.nodes or seat.grace is not None:
            return EMPTY
        if self.status not in (TableStatus.OPEN, TableStatus.PLAYING) or self.finishing:
            return EMPTY
        grace = self._grace(now, lost_at)
        seat.grace_deadline = now + grace
        seat.grace = Deadline(GRACE, int(side), seat.grace_deadline)
        self._arm.append(seat.grace)
        if seat.presence_used + 2 > self.settings.presence_events:
            return self._step()  # the grace runs, unannounced (see the module docstring)
        seat.presence_used += 2
        seat.announced_away = True
        self._emit(
            "player_disconnected",
            {"side": int(side), "player": player, "deadline": seat.grace_deadline,
             "grace": grace},
            now,
        )
        return self._step()

    def _grace(self, now: float, lost_at: float | None) -> float:
        """Seconds from ``now`` a player who has just lost their last socket has to come
        back: ``grace_period``; when that socket's node was found dead at ``lost_at`` (nobody's
        fault but the server's), up to ``node_loss_grace`` after ``lost_at`` if that is
        later."""
        grace = self.settings.grace_period
        if lost_at is None:
            return grace
        return max(grace, lost_at + self.settings.node_loss_grace - now)

    def _cancel_graces(self) -> None:
        for seat in self.seats:
            if seat is not None and seat.grace is not None:
                self._disarm.append(seat.grace)
                seat.grace = None
                seat.announced_away = False

    # --- timers ----------------------------------------------------------------------------

    def expire(self, deadline: Deadline, now: float) -> Step:
        """``deadline`` has passed (the shell's timer fired). A deadline no longer in force
        does nothing, and so does every deadline while the table is held."""
        if self.held is not None:
            return EMPTY
        kind = deadline.kind
        if kind == CLOCK:
            if deadline is not self.clock:
                return EMPTY
            self.clock = None
            self._timeout(now)
        elif kind == GRACE:
            side = deadline.side
            seat = None if side is None else self.seats[side]
            if seat is None or seat.grace is not deadline:
                return EMPTY
            seat.grace = None
            seat.announced_away = False
            if not seat.nodes:
                if self.status is TableStatus.OPEN:
                    self._close("abandoned", now)
                elif self.status is TableStatus.PLAYING and not self.finishing:
                    self._forfeit(Side(side), EndReason.DISCONNECT, now)  # type: ignore[arg-type]
        elif kind == NEXT_GAME:
            if deadline is not self.next_game:
                return EMPTY
            self.next_game = None
            if self.status is TableStatus.PLAYING and not self.finishing:
                self._start_game(now)
        return self._step()

    def _sync_clock(self, now: float) -> None:
        """Start a fresh decision clock whenever the decision awaited has changed."""
        game = self.game
        if game is None or self.finishing or game.is_over or game.to_act is None:
            self._disarm_clock()
            return
        token = (self.game_no, len(game.history), game.phase)
        if token == self._clock_token:
            return
        self._clock_token = token
        side = self._clock_side = game.to_act
        at = self.deadline = now + self.settings.decision_time
        # A table has one decision clock: a new clock deadline replaces the one in force.
        clock = self.clock = Deadline(CLOCK, int(side), at)
        self._arm.append(clock)

    def _disarm_clock(self) -> None:
        if self.clock is not None:
            self._disarm.append(self.clock)
            self.clock = None
        self._clock_side = None
        self._clock_token = None
        self.deadline = None

    def _timeout(self, now: float) -> None:
        game = self.game
        side = self._clock_side
        self._clock_token = None
        if game is None or side is None or self.finishing or game.is_over:
            return
        self.strikes[side] += 1
        strikes = self.strikes[side]
        seat = self.seats[side]
        fields: dict[str, Any] = {
            "side": int(side), "player": None if seat is None else seat.player,
            "strikes": strikes,
        }
        if strikes >= self.settings.max_strikes:
            fields["action"] = "forfeit"
            self._emit("timeout", fields, now)
            self._forfeit(side, EndReason.TIMEOUT, now)
            return
        action = game.default_action()
        if action is None:
            return
        before = game.position
        fields["action"] = action.kind
        try:
            outcome = game.perform(action)
        except RulesError:
            log.exception("table %s: default action %s failed", self.id, action.kind)
            return
        if action.kind == "play" and action.play is not None:
            fields["play"] = format_play(action.play, before)
        elif action.kind == "roll":
            last = game.history[-1] if game.history else None
            passed = last is not None and last.play == () and game.dice is None
            dice = last.dice if passed and last is not None else game.dice
            fields["dice"] = None if dice is None else list(dice)
            fields["passed"] = passed
        if outcome is None:
            fields["rolls"] = self._auto_rolls()
        self._emit("timeout", fields, now)
        if outcome is not None:
            self._game_over(outcome, now)

    # --- the end of a game -----------------------------------------------------------------

    def forfeit(self, player: str, reason: EndReason, now: float) -> Step:
        """``player`` loses the game (a match: the match) at the current cube: leaving."""
        side = self.side_of(player)
        if side is not None and self.status is TableStatus.PLAYING and not self.finishing:
            self._forfeit(side, reason, now)
        return self._step()

    def _forfeit(self, side: Side, reason: EndReason, now: float) -> None:
        game = self.game
        if game is None or self.finishing:
            return
        try:
            if self.match is not None:
                outcome = self.match.forfeit(side, reason)
            else:
                outcome = game.forfeit(side, reason)
        except RulesError:
            log.exception("table %s: forfeit failed", self.id)
            return
        if outcome is None:
            # Between two games of a match: the match is lost, no game is scored.
            if self.next_game is not None:
                self._disarm.append(self.next_game)
                self.next_game = None
            outcome = Outcome.of(side.opponent, ResultKind.SINGLE, reason, 1)
            self._game_over(outcome, now, game_counted=False)
            return
        self._game_over(outcome, now)

    def _game_over(self, outcome: Outcome, now: float, *, game_counted: bool = True) -> None:
        """The game ended: ``game_over`` (and ``match_over``) get their versions now; the
        shell settles (:class:`FinishedGame`), stores them, announces them, then calls
        :meth:`settled`."""
        self._disarm_clock()
        self.finishing = True
        s0, s1 = self.seats
        assert s0 is not None and s1 is not None and self.plan is not None
        seats = (s0, s1)
        winner, loser = seats[outcome.winner], seats[outcome.winner.opponent]
        match = self.match
        match_over = match is None or match.is_over
        game_id = self.game_id()
        plan = self.plan
        result: dict[str, Any] = {
            "game_id": game_id,
            "game_no": self.game_no,
            "table": self.id,
            "mode": str(self.mode),
            "winner": winner.player,
            "loser": loser.player,
            "winner_side": int(outcome.winner),
            "kind": str(outcome.kind),
            "reason": str(outcome.reason),
            "cube": outcome.cube,
            "points": outcome.points if game_counted else 0,
            "finished_at": now,
            "rating": plan.to_dict(),
            "match": self.match_state(),
        }
        match_winner = match_loser = None
        if match is not None and match_over:
            mw = seats[match.winner] if match.winner is not None else winner
            match_winner = mw.player
            match_loser = seats[1 - seats.index(mw)].player
        if match_over:
            self.status = TableStatus.FINISHED
        self._emit("game_over", {key: result[key] for key in (
            "game_id", "game_no", "winner", "loser", "winner_side", "kind", "reason", "cube",
            "points", "rating",
        )}, now)
        if match is not None and match_over:
            self._emit("match_over", {
                "match_id": self.match_id(), "winner": match_winner, "loser": match_loser,
                "score": list(match.score), "reason": str(outcome.reason),
            }, now)
        self.settlement = self._settle = FinishedGame(
            game_id=game_id, ladder=plan.ladder, boosted=plan.boosted,
            winner=winner.player, loser=loser.player, outcome=outcome, match_over=match_over,
            game_counted=game_counted, finished_at=now, result=result,
            match_id=self.match_id(), match_length=self.match_length,
            match_winner=match_winner, match_loser=match_loser,
        )

    def settled(self, now: float) -> Step:
        """The shell has settled, stored and announced the finished game: the match's next
        game is due after ``next_game_delay``; a finished table's grace timers stop."""
        settlement = self.settlement
        self.settlement = None
        if settlement is None or settlement.match_over or self.status is not TableStatus.PLAYING:
            self._cancel_graces()
            return self._step()
        # Between games a leave or a lost connection still forfeits (the match).
        self.finishing = False
        self.next_game = Deadline(NEXT_GAME, None, now + self.settings.next_game_delay)
        self._arm.append(self.next_game)
        return self._step()

    def close(self, reason: str, now: float) -> Step:
        """Close the table with ``table_closed``: an open table's only player left or vanished,
        or (:data:`STORE_LOST`) the store forgot the table, when a game in progress ends with
        no result and no rating change. Trusts its caller."""
        self._close(reason, now)
        return self._step()

    def cancel_tournament(self, now: float) -> Step:
        """The table's tournament was cancelled by its runner: close the table whatever is in
        progress (a game in play ends with no result and nothing to settle; tournament games
        are never rated). ``table_closed`` with reason ``tournament_cancelled``. A finished
        or closed table is left as it is (nothing emitted); a table of no tournament raises
        ValueError."""
        if self.tournament_id is None:
            raise ValueError(f"table {self.id} belongs to no tournament")
        if self.status in (TableStatus.FINISHED, TableStatus.CLOSED):
            return EMPTY
        if self.next_game is not None:
            self._disarm.append(self.next_game)
            self.next_game = None
        self._close(TOURNAMENT_CANCELLED, now)
        return self._step()

    def _close(self, reason: str, now: float) -> None:
        if self.status is TableStatus.CLOSED:
            return
        self._disarm_clock()
        self._cancel_graces()
        self._emit("table_closed", {"reason": reason}, now, with_state=False)
        self.status = TableStatus.CLOSED

    # --- a hold: the node cannot store ---------------------------------------------------

    def hold(self, now: float) -> Step:
        """The table's node cannot store (Redis is away): every timer stops where it is, so
        nobody gets a strike, an automatic move or a forfeit meanwhile; game actions are
        refused (``unavailable``) and presence changes (:meth:`connect`, :meth:`disconnect`)
        only update the seats' nodes until :meth:`resume`. Emits nothing (nothing could be
        stored): the timers stopped come back in ``cancelled``. Does nothing to a table held
        already, finished or closed. Trusts its caller."""
        if self.held is not None or self.status not in (TableStatus.OPEN, TableStatus.PLAYING):
            return EMPTY
        held = self.held = Hold(now)
        clock = self.clock
        if clock is not None:
            held.clock_left = max(0.0, clock.at - now)
            self._disarm.append(clock)
            self.clock = None
        for side, seat in enumerate(self.seats):
            if seat is not None and seat.grace is not None:
                held.grace_left[side] = max(0.0, seat.grace.at - now)
                self._disarm.append(seat.grace)
                seat.grace = None
        if self.next_game is not None:
            held.next_game_left = max(0.0, self.next_game.at - now)
            self._disarm.append(self.next_game)
            self.next_game = None
        return self._step()

    def resume(self, now: float, allowance: float) -> Step:
        """The node can store again: ``resumed`` (with the state), the decision clock and each
        grace period going on with the time they had left plus ``allowance``, a match's next
        game with the time it had left; then the presence changes of the hold take effect: a
        player back gets ``player_reconnected`` (when the leave was announced), a player whose
        last socket closed during the hold starts the grace period now
        (``player_disconnected``). Does nothing to a table not held."""
        held = self.held
        if held is None:
            return EMPTY
        self.held = None
        if self.status not in (TableStatus.OPEN, TableStatus.PLAYING):
            return self._step()
        if held.clock_left is not None and self.clock is None and self._clock_side is not None:
            at = self.deadline = now + held.clock_left + allowance
            self.clock = Deadline(CLOCK, int(self._clock_side), at)
            self._arm.append(self.clock)
        if held.next_game_left is not None and self.next_game is None:
            self.next_game = Deadline(NEXT_GAME, None, now + held.next_game_left)
            self._arm.append(self.next_game)
        elif self.next_game is not None:
            self._arm.append(self.next_game)  # due during the hold (a game settled meanwhile)
        back: list[tuple[int, Seat]] = []
        for side, left in held.grace_left.items():
            seat = self.seats[side]
            if seat is None or seat.grace is not None:
                continue
            if seat.nodes:
                back.append((side, seat))
                continue
            seat.grace_deadline = now + left + allowance
            seat.grace = Deadline(GRACE, side, seat.grace_deadline)
            self._arm.append(seat.grace)
        self.seats_changed()
        self._emit("resumed", {"since": held.since, "until": now}, now)
        for side, seat in back:
            seat.grace_deadline = None
            announced, seat.announced_away = seat.announced_away, False
            self.seats_changed()
            if announced and not self.finishing:
                self._emit("player_reconnected", {"side": side, "player": seat.player}, now)
        steps = [self._step()]
        for side in sorted(held.away):
            seat = self.seats[side]
            if seat is not None and not seat.nodes and seat.grace is None:
                steps.append(self.disconnect(seat.player, "", now))
        return merged(*steps)

    def _held_state(self) -> dict[str, Any] | None:
        """The state's ``held``: None, or since when play is held and the decision clock's
        seconds left."""
        held = self.held
        if held is None:
            return None
        return {"since": held.since, "clock_left": held.clock_left}

    def _held_error(self) -> ProtocolError:
        exc = ProtocolError(ErrorCode.UNAVAILABLE,
                            f"play at table {self.id} is held: the server cannot store; retry")
        exc.retry_after = HOLD_RETRY_AFTER
        return exc

    # --- after a takeover ------------------------------------------------------------------

    def take_over(self, now: float, allowance: float,
                  present: Sequence[Iterable[str]] = (),
                  lost_at: Sequence[float | None] = ()) -> Step:
        """This machine was rebuilt on a new owner: a player with sockets on live nodes
        (``present[side]``) is connected there, every other player is away: in grace from
        ``now``, or, when their sockets were on a node found dead at ``lost_at[side]``, in
        the node-loss grace from then (:meth:`_grace`); the player to act gets the time
        that was left on the clock at the last stored event (:attr:`logged_at`) plus
        ``allowance``. Emits nothing."""
        if self.status in (TableStatus.OPEN, TableStatus.PLAYING) and not self.finishing:
            for side, seat in enumerate(self.seats):
                if seat is None:
                    continue
                seat.nodes = set(present[side]) if side < len(present) else set()
                seat.logged_connected = None
                if seat.nodes:
                    if seat.grace is not None:
                        self._disarm.append(seat.grace)
                        seat.grace = None
                    seat.grace_deadline = None
                    seat.announced_away = False
                    continue
                if seat.grace is not None:
                    self._disarm.append(seat.grace)
                seat.grace_deadline = now + self._grace(
                    now, lost_at[side] if side < len(lost_at) else None)
                seat.grace = Deadline(GRACE, side, seat.grace_deadline)
                self._arm.append(seat.grace)
                # Away because a node was lost, not by the player's doing: the return is
                # announced (the others saw the seat's grace_deadline in the state).
                seat.announced_away = True
        else:
            for side, seat in enumerate(self.seats):
                if seat is not None:
                    seat.nodes = set(present[side]) if side < len(present) else set()
                    seat.logged_connected = None
        self.seats_changed()
        if self.clock is not None and self.deadline is not None:
            at = self.logged_at if self.logged_at is not None else now
            left = max(0.0, min(self.deadline - at, self.settings.decision_time))
            self.deadline = now + left + allowance
            self.clock = Deadline(CLOCK, self.clock.side, self.deadline)
            self._arm.append(self.clock)
        return self._step()

    def use_dice(self, dice: DiceSource) -> None:
        """Roll with ``dice`` from now on (a replayed machine rolls with the logged dice)."""
        self._dice = dice
        if self.match is not None:
            self.match.use_dice(dice)
        elif self.game is not None:
            self.game.use_dice(dice)

    # --- replay ------------------------------------------------------------------------------

    @classmethod
    def replay(
        cls,
        events: Iterable[Mapping[str, Any]],
        *,
        table_id: str,
        mode: TableMode,
        match_length: int,
        settings: MachineSettings,
        dice_factory: Callable[[], DiceSource],
        tournament_id: str | None = None,
        created_at: float = 0.0,
    ) -> TableMachine:
        """The machine whose events are ``events`` (lean or full, in version order, from
        ``v=1`` or from a ``game_start``: earlier events of a trimmed log are skipped).

        The games are played again with the dice the events recorded; clocks, strikes and
        seats come from the states the events carry. A game that ended in the log and was not
        settled yet comes back with its :attr:`settlement` set. Afterwards the machine rolls
        with ``dice_factory()``. Raises ValueError when the events do not fit together.
        """
        feed = _ReplayDice()
        machine = cls(table_id=table_id, mode=mode, match_length=match_length,
                      tournament_id=tournament_id, created_at=created_at, settings=settings,
                      dice_factory=lambda: feed)
        machine._muted = True
        state: dict[str, Any] | None = None
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
                    machine._replay_one(kind, event, state, feed)
                except (RulesError, ProtocolError, KeyError, TypeError) as exc:
                    raise ValueError(f"table {table_id}: event v{v} ({kind}) does not replay: "
                                     f"{exc}") from exc
                # Its command may have made the events that follow it (game_over ...).
                machine.version = max(machine.version, v)
            machine._replay_times(kind, event, state)
            if state is not None and ("state" in event or "changes" in event):
                machine._adopt(state)
                if kind == "game_start":
                    machine.game_starts.append(v)
        if first_v is not None and not started:
            # A log trimmed in the middle of a game keeps neither v=1 nor a game_start:
            # nothing here rebuilds that game.
            raise ValueError(f"table {table_id}: the log starts at v{first_v}, with no "
                             "game_start to replay from")
        machine._muted = False
        machine._out, machine._arm, machine._disarm, machine._settle = [], [], [], None
        machine.use_dice(dice_factory())
        return machine

    def _replay_times(self, kind: str, event: Mapping[str, Any],
                      state: Mapping[str, Any] | None) -> None:
        """When the event happened, where the log says it: a fresh decision clock started then
        (deadline - limit), a grace period too (deadline - grace); a hold ended then."""
        if kind == "resumed":
            self.logged_at = float(event["until"])
            return
        if kind == "player_disconnected":
            self.logged_at = float(event["deadline"]) - float(event["grace"])
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
                self.logged_at = float(clock["deadline"]) - float(limit)

    def _replay_one(self, kind: str, event: Mapping[str, Any],
                    state: Mapping[str, Any] | None, feed: _ReplayDice) -> None:
        """Apply one logged event's command (its dice fed first)."""
        now = self.logged_at or 0.0
        if self.finishing and self.settlement is not None:
            # The log goes on after a game's end: that game was settled.
            self.settled(now)
        side = event.get("side")
        rolls = [r.get("dice") for r in event.get("rolls") or ()]
        player = None
        if isinstance(side, int) and self.seats[side] is not None:
            player = self.seats[side].player  # type: ignore[union-attr]
        if kind == "seated":
            assert isinstance(side, int)
            name = str(event.get("name"))
            who = str(event["player"])
            # Created or joined from a socket: connected (a pair seated by matchmaking is
            # followed at once by its game_start, whose state says).
            self.seats[side] = Seat(who, name, who.startswith(GUEST_PREFIX), "",
                                    who.startswith(BOT_PREFIX), logged_connected=True)
            self.seats_changed()
        elif kind == "game_start":
            self._replay_game_start(event, state, feed, rolls)
        elif kind in ("rolled", "moved", "doubled", "taken", "dropped", "resign_offered",
                      "resign_rejected"):
            if player is None:
                raise KeyError(f"no player at side {side}")
            msg: Message
            if kind == "rolled":
                feed.feed(event.get("dice"), *rolls)
                msg = Roll(table=self.id)
            elif kind == "moved":
                feed.feed(*rolls)
                msg = Play(table=self.id, play=str(event.get("play")))
            elif kind == "doubled":
                msg = Double(table=self.id)
            elif kind == "taken":
                feed.feed(*rolls)
                msg = Take(table=self.id)
            elif kind == "dropped":
                msg = Drop(table=self.id)
            elif kind == "resign_offered":
                msg = Resign(table=self.id, kind=ResignKind(str(event.get("kind"))))
            else:
                feed.feed(*rolls)
                msg = RejectResign(table=self.id)
            self.act(player, msg, now)
        elif kind == "timeout":
            if event.get("action") == "roll":
                feed.feed(event.get("dice"))
            feed.feed(*rolls)
            self._clock_side = Side(int(event["side"]))
            self._timeout(now)
        elif kind == "player_disconnected":
            seat = self.seats[int(event["side"])]
            assert seat is not None
            seat.nodes.clear()
            seat.logged_connected = False
            seat.grace_deadline = float(event["deadline"])
            seat.grace = Deadline(GRACE, int(event["side"]), seat.grace_deadline)
            seat.presence_used += 2
            seat.announced_away = True
            self.seats_changed()
        elif kind == "player_reconnected":
            seat = self.seats[int(event["side"])]
            assert seat is not None
            seat.logged_connected = True
            seat.grace = None
            seat.grace_deadline = None
            seat.announced_away = False
            self.seats_changed()
        elif kind == "game_over":
            # Not the end of a play, a drop or a timeout (those replayed it already): an
            # accepted resignation, or a forfeit for a lost connection or a leave.
            reason = str(event.get("reason"))
            loser = 1 - int(event["winner_side"])
            game = self.game
            if reason == str(EndReason.RESIGN) and game is not None and game.resignation:
                offer = game.resignation
                self.act(self.seats[offer.side.opponent].player,  # type: ignore[union-attr]
                         AcceptResign(table=self.id), now)
            else:
                self._forfeit(Side(loser), EndReason(reason), now)
        elif kind == "table_closed":
            self._close(str(event.get("reason")), now)
        elif kind in ("match_over", "resumed"):
            # match_over: always right after its game_over, which replayed it; resumed: its
            # new deadlines are in its state.
            pass
        else:
            raise KeyError(f"unknown event type {kind!r}")

    def _replay_game_start(self, event: Mapping[str, Any], state: Mapping[str, Any] | None,
                           feed: _ReplayDice, rolls: list[Any]) -> None:
        if state is None:
            raise KeyError("game_start without a state")
        seats = state.get("seats") or [None, None]
        for side, data in enumerate(seats):
            if data is not None and (self.seats[side] is None
                                     or self.seats[side].player != data["player"]):  # type: ignore[union-attr]
                self.seats[side] = Seat(str(data["player"]), str(data["name"]),
                                        bool(data["guest"]), "", bool(data["bot"]),
                                        logged_connected=bool(data["connected"]))
        rating = event.get("rating") or state.get("rating")
        if self.plan is None and isinstance(rating, Mapping):
            self.plan = RatingPlan(rating.get("ladder"), bool(rating.get("boosted")),
                                   rating.get("unrated_reason"))
            self._plan_state = None
        self.status = TableStatus.PLAYING
        self.settlement = None
        self.finishing = False
        self.next_game = None
        if self._dice is None:
            self._dice = self._dice_factory()
        if not self.is_single_game and self.match is None:
            info = state.get("match") or {}
            score = tuple(info.get("score") or (0, 0))
            crawford_now = bool(info.get("crawford"))
            self.match = Match.resume(
                self.match_length, (int(score[0]), int(score[1])),
                crawford_played=self.match_length - 1 in score and not crawford_now,
                dice=self._dice,
            )
        self.game_no = int(event["game_no"]) - 1
        for pair in event.get("opening_rolls") or ():
            feed.feed(pair)
        feed.feed(*rolls)
        self._start_game(self.logged_at or 0.0)

    def _adopt(self, state: Mapping[str, Any]) -> None:
        """Take what only the log knows from a logged state: seat presence, the clock's
        deadline, strikes (the game itself was played again)."""
        seats = state.get("seats")
        if isinstance(seats, list):
            for side, data in enumerate(seats):
                seat = self.seats[side] if side < 2 else None
                if seat is not None and isinstance(data, Mapping):
                    seat.grace_deadline = data.get("grace_deadline")
                    seat.logged_connected = bool(data.get("connected"))
            self._seats_state = list(seats)
        clock = state.get("clock")
        if isinstance(clock, Mapping):
            self.strikes = [int(s) for s in clock.get("strikes") or (0, 0)]
            deadline = clock.get("deadline")
            to_act = clock.get("side")
            self.deadline = None if deadline is None else float(deadline)
            self._clock_side = None if to_act is None else Side(int(to_act))
            if deadline is None or to_act is None:
                self.clock = None
            else:
                self.clock = Deadline(CLOCK, int(to_act), float(deadline))
        self.last_state = dict(state)


__all__ = [
    "BOOSTED",
    "BOT_PREFIX",
    "CLOCK",
    "EMPTY",
    "FIBS",
    "GRACE",
    "GUEST_PREFIX",
    "HOLD_RETRY_AFTER",
    "NEXT_GAME",
    "TABLE42",
    "Deadline",
    "FinishedGame",
    "Hold",
    "LeaveKind",
    "MachineSettings",
    "Seat",
    "Step",
    "TableMachine",
    "TableStatus",
    "already_seated",
    "bot_not_allowed",
    "check_new_table",
    "merged",
]
