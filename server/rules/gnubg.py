"""GNU Backgammon's Position ID and Match ID, and ``legal_position_ids`` for bots.

Position ID (GNU Backgammon manual §11.6, ``positionid.c``): a bit string built point by
point, for each side from its own ace point up to its 24 point and then its bar: as many
1s as it has checkers there, then a 0; 80 bits in all (zero padded), packed into 10 bytes
least significant bit first, written as the first 14 characters of their base64.

Which side comes first: GNU Backgammon's code (``PositionKey`` over ``anBoard[0]`` then
``anBoard[1]``, where ``anBoard[1]`` is always the side on roll, the side its move
generator moves) encodes the side NOT on roll first and the side on roll second; every ID
it shows and accepts follows the code, though the manual's prose says the reverse. This
module follows the code (as do other engines that exchange IDs with it, e.g. wildbg). The
standard starting position is ``4HPwATDgc/ABMA`` either way.

Match ID (manual §11.7, ``matchid.c``): bits in 9 bytes, least significant bit first,
12 base64 characters: cube log2 (4 bits), cube owner (2: 0, 1, or 3 = centred), side on
roll (1), Crawford game (1), game state (3: 0 none, 1 playing, 2 over, 3 resigned,
4 dropped), side to decide (1), double offered (1), resignation offered (2: 0 none,
1 single, 2 gammon, 3 backgammon), die 1 (3), die 2 (3), match length (15, 0 = money),
score of side 0 (15), score of side 1 (15); current GNU Backgammon adds bit 66, set when
the Jacoby rule is NOT in use (this server never uses it, so the bit is set) and writes
the larger die first. IDs from before that bit read as "Jacoby on", as GNU Backgammon
reads them. GNU Backgammon refuses a score above the match length, so a finished match's
score is capped at the length in its Match ID.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from server.protocol.errors import ErrorCode
from server.rules.dice import Roll, check_roll
from server.rules.errors import InvalidIdError
from server.rules.game import EndReason, Game, Phase
from server.rules.moves import legal_results
from server.rules.position import BAR, CHECKERS, Position, ResultKind, Side

if TYPE_CHECKING:
    from server.rules.match import Match

_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_CHARS = frozenset(_B64)


def _key_bits(position: Position, on_roll: Side) -> int:
    """The 80-bit key as an int (bit 0 first): the side not on roll, then the side on roll."""
    board = position.board
    # Each side's checkers from its own ace point up to its 24 point, then its bar, written
    # as n ones and a zero per point; the string is read back to front as binary.
    zero = "".join(_UNARY[n if n > 0 else 0] for n in board) + _UNARY[position.bar[0]]
    one = "".join(_UNARY[-n if n < 0 else 0] for n in reversed(board)) + _UNARY[position.bar[1]]
    bits = one + zero if on_roll == Side.ZERO else zero + one
    return int(bits[::-1], 2)


_UNARY = tuple("1" * n + "0" for n in range(16))


def position_id(position: Position, on_roll: Side | None = None) -> str:
    """The GNU Backgammon Position ID of ``position`` with ``on_roll`` (default: the side
    to move) as the player on roll."""
    side = position.turn if on_roll is None else Side(on_roll)
    key = _key_bits(position, side).to_bytes(10, "little")
    return base64.b64encode(key).decode("ascii")[:14]


def decode_position_id(pid: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(on roll, not on roll)``: each side's checkers in its own numbering as 26-tuples
    (index 0 off, 1..24 points, 25 bar). Raises ``InvalidIdError`` for a malformed ID,
    more than 15 checkers a side, or both sides on one point."""
    if not isinstance(pid, str) or len(pid) != 14 or not set(pid) <= _B64_CHARS:
        raise InvalidIdError(
            f"position ID must be 14 base64 characters, got {pid!r}",
            code=ErrorCode.INVALID_POSITION_ID
        )
    value = int.from_bytes(base64.b64decode(pid + "=="), "little")
    sides: list[list[int]] = []
    bit = 0
    for _ in range(2):
        counts = [0] * 26
        for point in range(1, 26):
            while bit < 80 and value >> bit & 1:
                counts[point] += 1
                bit += 1
            bit += 1
        total = sum(counts)
        if total > CHECKERS:
            raise InvalidIdError(
                f"position ID {pid!r} has {total} checkers for one side",
                code=ErrorCode.INVALID_POSITION_ID
            )
        counts[0] = CHECKERS - total
        sides.append(counts)
    not_on_roll, on_roll = sides
    for point in range(1, 25):
        if on_roll[point] and not_on_roll[25 - point]:
            raise InvalidIdError(
                f"position ID {pid!r} puts both sides on one point",
                code=ErrorCode.INVALID_POSITION_ID
            )
    return tuple(on_roll), tuple(not_on_roll)


