"""Train the expert evaluator by self-play (temporal-difference learning, TD(0)), with numpy.

Run from the repository root::

    python -m server.bot.train --games 2000 --seed 42 --out trial.npz   # a short trial

The shipped weights, ``server/bot/weights/expert.npz``, come from ``--games 120000 --seed 42
--hidden 80`` (BENCHMARKS.md); a run that writes there replaces them.

The network (:mod:`server.bot.neural`) plays both sides of ``PARALLEL`` (8) games side by
side: each step, every game rolls, every distinct result of every roll is evaluated in one
batch, and each game plays its best result by cubeless equity. After each play, the other
side's previous afterstate gets as target the new one seen from that side (the outputs
flipped); at the end of a game the two last afterstates get the result (win, gammon,
backgammon), and a new game takes the slot. The targets of a step are learnt in one
update: the sum of the gradients of each output's cross-entropy, so each row moves by
``alpha * (target - out)`` through the two layers. The learning rate depends only on how
many games have ended (0.1, then 0.05 from game 5 000, 0.02 from game 20 000), and the run
stops at the first step where ``--games`` games have ended, so the weights written once
``k`` games have ended (``--checkpoint-every``) are exactly those of a run with
``--games k``. A checkpoint also keeps the weights at full precision, the dice's state and
the games in progress: ``--resume <checkpoint> --games N`` goes on from it to ``N`` games and
writes exactly the weights of one uninterrupted run to ``N`` (a long training is run in
pieces, each as long as one wants)::

    python -m server.bot.train --games 60000 --seed 42 --checkpoint-every 20000 --out run.npz
    python -m server.bot.train --games 120000 --resume run-40000.npz --out run.npz

Everything random comes from ``--seed``: the initial weights (numpy's PCG64) and the dice
(Python's ``random.Random``). The same command on the same numpy gives the same weights.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

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
from server.exits import EXIT_USAGE, CommandFailed, Parser, run_command

START = (0, 0, 0, 0, 0, 0, 5, 0, 3, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0)
"""The starting checkers of either side in its own numbering."""
MAX_TURNS = 2000
PARALLEL = 8
"""Games played side by side: their candidates are evaluated in one batch and their
updates applied together (a few times faster per game than one at a time)."""


def learning_rate(games_played: int) -> float:
    if games_played < 5000:
        return 0.1
    if games_played < 20000:
        return 0.05
    return 0.02


def update(net: Net, x: Array, target: Array, alpha: float) -> None:
    """One gradient step of the cross-entropy of ``net(x)`` against ``target`` for a batch
    of rows (the sum of their gradients)."""
    h = net.hidden(x)
    out = 1.0 / (1.0 + np.exp(-np.clip(h @ net.w2 + net.b2, -40.0, 40.0)))
    delta = target - out
    back = (delta @ net.w2.T) * h * (1.0 - h)
    net.w2 += alpha * (h.T @ delta)
    net.b2 += alpha * delta.sum(axis=0)
    net.w1 += alpha * (x.T @ back)
    net.b1 += alpha * back.sum(axis=0)


@dataclass
class Slot:
    """One game in progress: the side to roll, the other, and the inputs of the other side's
    last afterstate (None before its first play)."""

    mover: list[int] = field(default_factory=lambda: list(START))
    other: list[int] = field(default_factory=lambda: list(START))
    previous: Array | None = None
    turn: int = 0


def step(net: Net, slots: list[Slot], dice: random.Random, alpha: float) -> int:
    """One turn of every game in ``slots`` (all the candidates evaluated in one batch),
    then one update from every game's new targets; returns how many games ended (their
    slots start new games)."""
    blocks_m = []
    blocks_t = []
    for slot in slots:
        d1, d2 = dice.randint(1, 6), dice.randint(1, 6)
        while slot.turn == 0 and d1 == d2:  # the opening roll is never a double
            d1, d2 = dice.randint(1, 6), dice.randint(1, 6)
        m, t = afterstates(slot.mover, slot.other, (d1, d2))
        blocks_m.append(m)
        blocks_t.append(t)
    x = encode(np.concatenate(blocks_m), np.concatenate(blocks_t))
    out = net.forward(x)
    values = equity(out)
    rows: list[Array] = []
    targets: list[Array] = []
    ended = 0
    at = 0
    for i, slot in enumerate(slots):
        size = len(blocks_m[i])
        best = at + int(np.argmax(values[at:at + size]))
        a, b = blocks_m[i][best - at].tolist(), blocks_t[i][best - at].tolist()
        at += size
        final = terminal(a, b)
        if final is not None:
            rows.append(x[best])
            targets.append(final)
            if slot.previous is not None:
                rows.append(slot.previous)
                targets.append(flip(final))
            slots[i] = Slot()
            ended += 1
            continue
        if slot.previous is not None:
            rows.append(slot.previous)
            targets.append(flip(out[best]))
        slot.previous = x[best]
        slot.mover, slot.other = b, a
        slot.turn += 1
        if slot.turn >= MAX_TURNS:  # never seen; a game that long starts again
            slots[i] = Slot()
    if rows:
        update(net, np.stack(rows), np.stack(targets), alpha)
    return ended


@dataclass
class Checkpoint:
    """A run where :func:`save_checkpoint` left it: the weights, the games ended, the seed,
    the dice and the games in progress."""

    net: Net
    done: int
    seed: int
    dice: random.Random
    slots: list[Slot]


def train(games: int, seed: int, hidden: int, out: Path, checkpoint_every: int,
          log_every: int = 500, parallel: int = PARALLEL,
          resume: Checkpoint | None = None) -> Net:
    """Self-play until ``games`` games have ended (``parallel`` at a time); from ``resume``
    when given (its seed, size and games so far stand for ``seed`` and ``hidden``: the run
    goes on exactly as the one that wrote it would have)."""
    threadpool_limits(1, user_api="blas")  # small products: threads only fight for cores
    if resume is not None:
        net, done, seed, dice, slots = (resume.net, resume.done, resume.seed, resume.dice,
                                        resume.slots)
        hidden = net.w1.shape[1]
    else:
        net = Net.random(hidden, np.random.default_rng(seed))
        dice = random.Random(seed)
        slots = [Slot() for _ in range(parallel)]
        done = 0
    started = time.monotonic()
    steps = 0
    while done < games:
        before = done
        done += step(net, slots, dice, learning_rate(done))
        steps += 1
        if checkpoint_every and done // checkpoint_every > before // checkpoint_every \
                and done < games:
            mark = done // checkpoint_every * checkpoint_every
            save_checkpoint(net, out.with_name(f"{out.stem}-{mark}{out.suffix}"), done, seed,
                            dice, slots)
        if log_every and done // log_every > before // log_every:
            spent = time.monotonic() - started
            print(f"{done} games, {steps} steps, {spent:.0f} s", file=sys.stderr, flush=True)
    _save(net, out, games, seed, hidden)
    return net


def _save(net: Net, path: Path, games: int, seed: int, hidden: int) -> None:
    tmp = path.with_name(path.stem + ".tmp.npz")
    net.save(tmp, games=games, seed=seed, hidden=hidden)
    tmp.replace(path)


def save_checkpoint(net: Net, path: Path, done: int, seed: int, dice: random.Random,
                    slots: list[Slot]) -> None:
    """Everything a run needs to go on from here: the weights at full precision, the games
    ended, the seed, the dice's state and the games in progress. Also loads as weights
    (:meth:`Net.load`)."""
    version, state, gauss = dice.getstate()
    previous = np.zeros((len(slots), net.w1.shape[0]))
    for i, slot in enumerate(slots):
        if slot.previous is not None:
            previous[i] = slot.previous
    tmp = path.with_name(path.stem + ".tmp.npz")
    np.savez_compressed(
        tmp, w1=net.w1, b1=net.b1, w2=net.w2, b2=net.b2, games=done, seed=seed,
        hidden=net.w1.shape[1], dice_version=version,
        dice_state=np.asarray(state, dtype=np.uint64),
        dice_gauss=np.nan if gauss is None else gauss,
        movers=np.asarray([s.mover for s in slots]), others=np.asarray([s.other for s in slots]),
        previous=previous, has_previous=np.asarray([s.previous is not None for s in slots]),
        turns=np.asarray([s.turn for s in slots]))
    tmp.replace(path)


def load_checkpoint(path: Path) -> Checkpoint:
    """What :func:`save_checkpoint` wrote. ValueError for a file of shipped weights (no
    state to go on from)."""
    try:
        data_file = np.load(path)
    except ValueError as exc:  # not an .npz (numpy would suggest allow_pickle: never here)
        raise ValueError(f"{path} is not a checkpoint written by --checkpoint-every") from exc
    with data_file as data:
        if "dice_state" not in data:
            raise ValueError(f"{path} holds weights, not a checkpoint to resume from")
        net = Net(*(np.asarray(data[k], dtype=np.float64) for k in ("w1", "b1", "w2", "b2")))
        dice = random.Random()
        gauss = float(data["dice_gauss"])
        dice.setstate((int(data["dice_version"]),
                       tuple(int(x) for x in data["dice_state"]),
                       None if np.isnan(gauss) else gauss))
        slots = [Slot(mover=[int(x) for x in m], other=[int(x) for x in o],
                      previous=np.array(p) if has else None, turn=int(t))
                 for m, o, p, has, t in zip(data["movers"], data["others"], data["previous"],
                                            data["has_previous"], data["turns"], strict=True)]
        return Checkpoint(net, int(data["games"]), int(data["seed"]), dice, slots)


PROG = "python -m server.bot.train"


def main(argv: list[str] | None = None) -> int:
    """Train, then write the weights. A bad argument or an ``--out`` that cannot be written is
    one line on stderr and exit status 2, Ctrl-C one line and 130 (``server/exits.py``; the
    checkpoints written until then stay)."""
    parser = Parser(prog=PROG, description=__doc__,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, required=True, help="self-play games")
    parser.add_argument("--seed", type=int, default=None, help="default 42")
    parser.add_argument("--hidden", type=int, default=None, help="hidden units (default 80)")
    shipped = WEIGHTS.relative_to(WEIGHTS.parents[2])
    parser.add_argument("--out", type=Path, required=True,
                        help=f"where the weights go (the shipped ones are {shipped}: name "
                             "that file to replace them)")
    parser.add_argument("--checkpoint-every", type=int, default=0,
                        help="also write a checkpoint <out>-<games>.npz every so many games")
    parser.add_argument("--resume", type=Path, default=None, metavar="CHECKPOINT",
                        help="go on from a checkpoint (its seed and size) to --games")
    args = parser.parse_args(argv)
    if args.resume is not None and (args.seed is not None or args.hidden is not None):
        parser.error("--resume goes on with the checkpoint's seed and size: leave --seed and "
                     "--hidden out")
    seed = 42 if args.seed is None else args.seed
    hidden = 80 if args.hidden is None else args.hidden
    if args.games < 1 or hidden < 1 or args.checkpoint_every < 0:
        parser.error("--games and --hidden must be at least 1, --checkpoint-every at least 0")

    def body() -> int:
        try:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            probe = args.out.with_name(args.out.stem + ".tmp.npz")
            probe.touch()
            probe.unlink()
        except OSError as exc:
            raise CommandFailed(f"cannot write {args.out}: {exc.strerror or exc} (choose "
                                "another --out)", EXIT_USAGE) from None
        resume = None
        if args.resume is not None:
            try:
                resume = load_checkpoint(args.resume)
            except (OSError, ValueError, KeyError) as exc:
                raise CommandFailed(f"cannot resume from {args.resume}: {exc}",
                                    EXIT_USAGE) from None
            if resume.done >= args.games:
                raise CommandFailed(f"{args.resume} is at {resume.done} games already: ask "
                                    "for more --games", EXIT_USAGE)
        train(args.games, seed, hidden, args.out, args.checkpoint_every, resume=resume)
        return 0

    return run_command(PROG, body)


if __name__ == "__main__":
    sys.exit(main())
