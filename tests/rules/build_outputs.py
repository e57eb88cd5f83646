"""What the move generator answers over a fixed corpus, as one digest per position and roll.

Two builds of ``server/rules/moves.py`` (the mypyc-compiled extension and the ``.py``) must
answer the same: ``tests/rules/test_rules_builds.py`` runs :func:`main` in the other build
and compares its digests with this build's, position by position. This build is checked
against the slow reference (``test_rules_reference.py``), so equal answers carry that check
over to the other build.

The corpus: :data:`RANDOM_POSITIONS` positions of the shapes ``test_rules_reference``'s
strategy draws (checkers anywhere, on the bar, borne off, stacks that block dice, few
checkers left), each with a seeded roll, and every position and roll met in
:data:`GAME_POSITIONS` steps of seeded random games. Per position and roll it records every
answer of the module: ``legal_plays`` (steps, order), ``legal_results``, ``legal_outcomes``,
``play_texts`` (text and the map back), ``format_play``, and ``parse_play`` of each text.

``python build_outputs.py`` prints the digests as JSON.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator

from server.rules import Position, Side, format_play, legal_plays, legal_results, parse_play
from server.rules.moves import legal_outcomes, play_texts

RANDOM_POSITIONS = 3000
GAME_POSITIONS = 2000
Roll = tuple[int, int]


def random_position(rng: random.Random) -> Position:
    """A legal position drawn as ``test_rules_reference.positions`` draws one."""
    board = [0] * 24
    bars = [0, 0]
    for side in (0, 1):
        bars[side] = rng.choice([0, 0, 0, 0, 1, 1, 2, 3])
        zone = rng.choice([24, 24, 12, 6])
        stack = rng.choice([1, 1, 2])
        free = min(15 - bars[side], rng.choice([15, 15, 15, 4, 2]))
        points = [rng.randint(1, zone) for _ in range(rng.randint(0, free // stack))]
        for point in points:
            index = point - 1 if side == 0 else 24 - point
            if (board[index] < 0) if side == 0 else (board[index] > 0):
                continue
            board[index] += stack if side == 0 else -stack
    zero = 15 - sum(n for n in board if n > 0) - bars[0]
    one = 15 + sum(n for n in board if n < 0) - bars[1]
    return Position(tuple(board), (bars[0], bars[1]), (zero, one), Side(rng.randint(0, 1)))


def corpus() -> Iterator[tuple[Position, Roll]]:
    """The random positions, then the games' positions: the very positions and rolls of
    ``test_rules_reference.test_positions_from_random_games_match_reference`` (its seed)."""
    rng = random.Random(1)
    for _ in range(RANDOM_POSITIONS):
        yield random_position(rng), (rng.randint(1, 6), rng.randint(1, 6))
    rng = random.Random(20240607)
    met = 0
    while met < GAME_POSITIONS:
        position = Position.initial(Side(rng.randint(0, 1)))
        while position.winner is None and met < GAME_POSITIONS:
            roll = (rng.randint(1, 6), rng.randint(1, 6))
            yield position, roll
            met += 1
            play = rng.choice(list(legal_plays(position, roll)))
            position = position.apply(play)


def answers(position: Position, roll: Roll) -> str:
    """Everything the module answers for ``position`` and ``roll``, as text."""
    plays = list(legal_plays(position, roll))
    texts, by_text = play_texts(position, *roll)
    return repr((
        [[tuple(step) for step in play] for play in plays],
        sorted((repr(after), [tuple(step) for step in play])
               for after, play in legal_results(position, roll).items()),
        [(raw.hex(), mask) for raw, mask in legal_outcomes(position, roll)],
        texts,
        sorted((text, [tuple(step) for step in play]) for text, play in by_text.items()),
        [format_play(play, position) for play in plays],
        [[tuple(step) for step in parse_play(text, position, roll)] for text in by_text],
    ))


def digests() -> list[str]:
    return [hashlib.sha256(answers(position, roll).encode()).hexdigest()
            for position, roll in corpus()]


def main() -> None:
    print(json.dumps(digests()))


if __name__ == "__main__":
    main()
