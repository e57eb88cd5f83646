"""How good a backgammon position is, for the computer players. Pure: no I/O, no asyncio.

A side's checkers are a 26-list in its **own** numbering (the rules engine's mover view):
index 0 = borne off, 1..24 = its points (it moves from 24 down to 1, its home board is
1..6), 25 = the bar. The opponent's list is in the opponent's own numbering, so my point
``p`` is the opponent's point ``25 - p``.

:func:`evaluate` scores a position for side ``a``, who has just moved, in pip-like units
(positive: ``a`` is better), as ``terms(a, b) - terms(b, a)``: the same terms for both
sides, except that the blots of ``b`` (to roll) cost a quarter of ``a``'s. The opponent's
best reply is the one that maximises its own score, and my value after it is minus that
score. The terms, each weighted by a table below:

- the pip count (every pip counts one), checkers borne off (a small bonus on top);
- made points (two or more checkers), worth more in the home board and on the bar point,
  and *anchors* (points in the opponent's home board, my 18..24);
- the longest *prime* (run of made points) and the home points held while the opponent
  has checkers on the bar;
- *blots* (single checkers) the opponent can hit: the rolls out of 36 that reach them
  from every opponent checker behind them, direct (1..6 away) or indirect (7..24, combined
  dice), ignoring blocking points; the cost grows with the pips a hit would lose;
- heavy stacks (more than three checkers on a point).

Once the two sides have passed each other (no contact) only the race counts: pips and
checkers off.

:func:`win_probability` turns a score into a cubeless winning chance with a logistic curve
whose width grows with the pips left (a 10-pip lead at 100 pips each is about 80%); the
cube thresholds in :mod:`server.bot.strategy` read it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from operator import mul

Checkers = Sequence[int]
"""26 counts in a side's own numbering: 0 off, 1..24 points, 25 the bar."""

OFF = 0
BAR = 25

ROLLS: tuple[tuple[int, int, int], ...] = tuple(
    (a, b, 1 if a == b else 2) for a in range(1, 7) for b in range(a, 7)
)
"""The 21 distinct rolls ``(die, die, weight)``; the weights (1 for doubles, 2 otherwise)
add up to 36."""

_INDEX = tuple(range(26))
_REACH: tuple[tuple[int, int], ...] = tuple(
    (
        (1 << a) | (1 << 2 * a) | (1 << 3 * a) | (1 << 4 * a)
        if a == b
        else (1 << a) | (1 << b) | (1 << (a + b)),
        w,
    )
    for a, b, w in ROLLS
)
"""Per roll, a bit mask of the distances one checker can travel with it (blocks ignored)."""

POINT_VALUE: tuple[float, ...] = (
    0.0,  # off
    1.0, 2.0, 3.0, 4.5, 6.0, 5.0,  # home board: the 5 and 4 points best
    4.5, 2.5, 1.5, 1.0, 0.5, 0.5,  # 7 = the bar point
    0.5, 0.5, 0.5, 0.5, 0.5, 1.5,
    2.0, 4.0, 4.5, 3.0, 2.0, 1.5,  # anchors: the opponent's 5 and 4 points (my 20, 21) best
    0.0,  # bar
)
"""Value of holding each of my points (two or more checkers), in pips."""

PRIME_VALUE: tuple[float, ...] = (0.0, 0.0, 0.0, 1.5, 4.0, 8.0, 14.0, 14.0, 14.0, 14.0,
                                  14.0, 14.0, 14.0, 14.0, 14.0, 14.0, 14.0, 14.0, 14.0,
                                  14.0, 14.0, 14.0, 14.0, 14.0, 14.0)
"""Bonus for the longest run of made points (3 .. 6 = a full prime), when in contact."""

