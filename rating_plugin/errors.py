"""The rating package's exception tree.

Every error the package raises for bad input is a ``ValueError``, so callers that only know
the standard library can still catch it::

    ValueError
     └── RatingError                 base of everything this package raises on purpose
          └── InvalidInputError      a formula got a value it cannot use; ``.field`` names it

The store layer adds its own subclasses of :class:`RatingError` here (a reused game id, an
unknown ladder, ...). Each error carries a stable ``code`` string that a server can forward to
its clients unchanged.
"""

from __future__ import annotations

__all__ = ["InvalidInputError", "RatingError"]


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
