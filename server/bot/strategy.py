"""What a computer player does: pick a play among the offered ones, double, take or drop.

Pure (no I/O, no asyncio): a :class:`Decision` comes from a game snapshot (the protocol's
``state.game``) and a level. Every play chosen is one of the plays the server offered, sent
back as it is, so every choice is legal by construction.

Levels (:class:`Level`):

- ``random``: a uniformly random offered play; offers a double on 5% of the turns it may,
  takes half of the doubles offered to it.
- the ladder's rungs (:mod:`server.bot.ladder`), weakest first ``beginner``, ``casual``,
  ``intermediate``, ``advanced``: the neural evaluator with the rung's search depth and
  noise (:mod:`server.bot.expert`), and its cube decisions (:mod:`server.bot.cube`) from the
  evaluator's chances with the same noise. The names of earlier versions are aliases:
  ``Level("basic")`` is ``Level.BEGINNER``, ``strong`` casual, ``expert`` the top rung.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from server.bot.cube import CubeState, MatchContext
from server.bot.evaluation import sides_from_board
from server.bot.ladder import ALIASES, Rung, rung
from server.rules import decode_match_id

RANDOM_DOUBLE_CHANCE = 0.05
RANDOM_TAKE_CHANCE = 0.5

WirePlay = Sequence[Sequence[int]]


class Level(StrEnum):
    """A computer level: ``random`` or a rung of the ladder (an old name is an alias)."""

    RANDOM = "random"
    BEGINNER = "beginner"
    CASUAL = "casual"
    INTERMEDIATE = "intermediate"
    ADVANCED = "advanced"

    @classmethod
    def _missing_(cls, value: object) -> Level | None:
        target = ALIASES.get(str(value))
        return None if target is None else cls(target)

    @property
    def rung(self) -> Rung | None:
        """The ladder's rung (None for ``random``)."""
        return None if self is Level.RANDOM else rung(self.value)


LEVEL_NAMES: tuple[str, ...] = (*(str(level) for level in Level), *ALIASES)
"""Every name a level may be asked by: the levels, then the aliases."""


@dataclass(frozen=True, slots=True)
class Decision:
    """A message to send: ``kind`` is the protocol ``type`` (``roll``, ``double``, ``play``,
    ``take``, ``drop``, ``accept_resign``); ``play`` is the offered play for ``play``."""

    kind: str
    play: tuple[tuple[int, int], ...] | None = None

    def to_message(self, table: str) -> dict[str, Any]:
        message: dict[str, Any] = {"type": self.kind, "table": table}
        if self.play is not None:
            message["play"] = [list(step) for step in self.play]
        return message


def _as_play(play: WirePlay) -> tuple[tuple[int, int], ...]:
    return tuple((int(step[0]), int(step[1])) for step in play)


def decide(level: Level, game: Mapping[str, Any], side: int,
           rng: random.Random, *, quick: bool = False) -> Decision | None:
    """What ``side`` sends for the game snapshot ``game`` (the protocol's ``state.game``),
    or None when it is not ``side``'s decision. ``quick``: a rung searches at most one
    roll deep (a busy node's fallback, milliseconds)."""
    if game.get("to_act") != side:
        return None
    ladder = level.rung
    if ladder is not None:
        mine, theirs = sides_from_board(game["board"], game["bar"], game["off"], side)
        depth = min(ladder.depth, 1) if quick else ladder.depth
        noise = np.random.default_rng(rng.getrandbits(64)) if ladder.noise else None
        return _decide_rung(game, side, mine, theirs, depth, ladder.noise, noise)
    phase = game.get("phase")
    if phase == "roll":
        if game.get("can_double") and rng.random() < RANDOM_DOUBLE_CHANCE:
            return Decision("double")
        return Decision("roll")
    if phase == "move":
        plays: Sequence[WirePlay] = game["legal_plays"]
        if not plays:
            return None
        return Decision("play", _as_play(plays[rng.randrange(len(plays))]))
    if phase == "double_offered":
        return Decision("take" if rng.random() < RANDOM_TAKE_CHANCE else "drop")
    if phase == "resign_offered":
        return Decision("accept_resign")
    return None


def cube_state(game: Mapping[str, Any], side: int, doubler: int) -> CubeState:
    """The cube of the snapshot ``game`` as ``doubler`` sees it (``side`` decides)."""
    owner = game.get("cube_owner")
    match: MatchContext | None = None
    match_id = game.get("match_id")
    if isinstance(match_id, str):
        state = decode_match_id(match_id)
        if state.match_length:
            length = state.match_length
            match = MatchContext(length, length - state.score[doubler],
                                 length - state.score[1 - doubler])
    return CubeState(int(game.get("cube") or 1), owner == doubler, match)


def _decide_rung(game: Mapping[str, Any], side: int, mine: list[int], theirs: list[int],
                 depth: int, noise: float, rng: np.random.Generator | None
                 ) -> Decision | None:
    from server.bot import expert

    phase = game.get("phase")
    if phase == "roll":
        state = cube_state(game, side, side)
        if game.get("can_double") and expert.double_decision(mine, theirs, state,
                                                             noise=noise, rng=rng):
            return Decision("double")
        return Decision("roll")
    if phase == "move":
        plays: Sequence[WirePlay] = game["legal_plays"]
        if not plays:
            return None
        state = cube_state(game, side, side)
        index = expert.choose_play(mine, theirs, plays, match=state.match, cube=state.cube,
                                   depth=depth, noise=noise, rng=rng)
        return Decision("play", _as_play(plays[index]))
    if phase == "double_offered":
        state = cube_state(game, side, 1 - side)
        return Decision("take" if expert.take_decision(mine, theirs, state, noise=noise,
                                                       rng=rng) else "drop")
    if phase == "resign_offered":
        return Decision("accept_resign")
    return None
