"""The ladder's levels (:mod:`server.bot.ladder`): the neural evaluator
(:mod:`server.bot.neural`), a search, a noise, and cube decisions from its probabilities.
Pure (numpy; no I/O but the weights file).

Checker play: every offered play is scored at once by the network (0 ply, cubeless equity
with gammons and backgammons). With a ``noise``, a normal draw of that standard deviation is
added to each play's score and the best is taken (no search). With a search (``depth`` 1 or
2), the best ``SEARCH_CANDIDATES`` plays within ``SEARCH_WINDOW`` of the best are looked at
one roll deeper (1 ply): for each, the opponent's 21 rolls and its best reply by the network
(all replies of all rolls evaluated in one batch), averaged with their weights (1/36 a
double, 2/36 otherwise). At depth 2 the best ``DEEP_CANDIDATES`` of those are looked at one
more roll deeper (2 ply): after each of the opponent's 21 best replies, this side's 21 rolls
and its best play by the network (one batch per candidate). The play with the best value at
the deepest ply looked at is chosen. In a match, the outputs are turned into match-winning
chances (:mod:`server.bot.cube`) before comparing plays, so gammons count as much as the
score makes them worth.

Cube: :mod:`server.bot.cube` (double, redouble, take, drop; money and match play).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from server.bot.cube import CubeState, MatchContext, should_double, should_take
from server.bot.evaluation import ROLLS, after_play
from server.bot.neural import (
    Array,
    IntArray,
    Net,
    afterstates,
    default_net,
    equity,
    evaluate_batch,
    flip,
    roll_afterstates,
)

SEARCH_CANDIDATES = 5
"""Plays looked at one roll deeper (the best by 0 ply)."""
SEARCH_WINDOW = 0.16
"""Only plays within this much equity of the 0-ply best are looked at deeper."""
DEEP_CANDIDATES = 2
"""Plays looked at two rolls deeper at depth 2 (the best by 1 ply)."""
_DICE = [(d1, d2) for d1, d2, _ in ROLLS]
_WEIGHTS = np.array([w for _, _, w in ROLLS], dtype=np.float64)

Scorer = Callable[[Array], Array]
"""Outputs ``(..., 5)`` of the side that just moved to the number it maximises."""


def scorer_for(match: MatchContext | None, cube: int = 1) -> Scorer:
    """Cubeless money equity, or (in a match) the match-winning chance of the side the
    outputs belong to at the current cube."""
    if match is None or match.length == 0:
        return equity
    return lambda out: match.mwc(out, cube)


def plays_as_states(mine: Sequence[int], theirs: Sequence[int],
                    plays: Sequence[Sequence[Sequence[int]]]) -> tuple[IntArray, IntArray]:
    """The position after each offered play: ``(N, 26)`` of the mover, of the other."""
    rows = [after_play(mine, theirs, play) for play in plays]
    a = np.array([r[0] for r in rows], dtype=np.int64)
    b = np.array([r[1] for r in rows], dtype=np.int64)
    return a, b


def reply_value(net: Net, a: IntArray, b: IntArray, score: Scorer) -> float:
    """The value for ``a`` (just moved) after ``b`` rolls and plays its best 0-ply reply,
    averaged over the 21 rolls; ``score`` is applied to ``a``'s outputs."""
    if a[0] == 15:
        return float(score(evaluate_batch(net, a[None, :], b[None, :]))[0])
    parts_m, parts_t, sizes = roll_afterstates(b.tolist(), a.tolist(),
                                               [(d1, d2) for d1, d2, _ in ROLLS])
    out = evaluate_batch(net, parts_m, parts_t)
    mine_view = flip(out)  # the same outputs seen by ``a``
    values = score(mine_view)
    total = 0.0
    at = 0
    for (_, _, weight), size in zip(ROLLS, sizes, strict=True):
        total += weight * float(values[at:at + size].min())  # ``b`` picks ``a``'s worst
        at += size
    return total / 36.0


def two_ply_value(net: Net, a: IntArray, b: IntArray, score: Scorer) -> float:
    """The value for ``a`` (just moved) after ``b`` rolls and plays its best 0-ply reply,
    then ``a`` rolls and plays its best 0-ply play, averaged over both sides' 21 rolls;
    ``score`` is applied to ``a``'s outputs."""
    if a[0] == 15:
        return float(score(evaluate_batch(net, a[None, :], b[None, :]))[0])
    parts_b, parts_a, sizes = roll_afterstates(b.tolist(), a.tolist(), _DICE)
    replies = score(flip(evaluate_batch(net, parts_b, parts_a)))  # seen by ``a``
    values = np.empty(len(sizes))
    blocks_m: list[IntArray] = []
    blocks_t: list[IntArray] = []
    counts: list[list[int]] = []
    deeper: list[int] = []
    at = 0
    for roll, size in enumerate(sizes):
        k = at + int(np.argmin(replies[at:at + size]))  # ``b`` picks ``a``'s worst
        at += size
        if parts_b[k][0] == 15:  # ``b`` bore its last checker off
            values[roll] = replies[k]
            continue
        mine, other, split = roll_afterstates(parts_a[k].tolist(), parts_b[k].tolist(), _DICE)
        blocks_m.append(mine)
        blocks_t.append(other)
        counts.append(split)
        deeper.append(roll)
    if deeper:
        ours = score(evaluate_batch(net, np.concatenate(blocks_m), np.concatenate(blocks_t)))
        at = 0
        for roll, split in zip(deeper, counts, strict=True):
            starts = at + np.cumsum([0, *split[:-1]])
            at += sum(split)
            values[roll] = float(np.maximum.reduceat(ours[:at], starts) @ _WEIGHTS) / 36.0
    return float(values @ _WEIGHTS) / 36.0


