"""Finished games' records, each player's history of them, and the table chat kept with them.

The one module that reads and writes game records in Redis (records are built by the pure
``server/tables/records.py``):

- ``{g:<game_id>}:record``: the record, zlib-compressed msgpack, kept ``game_record_ttl``;
- per player ``{p:P}:games`` (every game), ``{p:P}:games:public`` (the games anyone may
  see) and ``{p:P}:game_rows`` (that player's row of each), updated together by
  ``game_index.lua`` and read a page at a time by ``game_page.lua`` (one slot each);
- per table and game ``{t:T}:chat:<game_no>``: the chat messages of that game (JSON), written
  as they are sent and kept as long as the record; a replay reads them beside the record.

Writing a record is idempotent by game id (the same record and rows are set again), so the
table driver may retry it, and a node taking a table over may write one that is missing.
"""

from __future__ import annotations

import importlib.resources
import json
import time
import zlib
from collections.abc import Awaitable
from typing import Any, TypeVar, cast

import msgpack
import redis.asyncio as aioredis

from server.config import Settings
from server.store.keys import Keys
from server.tables.records import game_row, is_private

T = TypeVar("T")


def _aw(value: Awaitable[T] | T) -> Awaitable[T]:
    return cast(Awaitable[T], value)


def _load_script(name: str) -> str:
    return importlib.resources.files("server.store").joinpath("lua", name).read_text("utf-8")


def pack_record(record: dict[str, Any]) -> bytes:
    return zlib.compress(msgpack.packb(record, use_bin_type=True), 6)


def unpack_record(raw: bytes) -> dict[str, Any]:
    return dict(msgpack.unpackb(zlib.decompress(raw), raw=False))


class GameRecords:
    """Finished games' records and per-player history (see the module docstring)."""

    def __init__(self, redis: aioredis.Redis, keys: Keys, settings: Settings) -> None:
        self.redis = redis
        self.keys = keys
        self.settings = settings
        self._index = redis.register_script(_load_script("game_index.lua"))
        self._page = redis.register_script(_load_script("game_page.lua"))
        self._online = redis.register_script(_load_script("online_count.lua"))

    @property
    def _ttl_ms(self) -> int:
        return int(self.settings.game_record_ttl * 1000)

    async def save(self, record: dict[str, Any]) -> None:
        """Store ``record`` (``server.tables.records.game_record``) and index it in both
        players' histories. Idempotent: saving the same record again changes nothing."""
        keys = self.keys
        game_id = str(record["game_id"])
        await self.redis.set(keys.game_record(game_id), pack_record(record), px=self._ttl_ms)
        public = "0" if is_private(record) else "1"
        cutoff = time.time() - self.settings.game_record_ttl
        for player in dict.fromkeys(record["players"]):
            row = json.dumps(game_row(record, player), separators=(",", ":"))
            await self._index(
                keys=[keys.player_games(player), keys.player_games(player, public=True),
                      keys.player_game_rows(player)],
                args=[game_id, record["finished_at"], row, public,
                      self.settings.game_index_max, self._ttl_ms, cutoff],
            )

    async def exists(self, game_id: str) -> bool:
        return bool(await self.redis.exists(self.keys.game_record(game_id)))

    async def load(self, game_id: str) -> dict[str, Any] | None:
        """The record of the finished game ``game_id`` (events in the lean form, as logged)
        with ``chat``: its chat messages, oldest first; None when no record is kept."""
        keys = self.keys
        raw = await self.redis.get(keys.game_record(game_id))
        if raw is None:
            return None
        record = unpack_record(raw)
        chat = await _aw(self.redis.lrange(
            keys.table_chat(str(record["table"]), int(record.get("game_no") or 1)), 0, -1))
        record["chat"] = [json.loads(m) for m in chat]
        return record

    async def page(self, player: str, *, offset: int, limit: int, private: bool
                   ) -> tuple[int, list[dict[str, Any]]]:
        """A page of ``player``'s games, newest first, and how many there are; ``private``:
        the private games too (only for the player themself)."""
        keys = self.keys
        cutoff = time.time() - self.settings.game_record_ttl
        reply = await self._page(
            keys=[keys.player_games(player, public=not private), keys.player_game_rows(player)],
            args=[offset, limit, cutoff],
        )
        return int(reply[0]), [json.loads(r) for r in reply[1:]]

    async def online(self) -> int:
        """Authenticated players connected over the live nodes (each node's own count)."""
        return int(await self._online(keys=[self.keys.nodes, self.keys.online],
                                      args=[int(time.time() * 1000)]))
