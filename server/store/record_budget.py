"""The records' budget: finished games kept as records per account and per network address
in an hour (``records_per_hour``, ``records_per_hour_per_address``; on with ``limits``).

A record is kept 90 days (``game_record_ttl``), so games finished as fast as a client can
resign them would fill Redis; this bounds what one account, or one address, can make it
keep. Each budget is a set of the game ids recorded in its window, ``{rb:p:<player>}:recorded``
or ``{rb:n:<address>}:recorded`` (an IPv6 address stands for its /64), which expires an hour
after its first game; the set never holds more than the budget.

- :meth:`RecordBudget.admit`, at a game's end, before its record is written: the game is
  recorded only when every budget it counts against (each player's account and each
  distinct address; computer players and their node's address are left out) has room or
  counts it already, and is then added to each (``record_budget.lua``, idempotent by game
  id: a write tried again, or a node that takes the table over, counts it once). A game
  past the budget is settled as any other (the rating store does not depend on records):
  only its record, history rows and replay are not kept.
- :meth:`RecordBudget.wait`, when an account asks for new work (create a table, join one,
  queue, play the computer): how long until its account and its address have room again,
  so that it is refused (``rate_limited`` with ``retry_after``) instead of playing games that
  would not be recorded. A match under way goes on; its later games past the budget are not
  recorded.

The budgets of several keys are checked, then taken: two nodes ending games of one
address at the same moment may each find the last place, so a budget can be passed by the
games that end together, never by more.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import redis.asyncio as aioredis

from server.config import Settings
from server.protocol.ids import is_bot_id, network_key
from server.store.keys import Keys
from server.store.scripts import load_script

WINDOW = 3600.0
"""Seconds of one budget's window (an hour from its first game)."""


class Party(NamedTuple):
    """A player of a finished game as the budgets see it."""

    player: str
    address: str


class RecordBudget:
    """The budgets of recorded games (see the module)."""

    def __init__(self, redis: aioredis.Redis, keys: Keys, settings: Settings) -> None:
        self.redis = redis
        self.keys = keys
        on = settings.limits
        self.per_account = settings.records_per_hour if on else 0
        self.per_address = settings.records_per_hour_per_address if on else 0
        self._count = redis.register_script(load_script("record_budget.lua"))

    @property
    def enabled(self) -> bool:
        return bool(self.per_account or self.per_address)

    def _budgets(self, parties: Sequence[Party]) -> dict[str, int]:
        """Each budget the parties' game counts against: its key and its size."""
        budgets: dict[str, int] = {}
        for player, address in parties:
            if is_bot_id(player):
                continue
            if self.per_account:
                budgets[self.keys.records_budget("p:" + player)] = self.per_account
            if self.per_address:
                budgets[self.keys.records_budget("n:" + network_key(address))] = \
                    self.per_address
        return budgets

    async def admit(self, game_id: str, parties: Sequence[Party]) -> bool:
        """Whether the finished game ``game_id`` of ``parties`` is recorded: True (and
        counted in every budget) when each has room or counts it already."""
        budgets = self._budgets(parties)
        for key, size in budgets.items():
            if not await self._count(keys=[key], args=[game_id, size, int(WINDOW * 1000),
                                                       "check"]):
                return False
        for key, size in budgets.items():
            await self._count(keys=[key], args=[game_id, size, int(WINDOW * 1000), "take"])
        return True

    async def wait(self, player: str, address: str) -> float | None:
        """Seconds until ``player``'s account and ``address`` both have room for another
        recorded game, or None when they have now."""
        budgets = self._budgets([Party(player, address)])
        if not budgets:
            return None
        async with self.redis.pipeline(transaction=False) as pipe:
            for key in budgets:
                pipe.scard(key)
                pipe.pttl(key)
            replies = await pipe.execute()
        waits = [max(0, int(ttl)) / 1000 for (key, size), count, ttl
                 in zip(budgets.items(), replies[::2], replies[1::2], strict=True)
                 if int(count) >= size]
        return max(waits) if waits else None
