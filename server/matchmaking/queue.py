"""The matchmaking queue in Redis, shared by every server node.

Any node may queue a player, cancel, or run a pool's pairing pass; Redis holds the only copy
of the queue. The rules and the pairing itself are the pure :mod:`server.matchmaking.policy`;
this module only moves tickets in and out of Redis and claims pairs atomically.

Keys (:class:`MatchmakingKeys`), all under the one hash tag ``{mm}``::

    <prefix>mm:{mm}:players        hash    player -> pool id   (the player index)
    <prefix>mm:{mm}:pool:<pool>    hash    player -> ticket (compact JSON)
    <prefix>mm:{mm}:lease:<pool>   string  token of the node running the pool's pass (PX)

One ticket per player across all pools is an atomic update of the index and two pools, so the
index and every pool share a slot: a per-pool tag would put "queue in pool B, leave pool A"
across two slots. On Redis Cluster all of matchmaking therefore lives on one shard. That is
ample: a ticket costs about 300 bytes (10,000 waiting players are ~3 MB), and queueing,
cancelling and claiming are single short scripts; the pass's HGETALL of a 10,000-ticket pool
takes a few milliseconds of that shard's time (see BENCHMARKS.md). Past one shard's reach,
split the pools into groups with one tag each and route every player to one group.

Pairing across nodes: a node takes a short lease on a pool (``SET NX PX``), reads the pool,
runs :func:`~server.matchmaking.policy.plan_pass` locally, then claims the chosen pairs with
``take.lua``, which removes both tickets of a pair only if both are still stored exactly as
read. The claim is the guarantee that nobody is handed two games (a player who cancelled or
re-queued meanwhile spoils only their own pair); the lease only keeps nodes from doing the
same pass twice at once, so an expired lease costs work, never correctness.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, cast

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from server.matchmaking.errors import InvalidTicketError, NotQueuedError, QueueFullError
from server.matchmaking.policy import (
    DEFAULT_SETTINGS,
    NEW_PLAYER_EXPERIENCE,
    POOLS,
    MatchmakingSettings,
    Pairing,
    Pool,
    Ticket,
    TicketStatus,
    admit,
    plan_pass,
    pool_by_id,
    ticket_status,
)

__all__ = [
    "DEFAULT_QUEUE_SETTINGS",
    "Enqueued",
    "MatchmakingKeys",
    "MatchmakingQueue",
    "PassResult",
    "QueueSettings",
    "decode_ticket",
    "encode_ticket",
    "pairing_loop",
]

log = logging.getLogger(__name__)

TAG = "{mm}"
"""The hash tag every matchmaking key carries (see the module docstring)."""


@cache
def _lua(name: str) -> str:
    return (
        resources.files("server.matchmaking").joinpath("lua", name).read_text(encoding="utf-8")
    )


@dataclass(frozen=True, slots=True)
class MatchmakingKeys:
    """Every matchmaking key name under one prefix (which must not contain braces)."""

    prefix: str = ""

    def __post_init__(self) -> None:
        if "{" in self.prefix or "}" in self.prefix:
            raise ValueError("prefix: must not contain '{' or '}' (it would change the hash tag)")

    @property
    def players(self) -> str:
        """Hash player -> pool id: the one ticket a player holds."""
        return f"{self.prefix}mm:{TAG}:players"

    def pool(self, pool_id: str) -> str:
        """Hash player -> ticket JSON: the pool's waiting tickets."""
        return f"{self.prefix}mm:{TAG}:pool:{pool_id}"

    def lease(self, pool_id: str) -> str:
        """String with a TTL: the token of the node running the pool's pairing pass."""
        return f"{self.prefix}mm:{TAG}:lease:{pool_id}"

    @property
    def pools(self) -> list[str]:
        """Every pool's ticket hash, in :data:`POOLS` order."""
        return [self.pool(pool.id) for pool in POOLS]


