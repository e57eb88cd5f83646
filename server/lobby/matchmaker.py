"""Lobby matchmaking on a live node: the ``queue`` / ``cancel_queue`` / ``queue_status``
messages, the pairing passes that start the games, and what ``GET /api/matchmaking`` shows
(:meth:`Matchmaker.overview`; the route is ``server/net/matchmaking_api.py``'s).

The thin I/O shell around :mod:`server.matchmaking` (the pure policy and the Redis queue that
every node shares). What it adds is what only a server knows: who the player is (the socket's
token), where they connect from (the socket's address, X-Forwarded-For from trusted proxies),
whether they hold a seat, their standing in the rating store, and how to start a game.

A ticket is made from the rating store at queue time: the Table42 rating and the Competitive
games of the last 7 days (for K) in the ``competitive`` pool; the FIBS rating and experience in
the ``match-n`` pools; the Table42 rating in ``boosted`` (a guest counts as 1500 there).

A ticket goes away when the player cancels, queues again (replaced), their last socket on the
node that queued them closes, they sit down at a table (create, join, or any game starting),
it is paired, or it waits longer than the ticket lifetime (``queue_expired``). A node removes
the tickets queued through it when it starts (left by an earlier run under the same node id)
and when it stops.

Lifecycle (``app.py``'s cleanup context): :meth:`Matchmaker.start` puts two duties on the
node's tick (``server/tick.py``): :func:`~server.store.queue.pairing_pass` (a pass over every
pool each ``matchmaking_pass_interval``; a per-pool lease makes nodes take turns, the claim
script makes sure nobody is handed two games) and the statuses (``queue_status`` to every
player waiting through this node each ``matchmaking_status_interval``);
:meth:`Matchmaker.stop` takes both off.

On each pair (:meth:`Matchmaker.on_pass`): start the game on this node (the table creation's
``start_rated_game``, in Boosted mode for ``boosted``); once both
seats are held, each player is sent ``match_found`` (table, opponent, stake preview), then
``seated`` and ``game_start`` follow. If one of them already sits at another table
(``already_seated``), that player's ticket is dropped and the other one is put back with its
original queue time.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from rating_plugin import table42
from rating_plugin.store import RatingStore
from server.config import Settings
from server.lobby.clock import LoopClock
from server.lobby.ports import Clock, GameStarter, Outbox, Peers, PlayerPush
from server.lobby.refusals import error_reply
from server.lobby.registry import TableRegistry
from server.lobby.table import TableStatus
from server.matchmaking import (
    GameMode,
    Pairing,
    Pool,
    Ticket,
    admit,
    expired_message,
    match_found_messages,
    overview,
    pairing_note,
    pool_by_id,
    status_message,
    ticket_status,
)
from server.matchmaking.messages import QUEUED
from server.metrics import Metrics
from server.protocol.codec import Outgoing
from server.protocol.errors import ErrorCode, ProtocolError
from server.protocol.messages import CancelQueue, JoinQueue, Message, QueueStatus, TableMode
from server.protocol.node_messages import Actor
from server.store.accounts import Identity
from server.store.persistence import Persistence
from server.store.queue import MatchmakingQueue, PassResult, QueueSettings, pairing_pass
from server.tables.ratings import RatingPlan
from server.tick import Tick

log = logging.getLogger(__name__)

NOTE_POOL_MAX = 64
"""Tickets a rated pool may hold for a waiting player's status to say why nobody there can
be paired with them (``note``); a fuller pool is not read for it."""

PAIRING = "matchmaking-pairing"
STATUS = "matchmaking-status"
"""The names of the matchmaking duties on the node's tick."""

QUEUE_CANCELLED = "queue_cancelled"
"""Sent when a ticket is taken away: ``reason`` ``cancelled`` (you asked) or ``seated``."""


def queue_settings(settings: Settings) -> QueueSettings:
    """The Redis queue's knobs from the server settings."""
    return QueueSettings(
        hold_ms=int(settings.matchmaking_hold * 1000),
        pass_interval=settings.matchmaking_pass_interval,
        max_tickets=settings.matchmaking_max_tickets,
    )


