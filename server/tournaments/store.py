"""Tournaments in Redis: records, registrations, tables, results, bracket state and leases.

The one module of ``server.tournaments`` that talks to Redis (with ``runner_keys``); it
returns plain values. Key layout in ``keys.py``; the atomic steps are the Lua scripts in
``lua/`` (register, unregister, start a bracket, save a bracket under its lease, take and
give back a lease).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

import redis.asyncio as aioredis

from server.store.keys import Keys
from server.store.read_batch import reads
from server.store.scripts import load_script
from server.tournaments.keys import TournamentKeys
from server.tournaments.spec import MAX_PLAYERS, Registration, TournamentSpec


def _script(name: str) -> str:
    return load_script(name, "server.tournaments")


T = TypeVar("T")

REGISTERED, ALREADY, NO_SUCH, CLOSED, FULL = 1, 0, -1, -2, -3
#: A self-join refused: the tournament is not open to players / its deadline has passed.
NOT_OPEN_TO_PLAYERS, DEADLINE_PASSED = -4, -5
#: What :meth:`TournamentStore.cancel` did (tournament_cancel.lua's codes).
CANCEL_REMOVED, CANCEL_STOPPED, CANCELLED_ALREADY, REMOVED_ALREADY, CANCEL_FINISHED = 1, 2, 0, 3, -2
#: How long a removed tournament's tombstone answers a repeated cancel (seconds).
REMOVED_TTL = 7 * 86400


def _aw(value: Awaitable[T] | T) -> Awaitable[T]:
    return cast(Awaitable[T], value)


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def new_tournament_id() -> str:
    return "tn" + secrets.token_hex(6)


class TournamentStore:
    def __init__(self, redis: aioredis.Redis, keys: TournamentKeys, server_keys: Keys, *,
                 now: Callable[[], float] = time.time) -> None:
        """``now``: the node's wall clock (seconds since the epoch)."""
        self.now = now
        self.redis = redis
        self.keys = keys
        self.server_keys = server_keys
        self._register = redis.register_script(_script("tournament_register.lua"))
        self._unregister = redis.register_script(_script("tournament_unregister.lua"))
        self._start = redis.register_script(_script("bracket_start.lua"))
        self._save = redis.register_script(_script("bracket_save.lua"))
        self._take = redis.register_script(_script("lease_take.lua"))
        self._release = redis.register_script(_script("lease_release.lua"))
        self._cancel = redis.register_script(_script("tournament_cancel.lua"))
        self._registration = redis.register_script(_script("tournament_registration.lua"))

    # --- records ---------------------------------------------------------------------------

    async def create(self, owner: str, key_id: str, spec: TournamentSpec,
                     registration: Registration | None = None) -> dict[str, Any]:
        """A new open tournament owned by the runner named ``owner`` (made with its key
        ``key_id``), listed in the runner's own index (and the public one if public)."""
        tid = new_tournament_id()
        now = self.now()
        record = {
            "id": tid, "name": spec.name, "visibility": spec.visibility,
            "prizes": json.dumps(list(spec.prizes)), "format": json.dumps(spec.format),
            "owner": owner, "runner": key_id, "status": "open", "created_at": repr(now),
            "seq": "0", "bracket": "0",
        }
        if registration is not None:
            record.update(_registration_fields(registration))
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hset(self.keys.tournament(tid), mapping=record)
            pipe.zadd(self.keys.of_runner(owner), {tid: now})
            if spec.visibility == "public":
                pipe.zadd(self.keys.public, {tid: now})
            await pipe.execute()
        found = await self.get(tid)
        assert found is not None
        return found

    async def get(self, tid: str) -> dict[str, Any] | None:
        """The tournament's record (``players`` in registration order), or None."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hgetall(self.keys.tournament(tid))
            pipe.zrange(self.keys.players(tid), 0, -1)
            raw, players = await pipe.execute()
        return _record(raw, players)

    async def get_with_bracket(
        self, tid: str
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The tournament's record (as :meth:`get`) and its bracket state (as :meth:`bracket`),
        in one round trip."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hgetall(self.keys.tournament(tid))
            pipe.zrange(self.keys.players(tid), 0, -1)
            pipe.get(self.keys.bracket(tid))
            raw, players, state = await pipe.execute()
        return _record(raw, players), None if state is None else dict(json.loads(state))

    async def list_public(self, offset: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        """Public tournaments, newest first, and how many there are."""
        return await self._list(self.keys.public, offset, limit)

    async def list_of_runner(self, owner: str, offset: int,
                             limit: int) -> tuple[list[dict[str, Any]], int]:
        """The tournaments the runner ``owner`` made (public and private), newest first, and
        how many there are."""
        return await self._list(self.keys.of_runner(owner), offset, limit)

    async def _list(self, index: str, offset: int,
                    limit: int) -> tuple[list[dict[str, Any]], int]:
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.zrevrange(index, offset, offset + limit - 1)
            pipe.zcard(index)
            ids, total = await pipe.execute()
        out: list[dict[str, Any]] = []
        for raw in ids:
            found = await self.get(_text(raw))
            if found is not None:
                out.append(found)
        return out, int(total)

    async def account_exists(self, player: str) -> bool:
        return bool(await self.redis.exists(self.server_keys.account(player)))

    async def cancel(self, tid: str, owner: str) -> tuple[int, list[str]]:
        """Cancel ``tid`` for its runner ``owner`` (tournament_cancel.lua): the code (the
        ``CANCEL_*`` constants, :data:`NO_SUCH`) and the tables it had. A removed one leaves
        the indexes too (after the script: they are other slots)."""
        keys = [self.keys.tournament(tid), self.keys.players(tid), self.keys.tables(tid),
                self.keys.removed(tid)]
        reply = await self._cancel(keys=keys, args=[owner, REMOVED_TTL * 1000])
        code, tables = int(reply[0]), [_text(t) for t in reply[1:]]
        if code in (CANCEL_REMOVED, REMOVED_ALREADY):
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.zrem(self.keys.public, tid)
                pipe.zrem(self.keys.of_runner(owner), tid)
                await pipe.execute()
        return code, tables

    # --- registration ----------------------------------------------------------------------

    async def register(self, tid: str, player: str, limit: int, *, self_join: bool = False,
                       now: float = 0.0) -> int:
        """Register ``player`` (tournament_register.lua): by the runner (up to ``limit``), or
        by the player themselves (``self_join``: open registration, its cap and deadline
        against ``now``). A registration also lists the tournament in the player's index
        (another slot, written after: :meth:`entered` checks each entry)."""
        keys = [self.keys.tournament(tid), self.keys.players(tid)]
        code = int(await self._register(
            keys=keys, args=[player, limit, "1" if self_join else "0", repr(now)]))
        if code in (REGISTERED, ALREADY):
            await _aw(self.redis.zadd(self.keys.of_player(player), {tid: self.now()}))
        return code

    async def unregister(self, tid: str, player: str) -> int:
        keys = [self.keys.tournament(tid), self.keys.players(tid)]
        code = int(await self._unregister(keys=keys, args=[player]))
        if code in (0, 1):
            await _aw(self.redis.zrem(self.keys.of_player(player), tid))
        return code

    async def set_registration(self, tid: str, registration: Registration) -> int:
        """Open or close registration while the tournament is open: 1, or :data:`NO_SUCH`,
        :data:`CLOSED` (tournament_registration.lua)."""
        fields = _registration_fields(registration)
        return int(await self._registration(
            keys=[self.keys.tournament(tid)],
            args=[fields["registration"], fields["cap"], fields["deadline"]]))

    async def entered(self, player: str, limit: int) -> list[dict[str, Any]]:
        """The public tournaments ``player`` is registered in that have not ended (open or
        running), soonest first: at most ``limit`` read. An index entry the tournament no
        longer backs (cancelled, removed, the player taken off) is dropped from the index."""
        ids = await _aw(self.redis.zrange(self.keys.of_player(player), 0, limit - 1))
        out: list[dict[str, Any]] = []
        stale: list[str] = []
        for raw in ids:
            tid = _text(raw)
            found = await self.get(tid)
            if found is None or player not in found["players"]:
                stale.append(tid)
            elif found["visibility"] == "public" and found["status"] in ("open", "running"):
                out.append(found)
            elif found["status"] in ("finished", "cancelled"):
                stale.append(tid)
        if stale:
            await _aw(self.redis.zrem(self.keys.of_player(player), *stale))
        return out

    # --- tables and results ----------------------------------------------------------------

    async def add_table(self, tid: str, table: str) -> None:
        await _aw(self.redis.rpush(self.keys.tables(tid), table))

    async def tables(self, tid: str) -> list[str]:
        return [_text(t) for t in await _aw(self.redis.lrange(self.keys.tables(tid), 0, -1))]

    async def table_results_of(self, tables: list[str]) -> dict[str, list[dict[str, Any]]]:
        """The finished games of each of ``tables`` (as the table wrote them, oldest first),
        in one round trip."""
        if not tables:
            return {}
        async with self.redis.pipeline(transaction=False) as pipe:
            for table in tables:
                pipe.lrange(self.server_keys.table_results(table), 0, -1)
            replies = await pipe.execute()
        return {table: [json.loads(r) for r in rows]
                for table, rows in zip(tables, replies, strict=True)}

    async def results(self, tid: str) -> list[dict[str, Any]]:
        tables = await self.tables(tid)
        of_table = await self.table_results_of(tables)
        return [result for table in tables for result in of_table[table]]

    async def set_podium(self, tid: str, podium: dict[str, Any]) -> None:
        await _aw(self.redis.hset(self.keys.tournament(tid), mapping={
            "podium": json.dumps(podium), "status": "finished",
        }))

    # --- brackets ----------------------------------------------------------------------------

    async def start_bracket(self, tid: str, state: dict[str, Any]) -> int:
        """Hand the tournament to the bracket driver: 1 started, -1 no such tournament, -2
        not open. The start itself is one step (``bracket_start.lua``: registration closed,
        status and first state stored, in the tournament's own slot). The running index is
        another slot, so it is written first: a node stopping in between leaves an open
        tournament listed, which the driver passes over until a retried start finishes it,
        never a started bracket that no driver runs."""
        await self.list_running(tid)
        return await self.store_start(tid, state)

    async def list_running(self, tid: str) -> None:
        """The first step of :meth:`start_bracket`: the running index (idempotent)."""
        await _aw(self.redis.sadd(self.keys.running, tid))

    async def store_start(self, tid: str, state: dict[str, Any]) -> int:
        """The second step of :meth:`start_bracket`: ``bracket_start.lua``."""
        keys = [self.keys.tournament(tid), self.keys.bracket(tid)]
        return int(await self._start(keys=keys, args=[json.dumps(state)]))

    async def bracket(self, tid: str) -> dict[str, Any] | None:
        raw = await self.redis.get(self.keys.bracket(tid))
        return None if raw is None else dict(json.loads(raw))

    async def save_bracket(self, tid: str, node: str, state: dict[str, Any],
                           status: str) -> bool:
        keys = [self.keys.lease(tid), self.keys.bracket(tid), self.keys.tournament(tid)]
        return bool(await self._save(keys=keys, args=[node, json.dumps(state), status]))

    async def running(self) -> list[str]:
        return sorted(_text(t) for t in await reads(self.redis).smembers(self.keys.running))

    async def done_running(self, tid: str) -> None:
        await _aw(self.redis.srem(self.keys.running, tid))

    async def take_lease(self, tid: str, node: str, seconds: float) -> bool:
        ms = max(1, int(seconds * 1000))
        return bool(await self._take(keys=[self.keys.lease(tid)], args=[node, ms]))

    async def release_lease(self, tid: str, node: str) -> None:
        await self._release(keys=[self.keys.lease(tid)], args=[node])


def _record(raw: Any, players: Any) -> dict[str, Any] | None:
    """A tournament's record from its hash and its players (None when there is no hash)."""
    if not raw:
        return None
    data = {_text(k): _text(v) for k, v in raw.items()}
    return {
        "id": data["id"], "name": data["name"], "visibility": data["visibility"],
        "prizes": json.loads(data["prizes"]), "format": json.loads(data["format"]),
        "owner": data.get("owner"), "runner": data["runner"], "status": data["status"],
        "created_at": float(data["created_at"]), "bracket": data.get("bracket") == "1",
        "players": [_text(p) for p in players],
        "podium": json.loads(data["podium"]) if "podium" in data else None,
        "registration": {
            "mode": data.get("registration") or "closed",
            "cap": int(data["cap"]) if data.get("cap") else MAX_PLAYERS,
            "deadline": float(data["deadline"]) if data.get("deadline") else None,
        },
    }


def _registration_fields(registration: Registration) -> dict[str, str]:
    return {"registration": registration.mode, "cap": str(registration.cap),
            "deadline": "" if registration.deadline is None else repr(registration.deadline)}
