"""The matchmaking queue in Redis, shared by every server node.

Any node may queue a player, cancel, or run a pool's pairing pass; Redis holds the only copy
of the queue. The rules and the pairing itself are the pure :mod:`server.matchmaking.policy`;
this module only moves tickets in and out of Redis and claims pairs atomically. It stays one
module past 500 lines: the ticket's stored form, the keys and the queue's scripts are one
contract, each script reading what the encoder wrote.

Keys (:class:`MatchmakingKeys`), all under the one hash tag ``{mm}``::

    <prefix>mm:{mm}:players        hash    player -> pool id   (the player index)
    <prefix>mm:{mm}:pool:<pool>    hash    player -> ticket (tab-separated, see encode_ticket)
    <prefix>mm:{mm}:lease:<pool>   string  token of the node running the pool's pass (PX)

One ticket per player across all pools is an atomic update of the index and two pools, so the
index and every pool share a slot: a per-pool tag would put "queue in pool B, leave pool A"
across two slots. On Redis Cluster all of matchmaking therefore lives on one shard. That is
ample: a ticket takes about 260 bytes with its index entry (10,000 waiting players: 2.6 MB);
queueing, cancelling and claiming are single short scripts; a pass over a 10,000-ticket pool
costs that shard about 10 ms of CPU to read it and 30 ms to claim 5,000 pairs (BENCHMARKS.md).
Past one shard's reach, split the pools into groups with one tag each and route every player
to one group.

Pairing across nodes: a node takes a short lease on a pool (``SET NX PX``), reads the pool,
runs :func:`~server.matchmaking.policy.plan_pass` locally, then claims the chosen pairs with
``take.lua``, which removes both tickets of a pair only if both are still the tickets read
(same random ticket id: every enqueue writes a new one). The claim is the guarantee that
nobody is handed two games (a player who cancelled or re-queued meanwhile spoils only their
own pair); the lease only keeps nodes from doing the same pass twice at once, so an expired
lease costs work, never correctness.
"""

from __future__ import annotations

import asyncio
import logging
import math
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
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
from server.store.read_batch import reads
from server.store.scripts import load_script

__all__ = [
    "DEFAULT_QUEUE_SETTINGS",
    "Enqueued",
    "MatchmakingKeys",
    "MatchmakingQueue",
    "PassResult",
    "QueueSettings",
    "decode_ticket",
    "encode_ticket",
    "pairing_pass",
]

log = logging.getLogger(__name__)

TAG = "{mm}"
"""The hash tag every matchmaking key carries (see the module docstring)."""


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
        """Hash player -> ticket (:func:`encode_ticket`): the pool's waiting tickets."""
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
    """Redis-side knobs.

    ``lease_ms``: longest a pass may hold its pool's lease (a pass normally ends far sooner);
    ``hold_ms``: how long the lease stays after a pass, so the pool is paired about once per
    ``hold_ms`` however many nodes run :func:`pairing_pass` (0: release at once);
    ``claim_batch``: pairs per claim script call (bounds how long one script blocks Redis);
    ``pass_interval``: seconds between one node's passes (:func:`pairing_pass`);
    ``max_tickets``: most tickets one pool may hold (0 = no limit).
    """

    lease_ms: int = 5000
    hold_ms: int = 800
    claim_batch: int = 256
    pass_interval: float = 1.0
    max_tickets: int = 100_000

    def __post_init__(self) -> None:
        if not isinstance(self.lease_ms, int) or self.lease_ms < 1:
            raise ValueError(f"lease_ms: must be an integer >= 1, got {self.lease_ms!r}")
        if not isinstance(self.hold_ms, int) or not 0 <= self.hold_ms <= self.lease_ms:
            raise ValueError(f"hold_ms: must be an integer 0..lease_ms, got {self.hold_ms!r}")
        if not isinstance(self.claim_batch, int) or self.claim_batch < 1:
            raise ValueError(f"claim_batch: must be an integer >= 1, got {self.claim_batch!r}")
        if not math.isfinite(self.pass_interval) or self.pass_interval <= 0:
            raise ValueError(f"pass_interval: must be > 0 seconds, got {self.pass_interval!r}")
        if not isinstance(self.max_tickets, int) or self.max_tickets < 0:
            raise ValueError(f"max_tickets: must be an integer >= 0, got {self.max_tickets!r}")


DEFAULT_QUEUE_SETTINGS = QueueSettings()


TICKET_FORMAT = "t1"
"""First field of a stored ticket; a format change gets a new tag."""


