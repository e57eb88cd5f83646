"""What a computer player does: pick a play among the offered ones, double, take or drop.

Pure (no I/O, no asyncio): a :class:`Decision` comes from a game snapshot (the protocol's
``state.game``) and a level. Every play chosen is one of the plays the server offered, sent
back as it is, so every choice is legal by construction.

Levels (:class:`Level`):

- ``random``: a uniformly random offered play; offers a double on 5% of the turns it may,
  takes half of the doubles offered to it.
- ``basic``: the offered play whose result scores best by :func:`~server.bot.evaluation.
  evaluate` (one ply). Cube: as ``strong`` (below), from the same one-ply estimate.
- ``strong``: two plies, with :func:`~server.bot.evaluation.evaluate_strong` (the same
  evaluation plus the bear-off waste of a race, back checkers trapped behind points, and
  blots costing more to the side ahead in the race).
  The ``STRONG_CANDIDATES`` best plays by one ply are looked at
  further: for each, the opponent's 21 rolls (weighted 1/36 for doubles, 2/36 otherwise)
  and, for each roll, the opponent's best reply by one ply; the play with the best
  weighted average after those replies is chosen. The opponent's replies come from the
  rules engine's move generator (:func:`server.rules.legal_outcomes`).

Cube thresholds (cubeless winning chances by :func:`~server.bot.evaluation.win_probability`,
money play, no Jacoby rule):

=====================  ==========  ==================================================
decision               threshold   why
=====================  ==========  ==================================================
double / redouble      p >= 0.70   the usual doubling window opens near 68-70%
too good to double     p >= 0.92   play on for a gammon instead (only in contact)
take                   p >= 0.25   a take costs less than a drop from 25% up
drop                   p <  0.25
accept a resignation   always      (the bots never resign themselves)
=====================  ==========  ==================================================
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from server.bot.cube import CubeState, MatchContext
from server.bot.evaluation import (
    BAR,
    OFF,
    ON_ROLL,
    ROLLS,
    after_play,
    chance_width,
    evaluate,
    evaluate_strong,
    is_contact,
    sides_from_board,
    win_probability,
)
from server.rules import Position, Side, decode_match_id, legal_outcomes

DOUBLE_AT = 0.70
TOO_GOOD_AT = 0.92
TAKE_AT = 0.25
RANDOM_DOUBLE_CHANCE = 0.05
RANDOM_TAKE_CHANCE = 0.5
STRONG_CANDIDATES = 4
"""Plays the two-ply search looks at (the best by one ply); the rest are pruned."""

WirePlay = Sequence[Sequence[int]]


class Level(StrEnum):
    RANDOM = "random"
    BASIC = "basic"
    STRONG = "strong"
    EXPERT = "expert"


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


def choose_play_index(
    level: Level, mine: Sequence[int], theirs: Sequence[int], plays: Sequence[WirePlay],
    rng: random.Random,
) -> int:
    """The index in ``plays`` (the offered plays, non-empty) that ``level`` picks; ``mine``
    and ``theirs`` are the mover's and the opponent's checkers, each in its own numbering."""
    if len(plays) <= 1:
        return 0
    if level is Level.RANDOM:
        return rng.randrange(len(plays))
    score = evaluate if level is Level.BASIC else evaluate_strong
    scored = []
    for index, play in enumerate(plays):
        a, b = after_play(mine, theirs, play)
        scored.append((score(a, b), index, a, b))
    if level is Level.BASIC:
        return max(scored, key=lambda s: (s[0], -s[1]))[1]
    scored.sort(key=lambda s: (-s[0], s[1]))
    best_index, best_value = scored[0][1], -1e18
    for _score, index, a, b in scored[:STRONG_CANDIDATES]:
        value = two_ply(a, b)
        if value > best_value:
            best_index, best_value = index, value
    return best_index


def two_ply(a: list[int], b: list[int]) -> float:
    """``a``'s expected winning chance after ``b`` (to move) rolls and makes its best
    one-ply reply (the one with the best score for ``b``), averaged over the 21 rolls with
    their weights; ``a`` is then on roll. Chances, not raw scores, are averaged: a rout on
    one roll does not make up for a loss on several."""
    if a[OFF] == 15:
        return 1.0
    position = _position_for(b, a)
    scale = 1.0 / chance_width(a, b)
    total = 0.0
    for d1, d2, weight in ROLLS:
        best = -1e18
        for counts, hits in legal_outcomes(position, (d1, d2)):
            if hits:
                a2 = a.copy()
                for t in range(1, 25):
                    if hits >> t & 1:
                        a2[25 - t] -= 1
                        a2[BAR] += 1
            else:
                a2 = a
            value = 1e6 if counts[OFF] == 15 else evaluate_strong(counts, a2)
            if value > best:
                best = value
        total += weight / (1.0 + math.exp(min(60.0, (best - ON_ROLL) * scale)))
    return total / 36.0


def _position_for(mover: Sequence[int], other: Sequence[int]) -> Position:
    """A rules ``Position`` with ``mover`` to move (both in their own numbering)."""
    theirs = [0] * 26
    for p in range(1, 25):
        theirs[p] = other[25 - p]
    theirs[BAR] = other[BAR]
    theirs[OFF] = other[OFF]
    return Position.from_mover_view(list(mover), theirs, Side.ZERO)


def cube_action(level: Level, mine: Sequence[int], theirs: Sequence[int],
                rng: random.Random) -> bool:
    """Whether to double now (the side on roll, allowed to double)."""
    if level is Level.RANDOM:
        return rng.random() < RANDOM_DOUBLE_CHANCE
    p = win_probability(mine, theirs, on_roll=True)
    if p >= TOO_GOOD_AT and is_contact(mine, theirs):
        return False
    return p >= DOUBLE_AT


def take_action(level: Level, mine: Sequence[int], theirs: Sequence[int],
                rng: random.Random) -> bool:
    """Whether to take a double (``theirs`` doubled and is on roll)."""
    if level is Level.RANDOM:
        return rng.random() < RANDOM_TAKE_CHANCE
    return win_probability(mine, theirs, on_roll=False) >= TAKE_AT


def decide(level: Level, game: Mapping[str, Any], side: int,
           rng: random.Random) -> Decision | None:
    """What ``side`` sends for the game snapshot ``game`` (the protocol's ``state.game``),
    or None when it is not ``side``'s decision."""
    if game.get("to_act") != side:
        return None
    phase = game.get("phase")
    mine, theirs = sides_from_board(game["board"], game["bar"], game["off"], side)
    if level is Level.EXPERT:
        return _decide_expert(game, side, mine, theirs, search=True)
    if phase == "roll":
        if game.get("can_double") and cube_action(level, mine, theirs, rng):
            return Decision("double")
        return Decision("roll")
    if phase == "move":
        plays: Sequence[WirePlay] = game["legal_plays"]
        if not plays:
            return None
        index = choose_play_index(level, mine, theirs, plays, rng)
        return Decision("play", _as_play(plays[index]))
    if phase == "double_offered":
        return Decision("take" if take_action(level, mine, theirs, rng) else "drop")
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


def _decide_expert(game: Mapping[str, Any], side: int, mine: list[int], theirs: list[int],
                   *, search: bool) -> Decision | None:
    from server.bot import expert

    phase = game.get("phase")
    if phase == "roll":
        state = cube_state(game, side, side)
        if game.get("can_double") and expert.double_decision(mine, theirs, state):
            return Decision("double")
        return Decision("roll")
    if phase == "move":
        plays: Sequence[WirePlay] = game["legal_plays"]
        if not plays:
            return None
        state = cube_state(game, side, side)
        index = expert.choose_play(mine, theirs, plays, match=state.match, cube=state.cube,
                                   search=search)
        return Decision("play", _as_play(plays[index]))
    if phase == "double_offered":
        state = cube_state(game, side, 1 - side)
        return Decision("take" if expert.take_decision(mine, theirs, state) else "drop")
    if phase == "resign_offered":
        return Decision("accept_resign")
    return None


def decide_quick(game: Mapping[str, Any], side: int) -> Decision | None:
    """The expert's decision without its search (a busy node's fallback, milliseconds)."""
    if game.get("to_act") != side:
        return None
    mine, theirs = sides_from_board(game["board"], game["bar"], game["off"], side)
    return _decide_expert(game, side, mine, theirs, search=False)
