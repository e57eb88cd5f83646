"""Backgammon rules: positions, every legal play, the doubling cube, game and match results.

A pure package (no I/O, no asyncio, no Redis): the server feeds it actions and reads back
values. Modules: ``position`` (``Side``, ``Position``, ``Step``, ``Play``), ``dice``,
``moves`` (the legal-play generator, play text), ``game_values`` (phases, outcomes,
resignations, actions), ``game`` (``Game``, the state machine; its docstring documents
``Game.to_dict()`` and the default time-out actions), ``match`` (``Match``), ``gnubg``
(Position ID / Match ID, ``legal_position_ids``) and ``mat`` (``export_mat``).

Errors (all ``ValueError``; ``.code`` is stable and safe to send to a client)::

    RulesError                  base class
    ├── IllegalPlayError        "illegal_play"  (``.reason``: "syntax", "too_long",
    │                           "no_checker", "blocked", "must_enter", "not_all_home",
    │                           "higher_checker", "dice", "must_use_more_dice",
    │                           "must_use_larger_die")
    ├── IllegalActionError      "not_your_turn"    acting out of turn
    │                           "wrong_phase"      e.g. rolling while a double is offered
    │                           "game_over"        any action after the game ended
    │                           "cannot_double"    the opponent owns the cube
    │                           "max_cube"         the cube is at its maximum (64)
    │                           "cube_disabled"    Crawford game, 1-point match, cube off
    │                           "no_resignation"   accept/reject with none on offer
    │                           "invalid_side"     a side other than 0 or 1
    │                           "invalid_kind"     resignation level not single/gammon/backgammon
    │                           "invalid_reason"   forfeit reason not timeout/disconnect/leave
    │                           "match_over"       next game or forfeit after the match ended
    │                           "game_in_progress" next game before the current one ended
    ├── InvalidIdError          "invalid_position_id", "invalid_match_id"
    └── DiceExhaustedError      "dice_exhausted"   a ScriptedDice ran out

A bot's entry point: ``legal_position_ids(position_id, roll) -> set[str]`` (see
``server.rules.gnubg``).
"""

from __future__ import annotations

from server.rules.build import MOVES_BUILD  # first: picks the compiled or the .py module
from server.rules.dice import DiceSource, Roll, ScriptedDice, SecretDice
from server.rules.errors import (
    DiceExhaustedError,
    IllegalActionError,
    IllegalPlayError,
    InvalidIdError,
    RulesError,
)
from server.rules.game import (
    MAX_CUBE,
    Action,
    EndReason,
    Game,
    Outcome,
    Phase,
    Record,
    Resignation,
)
from server.rules.gnubg import (
    MatchState,
    decode_match_id,
    decode_position_id,
    legal_position_ids,
    match_id,
    position_id,
)
from server.rules.mat import export_mat
from server.rules.match import Match
from server.rules.moves import (
    format_play,
    format_plays,
    legal_outcomes,
    legal_plays,
    legal_results,
    parse_play,
)
from server.rules.position import BAR, CHECKERS, OFF, Play, Position, ResultKind, Side, Step

__all__ = [
    "BAR",
    "CHECKERS",
    "MAX_CUBE",
    "MOVES_BUILD",
    "OFF",
    "Action",
    "DiceExhaustedError",
    "DiceSource",
    "EndReason",
    "Game",
    "IllegalActionError",
    "IllegalPlayError",
    "InvalidIdError",
    "Match",
    "MatchState",
    "Outcome",
    "Phase",
    "Play",
    "Position",
    "Record",
    "Resignation",
    "ResultKind",
    "Roll",
    "RulesError",
    "ScriptedDice",
    "SecretDice",
    "Side",
    "Step",
    "decode_match_id",
    "decode_position_id",
    "export_mat",
    "format_play",
    "format_plays",
    "legal_outcomes",
    "legal_plays",
    "legal_position_ids",
    "legal_results",
    "match_id",
    "parse_play",
    "position_id",
]
