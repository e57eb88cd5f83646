"""A slow, obviously correct legal-play generator, independent of ``server.rules.moves``.

It tries every order of every die, one checker at a time, on plain dict boards copied at
each step, keeps the sequences that use the most dice (and, when only one die of two can be
used, the larger one if it can be), and returns the set of resulting positions. Nothing is
clever here on purpose: it is the yardstick the fast generator is measured against.

A board is ``(mine, theirs)``: two 26-tuples in the mover's numbering, index 0 off, 1..24
points, 25 bar; ``theirs[p]`` counts opponent checkers on the mover's point ``p``.
"""

from __future__ import annotations

from itertools import permutations

Board = tuple[tuple[int, ...], tuple[int, ...]]


def single_steps(board: Board, die: int) -> list[tuple[int, int, Board]]:
    """Every (from, to, board after) for moving one checker by ``die``, by the book."""
    mine, theirs = board
    out = []
    for src in range(25, 0, -1):
        if mine[src] == 0:
            continue
        if mine[25] > 0 and src != 25:
            continue  # a checker on the bar must enter first
        dst = src - die
        if dst >= 1:
            if theirs[dst] >= 2:
                continue  # the opponent holds that point
        else:
            all_home = all(mine[p] == 0 for p in range(7, 26))
            if not all_home:
                continue  # bearing off needs every checker home
            if dst < 0 and any(mine[p] > 0 for p in range(src + 1, 7)):
                continue  # a larger die bears off only from the highest point
            dst = 0
        new_mine = list(mine)
        new_theirs = list(theirs)
        new_mine[src] -= 1
        new_mine[dst] += 1
        if dst >= 1 and new_theirs[dst] == 1:
            new_theirs[dst] = 0  # hit: the blot goes to the bar
            new_theirs[25] += 1
        out.append((src, dst, (tuple(new_mine), tuple(new_theirs))))
    return out


def all_sequences(board: Board, dice: list[int]) -> list[tuple[list[int], Board]]:
    """Every maximal sequence for ``dice`` in this order: (dice used, final board)."""
    if not dice:
        return [([], board)]
    moves = single_steps(board, dice[0])
    if not moves:
        return [([], board)]
    out = []
    for _src, _dst, after in moves:
        for used, final in all_sequences(after, dice[1:]):
            out.append(([dice[0], *used], final))
    return out


def reference_results(board: Board, roll: tuple[int, int]) -> set[Board]:
    """The set of boards reachable by a legal play of ``roll`` (the start board if none)."""
    a, b = roll
    orders = [[a] * 4] if a == b else [list(p) for p in permutations((a, b))]
    sequences = [seq for order in orders for seq in all_sequences(board, order)]
    most = max(len(used) for used, _ in sequences)
    kept = [(used, final) for used, final in sequences if len(used) == most]
    if most == 1 and a != b:
        larger = max(a, b)
        if any(used == [larger] for used, _ in kept):
            kept = [(used, final) for used, final in kept if used == [larger]]
    return {final for _, final in kept}
