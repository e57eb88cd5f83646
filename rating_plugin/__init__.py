"""Rating engine for backgammon: Table42 Elo, FIBS and classic Elo.

The formulas are pure (no I/O) and live in submodules:

* :mod:`rating_plugin.table42` — Table42 Elo for ranked single games (integer ratings, cube
  coefficient, K 32/16, versioned presets);
* :mod:`rating_plugin.fibs` — the FIBS rating for n-point matches (experience multiplier);
* :mod:`rating_plugin.elo` — classic chess-style Elo with draws (K presets, FIDE rules);
* :mod:`rating_plugin.stakes` — what each player of a pairing stands to win or lose;
* :mod:`rating_plugin.errors` — the exception tree (everything is a ``ValueError``).

The settled-games log the store exports is written by :mod:`rating_plugin.logformat`. The
tools that analyse it (calibration, replay, synthetic logs: docs/calibration.md) are the
separate package :mod:`rating_plugin.analysis`, which the plugin never imports; they need
the ``analysis`` extra (``pip install -e '.[analysis]'``).

The Redis-backed store (``RatingStore`` and its result values) is imported lazily on first
use, so ``import rating_plugin`` never imports redis.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from rating_plugin import elo, errors, fibs, stakes, table42
from rating_plugin.errors import InvalidInputError, RatingError
from rating_plugin.rounding import round_half_away

__all__ = [
    "InvalidInputError",
    "RatingError",
    "elo",
    "errors",
    "fibs",
    "round_half_away",
    "stakes",
    "table42",
]

if TYPE_CHECKING:  # type checkers see the real classes; at run time __getattr__ loads them
    from rating_plugin.store import BoostedResult as BoostedResult
    from rating_plugin.store import HistoryEntry as HistoryEntry
    from rating_plugin.store import Ladder as Ladder
    from rating_plugin.store import LeaderboardEntry as LeaderboardEntry
    from rating_plugin.store import PlayerChange as PlayerChange
    from rating_plugin.store import PlayerRating as PlayerRating
    from rating_plugin.store import PodiumAward as PodiumAward
    from rating_plugin.store import PodiumPlace as PodiumPlace
    from rating_plugin.store import RatingStore as RatingStore
    from rating_plugin.store import Settlement as Settlement

# Names served by rating_plugin.store, which needs redis: imported on first access only.
_STORE_NAMES = frozenset(
    {
        "BoostedResult",
        "HistoryEntry",
        "Ladder",
        "LeaderboardEntry",
        "PlayerChange",
        "PlayerRating",
        "PodiumAward",
        "PodiumPlace",
        "RatingStore",
        "Settlement",
    }
)


def __getattr__(name: str) -> Any:
    if name in _STORE_NAMES:
        try:
            store = import_module("rating_plugin.store")
        except ModuleNotFoundError as error:
            if error.name != "rating_plugin.store":
                raise  # the store exists but a dependency (redis) is missing: say so
            raise AttributeError(
                f"module {__name__!r} has no attribute {name!r} (rating_plugin.store is not "
                "installed)"
            ) from error
        return getattr(store, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
