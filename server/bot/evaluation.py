"""Positions as the computer players see them. Pure: no I/O, no asyncio.

A side's checkers are a 26-list in its **own** numbering (the rules engine's mover view):
index 0 = borne off, 1..24 = its points (it moves from 24 down to 1, its home board is
1..6), 25 = the bar. The opponent's list is in the opponent's own numbering, so my point
``p`` is the opponent's point ``25 - p``. The positions' values come from the neural
evaluator (:mod:`server.bot.neural`).
"""

from __future__ import annotations

from collections.abc import Sequence

Checkers = Sequence[int]
"""26 counts in a side's own numbering: 0 off, 1..24 points, 25 the bar."""

OFF = 0
BAR = 25

ROLLS: tuple[tuple[int, int, int], ...] = tuple(
    (a, b, 1 if a == b else 2) for a in range(1, 7) for b in range(a, 7)
)
"""The 21 distinct rolls ``(die, die, weight)``; the weights (1 for doubles, 2 otherwise)
add up to 36."""


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