@dataclass(frozen=True, slots=True)
class QueueSettings:
    """Redis-side knobs. ``lease_ms``: how long a pairing lease lasts (a pass normally ends
    and releases it far sooner); ``claim_batch``: pairs per claim script call (bounds how long
    one script blocks Redis); ``pass_interval``: seconds between passes in
    :func:`pairing_loop`; ``max_tickets``: most tickets one pool may hold (0 = no limit)."""

    lease_ms: int = 5000
    claim_batch: int = 256
    pass_interval: float = 1.0
    max_tickets: int = 100_000

    def __post_init__(self) -> None:
        if not isinstance(self.lease_ms, int) or self.lease_ms < 1:
            raise ValueError(f"lease_ms: must be an integer >= 1, got {self.lease_ms!r}")
        if not isinstance(self.claim_batch, int) or self.claim_batch < 1:
            raise ValueError(f"claim_batch: must be an integer >= 1, got {self.claim_batch!r}")
        if not math.isfinite(self.pass_interval) or self.pass_interval <= 0:
            raise ValueError(f"pass_interval: must be > 0 seconds, got {self.pass_interval!r}")
        if not isinstance(self.max_tickets, int) or self.max_tickets < 0:
            raise ValueError(f"max_tickets: must be an integer >= 0, got {self.max_tickets!r}")


DEFAULT_QUEUE_SETTINGS = QueueSettings()


def encode_ticket(ticket: Ticket) -> str:
    """The stored form of a ticket: compact JSON, version 1."""
    data: dict[str, object] = {
        "v": 1,
        "id": ticket.ticket_id,
        "player": ticket.player,
        "pool": ticket.pool,
        "rating": ticket.rating,
        "queued_at": ticket.queued_at,
        "address": ticket.address,
        "guest": ticket.is_guest,
        "new": ticket.is_new,
        "node": ticket.node,
    }
    if ticket.name:
        data["name"] = ticket.name
    if ticket.experience is not None:
        data["experience"] = ticket.experience
    if ticket.recent_games is not None:
        data["recent_games"] = ticket.recent_games
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def decode_ticket(raw: str | bytes) -> Ticket:
    """A ticket back from its stored form; :class:`InvalidTicketError` when it is not one."""
    try:
        data = json.loads(raw)
        if not isinstance(data, dict) or data.get("v") != 1:
            raise InvalidTicketError("ticket: unknown stored format", field="ticket")
        return Ticket(
            player=data["player"],
            pool=data["pool"],
            rating=data["rating"],
            queued_at=data["queued_at"],
            address=data["address"],
            is_guest=data["guest"],
            is_new=data["new"],
            node=data["node"],
            ticket_id=data["id"],
            name=data.get("name", ""),
            experience=data.get("experience"),
            recent_games=data.get("recent_games"),
        )
    except (ValueError, KeyError, TypeError) as error:
        if isinstance(error, InvalidTicketError):
            raise
        raise InvalidTicketError(f"ticket: unreadable ({error})", field="ticket") from None


@dataclass(frozen=True, slots=True)
class Enqueued:
    """A stored ticket; ``replaced_pool`` is the pool of the ticket it replaced (or None);
    ``status`` is what the player sees right away (waited 0, the starting window)."""

    ticket: Ticket
    replaced_pool: str | None
    status: TicketStatus


@dataclass(frozen=True, slots=True)
class PassResult:
    """One pairing pass over one pool, as applied to Redis.

    ``pairs``: claimed — both tickets are gone from the queue, start these games.
    ``lost``: chosen by the pass but not claimed because a ticket changed meanwhile (the
    player cancelled, re-queued or was claimed by another node); nothing to do.
    ``expired``: removed after waiting longer than ``ticket_ttl`` (tell the players).
    ``dropped``: removed because they could never pair in this pool (unreadable, or a guest
    in a rated pool). ``waiting``: tickets the pass left in the pool.
    """

    pool: Pool
    now: float
    pairs: tuple[Pairing, ...] = ()
    lost: tuple[Pairing, ...] = ()
    expired: tuple[Ticket, ...] = ()
    dropped: tuple[Ticket, ...] = ()
    waiting: int = 0
    scan_exhausted: int = field(default=0)


RedisClient = aioredis.Redis | aioredis.RedisCluster


