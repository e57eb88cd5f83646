"""The pair limit at the start of a rated game (settings ``pair_limit`` in ``pair_window``)."""

from __future__ import annotations

import logging

from redis.exceptions import RedisError

from rating_plugin.store import RatingStore
from server.config import Settings
from server.lobby.ports import Clock
from server.protocol.errors import ErrorCode, ProtocolError
from server.protocol.messages import TableMode
from server.tables.ratings import RatedPlayer, counts_for_pair_limit

__all__ = ["PairLimit"]

log = logging.getLogger("server.lobby")


class PairLimit:
    """Counts the rated games of each pair in the rating store."""

    def __init__(self, settings: Settings, ratings: RatingStore, clock: Clock) -> None:
        self.settings = settings
        self.ratings = ratings
        self.clock = clock

    async def limited(self, game_id: str, mode: TableMode, match_length: int,
                      players: tuple[RatedPlayer, RatedPlayer]) -> bool:
        """Count a game about to start against its pair's limit, if it would be rated: True
        when the limit refuses it a rating. One script in the rating store, idempotent by
        ``game_id`` (the table id: a match counts once). Raises ``unavailable`` when Redis
        is away (the game does not start)."""
        limit = self.settings.pair_limit
        if limit <= 0 or not counts_for_pair_limit(mode, match_length, players):
            return False
        try:
            reservation = await self.ratings.reserve_pair_game(
                game_id, players[0].player, players[1].player, at=self.clock.now(),
                limit=limit, window=self.settings.pair_window)
        except (RedisError, OSError) as exc:
            raise ProtocolError(ErrorCode.UNAVAILABLE, "Redis is unavailable") from exc
        if not reservation.rated:
            log.info("table %s: %s and %s played %d rated games in the pair window: unrated",
                     game_id, players[0].player, players[1].player, reservation.games)
        return not reservation.rated
