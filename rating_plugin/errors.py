"""The rating package's exception tree.

Every error the package raises for bad input is a ``ValueError``, so callers that only know
the standard library can still catch it::

    ValueError
     └── RatingError                 base of everything this package raises on purpose
          ├── InvalidInputError      a formula got a value it cannot use; ``.field`` names it
          │    ├── SamePlayerError   the same player on both sides (or twice on a podium)
          │    └── UnknownLadderError  a ladder name the store does not know
          ├── AlreadySettledConflict  a game or tournament id reused with other players/terms
          ├── LogIncompleteError      the store's applied-order log lacks early settlements
          └── LogRecordMissingError   a record the applied-order log names is gone

The store layer adds its own subclasses of :class:`RatingError` here (a reused game id, an
unknown ladder, ...). Each error carries a stable ``code`` string that a server can forward to
its clients unchanged.
"""

from __future__ import annotations

__all__ = [
    "AlreadySettledConflict",
    "InvalidInputError",
    "LogIncompleteError",
    "LogRecordMissingError",
    "RatingError",
    "SamePlayerError",
    "UnknownLadderError",
]


class RatingError(ValueError):
    """Base class of every error the rating package raises on purpose."""

    code: str = "rating_error"


class InvalidInputError(RatingError):
    """A rating formula was given a value it cannot use.

    ``field`` is the name of the offending argument (``"cube"``, ``"winner_k"``, ...); the
    message always starts with it, e.g. ``"cube: must be one of 1, 2, 4, 8, 16, 32, 64, got 3"``.
    """

    code = "invalid_input"

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


class SamePlayerError(InvalidInputError):
    """The same player was named on both sides of a game (or twice on one podium)."""

    code = "same_player"

    def __init__(self, field: str, player: str, problem: str | None = None) -> None:
        super().__init__(field, problem or f"{player!r} is on both sides of the game")
        self.player = player


class UnknownLadderError(InvalidInputError):
    """A ladder name the rating store does not know (or one this call does not accept)."""

    code = "unknown_ladder"

    def __init__(self, ladder: object, allowed: tuple[str, ...]) -> None:
        text = repr(ladder)
        text = text if len(text) <= 40 else text[:37] + "..."
        super().__init__("ladder", f"must be one of {', '.join(allowed)}, got {text}")
        self.ladder = ladder


class AlreadySettledConflict(RatingError):
    """A game or tournament id was settled before with other players or terms.

    Nothing was applied. ``field`` names the id argument (``"game_id"``, ``"tournament_id"``),
    ``ref`` is the id, ``differences`` the fields that differ from the stored result and
    ``stored`` the stored result itself (a ``Settlement``, ``PodiumAward`` or
    ``BoostedResult``).
    """

    code = "already_settled_conflict"

    def __init__(
        self, field: str, ref: str, differences: tuple[str, ...], stored: object
    ) -> None:
        super().__init__(
            f"{field}: {ref!r} was already settled with a different {', '.join(differences)}"
        )
        self.field = field
        self.ref = ref
        self.differences = differences
        self.stored = stored


class LogIncompleteError(RatingError):
    """A ladder's applied-order log holds fewer records than its ``seq`` counter: the store
    settled games before it kept the log, so an export cannot list every game in order.
    ``ladder``, ``settled`` (the counter) and ``logged`` (the log's length) say how many."""

    code = "log_incomplete"

    def __init__(self, ladder: str, settled: int, logged: int) -> None:
        super().__init__(
            f"{ladder}: {settled} settlements applied but only {logged} in the applied-order "
            f"log (the first {settled - logged} predate the log); the export would be "
            "incomplete"
        )
        self.ladder = ladder
        self.settled = settled
        self.logged = logged


class LogRecordMissingError(RatingError):
    """A record the applied-order log names is not in the store (records are kept forever,
    so it was deleted by hand): an export would silently lack a game. ``ladder``, ``seq``
    (the record's place in the applied order) and ``key`` say which."""

    code = "log_record_missing"

    def __init__(self, ladder: str, seq: int, key: str) -> None:
        super().__init__(
            f"{ladder}: settlement {seq} of the applied order ({key}) is missing from the "
            "store; the export would be incomplete"
        )
        self.ladder = ladder
        self.seq = seq
        self.key = key
