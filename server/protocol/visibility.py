"""Who may see a game (pure): the one rule every route and message that shows a table or a
finished game asks.

A game's **audience** follows its table and its tournament:

- ``public``: a Competitive, Boosted or public tournament game. Listed in the lobby; anyone
  watches it, and reads its record, ``.mat``, review and history rows.
- ``room``: a private room's game (a room with a friend). Never listed; whoever holds the
  table's id may watch it (as a friend joins by it); its record, ``.mat``, review and history
  rows are for its own players only.
- ``private``: a private tournament's game. Never listed; its table (watch, chat, sync) and
  its record, ``.mat``, review and history rows are for its own players, the tournament's
  runner and the operators only.

A **viewer** is who asks: a signed-in player, a runner (by a runner key, HTTP only) or an
operator (``python -m server.admin``, which reads the store directly). A refusal is answered
as "not found" (``no_such_table``, ``no_such_game``), so a hidden game's existence is not
told. No I/O: the audience is kept with the table (its snapshot) and with each record, so one
read decides.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Reach(StrEnum):
    PUBLIC = "public"
    ROOM = "room"
    PRIVATE = "private"


@dataclass(frozen=True, slots=True)
class Audience:
    """Who may see a game: its ``reach`` and, for a private tournament's game, the name of
    the tournament's ``runner``."""

    reach: Reach = Reach.PUBLIC
    runner: str | None = None

    @property
    def listed(self) -> bool:
        """Whether public listings (the lobby, anyone's history) name the game."""
        return self.reach is Reach.PUBLIC

    def to_json(self) -> dict[str, Any]:
        return {"reach": str(self.reach), "runner": self.runner}

    @classmethod
    def from_json(cls, raw: object, *, mode: str) -> Audience:
        """The audience stored as :meth:`to_json` gave it; from ``mode`` alone for a table
        or record stored without one."""
        if isinstance(raw, Mapping):
            try:
                reach = Reach(str(raw.get("reach")))
            except ValueError:
                return audience_of(mode)
            runner = raw.get("runner")
            return cls(reach, None if runner is None else str(runner))
        return audience_of(mode)


PUBLIC = Audience()
ROOM = Audience(Reach.ROOM)


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who asks: ``player`` (a signed-in player's id), ``runner`` (a runner key's name) or an
    ``operator``; nobody of these is anyone."""

    player: str | None = None
    runner: str | None = None
    operator: bool = False


ANYONE = Viewer()


def audience_of(mode: str, tournament: Mapping[str, Any] | None = None) -> Audience:
    """The audience of a table of ``mode`` (``tournament``: its tournament's record, with
    ``visibility`` and ``owner``, the runner's name)."""
    if mode == "private":
        return ROOM
    if tournament is not None and tournament.get("visibility") == "private":
        owner = tournament.get("owner")
        return Audience(Reach.PRIVATE, str(owner) if owner else None)
    return PUBLIC


def may_see(audience: Audience, players: Collection[str], viewer: Viewer, *,
            live: bool = False) -> bool:
    """Whether ``viewer`` may see a game of ``audience`` played by ``players``: its live
    table (``live``: watch, chat, sync) or, once finished, its record, ``.mat``, review and
    history row."""
    reach = audience.reach
    if reach is Reach.PUBLIC or (live and reach is Reach.ROOM):
        return True
    if viewer.operator or (viewer.player is not None and viewer.player in players):
        return True
    return (reach is Reach.PRIVATE and viewer.runner is not None
            and viewer.runner == audience.runner)


def sees_hidden_rows(owner: str, viewer: Viewer) -> bool:
    """Whether ``viewer`` is shown the unlisted games (private rooms, private tournaments) in
    ``owner``'s history: only ``owner``, who played each of them (and an operator). Anyone
    else gets the listed ones."""
    return viewer.operator or viewer.player == owner
