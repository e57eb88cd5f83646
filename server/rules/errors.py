"""The rules engine's exception tree: every error is a ``ValueError`` with a stable ``.code``.

::

    ValueError
     └── RulesError                 .code: ErrorCode (stable, safe to show a client)
          ├── IllegalPlayError      code ILLEGAL_PLAY; .reason says which rule (see below)
          ├── IllegalActionError    code NOT_YOUR_TURN, WRONG_PHASE, GAME_OVER, CANNOT_DOUBLE,
          │                         MAX_CUBE, CUBE_DISABLED, NO_RESIGNATION, INVALID_SIDE,
          │                         INVALID_KIND, INVALID_REASON, MATCH_OVER, GAME_IN_PROGRESS
          ├── InvalidIdError        code INVALID_POSITION_ID or INVALID_MATCH_ID
          └── DiceExhaustedError    code DICE_EXHAUSTED (ScriptedDice ran out)

Each code is a member of the server's one vocabulary of refusals,
:class:`server.protocol.errors.ErrorCode` (a pure module: the rules import nothing else of the
server), so a rules error reaches a client with its code unchanged.

``IllegalPlayError.reason`` is one of: ``"syntax"``, ``"too_long"``, ``"no_checker"``,
``"blocked"``, ``"must_enter"``, ``"not_all_home"``, ``"higher_checker"``, ``"dice"``,
``"must_use_more_dice"``, ``"must_use_larger_die"``.
"""

from __future__ import annotations

from server.protocol.errors import ErrorCode


class RulesError(ValueError):
    """Base class of every rules error; ``code`` is stable and machine-readable."""

    code: ErrorCode = ErrorCode.RULES_ERROR

    def __init__(self, message: str, *, code: ErrorCode | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class IllegalPlayError(RulesError):
    """A checker play that the rules forbid; the message says why in words."""

    code = ErrorCode.ILLEGAL_PLAY

    def __init__(self, message: str, *, reason: str = "syntax") -> None:
        super().__init__(message)
        self.reason = reason


class IllegalActionError(RulesError):
    """A game action at the wrong time or by the wrong side (see ``code``)."""

    code = ErrorCode.ILLEGAL_ACTION


class InvalidIdError(RulesError):
    """A GNU Backgammon Position ID or Match ID that cannot be decoded."""

    code = ErrorCode.INVALID_POSITION_ID


class DiceExhaustedError(RulesError):
    """A ``ScriptedDice`` was asked for more dice than it was given."""

    code = ErrorCode.DICE_EXHAUSTED