OFF_BONUS = 1.0
"""Per checker borne off, on top of the pips it saved."""
BLOT_BASE = 4.0
"""Cost of being hit, whatever the point (the tempo lost), times the chance of a hit."""
BLOT_PIPS = 0.75
"""Cost per pip a hit blot must travel again, times the chance of a hit."""
BAR_PER_HOME_POINT = 1.5
"""Per opponent checker on the bar, per home point I hold (plus one for the checker)."""
STACK_COST = 0.4
"""Per checker beyond three on one point."""
ON_ROLL = 4.0
"""Being on roll, in pips (for winning chances)."""
ON_ROLL_EXPOSURE = 0.25
"""How much the blots of the side about to roll cost, relative to the other side's."""

_shots_memo: dict[int, int] = {}


def shots(distances: int) -> int:
    """How many of the 36 rolls reach at least one distance of the bit mask ``distances``
    (bit ``d`` = a checker ``d`` pips away), blocking ignored. Memoised (masks repeat)."""
    found = _shots_memo.get(distances)
    if found is None:
        found = sum(w for reach, w in _REACH if reach & distances)
        if len(_shots_memo) < 1 << 16:
            _shots_memo[distances] = found
    return found


def pip_count(side: Checkers) -> int:
    return sum(map(mul, side, _INDEX))


def back_checker(side: Checkers) -> int:
    """The highest point (own numbering, 25 = bar) holding a checker of ``side``; 0 if none."""
    for p in range(25, 0, -1):
        if side[p]:
            return p
    return 0


def is_contact(a: Checkers, b: Checkers) -> bool:
    """Whether a checker of one side still has to pass one of the other's."""
    return back_checker(a) + back_checker(b) > 25


def _terms(a: Checkers, b: Checkers, contact: bool, exposure: float) -> float:
    """``a``'s own terms (see the module docstring); ``b`` is the opponent. ``exposure``
    scales the cost of ``a``'s blots (1 when ``b`` rolls next)."""
    score = a[OFF] * OFF_BONUS - pip_count(a)
    if not contact:
        return score
    behind = [q for q in range(1, 26) if b[q]]  # opponent checkers (its numbering)
    run = best_run = home = 0
    for p in range(1, 25):
        n = a[p]
        if n >= 2:
            score += POINT_VALUE[p]
            if n > 3:
                score -= (n - 3) * STACK_COST
            run += 1
            if run > best_run:
                best_run = run
            if p <= 6:
                home += 1
            continue
        run = 0
        if n == 1:
            # Opponent checker on its point q sits on my point 25 - q and moves up my
            # numbering: it is p + q - 25 pips from my blot when that is positive.
            reach = 0
            for q in behind:
                d = p + q - 25
                if d > 0:
                    reach |= 1 << d
            if reach:
                score -= exposure * shots(reach) / 36.0 * (BLOT_BASE + BLOT_PIPS * (25 - p))
    score += PRIME_VALUE[best_run]
    if b[BAR]:
        score += b[BAR] * BAR_PER_HOME_POINT * (1 + home)
    return score


def evaluate(a: Checkers, b: Checkers) -> float:
    """``a``'s score against ``b`` in pips, ``a`` having just moved and ``b`` to roll: ``a``'s
    blots face ``b``'s shots now, ``b``'s own blots only ``ON_ROLL_EXPOSURE`` as much (``b``
    may cover or move them first). For ``a`` on roll, use ``-evaluate(b, a)``."""
    contact = is_contact(a, b)
    return _terms(a, b, contact, 1.0) - _terms(b, a, contact, ON_ROLL_EXPOSURE)


def win_probability(a: Checkers, b: Checkers, *, on_roll: bool) -> float:
    """``a``'s cubeless chance of winning, estimated from :func:`evaluate` (``on_roll``:
    ``a`` rolls next, worth about 4 pips)."""
    if a[OFF] == 15:
        return 1.0
    if b[OFF] == 15:
        return 0.0
    score = -evaluate(b, a) + ON_ROLL if on_roll else evaluate(a, b) - ON_ROLL
    return 1.0 / (1.0 + math.exp(min(60.0, -score / chance_width(a, b))))


def chance_width(a: Checkers, b: Checkers) -> float:
    """The width of the logistic from score to winning chance: it grows with the pips
    left (a 10-pip lead is worth more near the end than at the start)."""
    return max(4.0, 0.09 * (pip_count(a) + pip_count(b)) / 2 + 1.0)


