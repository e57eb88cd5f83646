"""Sides, single-checker steps and the immutable backgammon ``Position``.

Numbering: every side counts its own points 24..1 in the direction it moves, so each side
bears off from its points 6..1 (its home board). Side 0's point ``p`` is side 1's point
``25 - p``. In a ``Step`` (and therefore in a ``Play``) 25 stands for the bar and 0 for off,
always in the numbering of the side that moves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import NamedTuple

from server.protocol.errors import ErrorCode
from server.rules.errors import IllegalActionError

CHECKERS = 15
"""Checkers per side, always."""
BAR = 25
"""The bar, as a point number in a ``Step``."""
OFF = 0
"""Borne off, as a point number in a ``Step``."""


class Side(IntEnum):
    """The two sides; side 0 is the first seat at a table."""

    ZERO = 0
    ONE = 1

    @property
    def opponent(self) -> Side:
        return Side.ONE if self is Side.ZERO else Side.ZERO


class ResultKind(StrEnum):
    """How big a win is; ``multiplier`` times the cube gives the game points."""

    SINGLE = "single"
    GAMMON = "gammon"
    BACKGAMMON = "backgammon"

    @property
    def multiplier(self) -> int:
        return _MULTIPLIER[self]


_MULTIPLIER = {ResultKind.SINGLE: 1, ResultKind.GAMMON: 2, ResultKind.BACKGAMMON: 3}


class Step(NamedTuple):
    """One checker moved by one die: ``from_point`` -> ``to_point`` in the mover's numbering.

    25 is the bar, 0 is off. A ``NamedTuple`` rather than a dataclass: steps are created by
    the thousand in the legal-play generator and a tuple is several times cheaper to build.
    """

    from_point: int
    to_point: int

    def __str__(self) -> str:
        return f"{_point_name(self.from_point)}/{_point_name(self.to_point)}"


Play = tuple[Step, ...]
"""A whole play: the steps of one turn, in an order in which they can be played."""


def _point_name(point: int) -> str:
    if point == BAR:
        return "bar"
    if point == OFF:
        return "off"
    return str(point)


def as_side(value: object, field: str = "side") -> Side:
    """``value`` as a ``Side``; a ValueError naming ``field`` for anything but 0 or 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value not in (0, 1):
        raise IllegalActionError(
            f"{field} must be 0 or 1, got {value!r}",
            code=ErrorCode.INVALID_SIDE
        )
    return Side(value)


