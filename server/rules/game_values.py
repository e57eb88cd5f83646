"""The values of a game of backgammon (pure): its phases, why it ended, its outcome, a
resignation on offer, a history entry, a decision (``server/rules/game.py`` moves from one
to the next), and the checks of the values a caller gives (the cube's limit, a forfeit's
reason, a resignation's kind)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from server.protocol.errors import ErrorCode
from server.rules.dice import Roll
from server.rules.errors import IllegalActionError
from server.rules.position import Play, ResultKind, Side

MAX_CUBE = 64
"""The highest cube value; no double is offered beyond it."""


class Phase(StrEnum):
    OPENING = "opening"
    ROLL = "roll"
    DOUBLE_OFFERED = "double_offered"
    MOVE = "move"
    RESIGN_OFFERED = "resign_offered"
    OVER = "over"


class EndReason(StrEnum):
    NORMAL = "normal"
    RESIGN = "resign"
    DROP = "drop"
    TIMEOUT = "timeout"
    DISCONNECT = "disconnect"
    LEAVE = "leave"

    @property
    def is_forfeit(self) -> bool:
        return self in (EndReason.TIMEOUT, EndReason.DISCONNECT, EndReason.LEAVE)


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a game ended: ``points == kind.multiplier * cube`` always."""

    winner: Side
    kind: ResultKind
    reason: EndReason
    cube: int
    points: int

    def __post_init__(self) -> None:
        if self.points != self.kind.multiplier * self.cube:
            raise ValueError(f"points must be kind x cube, got {self.points} for {self}")

    @classmethod
    def of(cls, winner: Side, kind: ResultKind, reason: EndReason, cube: int) -> Outcome:
        return cls(winner, kind, reason, cube, kind.multiplier * cube)

    @property
    def loser(self) -> Side:
        return self.winner.opponent

    def to_dict(self) -> dict[str, object]:
        return {
            "winner": int(self.winner),
            "kind": str(self.kind),
            "reason": str(self.reason),
            "cube": self.cube,
            "points": self.points,
        }


@dataclass(frozen=True, slots=True)
class Resignation:
    """A resignation on offer: ``side`` gives up a ``kind`` win to its opponent."""

    side: Side
    kind: ResultKind


@dataclass(frozen=True, slots=True)
class Record:
    """One entry of ``Game.history``.

    ``kind`` is ``"play"`` (with ``dice`` and ``play``; the empty play when the roll could
    not be played, the opening play carries the opening dice), ``"double"``, ``"take"``,
    ``"drop"``, ``"resign"`` (with ``result``), ``"accept"``, ``"reject"`` or
    ``"forfeit"``.
    """

    kind: str
    side: Side
    dice: Roll | None = None
    play: Play | None = None
    result: ResultKind | None = None


@dataclass(frozen=True, slots=True)
class Action:
    """A decision for ``side``: ``kind`` is ``"start"``, ``"roll"``, ``"play"`` (with
    ``play``), ``"take"`` or ``"reject"``; see ``Game.default_action``."""

    kind: str
    side: Side | None
    play: Play | None = None



def check_max_cube(max_cube: object) -> int:
    if (
        isinstance(max_cube, bool)
        or not isinstance(max_cube, int)
        or not 1 <= max_cube <= MAX_CUBE
        or max_cube & (max_cube - 1)
    ):
        raise ValueError(f"max_cube must be a power of two in 1..{MAX_CUBE}, got {max_cube!r}")
    return max_cube


def forfeit_reason(reason: EndReason | str) -> EndReason:
    """``reason`` as a forfeit ``EndReason`` (timeout, disconnect, leave), else
    ``IllegalActionError`` with code ``invalid_reason``."""
    why = EndReason(reason) if reason in _REASONS else None
    if why is None or not why.is_forfeit:
        raise IllegalActionError(
            f"forfeit reason must be timeout, disconnect or leave, got {reason!r}",
            code=ErrorCode.INVALID_REASON,
        )
    return why


_REASONS = frozenset(reason.value for reason in EndReason)


def as_kind(kind: ResultKind | str) -> ResultKind:
    try:
        return ResultKind(kind)
    except ValueError:
        raise IllegalActionError(
            f"resignation kind must be single, gammon or backgammon, got {kind!r}",
            code=ErrorCode.INVALID_KIND,
        ) from None


__all__ = [
    "MAX_CUBE",
    "Action",
    "EndReason",
    "Outcome",
    "Phase",
    "Record",
    "Resignation",
    "as_kind",
    "check_max_cube",
    "forfeit_reason",
]