def after_play(
    a: Checkers, b: Checkers, play: Sequence[Sequence[int]]
) -> tuple[list[int], list[int]]:
    """Both sides after ``a`` plays ``play`` (``[from, to]`` steps in ``a``'s numbering; a
    blot landed on goes to ``b``'s bar). Raises ValueError for a step without a checker."""
    mine = list(a)
    theirs = list(b)
    for src, dst in play:
        if mine[src] <= 0:
            raise ValueError(f"no checker on point {src}")
        mine[src] -= 1
        mine[dst] += 1
        if dst:
            q = 25 - dst
            if theirs[q] == 1:
                theirs[q] = 0
                theirs[BAR] += 1
    return mine, theirs


def sides_from_board(
    board: Sequence[int], bar: Sequence[int], off: Sequence[int], side: int
) -> tuple[list[int], list[int]]:
    """``side``'s and its opponent's checkers, each in its own numbering, from the board as
    the protocol sends it (24 signed counts seen from side 0, positive = side 0)."""
    zero = [0] * 26
    one = [0] * 26
    for i in range(24):
        n = board[i]
        if n > 0:
            zero[i + 1] = n
        elif n < 0:
            one[24 - i] = -n
    zero[BAR], one[BAR] = bar[0], bar[1]
    zero[OFF], one[OFF] = off[0], off[1]
    return (zero, one) if side == 0 else (one, zero)


# --- extra knowledge of the strong level -----------------------------------------------------

TRAP_COST = 0.5
"""Per back checker, per opponent point blocking it in the six points in front of it,
squared (a checker behind a five-point prime is in much worse trouble than behind two)."""


def keith_waste(a: Checkers) -> float:
    """The Keith count's additions to the pip count (a race's bear-off inefficiency): 2 per
    checker beyond one on the 1 point, 1 per checker beyond one on the 2 point and beyond
    three on the 3 point, 1 per empty 4, 5 or 6 point."""
    waste = 2.0 * max(0, a[1] - 1) + max(0, a[2] - 1) + max(0, a[3] - 3)
    waste += (a[4] == 0) + (a[5] == 0) + (a[6] == 0)
    return float(waste)


def _trapped(a: Checkers, b: Checkers) -> float:
    """How badly ``a``'s back checkers (on the bar or in ``b``'s home board) are blocked."""
    cost = 0.0
    for p in range(19, 26):
        n = a[p]
        if not n:
            continue
        blocked = 0
        for q in range(p - 1, max(0, p - 7), -1):  # my points in front; b holds 25 - q
            if b[25 - q] >= 2:
                blocked += 1
        cost += n * blocked * blocked
    return TRAP_COST * cost


LEAD_SAFETY = 40.0
"""Pips of race lead that double the cost of the leader's blots (and halve the trailer's)."""


def _blot_cost(a: Checkers, b: Checkers) -> float:
    """The blot term of :func:`evaluate` for ``a`` (``b`` to roll)."""
    behind = [q for q in range(1, 26) if b[q]]
    cost = 0.0
    for p in range(1, 25):
        if a[p] == 1:
            reach = 0
            for q in behind:
                d = p + q - 25
                if d > 0:
                    reach |= 1 << d
            if reach:
                cost += shots(reach) / 36.0 * (BLOT_BASE + BLOT_PIPS * (25 - p))
    return cost


def evaluate_strong(a: Checkers, b: Checkers) -> float:
    """:func:`evaluate` plus what the strong level knows besides: in a race the bear-off
    waste (Keith count); in contact, back checkers trapped behind the opponent's points,
    and the race lead: the leader's blots cost more (it has more to lose by a hit), the
    trailer's less."""
    score = evaluate(a, b)
    if is_contact(a, b):
        lead = pip_count(b) - pip_count(a)
        weight = min(1.0, max(-0.5, lead / LEAD_SAFETY))
        return score - _trapped(a, b) + _trapped(b, a) - weight * _blot_cost(a, b)
    return score - keith_waste(a) + keith_waste(b)