def encode_ticket(ticket: Ticket) -> str:
    """The stored form of a ticket: tab-separated fields (never present inside a field, as
    every text field of a ticket is printable), in this order::

        t1  ticket_id  player  pool  rating  queued_at  address  guest(0/1)  new(0/1)
        node  name  experience  recent_games          (empty when None)

    Numbers are written so that they read back exactly (``repr`` of a float).
    ``take.lua`` relies on the first two fields: a ticket is "unchanged" while it still
    starts with ``t1<TAB><ticket_id><TAB>``.
    """
    return "\t".join(
        (
            TICKET_FORMAT,
            ticket.ticket_id,
            ticket.player,
            ticket.pool,
            repr(ticket.rating),
            repr(ticket.queued_at),
            ticket.address,
            "1" if ticket.is_guest else "0",
            "1" if ticket.is_new else "0",
            ticket.node,
            ticket.name,
            "" if ticket.experience is None else str(ticket.experience),
            "" if ticket.recent_games is None else str(ticket.recent_games),
        )
    )


def decode_ticket(raw: str | bytes) -> Ticket:
    """A ticket back from its stored form; :class:`InvalidTicketError` when it is not one."""
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    fields = text.split("\t")
    if len(fields) != 13 or fields[0] != TICKET_FORMAT:
        raise InvalidTicketError("ticket: unknown stored format", field="ticket")
    _, ticket_id, player, pool, rating, queued_at, address, guest, new, node, name = fields[:11]
    experience, recent = fields[11:]
    try:
        return Ticket(
            player=player,
            pool=pool,
            rating=_number(rating),
            queued_at=_number(queued_at),
            address=address,
            is_guest=guest == "1",
            is_new=new == "1",
            node=node,
            ticket_id=ticket_id,
            name=name,
            experience=int(experience) if experience else None,
            recent_games=int(recent) if recent else None,
        )
    except ValueError as error:
        if isinstance(error, InvalidTicketError):
            raise
        raise InvalidTicketError(f"ticket: unreadable ({error})", field="ticket") from None


