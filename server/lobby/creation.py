"""Tables made on this node: opening (by a player, by matchmaking, by a tournament), the
creation limits, the lobby listing, and forgetting a finished table.

A player opens a table with ``create_table`` (:meth:`TableCreation.create_table`: the
creation limits per player and per address, open tables per node and per address); matchmaking
and tournaments seat two players at a new table and start play
(:meth:`TableCreation.start_rated_game`). Each new table takes its first owner record
(``takeover.py``) before anyone hears of it. The lobby index (``list_tables``) is written by the
owner only while it holds the table's record (:meth:`TableCreation.publish_listing`). A
finished table lingers ``finished_linger`` seconds, then is forgotten and its record marked
done (:meth:`TableCreation.forget_later`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from redis.exceptions import RedisError

from server.lobby.table import Table, TableStatus
from server.matchmaking.policy import network_key
from server.net.connection import Connection
from server.protocol.codec import Outgoing
from server.protocol.errors import ErrorCode, ProtocolError, retry_later
from server.protocol.messages import CreateTable, ListTables, TableMode
from server.protocol.node_messages import Actor
from server.protocol.visibility import Audience
from server.ratelimit import RateLimiter
from server.store.accounts import GUEST_PREFIX, is_bot_id
from server.store.persistence import FENCED_OUT
from server.store.retry import REDIS_AWAY, Backoff, retry_redis
from server.tables.machine import already_seated, check_new_table
from server.tables.ratings import RatedPlayer, RatingPlan, counts_for_pair_limit, plan_rating

if TYPE_CHECKING:
    from server.lobby.routing import Lobby

log = logging.getLogger(__name__)


class TableCreation:
    """Opens tables on this node for ``lobby``, lists them, and forgets them when done."""

    def __init__(self, lobby: Lobby) -> None:
        self.lobby = lobby
        self.settings = settings = lobby.settings
        self.node_id = lobby.node_id
        self.persistence = lobby.persistence
        # Table creation limits (hardening): a rate per player and per address, and open
        # tables per address on this node.
        on = settings.limits
        self._create_limit = RateLimiter(settings.table_create_rate if on else 0.0,
                                         settings.table_create_burst)
        self._open_by_address: dict[str, int] = {}
        self._creating = 0  # create_table requests past their checks, not yet a table
        # Tables that start_rated_game has announced but not yet seated: commands for them
        # wait for the seating instead of finding no table.
        self._starting: dict[str, asyncio.Event] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}  # table id -> its forget timer

    async def started(self, table_id: str) -> Table | None:
        """The table ``table_id`` of this node, once seated if it is being started now."""
        ready = self._starting.get(table_id)
        if ready is not None:
            await ready.wait()
        return self.lobby.tables.get(table_id)

    async def start_rated_game(
        self,
        first: str,
        second: str,
        *,
        match_length: int | None = None,
        names: tuple[str, str] | None = None,
        addresses: tuple[str, str] | None = None,
        mode: TableMode = TableMode.COMPETITIVE,
        announce: Callable[[str, RatingPlan], Awaitable[None]] | None = None,
        tournament_id: str | None = None,
        audience: Audience | None = None,
    ) -> str:
        """See :meth:`server.lobby.routing.Lobby.start_rated_game`."""
        length = check_new_table(mode, match_length, tournament_id, (first, second),
                                 max_match_length=self.settings.max_match_length,
                                 by_player=False)
        persistence = self.persistence
        table_id = self.new_table_id()
        taken: list[str] = []
        for slot, player in (("first", first), ("second", second)):
            held = await persistence.take_seat(player, table_id)
            if held is not None:
                for p in taken:
                    await persistence.release_seat(p, table_id)
                raise already_seated(held, player=player, field=slot)
            taken.append(player)
        seats: list[tuple[Actor, set[str]]] = []
        for i, player in enumerate((first, second)):
            nodes, address = await persistence.presence(player)
            if addresses is not None:
                address = addresses[i]
            name = names[i] if names is not None else player
            # A guest id can only come from a guest token; such a game is never rated.
            is_guest = player.startswith(GUEST_PREFIX)
            actor = Actor(player, name, is_guest, address or f"unknown-{player}", self.node_id,
                          "")
            seats.append((actor, set(nodes)))
        # The table is known here and in Redis before anyone hears of it: a player who syncs
        # the moment ``announce`` reaches them waits for the seating (see started) instead of
        # being told there is no such table.
        owners = self.lobby.forwarding.owners
        ready = self._starting[table_id] = asyncio.Event()
        try:
            try:
                await self.lobby.takeover.claim_new(table_id)
                owners[table_id] = self.node_id
                first_seat, second_seat = (actor for actor, _ in seats)
                pair = (RatedPlayer(first_seat.player, first_seat.is_guest, first_seat.address,
                                    is_bot_id(first_seat.player)),
                        RatedPlayer(second_seat.player, second_seat.is_guest,
                                    second_seat.address, is_bot_id(second_seat.player)))
                limited = await self.pair_limited(table_id, mode, length, pair)
                plan = plan_rating(mode, length, pair, pair_limited=limited)
                if announce is not None:
                    await announce(table_id, plan)
            except BaseException:
                # Nobody will sit at this table: free both seats, so that neither player is
                # held "already seated" at a table that does not exist.
                owners.pop(table_id, None)
                for player in (first, second):
                    with contextlib.suppress(RedisError, OSError):
                        await persistence.release_seat(player, table_id)
                with contextlib.suppress(RedisError, OSError):
                    await persistence.release(table_id, done=True)
                raise
            table = self.new_table(table_id, mode, length, tournament_id, audience)
            table.seat_pair(seats, pair_limited=limited)
        finally:
            del self._starting[table_id]
            ready.set()
        await self.publish_listing(table)
        await self.lobby.flush()
        return table_id

    async def pair_limited(self, game_id: str, mode: TableMode, match_length: int,
                           players: tuple[RatedPlayer, RatedPlayer]) -> bool:
        """Count a game about to start against its pair's limit (settings ``pair_limit`` in
        ``pair_window``), if it would be rated: True when the limit refuses it a rating.
        One script in the rating store, idempotent by ``game_id`` (the table id: a match
        counts once). Raises ``unavailable`` when Redis is away (the game does not start)."""
        limit = self.settings.pair_limit
        if limit <= 0 or not counts_for_pair_limit(mode, match_length, players):
            return False
        try:
            reservation = await self.lobby.ratings.reserve_pair_game(
                game_id, players[0].player, players[1].player, at=time.time(), limit=limit,
                window=self.settings.pair_window)
        except (RedisError, OSError) as exc:
            raise ProtocolError(ErrorCode.UNAVAILABLE, "Redis is unavailable") from exc
        if not reservation.rated:
            log.info("table %s: %s and %s played %d rated games in the pair window: unrated",
                     game_id, players[0].player, players[1].player, reservation.games)
        return not reservation.rated

    def new_table_id(self) -> str:
        return secrets.token_urlsafe(9)

    def new_table(
        self, table_id: str, mode: TableMode, match_length: int, tournament_id: str | None,
        audience: Audience | None = None,
    ) -> Table:
        """A table owned here (its record claimed already), in the lobby's tables;
        ``audience`` as :class:`~server.lobby.table.Table` takes it."""
        lobby = self.lobby
        table = Table(
            lobby, table_id=table_id, mode=mode, match_length=match_length,
            tournament_id=tournament_id, dice_factory=lobby.dice_factory, audience=audience,
        )
        lobby.tables[table_id] = table
        lobby.forwarding.remember_owner(table_id, self.node_id)
        lobby.metrics.tables.set(len(lobby.tables))
        return table

    async def create_table(self, actor: Actor, msg: CreateTable) -> None:
        """A player's ``create_table``: the checks and limits, then a new table here with
        the player seated; ``table_created`` answers."""
        settings = self.settings
        lobby = self.lobby
        check_new_table(msg.mode, msg.match_length, msg.tournament_id, (actor.player,),
                        max_match_length=settings.max_match_length, by_player=True)
        open_here = sum(1 for t in lobby.tables.values() if t.status is TableStatus.OPEN)
        if open_here + self._creating >= settings.max_open_tables:
            raise ProtocolError(ErrorCode.TOO_MANY_TABLES, "too many open tables; join one")
        self._check_create_limits(actor)
        # Places in both caps are taken before the first await: concurrent requests count
        # each other. The address's place becomes the table's (creator_address) or is given
        # back below.
        address = network_key(actor.address)
        self._open_by_address[address] = self._open_by_address.get(address, 0) + 1
        self._creating += 1
        try:
            table_id = self.new_table_id()
            held = await self.persistence.take_seat(actor.player, table_id)
            if held is not None:
                raise already_seated(held)
            try:
                await lobby.takeover.claim_new(table_id)
            except BaseException:
                with contextlib.suppress(RedisError, OSError):
                    await self.persistence.release_seat(actor.player, table_id)
                raise
        except BaseException:
            self._give_back_open(address)
            raise
        finally:
            self._creating -= 1
        table = self.new_table(table_id, msg.mode, msg.match_length, None)
        table.creator_address = address
        # Seated first, so the summary names its player; the reply still goes out before
        # the seated event (that waits until it is stored).
        table.seat_creator(actor)
        lobby.reply(actor, {"type": "table_created", "ref": msg.ref, "table": table_id,
                            "summary": table.summary()})
        for listener in lobby.listeners.seated:
            lobby.spawn(listener([actor.player]))
        await self.publish_listing(table)

    def _check_create_limits(self, actor: Actor) -> None:
        """Tables one player and one address may create (a rate), and keep open at once."""
        if not self.settings.limits:
            return
        metrics = self.lobby.metrics
        address = network_key(actor.address)
        if self._open_by_address.get(address, 0) >= \
                self.settings.max_open_tables_per_address:
            metrics.refused("open_tables_per_address")
            raise retry_later(ProtocolError(
                ErrorCode.RATE_LIMITED,
                f"at most {self.settings.max_open_tables_per_address} open tables per address"),
                self.settings.decision_time)
        now = asyncio.get_running_loop().time()
        for key, limit in (("p:" + actor.player, "table_create_per_player"),
                           ("a:" + address, "table_create_per_address")):
            wait = self._create_limit.take(key, now)
            if wait > 0:
                metrics.refused(limit)
                raise retry_later(ProtocolError(
                    ErrorCode.RATE_LIMITED, "creating tables too fast; retry later"), wait)

    def table_opened_elsewhere(self, table: Table) -> None:
        """An open table started play or closed: it no longer counts for its address."""
        address = table.creator_address
        if address is None:
            return
        table.creator_address = None
        self._give_back_open(address)

    def _give_back_open(self, address: str) -> None:
        left = self._open_by_address.get(address, 0) - 1
        if left > 0:
            self._open_by_address[address] = left
        else:
            self._open_by_address.pop(address, None)

    # --- listing -----------------------------------------------------------------------------

    async def list_tables(self, conn: Connection, msg: ListTables) -> None:
        """Answer ``list_tables`` with one page of the lobby index."""
        mode = None if msg.mode is None else str(msg.mode)
        limit = self.settings.list_limit
        total, page = await self.persistence.table_page(mode, msg.offset, limit)
        # The index is written in the background; a table this node owns is shown as it is
        # now, so a client that saw `game_start` never reads its table as still open.
        owned = self.lobby.tables
        page = [owned[entry["table"]].summary() if entry.get("table") in owned else entry
                for entry in page]
        self.lobby.hub.push(conn, Outgoing({
            "type": "tables", "ref": msg.ref, "tables": page, "total": total,
            "offset": msg.offset,
        }))

    async def publish_listing(self, table: Table) -> None:
        if not table.is_listed:
            return
        if table.status in (TableStatus.OPEN, TableStatus.PLAYING):
            if await self._holds_lease(table.id) and table.status in (TableStatus.OPEN,
                                                                       TableStatus.PLAYING):
                await self.persistence.list_table(table.id, table.summary())
        elif self.persistence.epochs.get(table.id) != FENCED_OUT:
            # Unlisted even once its lease is given up (done); never by a node that was
            # told another owns the table now (it might be live there).
            await self.persistence.unlist_table(table.id, str(table.mode))

    async def _holds_lease(self, table_id: str) -> bool:
        """Whether this node still holds ``table_id``'s owner lease under the epoch it writes
        with: the lobby index is not fenced by a script (another slot), so a node that was
        paused past its lease checks before it lists (one read per status change)."""
        epoch = self.persistence.epochs.get(table_id)
        if epoch is None or epoch == FENCED_OUT:
            return False
        lease = await self.persistence.lease(table_id)
        return (lease is not None and lease.node == self.node_id and lease.epoch == epoch
                and not lease.done and not lease.free)

    def table_changed(self, table: Table) -> None:
        """The table's status changed: update the lobby index (in the background); when play
        starts, tell the ``seated`` listeners who sat down."""
        lobby = self.lobby
        if table.status is not TableStatus.OPEN:
            self.table_opened_elsewhere(table)
        if table.is_listed:
            lobby.spawn(self.publish_listing(table))
        if table.status is TableStatus.PLAYING:
            for listener in lobby.listeners.seated:
                lobby.spawn(listener(table.seated_players()))

    # --- forgetting --------------------------------------------------------------------------

    def forget_later(self, table: Table, delay: float | None = None) -> None:
        """Drop a finished table from memory after ``finished_linger`` (sync still works from
        Redis for others; the owner key expires with the log)."""
        wait = self.settings.finished_linger if delay is None else delay
        loop = asyncio.get_running_loop()
        if wait <= 0:
            loop.call_soon(self._forget, table)
            return
        # A bound method and an argument, no closure: a closure naming its own timer would
        # make a reference cycle that keeps the whole table (its game, its history) alive
        # until the garbage collector's next full pass.
        self.cancel_forget(table.id)
        self._timers[table.id] = loop.call_later(wait, self._forget, table)

    def cancel_forget(self, table_id: str) -> None:
        handle = self._timers.pop(table_id, None)
        if handle is not None:
            handle.cancel()

    def cancel_all(self) -> None:
        """Stop every forget timer (shutdown)."""
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()

    def _forget(self, table: Table) -> None:
        lobby = self.lobby
        self._timers.pop(table.id, None)
        self.table_opened_elsewhere(table)
        if lobby.tables.get(table.id) is table:
            del lobby.tables[table.id]
            lobby.forwarding.owners.pop(table.id, None)
            lobby.metrics.tables.set(len(lobby.tables))
            # Finished or closed: its lease is done (never claimed again).
            lobby.spawn(self._release_done(table.id))

    async def _release_done(self, table_id: str) -> None:
        async def release() -> None:
            await self.persistence.flush()
            await self.persistence.release(table_id, done=True)

        # Redis away: tried for a while; else the lease just expires.
        with contextlib.suppress(*REDIS_AWAY):
            await retry_redis(release, Backoff(attempts=30))
