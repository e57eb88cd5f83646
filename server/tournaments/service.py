"""What the runner's API and the bracket driver share: seeding from the rating store, opening
a tournament table, awarding a podium and delivering tournament events (I/O shell)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from rating_plugin.errors import AlreadySettledConflict, InvalidInputError
from rating_plugin.store import RatingStore
from server.lobby.ports import TournamentTables
from server.protocol.errors import ErrorCode, ProtocolError
from server.protocol.messages import TableMode
from server.protocol.visibility import audience_of
from server.store.persistence import Persistence
from server.tables.ratings import RatingPlan
from server.tournaments.bracket import Entrant, seeding
from server.tournaments.events import (
    cancelled_events,
    podium_events,
    podium_record,
    private_podium_record,
)
from server.tournaments.store import TournamentStore

log = logging.getLogger(__name__)


class Tournaments:
    def __init__(self, store: TournamentStore, tables: TournamentTables,
                 persistence: Persistence, ratings: RatingStore) -> None:
        """``tables``: the lobby's part the tournaments use (a port, not the lobby)."""
        self.store = store
        self.tables = tables
        self.persistence = persistence
        self.ratings = ratings

    async def seeding(self, players: Sequence[str]) -> list[dict[str, Any]]:
        """The players in seed order: Table42 rating, best first, ties by player id; each with
        their FIBS standing (``is_new`` under 10 experience)."""
        entrants: list[Entrant] = []
        fibs: dict[str, Any] = {}
        for player in players:
            t42 = await self.ratings.rating(player, "table42")
            fr = await self.ratings.rating(player, "fibs")
            entrants.append(Entrant(player, int(t42.rating), fr.is_new))
            fibs[player] = {"rating": fr.rating, "shown": fr.shown, "is_new": fr.is_new,
                            "experience": fr.experience}
        return [
            {"seed": i + 1, "player": e.player, "rating": e.rating, "is_new": e.is_new,
             "fibs": fibs[e.player]}
            for i, e in enumerate(seeding(entrants))
        ]

    async def open_table(
        self, t: Mapping[str, Any], first: str, second: str,
        announce: Callable[[str], Awaitable[None]] | None = None,
    ) -> str:
        """Seat ``first`` and ``second`` at a new tournament table (never rated) and start it;
        the table joins the tournament's tables. A private tournament's table is seen by its
        players and the runner only (:func:`server.protocol.visibility.audience_of`).
        Raises ProtocolError (``already_seated``)."""
        length = int(t["format"].get("length", 0))

        async def announced(table: str, _plan: RatingPlan) -> None:
            await self.store.add_table(t["id"], table)
            if announce is not None:
                await announce(table)

        return await self.tables.start_rated_game(
            first, second, match_length=length or None, mode=TableMode.TOURNAMENT,
            tournament_id=t["id"], announce=announced,
            audience=audience_of(str(TableMode.TOURNAMENT), t),
        )

    async def award(self, t: Mapping[str, Any], players: list[str]) -> dict[str, Any]:
        """Award the podium of ``t`` once. Public: Table42 prizes through the rating store,
        pushed at once as ``rating`` events (reason ``podium``) and kept in the inboxes.
        Private: recorded, nothing awarded. A repeat with the same players returns the first
        award (``applied`` false); other players raise ``conflict``."""
        tid = t["id"]
        stored = t["podium"]
        if t["visibility"] == "private":
            if stored is not None:
                if [p["player"] for p in stored["places"]] != players:
                    raise ProtocolError(ErrorCode.CONFLICT,
                                        f"tournament {tid} has a podium with other players")
                return {**stored, "applied": False}
            podium = private_podium_record(tid, players, self.store.now())
            await self.store.set_podium(tid, podium)
            return {**podium, "applied": True}
        try:
            award = await self.ratings.award_podium(tid, players, list(t["prizes"]))
        except AlreadySettledConflict as exc:
            raise ProtocolError(ErrorCode.CONFLICT,
                                f"tournament {tid} was awarded to other players") from exc
        except InvalidInputError as exc:
            raise ProtocolError(ErrorCode.BAD_FIELD, str(exc), field="players") from exc
        podium = podium_record(award)
        if stored is None:
            # Not delivered yet (first call, or a call that stopped half-way): deliver now.
            await self.deliver(podium_events(t["name"], podium))
            await self.store.set_podium(tid, podium)
        return {**podium, "applied": award.applied}

    async def cancelled(self, t: Mapping[str, Any], tables: Sequence[str]) -> None:
        """After the runner cancelled ``t``: close its ``tables`` that are here or on a live
        node now (a running bracket's driver closes the rest at its next ticks) and tell
        every registered player (``tournament_cancelled``, pushed to connected players)."""
        for table in tables:
            try:
                await self.tables.cancel_tournament_table(table)
            except Exception:  # the driver tries again; a hand-opened table plays out
                log.exception("tournament %s: table %s not closed", t["id"], table)
        await self.deliver(cancelled_events(t))

    async def deliver(self, events: Sequence[tuple[str, dict[str, Any]]], *,
                      inbox: bool = True) -> None:
        """Keep each ``(player, event)`` in the player's inbox (once per ``event_id``;
        ``inbox`` False: the caller kept them already), then push it wherever the player is
        connected (any node). The node that writes it to a socket removes it from the inbox;
        a player connected nowhere gets it at the next connection."""
        if inbox and events:
            await self.persistence.keep_in_inbox(events)
        for player, event in events:
            try:
                await self.tables.push_to_player(player, event)
            except Exception:  # a push is best effort; the inbox and the bracket keep it
                log.exception("tournament event for %s not pushed", player)