def _number(text: str) -> float:
    """An int when written as one (Table42 ratings), else a float."""
    if text.isdigit():
        return int(text)
    return float(text)


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
    ``dropped``: removed because they could never pair in this pool (a guest in a rated
    pool). ``waiting``: tickets the pass left in the pool. ``unreadable``: stored entries
    this node could not read (left in place; see :meth:`MatchmakingQueue.tickets`).
    """

    pool: Pool
    now: float
    pairs: tuple[Pairing, ...] = ()
    lost: tuple[Pairing, ...] = ()
    expired: tuple[Ticket, ...] = ()
    dropped: tuple[Ticket, ...] = ()
    waiting: int = 0
    unreadable: int = 0
    scan_exhausted: int = 0


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
        self._enqueue = client.register_script(load_script("enqueue.lua"))
        self._remove = client.register_script(load_script("remove.lua"))
        self._take = client.register_script(load_script("take.lua"))
        self._read = client.register_script(load_script("read_pool.lua"))
        self._release = client.register_script(load_script("release_lease.lua"))
        self._scripts = (self._enqueue, self._remove, self._take, self._read, self._release)

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
            taken = await self._take_groups(held.pool, 1, [(held.player, held.ticket_id)])
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

    async def tickets_of(self, players: Iterable[str]) -> dict[str, Ticket]:
        """Player -> the ticket they hold now, for those of ``players`` who hold one (two
        pipelined round trips however many players: for periodic status updates)."""
        wanted = list(dict.fromkeys(players))
        if not wanted:
            return {}
        pools = await self.redis.hmget(self.keys.players, wanted)  # type: ignore[misc]
        held = [
            (player, pool_id)
            for player, pool_id in zip(wanted, (_text(p) for p in pools), strict=True)
            if pool_id in self._pool_ids
        ]
        if not held:
            return {}
        async with self.redis.pipeline(transaction=False) as pipe:
            for player, pool_id in held:
                pipe.hget(self.keys.pool(pool_id), player)
            raws = await pipe.execute()
        found: dict[str, Ticket] = {}
        for (player, _), raw in zip(held, raws, strict=True):
            if raw is None:
                continue
            try:
                ticket = decode_ticket(raw)
            except InvalidTicketError:
                continue
            if ticket.player == player:
                found[player] = ticket
        return found

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
        tickets, _ = await self._read_pool(pool_by_id(pool))
        return tickets

    async def _read_pool(self, pool: Pool) -> tuple[list[Ticket], int]:
        """(the pool's tickets, how many stored entries could not be read).

        Unreadable entries are left alone: they may be tickets in a newer format written by
        a newer node during a rolling upgrade; that node pairs them.
        """
        reply = await self._read(keys=[self.keys.pool(pool.id)], args=[])
        text = _text(reply)
        if not text:
            return [], 0
        parts = text.split("\n")
        tickets: list[Ticket] = []
        unreadable = 0
        for index in range(0, len(parts) - 1, 2):
            player = parts[index]
            try:
                ticket = decode_ticket(parts[index + 1])
            except InvalidTicketError:
                unreadable += 1
                continue
            if ticket.player != player or ticket.pool != pool.id:
                unreadable += 1
                continue
            tickets.append(ticket)
        if unreadable:
            log.warning("matchmaking: %d unreadable tickets in %s", unreadable, pool.id)
        return tickets, unreadable

    # --- pairing ----------------------------------------------------------------------------

    async def run_pass(self, pool: str, *, now: float | None = None) -> PassResult | None:
        """Pair ``pool`` once, unless its lease is taken (another node is pairing it, or
        paired it less than ``hold_ms`` ago): then None.

        Takes the pool's lease, reads its tickets, plans with
        :func:`~server.matchmaking.policy.plan_pass` at ``now``, claims the pairs and removes
        expired tickets with ``take.lua``; at the end the lease is cut to ``hold_ms``.
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
                await self._release(keys=[lease], args=[token, self.queue_settings.hold_ms])
            except RedisError as error:  # the lease expires on its own
                log.warning("matchmaking lease release for %s: %s", target.id, error)

    async def pair_unleased(self, pool: str, *, now: float | None = None) -> PassResult:
        """One pairing pass without the lease: safe (claims check every ticket), but two
        nodes doing it at once waste work. :meth:`run_pass` is the normal entry point."""
        target = pool_by_id(pool)
        at = self.clock() if now is None else now
        tickets, unreadable = await self._read_pool(target)
        plan = plan_pass(target, tickets, at, self.settings)

        singles = [(t.player, t.ticket_id) for t in (*plan.expired, *plan.rejected)]
        removed = await self._take_groups(target.id, 1, singles)
        gone = {player for (player, _), ok in zip(singles, removed, strict=True) if ok}

        groups = [
            (pair.first.player, pair.first.ticket_id, pair.second.player, pair.second.ticket_id)
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
            unreadable=unreadable,
            scan_exhausted=plan.scan_exhausted,
        )

    async def run_all(self, *, now: float | None = None,
                      skip_empty: bool = False) -> list[PassResult]:
        """:meth:`run_pass` over every pool; pools another node is pairing are skipped, and
        with ``skip_empty`` the pools with no ticket (one read for all of them: a pass over
        an empty pool pairs and removes nothing, and costs three round trips; none at all
        when the player index is empty, as every ticket is in it: one ``HLEN``)."""
        pools: Iterable[Pool] = POOLS
        if skip_empty:
            if not await reads(self.redis).hlen(self.keys.players):
                return []
            sizes = await self.sizes()
            pools = [pool for pool in POOLS if sizes.get(pool.id)]
        results: list[PassResult] = []
        for pool in pools:
            result = await self.run_pass(pool.id, now=now)
            if result is not None:
                results.append(result)
        return results

    async def remove_node_tickets(self, node: str) -> list[Ticket]:
        """Remove every ticket queued through ``node`` (at that node's start-up or shutdown,
        or when it is known dead). Returns the removed tickets."""
        removed: list[Ticket] = []
        for pool in POOLS:
            tickets, _ = await self._read_pool(pool)
            mine = [t for t in tickets if t.node == node]
            taken = await self._take_groups(pool.id, 1, [(t.player, t.ticket_id) for t in mine])
            removed += [t for t, ok in zip(mine, taken, strict=True) if ok]
        return removed

    async def _take_groups(
        self, pool_id: str, size: int, groups: Iterable[tuple[str, ...]]
    ) -> list[bool]:
        """Run take.lua over ``groups`` (each ``size`` (player, ticket id) pairs, flattened) in
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


async def pairing_pass(
    queue: MatchmakingQueue,
    on_result: Callable[[PassResult], Awaitable[None]],
) -> None:
    """Pair every pool once; ``on_result`` gets each pass that claimed pairs or removed
    tickets.

    Run by one node's tick every ``queue_settings.pass_interval`` seconds (each node's tick
    keeps its own start time, so the nodes' passes do not line up); leases keep the nodes from
    pairing one pool at the same time. A failed pass (Redis unreachable, say) raises, for the
    tick to log; an error raised by ``on_result`` is logged and the other pools' results are
    handed over all the same.
    """
    for result in await queue.run_all(skip_empty=True):
        if result.pairs or result.expired or result.dropped:
            try:
                await on_result(result)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("matchmaking: handling a pass over %s", result.pool.id)
