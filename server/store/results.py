"""Finished games in Redis: a table's results (written fenced, with what it had buffered) and
the players' rating inboxes. A part of :class:`server.store.persistence.Persistence`, which
supplies the client, the keys, the write buffer, the flush lock and the scripts.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Iterable
from typing import Any, TypeVar, cast

import redis.asyncio as aioredis
from redis.commands.core import AsyncScript
from redis.exceptions import RedisError

from server.config import Settings
from server.store.keys import Keys
from server.store.replicas import Replicas
from server.store.write_buffer import WriteBuffer, pack

T = TypeVar("T")


def _aw(value: Awaitable[T] | T) -> Awaitable[T]:
    """redis-py types its commands as "awaitable or value"; the asyncio client always awaits."""
    return cast(Awaitable[T], value)


class LogGap(RedisError):
    """A write found the table's log short of the events before it (a failover lost them):
    nothing was written; it is tried again once they are written again."""


class Fenced(Exception):
    """A write was refused: another node claimed the table (its owner epoch in Redis is newer
    than this node's). The table must stop: it is not this node's any more."""

    def __init__(self, table: str) -> None:
        super().__init__(f"table {table}: owner lease lost to another node")
        self.table = table


class ResultRecords:
    """Results and rating inboxes."""

    redis: aioredis.Redis
    keys: Keys
    _settings: Settings
    buffer: WriteBuffer
    _lock: asyncio.Lock
    _fenced_result: AsyncScript
    _inbox_remove: AsyncScript
    _inbox_add: AsyncScript
    redis_up: bool
    replicas: Replicas

    def fenced_out(self, table: str) -> None:
        raise NotImplementedError

    def _tell_stored(self, table: str, version: int) -> None:
        raise NotImplementedError

    def _gap(self, table: str, stored: int, taken: Any) -> None:
        raise NotImplementedError

    async def write_result(
        self, table: str, result: dict[str, Any], inbox: Iterable[tuple[str, dict[str, Any]]]
    ) -> None:
        """Write ``table``'s buffered events and snapshot and append ``result`` to its results
        in one fenced script (``fenced_result.lua``), then each ``(player, event)`` to that
        player's inbox (a pipeline of its own: another hash slot). Waits for a flush in
        flight first, so the log stays in version order and :attr:`on_stored` is told the
        truth. Raises :class:`Fenced` (nothing written) when another node owns the table."""
        result_json = json.dumps(result, separators=(",", ":"))
        entries = [(p, json.dumps(e, separators=(",", ":"))) for p, e in inbox]
        buffer = self.buffer
        async with self._lock:
            taken = buffer.take(table)
            keys = self.keys
            try:
                packed = b"" if taken.snapshot is None else pack(taken.snapshot())
                reply = await self._fenced_result(
                    keys=[keys.table_lease(table), keys.table_events(table),
                          keys.table_snapshot(table), keys.table_results(table)],
                    args=[buffer.epoch_arg(table), buffer.log_ttl_ms, buffer.log_max, packed,
                          result_json, b"" if taken.first is None else b"%d" % taken.first,
                          str(result.get("game_id") or ""), *(taken.events or ())],
                )
            except BaseException as exc:
                # Nothing of it is lost: the events and snapshot go back to the buffer, and
                # the caller tries again.
                buffer.put_back_table(table, taken)
                if not isinstance(exc, asyncio.CancelledError):
                    self.redis_up = False
                raise
        if int(reply) == -1:
            self.fenced_out(table)
            raise Fenced(table)
        if int(reply) <= -2:
            # The store lost events before these (a failover): written again from memory
            # first, then this is tried again (the caller retries).
            buffer.put_back_table(table, taken)
            self._gap(table, -2 - int(reply), None)
            raise LogGap(f"table {table}: the store lost events before the result")
        try:  # announced once on the replicas (server/store/replicas.py)
            await self.replicas.replicated([keys.table_events(table)])
        except BaseException:
            buffer.put_back_table(table, taken)  # written again with the retry
            raise
        if taken.version is not None:
            self._tell_stored(table, taken.version)
        if entries:
            ttl_ms = int(self._settings.inbox_ttl * 1000)
            cap = self._settings.inbox_max
            async with self.redis.pipeline(transaction=False) as pipe:
                for player, entry in entries:
                    inbox_key = keys.inbox(player)
                    pipe.rpush(inbox_key, entry)
                    pipe.ltrim(inbox_key, -cap, -1)
                    pipe.pexpire(inbox_key, ttl_ms)
                await pipe.execute()

    async def write_inbox(
        self, inbox: Iterable[tuple[str, dict[str, Any]]], *, table: str | None = None,
        note: dict[str, Any] | None = None, game: str | None = None,
    ) -> None:
        """Append each ``(player, event)`` to that player's inbox and, with ``note``, that
        record to ``table``'s results (a settlement that failed), in one awaited pipeline;
        with ``game`` (its id), that game is marked as having its rating events in the inboxes
        (:meth:`inboxed`: a node taking the table over does not write them again)."""
        ttl_ms = int(self._settings.inbox_ttl * 1000)
        cap = self._settings.inbox_max
        async with self.redis.pipeline(transaction=False) as pipe:
            for player, event in inbox:
                key = self.keys.inbox(player)
                pipe.rpush(key, json.dumps(event, separators=(",", ":")))
                pipe.ltrim(key, -cap, -1)
                pipe.pexpire(key, ttl_ms)
            if note is not None and table is not None:
                key = self.keys.table_results(table)
                pipe.rpush(key, json.dumps(note, separators=(",", ":")))
                pipe.pexpire(key, self.buffer.log_ttl_ms)
            await pipe.execute()
        if game is not None and table is not None:
            # After the entries are stored (on a cluster they are written node by node).
            key = self.keys.table_inboxed(table)
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.sadd(key, game)
                pipe.pexpire(key, self.buffer.log_ttl_ms)
                await pipe.execute()

    async def keep_in_inbox(self, events: Iterable[tuple[str, dict[str, Any]]]) -> None:
        """Keep each ``(player, event)`` that has an ``event_id`` in that player's inbox (the
        others are not kept), once: an id already there is not added again
        (``inbox_add.lua``, one call per player: each inbox is its own hash slot)."""
        by_player: dict[str, list[str]] = {}
        for player, event in events:
            if "event_id" not in event:
                continue
            by_player.setdefault(player, []).extend(
                (str(event["event_id"]), json.dumps(event, separators=(",", ":"))))
        if not by_player:
            return
        cap, ttl_ms = self._settings.inbox_max, int(self._settings.inbox_ttl * 1000)
        await asyncio.gather(*(
            self._inbox_add(keys=[self.keys.inbox(player)], args=[cap, ttl_ms, *args])
            for player, args in by_player.items()))

    async def has_result(self, table: str, game_id: str) -> bool:
        """Whether ``table``'s results hold ``game_id`` (its end was stored)."""
        raw = await _aw(self.redis.lrange(self.keys.table_results(table), 0, -1))
        for entry in raw:
            try:
                record = json.loads(entry)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("game_id") == game_id:
                return True
        return False

    async def inboxed(self, table: str, game_id: str) -> bool:
        """Whether ``game_id``'s rating events were written to the inboxes (see
        :meth:`write_inbox`)."""
        return bool(await _aw(self.redis.sismember(self.keys.table_inboxed(table), game_id)))

    async def inbox(self, player: str) -> list[dict[str, Any]]:
        """Every undelivered rating event of ``player``, oldest first (nothing is removed)."""
        raw = await _aw(self.redis.lrange(self.keys.inbox(player), 0, -1))
        return [json.loads(r) for r in raw]

    async def inbox_remove(self, player: str, event_ids: list[str]) -> int:
        """Remove the inbox entries whose ``event_id`` is one of ``event_ids`` (delivered)."""
        if not event_ids:
            return 0
        return int(await self._inbox_remove(keys=[self.keys.inbox(player)], args=event_ids))

    async def ack_inbox(self, player: str, count: int) -> None:
        """Remove the ``count`` oldest inbox entries (they were delivered); newer ones stay."""
        if count > 0:
            await _aw(self.redis.ltrim(self.keys.inbox(player), count, -1))
