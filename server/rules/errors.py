"""The rules engine's exception tree: every error is a ``ValueError`` with a stable ``.code``.

::

    ValueError
     └── RulesError                 .code: str (stable, safe to show a client)
          ├── IllegalPlayError      code "illegal_play"; .reason says which rule (see below)
          ├── IllegalActionError    code "not_your_turn", "wrong_phase", "game_over",
          │                         "cannot_double", "max_cube", "cube_disabled",
          │                         "no_resignation", "invalid_side", "invalid_kind",
          │                         "invalid_reason", "match_over", "game_in_progress"
          ├── InvalidIdError        code "invalid_position_id" or "invalid_match_id"
          └── DiceExhaustedError    code "dice_exhausted" (ScriptedDice ran out)

``IllegalPlayError.reason`` is one of: ``"syntax"``, ``"too_long"``, ``"no_checker"``,
``"blocked"``, ``"must_enter"``, ``"not_all_home"``, ``"higher_checker"``, ``"dice"``,
``"must_use_more_dice"``, ``"must_use_larger_die"``.
"""

from __future__ import annotations


class RulesError(ValueError):
    """Base class of every rules error; ``code`` is stable and machine-readable."""

    code: str = "rules_error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class IllegalPlayError(RulesError):
    """A checker play that the rules forbid; the message says why in words."""

    code = "illegal_play"

    def __init__(self, message: str, *, reason: str = "syntax") -> None:
        super().__init__(message)
        self.reason = reason


class IllegalActionError(RulesError):
    """A game action at the wrong time or by the wrong side (see ``code``)."""

    code = "illegal_action"


class InvalidIdError(RulesError):
    """A GNU Backgammon Position ID or Match ID that cannot be decoded."""

    code = "invalid_position_id"


class DiceExhaustedError(RulesError):
    """A ``ScriptedDice`` was asked for more dice than it was given."""

    code = "dice_exhausted"
