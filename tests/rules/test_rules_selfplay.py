"""Random self-play: invariants that hold at every step of every game."""

from __future__ import annotations

import json
import random

import pytest

from server.rules import (
    BAR,
    CHECKERS,
    OFF,
    EndReason,
    Game,
    Match,
    Phase,
    Position,
    ResultKind,
    Side,
    legal_plays,
)


class SeededDice:
    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def roll_die(self) -> int:
        return self._rng.randint(1, 6)


def checkers_per_side(position: Position) -> tuple[int, int]:
    return (sum(position.checkers(Side.ZERO)), sum(position.checkers(Side.ONE)))


def play_one_game(game: Game, rng: random.Random, *, use_cube: bool) -> int:
    """Drive ``game`` to the end with random decisions, checking invariants; returns turns."""
    game.start()
    turns = 0
    while game.phase != Phase.OVER:
        turns += 1
        assert turns < 2000, "a game must end"
        position = game.position
        assert checkers_per_side(position) == (CHECKERS, CHECKERS)
        if game.phase == Phase.ROLL:
            side = game.turn
            assert side is not None
            if use_cube and game.can_double(side) and rng.random() < 0.1:
                game.double(side)
                if rng.random() < 0.2:
                    cube = game.cube
                    outcome = game.drop(side.opponent)
                    assert (outcome.kind, outcome.points, outcome.cube) == (
                        ResultKind.SINGLE,
                        cube,
                        cube,
                    )
                    return turns
                game.take(side.opponent)
                continue
            game.roll(side)
            continue
        assert game.phase == Phase.MOVE
        side = game.turn
        assert side is not None and game.dice is not None
        plays = game.legal_plays
        assert plays and plays != [()]
        assert plays == list(legal_plays(position, game.dice))
        play = rng.choice(plays)
        texts = game.legal_play_texts
        assert len(texts) == len(plays)
        snapshot = game.to_dict()
        assert snapshot["legal_plays"] == plays
        assert json.loads(json.dumps(snapshot["legal_plays"])) == [
            [list(step) for step in offered] for offered in plays
        ]
        before = [position.pip_count(Side.ZERO), position.pip_count(Side.ONE)]
        assert snapshot["pips"] == before
        _, theirs = position.mover_view()
        moved = 0
        regained = 0
        for src, dst in play:
            moved += src - dst
            if dst != OFF and theirs[dst] == 1:
                theirs[dst] = 0
                regained += dst  # from its point 25 - dst to the bar, worth 25
        # A third of the plays arrive as their text, a third as offered, a third as the
        # steps a client sends back (lists decoded from a frame).
        choice = rng.random()
        sent: object = (texts[plays.index(play)] if choice < 1 / 3 else play if choice < 2 / 3
                        else [list(step) for step in play])
        result = game.play(side, sent)  # type: ignore[arg-type]
        after = [game.position.pip_count(Side.ZERO), game.position.pip_count(Side.ONE)]
        # The mover's pips fall by what it moved; the opponent's rise only by hits.
        assert after[side] == before[side] - moved
        assert after[side.opponent] == before[side.opponent] + regained
        assert checkers_per_side(game.position) == (CHECKERS, CHECKERS)
        if result is not None:
            final = game.position
            assert final.off[side] == CHECKERS
            loser = final.checkers(side.opponent)
            if final.off[side.opponent]:
                expected = ResultKind.SINGLE
            elif loser[BAR] or any(loser[19:25]):
                expected = ResultKind.BACKGAMMON
            else:
                expected = ResultKind.GAMMON
            assert result.kind == expected
            assert result.reason == EndReason.NORMAL
            assert result.points == expected.multiplier * game.cube
    return turns


@pytest.mark.parametrize("seed", range(8))
def test_random_games_keep_every_invariant(seed: int) -> None:
    rng = random.Random(seed)
    for index in range(25):
        game = Game(dice=SeededDice(seed * 1000 + index))
        play_one_game(game, rng, use_cube=index % 2 == 0)
        assert game.outcome is not None


def test_random_matches_end_with_a_winner() -> None:
    rng = random.Random(99)
    for index, length in enumerate([1, 3, 5, 7]):
        m = Match(length, dice=SeededDice(index))
        while not m.is_over:
            play_one_game(m.next_game(), rng, use_cube=True)
        assert m.winner is not None and max(m.score) >= length
        crawford_games = [g for g in m.games if g.crawford]
        assert len(crawford_games) <= 1
        assert all(not g.cube_enabled for g in m.games) if length == 1 else True
