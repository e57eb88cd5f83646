"""Who may sit at, join and leave a table (pure): a new table's specification, a seat, and
what leaving does. Each check raises :class:`~server.protocol.errors.ProtocolError` with the
refusal's code and changes nothing; the machine checks again after the shell's awaits.

- a new table's specification (mode, match length, tournament, who opens it):
  :func:`check_new_table`, for a table a player creates and for a pair seated by matchmaking,
  a tournament or a game against the computer;
- who may sit: :func:`check_join` (before the shell takes the seat lock in Redis) and
  :func:`check_seat` (when the machine seats): an open table, a free seat, no computer player
  at a tournament table; one seat per player (:func:`already_seated`, from the seat lock's
  answer);
- what leaving does: :func:`leave_kind`.
"""

from __future__ import annotations

from collections.abc import Sequence

from server.protocol.errors import ErrorCode, ProtocolError
from server.protocol.messages import TableMode
from server.rules import Side
from server.tables.model import BOT_PREFIX, LeaveKind, TableState, TableStatus


def already_seated(held: str, *, player: str | None = None,
                   field: str = "table") -> ProtocolError:
    """The refusal of a seat to a player whose seat lock is held at table ``held`` (a player
    holds one seat at a time). ``player``: name the player (a pair seated by a server
    component), else the message speaks to the player who asked."""
    who = "you already hold" if player is None else f"{player} already holds"
    return ProtocolError(ErrorCode.ALREADY_SEATED, f"{who} a seat at table {held}",
                         field=field)


def bot_not_allowed(field: str) -> ProtocolError:
    """The refusal of a computer player at a tournament table (``field``: what names it)."""
    return ProtocolError(ErrorCode.BOT_NOT_ALLOWED,
                         "computer players do not play in tournaments", field=field)


def check_new_table(
    mode: TableMode,
    match_length: int | None,
    tournament_id: str | None,
    players: Sequence[str],
    *,
    max_match_length: int,
    by_player: bool,
) -> int:
    """Check a new table's specification before anything is stored; returns its match
    length (0: a single game). Raises ProtocolError; validates everything it is given.

    ``by_player``: a player opens it (``create_table``; ``players`` is the creator): any mode
    but ``tournament`` (only a tournament opens its tables; a computer player asking is
    ``bot_not_allowed``, no ``tournament_id`` is ``missing_field``), ``match_length``
    0..``max_match_length``. Else a server component seats a pair (matchmaking, a
    tournament, a game against the computer; ``players`` are the two, sides 0 and 1): two
    different players (``same_player``), mode ``competitive``, ``boosted`` or ``tournament``,
    a ``tournament_id`` exactly for a tournament table, ``match_length`` None (a single game)
    or 1..``max_match_length``, no computer player at a tournament table."""
    tournament = mode is TableMode.TOURNAMENT
    if by_player:
        if match_length is None or not 0 <= match_length <= max_match_length:
            raise ProtocolError(ErrorCode.BAD_FIELD,
                                f"field 'match_length' must be in 0..{max_match_length}",
                                field="match_length")
        if tournament:
            if any(p.startswith(BOT_PREFIX) for p in players):
                raise bot_not_allowed("mode")
            if tournament_id is None:
                raise ProtocolError(ErrorCode.MISSING_FIELD,
                                    "field 'tournament_id' is required for a tournament table",
                                    field="tournament_id")
            # A tournament's tables are opened by its bracket (or its runner) for the two
            # players of a match; a player opening one would play a game the tournament
            # never scheduled.
            raise ProtocolError(ErrorCode.BAD_FIELD,
                                "tournament tables are opened by the tournament, not by "
                                "players", field="mode")
        return match_length
    first, second = players
    if first == second:
        raise ProtocolError(ErrorCode.SAME_PLAYER, "a player cannot play themselves",
                            field="second")
    if mode not in (TableMode.COMPETITIVE, TableMode.BOOSTED, TableMode.TOURNAMENT):
        raise ProtocolError(ErrorCode.BAD_FIELD,
                            "mode must be competitive, boosted or tournament", field="mode")
    if tournament != (tournament_id is not None):
        raise ProtocolError(ErrorCode.BAD_FIELD,
                            "a tournament table (and only one) needs a tournament_id",
                            field="tournament_id")
    length = 0 if match_length is None else match_length
    if not 0 <= length <= max_match_length or match_length == 0:
        raise ProtocolError(ErrorCode.BAD_FIELD,
                            f"match_length must be None or 1..{max_match_length}",
                            field="match_length")
    if tournament:
        for slot, player in (("first", first), ("second", second)):
            if player.startswith(BOT_PREFIX):
                raise bot_not_allowed(slot)
    return length


def check_join(t: TableState, player: str, *, is_bot: bool) -> int | None:
    """May ``player`` sit at ``t``? The side they would take, or None when they are seated
    there already (the answer is a ``resume``). Raises ``bot_not_allowed`` (a computer player
    at a tournament table), ``table_full`` (not open, no free seat, or another player being
    seated)."""
    if t.side_of(player) is not None:
        return None
    if t.mode is TableMode.TOURNAMENT and is_bot:
        raise bot_not_allowed("table")
    side = t.free_side()
    if t.status is not TableStatus.OPEN or side is None or t.joining is not None:
        raise not_open(t)
    return side


def check_seat(t: TableState, side: int, player: str, *, is_bot: bool) -> None:
    """May ``player`` take seat ``side`` now? Raises ``table_full`` (the table is not open,
    the seat is taken, or another player is being seated), ``already_seated`` (the player sits
    here already), ``bot_not_allowed`` (a computer player at a tournament table)."""
    if t.side_of(player) is not None:
        raise already_seated(t.id)
    if t.mode is TableMode.TOURNAMENT and is_bot:
        raise bot_not_allowed("table")
    if (t.status is not TableStatus.OPEN or side not in (0, 1)
            or t.seats[side] is not None or t.joining not in (None, player)):
        raise not_open(t)


def not_open(t: TableState) -> ProtocolError:
    return ProtocolError(ErrorCode.TABLE_FULL, f"table {t.id} is not open", field="table")


def leave_kind(t: TableState, player: str) -> tuple[Side, LeaveKind]:
    """What ``player`` leaving ``t`` does (:class:`LeaveKind`): an open table closes; a game
    in play (or a match between its games) is forfeited; else (finished, or a game being
    settled) only the leaver's seat is given back. Raises ``not_seated``."""
    side = t.side_of(player)
    if side is None:
        raise ProtocolError(ErrorCode.NOT_SEATED, f"you are not at table {t.id}",
                            field="table")
    if t.status is TableStatus.OPEN:
        return side, LeaveKind.CLOSE
    if t.status is TableStatus.PLAYING and not t.finishing:
        return side, LeaveKind.FORFEIT
    return side, LeaveKind.RELEASE


__all__ = [
    "already_seated",
    "bot_not_allowed",
    "check_join",
    "check_new_table",
    "check_seat",
    "leave_kind",
    "not_open",
]
