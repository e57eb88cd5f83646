"""Finished games' records, each player's history of them, and the table chat kept with them.

The one module that reads and writes game records in Redis (records are built by the pure
``server/tables/records.py``):

- ``{g:<game_id>}:record``: the record, zlib-compressed msgpack, kept ``game_record_ttl``;
- per player ``{p:P}:games`` (every game), ``{p:P}:games:public`` (the games anyone may
  see) and ``{p:P}:game_rows`` (that player's row of each), updated together by
  ``game_index.lua`` and read a page at a time by ``game_page.lua`` (one slot each);
- per table and game ``{t:T}:chat:<game_no>``: the chat messages of that game (JSON), written
  as they are sent and kept as long as the record; a replay reads them beside the record;
- chat moderation: each player's muted players (``{p:P}:muted``), an operator's mute
  (``{p:P}:chat_mute``: until when) and the reported messages (``{reports}:chat``).

Writing a record is idempotent by game id (the same record and rows are set again), so the
table driver may retry it, and a node taking a table over may write one that is missing.
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Awaitable
from typing import Any, TypeVar, cast

import msgpack
import msgspec
import redis.asyncio as aioredis

from server.config import Settings
from server.protocol.node_messages import ChatMute, encode
from server.store.keys import Keys
from server.store.scripts import load_script
from server.tables.records import game_row, is_private

T = TypeVar("T")


def _aw(value: Awaitable[T] | T) -> Awaitable[T]:
    return cast(Awaitable[T], value)




_encoder = msgspec.msgpack.Encoder()


def pack_record(record: dict[str, Any]) -> bytes:
    """A record as stored: msgpack (its events kept as the log's msgpack bytes, not packed
    again), compressed at zlib's fastest level (a third of the time of its default for about
    an eighth more bytes)."""
    return zlib.compress(_encoder.encode(record), 1)


def unpack_record(raw: bytes) -> dict[str, Any]:
    """A stored record with its events decoded (maps)."""
    record = dict(msgspec.msgpack.decode(zlib.decompress(raw)))
    record["events"] = [msgpack.unpackb(e) if isinstance(e, bytes) else e
                        for e in record.get("events") or ()]
    return record


class GameRecords:
    """Finished games' records and per-player history (see the module docstring)."""

    def __init__(self, redis: aioredis.Redis, keys: Keys, settings: Settings) -> None:
        self.redis = redis
        self.keys = keys
        self.settings = settings
        self._index = redis.register_script(load_script("game_index.lua"))
        self._page = redis.register_script(load_script("game_page.lua"))
        self._online = redis.register_script(load_script("online_count.lua"))
        self._chat_append = redis.register_script(load_script("chat_append.lua"))

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

    # --- chat ----------------------------------------------------------------------------

    async def append_chat(self, table: str, game_no: int, message: dict[str, Any]) -> None:
        """Keep one chat message of ``table``'s game ``game_no`` (one script call)."""
        await self._chat_append(
            keys=[self.keys.table_chat(table, game_no)],
            args=[json.dumps(message, separators=(",", ":"), ensure_ascii=False),
                  self.settings.chat_log_max, self._ttl_ms])

    async def chat_tail(self, table: str, game_no: int, count: int) -> list[dict[str, Any]]:
        """The last ``count`` chat messages of ``table``'s game ``game_no``, oldest first."""
        raw = await _aw(self.redis.lrange(self.keys.table_chat(table, game_no), -count, -1))
        return [json.loads(m) for m in raw]

    async def find_chat(self, table: str, game_nos: list[int], msg: str
                        ) -> dict[str, Any] | None:
        """The chat message ``msg`` of ``table`` among its games ``game_nos``, or None."""
        for game_no in game_nos:
            raw = await _aw(self.redis.lrange(self.keys.table_chat(table, game_no), 0, -1))
            for entry in raw:
                message = json.loads(entry)
                if message.get("msg") == msg:
                    return dict(message)
        return None

    async def add_report(self, report: dict[str, Any]) -> float | None:
        """Keep a reported message for the operators (the newest ``reports_kept``), unless
        its reporter filed ``reports_per_player`` reports in this window already: then
        nothing is kept and the seconds until the window ends are returned."""
        settings = self.settings
        counter = self.keys.reports_filed(str(report["reporter"]))
        window_ms = max(1, int(settings.reports_window * 1000))
        # One key, one transaction: the window starts with the account's first report.
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(counter, 0, px=window_ms, nx=True)
            pipe.incr(counter)
            pipe.pttl(counter)
            _created, filed, left_ms = await pipe.execute()
        if int(filed) > settings.reports_per_player:
            return max(0.0, int(left_ms) / 1000)
        key = self.keys.chat_reports
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.rpush(key, json.dumps(report, separators=(",", ":"), ensure_ascii=False))
            pipe.ltrim(key, -settings.reports_kept, -1)
            await pipe.execute()
        return None

    async def reports(self, limit: int = 100) -> list[dict[str, Any]]:
        """The newest ``limit`` reports, oldest first."""
        raw = await _aw(self.redis.lrange(self.keys.chat_reports, -limit, -1))
        return [json.loads(r) for r in raw]

    async def chat_state(self, player: str) -> tuple[list[str], float]:
        """The players ``player`` muted, and until when an operator muted them (0: not)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.smembers(self.keys.player_muted(player))
            pipe.get(self.keys.chat_mute(player))
            muted, until = await pipe.execute()
        names = sorted(m.decode() if isinstance(m, bytes) else str(m) for m in muted)
        return names, float(until or 0)

    async def mute(self, player: str, other: str) -> list[str] | None:
        """``player`` mutes ``other``; the muted players now, or None when ``player`` has
        muted ``chat_mute_max`` already (nothing changed)."""
        key = self.keys.player_muted(player)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.scard(key)
            pipe.sismember(key, other)
            count, already = await pipe.execute()
        if not already and int(count) >= self.settings.chat_mute_max:
            return None
        await _aw(self.redis.sadd(key, other))
        return (await self.chat_state(player))[0]

    async def unmute(self, player: str, other: str) -> list[str]:
        await _aw(self.redis.srem(self.keys.player_muted(player), other))
        return (await self.chat_state(player))[0]

    async def operator_mute(self, player: str, until: float) -> None:
        """An operator mutes ``player``'s chat until ``until`` (Unix s; 0 lifts it), and
        every node is told at once (their sockets of ``player`` refuse chat from now on)."""
        key = self.keys.chat_mute(player)
        if until <= time.time():
            until = 0.0
            await self.redis.delete(key)
        else:
            await self.redis.set(key, repr(until), pxat=int(until * 1000))
        publisher: aioredis.Redis = getattr(self.redis, "seed", self.redis)
        await publisher.publish(self.keys.broadcast_channel, encode(
            ChatMute(player=player, until=until)))

    async def online(self) -> int:
        """Authenticated players connected over the live nodes (each node's own count)."""
        return int(await self._online(keys=[self.keys.nodes, self.keys.online],
                                      args=[int(time.time() * 1000)]))
