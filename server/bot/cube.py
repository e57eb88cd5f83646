"""Cube decisions from cubeless probabilities: double, redouble, take, drop; money and match.

Pure. Inputs are the five cubeless outputs of :mod:`server.bot.neural` (win, win gammon,
win backgammon, lose gammon, lose backgammon) of the side the decision belongs to.

Money play (no Jacoby rule, no beavers). ``E`` is the doubler's cubeless equity (gammons
included) on roll; the cube's value to its owner is modelled by three constants:

=============  =====  ==================================================================
``TAKE_POINT``  0.57  the taker takes while the doubler's ``E`` is at most this (a dead
                      cube would drop above 0.50; owning the cube after the take is worth
                      about 7 hundredths of equity to the taker)
``DOUBLE_AT``   0.40  a centred cube is turned from this ``E`` on (``REDOUBLE_AT`` 0.50
                      when the doubler owns it: its own cube is worth more to keep)
``TOO_GOOD``    1.00  from this ``E`` on, the doubler plays on for the gammon instead
=============  =====  ==================================================================

:func:`money_equities` turns them into the equities of the three outcomes of a double
(no double, double/take, double/drop) per unit of the current cube, consistent with the
thresholds (the value of keeping the cube is ``DOUBLE_AT - 0.14`` below the doubling point,
falling linearly to 0 at the take point): the review (:mod:`server.bot.review`) charges a
cube error as the difference.

Match play: outcomes are valued in match-winning chances (MWC) from a table computed here
(:func:`match_table`): each game won by either side with chance 1/2, a gammon on
``GAMMON_RATE`` of them, the cube left where it is. A double is taken when the taker's MWC
after the take (cube doubled, dead) is at least its MWC after a drop, less
``MATCH_TAKE_SLACK`` (the recube it gets); a double is offered when the opponent would
drop (a cash, unless playing on is worth more), or when the taker's take would leave the
doubler better off than not doubling and the doubler's chances, scaled like a money
equity, reach ``DOUBLE_AT``, or at once when losing at the doubled cube costs no more than
at the current one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from server.bot.neural import Array, equity

TAKE_POINT = 0.57
DOUBLE_AT = 0.40
REDOUBLE_AT = 0.50
TOO_GOOD = 1.00
GAMMON_RATE = 0.26
MATCH_TAKE_SLACK = 0.01
MAX_AWAY = 64


@lru_cache(maxsize=1)
def match_table() -> tuple[tuple[float, ...], ...]:
    """``table[a][b]``: the chance of winning a match needing ``a`` points against an
    opponent needing ``b`` (``a``, ``b`` in 1..MAX_AWAY; 0 rows are unused)."""
    n = MAX_AWAY + 1
    met = [[0.0] * n for _ in range(n)]
    single = 0.5 * (1.0 - GAMMON_RATE)
    gammon = 0.5 * GAMMON_RATE

    def at(a: int, b: int) -> float:
        if a <= 0:
            return 1.0
        if b <= 0:
            return 0.0
        return met[a][b]

    for total in range(2, 2 * n):
        for a in range(1, n):
            b = total - a
            if not 1 <= b < n:
                continue
            met[a][b] = (single * at(a - 1, b) + gammon * at(a - 2, b)
                         + single * at(a, b - 1) + gammon * at(a, b - 2))
    return tuple(tuple(row) for row in met)


def met(away_me: int, away_them: int) -> float:
    """My match-winning chance needing ``away_me`` points against ``away_them``."""
    if away_me <= 0:
        return 1.0
    if away_them <= 0:
        return 0.0
    table = match_table()
    return table[min(away_me, MAX_AWAY)][min(away_them, MAX_AWAY)]


@dataclass(frozen=True, slots=True)
class MatchContext:
    """The score of a match as seen by one side: the points each still needs."""

    length: int
    away_me: int
    away_them: int

    def flipped(self) -> MatchContext:
        return MatchContext(self.length, self.away_them, self.away_me)

    def mwc(self, out: Array, cube: int) -> Array:
        """My match-winning chance for outputs ``(..., 5)`` at ``cube`` (dead cube)."""
        w, wg, wbg, lg, lbg = (out[..., i] for i in range(5))
        a, b = self.away_me, self.away_them
        value = ((w - wg) * met(a - cube, b) + (wg - wbg) * met(a - 2 * cube, b)
                 + wbg * met(a - 3 * cube, b))
        value = value + ((1.0 - w - lg) * met(a, b - cube) + (lg - lbg) * met(a, b - 2 * cube)
                         + lbg * met(a, b - 3 * cube))
        return np.asarray(value)


@dataclass(frozen=True, slots=True)
class CubeState:
    """The cube as the side deciding to double sees it: its value, whether that side owns
    it (False: centred), and the match (None: money play)."""

    cube: int = 1
    owned: bool = False
    match: MatchContext | None = None


def money_equities(e: float, owned: bool) -> tuple[float, float, float]:
    """``(no double, double/take, double/drop)`` for the doubler with cubeless equity
    ``e``, per unit of the current cube (see the module docstring)."""
    double_at = REDOUBLE_AT if owned else DOUBLE_AT
    vig = 2.0 * TAKE_POINT - 1.0
    keep = (double_at - vig) * min(1.0, max(0.0, (TAKE_POINT - e) / (TAKE_POINT - double_at)))
    return e + keep, 2.0 * e - vig, 1.0


def should_double(out: Array, state: CubeState) -> bool:
    """Whether the side on roll with cubeless outputs ``out`` doubles."""
    match = state.match
    if match is None or match.length == 0:
        no_double, take, drop = money_equities(float(equity(out)), state.owned)
        return min(take, drop) > no_double
    cube = state.cube
    no_double = float(match.mwc(out, cube))
    take = float(match.mwc(out, 2 * cube))
    drop = met(match.away_me - cube, match.away_them)
    if take >= drop + MATCH_TAKE_SLACK:  # the opponent should drop: cash, unless too good
        return drop > no_double
    if take <= no_double:
        return False
    lose_now = met(match.away_me, match.away_them - cube)
    if met(match.away_me, match.away_them - 2 * cube) >= lose_now:
        return True  # losing at the doubled cube costs nothing more: a free double
    win = met(match.away_me - cube, match.away_them)
    scaled = 2.0 * (no_double - lose_now) / max(1e-9, win - lose_now) - 1.0
    return scaled >= (REDOUBLE_AT if state.owned else DOUBLE_AT)


def should_take(out: Array, state: CubeState) -> bool:
    """Whether the side offered a double takes; ``out`` are the taker's cubeless outputs
    (the doubler on roll) and ``state`` is the doubler's view of the cube."""
    match = state.match
    if match is None or match.length == 0:
        return float(equity(out)) >= -TAKE_POINT
    mine = match.flipped()
    take = float(mine.mwc(out, 2 * state.cube))
    drop = met(mine.away_me, mine.away_them - state.cube)
    return take >= drop - MATCH_TAKE_SLACK