class MatchmakingQueue:
    """The shared queue, seen from one node.

    ``redis`` is a ``redis.asyncio`` client (``Redis`` or ``RedisCluster``) created with the
    default ``decode_responses=False``. ``node`` names this node in the tickets it stores.
    ``clock`` gives "now" (epoch seconds) wherever a method's ``now`` is left out.
    """

    def __init__(
        self,
        redis: RedisClient,
        *,
        prefix: str = "",
        node: str = "",
        settings: MatchmakingSettings = DEFAULT_SETTINGS,
        queue_settings: QueueSettings = DEFAULT_QUEUE_SETTINGS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.redis = redis
        self.keys = MatchmakingKeys(prefix)
        self.node = node
        self.settings = settings
        self.queue_settings = queue_settings
        self.clock = clock
        self._pool_ids = [pool.id for pool in POOLS]
        self._pool_keys = self.keys.pools
        # RedisCluster has the same script API; redis-py only types it for Redis.
        client = cast("aioredis.Redis", redis)
        self._enqueue = client.register_script(_lua("enqueue.lua"))
        self._remove = client.register_script(_lua("remove.lua"))
        self._take = client.register_script(_lua("take.lua"))
        self._release = client.register_script(_lua("release_lease.lua"))
        self._scripts = (self._enqueue, self._remove, self._take, self._release)

    async def load_scripts(self) -> None:
        """Load every script into Redis now (optional; the first call loads it anyway)."""
        for script in self._scripts:
            await self.redis.script_load(script.script)

    # --- one player -------------------------------------------------------------------------

    async def enqueue(
        self,
        player: str,
        pool: str,
        *,
        rating: float,
        address: str,
        is_guest: bool = False,
        in_ranked_game: bool = False,
        is_new: bool | None = None,
        experience: int | None = None,
        recent_games: int | None = None,
        name: str = "",
        now: float | None = None,
    ) -> Enqueued:
        """Queue ``player`` in ``pool``, replacing any ticket they hold (in any pool).

        ``rating`` is the player's rating on the pool's ladder; ``is_new`` defaults to FIBS
        ``experience`` below 10 in FIBS pools. Raises :class:`UnknownPoolError`,
        :class:`InRankedGameError` (when the caller says the player is in a ranked game),
        :class:`GuestNotAllowedError`, :class:`InvalidTicketError` (naming the field) or
        :class:`QueueFullError`.
        """
        target = admit(pool, is_guest=is_guest, in_ranked_game=in_ranked_game)
        if is_new is None:
            is_new = (
                target.is_fibs and experience is not None and experience < NEW_PLAYER_EXPERIENCE
            )
        at = self.clock() if now is None else now
        ticket = Ticket(
            player=player,
            pool=target.id,
            rating=rating,
            queued_at=at,
            address=address,
            is_guest=is_guest,
            is_new=is_new,
            node=self.node,
            ticket_id=secrets.token_hex(8),
            name=name,
            experience=experience,
            recent_games=recent_games,
        )
        status, previous = await self._store(ticket, mode="replace")
        if status < 0:
            raise QueueFullError(f"pool: {target.id} is full, try again later", field="pool")
        return Enqueued(
            ticket=ticket,
            replaced_pool=previous or None,
            status=ticket_status(ticket, at, self.settings),
        )

    async def requeue(self, ticket: Ticket) -> bool:
        """Put ``ticket`` back as it was (same ``queued_at``, so the wait counts on), unless
        the player holds a ticket again by now. For a pair whose game could not start.
        Returns whether it was stored."""
        status, _ = await self._store(ticket, mode="absent")
        return status == 1

    async def _store(self, ticket: Ticket, *, mode: str) -> tuple[int, str]:
        position = self._pool_ids.index(ticket.pool) + 1
        reply = await self._enqueue(
            keys=[self.keys.players, *self._pool_keys],
            args=[
                ticket.player,
                position,
                encode_ticket(ticket),
                mode,
                *self._pool_ids,
                self.queue_settings.max_tickets,
            ],
        )
        status, previous = reply
        return int(status), _text(previous)

    async def cancel(self, player: str) -> Ticket:
        """Take the player's ticket out of the queue; raises :class:`NotQueuedError` when
        there is none. Returns the cancelled ticket."""
        removed = await self.remove(player)
        if removed is None:
            raise NotQueuedError("you are not queued", field="player")
        return removed

    async def remove(self, player: str, *, only_node: str | None = None) -> Ticket | None:
        """Remove the player's ticket if there is one (idempotent; for disconnects).

        With ``only_node`` the ticket is removed only when it was queued through that node
        and is still the same ticket (a player who re-queued through another node keeps the
        new ticket). Returns the removed ticket, or None.
        """
        if only_node is not None:
            held = await self.ticket(player)
            if held is None or held.node != only_node:
                return None
            taken = await self._take_groups(held.pool, 1, [(held.player, encode_ticket(held))])
            return held if taken and taken[0] else None
        raw = await self._remove(
            keys=[self.keys.players, *self._pool_keys], args=[player, *self._pool_ids]
        )
        text = _text(raw)
        if not text:
            return None
        try:
            return decode_ticket(text)
        except InvalidTicketError:
            return None

    async def ticket(self, player: str) -> Ticket | None:
        """The ticket the player holds now, or None."""
        pool_id = _text(await self.redis.hget(self.keys.players, player))  # type: ignore[misc]
        if not pool_id or pool_id not in self._pool_ids:
            return None
        raw = await self.redis.hget(self.keys.pool(pool_id), player)  # type: ignore[misc]
        if raw is None:
            return None
        try:
            return decode_ticket(raw)
        except InvalidTicketError:
            return None

    async def status(self, player: str, *, now: float | None = None) -> TicketStatus | None:
        """How long the player has waited and how wide their window is now (None: not
        queued)."""
        held = await self.ticket(player)
        if held is None:
            return None
        return ticket_status(held, self.clock() if now is None else now, self.settings)

    # --- pools ------------------------------------------------------------------------------

    async def sizes(self) -> dict[str, int]:
        """Waiting tickets per pool id, every pool listed (for ``GET /api/matchmaking``)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for key in self._pool_keys:
                pipe.hlen(key)
            counts = await pipe.execute()
        return {pool_id: int(count) for pool_id, count in zip(self._pool_ids, counts, strict=True)}

    async def tickets(self, pool: str) -> list[Ticket]:
        """Every readable ticket waiting in ``pool`` (any order)."""
        tickets, _, _ = await self._read_pool(pool_by_id(pool))
        return tickets

    async def _read_pool(self, pool: Pool) -> tuple[list[Ticket], dict[str, str], list[str]]:
        """(tickets, raw ticket text by player, players whose ticket is unreadable)."""
        stored: Mapping[bytes, bytes] = await self.redis.hgetall(  # type: ignore[misc]
            self.keys.pool(pool.id)
        )
        tickets: list[Ticket] = []
        raw: dict[str, str] = {}
        unreadable: list[str] = []
        for key, value in stored.items():
            player = _text(key)
            text = _text(value)
            raw[player] = text
            try:
                ticket = decode_ticket(text)
            except InvalidTicketError:
                unreadable.append(player)
                continue
            if ticket.player != player or ticket.pool != pool.id:
                unreadable.append(player)
                continue
            tickets.append(ticket)
        return tickets, raw, unreadable

    # --- pairing ----------------------------------------------------------------------------

    async def run_pass(self, pool: str, *, now: float | None = None) -> PassResult | None:
        """Pair ``pool`` once, if no other node is pairing it right now (else None).

        Takes the pool's lease, reads its tickets, plans with
        :func:`~server.matchmaking.policy.plan_pass` at ``now`` and claims the pairs and
        removes expired tickets with ``take.lua``; the lease is released at the end.
        """
        target = pool_by_id(pool)
        token = f"{self.node}:{secrets.token_hex(8)}"
        lease = self.keys.lease(target.id)
        acquired = await self.redis.set(lease, token, nx=True, px=self.queue_settings.lease_ms)
        if not acquired:
            return None
        try:
            return await self.pair_unleased(target.id, now=now)
        finally:
            try:
                await self._release(keys=[lease], args=[token])
            except RedisError as error:  # the lease expires on its own
                log.warning("matchmaking lease release for %s: %s", target.id, error)

    async def pair_unleased(self, pool: str, *, now: float | None = None) -> PassResult:
        """One pairing pass without the lease: safe (claims check every ticket), but two
        nodes doing it at once waste work. :meth:`run_pass` is the normal entry point."""
        target = pool_by_id(pool)
        at = self.clock() if now is None else now
        tickets, raw, unreadable = await self._read_pool(target)
        plan = plan_pass(target, tickets, at, self.settings)

        singles = [(t.player, raw[t.player]) for t in (*plan.expired, *plan.rejected)]
        singles += [(player, raw[player]) for player in unreadable]
        removed = await self._take_groups(target.id, 1, singles)
        gone = {player for (player, _), ok in zip(singles, removed, strict=True) if ok}

        groups = [
            (pair.first.player, raw[pair.first.player], pair.second.player, raw[pair.second.player])
            for pair in plan.pairs
        ]
        claimed = await self._take_groups(target.id, 2, groups)
        pairs = tuple(p for p, ok in zip(plan.pairs, claimed, strict=True) if ok)
        lost = tuple(p for p, ok in zip(plan.pairs, claimed, strict=True) if not ok)
        return PassResult(
            pool=target,
            now=at,
            pairs=pairs,
            lost=lost,
            expired=tuple(t for t in plan.expired if t.player in gone),
            dropped=tuple(t for t in plan.rejected if t.player in gone),
            waiting=plan.waiting + 2 * len(lost),
            scan_exhausted=plan.scan_exhausted,
        )

    async def run_all(self, *, now: float | None = None) -> list[PassResult]:
        """:meth:`run_pass` over every pool; pools another node is pairing are skipped."""
        results: list[PassResult] = []
        for pool in POOLS:
            result = await self.run_pass(pool.id, now=now)
            if result is not None:
                results.append(result)
        return results

    async def remove_node_tickets(self, node: str) -> list[Ticket]:
        """Remove every ticket queued through ``node`` (at that node's start-up or shutdown,
        or when it is known dead). Returns the removed tickets."""
        removed: list[Ticket] = []
        for pool in POOLS:
            tickets, raw, _ = await self._read_pool(pool)
            mine = [t for t in tickets if t.node == node]
            taken = await self._take_groups(pool.id, 1, [(t.player, raw[t.player]) for t in mine])
            removed += [t for t, ok in zip(mine, taken, strict=True) if ok]
        return removed

    async def _take_groups(
        self, pool_id: str, size: int, groups: Iterable[tuple[str, ...]]
    ) -> list[bool]:
        """Run take.lua over ``groups`` (each ``size`` (player, ticket) pairs, flattened) in
        batches of ``claim_batch``; one bool per group."""
        batch_size = self.queue_settings.claim_batch
        keys = [self.keys.players, self.keys.pool(pool_id)]
        results: list[bool] = []
        batch: list[str] = []
        count = 0

        async def flush() -> None:
            nonlocal batch, count
            if count:
                reply = await self._take(keys=keys, args=[size, pool_id, *batch])
                results.extend(bool(int(flag)) for flag in reply)
                batch, count = [], 0

        for group in groups:
            if len(group) != 2 * size:
                raise ValueError(f"group: needs {2 * size} items, got {len(group)}")
            batch.extend(group)
            count += 1
            if count >= batch_size:
                await flush()
        await flush()
        return results


def _text(value: Any) -> str:
    if value is None or value is False:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


async def pairing_loop(
    queue: MatchmakingQueue,
    on_result: Callable[[PassResult], Awaitable[None]],
    *,
    interval: float | None = None,
) -> None:
    """Pair every pool every ``interval`` seconds (default ``queue_settings.pass_interval``)
    until cancelled; ``on_result`` gets each pass that claimed pairs or removed tickets.

    Run one per node (``asyncio.create_task`` in the app's cleanup context, cancelled on
    shutdown); leases keep the nodes from pairing one pool at the same time. A Redis error
    is logged and the next pass tried one interval later; an error raised by ``on_result`` is
    logged and does not stop the loop.
    """
    period = queue.queue_settings.pass_interval if interval is None else interval
    while True:
        started = time.monotonic()
        try:
            for result in await queue.run_all():
                if result.pairs or result.expired or result.dropped:
                    try:
                        await on_result(result)
                    except asyncio.CancelledError:
                        raise
                    except Exception:
                        log.exception("matchmaking: handling a pass over %s", result.pool.id)
        except (RedisError, OSError) as error:
            log.warning("matchmaking pass failed: %s", error)
        # A little jitter keeps the nodes' passes from lining up.
        pause = period * (0.9 + 0.2 * secrets.randbelow(1000) / 1000)
        await asyncio.sleep(max(0.0, pause - (time.monotonic() - started)))
