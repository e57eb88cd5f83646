"""Finished games' records, each player's history of them, and the table chat kept with them.

The one module that reads and writes game records in Redis (records are built by the pure
``server/tables/records.py``):

- ``{g:<game_id>}:served``: the record as served, a hash written once at the game's end
  (``server/store/record_bytes.py``): ``meta`` (a msgpack array: game id, table, game
  number, players, whether unlisted, the length of the answer's head, the chat stamp of
  ``body``, who may see it: ``audience``, :mod:`server.protocol.visibility`), ``body`` (the
  whole answer, gzip), ``mat_game``/``mat_match`` (the ``.mat`` texts, gzip when that is
  shorter) and, once computed, ``review`` (the review's answer, gzip); kept
  ``game_record_ttl``;
- ``{g:<game_id>}:record``: the form of the games stored before (zlib-compressed msgpack,
  events lean): still read, and turned into the served form at its first read (its time to
  live kept);
- per player ``{p:P}:games`` (every game), ``{p:P}:games:public`` (the games anyone may
  see) and ``{p:P}:game_rows`` (that player's row of each, a msgpack array), updated
  together by ``game_index.lua`` and read a page at a time by ``game_page.lua`` (one slot
  each);
- per table and game ``{t:T}:chat:<game_no>``: the chat messages of that game (JSON), written
  as they are sent and kept as long as the record; a replay reads them beside the record;
- chat moderation: each player's muted players (``{p:P}:muted``) and an operator's mute
  (``{p:P}:chat_mute``: until when); the reported messages are :attr:`GameRecords.reports`
  (``server/store/reports.py``).

Writing a record is idempotent by game id (the same record and rows are set again), so the
table driver may retry it, and a node taking a table over may write one that is missing.
"""

from __future__ import annotations

import asyncio
import json
import time
import zlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import msgpack
import msgspec
import redis.asyncio as aioredis

from server.config import Settings
from server.protocol.node_messages import ChatMute, encode
from server.protocol.visibility import Audience
from server.store.keys import Keys
from server.store.record_bytes import (
    ChatStamp,
    assemble,
    encode_head,
    gzip_bytes,
    head_of,
    head_record,
    pack_row,
    pack_text,
    pack_values,
    rebody,
    text_of,
    unpack_row,
    unpack_values,
)
from server.store.reports import ChatReports
from server.store.scripts import load_script
from server.tables.records import game_row, record_audience

T = TypeVar("T")


def _aw(value: Awaitable[T] | T) -> Awaitable[T]:
    return cast(Awaitable[T], value)


@dataclass(frozen=True, slots=True)
class ServedMeta:
    """What a served record's readers need before its bytes: who may see it (its players and
    ``audience``), and where its chat is (``chat``: the stamp of the chat its body holds)."""

    game_id: str
    table: str
    game_no: int
    players: tuple[str, ...]
    audience: Audience
    head_len: int
    chat: ChatStamp

    def encode(self) -> bytes:
        """A msgpack array of the fields in their order (the chat stamp as two; whether
        unlisted before the audience: the field a reader that knows no audience decides by)."""
        return pack_values([self.game_id, self.table, self.game_no, list(self.players),
                            not self.audience.listed, self.head_len, self.chat.count,
                            self.chat.last, self.audience.to_json()])

    @classmethod
    def decode(cls, raw: bytes) -> ServedMeta:
        """A meta as :meth:`encode` writes it, or the JSON object of earlier versions."""
        if raw[:1] == b"{":
            data = json.loads(raw)
            game_id, table, game_no, players = (data["game_id"], data["table"],
                                                data["game_no"], data["players"])
            private, head_len, (count, last) = data["private"], data["head_len"], data["chat"]
            stored = data.get("audience")
        else:
            values = unpack_values(raw)
            game_id, table, game_no, players, private, head_len, count, last = values[:8]
            stored = values[8] if len(values) > 8 else None
        audience = Audience.from_json(stored, mode="private" if private else "")
        return cls(str(game_id), str(table), int(game_no), tuple(players), audience,
                   int(head_len), ChatStamp(count, last))

    @classmethod
    def of(cls, record: dict[str, Any], head_len: int, chat: Sequence[bytes]) -> ServedMeta:
        return cls(str(record["game_id"]), str(record["table"]),
                   int(record.get("game_no") or 1), tuple(record["players"]),
                   record_audience(record), head_len,
                   ChatStamp.of(len(chat), chat[-1] if chat else None))

    def with_chat(self, chat: Sequence[bytes]) -> ServedMeta:
        return ServedMeta(self.game_id, self.table, self.game_no, self.players,
                          self.audience, self.head_len,
                          ChatStamp.of(len(chat), chat[-1] if chat else None))


