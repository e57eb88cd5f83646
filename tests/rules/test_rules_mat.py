"""Jellyfish .mat export, read back the way GNU Backgammon's importer reads it.

``read_mat`` below follows GNU Backgammon's ``import.c`` (``ImportMatVariation``,
``ImportGame``, ``ParseMatMove``): how it splits a line into the two columns, and which
tokens it understands. Replaying what it reads through a fresh ``Game`` must reproduce
every game's moves, cube actions and result.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

import pytest

from server.rules import (
    Game,
    Match,
    Phase,
    ResultKind,
    ScriptedDice,
    Side,
    export_mat,
)


@dataclass
class MatGame:
    names: tuple[str, str]
    score: tuple[int, int]
    entries: list[tuple[Side, str]] = field(default_factory=list)


def split_columns(line: str) -> tuple[str, str | None]:
    """ImportGame: two "dd:" rolls split two characters before the second colon; else the
    first double space at or after column 15 splits; the left part starts after ')'."""
    first = line.find(":")
    second = line.find(":", first + 1) if first >= 0 else -1
    right: str | None
    if first >= 0 and second > 3:
        left, right = line[: second - 3], line[second - 2 :]
    elif len(line) > 15 and (cut := line.find("  ", 15)) >= 0:
        left, right = line[:cut], line[cut + 1 :]
    else:
        left, right = line, None
    paren = left.find(")")
    return (left[paren + 1 :] if paren >= 0 else left), right


def read_mat(text: str) -> tuple[int, list[MatGame]]:
    lines = [line for line in text.splitlines() if line.strip()]
    index = 0
    while lines[index].startswith((";", "#")):
        index += 1
    header = re.match(r"\s*(\d+) point match", lines[index])
    assert header, lines[index]
    length = int(header[1])
    games: list[MatGame] = []
    index += 1
    while index < len(lines):
        assert "Game " in lines[index]
        names_line = lines[index + 1]
        m = re.match(r"\s*(.+?)\s*:\s*(\d+)\s+(.+?)\s*:\s*(\d+)\s*$", names_line)
        assert m, names_line
        game = MatGame((m[1], m[3]), (int(m[2]), int(m[4])))
        index += 2
        while index < len(lines) and "Game " not in lines[index]:
            left, right = split_columns(lines[index])
            for side, cell in ((Side.ZERO, left), (Side.ONE, right)):
                if cell is not None and cell.strip():
                    game.entries.append((side, cell.strip()))
            index += 1
        games.append(game)
    return length, games


def replay(mat_game: MatGame) -> Game:
    """Play a game read from .mat through the engine, as GNU Backgammon would."""
    rolls = [
        (side, (int(token[0]), int(token[1])))
        for side, token in mat_game.entries
        if re.match(r"[1-6][1-6]:", token)
    ]
    starter, (a, b) = rolls[0]
    dice = [a, b] if starter == Side.ZERO else [b, a]
    for _, roll in rolls[1:]:
        dice.extend(roll)
    game = Game(dice=ScriptedDice(dice))
    game.start()
    assert game.turn == starter
    for side, token in mat_game.entries:
        lowered = token.lower()
        if re.match(r"[1-6][1-6]:", token):
            if game.phase == Phase.ROLL:
                game.roll(side)
            moves = token[3:].strip()
            if moves:
                game.play(side, moves)
            else:
                assert game.phase == Phase.ROLL and game.turn == side.opponent  # danced
        elif lowered.startswith("double"):
            game.double(side)
        elif lowered.startswith("take"):
            game.take(side)
        elif lowered.startswith("drop"):
            game.drop(side)
        elif lowered.startswith("win"):
            if game.phase != Phase.OVER:  # neither a drop nor a bear-off: a resignation
                points = int(token[4:].split()[0])
                level = (
                    ResultKind.SINGLE
                    if points <= game.cube
                    else ResultKind.GAMMON
                    if points <= 2 * game.cube
                    else ResultKind.BACKGAMMON
                )
                game.resign(side.opponent, level)
                game.accept_resignation(side)
        else:
            raise AssertionError(f"GNU Backgammon would not recognise {token!r}")
    return game


class SeededDice:
    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def roll_die(self) -> int:
        return self._rng.randint(1, 6)


def play_randomly(game: Game, rng: random.Random) -> None:
    game.start()
    while game.phase != Phase.OVER:
        side = game.to_act
        assert side is not None
        if game.phase == Phase.ROLL:
            if rng.random() < 0.003:
                game.forfeit(side, rng.choice(["timeout", "disconnect", "leave"]))
            elif rng.random() < 0.004:
                game.resign(side, rng.choice(list(ResultKind)))
            elif game.can_double(side) and rng.random() < 0.03:
                game.double(side)
            else:
                game.roll(side)
        elif game.phase == Phase.DOUBLE_OFFERED:
            (game.take if rng.random() < 0.8 else game.drop)(side)
        elif game.phase == Phase.RESIGN_OFFERED:
            (game.accept_resignation if rng.random() < 0.7 else game.reject_resignation)(side)
        else:
            game.play(side, rng.choice(game.legal_plays))


def test_a_short_game_in_gnubg_layout() -> None:
    game = Game(dice=ScriptedDice([3, 1, 6, 4, 5, 2]))
    game.start()
    game.play(Side.ZERO, "8/5 6/5")
    game.double(Side.ONE)
    game.take(Side.ZERO)
    game.roll(Side.ONE)
    game.play(Side.ONE, "24/14")
    game.roll(Side.ZERO)
    game.play(Side.ZERO, "13/8 13/11")
    game.resign(Side.ONE, "gammon")
    game.accept_resignation(Side.ZERO)
    # Columns as GNU Backgammon's ExportGameJF writes them: "%3d) %-27s " then the right.
    assert export_mat(game, names=("alice", "bob"), site="Table42") == (
        '; [Site "Table42"]\n'
        "\n"
        " 0 point match\n"
        "\n"
        " Game 1\n"
        " alice : 0                       bob : 0\n"
        "  1) 31: 8/5 6/5                  Doubles => 2\n"
        "  2)  Takes                      64: 24/18 18/14\n"
        "  3) 52: 13/8 13/11*\n"
        "      Wins 4 points\n"
        "\n"
    )


def test_side_one_starting_drops_and_hits() -> None:
    game = Game(dice=ScriptedDice([1, 6, 6, 4]))
    game.start()
    game.play(Side.ONE, "24/18 24/23")
    game.roll(Side.ZERO)
    game.play(Side.ZERO, "13/7*/3")
    game.double(Side.ONE)
    game.drop(Side.ZERO)
    text = export_mat(game)
    assert "  1)                             61: 24/18 24/23\n" in text
    assert "  2) 64: 13/7* 7/3                Doubles => 2\n" in text
    assert "  3)  Drops                       Wins 1 point\n" in text


def test_names_are_made_safe_for_the_format() -> None:
    game = Game(dice=ScriptedDice([3, 1]))
    game.start()
    game.forfeit(Side.ZERO, "leave")
    text = export_mat(game, names=("Ann: the Game 1", "x" * 40), date="2024.06.07")
    assert '; [EventDate "2024.06.07"]' in text
    assert " Ann_the_Game_1 : 0" in text and "x" * 32 not in text
    with pytest.raises(ValueError, match="names"):
        export_mat(game, names=("one",))


@pytest.mark.parametrize("seed", range(8))
def test_random_matches_read_back_as_gnubg_reads_them(seed: int) -> None:
    rng = random.Random(seed)
    length = rng.choice([1, 3, 5, 7, 9])
    match = Match(length, dice=SeededDice(seed))
    while not match.is_over:
        play_randomly(match.next_game(), rng)
    text = export_mat(match, names=("north", "south"))
    read_length, games = read_mat(text)
    assert read_length == length
    assert len(games) == len(match.games)
    for original, read in zip(match.games, games, strict=True):
        assert read.names == ("north", "south")
        assert read.score == original.score
        again = replay(read)
        assert again.position == original.position
        assert original.outcome is not None and again.outcome is not None
        assert again.outcome.winner == original.outcome.winner
        assert again.outcome.points == original.outcome.points
        assert again.cube == original.cube


def test_a_money_game_reads_back() -> None:
    rng = random.Random(7)
    for seed in range(5):
        game = Game(dice=SeededDice(100 + seed))
        play_randomly(game, rng)
        length, [read] = read_mat(export_mat(game))
        assert length == 0
        again = replay(read)
        assert again.position == game.position
        assert again.outcome is not None and game.outcome is not None
        assert again.outcome.points == game.outcome.points