def position_from_id(pid: str, turn: Side = Side.ZERO) -> Position:
    """The position a Position ID describes, with its player on roll as ``turn``."""
    on_roll, other = decode_position_id(pid)
    mover = Side(turn)
    mine = list(on_roll)
    theirs = [0] * 26
    for point in range(1, 25):
        theirs[point] = other[25 - point]
    theirs[0], theirs[BAR] = other[0], other[BAR]
    return Position.from_mover_view(mine, theirs, mover)


def legal_position_ids(position_id_text: str, roll: Roll) -> set[str]:
    """The Position IDs reachable from ``position_id_text`` by the legal plays of ``roll``.

    A stable function for bots and tools. The input is a GNU Backgammon Position ID with
    the player on roll placed as GNU Backgammon's software places it (see the module
    docstring); each returned ID describes the position after one legal play, before the
    turn passes, so the same player is still "on roll" in it. One ID per distinct
    resulting position; when no checker can move the set holds the unchanged position.
    From the starting position ``4HPwATDgc/ABMA``, 6-5 reaches 7 IDs and 1-1 reaches 42.
    Raises ``InvalidIdError`` (a ``ValueError``) for a bad ID and ``ValueError`` for a bad
    roll.
    """
    position = position_from_id(position_id_text)
    dice = check_roll(roll)
    return {position_id(after) for after in legal_results(position, dice)}


# -- Match ID ---------------------------------------------------------------------------------

_GAME_STATES = {"none": 0, "playing": 1, "over": 2, "resigned": 3, "dropped": 4}
_RESIGN_LEVEL = {ResultKind.SINGLE: 1, ResultKind.GAMMON: 2, ResultKind.BACKGAMMON: 3}


@dataclass(frozen=True, slots=True)
class MatchState:
    """The fields of a Match ID (see the module docstring for the layout)."""

    cube: int
    cube_owner: Side | None
    on_roll: Side
    crawford: bool
    game_state: str
    to_act: Side
    double_offered: bool
    resignation: ResultKind | None
    dice: tuple[int, int] | None
    match_length: int
    score: tuple[int, int]
    jacoby: bool = False


_FIELDS = (  # (bit position, width)
    ("cube", 0, 4),
    ("owner", 4, 2),
    ("move", 6, 1),
    ("crawford", 7, 1),
    ("state", 8, 3),
    ("turn", 11, 1),
    ("doubled", 12, 1),
    ("resigned", 13, 2),
    ("die1", 15, 3),
    ("die2", 18, 3),
    ("length", 21, 15),
    ("score0", 36, 15),
    ("score1", 51, 15),
    ("no_jacoby", 66, 1),
)


def encode_match_state(state: MatchState) -> str:
    """The 12-character Match ID of ``state`` (dice written larger first)."""
    dice = sorted(state.dice, reverse=True) if state.dice else [0, 0]
    fields = {
        "cube": state.cube.bit_length() - 1,
        "owner": 3 if state.cube_owner is None else int(state.cube_owner),
        "move": int(state.on_roll),
        "crawford": int(state.crawford),
        "state": _GAME_STATES[state.game_state],
        "turn": int(state.to_act),
        "doubled": int(state.double_offered),
        "resigned": 0 if state.resignation is None else _RESIGN_LEVEL[state.resignation],
        "die1": dice[0],
        "die2": dice[1],
        "length": state.match_length,
        "score0": state.score[0],
        "score1": state.score[1],
        "no_jacoby": int(not state.jacoby),
    }
    value = 0
    for name, at, width in _FIELDS:
        field = fields[name]
        if not 0 <= field < 1 << width:
            raise ValueError(f"match ID field {name} out of range: {field}")
        value |= field << at
    return base64.b64encode(value.to_bytes(9, "little")).decode("ascii")


