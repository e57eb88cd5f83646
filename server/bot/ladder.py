"""The computer's levels: one evaluator, a ladder of rungs named by how well they play.

Pure (no I/O). Every level but ``random`` is the shipped neural evaluator
(:mod:`server.bot.neural`) with a search depth and a noise: the noise (an equity, the
standard deviation of a normal draw) is added to each candidate play's 0-ply equity before
the best is taken, and to the equity behind each cube decision, so a rung with more noise
errs more often and by more; the top rung has no noise and the deepest search
(:mod:`server.bot.expert`).

Each rung is named by its error rate as measured by ``bench/ladder.py`` (GNU Backgammon 0-ply
judging every unforced checker play on the positions of 100 games, in BENCHMARKS.md,
"Computer players"), in the words of GNU Backgammon's error-rating scale, mEMG per unforced
checker play (:data:`RATINGS`):

==============  ===========
rating          mEMG/move
==============  ===========
supernatural    under 2
world class     2 to 5
expert          5 to 8
advanced        8 to 12
intermediate    12 to 18
casual          18 to 26
beginner        26 to 35
awful           35 and more
==============  ===========

The names used before the ladder keep working (:data:`ALIASES`): ``basic`` is ``beginner``,
``strong`` is ``casual``, ``expert`` is the top rung.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ALIASES", "LADDER", "RATINGS", "Rung", "rated_words", "rung"]

RATINGS: tuple[tuple[float, str], ...] = (
    (2.0, "supernatural"),
    (5.0, "world class"),
    (8.0, "expert"),
    (12.0, "advanced"),
    (18.0, "intermediate"),
    (26.0, "casual"),
    (35.0, "beginner"),
)
"""Upper bounds (mEMG per unforced checker play, exclusive) of each rating; ``awful`` above."""


def rated_words(memg: float) -> str:
    """GNU Backgammon's word for an error rate of ``memg`` per unforced checker play."""
    for bound, words in RATINGS:
        if memg < bound:
            return words
    return "awful"


@dataclass(frozen=True, slots=True)
class Rung:
    """One level of the ladder: ``name`` (the protocol's ``level``), the search ``depth``
    (0: the evaluator alone, 1: the best plays looked at one roll deeper, 2: the best of
    those two rolls deeper), the ``noise`` (equity, standard deviation), and its measured
    error rate (``memg``, mEMG per unforced checker play, with the 95% interval's ends
    ``low`` and ``high``)."""

    name: str
    depth: int
    noise: float
    memg: float
    low: float
    high: float

    @property
    def words(self) -> str:
        """The rating of its measured error rate (its name says the same)."""
        return rated_words(self.memg)


LADDER: tuple[Rung, ...] = (
    Rung("beginner", depth=0, noise=0.058, memg=30.2, low=28.3, high=32.0),
    Rung("casual", depth=0, noise=0.032, memg=21.6, low=20.1, high=23.1),
    Rung("intermediate", depth=0, noise=0.0, memg=15.6, low=14.3, high=16.9),
    Rung("advanced", depth=2, noise=0.0, memg=8.1, low=7.4, high=8.9),
)
"""The rungs, weakest first (figures: ``bench/ladder.py --games 100 --seed 11``)."""

ALIASES: dict[str, str] = {"basic": "beginner", "strong": "casual", "expert": LADDER[-1].name}
"""Level names of earlier versions, and the rung each stands for now."""

_BY_NAME = {r.name: r for r in LADDER}


def rung(name: str) -> Rung:
    """The rung called ``name`` (or an alias of it); KeyError for any other name."""
    return _BY_NAME[ALIASES.get(name, name)]