@dataclass(frozen=True, slots=True)
class Position:
    """A backgammon position: where all 30 checkers are and which side is to move.

    - ``board``: 24 signed ints seen from side 0: ``board[i]`` is side 0's point ``i + 1``;
      positive counts are side 0's checkers, negative counts side 1's.
    - ``bar``, ``off``: ``(side 0, side 1)`` checkers on the bar and borne off.
    - ``turn``: the side to move.

    Construction checks that each side has exactly 15 checkers and no count is negative.
    """

    board: tuple[int, ...]
    bar: tuple[int, int]
    off: tuple[int, int]
    turn: Side

    def __post_init__(self) -> None:
        if len(self.board) != 24:
            raise ValueError(f"board must have 24 points, got {len(self.board)}")
        if len(self.bar) != 2 or len(self.off) != 2:
            raise ValueError("bar and off must be (side 0, side 1) pairs")
        if min(self.bar) < 0 or min(self.off) < 0:
            raise ValueError(f"bar and off counts must not be negative: {self.bar}, {self.off}")
        zero = sum(n for n in self.board if n > 0) + self.bar[0] + self.off[0]
        one = -sum(n for n in self.board if n < 0) + self.bar[1] + self.off[1]
        if zero != CHECKERS or one != CHECKERS:
            raise ValueError(f"each side needs exactly 15 checkers, got {zero} and {one}")
        if not isinstance(self.turn, Side):
            object.__setattr__(self, "turn", as_side(self.turn, "turn"))

    # -- construction -------------------------------------------------------------------

    @classmethod
    def initial(cls, turn: Side = Side.ZERO) -> Position:
        """The standard starting position with ``turn`` to move."""
        return cls.from_points(_START, _START, turn=turn)

    @classmethod
    def from_points(
        cls,
        points0: Mapping[int, int],
        points1: Mapping[int, int],
        *,
        turn: Side = Side.ZERO,
    ) -> Position:
        """Build a position from each side's own ``{point: checkers}`` (point 25 = the bar).

        Checkers not placed are borne off. Raises ValueError when a point is outside 1..25,
        both sides claim a point, or a side has more than 15 checkers.
        """
        board = [0] * 24
        bars = [0, 0]
        for side, points in ((0, points0), (1, points1)):
            for point, count in points.items():
                if not 1 <= point <= 25 or count < 0:
                    raise ValueError(f"side {side}: bad point/count {point}: {count}")
                if point == BAR:
                    bars[side] += count
                    continue
                index = point - 1 if side == 0 else 24 - point
                if count and board[index] * (1 if side == 0 else -1) < 0:
                    raise ValueError(f"both sides on side {side}'s point {point}")
                board[index] += count if side == 0 else -count
        off0 = CHECKERS - sum(points0.values())
        off1 = CHECKERS - sum(points1.values())
        return cls(tuple(board), (bars[0], bars[1]), (off0, off1), Side(turn))

    @classmethod
    def from_mover_view(cls, mine: list[int], theirs: list[int], mover: Side) -> Position:
        """Inverse of ``mover_view``: rebuild a position with ``mover`` to move."""
        if mover == 0:
            board = tuple(mine[p] - theirs[p] for p in range(1, 25))
            return cls(board, (mine[BAR], theirs[BAR]), (mine[OFF], theirs[OFF]), Side.ZERO)
        board = tuple(theirs[25 - p] - mine[25 - p] for p in range(1, 25))
        return cls(board, (theirs[BAR], mine[BAR]), (theirs[OFF], mine[OFF]), Side.ONE)

    @classmethod
    def from_position_id(cls, position_id: str, turn: Side = Side.ZERO) -> Position:
        """The position a GNU Backgammon Position ID describes, its player on roll as
        ``turn`` (see ``server.rules.gnubg``); ``InvalidIdError`` when malformed."""
        from server.rules.gnubg import position_from_id

        return position_from_id(position_id, turn)

    def position_id(self) -> str:
        """This position's GNU Backgammon Position ID, the side to move on roll."""
        from server.rules.gnubg import position_id

        return position_id(self)

    # -- views ----------------------------------------------------------------------------

    def mover_view(self) -> tuple[list[int], list[int]]:
        """Two 26-lists in the numbering of the side to move: ``mine[p]`` and ``theirs[p]``.

        Index 1..24 is a point (``theirs[p]`` is the opponent's checkers on *my* point p),
        index 25 is the bar and index 0 is off for the owner of the list.
        """
        board = self.board
        mine = [0] * 26
        theirs = [0] * 26
        s = self.turn
        if s == 0:
            for p in range(1, 25):
                n = board[p - 1]
                if n > 0:
                    mine[p] = n
                elif n < 0:
                    theirs[p] = -n
        else:
            for p in range(1, 25):
                n = board[24 - p]
                if n < 0:
                    mine[p] = -n
                elif n > 0:
                    theirs[p] = n
        mine[BAR], theirs[BAR] = self.bar[s], self.bar[1 - s]
        mine[OFF], theirs[OFF] = self.off[s], self.off[1 - s]
        return mine, theirs

    def checkers(self, side: Side) -> tuple[int, ...]:
        """``side``'s checkers in its own numbering: index 0 off, 1..24 points, 25 bar."""
        counts = [0] * 26
        for p in range(1, 25):
            n = self.board[p - 1] if side == 0 else -self.board[24 - p]
            if n > 0:
                counts[p] = n
        counts[BAR] = self.bar[side]
        counts[OFF] = self.off[side]
        return tuple(counts)

    def pip_count(self, side: Side) -> int:
        """Pips ``side`` still has to travel to bear every checker off (bar counts 25)."""
        return sum(p * n for p, n in enumerate(self.checkers(side)))

    def with_turn(self, turn: Side) -> Position:
        return Position._trusted(self.board, self.bar, self.off, Side(turn))

    @classmethod
    def _trusted(
        cls, board: tuple[int, ...], bar: tuple[int, int], off: tuple[int, int], turn: Side
    ) -> Position:
        """A position from parts already known to be valid (skips the checks of
        ``__post_init__``; for this package's own moves, never for outside input)."""
        position = object.__new__(cls)
        setattr_ = object.__setattr__
        setattr_(position, "board", board)
        setattr_(position, "bar", bar)
        setattr_(position, "off", off)
        setattr_(position, "turn", turn)
        return position

    @property
    def winner(self) -> Side | None:
        """The side that has borne off all 15 checkers, if any."""
        if self.off[0] == CHECKERS:
            return Side.ZERO
        if self.off[1] == CHECKERS:
            return Side.ONE
        return None

    def result_kind(self, winner: Side) -> ResultKind:
        """What a win by ``winner`` in this position is worth.

        Gammon: the loser has borne off nothing. Backgammon: a gammon where the loser still
        has a checker on the bar or in the winner's home board (the loser's points 19..24).
        """
        loser = winner.opponent
        if self.off[loser]:
            return ResultKind.SINGLE
        counts = self.checkers(loser)
        if counts[BAR] or any(counts[19:25]):
            return ResultKind.BACKGAMMON
        return ResultKind.GAMMON

    # -- playing --------------------------------------------------------------------------

    def apply(self, play: Play, *, pass_turn: bool = True) -> Position:
        """The position after the side to move plays ``play`` (hits go to the bar).

        Only the mechanics are checked (a checker on each source point, no landing on a
        point the opponent holds); use ``legal_plays``/``parse_play`` for the dice and the
        rules. With ``pass_turn`` (the default) the opponent is to move afterwards.
        """
        board = list(self.board)
        bar = list(self.bar)
        off = list(self.off)
        me = self.turn
        sign = 1 if me == 0 else -1  # the sign of the mover's checkers on ``board``
        for step in play:
            src, dst = step
            if not 1 <= src <= 25 or not 0 <= dst <= 24 or dst >= src:
                raise ValueError(f"bad step {src}/{dst}")
            if src == BAR:
                if bar[me] <= 0:
                    raise ValueError(f"no checker to move on point {src}")
                bar[me] -= 1
            else:
                i = src - 1 if sign > 0 else 24 - src
                if board[i] * sign <= 0:
                    raise ValueError(f"no checker to move on point {src}")
                board[i] -= sign
            if dst == OFF:
                off[me] += 1
                continue
            j = dst - 1 if sign > 0 else 24 - dst
            mine = board[j] * sign
            if mine <= -2:
                raise ValueError(f"point {dst} is held by the opponent")
            if mine == -1:  # a blot is hit: it goes to the bar
                board[j] = 0
                bar[1 - me] += 1
            board[j] += sign
        turn = me.opponent if pass_turn else me
        return Position._trusted(tuple(board), (bar[0], bar[1]), (off[0], off[1]), turn)

    def to_dict(self) -> dict[str, object]:
        """JSON-able: board (24 signed ints from side 0), bar, off, turn."""
        return {
            "board": list(self.board),
            "bar": list(self.bar),
            "off": list(self.off),
            "turn": int(self.turn),
        }


_START = {24: 2, 13: 5, 8: 3, 6: 5}