def choose_play(mine: Sequence[int], theirs: Sequence[int],
                plays: Sequence[Sequence[Sequence[int]]], *, net: Net | None = None,
                match: MatchContext | None = None, cube: int = 1, depth: int = 1,
                noise: float = 0.0, rng: np.random.Generator | None = None) -> int:
    """The index in ``plays`` (offered plays, non-empty) chosen at search ``depth`` (0, 1
    or 2) with ``noise`` (drawn from ``rng``; a noisy choice does not search)."""
    if len(plays) <= 1:
        return 0
    net = net or default_net()
    score = scorer_for(match, cube)
    a, b = plays_as_states(mine, theirs, plays)
    values = score(evaluate_batch(net, a, b))
    if noise > 0.0:
        values = values + (rng or np.random.default_rng()).normal(0.0, noise, len(values))
        return int(np.argmax(values))
    order = np.argsort(-values, kind="stable")
    best = int(order[0])
    if depth <= 0:
        return best
    window = SEARCH_WINDOW if match is None or match.length == 0 else SEARCH_WINDOW / 4
    candidates = [int(i) for i in order[:SEARCH_CANDIDATES]
                  if values[i] >= values[best] - window]
    if len(candidates) <= 1:
        return best
    one = np.array([reply_value(net, a[i], b[i], score) for i in candidates])
    ranked = [candidates[int(i)] for i in np.argsort(-one, kind="stable")]
    if depth == 1:
        return ranked[0]
    finalists = ranked[:DEEP_CANDIDATES]
    two = [two_ply_value(net, a[i], b[i], score) for i in finalists]
    return finalists[int(np.argmax(two))]


def on_roll_outputs(mine: Sequence[int], theirs: Sequence[int], net: Net | None = None,
                    search: bool = True) -> Array:
    """The cubeless outputs of ``mine``, on roll before rolling: 0 ply is the network's
    view of the opponent having just moved, flipped; with ``search``, the average over
    ``mine``'s 21 rolls of its best 0-ply play."""
    net = net or default_net()
    a = np.asarray(theirs, dtype=np.int64)[None, :]
    b = np.asarray(mine, dtype=np.int64)[None, :]
    if not search:
        out: Array = flip(evaluate_batch(net, a, b))[0]
        return out
    mover, other = list(mine), list(theirs)
    total = np.zeros(5)
    for d1, d2, weight in ROLLS:
        m, t = afterstates(mover, other, (d1, d2))
        out = evaluate_batch(net, m, t)
        total += weight * out[int(np.argmax(equity(out)))]
    return total / 36.0


def noisy(out: Array, noise: float, rng: np.random.Generator | None) -> Array:
    """``out`` with its winning chance moved by half a normal draw of ``noise`` (so the
    cubeless equity moves by the draw), kept within 0..1; ``out`` itself when no noise."""
    if noise <= 0.0:
        return out
    moved = out.copy()
    shift = (rng or np.random.default_rng()).normal(0.0, noise) / 2.0
    moved[0] = min(1.0, max(0.0, float(moved[0]) + shift))
    # Gammons and backgammons stay within the wins and the losses they are part of.
    moved[1] = min(moved[1], moved[0])
    moved[2] = min(moved[2], moved[1])
    moved[3] = min(moved[3], 1.0 - moved[0])
    moved[4] = min(moved[4], moved[3])
    return moved


def double_decision(mine: Sequence[int], theirs: Sequence[int], state: CubeState,
                    net: Net | None = None, *, noise: float = 0.0,
                    rng: np.random.Generator | None = None) -> bool:
    """Whether ``mine`` (on roll, allowed to double) doubles now (``noise``: see
    :func:`noisy`)."""
    return should_double(noisy(on_roll_outputs(mine, theirs, net), noise, rng), state)


def take_decision(mine: Sequence[int], theirs: Sequence[int], state: CubeState,
                  net: Net | None = None, *, noise: float = 0.0,
                  rng: np.random.Generator | None = None) -> bool:
    """Whether ``mine`` takes the double ``theirs`` (on roll) offered; ``state`` is seen
    by the doubler (as in :func:`double_decision`)."""
    doubler = on_roll_outputs(theirs, mine, net)
    return should_take(noisy(flip(doubler), noise, rng), state)