def decode_match_id(mid: str) -> MatchState:
    """The fields of a 12-character Match ID; ``InvalidIdError`` when malformed."""
    if not isinstance(mid, str) or len(mid) != 12 or not set(mid) <= _B64_CHARS:
        raise InvalidIdError(
            f"match ID must be 12 base64 characters, got {mid!r}", code=ErrorCode.INVALID_MATCH_ID
        )
    value = int.from_bytes(base64.b64decode(mid), "little")
    f = {name: value >> at & ((1 << width) - 1) for name, at, width in _FIELDS}
    states = {v: k for k, v in _GAME_STATES.items()}
    if f["state"] not in states or f["owner"] == 2 or f["die1"] > 6 or f["die2"] > 6:
        raise InvalidIdError(
            f"match ID {mid!r} has an impossible field",
            code=ErrorCode.INVALID_MATCH_ID
        )
    if (f["die1"] == 0) != (f["die2"] == 0):
        raise InvalidIdError(f"match ID {mid!r} has only one die", code=ErrorCode.INVALID_MATCH_ID)
    levels = {v: k for k, v in _RESIGN_LEVEL.items()}
    return MatchState(
        cube=1 << f["cube"],
        cube_owner=None if f["owner"] == 3 else Side(f["owner"]),
        on_roll=Side(f["move"]),
        crawford=bool(f["crawford"]),
        game_state=states[f["state"]],
        to_act=Side(f["turn"]),
        double_offered=bool(f["doubled"]),
        resignation=levels.get(f["resigned"]),
        dice=(f["die1"], f["die2"]) if f["die1"] else None,
        match_length=f["length"],
        score=(f["score0"], f["score1"]),
        jacoby=not f["no_jacoby"],
    )


def match_state(game_or_match: Game | Match) -> MatchState:
    """The Match ID fields of a game (money play unless it belongs to a match) or of a
    match's current game."""
    return MatchState(*_match_fields(game_or_match))


_Fields = tuple[
    int, Side | None, Side, bool, str, Side, bool, ResultKind | None, Roll | None, int,
    tuple[int, int],
]


def _match_fields(game_or_match: Game | Match) -> _Fields:
    if isinstance(game_or_match, Game):
        game = game_or_match
        length, score = game.match_length, game.score
        if game.outcome is not None:
            points = [score[0], score[1]]
            points[game.outcome.winner] += game.outcome.points
            score = (points[0], points[1])
    else:
        length, score = game_or_match.length, game_or_match.score
        if game_or_match.game is None:
            return (1, None, Side.ZERO, False, "none", Side.ZERO, False, None, None, length,
                    score)
        game = game_or_match.game
    on_roll = game.turn if game.turn is not None else Side.ZERO
    if game.phase == Phase.OPENING:
        state = "none"
    elif game.outcome is None:
        state = "playing"
    elif game.outcome.reason == EndReason.DROP:
        state = "dropped"
    elif game.outcome.reason == EndReason.NORMAL:
        state = "over"
    else:
        state = "resigned"
    if length:
        score = (min(score[0], length), min(score[1], length))
    to_act = game.to_act
    return (
        game.cube,
        game.cube_owner,
        on_roll,
        game.crawford,
        state,
        to_act if to_act is not None else on_roll,
        game.phase == Phase.DOUBLE_OFFERED,
        game.resignation.kind if game.resignation is not None else None,
        game.dice if game.phase == Phase.MOVE else None,
        length,
        score,
    )


def match_id(game_or_match: Game | Match) -> str:
    """The GNU Backgammon Match ID of a game or of a match's current game."""
    return _match_id_of(*_match_fields(game_or_match))


@lru_cache(maxsize=2048)
def _match_id_of(*fields: Any) -> str:
    # Few distinct Match IDs occur (cube, turn, dice, score ...); one is needed per event.
    return encode_match_state(MatchState(*fields))
