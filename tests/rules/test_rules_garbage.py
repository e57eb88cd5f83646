"""The generator leaves no reference cycles behind: everything a search allocates is freed by
reference counting at once (a busy server runs the cyclic garbage collector rarely)."""

from __future__ import annotations

import gc
import random

from server.rules import Game, Phase, Position, legal_plays
from server.rules.moves import _plays_with_keys, play_texts


def test_generating_and_playing_leaves_no_garbage_cycles() -> None:
    rng = random.Random(3)
    positions = [Position.initial()]
    game = Game()
    game.start()
    while not game.is_over and len(positions) < 60:
        if game.phase is Phase.ROLL:
            assert game.turn is not None
            game.roll(game.turn)
            continue
        assert game.turn is not None
        positions.append(game.position)
        game.play(game.turn, rng.choice(game.legal_plays))
    _plays_with_keys.cache_clear()
    play_texts.cache_clear()
    gc.collect()
    gc.disable()
    try:
        for position in positions:
            for roll in ((1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (6, 5), (2, 1)):
                assert list(legal_plays(position, roll))
                play_texts(position, *roll)
        _plays_with_keys.cache_clear()
        play_texts.cache_clear()
        assert gc.collect() == 0
    finally:
        gc.enable()
