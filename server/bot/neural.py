"""The project's own position evaluator: a small neural network trained by self-play.

Pure (numpy, no I/O beyond reading the weights file). A position is seen by the side that
has **just moved** (``a``), its opponent (``b``) being on roll; each side's checkers are a
26-list in its own numbering (index 0 off, 1..24 its points, 25 the bar), as in
:mod:`server.bot.evaluation`.

Encoding (:func:`encode`, 198 inputs): for each side (``a`` first), for each of its points
1..24, four units (at least one checker, at least two, at least three, and half of the
checkers beyond three), then its bar count / 2, its borne-off count / 15 and its pip count
/ 100. No "whose turn" unit: the side to roll is always ``b``.

Network: 198 inputs, one hidden layer of sigmoid units, 5 sigmoid outputs, the cubeless
chances for ``a``: win, win a gammon (or more), win a backgammon, lose a gammon (or more),
lose a backgammon. :func:`equity` turns them into cubeless money equity
(``2w - 1 + wg - lg + wbg - lbg``, in points per unit cube).

The weights are trained by :mod:`server.bot.train` (temporal-difference self-play, a seed
and a number of games given on its command line) and shipped in ``weights/expert.npz``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits

from server.rules import Position, Side, legal_outcomes

Array = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

INPUTS = 198
OUTPUTS = 5
WEIGHTS = Path(__file__).with_name("weights") / "expert.npz"
"""The shipped weights."""

_PIPS = np.arange(26, dtype=np.float64)
_POINTS = np.arange(1, 25, dtype=np.int64)
_UNITS = np.array([[n >= 1, n >= 2, n >= 3, max(n - 3, 0) * 0.5] for n in range(16)],
                  dtype=np.float64)
"""The four units of a point holding 0..15 checkers."""
_UNITS32 = _UNITS.astype(np.float32)


def encode(mine: IntArray, theirs: IntArray, dtype: type = np.float64) -> Array:
    """The inputs for ``N`` positions: ``mine`` and ``theirs`` are ``(N, 26)`` counts, each
    side in its own numbering, ``mine`` having just moved. Returns ``(N, 198)`` in ``dtype``
    (float32 for a float32 net: the same values as float64 inputs cast to float32, each
    computed in float64 and rounded once, at an eighth of the work)."""
    n = mine.shape[0]
    out: Array = np.empty((n, INPUTS), dtype=dtype)
    units = _UNITS32 if out.dtype == np.float32 else _UNITS.astype(out.dtype, copy=False)
    for k, side in enumerate((mine, theirs)):
        base = 99 * k
        out[:, base:base + 96] = units.take(side[:, 1:25], axis=0).reshape(n, 96)
        out[:, base + 96] = side[:, 25] * 0.5
        out[:, base + 97] = side[:, 0] * (1.0 / 15.0)
        out[:, base + 98] = (side @ _PIPS) * 0.01
    return out


def equity(out: Array) -> Array:
    """Cubeless money equity of outputs ``(..., 5)`` for the side they belong to."""
    return 2.0 * out[..., 0] - 1.0 + out[..., 1] - out[..., 3] + out[..., 2] - out[..., 4]


def flip(out: Array) -> Array:
    """The same chances seen by the other side."""
    return np.stack(
        [1.0 - out[..., 0], out[..., 3], out[..., 4], out[..., 1], out[..., 2]], axis=-1
    )


def _sigmoid(x: Array) -> Array:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -40.0, 40.0)))


class Net:
    """The weights and the forward pass (``(N, 198)`` inputs to ``(N, 5)`` chances)."""

    def __init__(self, w1: Array, b1: Array, w2: Array, b2: Array) -> None:
        self.w1 = w1
        self.b1 = b1
        self.w2 = w2
        self.b2 = b2

    @classmethod
    def random(cls, hidden: int, rng: np.random.Generator) -> Net:
        return cls(
            rng.uniform(-0.1, 0.1, (INPUTS, hidden)),
            np.zeros(hidden),
            rng.uniform(-0.1, 0.1, (hidden, OUTPUTS)),
            np.zeros(OUTPUTS),
        )

    @classmethod
    def load(cls, path: Path | str, dtype: type = np.float32) -> Net:
        """The weights of ``path``, in ``dtype`` (float32: half the work per evaluation)."""
        with np.load(path) as data:
            arrays: list[Array] = [np.asarray(data[k], dtype=dtype)
                                   for k in ("w1", "b1", "w2", "b2")]
        w1, b1, w2, b2 = arrays
        if w1.shape[0] != INPUTS or w2.shape != (w1.shape[1], OUTPUTS):
            raise ValueError(f"weights of the wrong shape in {path}")
        return cls(w1, b1, w2, b2)

    def save(self, path: Path | str, **meta: Any) -> None:
        """The weights as float32 (and ``meta``: how they were trained) in an ``.npz``."""
        arrays: dict[str, Any] = {k: np.asarray(v) for k, v in meta.items()}
        for name in ("w1", "b1", "w2", "b2"):
            arrays[name] = getattr(self, name).astype(np.float32)
        np.savez_compressed(path, **arrays)

    def hidden(self, x: Array) -> Array:
        return _sigmoid(x.astype(self.w1.dtype, copy=False) @ self.w1 + self.b1)

    def forward(self, x: Array) -> Array:
        out: Array = _sigmoid(self.hidden(x) @ self.w2 + self.b2).astype(np.float64)
        return out


@lru_cache(maxsize=1)
def default_net() -> Net:
    """The shipped network (loaded once). Loading it also limits BLAS (numpy's matrix
    products) to one thread in this process: the products here are small, and threads
    fighting over shared cores made them ten times slower."""
    threadpool_limits(1, user_api="blas")
    return Net.load(WEIGHTS)


# -- positions and the candidates of a roll ----------------------------------------------------


def position_for(mover: Sequence[int], other: Sequence[int]) -> Position:
    """A rules ``Position`` with ``mover`` to move as side 0 (both in their own numbering)."""
    board = tuple(int(mover[p]) - int(other[25 - p]) for p in range(1, 25))
    return Position(board, (int(mover[25]), int(other[25])), (int(mover[0]), int(other[0])),
                    Side.ZERO)


def afterstates(mover: Sequence[int], other: Sequence[int],
                roll: tuple[int, int]) -> tuple[IntArray, IntArray]:
    """Every distinct result of ``roll`` for ``mover``: ``(N, 26)`` counts of the mover and
    of the other side (each in its own numbering; hit blots on the other side's bar)."""
    mine, theirs, _ = roll_afterstates(mover, other, (roll,))
    return mine, theirs


def roll_afterstates(mover: Sequence[int], other: Sequence[int],
                     rolls: Sequence[tuple[int, int]]) -> tuple[IntArray, IntArray, list[int]]:
    """:func:`afterstates` of several rolls of one position, one block after the other,
    and each block's size."""
    position = position_for(mover, other)
    found: list[tuple[bytes, int]] = []
    sizes = []
    for roll in rolls:
        outcomes = legal_outcomes(position, roll)
        found += outcomes
        sizes.append(len(outcomes))
    n = len(found)
    keys = [key for key, _ in found]
    masks = [hits for _, hits in found]
    mine = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(n, 26).astype(np.int64)
    theirs = np.tile(np.asarray(other, dtype=np.int64), (n, 1))
    hit = np.asarray(masks, dtype=np.int64)
    if hit.any():
        # bit t of a mask: a blot hit on the mover's point t, the other side's 25 - t
        bits = (hit[:, None] >> _POINTS) & 1  # (n, 24): mover's points 1..24
        theirs[:, 24:0:-1] -= bits
        theirs[:, 25] += bits.sum(axis=1)
    return mine, theirs, sizes


def terminal(mine: Sequence[int], theirs: Sequence[int]) -> Array | None:
    """The final outputs when ``mine`` has borne everything off, else None."""
    if mine[0] != 15:
        return None
    gammon = theirs[0] == 0
    backgammon = gammon and any(theirs[19:26])
    return np.array([1.0, float(gammon), float(backgammon), 0.0, 0.0])


def evaluate_batch(net: Net, mine: IntArray, theirs: IntArray) -> Array:
    """The outputs for each row (``mine`` just moved), exact for finished games."""
    out = net.forward(encode(mine, theirs, net.w1.dtype.type))
    done = np.nonzero(mine[:, 0] == 15)[0]
    for i in done:
        final = terminal(mine[i], theirs[i])
        assert final is not None
        out[i] = final
    return out
