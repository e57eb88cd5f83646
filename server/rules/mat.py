"""Export games and matches as Jellyfish ``.mat`` text, the way GNU Backgammon writes it.

The layout follows GNU Backgammon's own exporter (``export.c``, ``ExportGameJF``) so that
its importer (``import.c``, ``ImportGame``/``ParseMatMove``) reads it back:

- ``; [Key "value"]`` comment lines (optional), a blank line, then `` N point match``
  (0 for a game played for money).
- Per game: `` Game k``, then `` name0 : score0`` padded to 32 columns and
  ``name1 : score1``, then one line per move number: side 0's entry in the left column
  (``"%3d) %-27s "``), side 1's on the right. A play is ``"62: 24/18 13/11"`` (one step
  per die, 25 = bar, 0 = off, ``*`` on a hit); a roll that cannot be played is ``"62: "``;
  cube actions are `` Doubles => 2``, `` Takes``, `` Drops``.
- The game ends with ``Wins n point(s)`` in the winner's column. A resignation or a
  forfeit is written only as that line, which GNU Backgammon reads as a resignation worth
  the points shown (single at the cube for a forfeit).

Games must start from the standard position (``.mat`` cannot say otherwise).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING

from server.rules.game import Game, Outcome
from server.rules.position import Play, Position, Side

if TYPE_CHECKING:
    from server.rules.match import Match

_LEFT_WIDTH = 34
"""Where the right column starts: ``"%3d) "`` (5) + 27 + one space, plus one more."""
_NAME_OK = re.compile(r"[^A-Za-z0-9_.\-]+")


def export_mat(
    match_or_game: Match | Game,
    *,
    names: Sequence[str] = ("Player0", "Player1"),
    site: str | None = None,
    event: str | None = None,
    date: str | None = None,
) -> str:
    """Jellyfish ``.mat`` text of a match (every game so far) or of a single game.

    ``names`` are side 0's and side 1's; characters other than letters, digits, ``_.-``
    become ``_`` and names are cut to 31 characters (GNU Backgammon's limit). ``date`` is
    ``YYYY.MM.DD``. A game still in progress is written up to its last action.
    """
    from server.rules.match import Match

    if len(names) != 2:
        raise ValueError(f"names must be two strings, got {names!r}")
    clean = [
        _NAME_OK.sub("_", str(name).strip())[:31] or f"Player{i}" for i, name in enumerate(names)
    ]
    lines: list[str] = []
    for key, value in (("Site", site), ("Event", event), ("EventDate", date)):
        if value:
            lines.append(f'; [{key} "{_NAME_OK.sub("_", value)[:60]}"]')
    lines.append("")
    if isinstance(match_or_game, Match):
        games = list(match_or_game.games)
        length = match_or_game.length
    else:
        games = [match_or_game]
        length = match_or_game.match_length
    text = "\n".join(lines) + f"\n {length} point match\n\n"
    for number, game in enumerate(games, start=1):
        text += _export_game(game, number, clean)
    return text


def _export_game(game: Game, number: int, names: list[str]) -> str:
    score = game.score
    out = [f" Game {number}\n", f" {f'{names[0]} : {score[0]}':<31} {names[1]} : {score[1]}\n"]
    # Entries alternate sides (a play, a double and its answer, the next play ...), so
    # side 0's land in the left column and side 1's in the right.
    entries: list[str] = []
    position = game.initial_position
    cube = 1
    for record in game.history:
        if not entries and record.side == Side.ONE:
            entries.append("")
        if record.kind == "play":
            assert record.dice is not None and record.play is not None
            position = position.with_turn(record.side)
            moves = _plain(record.play, position)
            entries.append(f"{record.dice[0]}{record.dice[1]}:" + (f" {moves}" if moves else ""))
            position = position.apply(record.play)
        elif record.kind == "double":
            cube *= 2
            entries.append(f" Doubles => {cube}")
        elif record.kind == "take":
            entries.append(" Takes")
        elif record.kind == "drop":
            entries.append(" Drops")
    open_line = ""
    for index in range(0, len(entries), 2):
        left = entries[index]
        # At least two spaces before the right column: GNU Backgammon's importer splits a
        # line without two "dd:" rolls at the first double space after column 15.
        line = f"{index // 2 + 1:3d}) {left:<27} " + (" " if len(left) >= 27 else "")
        if index + 1 < len(entries):
            out.append(line + entries[index + 1] + "\n")
        else:
            open_line = line
    if game.outcome is not None:
        out.append(_wins(game.outcome, open_line))
    elif open_line:
        out.append(open_line.rstrip() + "\n")
    return "".join(out)


def _wins(outcome: Outcome, open_line: str) -> str:
    points = outcome.points
    wins = f"Wins {points} point{'s' if points > 1 else ''}"
    if outcome.winner == Side.ZERO:
        head = open_line.rstrip() + "\n" if open_line else ""
        return f"{head}      {wins}\n\n"
    if open_line:
        return f"{open_line:<{_LEFT_WIDTH}}{wins}\n\n"
    return f"{'':<{_LEFT_WIDTH}}{wins}\n\n"


def _plain(play: Play, position: Position) -> str:
    """One ``from/to`` per die, ``*`` on a hit, 25 for the bar and 0 for off."""
    _, theirs = position.mover_view()
    parts = []
    for src, dst in play:
        hit = dst > 0 and theirs[dst] == 1
        if hit:
            theirs[dst] = 0
        parts.append(f"{src}/{dst}{'*' if hit else ''}")
    return " ".join(parts)



# -- reading ----------------------------------------------------------------------------------

MAX_MAT_TEXT = 2_000_000
"""Longest ``.mat`` text :func:`import_mat` reads (a long match is a few hundred KB)."""


@dataclass(frozen=True, slots=True)
class MatAction:
    """One entry of a ``.mat`` game: ``kind`` is ``play`` (``dice``, ``steps`` in the
    mover's numbering, 25 the bar, 0 off; no steps: the roll could not be played),
    ``double`` (``value``: the cube offered), ``take``, ``drop`` or ``win`` (``value``:
    the points)."""

    side: Side
    kind: str
    dice: tuple[int, int] | None = None
    steps: tuple[tuple[int, int], ...] = ()
    value: int = 0


@dataclass(slots=True)
class MatGame:
    """A game read from a ``.mat`` file: its number, the players' names and scores before
    it, the match length (0: money) and its entries in order."""

    number: int
    match_length: int
    names: tuple[str, str] = ("Player0", "Player1")
    score: tuple[int, int] = (0, 0)
    actions: list[MatAction] = field(default_factory=list)


_ENTRY = re.compile(
    r"(?P<d1>[1-6])(?P<d2>[1-6]):(?P<play>(?:[ \t]*(?:\d+|bar|off)(?:/(?:\d+|bar|off)\*?)+"
    r"(?:\(\d\))?)*)"
    r"|Doubles\s*=>\s*(?P<cube>\d+)|(?P<take>Takes)|(?P<drop>Drops)"
    r"|Wins\s+(?P<points>\d+)\s+points?",
    re.IGNORECASE,
)
_RIGHT_COLUMN = 20
"""An entry starting at this column or further right is the second player's."""


def _point(text: str) -> int:
    text = text.lower().rstrip("*")
    if text == "bar":
        return 25
    if text == "off":
        return 0
    value = int(text)
    if not 0 <= value <= 25:
        raise ValueError(f"point {value} out of range")
    return value


def _steps(text: str) -> tuple[tuple[int, int], ...]:
    steps: list[tuple[int, int]] = []
    for token in text.split():
        count = 1
        repeat = re.fullmatch(r"(.*)\((\d)\)", token)
        if repeat:
            token, count = repeat.group(1), int(repeat.group(2))
        points = [_point(p) for p in token.split("/")]
        chain = list(pairwise(points))
        steps.extend(chain * count)
    return tuple(steps)


def import_mat(text: str) -> list[MatGame]:
    """The games of a Jellyfish ``.mat`` text (as :func:`export_mat` and GNU Backgammon
    write it): one :class:`MatGame` per `` Game n``. Raises ValueError for a text that is
    too long or has moves outside a game."""
    if len(text) > MAX_MAT_TEXT:
        raise ValueError(f".mat text longer than {MAX_MAT_TEXT} characters")
    length = 0
    games: list[MatGame] = []
    current: MatGame | None = None
    named = False
    for raw in text.splitlines():
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped or stripped.startswith(";"):
            continue
        header = re.fullmatch(r"(\d+)\s+point\s+match", stripped, re.IGNORECASE)
        if header:
            length = int(header.group(1))
            continue
        number = re.fullmatch(r"Game\s+(\d+)", stripped, re.IGNORECASE)
        if number:
            current = MatGame(int(number.group(1)), length)
            games.append(current)
            named = False
            continue
        if current is None:
            continue
        if not named:
            names = re.fullmatch(r"(\S+)\s*:\s*(\d+)\s+(\S+)\s*:\s*(\d+)", stripped)
            if names:
                current.names = (names.group(1), names.group(3))
                current.score = (int(names.group(2)), int(names.group(4)))
                named = True
                continue
        numbered = re.match(r"\s*\d+\)", line)
        start = numbered.end() if numbered else 0
        first = True
        for entry in _ENTRY.finditer(line, start):
            at = entry.start()
            side = Side.ONE if at >= _RIGHT_COLUMN or not first else Side.ZERO
            first = False
            if entry.group("d1"):
                dice = (int(entry.group("d1")), int(entry.group("d2")))
                action = MatAction(side, "play", dice, _steps(entry.group("play") or ""))
            elif entry.group("cube"):
                action = MatAction(side, "double", value=int(entry.group("cube")))
            elif entry.group("take"):
                action = MatAction(side, "take")
            elif entry.group("drop"):
                action = MatAction(side, "drop")
            else:
                action = MatAction(side, "win", value=int(entry.group("points")))
            current.actions.append(action)
    return games
