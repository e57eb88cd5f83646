"""The table's state model: what a table is made of (:class:`TableState`: its seats, the game
or match, the decision clock, strikes and versions) and the values the machine hands out
(:class:`Deadline`, :class:`FinishedGame`, :class:`Effects`). Plain data; the rules that
change it are in :mod:`server.tables.commands` and its parts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from server.protocol.codec import Outgoing
from server.protocol.ids import BOT_PREFIX, GUEST_PREFIX
from server.protocol.messages import TableMode
from server.rules import DiceSource, Game, Match, Outcome, Phase, Side
from server.tables.ratings import FIBS, TABLE42, RatingPlan

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
class Effects:
    """What one command did: ``events``, the new versioned events (each an
    :class:`~server.protocol.codec.Outgoing` with its full and lean forms), to be stored before
    they are announced; ``deadlines``, the timers to arm (each replaces the one of its kind and
    side armed before); ``cancelled``, the timers no longer in force; ``settle``, a game just
    ended, which the shell settles once."""

    events: tuple[Outgoing, ...] = ()
    deadlines: tuple[Deadline, ...] = ()
    cancelled: tuple[Deadline, ...] = ()
    settle: FinishedGame | None = None


EMPTY = Effects()


def merged(*steps: Effects) -> Effects:
    """One step doing what ``steps`` do, in order."""
    done = [step for step in steps if step is not EMPTY]
    if len(done) <= 1:
        return done[0] if done else EMPTY
    return Effects(tuple(e for s in done for e in s.events),
                tuple(d for s in done for d in s.deadlines),
                tuple(d for s in done for d in s.cancelled),
                next((s.settle for s in done if s.settle is not None), None))



class TableState:
    """One table's state, read by every part of the machine: the seats, the rating plan, the
    game or match, the decision clock in force (``clock``; ``deadline`` and ``clock_side`` are
    the state's, ``clock_token`` the decision it runs for), the strikes, the match's next game,
    the settling of a game just ended, the hold, and the versions of the events so far."""

    def __init__(self, *, table_id: str, mode: TableMode, match_length: int,
                 tournament_id: str | None, created_at: float,
                 settings: MachineSettings) -> None:
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
        self.clock_side: Side | None = None  # who the state's clock runs for
        self.clock_token: tuple[int, int, Phase] | None = None  # the decision it runs for
        self.next_game: Deadline | None = None
        self.finishing = False  # a game ended and is being settled
        # The player the shell is seating (awaiting the seat lock or the pair limit): the
        # seat is theirs until the shell seats them or sets this back to None.
        self.joining: str | None = None
        self.settlement: FinishedGame | None = None  # the one being made
        self.held: Hold | None = None  # while the node cannot store (see hold)
        self.logged_at: float | None = None  # replayed: time of the latest event, when known
        self.last_state: dict[str, Any] | None = None  # the state of the latest event
        self.game_starts: list[int] = []  # versions of the game_start events
        self.dice: DiceSource | None = None  # the dice of the game or match in play

    @property
    def is_single_game(self) -> bool:
        return self.match_length == 0

    @property
    def is_full(self) -> bool:
        return all(s is not None for s in self.seats)

    def side_of(self, player: str) -> Side | None:
        for side, seat in enumerate(self.seats):
            if seat is not None and seat.player == player:
                return Side(side)
        return None

    def seated_players(self) -> list[str]:
        return [seat.player for seat in self.seats if seat is not None]

    def free_side(self) -> int | None:
        """The first free seat's side (None: both taken)."""
        return next((side for side, seat in enumerate(self.seats) if seat is None), None)

    def game_id(self) -> str:
        return f"{self.id}-g{self.game_no}"

    def match_id(self) -> str:
        return f"{self.id}-m"


__all__ = [
    "BOOSTED",
    "BOT_PREFIX",
    "CLOCK",
    "EMPTY",
    "GRACE",
    "GUEST_PREFIX",
    "HOLD_RETRY_AFTER",
    "NEXT_GAME",
    "STORE_LOST",
    "TOURNAMENT_CANCELLED",
    "Deadline",
    "Effects",
    "FinishedGame",
    "Hold",
    "LeaveKind",
    "MachineSettings",
    "Seat",
    "TableState",
    "TableStatus",
    "merged",
]