class Matchmaker:
    """Matchmaking for one node. Needs the node's Redis client, the table creation
    (``games``), the sockets here (``outbox``), rating store and persistence, the tables here
    (``registry``), its view of the other nodes (``peers``) and the delivery to players on
    any node (``players``); ``clock`` reads Unix time (``now()``)."""

    def __init__(
        self,
        settings: Settings,
        redis: aioredis.Redis,
        games: GameStarter,
        outbox: Outbox,
        ratings: RatingStore,
        persistence: Persistence,
        *,
        registry: TableRegistry,
        peers: Peers,
        players: PlayerPush,
        metrics: Metrics,
        clock: Clock | None = None,
        tick: Tick | None = None,
    ) -> None:
        """``tick``: the node's tick, which runs the passes and statuses (one of its own if
        not given)."""
        self.settings = settings
        self.tick = tick if tick is not None else Tick()
        self.policy = settings.matchmaking
        self.node_id = settings.node_id
        self.clock = clock = clock if clock is not None else LoopClock()
        self.queue = MatchmakingQueue(
            redis,
            prefix=settings.key_prefix,
            node=settings.node_id,
            settings=self.policy,
            queue_settings=queue_settings(settings),
            clock=clock.now,
        )
        self.games = games
        self.registry = registry
        self.peers = peers
        self.players = players
        self.metrics = metrics
        self.outbox = outbox
        self.ratings = ratings
        self.persistence = persistence
        self._waiting: set[str] = set()  # players who queued through this node
        self._handling: set[asyncio.Task[None]] = set()
        self._stopping = False

    # --- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Drop tickets an earlier run of this node left, then start pairing and status."""
        await self._remove_node_tickets("start-up")
        self.tick.add(PAIRING, self.queue.queue_settings.pass_interval, self.pairing_pass,
                      logger=log, what="matchmaking pass")
        self.tick.add(STATUS, self.settings.matchmaking_status_interval, self.push_statuses,
                      logger=log, what="matchmaking: status update")

    async def stop(self) -> None:
        """Stop pairing (a pair claimed meanwhile is put back, not started) and remove the
        tickets queued through this node."""
        self._stopping = True
        await self.tick.remove(PAIRING, STATUS)
        if self._handling:  # the passes in hand finish (they put their pairs back) first
            await asyncio.wait(set(self._handling), timeout=self.settings.shutdown_timeout)
        await self._remove_node_tickets("shutdown")
        self._waiting.clear()

    async def _remove_node_tickets(self, when: str) -> None:
        try:
            removed = await self.queue.remove_node_tickets(self.node_id)
        except (RedisError, OSError) as exc:
            log.warning("matchmaking: removing node %s tickets at %s: %s", self.node_id, when,
                        exc)
            return
        if removed:
            log.info("matchmaking: %d tickets of node %s removed at %s", len(removed),
                     self.node_id, when)

    async def node_died(self, node: str) -> None:
        """A node is gone, and with it its sockets: the tickets queued through it go."""
        removed = await self.queue.remove_node_tickets(node)
        for ticket in removed:
            self._waiting.discard(ticket.player)
        if removed:
            log.info("matchmaking: %d tickets of dead node %s removed", len(removed), node)

    async def _is_connected(self, ticket: Ticket) -> bool:
        """Whether the ticket's player may be handed a game: the node that queued them is
        alive and the player has a socket on a live node (a ticket dies with its session)."""
        is_live = self.peers.is_live
        if ticket.node and not is_live(ticket.node):
            return False
        if ticket.node == self.node_id:
            return bool(self.outbox.sockets_of(ticket.player))
        try:
            nodes, _ = await self.persistence.presence(ticket.player)
        except (RedisError, OSError):
            return True  # not known: the game start finds out
        return any(is_live(n) for n in nodes)

    # --- messages from this node's sockets ---------------------------------------------------

    async def on_message(self, identity: Identity, actor: Actor, msg: Message) -> None:
        """Answer one ``queue`` / ``cancel_queue`` / ``queue_status`` of ``identity`` on the
        socket of ``actor`` (errors: ``error``)."""
        reply: dict[str, Any]
        try:
            if isinstance(msg, JoinQueue):
                reply = await self._join(identity, actor, msg)
            elif isinstance(msg, CancelQueue):
                reply = await self._cancel(actor.player)
            elif isinstance(msg, QueueStatus):
                reply = await self._status(actor.player)
            else:
                raise ProtocolError(ErrorCode.UNKNOWN_TYPE, f"not a matchmaking message: "
                                    f"{msg.TYPE}", field="type")
            reply["ref"] = msg.ref
        except Exception as exc:
            reply = error_reply(exc, msg.ref, None, doing=f"handling {msg.TYPE} from "
                                f"{actor.player}", metrics=self.metrics)
        self.outbox.push_conn_id(actor.conn, Outgoing(reply))

    async def _join(self, identity: Identity, actor: Actor, msg: JoinQueue) -> dict[str, Any]:
        if identity.is_bot:
            raise ProtocolError(ErrorCode.BOT_NOT_ALLOWED,
                                "computer players do not enter matchmaking pools", field="pool")
        pool = pool_by_id(msg.pool)
        if pool.mode is GameMode.RATED_MATCH and pool.match_length > (
            self.settings.max_match_length
        ):
            raise ProtocolError(
                ErrorCode.UNKNOWN_POOL,
                f"pool: {pool.id} is not offered here (matches up to "
                f"{self.settings.max_match_length} points)",
                field="pool",
            )
        seat, in_ranked_game = await self._seat(identity.player)
        admit(pool.id, is_guest=identity.is_guest, in_ranked_game=in_ranked_game)
        if seat is not None:
            raise ProtocolError(
                ErrorCode.ALREADY_SEATED,
                f"you hold a seat at table {seat}; leave it before queueing", field="table",
            )
        standing = await self._standing(pool, identity)
        queued = await self.queue.enqueue(
            identity.player,
            pool.id,
            address=actor.address,
            is_guest=identity.is_guest,
            name=identity.name,
            **standing,
        )
        self._waiting.add(identity.player)
        notes = await self._notes([queued.status.ticket])
        return status_message(
            queued.status, kind=QUEUED, settings=self.policy, replaced_pool=queued.replaced_pool,
            note=notes.get(identity.player),
        )

    async def _seat(self, player: str) -> tuple[str | None, bool]:
        """(the table where ``player`` holds a seat, whether a rated game is on there).

        A seat at a finished table counts as free: it is released right after the result.
        """
        seat = await self.persistence.seat_of(player)
        if seat is None:
            return None, False
        table = self.registry.tables.get(seat)
        if table is not None:
            if table.status in (TableStatus.FINISHED, TableStatus.CLOSED):
                return None, False
            rated = table.plan is not None and table.plan.is_rated
            return seat, rated and table.status is TableStatus.PLAYING
        snapshot = await self.persistence.snapshot(seat)
        state = snapshot.get("state") if snapshot is not None else None
        if not isinstance(state, dict):
            return seat, False
        status = state.get("status")
        if status in (TableStatus.FINISHED, TableStatus.CLOSED):
            return None, False
        rating = state.get("rating")
        rated = isinstance(rating, dict) and rating.get("rated") is True
        return seat, rated and status == TableStatus.PLAYING

    async def _standing(self, pool: Pool, identity: Identity) -> dict[str, Any]:
        """The ticket's rating fields from the rating store (see the module docstring)."""
        if identity.is_guest:  # guests are never rated: the start rating, no Redis needed
            return {"rating": table42.START_RATING}
        if pool.is_fibs:
            fibs = await self.ratings.rating(identity.player, "fibs")
            return {"rating": fibs.rating, "experience": fibs.experience or 0}
        rating = await self.ratings.rating(identity.player, "table42")
        if pool.mode is GameMode.COMPETITIVE:
            recent = await self.ratings.recent_games(identity.player, self.clock.now())
            return {"rating": rating.rating, "recent_games": recent}
        return {"rating": rating.rating}

    async def _cancel(self, player: str) -> dict[str, Any]:
        ticket = await self.queue.cancel(player)
        self._waiting.discard(player)
        return self._cancelled(ticket, "cancelled")

    def _cancelled(self, ticket: Ticket, reason: str) -> dict[str, Any]:
        return {"type": QUEUE_CANCELLED, "pool": ticket.pool,
                "waited": ticket.waited(self.clock.now()), "reason": reason}

    async def _status(self, player: str) -> dict[str, Any]:
        status = await self.queue.status(player)
        if status is None:
            raise ProtocolError(ErrorCode.NOT_QUEUED, "you are not queued")
        notes = await self._notes([status.ticket])
        return status_message(status, settings=self.policy, note=notes.get(player))

    # --- tickets that go away ------------------------------------------------------------

    async def on_disconnect(self, player: str | None) -> None:
        """A socket of ``player`` closed (after the lobby forgot it): the player's last one
        on this node takes with it the ticket queued through this node."""
        if player is None or self.outbox.sockets_of(player):
            return
        self._waiting.discard(player)
        try:
            await self.queue.remove(player, only_node=self.node_id)
        except (RedisError, OSError) as exc:
            log.warning("matchmaking: removing %s's ticket on disconnect: %s", player, exc)

    async def players_seated(self, players: list[str]) -> None:
        """``players`` sat down at a table: their tickets go (they are told, ``seated``)."""
        for player in players:
            self._waiting.discard(player)
            try:
                removed = await self.queue.remove(player)
            except (RedisError, OSError) as exc:
                log.warning("matchmaking: removing %s's ticket on seating: %s", player, exc)
                continue
            if removed is not None:
                await self.players.push_to_player(player, self._cancelled(removed, "seated"))

    # --- pairing -------------------------------------------------------------------------

    async def on_pass(self, result: PassResult) -> None:
        """Start a game for each claimed pair; tell the owners of expired tickets.

        The work is shielded: stopping the pairing passes on shutdown never leaves claimed
        players without their game or their ticket (:meth:`stop` waits for it)."""
        task = asyncio.ensure_future(self._handle_pass(result))
        self._handling.add(task)
        task.add_done_callback(self._handled)
        await asyncio.shield(task)

    def _handled(self, task: asyncio.Task[None]) -> None:
        self._handling.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("matchmaking: handling a pass failed", exc_info=task.exception())

    async def _handle_pass(self, result: PassResult) -> None:
        for pair in result.pairs:
            try:
                await self._start(result.pool, pair, result.now)
            except Exception:
                log.exception("matchmaking: starting %s vs %s in %s failed",
                              pair.first.player, pair.second.player, result.pool.id)
        for ticket in result.expired:
            self._waiting.discard(ticket.player)
            await self.players.push_to_player(ticket.player, expired_message(ticket, result.now))

    async def _start(self, pool: Pool, pair: Pairing, now: float) -> None:
        first, second = pair.first, pair.second
        if self._stopping or self.registry.closing:
            # This node is going away; the other node's player keeps waiting, with the time
            # already waited (this node's tickets are removed by stop()).
            for ticket in (first, second):
                await self.queue.requeue(ticket)
            return

        if not all(self.peers.is_fresh(t.node) for t in (first, second) if t.node):
            # A node that queued one of them missed a heartbeat: wait until it is known
            # alive again (or dead, and its tickets gone) before handing anyone a game.
            for ticket in (first, second):
                await self.queue.requeue(ticket)
            return
        gone = [t for t in (first, second) if not await self._is_connected(t)]
        if gone:
            # Never a game for a player who is not there: their ticket is dropped (it was
            # claimed), the other goes back with the time already waited.
            for ticket in gone:
                self._waiting.discard(ticket.player)
                log.info("matchmaking: %s not connected any more; ticket dropped",
                         ticket.player)
                if ticket.node and not self.peers.is_live(ticket.node):
                    await self.node_died(ticket.node)
            for ticket in (first, second):
                if ticket not in gone:
                    await self.queue.requeue(ticket)
            return

        async def announce(table: str, plan: RatingPlan) -> None:
            try:
                for player, message in match_found_messages(
                        pair, table=table, now=now,
                        unrated_reason=plan.unrated_reason if pool.is_rated else None,
                ).items():
                    await self.players.push_to_player(player, message)
            except Exception:  # the game starts all the same; the seats are held already
                log.exception("matchmaking: announcing table %s failed", table)

        names = (first.display_name, second.display_name)
        addresses = (first.address, second.address)
        try:
            if pool.mode is GameMode.BOOSTED:
                await self.games.start_rated_game(
                    first.player, second.player, names=names, addresses=addresses,
                    mode=TableMode.BOOSTED, announce=announce,
                )
            else:
                await self.games.start_rated_game(
                    first.player,
                    second.player,
                    match_length=None if pool.mode is GameMode.COMPETITIVE
                    else pool.match_length,
                    names=names,
                    addresses=addresses,
                    announce=announce,
                )
        except ProtocolError as exc:
            if exc.code != ErrorCode.ALREADY_SEATED:
                raise
            seated, other = (first, second) if exc.field == "first" else (second, first)
            self._waiting.discard(seated.player)
            requeued = await self.queue.requeue(other)
            log.info("matchmaking: %s already seated; %s %s", seated.player, other.player,
                     "requeued" if requeued else "queued again meanwhile")
            return
        self._waiting.discard(first.player)
        self._waiting.discard(second.player)

    # --- status pushes -------------------------------------------------------------------

    async def pairing_pass(self) -> None:
        """Pair every pool once (:meth:`on_pass` gets what each pass did)."""
        await pairing_pass(self.queue, self.on_pass)

    async def push_statuses(self) -> None:
        """Send ``queue_status`` to every player waiting through this node (one read)."""
        players = [player for player in self._waiting if self.outbox.sockets_of(player)]
        self._waiting.intersection_update(players)
        if not players:
            return
        tickets = await self.queue.tickets_of(players)
        mine = {p: t for p, t in tickets.items() if t.node == self.node_id}
        notes = await self._notes(list(mine.values()))
        now = self.clock.now()
        for player in players:
            ticket = mine.get(player)
            if ticket is None:
                self._waiting.discard(player)  # paired, expired, or queued through another node
                continue
            status = ticket_status(ticket, now, self.policy)
            self.outbox.push_player(player, Outgoing(status_message(
                status, settings=self.policy, note=notes.get(player))))

    async def _notes(self, tickets: list[Ticket]) -> dict[str, str]:
        """The ``note`` of each of ``tickets`` that has one (``pairing_note``): each rated
        pool among them is read once, when it holds at most ``NOTE_POOL_MAX`` tickets (a
        pool that full is not one network waiting alone)."""
        pools = {t.pool for t in tickets if pool_by_id(t.pool).is_rated}
        notes: dict[str, str] = {}
        if not pools:
            return notes
        try:  # a hint: without it the status is still true
            sizes = await self.queue.sizes()
            for pool_id in pools:
                if sizes.get(pool_id, 0) > NOTE_POOL_MAX:
                    continue
                waiting = await self.queue.tickets(pool_id)
                pool = pool_by_id(pool_id)
                for ticket in tickets:
                    if ticket.pool == pool_id and (
                            note := pairing_note(pool, ticket, waiting, self.policy)):
                        notes[ticket.player] = note
        except (RedisError, OSError) as exc:
            log.warning("matchmaking: reading a pool for the status notes: %s", exc)
        return notes

    # --- what GET /api/matchmaking shows ----------------------------------------------

    async def overview(self) -> dict[str, Any]:
        """Players waiting per pool, and the window curve (``GET /api/matchmaking``).
        Raises RedisError or OSError while Redis is away."""
        sizes = await self.queue.sizes()
        body = overview(sizes, self.policy)
        limit = self.settings.max_match_length
        for entry in body["pools"]:
            entry["offered"] = entry["mode"] != GameMode.RATED_MATCH or (
                entry["match_length"] <= limit
            )
        body["window"]["ticket_ttl"] = self.policy.ticket_ttl
        body["pass_interval"] = self.settings.matchmaking_pass_interval
        return body
