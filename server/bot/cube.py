"""Cube decisions from cubeless probabilities: double, redouble, take, drop; money and match.

Pure. Inputs are the five cubeless outputs of :mod:`server.bot.neural` (win, win gammon,
win backgammon, lose gammon, lose backgammon) of the side the decision belongs to.

The model (cube life in the manner of Janowski). The doubler's cubeless chance of winning
``p`` is taken to wander from 0 to 1 with its gammon shares fixed, the game ending at
``p = 0`` with the value ``L`` of an average loss (gammons included) and at ``p = 1`` with
that of an average win, ``W``. With a perfectly *live* cube the value is linear in ``p``
between the points where a side that may double doubles the other out: the doubler's cash
point ``a`` is where the taker is indifferent (its take, holding the cube one level up,
is worth exactly the drop), the opponent's ``b`` likewise; past a cash point the value
runs on linearly to ``W`` (or ``L``): the side too good plays on. With a *dead* cube the
value is ``p W + (1 - p) L``. The value used is ``x * live + (1 - x) * dead``, ``x`` the
cube-life factor. No double (ND) is that value at the current cube, double/take (DT) the
value with the opponent holding the cube one level up, double/drop (DP) the cash. The side
on roll doubles when ``min(DT, DP) > ND`` (too good: DP < ND, it plays on).

Money play (no Jacoby rule, no beavers), per unit of the current cube, ``W`` and ``L`` in
points: every level of the cube is alike, so ``a = (L + 1) / (W + L + 1/2)`` and ``b =
(L - 1/2) / (W + L + 1/2)``; centred cube: the broken line through ``(0, -L), (b, -1),
(a, 1), (1, W)``; owned by the doubler: without ``b``; DT: twice the line without ``a``;
DP = 1. :func:`money_equities` gives ND, DT, DP: the review (:mod:`server.bot.review`)
charges cube errors with them. The taker takes when ``DT <= DP - TAKE_MARGIN``: the
network sees the doubler's strong positions weaker than the judge does, and a wrong take
there costs far more than a wrong drop.

Match play: values are match-winning chances (MWC); ``W`` and ``L`` the MWC of an average
win and loss at the cube; the cash points found level by level up the cube (a side whose
``c`` points already win the match never doubles: the cube is dead for it), so the free
double of a post-Crawford trailer and the gammon values at the score follow. The table
(:func:`match_table`) is computed with the same model: each game starts at ``p = 1/2``
with ``GAMMON_RATE`` gammons for either side and cube life ``TABLE_LIVE``; a side reaching
1 away plays the Crawford game (no cube), then the post-Crawford games
(:func:`post_crawford`: the trailer doubles at once). The taker takes when DT <= DP.

=================  =====  ==============================================================
``LIVE_MONEY``     0.62   ``x`` in money play
``TAKE_MARGIN``    0.18   the money taker's margin (per unit cube, doubler's DT)
``LIVE_MATCH``     0.64   ``x`` in match play
``TABLE_LIVE``     0.80   ``x`` of the games of the match table
``GAMMON_RATE``    0.26   share of gammons in the games of the match table
=================  =====  ==============================================================

Fitted (coordinate grid search, mean mEMG of doubler and taker decisions together) on the
cached gnubg 0-ply cubeful equities of the decision points of ``bench/cube_judge.py``,
seed 1, 4000 positions from the self-play of the evaluator with a one-roll search, the
evaluator's searched on-roll outputs (``python3 bench/cube_fit.py collect --seed 1 --source
expert --out c1.npz`` before the ladder, when ``expert`` searched one roll deep), then ``python3
bench/cube_fit.py fit c1.npz --kind money --param LIVE_MONEY=0.5:0.76:0.02 --param
TAKE_MARGIN=0:0.3:0.02`` and ``--kind match --param LIVE_MATCH=0.56:0.8:0.04 --param
TABLE_LIVE=0:1:0.2 --param GAMMON_RATE=0.16:0.32:0.04``); checked on seed 2.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from server.bot.neural import Array, flip

LIVE_MONEY = 0.62
TAKE_MARGIN = 0.18
LIVE_MATCH = 0.64
TABLE_LIVE = 0.80
GAMMON_RATE = 0.26
MAX_AWAY = 64
EPS = 1e-6

Lookup = Callable[[int, int], float]


@lru_cache(maxsize=1)
def post_crawford() -> tuple[float, ...]:
    """``row[b]``: the leader's chance needing 1 point against ``b`` after the Crawford
    game (the trailer doubles at once; ``b`` in 1..MAX_AWAY, ``row[0]`` unused)."""
    row = [0.0, 0.5]
    for b in range(2, MAX_AWAY + 1):
        after = [row[k] if k > 0 else 0.0 for k in (b - 2, b - 4)]
        row.append(0.5 + 0.5 * (1.0 - GAMMON_RATE) * after[0] + 0.5 * GAMMON_RATE * after[1])
    return tuple(row)


@lru_cache(maxsize=1)
def match_table() -> tuple[tuple[float, ...], ...]:
    """``table[a][b]``: the chance of winning a match needing ``a`` points against an
    opponent needing ``b`` at the start of a game (``a``, ``b`` in 1..MAX_AWAY; 0 rows are
    unused; a side 1 away: the Crawford game)."""
    n = MAX_AWAY + 1
    rows = [[0.0] * n for _ in range(n)]
    post = post_crawford()

    def at(a: int, b: int) -> float:
        return 1.0 if a <= 0 else 0.0 if b <= 0 else rows[a][b]

    def after(b: int) -> float:
        return post[b] if b > 0 else 0.0

    shares = (0.5, GAMMON_RATE, 0.0, GAMMON_RATE, 0.0)
    for total in range(2, 2 * n):
        for a in range(max(1, total - n + 1), min(n, total)):
            b = total - a
            if a == 1 or b == 1:  # the Crawford game: no cube
                trail = b if a == 1 else a
                value = 0.5 + 0.5 * ((1 - GAMMON_RATE) * after(trail - 1)
                                     + GAMMON_RATE * after(trail - 2))
                rows[a][b] = value if a == 1 else 1.0 - value
                continue
            context = MatchContext(max(a, b), a, b, at)
            loss, win = context.ends(shares, 1)
            live = _through(context.live(shares, 1, True, True), 0.5)
            rows[a][b] = TABLE_LIVE * live + (1.0 - TABLE_LIVE) * 0.5 * (loss + win)
    return tuple(tuple(row) for row in rows)


def met(away_me: int, away_them: int, post: bool = False) -> float:
    """My match-winning chance needing ``away_me`` points against ``away_them`` (``post``:
    after the Crawford game)."""
    if away_me <= 0:
        return 1.0
    if away_them <= 0:
        return 0.0
    a, b = min(away_me, MAX_AWAY), min(away_them, MAX_AWAY)
    if post and a == 1:
        return post_crawford()[b]
    if post and b == 1:
        return 1.0 - post_crawford()[a]
    return match_table()[a][b]


def _shares(out: Array) -> tuple[float, float, float, float, float]:
    """``p`` and the shares of wins that are gammons, backgammons, of losses likewise."""
    w = float(out[0])
    won, lost = max(w, EPS), max(1.0 - w, EPS)
    return (w, float(out[1]) / won, float(out[2]) / won, float(out[3]) / lost,
            float(out[4]) / lost)


def _through(points: list[tuple[float, float]], p: float) -> float:
    xs, ys = zip(*points, strict=True)
    return float(np.interp(p, np.maximum.accumulate(np.array(xs)), ys))


def _where(points: list[tuple[float, float]], value: float) -> float:
    """The ``p`` at which the increasing broken line ``points`` reaches ``value``."""
    xs, ys = zip(*points, strict=True)
    return float(np.interp(value, np.maximum.accumulate(np.array(ys)), xs))


@dataclass(frozen=True, slots=True)
class MatchContext:
    """The score of a match as seen by one side: the points each still needs."""

    length: int
    away_me: int
    away_them: int
    table: Lookup | None = field(default=None, compare=False, repr=False)

    def flipped(self) -> MatchContext:
        return MatchContext(self.length, self.away_them, self.away_me)

    def met(self, away_me: int, away_them: int) -> float:
        """:func:`met` after this game (past the Crawford game when a side is 1 away)."""
        if self.table is not None:
            return self.table(away_me, away_them)
        return met(away_me, away_them, min(self.away_me, self.away_them) == 1)

    def mwc(self, out: Array, cube: int) -> Array:
        """My match-winning chance for outputs ``(..., 5)`` at ``cube`` (dead cube)."""
        w, wg, wbg, lg, lbg = (out[..., i] for i in range(5))
        a, b = self.away_me, self.away_them
        value = ((w - wg) * self.met(a - cube, b) + (wg - wbg) * self.met(a - 2 * cube, b)
                 + wbg * self.met(a - 3 * cube, b))
        value = value + ((1.0 - w - lg) * self.met(a, b - cube)
                         + (lg - lbg) * self.met(a, b - 2 * cube) + lbg * self.met(a, b - 3 * cube))
        return np.asarray(value)

    def ends(self, shares: tuple[float, ...], cube: int) -> tuple[float, float]:
        """The MWC of an average loss and an average win at ``cube``."""
        _, g, bg, lg, lbg = shares
        a, b = self.away_me, self.away_them
        win = ((1 - g) * self.met(a - cube, b) + (g - bg) * self.met(a - 2 * cube, b)
               + bg * self.met(a - 3 * cube, b))
        loss = ((1 - lg) * self.met(a, b - cube) + (lg - lbg) * self.met(a, b - 2 * cube)
                + lbg * self.met(a, b - 3 * cube))
        return loss, win

    def live(self, shares: tuple[float, ...], cube: int, mine: bool, theirs: bool
             ) -> list[tuple[float, float]]:
        """The live-cube MWC as a broken line in ``p`` at ``cube``; ``mine`` / ``theirs``:
        whether that side may double (a side whose ``cube`` points win the match never
        does: the cube is dead for it)."""
        loss, win = self.ends(shares, cube)
        points = [(0.0, loss)]
        a, b = self.away_me, self.away_them
        if theirs and b > cube:
            drop = self.met(a, b - cube)  # I drop their double: they win ``cube``
            points.append((_where(self.live(shares, 2 * cube, True, False), drop), drop))
        if mine and a > cube:
            cash = self.met(a - cube, b)
            points.append((_where(self.live(shares, 2 * cube, False, True), cash), cash))
        points.append((1.0, win))
        return points


@dataclass(frozen=True, slots=True)
class CubeState:
    """The cube as the side deciding to double sees it: its value, whether that side owns
    it (False: centred), and the match (None: money play)."""

    cube: int = 1
    owned: bool = False
    match: MatchContext | None = None


def money_equities(out: Array, owned: bool) -> tuple[float, float, float]:
    """``(no double, double/take, double/drop)`` for the doubler with cubeless outputs
    ``out``, per unit of the current cube (see the module docstring)."""
    p, g, bg, lg, lbg = _shares(out)
    x = LIVE_MONEY
    win, loss = 1.0 + g + bg, 1.0 + lg + lbg
    dead = p * win - (1.0 - p) * loss
    cash = (loss + 1.0) / (win + loss + 0.5)
    theirs = (loss - 0.5) / (win + loss + 0.5)
    ends = [(0.0, -loss)], [(1.0, win)]
    mine = ends[0] + ([] if owned else [(theirs, -1.0)]) + [(cash, 1.0)] + ends[1]
    taken = ends[0] + [(theirs, -1.0)] + ends[1]
    no_double = x * _through(mine, p) + (1.0 - x) * dead
    take = 2.0 * (x * _through(taken, p) + (1.0 - x) * dead)
    return no_double, take, 1.0


def match_equities(out: Array, state: CubeState) -> tuple[float, float, float]:
    """``(no double, double/take, double/drop)`` in MWC for the doubler (match play)."""
    match = state.match
    assert match is not None
    shares = _shares(out)
    p, cube, x = shares[0], state.cube, LIVE_MATCH
    now = match.live(shares, cube, True, not state.owned)
    later = match.live(shares, 2 * cube, False, True)
    no_double = x * _through(now, p) + (1.0 - x) * float(match.mwc(out, cube))
    take = x * _through(later, p) + (1.0 - x) * float(match.mwc(out, 2 * cube))
    return no_double, take, match.met(match.away_me - cube, match.away_them)


def cube_equities(out: Array, state: CubeState) -> tuple[float, float, float]:
    """ND, DT, DP of the doubler: :func:`money_equities` or :func:`match_equities`."""
    if state.match is None or state.match.length == 0:
        return money_equities(out, state.owned)
    return match_equities(out, state)


def should_double(out: Array, state: CubeState) -> bool:
    """Whether the side on roll with cubeless outputs ``out`` doubles."""
    no_double, take, drop = cube_equities(out, state)
    return min(take, drop) > no_double


def should_take(out: Array, state: CubeState) -> bool:
    """Whether the side offered a double takes; ``out`` are the taker's cubeless outputs
    (the doubler on roll) and ``state`` is the doubler's view of the cube."""
    _, take, drop = cube_equities(flip(out), state)
    money = state.match is None or state.match.length == 0
    return take <= drop - (TAKE_MARGIN if money else 0.0)