@dataclass(frozen=True, slots=True)
class ServedRecord:
    """A finished game's answer as stored: ``body`` is gzip of its JSON."""

    meta: ServedMeta
    body: bytes


def _compress(head: bytes, chat: Sequence[bytes]) -> bytes:
    """The gzip body: run in a thread (zlib lets go of the GIL)."""
    return gzip_bytes(assemble(head, chat))


def _encode_and_compress(record: dict[str, Any], chat: Sequence[bytes]) -> tuple[bytes, bytes]:
    """The record's head (its events replayed and encoded) and gzip body: run in a thread."""
    head = encode_head(record)
    return head, _compress(head, chat)


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

    def __init__(self, redis: aioredis.Redis, keys: Keys, settings: Settings, *,
                 now: Callable[[], float] = time.time) -> None:
        """``now``: the wall clock (seconds) this store reads, the node's clock."""
        self.now = now
        self.redis = redis
        self.keys = keys
        self.settings = settings
        self._index = redis.register_script(load_script("game_index.lua"))
        self._page = redis.register_script(load_script("game_page.lua"))
        self._online = redis.register_script(load_script("online_count.lua"))
        self._chat_append = redis.register_script(load_script("chat_append.lua"))
        self._update = redis.register_script(load_script("served_update.lua"))
        self._write = redis.register_script(load_script("served_write.lua"))
        self.reports = ChatReports(redis, keys, settings)
        # Served forms being made on this node (a record converted, a body rebuilt), by game.
        self._making: dict[str, asyncio.Future[Any]] = {}

    @property
    def _ttl_ms(self) -> int:
        return int(self.settings.game_record_ttl * 1000)

    def _served_key(self, game_id: str) -> str:
        return self.keys.game_served(game_id)

    def _chat_key(self, meta: ServedMeta) -> str:
        return self.keys.table_chat(meta.table, meta.game_no)

    async def _chat(self, table: str, game_no: int) -> list[bytes]:
        return list(await _aw(self.redis.lrange(self.keys.table_chat(table, game_no), 0, -1)))

    async def save(self, record: dict[str, Any]) -> None:
        """Store ``record`` (``server.tables.records.game_record``) in its served form and
        index it in both players' histories. Idempotent: saving the same record again
        changes nothing (but the chat it holds, read again). The events are folded and
        encoded here, once per game; the compression runs in a thread."""
        keys = self.keys
        game_id = str(record["game_id"])
        chat = await self._chat(str(record["table"]), int(record.get("game_no") or 1))
        await self._write_served(record, chat, self._ttl_ms)
        public = "1" if record_audience(record).listed else "0"
        cutoff = self.now() - self.settings.game_record_ttl
        for player in dict.fromkeys(record["players"]):
            row = pack_row(game_row(record, player))
            await self._index(
                keys=[keys.player_games(player), keys.player_games(player, public=True),
                      keys.player_game_rows(player)],
                args=[game_id, record["finished_at"], row, public,
                      self.settings.game_index_max, self._ttl_ms, cutoff],
            )

    async def _write_served(self, record: dict[str, Any], chat: list[bytes], ttl_ms: int, *,
                            drop_old: bool = False) -> ServedRecord:
        game_id = str(record["game_id"])
        # Replaying the events and encoding them take milliseconds: off the event loop.
        head, body = await asyncio.to_thread(_encode_and_compress, record, chat)
        meta = ServedMeta.of(record, len(head), chat)
        fields: dict[str, bytes] = {"meta": meta.encode(), "body": body,
                                    "mat_game": pack_text(str(record.get("mat_game") or ""))}
        if record.get("mat_match") is not None:
            fields["mat_match"] = pack_text(str(record["mat_match"]))
        key = self._served_key(game_id)
        # One script (served_write.lua), as a cluster client takes no MULTI: fields replaced,
        # not the hash, so a review kept by an earlier save stays.
        args: list[bytes | str | int] = [ttl_ms, "1" if drop_old else "0",
                                          "0" if "mat_match" in fields else "1"]
        for name, value in fields.items():
            args += [name, value]
        await self._write(keys=[key, self.keys.game_record(game_id)], args=args)
        return ServedRecord(meta, body)

    async def exists(self, game_id: str) -> bool:
        return bool(await self.redis.exists(self._served_key(game_id),
                                            self.keys.game_record(game_id)))

    async def _once(self, key: str, make: Callable[[], Awaitable[T]]) -> T:
        """``make()``, once at a time per ``key`` on this node: concurrent callers share the
        first one's answer."""
        running = self._making.get(key)
        if running is None:
            # A task of its own: a caller that goes away cancels its wait, not the others'.
            running = self._making[key] = asyncio.ensure_future(make())
            running.add_done_callback(lambda _: self._making.pop(key, None))
        return cast(T, await asyncio.shield(running))

    async def served(self, game_id: str) -> ServedRecord | None:
        """The finished game ``game_id``'s answer as stored (gzip JSON, its chat up to
        date), or None when no record is kept. A record stored before the served form is
        turned into it here, once; a body whose chat grew since is made again, once."""
        key = self._served_key(game_id)
        meta_raw, body = await _aw(self.redis.hmget(key, ["meta", "body"]))
        if meta_raw is None or body is None:
            return await self._once("old:" + game_id, lambda: self._convert_old(game_id))
        meta = ServedMeta.decode(meta_raw)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.llen(self._chat_key(meta))
            pipe.lindex(self._chat_key(meta), -1)
            count, last = await pipe.execute()
        stamp = ChatStamp.of(count, last)
        if stamp == meta.chat:
            return ServedRecord(meta, body)
        return await self._once("chat:" + game_id, lambda: self._rebuild(meta))

    async def _rebuild(self, meta: ServedMeta) -> ServedRecord | None:
        """The body made again with the chat list as it is now (its head kept)."""
        key = self._served_key(meta.game_id)
        body = cast("bytes | None", await _aw(self.redis.hget(key, "body")))
        if body is None:
            return None
        chat = await self._chat(meta.table, meta.game_no)
        body = await asyncio.to_thread(rebody, body, meta.head_len, chat)
        fresh = meta.with_chat(chat)
        await self._update(keys=[key], args=["meta", fresh.encode(), "body", body])
        return ServedRecord(fresh, body)

    async def _convert_old(self, game_id: str) -> ServedRecord | None:
        """A record in the form stored before (``{g:<id>}:record``) in the served form, its
        time to live kept; None when there is none either."""
        old_key = self.keys.game_record(game_id)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.get(old_key)
            pipe.pttl(old_key)
            raw, ttl = await pipe.execute()
        if raw is None:
            # Another node may have converted it just now (it drops the old key).
            meta_raw, body = await _aw(self.redis.hmget(self._served_key(game_id),
                                                        ["meta", "body"]))
            if meta_raw is None or body is None:
                return None
            return ServedRecord(ServedMeta.decode(meta_raw), body)
        record = unpack_record(raw)
        chat = await self._chat(str(record["table"]), int(record.get("game_no") or 1))
        ttl_ms = int(ttl) if ttl is not None and int(ttl) > 0 else self._ttl_ms
        return await self._write_served(record, chat, ttl_ms, drop_old=True)

    async def served_fields(self, game_id: str, *fields: str
                            ) -> tuple[ServedMeta, list[bytes | None]] | None:
        """``fields`` of the served record of ``game_id`` with its meta (an old record is
        turned into the served form first); None when no record is kept."""
        key = self._served_key(game_id)
        values = await _aw(self.redis.hmget(key, ["meta", *fields]))
        if values[0] is None:
            await self._once("old:" + game_id, lambda: self._convert_old(game_id))
            values = await _aw(self.redis.hmget(key, ["meta", *fields]))
            if values[0] is None:
                return None
        return ServedMeta.decode(values[0]), list(values[1:])

    async def keep(self, game_id: str, field: str, value: bytes) -> bool:
        """Set ``field`` of the served record of ``game_id`` (a review's answer), only while
        the record is kept. Whether it was."""
        return bool(await self._update(keys=[self._served_key(game_id)], args=[field, value]))

    async def load(self, game_id: str) -> dict[str, Any] | None:
        """The record of the finished game ``game_id`` as its answer has it (events in the
        full form, ``chat``: its chat messages, oldest first) with ``mat_game`` and
        ``mat_match``; None when no record is kept."""
        found = await self.served_fields(game_id, "body", "mat_game", "mat_match")
        if found is None or found[1][0] is None:
            return None
        meta, (body, mat_game, mat_match) = found
        assert body is not None
        record = head_record(await asyncio.to_thread(head_of, body, meta.head_len))
        record["chat"] = [json.loads(m) for m in await self._chat(meta.table, meta.game_no)]
        record["mat_game"] = text_of(mat_game or b"")
        record["mat_match"] = None if mat_match is None else text_of(mat_match)
        return record

    async def page(self, player: str, *, offset: int, limit: int, private: bool
                   ) -> tuple[int, list[dict[str, Any]]]:
        """A page of ``player``'s games, newest first, and how many there are; ``private``:
        the unlisted games too (private rooms, private tournaments: only for the player
        themself, :func:`server.protocol.visibility.sees_hidden_rows`)."""
        keys = self.keys
        cutoff = self.now() - self.settings.game_record_ttl
        reply = await self._page(
            keys=[keys.player_games(player, public=not private), keys.player_game_rows(player)],
            args=[offset, limit, cutoff],
        )
        return int(reply[0]), [unpack_row(r) for r in reply[1:]]

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
        if until <= self.now():
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
                                      args=[int(self.now() * 1000)]))
