"""Train the expert evaluator by self-play (temporal-difference learning, TD(0)), with numpy.

Run from the repository root::

    python -m server.bot.train --games 30000 --seed 42 --out server/bot/weights/expert.npz

The network (:mod:`server.bot.neural`) plays both sides: each turn it rolls, evaluates
every distinct result of the roll at once (one batch) and plays the best by cubeless
equity. After each play, the previous afterstate of the other side is moved towards the
new one seen from that side (the outputs flipped); at the end of a game the two last
afterstates are moved towards the result (win, gammon, backgammon). The loss is the
cross-entropy of each sigmoid output, so the update is ``alpha * (target - out)`` through
the two layers. The learning rate depends on the number of games already played only
(0.1, then 0.05 from game 5 000, 0.02 from game 20 000), so the weights written after ``k``
games (``--checkpoint-every``) are exactly those of a run with ``--games k``.

Everything random comes from ``--seed``: the initial weights (numpy's PCG64) and the dice
(Python's ``random.Random``). The same command on the same numpy gives the same weights.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np

from server.bot.neural import (
    WEIGHTS,
    Array,
    Net,
    afterstates,
    encode,
    equity,
    flip,
    terminal,
)

START = (0, 0, 0, 0, 0, 0, 5, 0, 3, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0)
"""The starting checkers of either side in its own numbering."""
MAX_TURNS = 2000


def learning_rate(games_played: int) -> float:
    if games_played < 5000:
        return 0.1
    if games_played < 20000:
        return 0.05
    return 0.02


def update(net: Net, x: Array, target: Array, alpha: float) -> None:
    """One gradient step of the cross-entropy of ``net(x)`` against ``target``."""
    h = net.hidden(x[None, :])[0]
    out = 1.0 / (1.0 + np.exp(-np.clip(h @ net.w2 + net.b2, -40.0, 40.0)))
    delta = target - out
    back = (net.w2 @ delta) * h * (1.0 - h)
    net.w2 += alpha * np.outer(h, delta)
    net.b2 += alpha * delta
    net.w1 += alpha * np.outer(x, back)
    net.b1 += alpha * back


def play_one(net: Net, dice: random.Random, alpha: float) -> int:
    """One self-play game with learning; returns its number of turns."""
    mover = list(START)
    other = list(START)
    previous: Array | None = None  # the other side's last afterstate inputs
    for turn in range(MAX_TURNS):
        d1, d2 = dice.randint(1, 6), dice.randint(1, 6)
        while turn == 0 and d1 == d2:  # the opening roll is never a double
            d1, d2 = dice.randint(1, 6), dice.randint(1, 6)
        mine, theirs = afterstates(mover, other, (d1, d2))
        x = encode(mine, theirs)
        out = net.forward(x)
        best = int(np.argmax(equity(out)))
        a, b = mine[best].tolist(), theirs[best].tolist()
        final = terminal(a, b)
        if final is not None:
            update(net, x[best], final, alpha)
            if previous is not None:
                update(net, previous, flip(final), alpha)
            return turn + 1
        if previous is not None:
            update(net, previous, flip(out[best]), alpha)
        previous = x[best]
        mover, other = b, a
    return MAX_TURNS


def train(games: int, seed: int, hidden: int, out: Path, checkpoint_every: int,
          log_every: int = 500) -> Net:
    net = Net.random(hidden, np.random.default_rng(seed))
    dice = random.Random(seed)
    started = time.monotonic()
    turns = 0
    for played in range(games):
        turns += play_one(net, dice, learning_rate(played))
        done = played + 1
        if checkpoint_every and done % checkpoint_every == 0 and done < games:
            _save(net, out.with_name(f"{out.stem}-{done}{out.suffix}"), done, seed, hidden)
        if log_every and done % log_every == 0:
            spent = time.monotonic() - started
            print(f"{done} games, {turns} turns, {spent:.0f} s", file=sys.stderr, flush=True)
    _save(net, out, games, seed, hidden)
    return net


def _save(net: Net, path: Path, games: int, seed: int, hidden: int) -> None:
    tmp = path.with_name(path.stem + ".tmp.npz")
    net.save(tmp, games=games, seed=seed, hidden=hidden)
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, required=True, help="self-play games")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--hidden", type=int, default=80, help="hidden units")
    parser.add_argument("--out", type=Path, default=WEIGHTS)
    parser.add_argument("--checkpoint-every", type=int, default=0,
                        help="also write <out>-<games>.npz every so many games")
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    train(args.games, args.seed, args.hidden, args.out, args.checkpoint_every)
    return 0


if __name__ == "__main__":
    sys.exit(main())
